"""``Scheduler.open()``: the store opened for writing and reading, without the driver. Due
work stays pending and no handler runs in that process; a scheduler started afterwards
runs it, once. On every store kind, on a FakeClock: nothing here waits on real time."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import JobState, Registry, Scheduler, SchedulerClosed
from scheduler.testing import FakeClock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from tests.scheduler.stores import StoreFactory

START = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def ran() -> list[Any]:
    """The arguments of every run of the handlers, in order."""
    return []


@pytest.fixture
def registry(ran: list[Any]) -> Registry:
    reg = Registry()

    @reg.mutation("note")
    async def note(ctx: Any, args: Any) -> None:
        ran.append(args)

    @reg.action("shout")
    async def shout(ctx: Any, args: Any) -> None:
        ran.append(args)

    return reg


@pytest.fixture
async def make(
    stores: StoreFactory, registry: Registry, clock: FakeClock
) -> AsyncIterator[Callable[[], Scheduler]]:
    made: list[Scheduler] = []

    def make() -> Scheduler:
        sched = Scheduler(stores.new(), registry, clock=clock)
        made.append(sched)
        return sched

    yield make
    for sched in made:
        await sched.stop(grace=0)


def driver_tasks() -> list[str]:
    """The tasks of a driver in this process: its loop, its sweep, its jobs."""
    names = [t.get_name() for t in asyncio.all_tasks()]
    return [n for n in names if n in ("scheduler-driver", "scheduler-sweep") or "job-" in n]


async def let_the_loop_run() -> None:
    """Give every ready task of the event loop its turns (no real time passes)."""
    for _ in range(20):
        await asyncio.sleep(0)


async def test_due_work_stays_pending_without_the_driver_and_runs_once_when_started(
    make: Callable[[], Scheduler], clock: FakeClock, ran: list[Any]
) -> None:
    opened = make()
    await opened.open()
    assert opened.running
    assert not opened.driven
    job_id = await opened.run_at(START + timedelta(minutes=5), "note", "mutation")
    action_id = await opened.enqueue("shout", "action")  # due now
    clock.advance(timedelta(hours=1))  # both are well past due
    async with opened.transaction() as ctx:  # a commit: what wakes a driver
        await ctx.scheduler.enqueue("note", "also due", run_at=START)
    await let_the_loop_run()

    assert driver_tasks() == []  # nothing was started to claim, tick or sweep
    assert clock.pending_timers == 0  # and no wake-up was armed
    for jid in (job_id, action_id):
        job = await opened.get_job(jid)
        assert job is not None
        assert job.state is JobState.PENDING
        assert await opened.runs(job_id=jid) == []
    assert ran == []
    async with opened.reader() as db:  # the reader works too
        cur = await db.execute("SELECT COUNT(*) AS n FROM scheduler_jobs WHERE state = 'pending'")
        assert (await cur.fetchone())["n"] == 3
    await opened.close()
    assert not opened.running

    started = make()
    await started.start()
    assert driver_tasks() != []  # what the open-only scheduler had none of
    await started.wait_idle()
    await started.wait_idle()  # nothing further is due: a second look runs nothing again
    assert sorted(ran) == ["action", "also due", "mutation"]  # each exactly once
    for jid in (job_id, action_id):
        job = await started.get_job(jid)
        assert job is not None
        assert job.state is JobState.SUCCESS
        assert len(await started.runs(job_id=jid)) == 1


async def test_schedules_are_not_ticked_without_the_driver(
    make: Callable[[], Scheduler], clock: FakeClock, ran: list[Any]
) -> None:
    opened = make()
    await opened.open()
    await opened.schedules.create(
        "hourly", timedelta(hours=1), "note", "tick", start=START, catch_up="fire_once"
    )
    clock.advance(timedelta(hours=3, minutes=30))
    async with opened.transaction() as ctx:
        await ctx.db.execute("SELECT 1")
    await let_the_loop_run()
    assert await opened.list_jobs() == []  # no occurrence was fired here
    info = await opened.schedules.get("hourly")
    assert info.next_fire == START + timedelta(hours=1)
    assert ran == []

    await opened.start()  # the same scheduler, its store kept open, now with its driver
    assert opened.driven
    await opened.wait_idle()
    assert ran == ["tick"]  # fire_once: one occurrence for the three missed
    assert (await opened.schedules.get("hourly")).next_fire == START + timedelta(hours=4)


async def test_waiting_and_sweeping_need_the_driver(make: Callable[[], Scheduler]) -> None:
    sched = make()
    await sched.open()
    said = r"opened without its driver \(open\(\), not start\(\)\)"
    with pytest.raises(RuntimeError, match=said):
        sched.wake()
    with pytest.raises(RuntimeError, match=said):
        await sched.sweep()
    with pytest.raises(RuntimeError, match=said):
        await sched.wait_idle()
    await sched.stop()  # stops an opened-only scheduler: its store is closed
    assert not sched.running
    with pytest.raises(SchedulerClosed):
        await sched.enqueue("note", "too late")
    await sched.stop()  # and again: nothing left to do
