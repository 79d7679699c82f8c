"""Debounce and batch (``ctx.scheduler.debounce`` / ``ctx.scheduler.batch``): one job per
burst of calls, items gathered into batches; transactional, from mutations, actions and
application transactions; exactly once per burst and each item in exactly one batch across
processes.

Every test runs on each store, on a FakeClock. "Two processes" are two schedulers on one
database; who goes first is arranged with events the test controls, never left to timing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import (
    InvalidArgument,
    JobState,
    NotSerializable,
    Registry,
    Retry,
    Scheduler,
    UnknownFunction,
)
from scheduler.testing import FakeClock
from tests.scheduler.helpers import until_waiting_for_a_lock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.scheduler.stores import StoreFactory

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HOUR = 3600.0
LIMIT = 10.0
"""How long a test waits for what must happen before it calls it a failure."""


@dataclass(frozen=True, slots=True)
class Failure:
    announcement: int
    error: str


@dataclass(frozen=True, slots=True)
class Digest:
    key: str
    items: tuple[Failure, ...]


class App:
    """The handlers, and what they saw."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, Any]] = []
        self.gate: asyncio.Event | None = None
        self.started = asyncio.Event()
        self.fail_first = 0
        self.registry = Registry()
        reg = self.registry

        @reg.mutation("t:save")
        async def save(ctx: Any, args: Any) -> Any:
            self.runs.append(("save", args))
            return args

        @reg.mutation("t:other")
        async def other(ctx: Any, args: Any) -> None:
            self.runs.append(("other", args))

        @reg.action("t:slow", idempotent=True)
        async def slow(ctx: Any, args: Any) -> None:
            self.runs.append(("slow", args))
            self.started.set()
            if self.gate is not None:
                await self.gate.wait()

        @reg.mutation("t:flaky", retry=Retry(max_failures=3, initial_backoff=10.0))
        async def flaky(ctx: Any, args: Any) -> None:
            self.runs.append(("flaky", args))
            if self.fail_first > 0:
                self.fail_first -= 1
                raise RuntimeError("not yet")

        @reg.mutation("t:digest", args=Digest)
        async def digest(ctx: Any, args: Digest) -> None:
            self.runs.append(("digest", args))

        @reg.mutation("t:in-mutation")
        async def in_mutation(ctx: Any, args: Any) -> int:
            return int(
                await ctx.scheduler.batch("t:save", args["item"], key="m", max_items=2, max_wait=60)
            )

        @reg.action("t:in-action")
        async def in_action(ctx: Any, args: Any) -> int:
            return int(await ctx.scheduler.debounce("t:save", args, key="a", quiet=5))

    def of(self, name: str) -> list[Any]:
        return [args for n, args in self.runs if n == name]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
async def one(stores: StoreFactory, clock: FakeClock) -> AsyncIterator[tuple[Scheduler, App]]:
    app = App()
    async with Scheduler(stores.new(), app.registry, clock=clock, sweep_interval=HOUR) as sched:
        yield sched, app


async def at(sched: Scheduler, clock: FakeClock, seconds: float) -> None:
    """Move the clock to ``seconds`` after START and let every due job run."""
    clock.set(START.timestamp() + seconds)
    await sched.wait_idle()


# --- debounce ------------------------------------------------------------------------------


async def test_a_burst_runs_once_quiet_after_its_last_call_with_its_last_args(
    one: tuple[Scheduler, App], clock: FakeClock
) -> None:
    sched, app = one
    ids = []
    for t, n in ((0, 1), (2, 2), (4, 3)):
        await at(sched, clock, t)
        ids.append(await sched.debounce("t:save", {"n": n}, key="ann:5", quiet=10))
    assert len(set(ids)) == 1
    job = await sched.get_job(ids[0])
    assert job is not None
    assert (job.state, job.next_ts, job.args) == (
        JobState.PENDING,
        START.timestamp() + 14,
        {"n": 3},
    )
    await at(sched, clock, 13.9)
    assert app.runs == []
    await at(sched, clock, 14)
    assert app.runs == [("save", {"n": 3})]
    # the next call begins a new burst
    again = await sched.debounce("t:save", {"n": 4}, key="ann:5", quiet=10)
    assert again != ids[0]
    await at(sched, clock, 24)
    assert app.of("save") == [{"n": 3}, {"n": 4}]


