"""A run stopped right before a side effect, past its lease, does nothing when it goes on
(issue 21), in process on a FakeClock, through discord.py against the fake Discord.

Each test stops the first run of a posting job inside its action, just before the side
effect and before the lease check that guards it (``Poster.pause_point``: where a process
could be paused): the send of an occurrence, the PATCH of a posted message after an edit,
the publish (crosspost) of a post, the report of a failure to the guild's log channel (a job
of its own, enqueued with the record of the failure). Then:

1. bot A stops claiming work (its scheduler stopping, with the stopped run still in flight),
   and bot B starts on the same database, fake Discord and FakeClock (a second instance:
   in one process, B must not share A's per-channel pacer with the stopped run);
2. the clock moves past A's lease (A's heartbeats are off, so only the clock decides), B's
   sweep takes the job over, and B's run does the side effect and finishes the job;
3. A's run goes on: it must do nothing ("discarded: lease lost", once).

Every verdict counts requests at the fake (a send Discord would deduplicate by its nonce is
still a request the run made), so the fake's nonce memory supplies nothing. Each test fails
when the lease check before its side effect is removed (``Poster.hold``).
"""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.announcements import UPDATE_FN
from scheduler import ActionContext, JobState
from tests.bot.conftest import CrierFactory, World, run_command
from tests.bot.test_delivery import advance, break_channel, idle, schedule, set_log_channel
from tests.bot.test_destinations import announcement_channel

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from bot.app import Crier
    from bot.posting.poster import SideEffect
    from scheduler.testing import FakeClock

LEASE = 30.0
"""SCHEDULER_LEASE_SECONDS of both bots (well inside the nonce window: B re-sends)."""
DEADLINE = 20.0
"""How long a step may take before the test gives up (never a verdict)."""


class Stop:
    """The pause point: the first run to reach side effect ``at`` stops there until the
    test lets it go; later runs pass."""

    def __init__(self, at: SideEffect, fn: str | None = None) -> None:
        self.at = at
        self.fn = fn
        """Only a run of this job (None: of any)."""
        self.reached = asyncio.Event()
        self.go_on = asyncio.Event()
        self.job_id: int | None = None

    async def __call__(self, ctx: ActionContext, before: SideEffect) -> None:
        if before != self.at or self.reached.is_set():
            return
        if self.fn is not None and ctx.job.fn != self.fn:
            return
        self.job_id = ctx.job.id
        self.reached.set()
        await self.go_on.wait()


async def until(predicate: Callable[[], Awaitable[bool]], what: str) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + DEADLINE
    while not await predicate():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def stopped_bot(
    crier_factory: CrierFactory, at: SideEffect, *, fn: str | None = None, **settings: Any
) -> tuple[Crier, Stop]:
    """Bot A, whose runs (of job ``fn``, None: any) stop at ``at`` and never heartbeat on
    their own (``settings``: more of its settings)."""
    a = await crier_factory(lease=LEASE, sweep_interval=600.0, **settings)
    a.poster.heartbeat_every = 3600.0
    stop = Stop(at, fn)
    a.poster.pause_point = stop
    return a, stop


async def take_over(
    crier_factory: CrierFactory,
    a: Crier,
    stop: Stop,
    clock: FakeClock,
    meanwhile: Callable[[Crier], Awaitable[None]] | None = None,
    ends: JobState = JobState.SUCCESS,
    **settings: Any,
) -> Crier:
    """Once A's run is stopped: A stops claiming, B starts, the clock moves past A's lease,
    B takes the job over and finishes it (``meanwhile(b)`` runs once B is up; the job ends
    ``ends``); then A's run goes on and A's scheduler ends."""
    await asyncio.wait_for(stop.reached.wait(), DEADLINE)
    job_id = stop.job_id
    assert job_id is not None
    a_stopping = asyncio.create_task(a.sched.stop(grace=3600.0))
    await until(lambda: _no_longer_claiming(a), "bot A to stop claiming")
    b = await crier_factory(lease=LEASE, sweep_interval=600.0, **settings)
    if meanwhile is not None:
        await meanwhile(b)
    clock.advance(LEASE + 1)
    await b.sched.sweep()  # A's lease ran out: the job is back to pending, B's to run
    b.sched.wake()

    async def finished() -> bool:
        done = await b.sched.get_job(job_id)
        return done is not None and done.state == ends

    await until(finished, "bot B to finish the job it took over")
    stop.go_on.set()
    await asyncio.wait_for(a_stopping, DEADLINE)
    await idle(b)
    return b


async def _no_longer_claiming(a: Crier) -> bool:
    # Scheduler.stop marks itself stopping (no more claims) before it waits for the runs.
    return bool(a.sched._stopping)


def discarded(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "discarded: lease lost" in r.getMessage()]


