"""Pacing (``Pace(key, spacing)``), on every store: jobs that share a key start at least the
spacing apart, in due order; a job waiting for its key's slot is plain ``pending`` (no
lease, no worker slot); retries, re-runs after a lost lease and canceled jobs; the driver
wakes for the slot by itself; schedules and registrations carry a pace to their jobs.

The store-level tests talk to the store's domain methods with explicit times (as the
conformance suite does); the scheduler-level ones drive a whole scheduler on a FakeClock,
so nothing moves unless the test moves it.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import (
    ActionContext,
    InvalidArgument,
    JobKind,
    JobState,
    Pace,
    Registry,
    RetryLater,
    Scheduler,
    Store,
)
from scheduler.store_types import ClaimedJob, Outcome
from scheduler.testing import FakeClock
from tests.scheduler.helpers import Make, scheduler_maker
from tests.scheduler.test_store_conformance import LEASE, T0, new_job
from tests.support.processes import until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.scheduler.stores import StoreFactory

SPACING = 10.0


@pytest.fixture
async def store(stores: StoreFactory) -> AsyncIterator[Store]:
    s = stores.new()
    await s.open()
    try:
        yield s
    finally:
        await s.close()


def paced(key: str = "a", next_ts: float = T0, kind: JobKind = JobKind.MUTATION, **extra: Any):
    return new_job(kind=kind, next_ts=next_ts, pace_key=key, pace_spacing=SPACING, **extra)


async def claim(
    store: Store, now: float, actions: int = 64
) -> tuple[list[ClaimedJob], float | None]:
    got = await store.at(now).claim_due(now + LEASE, mutation_limit=64, action_limit=actions)
    return got.jobs, got.next_due


# --- the store: slots, due order, no lease while waiting ----------------------------------------


async def test_jobs_of_one_key_start_spacing_apart_in_due_order(store: Store) -> None:
    third = await store.at(T0).enqueue(paced(next_ts=T0 + 2))
    first = await store.at(T0).enqueue(paced(next_ts=T0))
    second = await store.at(T0).enqueue(paced(next_ts=T0 + 1))
    other_key = await store.at(T0).enqueue(paced("b", next_ts=T0 + 1))
    unpaced = await store.at(T0).enqueue(new_job(next_ts=T0 + 1))

    jobs, next_due = await claim(store, T0 + 5)
    # One per key, the key's earliest; other keys and unpaced jobs are not held up.
    assert sorted(j.id for j in jobs) == sorted([first, other_key, unpaced])
    assert next_due == T0 + 5 + SPACING  # when key a's slot opens: the driver's wake-up
    assert (await claim(store, T0 + 5 + SPACING - 0.001))[0] == []
    jobs, next_due = await claim(store, T0 + 5 + SPACING)
    assert [j.id for j in jobs] == [second]
    assert next_due == T0 + 5 + 2 * SPACING
    jobs, next_due = await claim(store, T0 + 5 + 2 * SPACING)
    assert [j.id for j in jobs] == [third]
    assert next_due is None


async def test_one_claim_starts_the_first_job_of_every_open_key(store: Store) -> None:
    firsts = {}
    for i in range(3):
        for k in range(20):
            job_id = await store.at(T0).enqueue(paced(f"key{k:02d}", next_ts=T0 + i))
            firsts.setdefault(k, job_id)
    jobs, next_due = await claim(store, T0 + 5)
    assert sorted(j.id for j in jobs) == sorted(firsts.values())
    assert next_due == T0 + 5 + SPACING
    limited = await store.at(T0 + 5 + SPACING).claim_due(T0 + 50, mutation_limit=7, action_limit=0)
    assert len(limited.jobs) == 7  # the limit counts paced jobs too
    assert limited.next_due == T0 + 5 + SPACING  # the 13 other keys' slots are open


async def test_a_job_waiting_for_its_slot_is_pending_without_a_lease(store: Store) -> None:
    first = await store.at(T0).enqueue(paced())
    waiting = await store.at(T0).enqueue(paced(next_ts=T0 + 1))
    await claim(store, T0 + 1)
    running = await store.at(T0 + 1).get_job(first)
    job = await store.at(T0 + 1).get_job(waiting)
    assert running is not None
    assert running.state is JobState.IN_PROGRESS
    assert job is not None
    assert (job.state, job.lease_expires_at, job.run_count) == (JobState.PENDING, None, 0)
    assert (job.pace_key, job.pace_spacing) == ("a", SPACING)
    assert await store.at(T0 + 1).next_due_time() == T0 + 1 + SPACING


async def test_a_paced_backlog_takes_no_action_slot_from_other_work(store: Store) -> None:
    """With room for one action per claim, a key whose slot is closed does not use it: the
    next claim takes another key's job, then an unpaced one."""
    backlog = [
        await store.at(T0).enqueue(paced(kind=JobKind.ACTION, next_ts=T0 + i)) for i in range(5)
    ]
    b = await store.at(T0).enqueue(paced("b", kind=JobKind.ACTION, next_ts=T0 + 3))
    unpaced = await store.at(T0).enqueue(new_job("x", JobKind.ACTION, T0 + 4))
    taken = []
    for _ in range(3):
        jobs, _ = await claim(store, T0 + 5, actions=1)
        taken += [j.id for j in jobs]
    assert sorted(taken) == sorted([unpaced, backlog[0], b])
    assert (await claim(store, T0 + 5, actions=1))[0] == []


