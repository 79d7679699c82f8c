"""Timeouts (``enqueue(..., timeout=)``, or the registration's), on every store: a run still
going after its timeout is cancelled and counts as a failed attempt (a mutation's writes
rolled back alone, an action retried only by its retry policy), recorded in the run history
with a clear error. The timeout is measured on the scheduler's clock: here a FakeClock, so
nothing times out unless the test moves it.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import (
    ActionContext,
    InvalidArgument,
    JobState,
    JobTimeout,
    Registry,
    Retry,
    RunOutcome,
    Scheduler,
)
from scheduler.testing import FakeClock
from tests.scheduler.helpers import Counter, Make, scheduler_maker, settle

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.scheduler.stores import StoreFactory

START = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
TIMED_OUT = "JobTimeout: still running after its timeout of {}s: cancelled"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
async def make(stores: StoreFactory, clock: FakeClock) -> AsyncIterator[Make]:
    async with scheduler_maker(stores, clock=clock, sweep_interval=3600) as make:
        yield make


class Runs:
    """What the test's handlers did: runs started, and runs that saw their cancellation."""

    def __init__(self) -> None:
        self.started = Counter()
        self.cancelled: list[Any] = []
        self.cancels = Counter()
        self.forever = asyncio.Event()  # never set: a run that waits on it never ends

    async def hang(self, args: Any) -> None:
        self.started.bump()
        try:
            await self.forever.wait()
        except asyncio.CancelledError:
            self.cancelled.append(args)
            self.cancels.bump()
            raise


async def state_of(sched: Scheduler, job_id: int) -> tuple[JobState, str | None]:
    job = await sched.get_job(job_id)
    assert job is not None
    return job.state, job.error


async def test_an_action_past_its_timeout_is_cancelled_and_fails_with_a_clear_error(
    make: Make, clock: FakeClock
) -> None:
    runs = Runs()
    registry = Registry()

    @registry.action("slow")
    async def slow(ctx: ActionContext, args: Any) -> None:
        await runs.hang(args)

    sched = make(registry)
    await sched.start()
    job_id = await sched.enqueue("slow", "a", timeout=timedelta(seconds=5))
    await runs.started.reach(1)
    clock.advance(4.99)
    await settle(sched)
    assert await state_of(sched, job_id) == (JobState.IN_PROGRESS, None)
    clock.advance(0.01)
    await runs.cancels.reach(1)
    await sched.wait_idle()
    assert runs.cancelled == ["a"]  # the handler saw its cancellation
    # An action's default budget is one attempt: failed for good.
    assert await state_of(sched, job_id) == (JobState.FAILED, TIMED_OUT.format(5))
    [run] = await sched.runs(job_id=job_id)
    assert (run.outcome, run.error) == (RunOutcome.FAILED, TIMED_OUT.format(5))
    assert run.duration == pytest.approx(5.0)


async def test_an_action_with_a_retry_budget_runs_again_after_timing_out(
    make: Make, clock: FakeClock
) -> None:
    """The registration's timeout and retry policy: the first run times out, the retry (after
    its backoff) finishes in time."""
    runs = Runs()
    registry = Registry()

    @registry.action("flaky", timeout=3, retry=Retry(max_failures=2, initial_backoff=1))
    async def flaky(ctx: ActionContext, args: Any) -> str:
        if ctx.job.attempt == 0:
            await runs.hang(args)
        return "done"

    sched = make(registry)
    await sched.start()
    job_id = await sched.enqueue("flaky", "b")
    await runs.started.reach(1)
    clock.advance(3)
    await runs.cancels.reach(1)
    await sched.wait_idle()
    job = await sched.get_job(job_id)
    assert job is not None
    assert (job.state, job.attempts, job.timeout) == (JobState.PENDING, 1, None)
    clock.set(job.next_ts)  # the backoff
    await sched.wait_idle()
    assert await state_of(sched, job_id) == (JobState.SUCCESS, None)
    outcomes = [(r.outcome, r.error) for r in reversed(await sched.runs(job_id=job_id))]
    assert outcomes == [(RunOutcome.RETRY, TIMED_OUT.format(3)), (RunOutcome.SUCCESS, None)]


