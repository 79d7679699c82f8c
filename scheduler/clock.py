"""Clocks: the driver asks a clock for the time and for timers, so tests can move time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable


@runtime_checkable
class TimerHandle(Protocol):
    def cancel(self) -> None: ...


@runtime_checkable
class Clock(Protocol):
    """Wall-clock time in UTC, plus timers that follow that same time."""

    def now(self) -> datetime:
        """The current time as an aware UTC datetime."""
        ...

    def time(self) -> float:
        """The current time as epoch seconds."""
        ...

    def call_at(self, ts: float, callback: Callable[[], None]) -> TimerHandle:
        """Call ``callback`` (from the event loop) once the clock reaches epoch ``ts``."""
        ...

    async def sleep(self, delay: timedelta | float) -> None:
        """Return after ``delay`` of this clock's time has passed."""
        ...


class SystemClock:
    """The real clock: ``time.time()`` and the running event loop's timers."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def time(self) -> float:
        return time.time()

    def call_at(self, ts: float, callback: Callable[[], None]) -> TimerHandle:
        loop = asyncio.get_running_loop()
        return loop.call_later(max(0.0, ts - time.time()), callback)

    async def sleep(self, delay: timedelta | float) -> None:
        seconds = delay.total_seconds() if isinstance(delay, timedelta) else float(delay)
        await asyncio.sleep(max(0.0, seconds))


async def sleep_until(clock: Clock, ts: float) -> None:
    """Sleep on ``clock`` until epoch ``ts`` (returns at once if it has passed)."""
    delay = ts - clock.time()
    if delay > 0:
        await clock.sleep(delay)
