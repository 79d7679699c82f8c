"""Migration 0004 (the ``held`` state) on a database written at the previous schema.

Before it, a schedule occurrence waiting for the previous one to end was ``pending`` with
``next_ts`` at the sentinel 253402300799 (9999-12-31). The database here is built at schema
version 3 from the migration files themselves, with one runnable occurrence and one held
behind it as the old code wrote them; the current store opens it, migrates it, and the held
occurrence waits for the first to end and then runs, as before.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, closing
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import JobState, Registry, Scheduler, SqliteStore, Store
from scheduler.migrations import VERSION_TABLE, Migration, scheduler_migrations
from scheduler.sql.placeholders import translate_placeholders
from scheduler.testing import FakeClock
from tests.scheduler.helpers import settle
from tests.scheduler.stores import require_postgres

if TYPE_CHECKING:
    from pathlib import Path

START = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
FIRST = (START - 2 * HOUR).timestamp()
SECOND = (START - HOUR).timestamp()
OLD_HELD_TS = 253402300799.0
PREVIOUS_VERSION = 3

# One statement per element, with ? placeholders (translated for PostgreSQL).
Execute = Callable[[str, tuple[Any, ...]], Awaitable[None]]


def _previous(dialect: str) -> list[Migration]:
    migrations = scheduler_migrations().load(dialect)
    assert migrations[-1].version > PREVIOUS_VERSION, "the migration under test is missing"
    return [m for m in migrations if m.version <= PREVIOUS_VERSION]


def _version_table(real: str) -> str:
    return (
        f"CREATE TABLE {VERSION_TABLE} (component TEXT NOT NULL, version INTEGER NOT NULL, "
        f"name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at {real} NOT NULL, "
        "PRIMARY KEY (component, version))"
    )


async def _write_previous_schema_data(execute: Execute) -> None:
    """A runtime schedule (buffer_one, next fire in an hour) with an occurrence due at
    FIRST and one at SECOND held behind it, as the code before 0004 wrote them."""
    now = START.timestamp()
    spec = {"kind": "interval", "every_us": int(HOUR / timedelta(microseconds=1))}
    spec["anchor"] = START.isoformat()
    await execute(
        "INSERT INTO scheduler_schedules (name, source, trigger_spec, fn, kind, idempotent, "
        "max_failures, initial_backoff, backoff_base, args, overlap, catch_up, catchup_window, "
        "jitter, paused, next_fire_ts, last_fire_ts, fingerprint, created_at, updated_at) "
        "VALUES ('s', 'runtime', ?, 'slow', 'action', 0, 1, 1.0, 2.0, '\"x\"', 'buffer_one', "
        "'fire_all', 86400.0, 0.0, 0, ?, ?, 'f', ?, ?)",
        (json.dumps(spec, sort_keys=True), now + 3600, SECOND, now, now),
    )
    for job_id, fire_ts, next_ts in ((1, FIRST, FIRST), (2, SECOND, OLD_HELD_TS)):
        await execute(
            "INSERT INTO scheduler_jobs (id, fn, kind, state, next_ts, max_failures, "
            "initial_backoff, backoff_base, idempotent, idempotency_key, name, schedule_name, "
            "fire_ts, created_at, updated_at) "
            "VALUES (?, 'slow', 'action', 'pending', ?, 1, 1.0, 2.0, 0, ?, 's', 's', ?, ?, ?)",
            (job_id, next_ts, f"s:{fire_ts!r}", fire_ts, now, now),
        )
        await execute(
            "INSERT INTO scheduler_job_args (job_id, args) VALUES (?, '\"x\"')", (job_id,)
        )


@asynccontextmanager
async def _sqlite_at_previous_schema(tmp_path: Path) -> AsyncIterator[Store]:
    path = tmp_path / "previous.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute(_version_table("REAL"))
        for m in _previous("sqlite"):
            conn.executescript(m.sql)
            conn.execute(
                f"INSERT INTO {VERSION_TABLE} VALUES (?, ?, ?, ?, ?)",
                (m.component, m.version, m.name, m.checksum, time.time()),
            )

        async def execute(sql: str, params: tuple[Any, ...]) -> None:
            conn.execute(sql, params)

        await _write_previous_schema_data(execute)
    yield SqliteStore(path)


@asynccontextmanager
async def _postgres_at_previous_schema(tmp_path: Path) -> AsyncIterator[Store]:
    asyncpg = pytest.importorskip("asyncpg")
    from scheduler.stores.postgres import PostgresStore
    from tests.scheduler.pg import fresh_database

    async with fresh_database(require_postgres(), pooled=False) as dsn:
        conn: Any = await asyncpg.connect(dsn)
        try:
            await conn.execute(_version_table("DOUBLE PRECISION"))
            for m in _previous("postgres"):
                await conn.execute(m.sql)
                await conn.execute(
                    f"INSERT INTO {VERSION_TABLE} VALUES ($1, $2, $3, $4, $5)",
                    m.component,
                    m.version,
                    m.name,
                    m.checksum,
                    time.time(),
                )

            async def execute(sql: str, params: tuple[Any, ...]) -> None:
                await conn.execute(translate_placeholders(sql), *params)

            await _write_previous_schema_data(execute)
        finally:
            await conn.close()
        yield PostgresStore(dsn)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_held_occurrence_written_before_the_held_state_waits_and_then_runs(
    kind: str, tmp_path: Path
) -> None:
    runs: list[float] = []
    started = asyncio.Event()
    gate = asyncio.Event()
    registry = Registry()

    @registry.action("slow")
    async def slow(ctx: Any, args: Any) -> None:
        runs.append(ctx.job.fire_ts)
        started.set()
        await gate.wait()

    at_previous_schema = (
        _sqlite_at_previous_schema if kind == "sqlite" else _postgres_at_previous_schema
    )
    async with at_previous_schema(tmp_path) as store:
        sched = Scheduler(
            store, registry, crons=None, clock=FakeClock(START), max_concurrency=2, lease=HOUR
        )
        await sched.start()
        try:
            await asyncio.wait_for(started.wait(), 5)
            first, second = await sched.get_job(1), await sched.get_job(2)
            assert first is not None
            assert second is not None
            assert (first.state, first.fire_ts) == (JobState.IN_PROGRESS, FIRST)
            # Migrated: held in its own state, due at its own time once released.
            assert (second.state, second.fire_ts, second.next_ts) == (
                JobState.HELD,
                SECOND,
                SECOND,
            )
            assert [j.id for j in await sched.list_jobs(state=JobState.HELD)] == [2]
            await settle(sched)
            assert runs == [FIRST]  # a free slot, but the held one does not start
            gate.set()
            await sched.wait_idle()
            assert runs == [FIRST, SECOND]
            states = [(j.id, j.state) for j in await sched.list_jobs()]
            assert states == [(2, JobState.SUCCESS), (1, JobState.SUCCESS)]
        finally:
            await sched.stop(grace=0)
