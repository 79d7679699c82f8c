"""``python -m bot migrate --from sqlite:///PATH --to postgresql://…``: move a stopped
installation from SQLite to PostgreSQL.

Generic over tables: every table the SQLite file holds (the bot's and the scheduler's, as
the file itself lists them, so a table a later migration adds moves too) is copied into the
same table of the PostgreSQL database, column by column by name. All of it happens in one
transaction on the target: today's schema is created (the migrations' own transactions are
savepoints of it), the target is checked to hold no rows, the rows are copied, the identity
sequences are moved past the copied ids (and past any SQLite handed out before), and every
table's row count and checksum are read back from the target and compared with the
source's; only then is it committed. Anything wrong rolls all of it back: the target is as
it was. The source is only read, in one read transaction (a consistent picture of it).

The version table (``scheduler_migrations``) is not copied: the target records its own
migrations (each dialect's files have their own checksums). The source must be at the
schema this code writes (start this version of the bot on it once, then stop it).

Never connects to Discord.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scheduler.migrations import VERSION_TABLE, scheduler_migrations

from ..config import without_password
from ..db.copying import (
    advance_identities,
    batches,
    handed_out_ids,
    read_back,
    row_counts,
    source_tables,
    source_versions,
    target_columns,
    write_rows,
)
from .crier import bot_migrations

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

BATCH = 2000
"""Rows read from the source and copied to the target at a time (memory stays flat)."""


class TransferError(Exception):
    """The move was refused or failed; nothing was committed to the target."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="sqlite:///PATH",
        help="the stopped installation's SQLite database (only read)",
    )
    parser.add_argument(
        "--to",
        dest="target",
        required=True,
        metavar="postgresql://USER@HOST/DB",
        help="an empty PostgreSQL database (its schema is created)",
    )


# --- values: SQLite's to PostgreSQL's column types -----------------------------------------


