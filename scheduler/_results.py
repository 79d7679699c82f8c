"""Awaiting a job's outcome (``await sched.result(job_id)``), woken by commits.

Every process keeps one :class:`ResultWaiters`. A caller registers its job id, then the job
is read once; while it has not ended the caller sleeps on a future. What wakes it is the
store telling its end listeners which jobs reached a terminal state: at once for this
process's own commits (both stores), and on PostgreSQL for every other process's commits
too, through the notification each such commit sends (its ids, in the same round trip as
the COMMIT). Only the awaited jobs among them are read again, all in one query however many
callers wait.

The backstop is the lease sweep's interval: while anyone waits, every ``sweep_interval``
(on the scheduler's clock) each awaited job is read again. On SQLite that is how a job ended
by *another process* is seen (the file has no notifications; the driver sees other
processes' new work the same way), and on PostgreSQL it covers the time the LISTEN
connection is being re-established. Nothing else polls.

Registering before the first read means a commit cannot slip between the two unseen.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from . import _codec
from .errors import InvalidArgument, JobNotFound, SchedulerClosed

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import timedelta

    from ._engine import Engine
    from .clock import TimerHandle

log = logging.getLogger("scheduler.results")

READ_BATCH = 500
"""Awaited jobs read per query."""

Outcome = dict[str, Any]


class ResultWaiters:
    """The callers awaiting jobs' outcomes in this process, and the reads that answer them."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._waiting: dict[int, set[asyncio.Future[Outcome]]] = {}
        self._due: set[int] = set()
        """Awaited jobs to read again (their end was told, or they were just registered)."""
        self._asleep: dict[int, int] = {}
        """How many callers of each job read it once and now sleep until its end is told."""
        self._changed = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self._backstop: asyncio.Task[None] | None = None
        self._attached = False

    # --- lifecycle -------------------------------------------------------------------------

    def attach(self) -> None:
        """Listen to the store's ends (when the store is open)."""
        if not self._attached:
            self._engine.store.add_end_listener(self.ended)
            self._attached = True

    async def detach(self) -> None:
        """Stop listening; every caller still waiting gets :class:`SchedulerClosed`."""
        if self._attached:
            self._engine.store.remove_end_listener(self.ended)
            self._attached = False
        tasks = [t for t in (self._reader, self._backstop) if t is not None]
        self._reader = self._backstop = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        closed = SchedulerClosed("the scheduler stopped while a result was awaited")
        for futures in self._waiting.values():
            for fut in futures:
                if not fut.done():
                    fut.set_exception(closed)
        self._waiting.clear()
        self._asleep.clear()
        self._due.clear()

    # --- waiting ---------------------------------------------------------------------------

    @property
    def waiting(self) -> int:
        """How many jobs are awaited now."""
        return len(self._waiting)

    def asleep(self, job_id: int) -> int:
        """How many callers awaiting ``job_id`` have read it (it had not ended) and now sleep
        until a commit (or the backstop) tells its end."""
        return self._asleep.get(job_id, 0)

    async def until_asleep(self, job_id: int, callers: int = 1) -> None:
        """Return once ``callers`` callers sleep on ``job_id`` (for tests and tools that must
        know a wait is in place before they end the job)."""
        while self.asleep(job_id) < callers:
            changed = self._changed
            await changed.wait()

    def _sleeping(self, job_id: int, by: int) -> None:
        n = self._asleep.get(job_id, 0) + by
        if n > 0:
            self._asleep[job_id] = n
        else:
            self._asleep.pop(job_id, None)
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait(self, job_id: int, within: timedelta | float | None) -> Outcome:
        """The outcome of ``job_id`` once it ended (see :meth:`Scheduler.result`)."""
        if isinstance(job_id, bool) or not isinstance(job_id, int):
            raise InvalidArgument(f"job_id must be a job id (int), got {job_id!r}")
        seconds = (
            None if within is None else _codec.to_seconds(within, "timeout", sign="non-negative")
        )
        self._engine.ensure_running()
        clock = self._engine.clock
        deadline = None if seconds is None else clock.time() + seconds
        fut: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(job_id, set()).add(fut)
        timer: TimerHandle | None = None
        asleep = False
        if self._backstop is None or self._backstop.done():
            self._backstop = asyncio.create_task(self._sweep(), name="scheduler-results")
        try:
            # Registered first, read second: an end committed in between is told to the
            # registered caller (and read again), never lost.
            outcomes = await self._engine.now().job_outcomes([job_id])
            if job_id not in outcomes:
                raise _not_found(job_id)
            outcome = outcomes[job_id]
            if outcome is not None:
                return outcome
            if deadline is not None:
                timer = clock.call_at(deadline, lambda: _time_out(fut, job_id))
            self._sleeping(job_id, 1)
            asleep = True
            return await fut
        finally:
            if timer is not None:
                timer.cancel()
            if asleep:
                self._sleeping(job_id, -1)
            futures = self._waiting.get(job_id)
            if futures is not None:
                futures.discard(fut)
                if not futures:
                    del self._waiting[job_id]

    def ended(self, job_ids: Sequence[int] | None) -> None:
        """The store's end listener: ``job_ids`` ended (None: any awaited job may have)."""
        if not self._waiting:
            return
        if job_ids is None:
            self._read_again(list(self._waiting))
        else:
            self._read_again([i for i in job_ids if i in self._waiting])

    # --- reading ---------------------------------------------------------------------------

    def _read_again(self, job_ids: list[int]) -> None:
        if not job_ids:
            return
        self._due.update(job_ids)
        if self._reader is None or self._reader.done():
            self._reader = asyncio.create_task(self._read(), name="scheduler-results-read")

    async def _read(self) -> None:
        """Read the due jobs (a batch per query) until none is left to read."""
        while self._due:
            ids = sorted(i for i in self._due if i in self._waiting)[:READ_BATCH]
            self._due.difference_update(ids)
            if not ids:
                self._due.clear()
                return
            try:
                outcomes = await self._engine.now().job_outcomes(ids)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                # The store is failing: every caller stays registered, and the backstop
                # reads again at the next sweep interval.
                log.warning("could not read %d awaited job(s): %s", len(ids), exc)
                return
            for job_id in ids:
                if job_id not in outcomes:
                    self._settle(job_id, error=_not_found(job_id))
                elif outcomes[job_id] is not None:
                    self._settle(job_id, outcome=outcomes[job_id])

    def _settle(
        self, job_id: int, outcome: Outcome | None = None, error: Exception | None = None
    ) -> None:
        for fut in self._waiting.get(job_id, ()):
            if fut.done():
                continue
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(dict(outcome or {}))  # each caller its own copy

    async def _sweep(self) -> None:
        """The backstop: every sweep interval while anyone waits, read every awaited job."""
        clock, every = self._engine.clock, self._engine.settings.sweep_seconds
        while self._waiting:
            await clock.sleep(every)
            self.ended(None)


def _not_found(job_id: int) -> JobNotFound:
    return JobNotFound(
        f"no job with id {job_id} (never made, or a finished job deleted by retention)"
    )


def _time_out(fut: asyncio.Future[Outcome], job_id: int) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError(f"job {job_id} had not ended when the timeout ran out"))