async def test_a_retry_takes_a_new_slot_when_it_runs_again(store: Store) -> None:
    job_id = await store.at(T0).enqueue(paced(max_failures=3))
    later = await store.at(T0).enqueue(paced(next_ts=T0 + 15))
    [run] = (await claim(store, T0))[0]
    await store.at(T0 + 1).complete([Outcome(run, ok=False, error="boom")])
    retry = await store.at(T0 + 1).get_job(job_id)
    assert retry is not None
    assert retry.state is JobState.PENDING
    assert retry.next_ts < T0 + SPACING
    # Due again, but its key's slot (taken by its first run) is still closed.
    assert (await claim(store, T0 + SPACING - 0.001))[0] == []
    [again] = (await claim(store, T0 + SPACING))[0]
    assert (again.id, again.run_count, again.attempts) == (job_id, 2, 1)
    assert (await claim(store, T0 + 15))[0] == []  # the retry took the slot until T0 + 20
    [last] = (await claim(store, T0 + 2 * SPACING))[0]
    assert last.id == later


async def test_a_canceled_job_takes_no_slot(store: Store) -> None:
    canceled = await store.at(T0).enqueue(paced())
    after = await store.at(T0).enqueue(paced(next_ts=T0 + 1))
    assert await store.at(T0).cancel(canceled)
    [job] = (await claim(store, T0 + 1))[0]
    assert job.id == after  # at once: the canceled one never started


async def test_a_reclaimed_job_runs_again_in_a_new_slot(store: Store) -> None:
    job_id = await store.at(T0).enqueue(paced())
    queued = await store.at(T0).enqueue(paced(next_ts=T0 + LEASE + 1))
    await claim(store, T0)
    report = await store.at(T0 + LEASE + 1).reclaim_expired()
    assert report.requeued == 1
    # The reclaimed job is due again at T0 + 31, before `queued`: it goes first, in the slot
    # that opened at T0 + 10, and `queued` waits one spacing for the next.
    [again] = (await claim(store, T0 + LEASE + 1))[0]
    assert (again.id, again.run_count) == (job_id, 2)
    assert (await claim(store, T0 + LEASE + SPACING))[0] == []
    [job] = (await claim(store, T0 + LEASE + 1 + SPACING))[0]
    assert job.id == queued


