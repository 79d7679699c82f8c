"""The pool of PostgreSQL test databases (``tests/scheduler/pg.py``): a database given back
is, for the next test, exactly as a new one (as new, or at head and empty): whatever a test
left behind (rows, a sequence moved, its own tables, functions, types and views, sessions
with their advisory locks and LISTENs) is gone, and what can't be undone costs the database.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

asyncpg = pytest.importorskip("asyncpg")

from scheduler.stores.postgres import PostgresStore  # noqa: E402  (after the importorskip)
from tests.scheduler.pg import (  # noqa: E402
    POOL,
    catalog,
    drop_database,
    fresh_database,
    sweep_leftovers,
    with_database,
)
from tests.scheduler.stores import require_postgres  # noqa: E402

pytestmark = pytest.mark.postgres

INSERT_JOB = (
    "INSERT INTO scheduler_jobs (fn, kind, state, next_ts, max_failures, initial_backoff, "
    "backoff_base, created_at, updated_at) VALUES ('m', 'mutation', 'pending', 1, 1, 1, 2, 0, 0)"
)


async def new_database_catalog(server: str, *, head: bool) -> Any:
    """The catalog of a database created now (and migrated by a store opening it)."""
    async with fresh_database(server, pooled=False) as dsn:
        if head:
            store = PostgresStore(dsn, listen=False)
            await store.open()
            await store.close()
        conn = await asyncpg.connect(dsn)
        try:
            return await catalog(conn)
        finally:
            await conn.close()


async def leave_everything_behind(dsn: str) -> Any:
    """What a careless test leaves: rows, a moved sequence, its own objects, and a session
    still connected holding a session advisory lock and LISTENing. Returns that session."""
    store = PostgresStore(dsn, listen=False)
    await store.open()
    await store.close()
    conn = await asyncpg.connect(dsn)
    try:
        await _leave(conn)
    except BaseException:
        await conn.close()
        raise
    return conn


async def _leave(conn: Any) -> None:
    await conn.execute(
        "CREATE TABLE log (id BIGSERIAL PRIMARY KEY, item TEXT);"
        "INSERT INTO log (item) VALUES ('x');"
        "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1';"
        "CREATE TYPE mood AS ENUM ('ok');"
        "CREATE VIEW logged AS SELECT item FROM log;"
        "CREATE SCHEMA mine; CREATE TABLE mine.t (x INT);"
        "SELECT pg_advisory_lock(42); LISTEN hello"
    )
    if await conn.fetchval("SELECT to_regclass('scheduler_jobs') IS NOT NULL"):
        await conn.execute(INSERT_JOB)


@pytest.mark.parametrize("head", [False, True], ids=["as-new", "at-head"])
async def test_a_database_given_back_is_as_new_for_the_next_test(head: bool) -> None:
    server = require_postgres()
    migrations = () if head else None
    db = await POOL.acquire(server, migrations)
    left = await leave_everything_behind(db.dsn)
    resets = POOL.resets
    await POOL.release(db)
    try:
        again = await POOL.acquire(server, migrations)  # reset for this "next test"
        alive = await _alive(left)  # its session was ended
    finally:
        left.terminate()
    assert not alive
    try:
        assert POOL.resets == resets + 1  # reset, not dropped
        assert again.name == db.name  # the same database, reused
        admin = await asyncpg.connect(server)
        try:
            assert (
                await admin.fetchval(  # no session on it, no advisory lock left
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", again.name
                )
                == 0
            )
            assert (
                await admin.fetchval(
                    "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
                    "WHERE l.locktype = 'advisory' AND d.datname = $1",
                    again.name,
                )
                == 0
            )
        finally:
            await admin.close()
        conn = await asyncpg.connect(again.dsn)
        try:
            # The same catalog as a database created now (and migrated), none of the
            # test's objects: no table `log`, no view, function, type or schema of its own.
            assert await catalog(conn) == await new_database_catalog(server, head=head)
            assert await conn.fetchval("SELECT to_regclass('log')") is None
            assert await conn.fetchval("SELECT to_regnamespace('mine')") is None
            if head:
                # Every table empty (but the version table), the identity back at 1.
                for table in again.tables:
                    assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 0, table
                assert await conn.fetchval("SELECT count(*) FROM scheduler_migrations") > 0
                assert await conn.fetchval(INSERT_JOB + " RETURNING id") == 1
            # LISTEN died with its session: a NOTIFY reaches no one.
            assert await conn.fetchval("SELECT pg_notification_queue_usage()") == 0
        finally:
            await conn.close()
    finally:
        await POOL.release(again)


async def _alive(conn: Any) -> bool:
    try:
        await conn.fetchval("SELECT 1")
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
        return False
    return True


@pytest.mark.parametrize(
    "change",
    [
        "ALTER TABLE scheduler_jobs ADD COLUMN extra TEXT",
        "INSERT INTO scheduler_migrations VALUES ('app', 1, 'x', 'x', 0)",
        "ANALYZE scheduler_jobs",
        "SET_DATABASE",
    ],
)
async def test_what_a_reset_cannot_undo_costs_the_database(change: str) -> None:
    server = require_postgres()
    db = await POOL.acquire(server, ())
    conn = await asyncpg.connect(db.dsn)
    try:
        if change == "SET_DATABASE":
            change = f'ALTER DATABASE "{db.name}" SET statement_timeout = 1234'
        await conn.execute(change)
    finally:
        await conn.close()
    await POOL.release(db)
    other = await POOL.acquire(server, ())
    try:
        assert other.name != db.name  # a new one
        assert db.name not in POOL.created
        admin = await asyncpg.connect(server)
        try:
            assert not await admin.fetchval(  # dropped
                "SELECT count(*) FROM pg_database WHERE datname = $1", db.name
            )
        finally:
            await admin.close()
    finally:
        await POOL.release(other)


def python_prints(code: str, server: str) -> str:
    """What ``code`` prints, run by a new Python process from the repository's root with
    the server's dsn as its argument."""
    done = subprocess.run(
        [sys.executable, "-c", code, server],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout.strip()


def test_the_pool_s_databases_are_dropped_when_the_process_exits() -> None:
    server = require_postgres()
    code = (
        "import asyncio, sys\n"
        "from tests.scheduler.pg import POOL\n"
        "db = asyncio.run(POOL.acquire(sys.argv[1], ()))\n"
        "print(db.name)\n"
    )
    name = python_prints(code, server)
    assert name.startswith("crier_test_")

    found = asyncio.run(_exists(server, name))
    if found:
        asyncio.run(drop_database(server, name))
    assert not found, with_database(server, name)


def test_the_databases_of_a_killed_run_are_dropped_by_the_next() -> None:
    server = require_postgres()
    code = (
        "import asyncio, os, sys\n"
        "from tests.scheduler.pg import POOL\n"
        "db = asyncio.run(POOL.acquire(sys.argv[1], None))\n"
        "print(db.name, flush=True)\n"
        "os._exit(0)  # as if killed: no session end, no atexit\n"
    )
    name = python_prints(code, server)
    try:
        assert asyncio.run(_exists(server, name))  # left behind
        asyncio.run(sweep_leftovers(server))  # (another process's first use may sweep too)
        assert not asyncio.run(_exists(server, name))
    finally:
        asyncio.run(drop_database(server, name))


async def _exists(server: str, name: str) -> bool:
    admin = await asyncpg.connect(server)
    try:
        return bool(
            await admin.fetchval("SELECT count(*) FROM pg_database WHERE datname = $1", name)
        )
    finally:
        await admin.close()
