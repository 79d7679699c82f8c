"""Awaited results (``await sched.result(job_id)``): the terminal outcome of any job of the
store, through any delay, woken by the commit that ends it, never by polling.

Every test runs on each store. The clock is a FakeClock; where a test proves a wake-up by a
commit, the clock never moves and the sweep interval is an hour, so the only backstop (the
sweep interval) cannot be what answered. "Two processes" are two schedulers on one database
(separate connections; on PostgreSQL each with its own LISTEN connection).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import (
    InvalidArgument,
    JobNotFound,
    NonRetryable,
    Registry,
    Retry,
    Scheduler,
    SchedulerClosed,
)
from scheduler.testing import FakeClock

if TYPE_CHECKING:
    from tests.scheduler.stores import StoreFactory

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HOUR = 3600.0
LIMIT = 10.0
"""How long a test waits for what must happen before it calls it a failure (never what
makes it pass)."""


def registry(gate: asyncio.Event | None = None) -> Registry:
    reg = Registry()

    @reg.mutation("t:double")
    async def double(ctx: Any, args: Any) -> Any:
        return {"twice": args["n"] * 2}

    @reg.action("t:gated")
    async def gated(ctx: Any, args: Any) -> Any:
        assert gate is not None
        await gate.wait()
        return args

    @reg.mutation("t:refuse")
    async def refuse(ctx: Any, args: Any) -> None:
        raise NonRetryable("no thanks")

    @reg.mutation("t:flaky", retry=Retry(max_failures=3, initial_backoff=10.0))
    async def flaky(ctx: Any, args: Any) -> str:
        assert ctx.job is not None
        if ctx.job.attempt < 2:
            raise RuntimeError(f"attempt {ctx.job.attempt} fails")
        return "third time"

    return reg


async def waiting(
    sched: Scheduler, job_id: int, within: timedelta | None = None, callers: int = 1
) -> asyncio.Task[Any]:
    """Start awaiting ``job_id``'s result; return once the caller read the job (it had not
    ended) and sleeps until its end is told."""
    task = asyncio.ensure_future(sched.result(job_id, timeout=within))
    async with asyncio.timeout(LIMIT):
        await sched._results.until_asleep(job_id, callers)
    assert not task.done()
    return task


async def still_waiting(task: asyncio.Future[Any]) -> None:
    """Let ``task`` run every step it can take now, then check it is still waiting."""
    for _ in range(50):  # every wake-up the test could owe it, and more
        await asyncio.sleep(0)
    assert not task.done(), task.result() if not task.cancelled() else "cancelled"


async def test_success_failure_and_cancel_are_returned_as_on_complete_gets_them(
    stores: StoreFactory,
) -> None:
    clock = FakeClock(START)
    async with Scheduler(stores.new(), registry(), clock=clock, sweep_interval=HOUR) as sched:
        ok = await sched.enqueue("t:double", {"n": 21})
        bad = await sched.enqueue("t:refuse")
        later = await sched.run_after(timedelta(days=3), "t:double", {"n": 1})
        await sched.cancel(later)
        async with asyncio.timeout(LIMIT):
            assert await sched.result(ok) == {"kind": "success", "value": {"twice": 42}}
            assert await sched.result(bad) == {
                "kind": "failed",
                "error": "NonRetryable: no thanks",
            }
            assert await sched.result(later) == {"kind": "canceled"}


async def test_a_delayed_start_is_awaited_through_its_delay_and_its_retries(
    stores: StoreFactory,
) -> None:
    clock = FakeClock(START)
    async with Scheduler(stores.new(), registry(), clock=clock, sweep_interval=HOUR) as sched:
        job = await sched.run_after(timedelta(days=2), "t:flaky")
        waiter = await waiting(sched, job)
        clock.advance(timedelta(days=2))
        await sched.wait_idle()  # the first attempt failed: not an outcome
        assert not waiter.done()
        for _ in range(2):
            clock.advance(timedelta(minutes=10))  # past each backoff
            await sched.wait_idle()
        async with asyncio.timeout(LIMIT):
            assert await waiter == {"kind": "success", "value": "third time"}


async def test_the_commit_that_ends_the_job_wakes_the_wait_while_the_clock_stands_still(
    stores: StoreFactory,
) -> None:
    """The action runs until the test lets it go; the clock never moves and the sweep is an
    hour away, so only the completion's commit can answer the waiting callers."""
    clock = FakeClock(START)
    gate = asyncio.Event()
    async with Scheduler(stores.new(), registry(gate), clock=clock, sweep_interval=HOUR) as sched:
        job = await sched.enqueue("t:gated", ["a", 1])
        waiters = [await waiting(sched, job, callers=n) for n in (1, 2, 3)]
        gate.set()
        async with asyncio.timeout(LIMIT):
            outcomes = await asyncio.gather(*waiters)
        assert outcomes == [{"kind": "success", "value": ["a", 1]}] * 3
        assert outcomes[0] is not outcomes[1]  # each caller its own copy
        assert clock.time() == START.timestamp()