async def test_two_stores_racing_one_key_never_start_two_in_one_slot(
    stores: StoreFactory,
) -> None:
    """Two connections (two processes) claim one key's backlog at the same instants: each
    instant, one job of the key starts, whoever claims it."""
    a, b = stores.new(), stores.again()
    await a.open()
    await b.open()
    try:
        ids = [await a.at(T0).enqueue(paced(next_ts=T0)) for _ in range(6)]
        started: list[tuple[float, int]] = []
        for step in range(6):
            now = T0 + step * SPACING
            claims = await asyncio.gather(claim(a, now), claim(b, now), claim(a, now))
            started += [(now, j.id) for jobs, _ in claims for j in jobs]
        assert started == [(T0 + i * SPACING, job_id) for i, job_id in enumerate(ids)]
    finally:
        await a.close()
        await b.close()


async def test_the_backlog_gauge_counts_paced_jobs_only_once_they_could_start(
    store: Store,
) -> None:
    """Due paced jobs behind their key's slot are not backlog (they are kept to their
    spacing): the backlog holds what could start now, the rest is counted as waiting."""
    for i in range(3):
        await store.at(T0).enqueue(paced(next_ts=T0 + i))
    await store.at(T0).enqueue(paced("b", next_ts=T0 + 3))
    await store.at(T0).enqueue(new_job(next_ts=T0 + 1))
    await store.at(T0).enqueue(paced("c", next_ts=T0 + 100))  # not due: neither

    g = await store.at(T0 + 5).gauges()
    # Before any claim every key's slot is open: key a's first, key b's, and the unpaced one.
    assert (g.due, g.paced_waiting, g.oldest_due) == (3, 2, T0)
    jobs, _ = await claim(store, T0 + 5)
    assert len(jobs) == 3  # a's first, b's and the unpaced job

    g = await store.at(T0 + 6).gauges()
    assert (g.due, g.paced_waiting, g.oldest_due) == (0, 2, None)
    # Key a's slot opens at T0 + 5 + SPACING: its next job could start from then, not from
    # its due time (T0 + 1), so that is its age.
    g = await store.at(T0 + 5 + SPACING + 2).gauges()
    assert (g.due, g.paced_waiting, g.oldest_due) == (1, 1, T0 + 5 + SPACING)
    assert g.active["pending"] == 3
    capped = await store.at(T0 + 5 + SPACING + 2).gauges(cap=1)
    assert (capped.due, capped.paced_waiting) == (1, 0)


async def test_prune_forgets_slots_that_opened_long_ago(store: Store) -> None:
    await store.at(T0).enqueue(paced())
    [run] = (await claim(store, T0))[0]
    await store.at(T0).complete([Outcome(run, ok=True)])
    assert await pace_rows(store) == 1
    assert await store.at(T0 + 100).prune(T0 + SPACING) == 1
    assert await pace_rows(store) == 1  # the slot opened at T0 + 10: not before that
    assert await store.at(T0 + 100).prune(T0 + 100) == 0
    assert await pace_rows(store) == 0  # an absent row is an open slot
    later = await store.at(T0 + 100).enqueue(paced(next_ts=T0 + 100))
    [job] = (await claim(store, T0 + 100))[0]
    assert job.id == later


async def pace_rows(store: Store) -> int:
    async with store.snapshot() as db:
        row = await (await db.execute("SELECT count(*) FROM scheduler_pace")).fetchone()
    return int(row[0])


# --- the scheduler: the options, the wake-up, worker slots --------------------------------------

START = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
async def make(stores: StoreFactory, clock: FakeClock) -> AsyncIterator[Make]:
    async with scheduler_maker(stores, clock=clock, sweep_interval=3600) as make:
        yield make


def recording(registry: Registry, clock: FakeClock, ran: list[tuple[str, float]]) -> None:
    @registry.action("post")
    async def post(ctx: ActionContext, args: Any) -> None:
        ran.append((args, clock.time()))


