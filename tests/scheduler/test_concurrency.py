"""Per-key concurrency (``Concurrency(key, limit)``), on every store: at most the limit of a
key's jobs in progress at once, across every process sharing the store; a job waiting for
its turn is plain ``pending`` (no lease, no worker slot) and starts, in due order, when a
run of its key ends (that commit wakes the drivers: no clock move, no sweep).

The store-level tests talk to the store's operations with explicit times; the scheduler
tests drive schedulers on a FakeClock whose sweep never comes, with runs held by events the
test sets. "Two processes" are two schedulers (or two stores) on one database; who goes
first is arranged by the test, never left to timing. A killed holder (a real process,
SIGKILLed) is in test_crash.py.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import (
    ActionContext,
    Concurrency,
    InvalidArgument,
    JobKind,
    JobState,
    Pace,
    Registry,
    Scheduler,
    Store,
)
from scheduler._ops import dispatch
from scheduler.store_types import ClaimedJob, Outcome
from scheduler.testing import FakeClock
from tests.scheduler.helpers import settle, until_waiting_for_a_lock
from tests.scheduler.test_store_conformance import LEASE, T0, new_job

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from tests.scheduler.stores import StoreFactory

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HOUR = 3600.0
LIMIT = 10.0
"""How long a test waits for what must happen before it calls it a failure."""


@pytest.fixture
async def store(stores: StoreFactory) -> AsyncIterator[Store]:
    s = stores.new()
    await s.open()
    try:
        yield s
    finally:
        await s.close()


def limited(
    key: str = "k", limit: int = 1, next_ts: float = T0, kind: JobKind = JobKind.MUTATION
) -> Any:
    return new_job(kind=kind, next_ts=next_ts, concurrency_key=key, concurrency_limit=limit)


async def claim(
    store: Store, now: float, actions: int = 64
) -> tuple[list[ClaimedJob], float | None]:
    got = await store.at(now).claim_due(now + LEASE, mutation_limit=64, action_limit=actions)
    return got.jobs, got.next_due


# --- the store: places, due order, no lease while waiting ---------------------------------------


async def test_a_key_runs_at_most_its_limit_in_due_order_and_its_end_wakes_the_drivers(
    store: Store,
) -> None:
    third = await store.at(T0).enqueue(limited("a", 2, T0 + 2))
    first = await store.at(T0).enqueue(limited("a", 2, T0))
    second = await store.at(T0).enqueue(limited("a", 2, T0 + 1))
    other_key = await store.at(T0).enqueue(limited("b", 1, T0 + 1))
    plain = await store.at(T0).enqueue(new_job(next_ts=T0 + 1))

    jobs, next_due = await claim(store, T0 + 5)
    # Key a's first two, in due order; other keys and unlimited jobs are not held up.
    assert sorted(j.id for j in jobs) == sorted([first, second, other_key, plain])
    assert next_due is None  # key a is at its limit: nothing to wake up for
    waiting = await store.at(T0 + 5).get_job(third)
    assert waiting is not None
    assert (waiting.state, waiting.lease_expires_at) == (JobState.PENDING, None)
    assert (waiting.concurrency_key, waiting.concurrency_limit) == ("a", 2)
    assert (await claim(store, T0 + 6))[0] == []

    wakes: list[None] = []
    store.add_commit_listener(lambda: wakes.append(None))
    run = next(j for j in jobs if j.id == second)
    await store.at(T0 + 7).complete([Outcome(run, ok=True)])
    assert wakes, "the end of a limited run must wake the drivers"
    jobs, _ = await claim(store, T0 + 7)
    assert [j.id for j in jobs] == [third]


async def test_a_lost_lease_and_a_retry_free_the_place(store: Store) -> None:
    # An action whose lease runs out (its process died) fails: its place is free at once.
    lost = await store.at(T0).enqueue(limited(kind=JobKind.ACTION))
    later = await store.at(T0).enqueue(limited(kind=JobKind.ACTION, next_ts=T0 + 1))
    assert [j.id for j in (await claim(store, T0 + 1))[0]] == [lost]
    wakes: list[None] = []
    store.add_commit_listener(lambda: wakes.append(None))
    end = T0 + 1 + LEASE + 1
    assert (await store.at(end).reclaim_expired()).failed == 1
    assert wakes, "the reclaim that frees a place must wake the drivers"
    [run], _ = await claim(store, end)
    assert run.id == later
    await store.at(end).complete([Outcome(run, ok=True)])

    # A failed attempt waits for its retry without its place: the next in line starts.
    t = end + 10
    flaky = await store.at(t).enqueue(limited(next_ts=t))
    behind = await store.at(t).enqueue(limited(next_ts=t + 1))
    [run], _ = await claim(store, t + 1)
    assert run.id == flaky
    await store.at(t + 1).complete([Outcome(run, ok=False, error="boom")])
    [run], next_due = await claim(store, t + 1)
    assert run.id == behind  # the retry waits behind it now (its due time moved on)
    assert next_due is None
    await store.at(t + 1).complete([Outcome(run, ok=True)])
    [run], _ = await claim(store, t + 60)
    assert run.id == flaky


async def test_a_waiting_job_and_a_due_one_count_apart_in_the_gauges(store: Store) -> None:
    for _ in range(3):
        await store.at(T0).enqueue(limited("a", 1, T0))
    await store.at(T0).enqueue(limited("b", 1, T0 + 10))
    g = await store.at(T0 + 1).gauges()
    assert (g.due, g.limited_waiting, g.oldest_due) == (1, 2, T0)
    await claim(store, T0 + 1)
    g = await store.at(T0 + 1).gauges()
    assert (g.due, g.limited_waiting, g.oldest_due) == (0, 2, None)


async def test_two_claimers_at_once_never_take_one_place_twice(stores: StoreFactory) -> None:
    """A claims the key's mutation in a transaction it holds open; B then claims with room
    for actions, where the key's earlier action is its first in line: B must wait for A
    (on PostgreSQL for the key's lock; on SQLite for the writer) and then find the place
    taken. Without the lock and the count under it, B would start the action beside A's
    mutation."""
    a, b = stores.new(), stores.again()
    await a.open()
    await b.open()
    try:
        action = await a.at(T0).enqueue(limited(kind=JobKind.ACTION))
        mutation = await a.at(T0).enqueue(limited(next_ts=T0 + 1))
        claimed = asyncio.Event()
        let_go = asyncio.Event()
        now = T0 + 2

        async def in_a() -> list[int]:
            op = partial(
                dispatch.claim_due, lease_until=now + LEASE, mutation_limit=64, action_limit=0
            )
            async with a.transaction(now) as tx:
                got = await tx.run(op)
                claimed.set()
                await let_go.wait()
            return [j.id for j in got.jobs]

        async def in_b() -> list[int]:
            await claimed.wait()
            got = await b.at(now).claim_due(now + LEASE, mutation_limit=64, action_limit=64)
            return [j.id for j in got.jobs]

        task_a = asyncio.create_task(in_a())
        task_b = asyncio.create_task(in_b())
        async with asyncio.timeout(LIMIT):
            await claimed.wait()
            # B waits for A (or, were nothing to stop it, ends with what it took).
            waits = asyncio.create_task(
                until_waiting_for_a_lock(partial(_snapshot, b), b.dialect, task_b)
            )
            await asyncio.wait({waits, task_b}, return_when=asyncio.FIRST_COMPLETED)
            waits.cancel()
            await asyncio.gather(waits, return_exceptions=True)
        let_go.set()
        async with asyncio.timeout(LIMIT):
            assert await task_a == [mutation]
            assert await task_b == []
        job = await b.at(now).get_job(action)
        assert job is not None
        assert (job.state, job.lease_expires_at) == (JobState.PENDING, None)
    finally:
        await a.close()
        await b.close()


def _snapshot(store: Store) -> Any:
    return store.snapshot()


# --- schedulers on a FakeClock ----------------------------------------------------------------


class Runs:
    """What the ``t:hold`` runs of every scheduler of a test did; each run waits for its
    job's gate."""

    def __init__(self) -> None:
        self.started: list[tuple[str, int]] = []
        self.running: set[int] = set()
        self.most = 0
        """The most runs in progress at once (over every scheduler)."""
        self.gates: dict[int, asyncio.Event] = {}
        self._changed = asyncio.Event()

    def gate(self, job: int) -> asyncio.Event:
        return self.gates.setdefault(job, asyncio.Event())

    def registry(self, who: str) -> Registry:
        registry = Registry()

        @registry.action("t:hold")
        async def hold(ctx: ActionContext, args: Any) -> None:
            job = ctx.job.id
            self.started.append((who, job))
            self.running.add(job)
            self.most = max(self.most, len(self.running))
            self._changed.set()
            try:
                await self.gate(job).wait()
            finally:
                self.running.discard(job)

        @registry.action("t:lane", concurrency=Concurrency("lane", 1))
        async def lane(ctx: ActionContext, args: Any) -> None:
            await hold(ctx, args)

        @registry.mutation("t:tick")
        async def tick(ctx: Any, args: Any) -> None:
            return None

        return registry

    @property
    def jobs(self) -> list[int]:
        return [job for _, job in self.started]

    async def until(self, what: str, done: Callable[[], bool]) -> None:
        async with asyncio.timeout(LIMIT):
            while not done():
                self._changed.clear()
                await self._changed.wait()
        assert done(), what

    async def release(self, job: int) -> None:
        self.gate(job).set()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def runs() -> Runs:
    return Runs()


@pytest.fixture
async def pair(
    stores: StoreFactory, clock: FakeClock, runs: Runs
) -> AsyncIterator[tuple[Scheduler, Scheduler]]:
    """Two schedulers ("processes") on one database, on one fake clock whose sweep never
    comes: only commits wake them."""
    async with (
        Scheduler(
            stores.new(), runs.registry("a"), clock=clock, sweep_interval=HOUR, process_id="a"
        ) as a,
        Scheduler(
            stores.again(), runs.registry("b"), clock=clock, sweep_interval=HOUR, process_id="b"
        ) as b,
    ):
        try:
            yield a, b
        finally:
            for gate in runs.gates.values():
                gate.set()
            for job in runs.running:
                runs.gate(job).set()


async def waiting(sched: Scheduler, job_id: int) -> bool:
    """The job is pending without a lease (it holds nothing while it waits)."""
    job = await sched.get_job(job_id)
    assert job is not None
    return job.state is JobState.PENDING and job.lease_expires_at is None


async def test_limit_one_never_runs_two_at_once_across_two_schedulers(
    pair: tuple[Scheduler, Scheduler], runs: Runs
) -> None:
    a, b = pair
    one = Concurrency("k", 1)
    ids = [await b.enqueue("t:hold", None, concurrency=one) for _ in range(3)]
    await runs.until("the first run", lambda: len(runs.started) == 1)
    for turn, job in enumerate(ids):
        # Both processes look again while the key is at its limit: neither starts another.
        a.wake()
        b.wake()
        await settle(a)
        await settle(b)
        assert runs.jobs == ids[: turn + 1]
        for later in ids[turn + 1 :]:
            assert await waiting(a, later)
        # Its end wakes whichever process may start the next (the clock stands still).
        await runs.release(job)
        if turn + 1 < len(ids):
            await runs.until("the next run", lambda n=turn + 2: len(runs.started) == n)
    await a.wait_idle()
    await b.wait_idle()
    assert runs.most == 1
    assert runs.jobs == ids  # in due order
    for job in ids:
        got = await a.get_job(job)
        assert got is not None
        assert got.state is JobState.SUCCESS


async def test_a_waiting_job_takes_no_worker_slot_and_other_keys_proceed(
    stores: StoreFactory, clock: FakeClock, runs: Runs
) -> None:
    async with Scheduler(
        stores.new(), runs.registry("a"), clock=clock, sweep_interval=HOUR, max_concurrency=3
    ) as sched:
        try:
            k = [await sched.enqueue("t:hold", None, concurrency=Concurrency("k", 1))]
            k += [await sched.enqueue("t:hold", None, concurrency=Concurrency("k", 1))]
            k += [await sched.enqueue("t:hold", None, concurrency=Concurrency("k", 1))]
            await runs.until("k's first run", lambda: len(runs.started) == 1)
            await settle(sched)
            assert runs.jobs == [k[0]]
            assert await waiting(sched, k[1])
            assert await waiting(sched, k[2])
            # Two worker slots are free: another key's job and an unlimited one take them.
            other = await sched.enqueue("t:hold", None, concurrency=Concurrency("m", 1))
            plain = await sched.enqueue("t:hold")
            await runs.until("both", lambda: len(runs.started) == 3)
            assert set(runs.jobs) == {k[0], other, plain}
            assert await waiting(sched, k[1])
            await runs.release(k[0])
            await runs.until("k's next run", lambda: len(runs.started) == 4)
            assert runs.jobs[-1] == k[1]
        finally:
            for gate in [runs.gate(j) for j in list(runs.running)]:
                gate.set()


async def test_a_registration_gives_its_jobs_and_occurrences_its_limit(
    stores: StoreFactory, clock: FakeClock, runs: Runs
) -> None:
    async with Scheduler(
        stores.new(), runs.registry("a"), clock=clock, sweep_interval=HOUR
    ) as sched:
        try:
            first = await sched.enqueue("t:lane")
            await sched.schedules.create("every-minute", timedelta(minutes=1), "t:lane")
            await runs.until("the first run", lambda: len(runs.started) == 1)
            clock.advance(timedelta(minutes=1))
            await settle(sched)
            [occurrence] = [j for j in await sched.list_jobs() if j.schedule_name]
            assert (occurrence.concurrency_key, occurrence.concurrency_limit) == ("lane", 1)
            assert await waiting(sched, occurrence.id)
            assert runs.jobs == [first]
            await runs.release(first)
            await runs.until("the occurrence", lambda: len(runs.started) == 2)
            assert runs.jobs == [first, occurrence.id]
        finally:
            for job in list(runs.running):
                runs.gate(job).set()


async def test_bad_limits_and_a_pace_with_a_limit_are_refused(
    stores: StoreFactory, clock: FakeClock, runs: Runs
) -> None:
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(InvalidArgument, match=r"Concurrency\.limit"):
            Concurrency("k", bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=r"Concurrency\.key"):
        Concurrency("", 1)
    registry = Registry()

    async def handler(ctx: Any, args: Any) -> None:
        return None

    with pytest.raises(InvalidArgument, match="a pace or a concurrency"):
        registry.register(
            "x", handler, "action", pace=Pace("p", 1), concurrency=Concurrency("k", 1)
        )
    async with Scheduler(
        stores.new(), runs.registry("a"), clock=clock, sweep_interval=HOUR
    ) as sched:
        with pytest.raises(InvalidArgument, match="a pace or a concurrency"):
            await sched.enqueue("t:tick", pace=Pace("p", 1), concurrency=Concurrency("k", 1))
        with pytest.raises(InvalidArgument, match=r"Concurrency\(key, limit\)"):
            await sched.enqueue("t:tick", concurrency=("k", 1))  # type: ignore[typeddict-item]
        # A job that names a pace leaves its registration's limit aside.
        job = await sched.enqueue("t:lane", pace=Pace("p", 1), run_at=START + timedelta(days=1))
        got = await sched.get_job(job)
        assert got is not None
        assert (got.pace_key, got.concurrency_key) == ("p", None)
        assert await sched.list_jobs()  # nothing else was written by the refusals
        assert len(await sched.list_jobs()) == 1
