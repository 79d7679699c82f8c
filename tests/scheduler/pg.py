"""PostgreSQL databases for tests: each factory creates a fresh, uniquely named database and
drops it afterwards, so test runs (and parallel runs by other people) never see each other."""

from __future__ import annotations

import contextlib
import secrets
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from scheduler.stores.postgres import PostgresStore
from tests.scheduler.stores import StoreFactory, require_postgres

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

PREFIX = "crier_test_"


def with_database(dsn: str, database: str) -> str:
    """``dsn`` pointing at ``database`` instead."""
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path="/" + database))


async def create_database(dsn: str) -> str:
    """Create a fresh database on the server of ``dsn``; return its name."""
    name = PREFIX + secrets.token_hex(6)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
        # A commit returns without waiting for its WAL to reach the disk: visible to every
        # other session at once all the same; only a crash of the server itself (which no
        # test makes) could lose it. The tests' thousands of commits stop waiting on fsync.
        await conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    finally:
        await conn.close()
    return name


async def drop_database(dsn: str, name: str) -> None:
    """Drop ``name``, first ending any session still connected to it (a store a failed test
    left open)."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = $1 AND pid <> pg_backend_pid()",
            name,
        )
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def fresh_database(dsn: str) -> AsyncIterator[str]:
    """The dsn of a new database on the server of ``dsn``, dropped afterwards."""
    name = await create_database(dsn)
    try:
        yield with_database(dsn, name)
    finally:
        await drop_database(dsn, name)


async def postgres_factory(dsn: str) -> StoreFactory:
    """Stores on a new database of the server at ``dsn`` (cleanup drops it)."""
    name = await create_database(dsn)
    db_dsn = with_database(dsn, name)

    async def cleanup() -> None:
        await drop_database(dsn, name)

    return StoreFactory("postgres", lambda: PostgresStore(db_dsn), cleanup)


@contextlib.asynccontextmanager
async def fresh_test_database(
    needs: str = "PostgreSQL tests need a server",
) -> AsyncIterator[str]:
    """A new database on the test server, dropped afterwards; without a server configured
    the test is skipped (``needs`` says what for)."""
    async with fresh_database(require_postgres(needs)) as dsn:
        yield dsn