async def test_the_driver_wakes_for_the_slot_and_a_backlog_holds_no_worker_slot(
    make: Make, clock: FakeClock
) -> None:
    """One worker slot; five jobs queued on key a, one on key b, one unpaced, all due: a's
    waiting jobs leave the one slot to the others, and each of a's starts when its slot
    opens (the driver's timer; the fake clock moves only when the test moves it)."""
    ran: list[tuple[str, float]] = []
    registry = Registry()
    recording(registry, clock, ran)
    sched = make(registry, max_concurrency=1)
    await sched.start()
    t = clock.time()
    for i in range(5):
        await sched.enqueue("post", f"a{i}", pace=Pace("a", SPACING))
    await sched.run_after(0, "post", "b", pace=Pace("b", timedelta(seconds=SPACING)))
    await sched.enqueue("post", "unpaced")
    await sched.wait_idle()
    assert sorted(ran) == [("a0", t), ("b", t), ("unpaced", t)]
    for i in range(1, 5):
        clock.advance(SPACING - 0.01)
        await sched.wait_idle()
        assert len(ran) == 2 + i  # not yet
        clock.advance(0.01)
        await sched.wait_idle()
        assert ran[-1] == (f"a{i}", t + i * SPACING)
    jobs = await sched.list_jobs(limit=10)
    assert all(j.state is JobState.SUCCESS and j.run_count == 1 for j in jobs)


async def test_a_registration_pace_is_the_default_and_a_job_may_name_its_own(
    make: Make, clock: FakeClock
) -> None:
    registry = Registry()

    @registry.action("limited", pace=Pace("limited", 5.0))
    async def limited(ctx: ActionContext, args: Any) -> None: ...

    sched = make(registry)
    await sched.start()
    default = await sched.run_after(60, "limited")
    own = await sched.run_after(60, "limited", pace=Pace("elsewhere", 2.0))
    async with sched.transaction() as ctx:
        in_tx = await ctx.scheduler.run_at(clock.time() + 60, "limited", pace=Pace("tx", 1.0))
    paces = {j.id: (j.pace_key, j.pace_spacing) for j in await sched.list_jobs()}
    assert paces == {default: ("limited", 5.0), own: ("elsewhere", 2.0), in_tx: ("tx", 1.0)}
    with pytest.raises(InvalidArgument):
        await sched.enqueue("limited", pace=("k", 1.0))  # type: ignore[typeddict-item]
    with pytest.raises(InvalidArgument):
        Pace("k", 0)
    with pytest.raises(InvalidArgument):
        Pace("", 1.0)


async def test_schedule_occurrences_carry_the_schedule_pace(make: Make, clock: FakeClock) -> None:
    """An every-second schedule paced 3 s apart (allow_all, so they pile up), plus a one-off
    job on the same key: they start 3 s apart, in due order, the driver waking itself."""
    ran: list[tuple[str, float]] = []
    registry = Registry()
    recording(registry, clock, ran)
    sched = make(registry)
    await sched.start()
    t = clock.time()
    await sched.run_at(t + 1.5, "post", "one-off", pace=Pace("k", 3.0))
    info = await sched.schedules.create(
        "tick", timedelta(seconds=1), "post", "tick", overlap="allow_all", pace=Pace("k", 3.0)
    )
    assert info.next_fire is not None
    for _ in range(10):
        clock.advance(1.0)
        await sched.wait_idle()
    await sched.schedules.pause("tick")  # 10 ticks and the one-off: 11 jobs on key k
    for _ in range(30):
        clock.advance(1.0)
        await sched.wait_idle()
    assert ran[:2] == [("tick", t + 1), ("one-off", t + 4)]  # due at t + 1.5, before t + 2's
    assert [at for _, at in ran] == [t + 1 + 3 * i for i in range(11)]
    jobs = await sched.list_jobs(limit=100)
    assert len(jobs) == 11
    assert all(j.pace_key == "k" for j in jobs)
    assert all(j.state is JobState.SUCCESS for j in jobs)