async def test_a_mutation_past_its_timeout_is_rolled_back_alone(
    make: Make, clock: FakeClock
) -> None:
    """Two mutations in one batch: the first writes, then hangs past its timeout; its write
    is rolled back, the other one's commits with the batch, and the first is retried (a
    mutation's budget) and writes once."""
    runs = Runs()
    registry = Registry()

    @registry.mutation("write")
    async def write(ctx: Any, args: Any) -> None:
        await ctx.db.execute(
            "INSERT INTO written (item) VALUES (?)", (f"{args}:{ctx.job.attempt}",)
        )
        if args == "hangs" and ctx.job.attempt == 0:
            await runs.hang(args)

    sched = make(registry)
    await sched.start()
    async with sched.transaction() as ctx:
        await ctx.db.execute("CREATE TABLE written (item TEXT PRIMARY KEY)")
        hangs = await ctx.scheduler.enqueue("write", "hangs", timeout=2.5)
        await ctx.scheduler.enqueue("write", "fine")
    await runs.started.reach(1)
    clock.advance(2.5)
    await runs.cancels.reach(1)
    await sched.wait_idle()  # the retry's backoff ran from the batch's start: due already
    assert runs.cancelled == ["hangs"]
    job = await sched.get_job(hangs)
    assert job is not None
    assert (job.state, job.attempts, job.timeout) == (JobState.SUCCESS, 1, 2.5)
    outcomes = [(r.outcome, r.error) for r in reversed(await sched.runs(job_id=hangs))]
    assert outcomes == [(RunOutcome.RETRY, TIMED_OUT.format(2.5)), (RunOutcome.SUCCESS, None)]
    async with sched.reader() as db:
        rows = await (await db.execute("SELECT item FROM written ORDER BY item")).fetchall()
    assert [r[0] for r in rows] == ["fine:0", "hangs:1"]


async def test_a_run_that_swallows_its_cancellation_still_timed_out(
    make: Make, clock: FakeClock
) -> None:
    runs = Runs()
    registry = Registry()

    @registry.action("stubborn", timeout=1)
    async def stubborn(ctx: ActionContext, args: Any) -> str:
        with contextlib.suppress(asyncio.CancelledError):  # a handler that should not
            await runs.hang(args)
        return "finished anyway"

    sched = make(registry)
    await sched.start()
    job_id = await sched.enqueue("stubborn")
    await runs.started.reach(1)
    clock.advance(1)
    await runs.cancels.reach(1)
    await sched.wait_idle()
    assert await state_of(sched, job_id) == (JobState.FAILED, TIMED_OUT.format(1))


async def test_shutdown_during_a_timed_out_run_s_cleanup_is_a_shutdown(
    make: Make, clock: FakeClock
) -> None:
    """A run whose timeout fired but which goes on (its cleanup hangs) is interrupted by
    shutdown: recorded as interrupted, not as timed out, and no timer is left behind."""
    runs = Runs()
    registry = Registry()

    @registry.action("slow_cleanup", timeout=1)
    async def slow_cleanup(ctx: ActionContext, args: Any) -> None:
        try:
            await runs.hang("first")
        finally:
            await runs.hang("cleanup")

    sched = make(registry)
    await sched.start()
    job_id = await sched.enqueue("slow_cleanup")
    try:
        await runs.started.reach(1)
        clock.advance(1)
        await runs.started.reach(2)  # the deadline fired; the cleanup hangs
        assert runs.cancelled == ["first"]
        await sched.stop(grace=0)
        assert runs.cancelled == ["first", "cleanup"]
        assert clock.pending_timers == 0
    finally:
        runs.forever.set()  # whatever happened, no run hangs the test's end
    reader = make(registry)
    await reader.open()
    state, error = await state_of(reader, job_id)
    assert state is JobState.FAILED
    assert error is not None
    assert error.startswith("interrupted by shutdown")


async def test_a_finished_mutation_s_timeout_never_fires_into_later_work(
    make: Make, clock: FakeClock
) -> None:
    """Mutations run in the driver's own task: the timer of one that finished in time is
    gone with it, so moving the clock past it later cancels nothing."""
    gate = asyncio.Event()
    started = Counter()
    registry = Registry()

    @registry.mutation("m")
    async def m(ctx: Any, args: Any) -> str:
        started.bump()
        if args == "second":
            await gate.wait()
        return str(args)

    sched = make(registry)
    await sched.start()
    first = await sched.enqueue("m", "first", timeout=1)
    await sched.wait_idle()
    second = await sched.enqueue("m", "second")
    await started.reach(2)
    clock.advance(5)  # a timer left armed would fire (and cancel) now
    gate.set()
    await sched.wait_idle()
    assert await state_of(sched, first) == (JobState.SUCCESS, None)
    assert await state_of(sched, second) == (JobState.SUCCESS, None)


async def test_bad_timeouts_are_refused_and_nothing_is_written(make: Make) -> None:
    registry = Registry()

    @registry.mutation("m")
    async def m(ctx: Any, args: Any) -> None: ...

    for bad in (0, -1, "5", True, float("inf")):
        with pytest.raises(InvalidArgument, match="timeout"):
            registry.mutation("other", timeout=bad)(m)  # type: ignore[arg-type]
    sched = make(registry)
    await sched.start()
    for bad in (0, timedelta(seconds=-1), "5"):
        with pytest.raises(InvalidArgument, match="timeout"):
            await sched.enqueue("m", timeout=bad)  # type: ignore[arg-type]
    assert await sched.list_jobs() == []
    with pytest.raises(JobTimeout) as raised:
        raise JobTimeout("x")
    assert isinstance(raised.value, TimeoutError)  # caught like the builtin
