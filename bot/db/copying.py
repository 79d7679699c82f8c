"""The SQL of copying a whole database: ``python -m bot backup`` (SQLite's online backup and
the copy's integrity check) and ``python -m bot migrate`` (every table of a SQLite file read,
and written into PostgreSQL). Generic over tables: each reads the schema it works on. The
decisions (what to refuse, what to check) are :mod:`bot.app.backup`'s and
:mod:`bot.app.transfer`'s."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from scheduler.migrations import VERSION_TABLE

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
    from pathlib import Path


def quote(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


# --- SQLite: the backup ------------------------------------------------------------------------


def backup_and_check(source: Path, copy: Path) -> tuple[list[str], int]:
    """Copy the SQLite database ``source`` into the new file ``copy`` with the online backup
    API (one read transaction of the source), fold the copy's WAL into it, and check it:
    ``PRAGMA integrity_check``'s findings (``["ok"]`` when sound) and its number of tables."""
    src = sqlite3.connect(source)  # only read: the backup takes one read transaction
    try:
        dst = sqlite3.connect(copy)
        try:
            src.backup(dst)
            # The copy keeps the source's WAL mode; put everything in the main file.
            dst.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            problems = [str(r[0]) for r in dst.execute("PRAGMA integrity_check(5)")]
            tables = int(
                dst.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
            )
        finally:
            dst.close()
    finally:
        src.close()
    return problems, tables


# --- SQLite: the source of a move ---------------------------------------------------------------


def source_tables(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Every table of the SQLite database (but SQLite's own) with its columns, in order."""
    names = [
        str(r[0])
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        )
    ]
    return {n: [str(c[1]) for c in conn.execute(f"PRAGMA table_info({quote(n)})")] for n in names}


def source_versions(conn: sqlite3.Connection) -> dict[str, int]:
    """The newest migration each component recorded ({} if there is no version table)."""
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (VERSION_TABLE,)
    ).fetchone()
    if not found:
        return {}
    rows = conn.execute(
        f"SELECT component, max(version) FROM {VERSION_TABLE} GROUP BY component"
    ).fetchall()
    return {str(c): int(v) for c, v in rows}


def handed_out_ids(conn: sqlite3.Connection) -> dict[str, int]:
    """The last id SQLite handed out per AUTOINCREMENT table (never handed out twice, even
    after its row is deleted)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone():
        return {}
    return {str(n): int(s) for n, s in conn.execute("SELECT name, seq FROM sqlite_sequence")}


def batches(
    conn: sqlite3.Connection, table: str, columns: Sequence[str], size: int
) -> Iterator[list[Any]]:
    """Every row of ``table`` (``columns``, in that order), ``size`` rows at a time."""
    cur = conn.execute(f"SELECT {', '.join(map(quote, columns))} FROM {quote(table)}")
    while batch := cur.fetchmany(size):
        yield batch


# --- PostgreSQL: the target of a move (asyncpg connections: Any) -------------------------------


async def target_columns(conn: Any) -> dict[str, dict[str, str]]:
    """Every table of the connection's schema: its columns (in order) with their types."""
    rows = await conn.fetch(
        "SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c "
        "JOIN information_schema.tables t ON t.table_schema = c.table_schema "
        "AND t.table_name = c.table_name "
        "WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' "
        "ORDER BY c.table_name, c.ordinal_position"
    )
    out: dict[str, dict[str, str]] = {}
    for r in rows:
        out.setdefault(str(r["table_name"]), {})[str(r["column_name"])] = str(r["data_type"])
    return out


async def row_counts(conn: Any, tables: Iterable[str]) -> dict[str, int]:
    """Rows per table (the version table left out: it records the schema, not data)."""
    return {
        t: int(await conn.fetchval(f"SELECT count(*) FROM {quote(t)}"))
        for t in tables
        if t != VERSION_TABLE
    }


async def write_rows(conn: Any, table: str, columns: Sequence[str], records: list[Any]) -> None:
    """Append ``records`` (tuples in ``columns``' order) to ``table`` with COPY."""
    await conn.copy_records_to_table(table, records=records, columns=list(columns))


async def advance_identities(conn: Any, handed_out: dict[str, int]) -> None:
    """Move every identity (or serial) column's sequence past the largest id in its table
    and past what ``handed_out`` says SQLite gave out, so a new row never reuses an id."""
    rows = await conn.fetch(
        "SELECT table_name, column_name, "
        "pg_get_serial_sequence(quote_ident(table_name), column_name) AS seq "
        "FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND (is_identity = 'YES' OR column_default LIKE 'nextval(%')"
    )
    for r in rows:
        if not r["seq"]:
            continue
        table, column = str(r["table_name"]), str(r["column_name"])
        top = await conn.fetchval(f"SELECT max({quote(column)}) FROM {quote(table)}")
        last = max(int(top or 0), handed_out.get(table, 0))
        if last > 0:
            await conn.execute("SELECT setval($1, $2, true)", str(r["seq"]), last)


async def read_back(
    conn: Any, table: str, columns: Sequence[str], prefetch: int
) -> AsyncIterator[tuple[Any, ...]]:
    """Every row of ``table`` as the target holds it (``columns``, in that order)."""
    async with conn.transaction():  # a savepoint: a cursor needs a transaction block
        async for row in conn.cursor(
            f"SELECT {', '.join(map(quote, columns))} FROM {quote(table)}", prefetch=prefetch
        ):
            yield tuple(row)
