"""Clocks: the driver asks a clock for the time and for timers, so tests can move time."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType


@runtime_checkable
class TimerHandle(Protocol):
    def cancel(self) -> None: ...


@runtime_checkable
class Clock(Protocol):
    """Wall-clock time in UTC, plus timers that follow that same time.

    A clock may also offer ``monotonic()``: seconds that only ever move forward, at the rate
    real time passes, whatever the wall clock does (NTP steps, a changed system time). Leases
    are measured with it (see :func:`monotonic_of`); a clock without one falls back to
    :func:`time.monotonic`.

    And it may offer ``system_time()``: the wall clock of the machine it runs on, as that
    machine's operating system keeps it (epoch seconds, moving as real time passes). A store
    whose database keeps a clock of its own (PostgreSQL) measures how far the database's
    clock is from this one, and stamps leases by the database's: ``time()`` plus that
    offset (see :func:`system_time_of`). A clock without one falls back to
    :func:`time.time`, so a fake clock's own time drives the stamps while the measured
    offset stays what it is between this machine and the database.
    """

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


_EARLY = 0.0015


class _PreciseTimer:
    """A timer that fires at ``ts`` rather than up to a millisecond after it.

    The event loop's selector rounds timeouts up to whole milliseconds, so a plain
    ``call_later`` fires late by up to 1 ms. This one wakes ``_EARLY`` seconds before
    ``ts`` and then yields to the loop (``call_soon``) until the time has come.

    The loop's timers run on its monotonic clock, so the wall time is checked again when the
    timer fires: if the wall clock was stepped back meanwhile, the timer re-arms for what is
    left instead of spinning. (A step forward makes it fire late, at its original delay; the
    driver's periodic sweep bounds that lateness.)
    """

    __slots__ = ("_callback", "_handle", "_loop", "_now", "_ts")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        ts: float,
        callback: Callable[[], None],
        now: Callable[[], float] = time.time,
    ):
        self._loop = loop
        self._ts = ts
        self._callback = callback
        self._now = now
        self._handle: asyncio.Handle = self._arm()

    def _arm(self) -> asyncio.Handle:
        delay = self._ts - self._now() - _EARLY
        if delay > 0:
            return self._loop.call_later(delay, self._fire)
        return self._loop.call_soon(self._fire)

    def _fire(self) -> None:
        if self._now() >= self._ts:
            self._callback()
        else:
            self._handle = self._arm()

    def cancel(self) -> None:
        self._handle.cancel()


class SystemClock:
    """The real clock: ``time.time()`` and the running event loop's timers."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        """``time.monotonic()``: elapsed time, which leases follow (a wall-clock step moves
        it not)."""
        return time.monotonic()

    def system_time(self) -> float:
        """``time.time()``: the machine's own wall clock (what a PostgreSQL store compares
        with the database's)."""
        return time.time()

    def call_at(self, ts: float, callback: Callable[[], None]) -> TimerHandle:
        return _PreciseTimer(asyncio.get_running_loop(), ts, callback, self.time)

    async def sleep(self, delay: timedelta | float) -> None:
        seconds = delay.total_seconds() if isinstance(delay, timedelta) else float(delay)
        await asyncio.sleep(max(0.0, seconds))


async def sleep_until(clock: Clock, ts: float) -> None:
    """Sleep on ``clock`` until epoch ``ts`` (returns at once if it has passed)."""
    delay = ts - clock.time()
    if delay > 0:
        await clock.sleep(delay)


def monotonic_of(clock: Clock) -> Callable[[], float]:
    """The clock's ``monotonic()``, or :func:`time.monotonic` for a clock without one."""
    fn: Callable[[], float] | None = getattr(clock, "monotonic", None)
    return fn if callable(fn) else time.monotonic


def system_time_of(clock: Clock) -> Callable[[], float]:
    """The clock's ``system_time()`` (its machine's own wall clock, which a store compares
    with its database's clock), or :func:`time.time` for a clock without one."""
    fn: Callable[[], float] | None = getattr(clock, "system_time", None)
    return fn if callable(fn) else time.time


class Deadline:
    """Cancel the task that enters the block when ``clock`` reaches epoch ``ts``: what
    :func:`asyncio.timeout_at` does on the event loop's clock, on the scheduler's (so a
    :class:`~scheduler.testing.FakeClock` moves it). Leaving the block after it fired raises
    ``error()`` in place of the cancellation (or of whatever the block raised meanwhile, or
    of its return), unless the task was also cancelled for another reason: that
    cancellation goes on. ``expired`` says it fired."""

    __slots__ = ("_cancelling", "_clock", "_error", "_handle", "_task", "_ts", "expired")

    def __init__(self, clock: Clock, ts: float, error: Callable[[], BaseException]) -> None:
        self._clock = clock
        self._ts = ts
        self._error = error
        self._task: asyncio.Task[object] | None = None
        self._handle: TimerHandle | None = None
        self._cancelling = 0
        self.expired = False

    def __enter__(self) -> Deadline:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a Deadline is entered by a task")
        self._task = task
        self._cancelling = task.cancelling()
        self._handle = self._clock.call_at(self._ts, self._fire)
        return self

    def _fire(self) -> None:
        task = self._task
        if task is not None and not task.done():
            self.expired = True
            task.cancel("deadline")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._handle is not None:
            self._handle.cancel()
        task = self._task
        if not self.expired or task is None:
            return
        if task.uncancel() > self._cancelling:
            return  # cancelled for another reason as well: that goes on
        raise self._error() from exc