async def test_a_held_occurrence_takes_its_slot_once_released(make: Make, clock: FakeClock) -> None:
    """buffer_one: the occurrence held behind a running one becomes pending when it ends,
    then starts in its key's next slot."""
    gate = asyncio.Event()
    starts: list[float] = []
    registry = Registry()

    @registry.action("slow")
    async def slow(ctx: ActionContext, args: Any) -> None:
        starts.append(clock.time())
        if len(starts) == 1:
            await gate.wait()

    sched = make(registry)
    await sched.start()
    t = clock.time()
    await sched.schedules.create(
        "s", timedelta(seconds=1), "slow", overlap="buffer_one", pace=Pace("s", 4.0)
    )
    clock.advance(1.0)
    await until(lambda: len(starts) == 1, 5, "the first occurrence to start")
    clock.advance(1.0)  # the t + 2 occurrence is held behind the running one
    await _until_jobs(sched, {JobState.IN_PROGRESS: 1, JobState.HELD: 1})
    gate.set()
    await _until_jobs(sched, {JobState.SUCCESS: 1, JobState.PENDING: 1})
    await sched.schedules.pause("s")
    clock.advance(2.9)  # t + 4.9: the slot taken at t + 1 opens at t + 5
    await sched.wait_idle()
    assert starts == [t + 1]
    clock.advance(0.1)
    await sched.wait_idle()
    assert starts == [t + 1, t + 5]


async def test_a_failed_paced_run_retries_in_a_later_slot(make: Make, clock: FakeClock) -> None:
    starts: list[float] = []
    registry = Registry()

    @registry.mutation("flaky")
    async def flaky(ctx: Any, args: Any) -> None:
        starts.append(clock.time())
        if len(starts) == 1:
            raise RetryLater("not yet")

    sched = make(registry)
    await sched.start()
    t = clock.time()
    job_id = await sched.enqueue("flaky", pace=Pace("f", 30.0))
    await sched.wait_idle()
    for _ in range(29):  # backoff is about a second; the slot opens at t + 30
        clock.advance(1.0)
        await sched.wait_idle()
    assert starts == [t]
    clock.advance(1.0)
    await sched.wait_idle()
    assert starts == [t, t + 30]
    job = await sched.get_job(job_id)
    assert job is not None
    assert job.state is JobState.SUCCESS
    assert job.attempts == 1


async def _until_jobs(sched: Scheduler, want: dict[JobState, int]) -> None:
    async def matches() -> bool:
        counts = await sched.store.at(sched.clock.time()).count_by_state()
        return all(counts[s] == n for s, n in want.items())

    await until(matches, 5, f"jobs in states {want}")


async def test_reserved_slots_are_spaced_across_processes_and_with_paced_jobs(
    stores: StoreFactory,
) -> None:
    """``reserve_slot`` gives each caller the key's next start (in turn, across processes
    sharing the store), and the key's paced jobs wait for the slots reserved before them."""
    clock = FakeClock(START)
    started: list[float] = []
    registry = Registry()

    @registry.action("work:paced")
    async def paced(ctx: Any, args: Any) -> None:
        started.append(clock.time())

    pace = Pace("gateway:bucket:0", 5.0)
    async with (
        Scheduler(stores.new(), registry, clock=clock) as a,
        Scheduler(stores.again(), registry, clock=clock) as b,
    ):
        first = await a.reserve_slot(pace)
        second = await b.reserve_slot(pace)
        third = await a.reserve_slot(pace)
        assert [first, second, third] == [START + timedelta(seconds=s) for s in (0, 5, 10)]
        await a.enqueue("work:paced", pace=pace)
        await a.wait_idle()
        assert started == []  # its slot is after the three reserved
        clock.advance(14.9)
        await a.wait_idle()
        assert started == []
        clock.advance(0.1)
        await a.wait_idle()
        assert started == [START.timestamp() + 15]
        # a slot long open: a reservation starts now
        clock.advance(60)
        assert await b.reserve_slot(pace) == clock.now()
