"""The guard around every request a posting job makes (a send, an edit, a publish).

A job does its work inside :meth:`Poster.holding` and makes each request that posts through
:meth:`Poster.request`, so every one of them is guarded the same way:

- the job's lease is kept by heartbeats while the job works (:func:`~bot.posting.lease.keep_lease`),
  and nothing starts before the client is logged in;
- right before the request, the job makes sure it still holds its lease for longer than the
  request may take (:func:`~bot.posting.lease.hold_lease`): a process that was paused (a VM
  migration, ``docker pause``, a suspended laptop) while another one took its job over must
  not post again when it wakes up, after Discord has forgotten the nonce;
- a test may stop a run right before each side effect, before that check
  (:attr:`Poster.pause_point`: where a process could be paused), to prove the check is there;
- a request that hangs is abandoned after ``send_timeout``, well inside Discord's nonce
  window, so a retry can still be deduplicated;
- a failure comes out as one :class:`~bot.posting.failures.RequestFailed` (permanent or
  transient); a run found to have lost its lease meanwhile raises ``LeaseLost`` instead (it
  says nothing: the scheduler discards it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Literal, TypeVar

from scheduler import ActionContext

from .failures import REQUEST_ERRORS, classify
from .lease import hold_lease, keep_lease

if TYPE_CHECKING:
    import discord

__all__ = ["PausePoint", "Poster", "SideEffect"]

T = TypeVar("T")

SideEffect = Literal[
    "send", "edit", "publish", "report", "event", "remind", "webhook", "pin", "unpin", "delete"
]
"""What a posting job is about to do: send an occurrence (a message or a forum post), edit a
posted message, publish it to followers, report a failure to the guild's log channel, make
a Discord event, remind a member by direct message, list, make or change the channel's
webhook that posts as someone, or pin, unpin or delete a post (the previous post's steps)."""
PausePoint = Callable[[ActionContext, SideEffect], Awaitable[None]]


class Poster:
    """The client the posting jobs post with, and the guard around their requests."""

    def __init__(
        self,
        client: discord.Client,
        *,
        heartbeat_every: float,
        lease_needed: float,
        send_timeout: float,
        ready: asyncio.Event | None = None,
    ) -> None:
        self.client = client
        self.heartbeat_every = heartbeat_every
        self.lease_needed = lease_needed
        """How long the lease must surely last when a request starts (see
        :func:`bot.posting.lease.lease_needed`)."""
        self.send_timeout = send_timeout
        """How long one request may take before it is abandoned (and retried)."""
        self.ready = ready
        """Set once the client is logged in (jobs wait for it)."""
        self.pause_point: PausePoint | None = None
        """Awaited right before each side effect, before the lease is made sure of (None in
        production): a test stops a run there to prove that a run paused past its lease
        does nothing when it goes on."""

    @contextlib.asynccontextmanager
    async def holding(self, ctx: ActionContext) -> AsyncIterator[None]:
        """The block in which a job works: its lease kept, the client ready. A request that
        fails in it raises ``RequestFailed``; a transient failure of a run that lost its
        lease meanwhile raises ``LeaseLost`` instead (a run that lost its job says nothing)."""
        try:
            async with keep_lease(ctx, self.heartbeat_every):
                if self.ready is not None:
                    await self.ready.wait()
                yield
        except REQUEST_ERRORS as exc:
            failed = classify(exc)
            if not failed.permanent:
                await hold_lease(ctx, 0.0)
            raise failed from exc

    async def hold(self, ctx: ActionContext, before: SideEffect) -> None:
        """Make sure the run holds its lease long enough to make a request (or raise
        ``LeaseLost``): right before every request that posts (``before`` says which)."""
        if self.pause_point is not None:
            await self.pause_point(ctx, before)
        await hold_lease(ctx, self.lease_needed)

    async def request(
        self, ctx: ActionContext, call: Callable[[], Awaitable[T]], *, before: SideEffect
    ) -> T:
        """Make the request ``call()`` makes (``before`` says what it does), guarded: the
        lease checked right before it, abandoned after ``send_timeout``."""
        await self.hold(ctx, before)
        async with asyncio.timeout(self.send_timeout):
            return await call()
