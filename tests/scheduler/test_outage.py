"""The scheduler's own log when its store fails: one ERROR line with the reason when its loops
start failing, nothing while they go on failing (counted in ``stats.loop_failures`` and the
``scheduler_loop_failures`` metric), one INFO line when the store works again. With a really
unreadable SQLite file and really killed PostgreSQL connections (the test's own database's)."""

from __future__ import annotations

import asyncio
import logging
import os
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import asyncpg
import pytest
from prometheus_client import CollectorRegistry

from scheduler import Registry, Scheduler, SqliteStore
from scheduler.metrics import SchedulerCollector
from scheduler.stores.postgres import PostgresStore
from scheduler.testing import FakeClock
from tests.scheduler.pg import fresh_database
from tests.scheduler.stores import postgres_dsn

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

START = datetime(2030, 1, 1, tzinfo=UTC)
SWEEP = 30.0


def registry() -> Registry:
    reg = Registry()

    @reg.mutation("outage:noop")
    async def noop(ctx: Any, args: Any) -> None:
        return None

    return reg


async def passes(sched: Scheduler, n: int) -> None:
    """Make the dispatch loop run ``n`` more passes (each woken by the test), and wait for
    each to end."""
    driver = sched._driver
    assert driver is not None
    for _ in range(n):
        before = driver.passes
        driver.wake()
        async with asyncio.timeout(10):
            while driver.passes == before:
                await driver.change_event.wait()


def driver_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "scheduler.driver"]


async def outage(
    sched: Scheduler,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    *,
    break_it: Any,
    mend_it: Any,
    reason: str,
) -> None:
    """Break the store, run passes and sweeps, mend it: one line each way, and a count."""
    caplog.clear()
    await break_it()
    await passes(sched, 5)
    clock.advance(timedelta(seconds=SWEEP))  # the sweep, on the FakeClock
    await passes(sched, 2)
    failed = driver_records(caplog)
    assert [(r.levelno, r.exc_info) for r in failed] == [(logging.ERROR, None)], failed
    assert reason in failed[0].getMessage(), failed[0].getMessage()
    assert sched.stats.loop_failures["dispatch"] >= 7
    registry = CollectorRegistry()
    SchedulerCollector(sched, registry=registry)  # the counter, without reading the store
    exported = registry.get_sample_value("scheduler_loop_failures_total", {"loop": "dispatch"})
    assert exported == sched.stats.loop_failures["dispatch"]
    caplog.clear()
    await mend_it()
    await passes(sched, 3)
    back = driver_records(caplog)
    assert [r.levelno for r in back] == [logging.INFO], back
    assert "works again" in back[0].getMessage()
    counted = dict(sched.stats.loop_failures)
    await passes(sched, 2)
    assert sched.stats.loop_failures == counted  # nothing failing now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


async def test_an_unreadable_sqlite_file(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="scheduler.driver")
    sched = Scheduler(SqliteStore(tmp_path / "s.db"), registry(), clock=clock, sweep_interval=SWEEP)
    await sched.start()
    saved: dict[str, bytes] = {}

    async def garble() -> None:
        for name in os.listdir(tmp_path):  # the database, its WAL and its shared memory
            saved[name] = (tmp_path / name).read_bytes()
            with (tmp_path / name).open("r+b") as f:
                f.write(b"not a database! " * 64)

    async def restore() -> None:
        for name, data in saved.items():
            (tmp_path / name).write_bytes(data)

    try:
        await sched.wait_idle()
        await outage(
            sched, clock, caplog, break_it=garble, mend_it=restore, reason="not a database"
        )
        await sched.run_after(0, "outage:noop")  # and it works
        await sched.wait_idle()
    finally:
        await sched.stop(grace=0)


@pytest.fixture
async def pg_dsn() -> AsyncIterator[str]:
    dsn = postgres_dsn()
    if dsn is None:
        pytest.skip("needs CRIER_TEST_POSTGRES_DSN")
    async with fresh_database(dsn) as url:
        yield url


async def test_killed_postgresql_connections(
    pg_dsn: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="scheduler.driver")
    store = PostgresStore(pg_dsn)
    sched = Scheduler(store, registry(), clock=clock, sweep_interval=SWEEP)
    await sched.start()
    admin = await asyncpg.connect(postgres_dsn())
    database = pg_dsn.rsplit("/", 1)[1]

    async def kill() -> None:
        # No new connection to the test's own database, and every one it has ended.
        await admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = $1 AND pid <> pg_backend_pid()",
            database,
        )

    async def allow() -> None:
        await admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')

    try:
        await sched.wait_idle()
        await outage(sched, clock, caplog, break_it=kill, mend_it=allow, reason="failed: ")
        await sched.run_after(0, "outage:noop")
        await sched.wait_idle()
    finally:
        await allow()
        await admin.close()
        await sched.stop(grace=0)