async def test_max_wait_bounds_a_burst_from_its_first_call(
    one: tuple[Scheduler, App], clock: FakeClock
) -> None:
    sched, app = one
    first = None
    for t in (0, 5, 10, 14):  # each call 4 or 5 s after the last: never quiet for 10 s
        await at(sched, clock, t)
        job = await sched.debounce("t:save", {"t": t}, key="k", quiet=10, max_wait=15)
        first = first or job
        assert job == first
    await at(sched, clock, 14.9)
    assert app.runs == []
    await at(sched, clock, 15)
    assert app.runs == [("save", {"t": 14})]
    # a call after it ran opens a burst of its own, bounded from its own first call
    await at(sched, clock, 16)
    later = await sched.debounce("t:save", {"t": 16}, key="k", quiet=10, max_wait=3)
    assert later != first
    await at(sched, clock, 19)
    assert app.of("save") == [{"t": 14}, {"t": 16}]


async def test_a_call_that_brings_its_burst_forward_wakes_the_driver(
    one: tuple[Scheduler, App], clock: FakeClock
) -> None:
    """The driver's timer is set for the burst's first due time; a later call with a shorter
    quiet moves the job earlier, and its commit must wake the driver to re-arm (the test
    waits on the result, never on wait_idle, which would look for due work itself)."""
    sched, app = one
    job = await sched.debounce("t:save", "slow", key="k", quiet=60)
    await sched.wait_idle()  # the driver's timer is armed for +60 s
    assert await sched.debounce("t:save", "soon", key="k", quiet=1) == job
    clock.advance(1)
    async with asyncio.timeout(LIMIT):
        assert await sched.result(job) == {"kind": "success", "value": "soon"}
    assert app.runs == [("save", "soon")]


async def test_keys_and_functions_make_separate_bursts(
    one: tuple[Scheduler, App], clock: FakeClock
) -> None:
    sched, app = one
    a = await sched.debounce("t:save", 1, key="a", quiet=5)
    b = await sched.debounce("t:save", 2, key="b", quiet=5)
    c = await sched.debounce("t:other", 3, key="a", quiet=5)
    assert len({a, b, c}) == 3
    await at(sched, clock, 5)
    assert sorted(app.runs) == [("other", 3), ("save", 1), ("save", 2)]


async def test_a_call_while_the_bursts_job_runs_begins_a_new_burst(
    one: tuple[Scheduler, App], clock: FakeClock
) -> None:
    sched, app = one
    app.gate = asyncio.Event()
    first = await sched.debounce("t:slow", "first", key="k", quiet=1)
    clock.advance(1)
    async with asyncio.timeout(LIMIT):
        await app.started.wait()  # the job runs, held by the gate
    second = await sched.debounce("t:slow", "second", key="k", quiet=1)
    assert second != first
    app.gate.set()
    await at(sched, clock, 2)
    assert app.of("slow") == ["first", "second"]


async def test_a_rolled_back_call_leaves_no_trace(
    one: tuple[Scheduler, App], clock: FakeClock
) -> None:
    sched, app = one

    class Undo(Exception):
        pass

    with pytest.raises(Undo):  # noqa: PT012 (the block is what rolls back)
        async with sched.transaction() as ctx:
            await ctx.scheduler.debounce("t:save", "lost", key="k", quiet=5)
            raise Undo
    assert await sched.list_jobs() == []
    job = await sched.debounce("t:save", "kept", key="k", quiet=5)
    with pytest.raises(Undo):  # noqa: PT012
        async with sched.transaction() as ctx:
            assert await ctx.scheduler.debounce("t:save", "lost", key="k", quiet=50) == job
            raise Undo
    stored = await sched.get_job(job)
    assert stored is not None
    assert (stored.args, stored.next_ts) == ("kept", START.timestamp() + 5)
    await at(sched, clock, 5)
    assert app.runs == [("save", "kept")]