async def test_a_cancel_wakes_the_wait(stores: StoreFactory) -> None:
    clock = FakeClock(START)
    async with Scheduler(stores.new(), registry(), clock=clock, sweep_interval=HOUR) as sched:
        job = await sched.run_after(timedelta(hours=5), "t:double", {"n": 1})
        waiter = await waiting(sched, job)
        async with sched.transaction() as ctx:
            await ctx.scheduler.cancel(job)
        async with asyncio.timeout(LIMIT):
            assert await waiter == {"kind": "canceled"}


async def test_a_cancel_rolled_back_wakes_nothing(stores: StoreFactory) -> None:
    clock = FakeClock(START)
    async with Scheduler(stores.new(), registry(), clock=clock, sweep_interval=HOUR) as sched:
        job = await sched.run_after(timedelta(hours=5), "t:double", {"n": 1})
        waiter = await waiting(sched, job)

        class Undo(Exception):
            pass

        with pytest.raises(Undo):  # noqa: PT012 (the block is what rolls back)
            async with sched.transaction() as ctx:
                await ctx.scheduler.cancel(job)
                raise Undo
        await still_waiting(waiter)
        clock.advance(timedelta(hours=5))
        async with asyncio.timeout(LIMIT):
            assert await waiter == {"kind": "success", "value": {"twice": 2}}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


async def test_a_job_ended_by_another_process_wakes_the_wait(
    stores: StoreFactory, clock: FakeClock
) -> None:
    """A (opened without its driver, as a command-line tool is) makes the job and awaits
    it; B, another process on the same database, runs it. On PostgreSQL B's commit notifies
    A at once: the clock never moves. A SQLite file cannot notify: A sees it at its next
    sweep interval, and not before."""
    gate = asyncio.Event()
    a = Scheduler(stores.new(), registry(), clock=clock, sweep_interval=HOUR)
    await a.open()
    try:
        async with Scheduler(stores.again(), registry(gate), clock=clock, sweep_interval=HOUR) as b:
            job = await a.enqueue("t:gated", {"from": "a"})
            waiter = await waiting(a, job)
            gate.set()
            await b.wait_idle()  # B has run the job and recorded its end
            if stores.kind == "sqlite":
                await still_waiting(waiter)  # B's commit is not heard in A
                clock.advance(HOUR)  # A's backstop: its sweep interval
            async with asyncio.timeout(LIMIT):
                assert await waiter == {"kind": "success", "value": {"from": "a"}}
    finally:
        await a.stop()
    if stores.kind != "sqlite":
        assert clock.time() == START.timestamp()


async def test_a_job_made_by_another_process_is_awaited_too(
    stores: StoreFactory, clock: FakeClock
) -> None:
    async with (
        Scheduler(stores.new(), registry(), clock=clock, sweep_interval=HOUR) as a,
        Scheduler(stores.again(), registry(), clock=clock, sweep_interval=HOUR) as b,
    ):
        job = await b.run_after(timedelta(minutes=30), "t:double", {"n": 4})
        waiter = await waiting(a, job)
        assert await b.cancel(job)
        if stores.kind == "sqlite":
            await still_waiting(waiter)
            clock.advance(HOUR)
        async with asyncio.timeout(LIMIT):
            assert await waiter == {"kind": "canceled"}


async def test_timeout_runs_on_the_schedulers_clock(stores: StoreFactory, clock: FakeClock) -> None:
    async with Scheduler(stores.new(), registry(), clock=clock, sweep_interval=HOUR) as sched:
        job = await sched.run_after(timedelta(hours=1), "t:double", {"n": 1})
        waiter = await waiting(sched, job, within=timedelta(minutes=10))
        clock.advance(timedelta(minutes=9))
        await still_waiting(waiter)
        clock.advance(timedelta(minutes=1))
        with pytest.raises(TimeoutError, match="had not ended"):
            await asyncio.wait_for(waiter, LIMIT)
        # a zero timeout answers at once: the outcome if the job ended, else TimeoutError
        with pytest.raises(TimeoutError, match="had not ended"):
            await asyncio.wait_for(sched.result(job, timeout=0), LIMIT)
        clock.advance(timedelta(hours=1))
        await sched.wait_idle()
        assert await sched.result(job, timeout=0) == {"kind": "success", "value": {"twice": 2}}
        assert sched._results.waiting == 0  # nobody left registered


async def test_unknown_ids_and_bad_arguments_are_refused(stores: StoreFactory) -> None:
    async with Scheduler(stores.new(), registry(), clock=FakeClock(START)) as sched:
        with pytest.raises(JobNotFound) as missing:
            await sched.result(987654)
        assert isinstance(missing.value, LookupError)
        with pytest.raises(InvalidArgument):
            await sched.result("7")  # type: ignore[arg-type]
        job = await sched.enqueue("t:double", {"n": 1})
        with pytest.raises(InvalidArgument):
            await sched.result(job, timeout=-1)


async def test_a_wait_still_going_at_stop_ends_with_scheduler_closed(
    stores: StoreFactory,
) -> None:
    sched = Scheduler(stores.new(), registry(), clock=FakeClock(START), sweep_interval=HOUR)
    await sched.start()
    job = await sched.run_after(timedelta(days=1), "t:double", {"n": 1})
    waiter = await waiting(sched, job)
    await sched.stop()
    with pytest.raises(SchedulerClosed):
        await waiter
