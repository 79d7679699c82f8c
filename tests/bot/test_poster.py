"""The guard every posting job's requests go through (:class:`bot.posting.poster.Poster`), on
a real scheduler and a FakeClock: a run that lost its job makes no request, and a failure of
such a run is its lease lost, not a failure for the job to report. (The guard's timeout and
the classifier are proven end to end in ``test_delivery``, ``test_edit`` and
``test_destinations``; a process paused past its lease in ``tests/proof/test_pause.py``.)"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import aiohttp
import discord
import pytest

from bot.posting.failures import RequestFailed
from bot.posting.poster import Poster
from scheduler import ActionContext, Registry, Scheduler, SqliteStore
from scheduler.testing import FakeClock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from pathlib import Path

START = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
LEASE = 10.0


@pytest.fixture
async def guard() -> AsyncIterator[Poster]:
    client = discord.Client(intents=discord.Intents.none())  # never connected
    # No heartbeat and no timeout of its own within a test: the clock decides when the
    # lease is gone.
    yield Poster(client, heartbeat_every=3600.0, lease_needed=1.0, send_timeout=3600.0)
    await client.close()


class TakeOver:
    """An idempotent action whose first run stops where it calls :meth:`stop` until a
    second run, given its job once its lease ran out, has called :meth:`done`."""

    def __init__(self) -> None:
        self.first_stopped = asyncio.Event()
        self.second_done = asyncio.Event()
        self.wake_first = asyncio.Event()

    async def stop(self, ctx: ActionContext) -> None:
        if ctx.job.run_count == 1:
            self.first_stopped.set()
            await self.wake_first.wait()

    def done(self, ctx: ActionContext) -> None:
        if ctx.job.run_count == 2:
            self.second_done.set()

    async def run(
        self, tmp_path: Path, handler: Callable[[ActionContext, Any], Awaitable[Any]]
    ) -> None:
        clock = FakeClock(START)
        registry = Registry()
        registry.action("guarded", idempotent=True)(handler)
        store = SqliteStore(tmp_path / "db.sqlite")
        options: dict[str, Any] = {"lease": LEASE, "lease_margin": 2.0, "sweep_interval": 3600}
        async with Scheduler(store, registry, clock=clock, **options) as sched:
            await sched.run_after(0, "guarded")
            await asyncio.wait_for(self.first_stopped.wait(), 5)
            clock.advance(LEASE + 1)
            await sched.sweep()  # run 1's lease ran out: run 2 gets the job
            await asyncio.wait_for(self.second_done.wait(), 5)
            self.wake_first.set()
            await sched.wait_idle()


def discarded(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "discarded: lease lost" in r.getMessage()]


async def test_a_run_that_lost_its_job_makes_no_request(
    guard: Poster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Run 1 is paused after it began and before its request; run 2 takes the job over and
    makes the request. Run 1, waking, must not make it again."""
    requests: list[int] = []
    scene = TakeOver()

    async def handler(ctx: ActionContext, args: Any) -> None:
        async with guard.holding(ctx):
            await scene.stop(ctx)

            async def request() -> None:
                requests.append(ctx.job.run_count)

            await guard.request(ctx, request, before="send")
            scene.done(ctx)

    with caplog.at_level(logging.WARNING, logger="scheduler"):
        await scene.run(tmp_path, handler)
    assert requests == [2]
    assert len(discarded(caplog)) == 1


@pytest.mark.parametrize(
    "error", [aiohttp.ServerDisconnectedError(), TimeoutError(), ConnectionResetError()]
)
async def test_a_failure_of_a_run_that_lost_its_job_is_its_lease_lost(
    guard: Poster, tmp_path: Path, caplog: pytest.LogCaptureFixture, error: Exception
) -> None:
    """Run 1's request is in flight when the process is paused; run 2 takes the job over.
    Run 1's request then fails (a send timing out as the process wakes): a passing failure
    for a run that still held its job, but this one must say nothing, not retry, not
    report."""
    handled: list[str] = []
    scene = TakeOver()

    async def handler(ctx: ActionContext, args: Any) -> None:
        try:
            async with guard.holding(ctx):

                async def request() -> None:
                    await scene.stop(ctx)
                    if ctx.job.run_count == 1:
                        raise error

                await guard.request(ctx, request, before="send")
                scene.done(ctx)
        except RequestFailed as failed:
            handled.append(failed.reason)

    with caplog.at_level(logging.WARNING, logger="scheduler"):
        await scene.run(tmp_path, handler)
    assert handled == []
    assert len(discarded(caplog)) == 1
