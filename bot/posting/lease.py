"""Keeping a job's lease while a request that posts runs, and making sure of it before.

What a posting job makes sure of right before each request that posts something is that it
still holds its job (:func:`hold_lease`); while the request is in flight, a heartbeat keeps
the lease (:func:`keep_lease`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from scheduler import ActionContext, Scheduler

log = logging.getLogger("crier.delivery")
"""The delivery's logger (named like the rest of the delivery's lines, which tests and
operators filter on)."""


def lease_needed(sched: Scheduler, send_timeout: float) -> float:
    """How long a run must surely hold its lease to start a send.

    The whole request's budget when a lease is long enough for it, else half of what a fresh
    lease surely holds. Heartbeats keep the lease while the request is in flight, and a
    request that outlives a lost lease can only race a re-send with the same nonce, which
    Discord deduplicates: what must never happen is a send that starts after the job moved on.
    """
    settings = sched.settings
    return min(send_timeout, (settings.lease_seconds - settings.lease_margin) / 2)


async def hold_lease(ctx: ActionContext, need: float) -> None:
    """Make sure this run holds its job's lease for more than ``need`` seconds, or raise
    ``LeaseLost``: called right before each request that posts something. A short lease is
    renewed first (a heartbeat that finds the job reclaimed cancels the run)."""
    if ctx.lease_remaining() <= need:
        await ctx.heartbeat()
    ctx.ensure_lease(need)


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