async def test_debounce_and_batch_from_an_action_and_a_mutation(
    one: tuple[Scheduler, App], clock: FakeClock
) -> None:
    sched, app = one
    acted = []
    for n in (1, 2):  # one after the other: the later call is the burst's last
        acted.append(await sched.enqueue("t:in-action", {"from": n}))
        await sched.wait_idle()
    outcomes = [await sched.result(j) for j in acted]
    assert outcomes[0] == outcomes[1]  # one burst: the same job id
    burst = outcomes[0]["value"]
    mutated = [await sched.enqueue("t:in-mutation", {"item": n}) for n in (1, 2)]
    await sched.wait_idle()
    batch = [(await sched.result(j))["value"] for j in mutated]
    assert batch[0] == batch[1]
    assert app.of("save") == [{"key": "m", "items": [1, 2]}]  # full at 2: ran at once
    await at(sched, clock, 5)
    assert app.of("save")[1:] == [{"from": 2}]
    assert await sched.result(burst) == {"kind": "success", "value": {"from": 2}}


async def test_bad_calls_are_refused_before_anything_is_written(
    one: tuple[Scheduler, App],
) -> None:
    sched, _ = one
    with pytest.raises(UnknownFunction):
        await sched.debounce("t:nope", 1, key="k", quiet=1)
    with pytest.raises(InvalidArgument):
        await sched.debounce("t:save", 1, key="", quiet=1)
    with pytest.raises(InvalidArgument):
        await sched.debounce("t:save", 1, key="k", quiet=-1)
    with pytest.raises(InvalidArgument):
        await sched.debounce("t:save", 1, key="k", quiet=1, max_wait=float("nan"))
    with pytest.raises(InvalidArgument):
        await sched.batch("t:save", 1, key="k", max_items=0, max_wait=1)
    with pytest.raises(InvalidArgument):
        await sched.batch("t:save", 1, key="k", max_items=10_001, max_wait=1)
    with pytest.raises(InvalidArgument):
        await sched.batch("t:save", 1, key="k", max_items=True, max_wait=1)  # type: ignore[arg-type]
    with pytest.raises(NotSerializable):
        await sched.batch("t:save", object(), key="k", max_items=2, max_wait=1)
    with pytest.raises(InvalidArgument):  # a typed batch: each item is one of its items
        await sched.batch("t:digest", {"announcement": "x"}, key="k", max_items=2, max_wait=1)
    assert await sched.list_jobs() == []


# --- batch ---------------------------------------------------------------------------------


async def test_items_are_gathered_in_order_and_a_full_batch_runs_at_once(
    one: tuple[Scheduler, App], clock: FakeClock
) -> None:
    sched, app = one
    ids = [await sched.batch("t:save", n, key="g", max_items=3, max_wait=60) for n in range(7)]
    await sched.wait_idle()  # the clock has not moved: only full batches ran
    assert ids[0] == ids[1] == ids[2] != ids[3] == ids[4] == ids[5] != ids[6]
    assert app.of("save") == [{"key": "g", "items": [0, 1, 2]}, {"key": "g", "items": [3, 4, 5]}]
    await at(sched, clock, 59.9)
    assert len(app.runs) == 2
    await at(sched, clock, 60)  # max_wait after its first item
    assert app.of("save")[2:] == [{"key": "g", "items": [6]}]
    job = await sched.get_job(ids[6])
    assert job is not None
    assert job.args == {"key": "g", "items": [6]}


async def test_a_batch_that_fills_wakes_the_driver_while_the_clock_stands_still(
    one: tuple[Scheduler, App], clock: FakeClock
) -> None:
    sched, app = one
    job = await sched.batch("t:save", "a", key="g", max_items=2, max_wait=60)
    await sched.wait_idle()  # the driver's timer is armed for +60 s
    assert await sched.batch("t:save", "b", key="g", max_items=2, max_wait=60) == job
    async with asyncio.timeout(LIMIT):
        await sched.result(job)
    assert app.runs == [("save", {"key": "g", "items": ["a", "b"]})]
    assert clock.time() == START.timestamp()


async def test_max_wait_counts_from_the_first_item(
    one: tuple[Scheduler, App], clock: FakeClock
) -> None:
    sched, app = one
    for t, item in ((0, "a"), (20, "b"), (29, "c")):
        await at(sched, clock, t)
        await sched.batch("t:save", item, key="g", max_items=100, max_wait=30)
    await at(sched, clock, 30)
    assert app.of("save") == [{"key": "g", "items": ["a", "b", "c"]}]


