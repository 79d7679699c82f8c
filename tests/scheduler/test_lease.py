"""Leases held by action runs: ``ctx.lease_remaining()``, ``ctx.ensure_lease()``, ``LeaseLost``,
and heartbeats that find the lease gone; plus the wall clock stepped under a running scheduler.

Everything runs on a FakeClock except the two tests of the real clock's timer, which step a
``SystemClock`` whose wall time the test offsets.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import (
    ActionContext,
    InvalidArgument,
    JobState,
    LeaseLost,
    Registry,
    Retry,
    Scheduler,
    SystemClock,
)
from scheduler.testing import FakeClock
from tests.scheduler.helpers import Make, scheduler_maker, settle

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.scheduler.stores import StoreFactory

START = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
LEASE = 10.0
MARGIN = 2.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
async def make(stores: StoreFactory, clock: FakeClock) -> AsyncIterator[Make]:
    async with scheduler_maker(
        stores, clock=clock, lease=LEASE, lease_margin=MARGIN, sweep_interval=3600
    ) as make:
        yield make


def discarded(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "discarded: lease lost" in r.getMessage()]


# --- lease_remaining / ensure_lease ---------------------------------------------------------------


async def test_lease_remaining_counts_down_by_elapsed_time_and_ignores_wall_steps(
    make: Make, clock: FakeClock
) -> None:
    seen: list[float] = []
    step = asyncio.Event()
    stepped = asyncio.Event()
    registry = Registry()

    @registry.action("probe")
    async def probe(ctx: ActionContext, args: Any) -> None:
        seen.append(ctx.lease_remaining())  # just claimed
        step.set()
        await stepped.wait()
        seen.append(ctx.lease_remaining())  # 3 s passed, then the wall clock stepped twice
        assert await ctx.heartbeat()
        seen.append(ctx.lease_remaining())  # renewed from the heartbeat
        clock.advance(LEASE)
        seen.append(ctx.lease_remaining())  # a whole lease later: nothing is sure any more

    sched = make(registry)
    await sched.start()
    job_id = await sched.run_after(0, "probe")
    await asyncio.wait_for(step.wait(), 5)
    clock.advance(3)
    clock.step(timedelta(hours=1))
    clock.step(timedelta(hours=-2))
    stepped.set()
    await sched.wait_idle()
    assert seen == [LEASE - MARGIN, LEASE - MARGIN - 3, LEASE - MARGIN, 0.0]
    job = await sched.get_job(job_id)
    assert job is not None
    assert job.state is JobState.SUCCESS


async def test_ensure_lease_raises_lease_lost_when_less_remains_than_asked(make: Make) -> None:
    outcomes: list[str] = []
    registry = Registry()

    @registry.action("careful")
    async def careful(ctx: ActionContext, need: float) -> None:
        try:
            ctx.ensure_lease(need)
        except LeaseLost as exc:
            outcomes.append(f"lost: {exc}")
            return
        outcomes.append("ok")

    sched = make(registry)
    await sched.start()
    await sched.run_after(0, "careful", LEASE - MARGIN - 0.5)
    await sched.wait_idle()
    await sched.run_after(0, "careful", LEASE - MARGIN)
    await sched.wait_idle()
    await sched.run_after(0, "careful", -1)  # negative asks: the same as 0
    await sched.wait_idle()
    assert outcomes[0] == "ok"
    assert outcomes[1].startswith("lost: job ")
    assert "less than the 8.000s asked" in outcomes[1]
    assert outcomes[2] == "ok"


async def test_lease_margin_must_be_less_than_the_lease(stores: StoreFactory) -> None:
    registry = Registry()
    for bad in (-1, LEASE, LEASE + 1, timedelta(seconds=LEASE)):
        with pytest.raises(InvalidArgument, match="lease_margin"):
            Scheduler(stores.new(), registry, lease=LEASE, lease_margin=bad)
    default = Scheduler(stores.new(), registry, lease=LEASE)
    assert default.settings.lease_margin == LEASE / 5
    assert (
        Scheduler(stores.new(), registry).settings.lease_margin == 5.0
    )  # 30 s lease: capped at 5 s


# --- a heartbeat that finds the lease gone ------------------------------------------------------


async def test_heartbeat_that_finds_the_job_reclaimed_cancels_the_run(
    make: Make, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Run 1 is paused past its lease; the sweep hands the job to run 2, which completes it.
    When run 1 wakes, its heartbeat finds the job gone: it is cancelled before its side
    effect, and logged once, without a traceback."""
    effects: list[int] = []
    runs: list[int] = []
    first_started = asyncio.Event()
    wake_first = asyncio.Event()
    registry = Registry()

    @registry.action("effect", idempotent=True)
    async def effect(ctx: ActionContext, args: Any) -> int:
        runs.append(ctx.job.run_count)
        if len(runs) == 1:
            first_started.set()
            await wake_first.wait()  # "paused"
            await ctx.heartbeat()
            await asyncio.sleep(0)  # any await after the failed heartbeat ends the run
        effects.append(ctx.job.run_count)
        return ctx.job.run_count

    sched = make(registry)
    await sched.start()
    job_id = await sched.run_after(0, "effect")
    await asyncio.wait_for(first_started.wait(), 5)
    clock.advance(LEASE + 1)
    await sched.sweep()  # reclaims run 1's lease; run 2 starts and finishes
    await asyncio.wait_for(_until_state(sched, job_id, JobState.SUCCESS), 5)
    with caplog.at_level(logging.WARNING, logger="scheduler"):
        wake_first.set()
        await sched.wait_idle()
    assert runs == [1, 2]
    assert effects == [2]  # run 1 never reached its side effect
    job = await sched.get_job(job_id)
    assert job is not None
    assert job.state is JobState.SUCCESS
    assert job.result == 2
    [record] = discarded(caplog)
    assert record.levelno == logging.WARNING
    assert record.exc_info is None
    assert f"job {job_id} (effect) run 1 discarded" in record.getMessage()


