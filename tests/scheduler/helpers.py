"""Small helpers shared by the scheduler tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from scheduler import Registry, Scheduler

if TYPE_CHECKING:
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
