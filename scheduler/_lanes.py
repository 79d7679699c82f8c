"""Two lanes to a store's connections: interactive work goes ahead of bulk background work.

A person waiting on an answer (a slash command, a dashboard page) must not queue behind the
thousands of bookkeeping transactions a burst of due jobs brings. Work started inside
:func:`interactive` (or with ``interactive=True`` on ``Scheduler.transaction`` and
``Scheduler.reader``) is *interactive*; everything else (the driver's claims, mutations,
completions, heartbeats, actions' own transactions) is *bulk*. A store hands its connections
out through a :class:`Lanes` gate: when a connection frees up, the longest-waiting
interactive request gets it, and bulk requests only when no interactive one waits. Within
a lane, first come first served. Nothing is preempted: an interactive request waits at most
for the transactions already holding connections to finish.

The lane is a context variable, so it follows the work into everything it awaits and into
the tasks it starts, and never leaks into work started elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

_interactive: ContextVar[bool] = ContextVar("scheduler_interactive", default=False)


def is_interactive() -> bool:
    """Whether the work running here is interactive (see :func:`interactive`)."""
    return _interactive.get()


@contextlib.contextmanager
def interactive(on: bool = True) -> Iterator[None]:
    """Mark the work in this block (and the tasks it starts) interactive: its transactions
    and reads take a store connection before any bulk work waiting for one.
    ``interactive(False)`` marks a block bulk again."""
    token = _interactive.set(on)
    try:
        yield
    finally:
        _interactive.reset(token)


def set_interactive(on: bool = True) -> None:
    """Mark the rest of the current task interactive (for frameworks that give a hook at the
    start of a request's task rather than a block around it; the mark ends with the task)."""
    _interactive.set(on)


class Lanes:
    """``size`` permits (connections) handed out interactive first, then in arrival order.

    A released permit goes straight to the chosen waiter (it is never up for grabs in
    between), so a bulk request arriving at that moment cannot take it from a waiting
    interactive one.
    """

    def __init__(self, size: int = 1) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        self._free = size
        self._interactive: deque[asyncio.Future[None]] = deque()
        self._bulk: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> tuple[int, int]:
        """How many interactive and bulk requests wait now."""
        return (
            sum(1 for f in self._interactive if not f.done()),
            sum(1 for f in self._bulk if not f.done()),
        )

    async def acquire(self, interactive: bool | None = None) -> None:
        """Take a permit; ``interactive`` defaults to the current context's lane."""
        lane = is_interactive() if interactive is None else interactive
        if self._free > 0 and not self._has_waiters(lane):
            self._free -= 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._interactive if lane else self._bulk
        queue.append(fut)
        try:
            await fut
        except BaseException:
            if fut.done() and not fut.cancelled():
                self.release()  # handed over as we were cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):
                    queue.remove(fut)
            raise

    def _has_waiters(self, interactive: bool) -> bool:
        """Whether a request of this lane must queue behind others (an interactive one only
        behind interactive ones)."""
        if any(not f.done() for f in self._interactive):
            return True
        return not interactive and any(not f.done() for f in self._bulk)

    def release(self) -> None:
        """Give a permit back: to the first interactive waiter, else the first bulk one."""
        for queue in (self._interactive, self._bulk):
            while queue:
                fut = queue.popleft()
                if not fut.done():
                    fut.set_result(None)
                    return
        self._free += 1

    @contextlib.asynccontextmanager
    async def held(self, interactive: bool | None = None) -> AsyncIterator[None]:
        await self.acquire(interactive)
        try:
            yield
        finally:
            self.release()
