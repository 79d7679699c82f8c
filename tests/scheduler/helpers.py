"""Small helpers shared by the scheduler tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

from scheduler import Registry, Scheduler

if TYPE_CHECKING:
    from scheduler import Db
    from tests.scheduler.stores import StoreFactory

Make = Callable[..., Scheduler]


@asynccontextmanager
async def scheduler_maker(stores: StoreFactory, **defaults: Any) -> AsyncIterator[Make]:
    """``make(registry, **kwargs)``: a scheduler on a new store of ``stores``, with
    ``defaults`` for the options not given; every one made is stopped at the end."""
    started: list[Scheduler] = []

    def make(registry: Registry, **kwargs: Any) -> Scheduler:
        sched = Scheduler(stores.new(), registry, **{**defaults, **kwargs})
        started.append(sched)
        return sched

    try:
        yield make
    finally:
        for sched in started:
            await sched.stop(grace=0)


async def settle(sched: Scheduler, limit: float = 5.0) -> None:
    """Wait until the driver has no pass running and no wake pending (actions may still run).

    Waits on the driver's change event, so it returns as soon as the driver is quiet.
    """
    driver = sched._driver
    assert driver is not None
    async with asyncio.timeout(limit):
        while True:
            changed = driver.change_event
            if not driver._passing and not driver._wake.is_set() and not driver._completions:
                return
            await changed.wait()


class Counter:
    """A count you can await reaching a value."""

    def __init__(self) -> None:
        self.value = 0
        self._changed = asyncio.Event()

    def bump(self, by: int = 1) -> None:
        self.value += by
        self._changed.set()

    async def reach(self, target: int, limit: float = 5.0) -> None:
        async with asyncio.timeout(limit):
            while self.value < target:
                self._changed.clear()
                await self._changed.wait()


async def until_waiting_for_a_lock(
    open_db: Callable[[], AbstractAsyncContextManager[Db]], dialect: str, task: asyncio.Task[Any]
) -> None:
    """Return once ``task`` (a transaction of another connection) waits for a lock held by an
    open transaction: on PostgreSQL, once one of the database's backends waits for a lock
    (read through ``open_db``, a snapshot). On SQLite a second writer waits for the write
    lock inside SQLite's busy handler, which nothing outside it can see: there the order
    cannot change the outcome (one writer at a time), so this only lets ``task`` start."""
    if dialect != "postgres":
        for _ in range(20):
            await asyncio.sleep(0)
        return
    while not task.done():
        async with open_db() as db:
            cur = await db.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid "
                "WHERE NOT l.granted AND s.datname = current_database()"
            )
            row = await cur.fetchone()
            if row is not None and row[0]:
                return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the transaction finished without waiting for the other: {task}")
