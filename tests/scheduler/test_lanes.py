"""Interactive work goes ahead of background work (scheduler._lanes), on every store.

Ordering is asserted with events: the store's connections are held by open transactions,
bulk work queues behind them, interactive work arrives last, and the order in which they
then get in is recorded.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from scheduler import Registry, Scheduler, interactive, is_interactive, set_interactive
from scheduler._lanes import Lanes

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.scheduler.stores import StoreFactory

QUEUED_BULK = 5


@pytest.fixture
async def sched(stores: StoreFactory) -> AsyncIterator[Scheduler]:
    async with Scheduler(stores.new(), Registry()) as s:
        yield s


async def until(predicate: object, what: str) -> None:
    """Let the loop run until ``predicate()`` holds (a waiter queues within a step or two;
    opening a pool's connections takes round trips)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10.0
    while not predicate():  # type: ignore[operator]
        if loop.time() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.001)


def queued(gate: Lanes, interactive: int) -> bool:
    """``interactive`` interactive requests wait, behind at least the test's bulk ones (the
    driver's own claims may queue too)."""
    ui, bulk = gate.waiting
    return ui == interactive and bulk >= QUEUED_BULK


def gate_of(sched: Scheduler, kind: str) -> Lanes:
    """The gate a store's writes (``kind="write"``) or reads go through."""
    store = sched.store
    if store.dialect == "sqlite":
        return store._lock if kind == "write" else store._read_lock  # type: ignore[attr-defined,no-any-return]
    return store._lanes  # type: ignore[attr-defined,no-any-return]


def permits(sched: Scheduler) -> int:
    """How many transactions the store runs at once (its writer, or its pool's size)."""
    return int(getattr(sched.store, "max_size", 1))


class Holders:
    """Open transactions holding every connection a store writes with, each let go alone."""

    def __init__(self, sched: Scheduler, reads: bool = False) -> None:
        self.sched = sched
        self.events = [asyncio.Event() for _ in range(permits(sched))]
        self.held = 0
        hold = self._hold_read if reads else self._hold
        self.tasks = [asyncio.create_task(hold(e)) for e in self.events]

    async def _hold(self, release: asyncio.Event) -> None:
        async with self.sched.transaction(interactive=False) as ctx:
            await ctx.db.execute("SELECT 1")
            self.held += 1
            await release.wait()

    async def _hold_read(self, release: asyncio.Event) -> None:
        async with self.sched.reader(interactive=False) as db:
            await db.execute("SELECT 1")
            self.held += 1
            await release.wait()

    async def free_one(self) -> None:
        self.events[0].set()
        await self.tasks[0]

    def free_all(self) -> None:
        for e in self.events:
            e.set()


async def hold_writes(sched: Scheduler, reads: bool = False) -> Holders:
    holders = Holders(sched, reads)
    await until(lambda: holders.held == len(holders.events), "every connection held")
    return holders


# --- the gate ---------------------------------------------------------------------------


async def test_a_released_permit_goes_to_interactive_waiters_first_then_in_arrival_order() -> None:
    gate = Lanes(1)
    await gate.acquire(interactive=False)
    order: list[str] = []

    async def take(name: str, lane: bool) -> None:
        await gate.acquire(interactive=lane)
        order.append(name)
        gate.release()

    tasks = [asyncio.create_task(take(f"bulk{i}", False)) for i in range(3)]
    await until(lambda: gate.waiting == (0, 3), "three bulk waiters")
    tasks += [asyncio.create_task(take(f"ui{i}", True)) for i in range(2)]
    await until(lambda: gate.waiting == (2, 3), "two interactive waiters")
    gate.release()
    await asyncio.gather(*tasks)
    assert order == ["ui0", "ui1", "bulk0", "bulk1", "bulk2"]


async def test_a_free_permit_is_not_taken_by_bulk_work_while_interactive_work_waits() -> None:
    gate = Lanes(2)
    await gate.acquire(interactive=False)
    await gate.acquire(interactive=False)
    got: list[str] = []

    async def take(name: str, lane: bool) -> None:
        await gate.acquire(interactive=lane)
        got.append(name)

    ui = asyncio.create_task(take("ui", True))
    await until(lambda: gate.waiting == (1, 0), "an interactive waiter")
    gate.release()  # handed to the interactive waiter, not left free
    bulk = asyncio.create_task(take("bulk", False))
    await until(lambda: got == ["ui"], "the interactive one in")
    await until(lambda: gate.waiting == (0, 1), "the bulk one waiting")
    assert not bulk.done()
    gate.release()
    await asyncio.gather(ui, bulk)
    assert got == ["ui", "bulk"]


