"""Spacing requests to one channel, and keeping a job's lease while a send runs.

Deliveries are spaced by the scheduler, across every bot instance sharing the database: each
occurrence job carries its channel's pace (:func:`channel_pace`), so it is not even claimed
before its channel's next slot. Announcement-channel publishes take a key of their own
(:func:`publish_pace`). What a delivery makes sure of before it posts is that it still holds
its job (:func:`hold_lease`, :func:`keep_lease`). Other requests a process makes to one
channel outside a delivery job (log-channel reports, edits of posted messages) are spaced
within the process (:class:`ChannelPacer`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from scheduler import ActionContext, Pace, Scheduler
from scheduler.clock import Clock, monotonic_of

log = logging.getLogger("crier.delivery")
"""The delivery's logger (named like the rest of the delivery's lines, which tests and
operators filter on)."""


def channel_pace(channel_id: int, spacing: float) -> Pace | None:
    """The pace of the jobs that post to ``channel_id``: they start at least ``spacing``
    seconds apart, in due order, in every instance (None when sends are not spaced)."""
    return Pace(f"channel:{channel_id}", spacing) if spacing > 0 else None


def publish_pace(channel_id: int, spacing: float) -> Pace | None:
    """The pace of the jobs that publish (crosspost) messages of announcement channel
    ``channel_id``: a key of its own, since Discord limits publishes apart from sends."""
    return Pace(f"publish:{channel_id}", spacing) if spacing > 0 else None


def lease_needed(sched: Scheduler, send_timeout: float) -> float:
    """How long a run must surely hold its lease to start a send.

    The whole request's budget when a lease is long enough for it, else half of what a fresh
    lease surely holds. Heartbeats keep the lease while the request is in flight, and a
    request that outlives a lost lease can only race a re-send with the same nonce, which
    Discord deduplicates: what must never happen is a send that starts after the job moved on.
    """
    return min(send_timeout, (sched.lease_seconds - sched.lease_margin) / 2)


async def hold_lease(ctx: ActionContext, need: float) -> None:
    """Make sure this run holds its job's lease for more than ``need`` seconds, or raise
    ``LeaseLost``: called right before each request that posts something. A short lease is
    renewed first (a heartbeat that finds the job reclaimed cancels the run)."""
    if ctx.lease_remaining() <= need:
        await ctx.heartbeat()
    ctx.ensure_lease(need)


class Slot:
    """A turn to send in one channel; set ``sent`` once a request went out in it."""

    __slots__ = ("sent",)

    def __init__(self) -> None:
        self.sent = False


class ChannelPacer:
    """Sends to one channel at least ``spacing`` seconds apart, first come first served
    (jobs start in due order, so that is due order); other channels are not held up.

    Spacing is measured on the clock's monotonic time and waited with its ``sleep``, so a
    wall-clock step neither holds a channel up nor bunches its sends, and tests drive it with
    a fake clock. A turn in which nothing was sent does not delay the next one.
    """

    def __init__(self, spacing: float, clock: Clock) -> None:
        self.spacing = spacing
        self.clock = clock
        self._monotonic = monotonic_of(clock)
        self._locks: dict[int, asyncio.Lock] = {}
        self._last: dict[int, float] = {}

    @contextlib.asynccontextmanager
    async def slot(self, channel_id: int) -> AsyncIterator[Slot]:
        lock = self._locks.setdefault(channel_id, asyncio.Lock())
        async with lock:
            last = self._last.get(channel_id)
            if last is not None:
                wait = last + self.spacing - self._monotonic()
                if wait > 0:
                    await self.clock.sleep(wait)
            turn = Slot()
            try:
                yield turn
            finally:
                if turn.sent:
                    self._last[channel_id] = self._monotonic()


@contextlib.asynccontextmanager
async def keep_lease(ctx: ActionContext, every: float) -> AsyncIterator[None]:
    """Heartbeat the job's lease every ``every`` seconds while the block runs."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(every)
            try:
                held = await ctx.heartbeat()
            except Exception as exc:  # a failed beat must not fail the send it protects
                log.warning("job %d: heartbeat failed (%s); trying again", ctx.job.id, exc)
                continue
            if not held:
                return  # the scheduler cancels the run and logs it as discarded

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