async def test_ensure_lease_out_of_time_hands_an_idempotent_job_back_at_once(
    make: Make, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The run only fears the lease is gone (nobody reclaimed it yet): the job is released,
    fenced by its run count, and runs again at once without waiting for the sweep."""
    effects: list[int] = []
    started = asyncio.Event()
    go_on = asyncio.Event()
    registry = Registry()

    @registry.action("effect", idempotent=True)
    async def effect(ctx: ActionContext, args: Any) -> None:
        if ctx.job.run_count == 1:
            started.set()
            await go_on.wait()
        ctx.ensure_lease(1.0)
        effects.append(ctx.job.run_count)

    sched = make(registry)
    await sched.start()
    job_id = await sched.run_after(0, "effect")
    await asyncio.wait_for(started.wait(), 5)
    # No pass may be in flight with the time before the step: its claim of run 2 would
    # (rightly) stamp the older, shorter lease, and run 2 would be handed back too.
    await settle(sched)
    clock.advance(LEASE - MARGIN - 0.5)  # 0.5 s surely left: less than the 1 s asked
    with caplog.at_level(logging.WARNING, logger="scheduler"):
        go_on.set()
        await sched.wait_idle()
    assert effects == [2]
    job = await sched.get_job(job_id)
    assert job is not None
    assert job.state is JobState.SUCCESS
    assert job.attempts == 0  # a release is not a failed attempt
    [record] = discarded(caplog)
    assert record.exc_info is None
    assert "run 1" in record.getMessage()


async def test_ensure_lease_out_of_time_counts_a_failed_attempt_of_other_actions(
    make: Make, clock: FakeClock
) -> None:
    started = asyncio.Event()
    go_on = asyncio.Event()
    registry = Registry()

    @registry.action("once", retry=Retry(max_failures=1))
    async def once(ctx: ActionContext, args: Any) -> None:
        started.set()
        await go_on.wait()
        ctx.ensure_lease(1.0)

    sched = make(registry)
    await sched.start()
    job_id = await sched.run_after(0, "once")
    await asyncio.wait_for(started.wait(), 5)
    clock.advance(LEASE)
    go_on.set()
    await sched.wait_idle()
    job = await sched.get_job(job_id)
    assert job is not None
    assert job.state is JobState.FAILED
    assert job.error is not None
    assert job.error.startswith("discarded: lease lost")


async def _until_state(sched: Scheduler, job_id: int, state: JobState) -> None:
    while True:
        job = await sched.get_job(job_id)
        if job is not None and job.state is state:
            return
        await asyncio.sleep(0.01)


# --- the wall clock stepped under a running scheduler (FakeClock) --------------------------------


def _recording_registry(fired: list[tuple[str, float | None]]) -> Registry:
    registry = Registry()

    @registry.mutation("record")
    async def record(ctx: Any, args: Any) -> None:
        fired.append((str(args), ctx.job.fire_ts))

    return registry


async def test_wall_clock_stepped_forward_an_hour(make: Make, clock: FakeClock) -> None:
    """Everything due in the skipped hour runs once; a fire_all schedule fires each time it
    missed once, oldest first; nothing fires twice."""
    fired: list[tuple[str, float | None]] = []
    sched = make(_recording_registry(fired))
    await sched.start()
    await sched.schedules.create(
        "every10", timedelta(minutes=10), "record", "tick", catch_up="fire_all"
    )
    for minutes in (5, 25, 55, 65):
        await sched.run_at(START + timedelta(minutes=minutes), "record", f"at {minutes}")
    await sched.wait_idle()
    clock.advance(timedelta(minutes=10))  # the first tick
    await sched.wait_idle()
    clock.step(timedelta(hours=1))  # 12:10 -> 13:10 with no time passing
    await sched.wait_idle()
    clock.advance(timedelta(minutes=10))  # 13:20: the next tick, and the one-off at +65 min
    await sched.wait_idle()

    ticks = [f for name, f in fired if name == "tick"]
    expected = [START.timestamp() + 600 * k for k in range(1, 9)]  # 12:10 ... 13:20
    assert ticks == expected
    assert [name for name, _ in fired if name != "tick"] == ["at 5", "at 25", "at 55", "at 65"]


async def test_wall_clock_stepped_back_an_hour(make: Make, clock: FakeClock) -> None:
    """Nothing that already ran runs again while the wall clock repeats the hour; a one-off
    due in the repeated stretch waits for its wall time; the schedule resumes after its last
    fire time."""
    fired: list[tuple[str, float | None]] = []
    sched = make(_recording_registry(fired))
    await sched.start()
    await sched.schedules.create("every10", timedelta(minutes=10), "record", "tick")
    await sched.run_at(START + timedelta(minutes=15), "record", "at 15")
    await sched.run_at(START + timedelta(minutes=25), "record", "at 25")
    await sched.wait_idle()
    for _ in range(2):  # to 12:20: ticks 12:10 and 12:20, the one-off at 12:15
        clock.advance(timedelta(minutes=10))
        await sched.wait_idle()
    assert [n for n, _ in fired] == ["tick", "at 15", "tick"]
    clock.step(timedelta(hours=-1))  # back to 11:20
    await sched.wait_idle()
    clock.advance(timedelta(minutes=60))  # the wall clock repeats 11:20 -> 12:20
    await sched.wait_idle()
    assert [n for n, _ in fired] == ["tick", "at 15", "tick"]  # nothing again, nothing early
    clock.advance(timedelta(minutes=10))  # 12:30
    await sched.wait_idle()
    ticks = [f for name, f in fired if name == "tick"]
    assert ticks == [START.timestamp() + 600 * k for k in (1, 2, 3)]
    assert [n for n, _ in fired].count("at 25") == 1


# --- the real clock's timers across a step ---------------------------------------------------


class SteppedClock(SystemClock):
    """The system clock with a wall-time offset the test can step."""

    def __init__(self) -> None:
        self.offset = 0.0
        self.reads = 0

    def time(self) -> float:
        self.reads += 1
        return time.time() + self.offset

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.time(), UTC)


async def test_real_timer_stepped_back_rearms_instead_of_spinning() -> None:
    clock = SteppedClock()
    fired = asyncio.Event()
    loop = asyncio.get_running_loop()
    timer = clock.call_at(clock.time() + 0.05, fired.set)
    clock.offset = -3600.0  # the wall clock goes back an hour before the timer is due
    reads = clock.reads
    await asyncio.sleep(0.2)  # the timer's original delay passes
    assert not fired.is_set()  # the wall time has not come...
    assert clock.reads - reads <= 3  # ...and the timer re-armed once rather than spinning
    # Re-armed for the rest of the hour, not for its original delay (how much of the hour
    # is left now depends on how late this loop ran; the exact delay is the next test's).
    left = timer._handle.when() - loop.time()  # type: ignore[attr-defined]
    assert 60 < left < 3600
    timer.cancel()


class RecordingLoop:
    """Just enough of an event loop for :class:`scheduler.clock._PreciseTimer`: it records
    what the timer asks for and runs nothing until the test says so."""

    class Handle:
        def cancel(self) -> None:
            pass

    def __init__(self) -> None:
        self.later: list[tuple[float, Any]] = []
        self.soon: list[Any] = []

    def call_later(self, delay: float, callback: Any) -> Handle:
        self.later.append((delay, callback))
        return self.Handle()

    def call_soon(self, callback: Any) -> Handle:
        self.soon.append(callback)
        return self.Handle()


def test_precise_timer_stepped_back_rearms_for_exactly_what_is_left() -> None:
    from scheduler.clock import _EARLY, _PreciseTimer

    wall = [1000.0]
    fired: list[float] = []
    loop = RecordingLoop()
    _PreciseTimer(loop, 1000.05, lambda: fired.append(wall[0]), lambda: wall[0])  # type: ignore[arg-type]
    [(delay, fire)] = loop.later
    assert delay == pytest.approx(0.05 - _EARLY)
    wall[0] = 1000.05 - _EARLY - 3600  # the loop's timer fires after the wall clock went back
    fire()
    assert fired == []
    assert loop.later[1][0] == pytest.approx(3600.0)  # what is left of the hour, once
    assert len(loop.later) == 2
    assert loop.soon == []
    wall[0] = 1000.05 - _EARLY / 2  # that hour has passed too: within _EARLY of the time
    loop.later[1][1]()
    assert fired == []
    assert len(loop.soon) == 1
    loop.soon[0]()
    assert fired == []
    assert len(loop.soon) == 2
    assert len(loop.later) == 2
    wall[0] = 1000.05
    loop.soon[1]()
    assert fired == [1000.05]


async def test_real_clock_stepped_forward_runs_due_work_by_the_next_sweep(
    stores: StoreFactory,
) -> None:
    """After a forward step the wake timer (armed on the loop's monotonic clock) would fire
    only at its original delay; the sweep, every ``sweep_interval`` of elapsed time, wakes
    the driver to run what the step made due."""
    fired: list[tuple[str, float | None]] = []
    clock = SteppedClock()
    sched = Scheduler(stores.new(), _recording_registry(fired), clock=clock, sweep_interval=0.2)
    async with sched:
        job_id = await sched.run_after(timedelta(minutes=30), "record", "in 30 min")
        await sched.wait_idle()
        clock.offset = 3600.0
        await asyncio.wait_for(_until_state(sched, job_id, JobState.SUCCESS), 10)
    assert [n for n, _ in fired] == ["in 30 min"]


# --- RetryLater ---------------------------------------------------------------------------


async def test_retry_later_fails_the_attempt_as_retryable_with_one_line_in_the_log(
    make: Make, caplog: pytest.LogCaptureFixture
) -> None:
    from scheduler import RetryLater

    registry = Registry()

    @registry.action("flaky", retry=Retry(max_failures=3, initial_backoff=60))
    async def flaky(ctx: ActionContext, args: Any) -> None:
        try:
            raise TimeoutError("the peer did not answer")
        except TimeoutError as exc:
            raise RetryLater(f"timed out: {exc}") from exc

    sched = make(registry)
    await sched.start()
    with caplog.at_level(logging.WARNING, logger="scheduler"):
        job_id = await sched.run_after(0, "flaky")
        await sched.wait_idle()
    job = await sched.get_job(job_id)
    assert job is not None
    assert job.state is JobState.PENDING
    assert job.attempts == 1
    assert job.error == "RetryLater: timed out: the peer did not answer"
    [record] = [r for r in caplog.records if "attempt 1 failed" in r.getMessage()]
    assert record.exc_info is None
    assert record.getMessage().endswith("; will retry")
