"""Both dialects say the same things: the same named queries with the same result columns,
and the same numbered migrations for every component. Every query takes the same named
parameters and carries the same one-line description in both.

A query or migration added for one store and forgotten for the other fails here, before any
store test runs into it. The column check compiles every query on both databases (PostgreSQL
only when ``CRIER_TEST_POSTGRES_DSN`` is set).
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import SqliteStore
from scheduler.migrations import MigrationSet, scheduler_migrations
from scheduler.sql import load_queries, positional_queries
from tests.scheduler.stores import postgres_dsn

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

DIALECTS = ("sqlite", "postgres")
_PLAIN = re.compile(r"^[a-z_][a-z0-9_]*$")


def test_every_query_exists_in_both_dialects() -> None:
    sqlite, postgres = (set(load_queries(d)) for d in DIALECTS)
    assert not sqlite - postgres, f"missing from postgres.sql: {sorted(sqlite - postgres)}"
    assert not postgres - sqlite, f"missing from sqlite.sql: {sorted(postgres - sqlite)}"


def test_every_query_takes_the_same_named_parameters_in_both_dialects() -> None:
    sqlite, postgres = (load_queries(d) for d in DIALECTS)
    for name, query in sqlite.items():
        lite, pg = set(query.params), set(postgres[name].params)
        assert lite == pg, f"{name}: sqlite takes {sorted(lite)}, postgres takes {sorted(pg)}"
        for dialect, q in (("sqlite", query), ("postgres", postgres[name])):
            assert not re.search(r"\?|\$\d", q.sql), f"{dialect} {name}: a positional parameter"


def test_every_query_says_what_it_does_the_same_way_in_both_dialects() -> None:
    sqlite, postgres = (load_queries(d) for d in DIALECTS)
    for name, query in sqlite.items():
        assert query.description, f"{name} has no description"
        assert query.description == postgres[name].description, (
            f"{name}: described differently: {query.description!r} on sqlite, "
            f"{postgres[name].description!r} on postgres"
        )


def test_every_migration_number_exists_in_both_dialects() -> None:
    """The scheduler's migrations where the store finds them: in the source tree, or inside
    the installed wheel (the bot's: tests/bot/test_migrations.py)."""
    numbered = same_numbers_in_both_dialects(scheduler_migrations())
    assert numbered[0] == (1, "jobs")


def same_numbers_in_both_dialects(migrations: MigrationSet) -> list[tuple[int, str]]:
    """A component's migrations, numbered alike in both dialects: their (number, name)s."""
    numbered = {d: [(m.version, m.name) for m in migrations.load(d)] for d in DIALECTS}
    assert numbered["sqlite"] == numbered["postgres"], (
        f"{migrations.component}: the dialects' migrations differ (number and name): {numbered}"
    )
    return numbered["sqlite"]


# --- result columns ------------------------------------------------------------------------


def _sqlite_columns(path: Path) -> dict[str, list[str]]:
    """Each query's result column names, by running it on an empty database with 0 for every
    parameter (nothing matches, but the columns are known)."""
    out: dict[str, list[str]] = {}
    with closing(sqlite3.connect(path)) as conn:
        for name, query in load_queries("sqlite").items():
            sql = query.sql
            conn.execute("SAVEPOINT probe")
            try:
                cur = conn.execute(sql, dict.fromkeys(query.params, 0))
            except sqlite3.IntegrityError:  # an INSERT refused by a CHECK: read its RETURNING
                out[name] = _returning(sql)
            else:
                out[name] = [d[0] for d in cur.description or ()]
                cur.fetchall()
            conn.execute("ROLLBACK TO probe")
    return out


def _returning(sql: str) -> list[str]:
    clause = re.search(r"\bRETURNING\b(.*)$", sql, re.DOTALL | re.IGNORECASE)
    if clause is None:
        return []
    return [c.strip().rsplit(".", 1)[-1] for c in clause.group(1).split(",")]


@pytest.fixture
async def postgres_columns(tmp_path: Path) -> AsyncIterator[dict[str, list[str]]]:
    base = postgres_dsn()
    if base is None:
        pytest.skip("comparing result columns needs CRIER_TEST_POSTGRES_DSN")
    asyncpg = pytest.importorskip("asyncpg")
    from scheduler.stores.postgres import PostgresStore
    from tests.scheduler.pg import fresh_database

    async with fresh_database(base) as dsn:
        store = PostgresStore(dsn, listen=False)
        await store.open()
        await store.close()
        conn: Any = await asyncpg.connect(dsn)
        try:
            out: dict[str, list[str]] = {}
            for qname, query in positional_queries("postgres").items():
                stmt = await conn.prepare(query.sql)  # compiled, not run
                out[qname] = [a.name for a in stmt.get_attributes()]
            yield out
        finally:
            await conn.close()


async def test_every_query_returns_the_same_columns_in_both_dialects(
    tmp_path: Path, postgres_columns: dict[str, list[str]]
) -> None:
    path = tmp_path / "parity.db"
    store = SqliteStore(path)
    await store.open()
    await store.close()
    sqlite = _sqlite_columns(path)
    for name, lite in sqlite.items():
        pg = postgres_columns[name]
        assert len(lite) == len(pg), f"{name}: {len(lite)} columns on sqlite, {len(pg)} on pg"
        for i, (a, b) in enumerate(zip(lite, pg, strict=True)):
            if _PLAIN.match(a) and a != "null":  # expressions are named differently
                assert a == b, f"{name}: column {i} is {a!r} on sqlite but {b!r} on postgres"
