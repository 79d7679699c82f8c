"""Spacing the requests a process makes to one channel outside a delivery job.

Deliveries are spaced by the scheduler, across every bot instance sharing the database: each
occurrence job carries its channel's pace (:func:`bot.announcements.jobs.channel_pace`), so it
is not even claimed before its channel's next slot; announcement-channel publishes take a key
of their own (:func:`bot.announcements.jobs.publish_pace`). Other requests a process makes to
one channel (log-channel reports, edits of posted messages) are spaced within the process
(:class:`ChannelPacer`).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from scheduler.clock import Clock, monotonic_of

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


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
