"""What handlers and application transactions receive as ``ctx``."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from . import _codec, _ops
from .abc import Cursor, Tx
from .errors import LeaseLost
from .models import JobInfo, Retry, ts_to_datetime
from .store_types import Op, OpState

if TYPE_CHECKING:
    from ._scheduler import Scheduler
    from .schedules import TxSchedules


class LazySavepointDb:
    """``ctx.db`` of a mutation job: the job's savepoint opens at its first statement, so a
    handler that writes nothing costs no round trip, and a failing one is rolled back alone."""

    def __init__(self, tx: Tx, name: str) -> None:
        self._tx = tx
        self.savepoint = name
        self.opened = False

    @property
    def dialect(self) -> str:
        return self._tx.dialect

    async def ensure(self) -> None:
        if not self.opened:
            await self._tx.savepoint(self.savepoint)
            self.opened = True

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        await self.ensure()
        return await self._tx.execute(sql, params)

    async def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Cursor:
        await self.ensure()
        return await self._tx.executemany(sql, params)


class TxScheduler:
    """``ctx.scheduler`` inside a transaction: every call writes in that transaction."""

    def __init__(
        self,
        sched: Scheduler,
        tx: Tx,
        before_write: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._sched = sched
        self._tx = tx
        self._before_write = before_write

    async def _run(self, op: Callable[[OpState], Op[Any]]) -> Any:
        if self._before_write is not None:
            await self._before_write()
        return await self._tx.run(op)

    async def run_after(
        self, delay: timedelta | float, fn: str, args: Any = None, **options: Any
    ) -> int:
        """Run ``fn(args)`` after ``delay`` (a negative delay means now). Returns the job id."""
        now = self._tx.state.now
        when = now + max(0.0, _codec.to_seconds(delay))
        return await self.enqueue(fn, args, run_at=when, **options)

    async def run_at(
        self, when: datetime | float, fn: str, args: Any = None, **options: Any
    ) -> int:
        """Run ``fn(args)`` at ``when`` (an aware datetime or epoch seconds)."""
        return await self.enqueue(fn, args, run_at=when, **options)

    async def enqueue(
        self,
        fn: str,
        args: Any = None,
        *,
        run_at: datetime | float | None = None,
        idempotency_key: str | None = None,
        on_complete: str | None = None,
        context: Any = None,
        retry: Retry | None = None,
        name: str | None = None,
        parent_id: int | None = None,
    ) -> int:
        """Insert a job; everything is validated before anything is written.

        A second enqueue with a live ``idempotency_key`` returns the first job's id.
        ``on_complete`` names a mutation enqueued with ``{"job_id", "context", "result"}``
        when the job reaches a terminal state, in the same commit.
        """
        job = self._sched._new_job(
            fn,
            args,
            run_at=run_at,
            idempotency_key=idempotency_key,
            on_complete=on_complete,
            context=context,
            retry=retry,
            name=name,
            parent_id=parent_id,
            now=self._tx.state.now,
        )
        if self._before_write is not None:
            await self._before_write()
        job_id: int = await self._tx.enqueue(job)
        return job_id

    async def cancel(self, job_id: int) -> bool:
        """Cancel a pending job (firing its ``on_complete``) and its pending descendants.

        Returns whether the job itself was canceled; the cascade runs either way.
        """
        done: bool = await self._run(lambda st: _ops.cancel(st, int(job_id)))
        return done

    @property
    def schedules(self) -> TxSchedules:
        """Runtime schedules, written in this transaction (so an application row and its
        schedule commit together)."""
        from .schedules import TxSchedules

        return TxSchedules(self._sched, self._tx, self._before_write)


class TransactionContext:
    """``ctx`` of a mutation, and of ``async with sched.transaction() as ctx``.

    ``db`` runs SQL in the transaction, ``scheduler`` schedules in it, ``now`` is the
    transaction's time, ``random`` a PRNG (seeded from job id and attempt in a job, so a replay
    draws the same numbers), ``job`` the running job (None outside a job).
    """

    __slots__ = ("db", "job", "now", "random", "scheduler")

    def __init__(
        self,
        db: Any,
        scheduler: TxScheduler,
        now: float,
        rng: random.Random,
        job: JobInfo | None = None,
    ) -> None:
        self.db = db
        self.scheduler = scheduler
        self.now: datetime = ts_to_datetime(now)
        self.random = rng
        self.job = job


class ActionScheduler:
    """``ctx.scheduler`` inside an action: ``run_after``, ``run_at`` and ``cancel``, each in
    its own transaction (an action holds none)."""

    def __init__(self, sched: Scheduler) -> None:
        self._sched = sched

    async def run_after(self, delay: timedelta | float, fn: str, args: Any = None) -> int:
        async with self._sched.transaction() as ctx:
            return await ctx.scheduler.run_after(delay, fn, args)

    async def run_at(self, when: datetime | float, fn: str, args: Any = None) -> int:
        async with self._sched.transaction() as ctx:
            return await ctx.scheduler.run_at(when, fn, args)

    async def cancel(self, job_id: int) -> bool:
        async with self._sched.transaction() as ctx:
            return await ctx.scheduler.cancel(job_id)


class RunLease:
    """One action run's hold on its job, measured by the process's monotonic clock.

    ``expires`` is when the lease surely ends as seen from here: the monotonic time taken
    just before the claim (or the latest successful heartbeat) was sent, plus the lease
    duration. The store stamps the lease with the wall time taken at that same instant, so
    nobody can reclaim the job earlier, unless a wall clock that compares it (this machine's
    after a step, or another machine's) is ahead by more than ``margin``.
    """

    __slots__ = ("expires", "lost", "margin", "monotonic", "task")

    def __init__(self, monotonic: Callable[[], float], expires: float, margin: float) -> None:
        self.monotonic = monotonic
        self.expires = expires
        self.margin = margin
        self.lost = False
        """Set once a heartbeat found the job no longer held by this run."""
        self.task: asyncio.Task[Any] | None = None
        """The task running the action (cancelled when the lease is found lost)."""

    def remaining(self) -> float:
        if self.lost:
            return 0.0
        return max(0.0, self.expires - self.monotonic() - self.margin)

    def lose(self) -> None:
        if not self.lost:
            self.lost = True
            if self.task is not None and not self.task.done():
                self.task.cancel("lease lost")


class ActionContext:
    """``ctx`` of an action: no transaction; I/O allowed.

    Before every external side effect (a request that cannot be taken back), an action calls
    ``ctx.ensure_lease(at_least)`` with at least the time that effect may take: if this run
    could lose its lease meanwhile, another process may already be running the job, and the
    effect would happen twice.
    """

    __slots__ = ("_lease", "_sched", "job", "random", "scheduler")

    def __init__(self, sched: Scheduler, job: JobInfo, rng: random.Random, lease: RunLease) -> None:
        self._sched = sched
        self._lease = lease
        self.job = job
        self.random = rng
        self.scheduler = ActionScheduler(sched)

    @property
    def now(self) -> datetime:
        return self._sched.clock.now()

    async def run_mutation(
        self, fn: str | Callable[[TransactionContext, Any], Awaitable[Any]], args: Any = None
    ) -> Any:
        """Run a mutation (a registered name, or an ``async def f(ctx, args)``) in its own
        transaction and return its result."""
        handler = self._sched.registry.mutation_named(fn).handler if isinstance(fn, str) else fn
        async with self._sched.transaction() as ctx:
            return await handler(ctx, args)

    async def heartbeat(self) -> bool:
        """Extend this run's lease by the scheduler's lease duration.

        Returns False if the run no longer holds the job (its lease expired and it was
        reclaimed, or the job was settled elsewhere): the run is then cancelled, as it must
        not act any more, and the driver discards it.
        """
        lease = self._lease
        if lease.lost:
            return False
        sent_at = lease.monotonic()
        held = await self._sched._heartbeat(self.job)
        if held:
            lease.expires = max(lease.expires, sent_at + self._sched.lease_seconds)
        else:
            lease.lose()
        return held

    def lease_remaining(self) -> float:
        """Seconds this run still surely holds its lease (0 when it may not): by this
        process's monotonic clock since its claim or latest successful heartbeat, less the
        scheduler's ``lease_margin``. Wall-clock steps do not change it."""
        return self._lease.remaining()

    def ensure_lease(self, at_least: timedelta | float = 0.0) -> None:
        """Raise :class:`LeaseLost` unless the lease surely lasts ``at_least`` more seconds.

        Call it right before each external side effect, with the time that effect may take.
        To go on when too little is left, ``await ctx.heartbeat()`` first, then call this.
        """
        need = max(0.0, _codec.to_seconds(at_least, "at_least"))
        left = self._lease.remaining()  # 0 once the lease was found lost
        if left <= need:
            raise LeaseLost(
                f"job {self.job.id} run {self.job.run_count}: "
                + (
                    "the job is no longer held by this run"
                    if self._lease.lost
                    else f"its lease surely lasts {left:.3f}s more, less than the {need:.3f}s "
                    "asked for"
                )
            )