async def test_a_waiter_cancelled_as_it_is_handed_the_permit_passes_it_on() -> None:
    gate = Lanes(1)
    await gate.acquire(interactive=False)
    first = asyncio.create_task(gate.acquire(interactive=True))
    second = asyncio.create_task(gate.acquire(interactive=False))
    await until(lambda: gate.waiting == (1, 1), "two waiters")
    gate.release()  # handed to ``first``...
    first.cancel()  # ...which is cancelled before it runs again
    with pytest.raises(asyncio.CancelledError):
        await first
    await second  # it got the permit ``first`` could not use
    gate.release()
    await gate.acquire(interactive=False)  # and nothing leaked: the one permit is free


async def test_the_lane_follows_the_context_and_the_tasks_it_starts() -> None:
    assert not is_interactive()
    with interactive():
        assert is_interactive()
        assert await asyncio.create_task(_lane_here())
        with interactive(False):
            assert not is_interactive()
    assert not is_interactive()

    async def request() -> bool:
        set_interactive()
        return is_interactive()

    assert await asyncio.create_task(request())
    assert not is_interactive()  # the mark ended with that task


async def _lane_here() -> bool:
    return is_interactive()


# --- through the scheduler, on every store ------------------------------------------------


async def test_an_interactive_transaction_runs_before_queued_background_ones(
    sched: Scheduler,
) -> None:
    gate = gate_of(sched, "write")
    order: list[str] = []

    async def write(name: str, lane: bool | None) -> None:
        async with sched.transaction(interactive=lane) as ctx:
            await ctx.db.execute("SELECT 1")
            order.append(name)

    holders = await hold_writes(sched)
    bulk = [asyncio.create_task(write(f"bulk{i}", None)) for i in range(QUEUED_BULK)]
    await until(lambda: queued(gate, 0), "bulk work queued")
    ui = asyncio.create_task(write("ui", True))
    await until(lambda: queued(gate, 1), "interactive work queued")
    await holders.free_one()  # one connection frees up: who gets it?
    await until(lambda: bool(order), "someone in")
    holders.free_all()
    await asyncio.gather(*holders.tasks, *bulk, ui)
    assert order[0] == "ui", order
    assert sorted(order) == sorted(["ui", *(f"bulk{i}" for i in range(QUEUED_BULK))])


async def test_a_transaction_in_an_interactive_block_is_interactive(sched: Scheduler) -> None:
    gate = gate_of(sched, "write")
    order: list[str] = []

    async def write(name: str) -> None:
        async with sched.transaction():
            order.append(name)

    async def command() -> None:  # e.g. a slash command's task
        set_interactive()
        await write("command")

    holders = await hold_writes(sched)
    bulk = [asyncio.create_task(write(f"bulk{i}")) for i in range(QUEUED_BULK)]
    await until(lambda: queued(gate, 0), "bulk work queued")
    cmd = asyncio.create_task(command())
    await until(lambda: queued(gate, 1), "the command queued")
    await holders.free_one()
    await until(lambda: bool(order), "someone in")
    holders.free_all()
    await asyncio.gather(*holders.tasks, *bulk, cmd)
    assert order[0] == "command", order


async def test_an_interactive_read_goes_before_queued_background_reads(
    sched: Scheduler,
) -> None:
    gate = gate_of(sched, "read")
    order: list[str] = []

    async def read(name: str, lane: bool | None) -> None:
        async with sched.reader(interactive=lane) as db:
            await db.execute("SELECT 1")
            order.append(name)

    sqlite = sched.store.dialect == "sqlite"
    if sqlite:
        # The SQLite reader is taken per statement: hold it as a statement in flight does.
        await gate.acquire(interactive=False)
    else:  # a reader holds a pool connection for its block
        holders = await hold_writes(sched, reads=True)
    bulk = [asyncio.create_task(read(f"bulk{i}", None)) for i in range(QUEUED_BULK)]
    await until(lambda: queued(gate, 0), "bulk reads queued")
    ui = asyncio.create_task(read("ui", True))
    await until(lambda: queued(gate, 1), "the interactive read queued")
    if sqlite:
        gate.release()
    else:
        await holders.free_one()
    await until(lambda: bool(order), "someone in")
    if not sqlite:
        holders.free_all()
        await asyncio.gather(*holders.tasks)
    await asyncio.gather(*bulk, ui)
    assert order[0] == "ui", order
