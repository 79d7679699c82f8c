"""The PostgreSQL store's schema migrations: applied on one connection, each in its own
transaction, under an advisory lock that serializes migrators across processes."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import asyncpg

from ..migrations import VERSION_TABLE, Migration, check_applied
from ._base import (
    announce_hold,
    migration_failed,
    migration_hold,
    migration_label,
    version_table_ddl,
)

# The store's own logger: everything the PostgreSQL store says goes under one name.
log = logging.getLogger("scheduler.postgres")

# asyncpg ships no type information: its connections are ``Any`` here.
Connection = Any

# Serializes migrators across processes (pg_advisory_xact_lock takes a bigint): "schedmig".
_MIGRATION_LOCK = int.from_bytes(b"schedmig", "big")

_VERSION_DDL = version_table_ddl("DOUBLE PRECISION")


async def migrate(conn: Connection, loaded: list[list[Migration]]) -> None:
    """Apply what is missing, one migration per transaction, under an advisory lock.

    The version table is read and checked first, and again under the lock before each
    migration: a database we must refuse (a newer schema, an edited migration) is left
    exactly as it was.
    """
    where: str = f"PostgreSQL database {await conn.fetchval('SELECT current_database()')!r}"

    async def check() -> dict[str, dict[int, str]]:
        applied = await _applied(conn)
        for ms in loaded:
            if ms:
                check_applied(ms, applied.get(ms[0].component, {}), where)
        return applied

    applied = await check()
    for ms in loaded:
        for m in ms:
            if m.version in applied.get(m.component, {}):
                continue
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
                applied = await check()
                if m.version in applied.get(m.component, {}):
                    continue  # another process applied it while we waited for the lock
                await conn.execute(_VERSION_DDL)
                try:
                    await conn.execute(m.sql)
                except asyncpg.PostgresError as exc:
                    raise migration_failed(where, m, exc) from exc
                hold = migration_hold(m)
                if hold is not None:  # crash tests only: wait here, uncommitted, to be killed
                    announce_hold(hold)
                    await asyncio.Event().wait()
                await conn.execute(
                    f"INSERT INTO {VERSION_TABLE} "  # noqa: S608 (the migrations table's name, a constant)
                    "(component, version, name, checksum, applied_at) "
                    "VALUES ($1, $2, $3, $4, $5)",
                    m.component,
                    m.version,
                    m.name,
                    m.checksum,
                    time.time(),
                )
            log.info("%s: applied migration %s", where, migration_label(m))


async def _applied(conn: Connection) -> dict[str, dict[int, str]]:
    """The versions applied to this database, with their checksums, by component."""
    # Asked of pg_class with the statement's snapshot, not with to_regclass: after waiting
    # for another migrator's lock, this transaction's catalog cache may still say the
    # table is missing (it learns of other sessions' DDL only when it locks a relation).
    exists = await conn.fetchval(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relname = $1 AND n.nspname = ANY (current_schemas(false)))",
        VERSION_TABLE,
    )
    if not exists:
        return {}
    applied: dict[str, dict[int, str]] = {}
    for component, version, checksum in await conn.fetch(
        f"SELECT component, version, checksum FROM {VERSION_TABLE}"  # noqa: S608 (the migrations table's name, a constant)
    ):
        applied.setdefault(str(component), {})[int(version)] = str(checksum)
    return applied
