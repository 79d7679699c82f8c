"""Test helpers for applications that use the scheduler: a clock you move by hand."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from .clock import Clock, TimerHandle, monotonic_of, system_time_of
from .errors import InvalidArgument

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["FakeClock", "SkewedClock"]


class _FakeTimer:
    __slots__ = ("callback", "cancelled", "ts")

    def __init__(self, ts: float, callback: Callable[[], None]) -> None:
        self.ts = ts
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def _to_ts(value: datetime | float) -> float:
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidArgument(f"FakeClock needs an aware datetime, got naive {value!r}")
        return value.timestamp()
    return float(value)


class FakeClock:
    """A clock that only moves when told to.

    Timers armed with :meth:`call_at` and sleeps started with :meth:`sleep` fire when
    :meth:`advance` or :meth:`set` moves the clock past their time, in time order. Pass it as
    ``Scheduler(..., clock=FakeClock(start))`` and the driver's wake timer follows it: move the
    clock, then ``await sched.wait_idle()``.

    It keeps two times, as a real machine does: the wall clock (:meth:`time`, :meth:`now`,
    the timers of :meth:`call_at`) and :meth:`monotonic` (elapsed time, which leases and
    :meth:`sleep` follow). :meth:`advance` and a forward :meth:`set` move both, as time
    passing does; :meth:`step` moves the wall clock alone, as an NTP step or a changed system
    time does.
    """

    def __init__(self, start: datetime | float | None = None) -> None:
        self._now = (
            _to_ts(start) if start is not None else datetime(2030, 1, 1, tzinfo=UTC).timestamp()
        )
        self._mono = 0.0
        self._timers: list[tuple[float, int, _FakeTimer]] = []
        self._sleepers: list[tuple[float, int, _FakeTimer]] = []
        self._seq = itertools.count()

    def now(self) -> datetime:
        return datetime.fromtimestamp(self._now, UTC)

    def time(self) -> float:
        return self._now

    def monotonic(self) -> float:
        """Seconds of elapsed time since the clock was made (never goes back)."""
        return self._mono

    def call_at(self, ts: float, callback: Callable[[], None]) -> _FakeTimer:
        timer = _FakeTimer(ts, callback)
        if ts <= self._now:
            asyncio.get_running_loop().call_soon(self._fire, timer)
        else:
            heapq.heappush(self._timers, (ts, next(self._seq), timer))
        return timer

    async def sleep(self, delay: timedelta | float) -> None:
        seconds = delay.total_seconds() if isinstance(delay, timedelta) else float(delay)
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not fut.done():
                fut.set_result(None)

        timer = _FakeTimer(self._mono + seconds, wake)
        heapq.heappush(self._sleepers, (timer.ts, next(self._seq), timer))
        try:
            await fut
        finally:
            timer.cancel()

    def advance(self, delta: timedelta | float) -> None:
        """Move the clock forward by ``delta`` and fire every timer that came due."""
        seconds = delta.total_seconds() if isinstance(delta, timedelta) else float(delta)
        if seconds < 0:
            raise InvalidArgument(f"FakeClock.advance needs a non-negative delta, got {delta!r}")
        self.set(self._now + seconds)

    def set(self, t: datetime | float) -> None:
        """Move the clock to ``t``. Forward, time passes (sleeps end too); backward, only the
        wall clock moves, as :meth:`step` does. Timers fire only once due."""
        ts = _to_ts(t)
        if ts >= self._now:
            self._mono += ts - self._now
        self._now = ts
        self._fire_due()

    def step(self, delta: timedelta | float) -> None:
        """Step the wall clock by ``delta`` (either sign) while no time passes: what an NTP
        step does. ``call_at`` timers that came due fire; sleeps and leases are unaffected."""
        seconds = delta.total_seconds() if isinstance(delta, timedelta) else float(delta)
        self._now += seconds
        self._fire_due()

    def _fire_due(self) -> None:
        """Fire every due timer, earliest first (a wall timer and a sleep compare by how
        long ago each came due)."""
        while True:
            late_wall = self._now - self._timers[0][0] if self._timers else -math.inf
            late_mono = self._mono - self._sleepers[0][0] if self._sleepers else -math.inf
            if late_wall < 0 and late_mono < 0:
                return
            heap = self._timers if late_wall >= late_mono else self._sleepers
            _, _, timer = heapq.heappop(heap)
            self._fire(timer)

    @staticmethod
    def _fire(timer: _FakeTimer) -> None:
        if not timer.cancelled:
            timer.cancelled = True
            timer.callback()

    @property
    def sleeping(self) -> list[float]:
        """What is left of each pending :meth:`sleep`, shortest first (in seconds)."""
        return sorted(ts - self._mono for ts, _, t in self._sleepers if not t.cancelled)

    @property
    def pending_timers(self) -> int:
        """How many timers are armed and not yet fired or cancelled."""
        return sum(1 for _, _, t in (*self._timers, *self._sleepers) if not t.cancelled)


class SkewedClock:
    """A clock ``skew`` seconds off another one: what a machine whose clock is wrong reads.

    Its wall time (:meth:`time`, :meth:`now`, the timers of :meth:`call_at`) and its
    machine's :meth:`system_time` are ``skew`` ahead of the base clock's (behind for a
    negative ``skew``); its monotonic time and sleeps are the base's, since elapsed time
    does not depend on the wall clock. Two schedulers on one database with
    ``SkewedClock(clock, 60)`` and ``SkewedClock(clock, -60)`` of one
    :class:`FakeClock` are two machines two minutes apart: move the fake clock and both
    move. A store that follows its database's clock (PostgreSQL) measures the skew and
    stamps leases as if neither were off.
    """

    def __init__(self, base: Clock, skew: timedelta | float) -> None:
        seconds = skew.total_seconds() if isinstance(skew, timedelta) else float(skew)
        if not math.isfinite(seconds):
            raise InvalidArgument(f"SkewedClock needs a finite skew, got {skew!r}")
        self.base = base
        self.skew = seconds
        self._monotonic = monotonic_of(base)
        self._system_time = system_time_of(base)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.time(), UTC)

    def time(self) -> float:
        return self.base.time() + self.skew

    def monotonic(self) -> float:
        """The base's elapsed time: a skewed clock is as fast as its base."""
        return self._monotonic()

    def system_time(self) -> float:
        """The base's machine clock (the real one, for a :class:`FakeClock`), ``skew`` off."""
        return self._system_time() + self.skew

    def call_at(self, ts: float, callback: Callable[[], None]) -> TimerHandle:
        return self.base.call_at(ts - self.skew, callback)

    async def sleep(self, delay: timedelta | float) -> None:
        await self.base.sleep(delay)