def _integer(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TypeError("an integer")
    if isinstance(v, float):
        if not v.is_integer():
            raise TypeError("an integer")
        return int(v)
    return v


def _double(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TypeError("a number")
    out = float(v)
    if isinstance(v, int) and int(out) != v:
        raise TypeError("a number a double holds exactly")
    return out


def _text(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("text")
    return v


def _bytes(v: Any) -> bytes:
    if not isinstance(v, bytes | memoryview):
        raise TypeError("bytes")
    return bytes(v)


CONVERT: dict[str, Callable[[Any], Any]] = {
    "bigint": _integer,
    "integer": _integer,
    "smallint": _integer,
    "double precision": _double,
    "text": _text,
    "character varying": _text,
    "bytea": _bytes,
}
"""How a SQLite value becomes the value of a PostgreSQL column of each type the schema uses;
a value that would change on the way (text in an integer column, 1.5 in a bigint) is refused,
and so is a column type not listed here (add it, with its exact conversion)."""


def _digest(values: Sequence[Any]) -> bytes:
    """One row's digest: its values in column order, each tagged with its type."""
    h = hashlib.sha256()
    for v in values:
        if v is None:
            h.update(b"n;")
        elif isinstance(v, bytes):
            h.update(b"b%d:" % len(v) + v + b";")
        elif isinstance(v, float):
            h.update(b"f" + v.hex().encode() + b";")
        elif isinstance(v, int):
            h.update(b"i%d;" % v)
        else:
            data = str(v).encode("utf-8")
            h.update(b"s%d:" % len(data) + data + b";")
    return h.digest()


@dataclass
class TableSum:
    """A table's row count and checksum: sha256 over its rows' digests in sorted order (the
    same rows give the same checksum whatever order either database returns them in)."""

    rows: int = 0
    _digests: list[bytes] = field(default_factory=list, repr=False)

    def add(self, values: Sequence[Any]) -> None:
        self.rows += 1
        self._digests.append(_digest(values))

    @property
    def checksum(self) -> str:
        h = hashlib.sha256()
        for d in sorted(self._digests):
            h.update(d)
        return h.hexdigest()


@dataclass(frozen=True, slots=True)
class Moved:
    table: str
    columns: tuple[str, ...]
    """In the order the checksum's rows list them."""
    rows: int
    checksum: str


# --- the source ------------------------------------------------------------------------------


def _source_path(url: str) -> Path:
    if not url.startswith("sqlite:///") or len(url) == len("sqlite:///"):
        raise TransferError(f"--from must be sqlite:///PATH, got {without_password(url)!r}")
    path = Path(url[len("sqlite:///") :])
    if not path.is_file():
        raise TransferError(f"--from: there is no database at {path}")
    return path


def check_source_schema(conn: sqlite3.Connection, where: Path) -> None:
    """The source's schema must be this code's (both components), or the columns would not
    line up with the target's."""
    have = source_versions(conn)
    if not have:
        raise TransferError(f"{where} is not crier's database (it records no schema version)")
    for ms in (scheduler_migrations(), bot_migrations()):
        newest = ms.load("sqlite")[-1].version
        at = have.get(ms.component, 0)
        if at != newest:
            older = at < newest
            raise TransferError(
                f"{where}: its {ms.component!r} schema is at version {at}, this code's is at "
                f"{newest}: "
                + (
                    "start this version of the bot on it once (it upgrades it), stop it, then "
                    "migrate"
                    if older
                    else "it was written by a newer version; migrate with that version"
                )
            )


# --- the move --------------------------------------------------------------------------------


async def transfer(source_url: str, target_url: str) -> list[Moved]:
    """Move everything of the SQLite database at ``source_url`` into the empty PostgreSQL
    database at ``target_url`` (see the module's docstring); returns what was moved."""
    import asyncpg

    from scheduler.stores.postgres import migrate_connection

    path = _source_path(source_url)
    if not target_url.startswith(("postgresql://", "postgres://")):
        raise TransferError(
            f"--to must be postgresql://USER@HOST/DB, got {without_password(target_url)!r}"
        )
    target_name = without_password(target_url)
    try:
        src = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise TransferError(f"cannot open {path}: {exc}") from None
    try:
        try:
            conn = await asyncpg.connect(target_url)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise TransferError(f"cannot connect to {target_name}: {exc}") from None
        try:
            src.execute("BEGIN")  # one read transaction: one picture of the source
            check_source_schema(src, path)
            tables = source_tables(src)
            async with conn.transaction():
                before = await target_columns(conn)
                full = {t: n for t, n in (await row_counts(conn, before)).items() if n}
                if full:
                    listed = ", ".join(f"{t} ({n:,} rows)" for t, n in sorted(full.items()))
                    raise TransferError(
                        f"{target_name} is not empty: {listed}. Move into a new, empty "
                        "database (nothing was changed)"
                    )
                await migrate_connection(conn, [bot_migrations()])
                target = await target_columns(conn)
                moved = await _copy_all(src, conn, tables, target)
                await advance_identities(conn, handed_out_ids(src))
                await _verify(conn, moved)
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise TransferError(
                f"{target_name} refused the move: {exc}; nothing was committed"
            ) from None
        finally:
            await conn.close()
    except sqlite3.Error as exc:
        raise TransferError(f"cannot read {path}: {exc}") from None
    finally:
        src.close()
    return moved


async def _copy_all(
    src: sqlite3.Connection,
    conn: Any,
    tables: dict[str, list[str]],
    target: dict[str, dict[str, str]],
) -> list[Moved]:
    ours = set(tables) - {VERSION_TABLE}
    theirs = set(target) - {VERSION_TABLE}
    if ours - theirs:
        raise TransferError(
            f"the target's schema has no table for {', '.join(sorted(ours - theirs))} "
            "(a table of another program in the SQLite file?); nothing was moved"
        )
    if theirs - ours:
        raise TransferError(
            f"the target holds tables the source has not: {', '.join(sorted(theirs - ours))}; "
            "move into a new, empty database"
        )
    moved = []
    for table in sorted(ours):
        columns = tables[table]
        types = target[table]
        if set(columns) != set(types):
            raise TransferError(
                f"{table}: the source's columns ({', '.join(columns)}) are not the target's "
                f"({', '.join(types)}); nothing was moved"
            )
        converters = []
        for c in columns:
            conv = CONVERT.get(types[c])
            if conv is None:
                raise TransferError(f"{table}.{c}: no conversion for PostgreSQL type {types[c]}")
            converters.append(conv)
        total = TableSum()
        for batch in batches(src, table, columns, BATCH):
            records = []
            for row in batch:
                try:
                    values = tuple(
                        None if v is None else conv(v)
                        for v, conv in zip(row, converters, strict=True)
                    )
                except TypeError as exc:
                    raise TransferError(
                        f"{table}: a row holds {_shown(row)} where {exc} was expected; "
                        "nothing was moved"
                    ) from None
                total.add(values)
                records.append(values)
            await write_rows(conn, table, columns, records)
        moved.append(Moved(table, tuple(columns), total.rows, total.checksum))
    return moved


def _shown(row: Sequence[Any]) -> str:
    text = repr(tuple(row))
    return text if len(text) <= 200 else text[:200] + "…"


async def _verify(conn: Any, moved: list[Moved]) -> None:
    for m in moved:
        columns = m.columns
        total = TableSum()
        async for row in read_back(conn, m.table, columns, BATCH):
            total.add(row)
        if (total.rows, total.checksum) != (m.rows, m.checksum):
            raise TransferError(
                f"{m.table}: the target reads back {total.rows:,} rows (checksum "
                f"{total.checksum[:16]}), the source had {m.rows:,} ({m.checksum[:16]}); "
                "nothing was committed"
            )


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    try:
        moved = asyncio.run(transfer(args.source, args.target))
    except TransferError as exc:
        print(f"crier: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("crier: interrupted; nothing was committed to the target", file=sys.stderr)
        return 130
    took = time.perf_counter() - started
    width = max(len(m.table) for m in moved)
    for m in moved:
        print(f"  {m.table.ljust(width)}  {m.rows:>10,} rows  sha256 {m.checksum[:16]}  ok")
    rows = sum(m.rows for m in moved)
    print(
        f"moved {rows:,} rows in {len(moved)} tables from {args.source} to "
        f"{without_password(args.target)} in {took:.1f}s, in one transaction; every table's "
        "row count and checksum read back the same. The source was only read. Set "
        "DATABASE_URL to the PostgreSQL URL and start the bot."
    )
    return 0