def requests(world: World, method: str, pattern: str) -> list[Any]:
    return [r for r in world.fake.requests if r.method == method and re.fullmatch(pattern, r.path)]


@pytest.fixture(autouse=True)
def _scheduler_warnings(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="scheduler")


async def test_a_run_stopped_before_the_send_does_not_send_after_a_takeover(
    world: World,
    crier_factory: CrierFactory,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    a, stop = await stopped_bot(crier_factory, "send")
    await schedule(world, world.news, "in 1m", "Once only")
    clock.advance(timedelta(minutes=1))

    await take_over(crier_factory, a, stop, clock)

    sends = requests(world, "POST", f"/channels/{world.news.id}/messages")
    assert len(sends) == 1, [r.status for r in sends]
    assert [m.content for m in world.fake.bot_messages(world.news)] == ["Once only"]
    assert len(discarded(caplog)) == 1


async def test_a_run_stopped_before_the_patch_does_not_put_an_older_edit_back(
    world: World,
    crier_factory: CrierFactory,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A's run stops with the first edit's text in hand; a second edit comes while it is
    stopped, and B brings the message up to date with it. A's run going on must not PATCH
    the older text back over it."""
    a, stop = await stopped_bot(crier_factory, "edit")
    local = await schedule(world, world.news, "in 1m", "v1")
    await advance(a, clock, timedelta(minutes=1))
    [post] = world.fake.bot_messages(world.news)
    cb = await run_command(world, "edit", id=local, message="v2")
    assert "is being edited in place" in (cb.content or ""), cb.content

    async def second_edit(b: Crier) -> None:
        cb = await run_command(world, "edit", id=local, message="v3")
        assert "is being edited in place" in (cb.content or ""), cb.content
        b.sched.wake()  # (whichever bot answered, the update job is B's to run)

        async def v3_shown() -> bool:
            done = await b.sched.list_jobs(fn=UPDATE_FN, state=JobState.SUCCESS)
            return len(done) == 1

        # B brings the message up to v3 with the second edit's job, before the clock moves
        # (so that job's own lease never runs out).
        await until(v3_shown, "bot B to update the message to v3")

    b = await take_over(crier_factory, a, stop, clock, meanwhile=second_edit)
    await idle(b)

    patches = requests(world, "PATCH", f"/channels/{world.news.id}/messages/{post.id}")
    assert len(patches) == 1, [r.body for r in patches]
    shown = world.fake.get_message(post.id)
    assert shown is not None
    assert shown.content == "v3"
    assert len(discarded(caplog)) == 1


async def test_a_run_stopped_before_the_publish_does_not_publish_after_a_takeover(
    world: World,
    crier_factory: CrierFactory,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    news = announcement_channel(world)
    a, stop = await stopped_bot(crier_factory, "publish")
    await schedule(world, news, "in 1m", "Followers too")
    clock.advance(timedelta(minutes=1))

    await take_over(crier_factory, a, stop, clock)

    [post] = world.fake.bot_messages(news)
    publishes = requests(world, "POST", rf"/channels/{news.id}/messages/\d+/crosspost")
    assert len(publishes) == 1, [r.status for r in publishes]
    assert post.crossposted
    assert len(discarded(caplog)) == 1


@pytest.mark.parametrize("failure", ["delivery", "update"])
async def test_a_run_stopped_before_the_report_does_not_report_after_a_takeover(
    world: World,
    crier_factory: CrierFactory,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    failure: str,
) -> None:
    """A failure to post (the bot may not send in the channel), or to update a posted
    message (a moderator deleted it), is reported once to the log channel."""
    a, stop = await stopped_bot(crier_factory, "report")
    await set_log_channel(world, world.general)
    if failure == "delivery":
        local = await schedule(world, world.news, "in 1m", "Never seen")
        break_channel(world, 50013)
        clock.advance(timedelta(minutes=1))
        said = f"⚠️ Announcement #{local} for <#{world.news.id}> could not be posted"
    else:
        local = await schedule(world, world.news, "in 1m", "v1")
        await advance(a, clock, timedelta(minutes=1))
        [post] = world.fake.bot_messages(world.news)
        world.fake._delete(post)  # a moderator deletes it
        cb = await run_command(world, "edit", id=local, message="v2")
        assert "is being edited in place" in (cb.content or ""), cb.content
        said = f"⚠️ The posted message of announcement #{local} in <#{world.news.id}>"

    await take_over(crier_factory, a, stop, clock)

    reports = requests(world, "POST", f"/channels/{world.general.id}/messages")
    assert len(reports) == 1, [r.status for r in reports]
    [report] = world.fake.bot_messages(world.general)
    assert report.content is not None, report.content
    assert report.content.startswith(said), report.content
    assert len(discarded(caplog)) == 1
