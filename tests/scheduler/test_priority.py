"""Priority (``enqueue(..., priority=0)``), on every store: among due jobs a higher priority
starts first; a flood of low-priority due work delays a high-priority job by one batch at
most; jobs not due yet wait whatever their priority; paced jobs' keys are taken by priority
too (within one key, due order); the driver's next wake-up and the backlog gauge count
every priority.

The store-level tests talk to the store's domain methods with explicit times (as the
conformance suite does); the scheduler-level ones drive a whole scheduler on a FakeClock.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import ActionContext, InvalidArgument, JobKind, Pace, Registry, Store
from scheduler.testing import FakeClock
from tests.scheduler.helpers import Counter, Make, scheduler_maker, settle
from tests.scheduler.test_store_conformance import LEASE, T0, new_job

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.scheduler.stores import StoreFactory


@pytest.fixture
async def store(stores: StoreFactory) -> AsyncIterator[Store]:
    s = stores.new()
    await s.open()
    try:
        yield s
    finally:
        await s.close()


async def claim_ids(store: Store, now: float, limit: int = 64, actions: int = 0) -> list[int]:
    got = await store.at(now).claim_due(now + LEASE, mutation_limit=limit, action_limit=actions)
    return [j.id for j in got.jobs]


async def test_among_due_jobs_a_higher_priority_starts_first(store: Store) -> None:
    at = store.at(T0)
    low = await at.enqueue(new_job(next_ts=T0, priority=-3))
    default = await at.enqueue(new_job(next_ts=T0 + 1))
    high = await at.enqueue(new_job(next_ts=T0 + 2, priority=5))
    higher_later = await at.enqueue(new_job(next_ts=T0 + 50, priority=9))  # not due yet
    also_high = await at.enqueue(new_job(next_ts=T0 + 1, priority=5))

    # Priority first, due order within one: the claimed batch runs in that order too.
    assert await claim_ids(store, T0 + 10, limit=2) == [also_high, high]
    assert await claim_ids(store, T0 + 10, limit=1) == [default]
    got = await store.at(T0 + 10).claim_due(T0 + 40, mutation_limit=64, action_limit=0)
    assert [j.id for j in got.jobs] == [low]
    assert [j.priority for j in got.jobs] == [-3]
    assert got.next_due == T0 + 50  # the future high one: the driver's next wake-up
    assert await store.at(T0 + 10).next_due_time() == T0 + 50
    assert await claim_ids(store, T0 + 50) == [higher_later]
    job = await store.at(T0 + 50).get_job(low)
    assert job is not None
    assert job.priority == -3


@pytest.mark.parametrize("flood_priority", [0, -5])
async def test_a_flood_of_low_priority_due_work_delays_a_high_one_by_one_batch_at_most(
    store: Store, flood_priority: int
) -> None:
    """1000 due jobs of a low priority (the default one, or another), then one of a higher
    priority that came due last: the first batch of 64 takes it."""
    flood = [new_job(next_ts=T0 + i / 1000, priority=flood_priority) for i in range(1000)]
    await store.at(T0).enqueue_many(flood)
    high = await store.at(T0 + 5).enqueue(new_job(next_ts=T0 + 5, priority=flood_priority + 1))
    first = await claim_ids(store, T0 + 5)
    assert len(first) == 64
    assert first[0] == high


async def test_the_priorities_of_both_kinds_are_claimed_apart(store: Store) -> None:
    """A full action pool never hides due mutations, whatever their priorities."""
    actions = [await store.at(T0).enqueue(new_job(kind=JobKind.ACTION, priority=p)) for p in (1, 2)]
    mutation = await store.at(T0).enqueue(new_job(priority=-1))
    assert await claim_ids(store, T0, limit=64, actions=0) == [mutation]
    assert await claim_ids(store, T0, limit=64, actions=1) == [actions[1]]
    assert await claim_ids(store, T0, limit=64, actions=1) == [actions[0]]


async def test_paced_keys_are_taken_by_priority_and_a_key_keeps_its_due_order(
    store: Store,
) -> None:
    at = store.at(T0)
    paced = {"pace_spacing": 10.0}
    c = await at.enqueue(new_job(next_ts=T0 - 1, pace_key="c", **paced))
    a_first = await at.enqueue(new_job(next_ts=T0, pace_key="a", **paced))
    a_urgent = await at.enqueue(new_job(next_ts=T0 + 1, pace_key="a", priority=9, **paced))
    b = await at.enqueue(new_job(next_ts=T0 + 2, pace_key="b", priority=3, **paced))
    plain = [await at.enqueue(new_job(next_ts=T0 + 3)) for _ in range(3)]
    # b's first job outranks everything else due, though the last due (a's urgent one waits
    # behind a's first: one key, due order).
    assert await claim_ids(store, T0 + 5, limit=1) == [b]
    # At one priority, unpaced jobs go first, then the paced keys; the batch in due order.
    assert await claim_ids(store, T0 + 5, limit=4) == [c, *plain]
    assert await claim_ids(store, T0 + 5) == [a_first]
    assert await claim_ids(store, T0 + 15) == [a_urgent]


async def test_a_high_priority_paced_job_is_not_held_behind_a_flood(store: Store) -> None:
    flood = [new_job(next_ts=T0 + i / 100, priority=-1) for i in range(200)]
    await store.at(T0).enqueue_many(flood)
    paced = await store.at(T0).enqueue(
        new_job(next_ts=T0 + 4, pace_key="k", pace_spacing=1.0, priority=2)
    )
    first = await claim_ids(store, T0 + 5)
    assert first[0] == paced
    assert len(first) == 64


async def test_the_backlog_gauge_counts_due_jobs_of_every_priority(store: Store) -> None:
    for p in (-2, 0, 0, 4):
        await store.at(T0).enqueue(new_job(next_ts=T0 + 1 + p))
        await store.at(T0).enqueue(new_job(next_ts=T0 + 10 + abs(p), priority=p))
    g = await store.at(T0 + 9).gauges()
    assert (g.due, g.oldest_due) == (4, T0 - 1)
    g = await store.at(T0 + 12).gauges()
    assert (g.due, g.oldest_due) == (7, T0 - 1)
    assert (await store.at(T0 + 12).gauges(cap=2)).due == 2


# --- the scheduler ------------------------------------------------------------------------------

START = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
async def make(stores: StoreFactory, clock: FakeClock) -> AsyncIterator[Make]:
    async with scheduler_maker(stores, clock=clock, sweep_interval=3600) as make:
        yield make


async def test_a_high_priority_action_takes_the_first_worker_slot_that_frees(
    make: Make, clock: FakeClock
) -> None:
    """Four worker slots, all busy with a flood of 1000 due actions that wait for tickets the
    test hands out; a high-priority action enqueued then starts in the first slot that frees,
    ahead of the 996 low-priority actions that were due before it. (The rest are cancelled
    when the test's scheduler stops.)"""
    started: list[str] = []
    running = Counter()
    tickets = asyncio.Semaphore(0)
    registry = Registry()

    @registry.action("work")
    async def work(ctx: ActionContext, args: Any) -> None:
        started.append(args)
        running.bump()
        if args != "high":
            await tickets.acquire()

    sched = make(registry, max_concurrency=4)
    await sched.start()
    async with sched.transaction() as ctx:
        for i in range(1000):
            await ctx.scheduler.enqueue("work", f"low{i}")
    await running.reach(4)
    await sched.enqueue("work", "high", priority=10)
    await settle(sched)  # its commit woke the driver: no slot, nothing started
    assert started == ["low0", "low1", "low2", "low3"]
    tickets.release()
    await running.reach(5)
    assert started[4] == "high"
    tickets.release()
    await running.reach(6)
    assert started[5] == "low4"  # then the flood goes on, in due order


async def test_priority_from_every_way_to_enqueue_and_refused_when_not_an_int(
    make: Make, clock: FakeClock
) -> None:
    registry = Registry()

    @registry.mutation("m")
    async def m(ctx: Any, args: Any) -> None: ...

    sched = make(registry)
    await sched.start()
    later = clock.time() + 60
    ids = {
        await sched.enqueue("m", run_at=later, priority=3): 3,
        await sched.run_after(60, "m", priority=-2): -2,
        await sched.run_at(later, "m"): 0,
    }
    async with sched.transaction() as ctx:
        ids[await ctx.scheduler.run_after(60, "m", priority=7, pace=Pace("p", 1.0))] = 7
    assert {j.id: j.priority for j in await sched.list_jobs()} == ids
    for bad in (True, 1.5, "1", 2**31):
        with pytest.raises(InvalidArgument, match="priority"):
            await sched.enqueue("m", priority=bad)  # type: ignore[arg-type]
    assert len(await sched.list_jobs()) == 4  # nothing written by a refusal