async def test_items_added_while_a_batch_runs_go_to_the_next(
    one: tuple[Scheduler, App], clock: FakeClock
) -> None:
    sched, app = one
    app.gate = asyncio.Event()
    first = [await sched.batch("t:slow", n, key="g", max_items=2, max_wait=5) for n in (1, 2)]
    async with asyncio.timeout(LIMIT):
        await app.started.wait()
    later = await sched.batch("t:slow", 3, key="g", max_items=2, max_wait=5)
    assert later != first[0] == first[1]
    app.gate.set()
    await at(sched, clock, 5)
    assert app.of("slow") == [{"key": "g", "items": [1, 2]}, {"key": "g", "items": [3]}]


async def test_a_failed_batch_is_retried_whole_with_the_same_items(
    one: tuple[Scheduler, App], clock: FakeClock
) -> None:
    sched, app = one
    app.fail_first = 1
    job = await sched.batch("t:flaky", "x", key="g", max_items=2, max_wait=60)
    await sched.batch("t:flaky", "y", key="g", max_items=2, max_wait=60)
    await sched.wait_idle()  # full: ran at once, and failed
    newer = await sched.batch("t:flaky", "z", key="g", max_items=2, max_wait=60)
    assert newer != job  # the failed batch started: it takes no more items
    await at(sched, clock, 60)
    assert app.of("flaky") == [
        {"key": "g", "items": ["x", "y"]},
        {"key": "g", "items": ["x", "y"]},  # the retry (backoff under 60 s)
        {"key": "g", "items": ["z"]},
    ]
    assert await sched.result(job) == {"kind": "success", "value": None}


async def test_a_rolled_back_item_is_in_no_batch(
    one: tuple[Scheduler, App], clock: FakeClock
) -> None:
    sched, app = one
    await sched.batch("t:save", 1, key="g", max_items=3, max_wait=10)

    class Undo(Exception):
        pass

    with pytest.raises(Undo):  # noqa: PT012 (the block is what rolls back)
        async with sched.transaction() as ctx:
            await ctx.scheduler.batch("t:save", 2, key="g", max_items=3, max_wait=10)
            await ctx.scheduler.batch("t:save", 3, key="g", max_items=3, max_wait=10)
            raise Undo
    await sched.wait_idle()
    assert app.runs == []  # the rolled-back items did not fill it
    await sched.batch("t:save", 4, key="g", max_items=3, max_wait=10)
    await at(sched, clock, 10)
    assert app.of("save") == [{"key": "g", "items": [1, 4]}]


async def test_a_typed_batch_gets_its_type_and_one_item_batches_run_alone(
    one: tuple[Scheduler, App],
) -> None:
    sched, app = one
    for n in (1, 2):
        failure = Failure(n, "Missing Access")
        await sched.batch("t:digest", failure, key="guild:9", max_items=1, max_wait=60)
    await sched.wait_idle()
    assert app.of("digest") == [
        Digest("guild:9", (Failure(1, "Missing Access"),)),
        Digest("guild:9", (Failure(2, "Missing Access"),)),
    ]


async def test_batches_are_kept_and_pruned_with_their_items(
    stores: StoreFactory, clock: FakeClock
) -> None:
    app = App()
    sched = Scheduler(stores.new(), app.registry, clock=clock, sweep_interval=HOUR, retention=60)
    async with sched:
        job = await sched.batch("t:save", "a", key="g", max_items=1, max_wait=0)
        await sched.wait_idle()
        clock.advance(61)
        await sched.sweep()
        assert await sched.get_job(job) is None
        async with sched.reader() as db:
            cur = await db.execute("SELECT count(*) FROM scheduler_batch_items")
            assert (await cur.fetchone())[0] == 0


# --- two processes -------------------------------------------------------------------------


@pytest.fixture
async def pair(
    stores: StoreFactory, clock: FakeClock
) -> AsyncIterator[tuple[Scheduler, Scheduler, App, App]]:
    """Two schedulers ("processes") on one database, on one fake clock."""
    app_a, app_b = App(), App()
    async with (
        Scheduler(stores.new(), app_a.registry, clock=clock, sweep_interval=HOUR) as a,
        Scheduler(stores.again(), app_b.registry, clock=clock, sweep_interval=HOUR) as b,
    ):
        yield a, b, app_a, app_b


async def _race(a: Scheduler, b: Scheduler, first: Any, second: Any) -> tuple[int, int]:
    """A's transaction calls ``first(ctx)`` and stays open while B's calls ``second(ctx)``;
    A commits only once B's call is under way (on PostgreSQL: B is waiting for A's row, so
    both looked before either committed). Returns both calls' job ids."""
    called = asyncio.Event()
    let_go = asyncio.Event()

    async def in_a() -> int:
        async with a.transaction() as ctx:
            job = int(await first(ctx))
            called.set()
            await let_go.wait()
        return job

    async def in_b() -> int:
        await called.wait()
        async with b.transaction() as ctx:
            return int(await second(ctx))

    task_a = asyncio.create_task(in_a())
    task_b = asyncio.create_task(in_b())
    async with asyncio.timeout(LIMIT):
        await called.wait()
        await until_waiting_for_a_lock(b.reader, b.store.dialect, task_b)
    let_go.set()
    async with asyncio.timeout(LIMIT):
        return await task_a, await task_b


async def test_two_processes_opening_one_burst_at_once_make_one_job(
    pair: tuple[Scheduler, Scheduler, App, App], clock: FakeClock
) -> None:
    a, b, app_a, app_b = pair
    ids = await _race(
        a,
        b,
        lambda ctx: ctx.scheduler.debounce("t:save", "from a", key="k", quiet=10),
        lambda ctx: ctx.scheduler.debounce("t:save", "from b", key="k", quiet=10),
    )
    assert ids[0] == ids[1]
    assert len(await a.list_jobs()) == 1
    clock.advance(10)
    await a.wait_idle()
    await b.wait_idle()
    assert app_a.runs + app_b.runs == [("save", "from b")]  # once, with the last call's args


async def test_two_processes_opening_one_batch_at_once_share_it(
    pair: tuple[Scheduler, Scheduler, App, App], clock: FakeClock
) -> None:
    a, b, app_a, app_b = pair
    ids = await _race(
        a,
        b,
        lambda ctx: ctx.scheduler.batch("t:save", "a", key="g", max_items=5, max_wait=10),
        lambda ctx: ctx.scheduler.batch("t:save", "b", key="g", max_items=5, max_wait=10),
    )
    assert ids[0] == ids[1]
    clock.advance(10)
    await a.wait_idle()
    await b.wait_idle()
    assert app_a.runs + app_b.runs == [("save", {"key": "g", "items": ["a", "b"]})]


async def test_two_processes_adding_items_put_each_in_exactly_one_batch(
    pair: tuple[Scheduler, Scheduler, App, App], clock: FakeClock
) -> None:
    """Both add 30 items at once (each in its own transaction) while both drivers run the
    batches as they fill; then the stragglers' batch runs at max_wait."""
    a, b, app_a, app_b = pair

    async def add(sched: Scheduler, name: str) -> None:
        for n in range(30):
            await sched.batch("t:save", f"{name}{n}", key="g", max_items=4, max_wait=30)

    async with asyncio.timeout(LIMIT * 3):
        await asyncio.gather(add(a, "a"), add(b, "b"))
        await a.wait_idle()
        await b.wait_idle()
        clock.advance(30)
        await a.wait_idle()
        await b.wait_idle()
    batches = [args["items"] for _, args in app_a.runs + app_b.runs]
    seen = [item for items in batches for item in items]
    assert sorted(seen) == sorted([f"a{n}" for n in range(30)] + [f"b{n}" for n in range(30)])
    assert all(1 <= len(items) <= 4 for items in batches)
    assert sum(len(items) == 4 for items in batches) >= 60 // 4 - 1  # only the tail is short
    for items in batches:  # in each batch, each process's items in the order it added them
        for name in "ab":
            mine = [int(item[1:]) for item in items if item.startswith(name)]
            assert mine == sorted(mine)
