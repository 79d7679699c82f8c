"""What handlers and application transactions receive as ``ctx``."""

from __future__ import annotations

import random
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, Unpack, overload

from . import _codec, _once
from ._engine import Engine, EnqueueOptions, InTransaction, JobOptions, JobRequest
from ._ops.seeds import job_seed
from .errors import AlreadyDone, LeaseLost
from .schedules import TransactionSchedules

if TYPE_CHECKING:
    import asyncio
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
    from datetime import datetime, timedelta

    from .abc import Cursor, Tx
    from .models import JobInfo

A = TypeVar("A")
R = TypeVar("R")


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


class TransactionScheduling(InTransaction):
    """``ctx.scheduler`` inside a transaction: every call writes in that transaction."""

    async def run_after(
        self,
        delay: timedelta | float,
        fn: str,
        args: Any = None,
        **options: Unpack[JobOptions],
    ) -> int:
        """Run ``fn(args)`` after ``delay`` (a negative delay means now). Returns the job id."""
        when = self._tx.state.now + max(0.0, _codec.to_seconds(delay))
        return await self.enqueue(fn, args, run_at=when, **options)

    async def run_at(
        self,
        when: datetime | float,
        fn: str,
        args: Any = None,
        **options: Unpack[JobOptions],
    ) -> int:
        """Run ``fn(args)`` at ``when`` (an aware datetime or epoch seconds)."""
        return await self.enqueue(fn, args, run_at=when, **options)

    async def enqueue(self, fn: str, args: Any = None, **options: Unpack[EnqueueOptions]) -> int:
        """Insert a job; everything is validated before anything is written.

        Options: ``run_at`` (default now), ``idempotency_key`` (a second enqueue with a live
        key returns the first job's id), ``on_complete`` (a mutation enqueued with
        ``{"job_id", "context", "result"}`` when the job reaches a terminal state, in the
        same commit), ``context``, ``retry``, ``name``, ``parent_id``, ``pace`` (a
        :class:`~scheduler.Pace`: jobs with one key start at least its spacing apart, in
        every process; default: the registration's), ``priority`` (an int, default 0: among
        due jobs a higher priority starts first, so a flood of lower-priority due work
        delays it by one batch at most; within one pace key jobs keep their due order),
        ``timeout`` (seconds or a ``timedelta``: a run still going after it is cancelled
        and fails with :class:`~scheduler.JobTimeout`, retried by the job's retry policy;
        default: the registration's, else none), ``concurrency`` (a
        :class:`~scheduler.Concurrency`: at most its limit of jobs with its key in progress
        at once, in every process, the others waiting without a lease or a worker slot;
        default: the registration's; not with ``pace``).
        """
        job = self._engine.new_job(fn, args, self._tx.state.now, **options)
        return await (await self._writing()).enqueue(job)

    async def enqueue_many(self, requests: Iterable[JobRequest]) -> list[int]:
        """:meth:`enqueue` for each request, in order, as one write (one round trip on
        SQLite); returns the job ids in the same order. Every request is validated before
        anything is written, and each means what it would alone (an idempotency key taken
        earlier in the batch gives that job's id)."""
        now = self._tx.state.now
        jobs = [self._engine.new_job(r.fn, r.args, now, **r.options) for r in requests]
        if not jobs:
            return []
        return await (await self._writing()).enqueue_many(jobs)

    async def debounce(
        self,
        fn: str,
        args: Any = None,
        *,
        key: str,
        quiet: timedelta | float,
        max_wait: timedelta | float | None = None,
    ) -> int:
        """Run ``fn`` once per burst of calls with one ``key``: ``quiet`` after the **last**
        call, with the last call's ``args`` (``max_wait``, if given, bounds the delay from
        the burst's first call). Every call of a burst returns the same job id; a call after
        the burst's job started begins a new burst. A key is per function.

        Once per burst across every process sharing the store (two calls racing to open a
        burst make one job: the database's unique index decides). In a mutation or
        ``sched.transaction()`` the call is part of the transaction: rolled back with it."""
        job, key, quiet_s, wait_s = self._engine.debounce_job(
            fn, args, self._tx.state.now, key, quiet, max_wait
        )
        return await (await self._writing()).debounce(job, key, quiet_s, wait_s)

    async def batch(
        self,
        fn: str,
        item: Any,
        *,
        key: str,
        max_items: int,
        max_wait: timedelta | float,
    ) -> int:
        """Gather ``item`` with the others of one ``key``: ``fn`` runs with ``{"key": key,
        "items": [item, ...]}`` (in the order added) once ``max_items`` are waiting, or
        ``max_wait`` after the first of them. Returns the batch's job id (the same for every
        item of a batch). A key is per function; ``max_items`` is at most 10,000.

        Each item is in exactly one batch, across every process sharing the store; items
        added once a batch started go to the next one; a batch that fails is retried whole,
        with the same items. With a typed registration (``args=``), its type is the batch's
        (fields ``key`` and ``items``) and each item is checked as one of its ``items``. In
        a mutation or ``sched.transaction()`` the item is added in the transaction."""
        job, key, item_json, items, wait_s = self._engine.batch_job(
            fn, item, self._tx.state.now, key, max_items, max_wait
        )
        return await (await self._writing()).batch(job, key, item_json, items, wait_s)

    async def cancel(self, job_id: int) -> bool:
        """Cancel a pending job (firing its ``on_complete``) and its pending descendants.

        Returns whether the job itself was canceled; the cascade runs either way.
        """
        return await (await self._writing()).cancel(int(job_id))

    @property
    def schedules(self) -> TransactionSchedules:
        """Runtime schedules, written in this transaction (so an application row and its
        schedule commit together)."""
        return TransactionSchedules(self._engine, self._tx, self._before_write)


class TransactionContext:
    """``ctx`` of a mutation, and of ``async with sched.transaction() as ctx``.

    ``db`` runs SQL in the transaction, ``scheduler`` schedules in it, ``now`` is the
    transaction's time, ``random`` a PRNG (seeded from job id and attempt in a job, so a replay
    draws the same numbers), ``job`` the running job (None outside a job).
    """

    __slots__ = {
        "_random": None,
        "_seed": None,
        "db": "SQL in the transaction (a :class:`~scheduler.Db`: ``await ctx.db.execute(sql, "
        "params)``); in a mutation job, in a savepoint of its own.",
        "job": "The running job (a :class:`~scheduler.JobInfo`); None outside a job.",
        "now": "The transaction's time, an aware UTC datetime (the clock read once, at its start).",
        "scheduler": "Scheduling in this transaction: what is enqueued commits or rolls back "
        "with it.",
    }

    def __init__(
        self,
        db: Any,
        scheduler: TransactionScheduling,
        now: float,
        job: JobInfo | None = None,
    ) -> None:
        self.db = db
        self.scheduler = scheduler
        self.now: datetime = _codec.ts_to_datetime(now)
        self._random: random.Random | None = None
        self.job = job

    @property
    def random(self) -> random.Random:
        """The PRNG, made on first use: in a job seeded from its id and attempt (a replay
        draws the same numbers), else from the OS."""
        if self._random is None:
            job = self.job
            self._random = random.Random(None if job is None else job_seed(job.id, job.attempt))  # noqa: S311 (the handler's seeded draws, not secrets)
        return self._random


@asynccontextmanager
async def open_transaction(engine: Engine) -> AsyncIterator[TransactionContext]:
    """A write transaction as application code sees it (``sched.transaction()``): its SQL
    and its scheduling commit together on normal exit and roll back on an exception."""
    mark = _once.current_once()
    if mark is None or mark.taken:
        async with engine.transaction() as tx:
            yield TransactionContext(tx, TransactionScheduling(engine, tx), tx.state.now)
        return
    async with engine.transaction() as tx:
        # The block's once key is taken in the same commit as its first writes: taken by
        # another transaction already, this one writes nothing.
        if not mark.may_take() or not await tx.run(partial(_once.claim, mark=mark)):
            raise AlreadyDone(mark.key)
        yield TransactionContext(tx, TransactionScheduling(engine, tx), tx.state.now)
    mark.taken = True


class ActionScheduling:
    """``ctx.scheduler`` inside an action: ``run_after``, ``run_at``, ``debounce``, ``batch``
    and ``cancel``, each in a transaction of its own (an action holds none)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    async def run_after(
        self,
        delay: timedelta | float,
        fn: str,
        args: Any = None,
        **options: Unpack[JobOptions],
    ) -> int:
        """``ctx.scheduler.run_after`` of a transaction, in a transaction of its own."""
        async with open_transaction(self._engine) as ctx:
            return await ctx.scheduler.run_after(delay, fn, args, **options)

    async def run_at(
        self,
        when: datetime | float,
        fn: str,
        args: Any = None,
        **options: Unpack[JobOptions],
    ) -> int:
        """``ctx.scheduler.run_at`` of a transaction, in a transaction of its own."""
        async with open_transaction(self._engine) as ctx:
            return await ctx.scheduler.run_at(when, fn, args, **options)

    async def debounce(
        self,
        fn: str,
        args: Any = None,
        *,
        key: str,
        quiet: timedelta | float,
        max_wait: timedelta | float | None = None,
    ) -> int:
        """``ctx.scheduler.debounce`` of a transaction, in a transaction of its own."""
        async with open_transaction(self._engine) as ctx:
            return await ctx.scheduler.debounce(fn, args, key=key, quiet=quiet, max_wait=max_wait)

    async def batch(
        self,
        fn: str,
        item: Any,
        *,
        key: str,
        max_items: int,
        max_wait: timedelta | float,
    ) -> int:
        """``ctx.scheduler.batch`` of a transaction, in a transaction of its own."""
        async with open_transaction(self._engine) as ctx:
            return await ctx.scheduler.batch(
                fn, item, key=key, max_items=max_items, max_wait=max_wait
            )

    async def cancel(self, job_id: int) -> bool:
        """``ctx.scheduler.cancel`` of a transaction, in a transaction of its own."""
        async with open_transaction(self._engine) as ctx:
            return await ctx.scheduler.cancel(job_id)


class RunLease:
    """One action run's hold on its job, measured by the process's monotonic clock.

    ``expires`` is when the lease surely ends as seen from here: the monotonic time taken
    just before the claim (or the latest successful heartbeat) was sent, plus the lease
    duration. The store stamps the lease with the wall time taken at that same instant (on
    PostgreSQL, corrected to the database's clock), so nobody can reclaim the job earlier,
    unless the clock that compares it (this machine's after a step, or on SQLite another
    process's) is ahead by more than ``margin``.
    """

    __slots__ = ("expires", "intact", "lost", "margin", "monotonic", "task")

    def __init__(
        self,
        monotonic: Callable[[], float],
        expires: float,
        margin: float,
        intact: Callable[[], bool] | None = None,
    ) -> None:
        self.monotonic = monotonic
        self.expires = expires
        self.margin = margin
        self.intact = intact
        """Whether this process's proof of life still covers the claim (see
        :meth:`scheduler._holders.Holders.intact`): once not, another process may find it
        gone and take the job, so the lease no longer surely holds."""
        self.lost = False
        """Set once a heartbeat found the job no longer held by this run."""
        self.task: asyncio.Task[Any] | None = None
        """The task running the action (cancelled when the lease is found lost)."""

    @property
    def lapsed(self) -> bool:
        """Whether this process's proof of life lapsed since the claim."""
        return self.intact is not None and not self.intact()

    def remaining(self) -> float:
        if self.lost or self.lapsed:
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

    __slots__ = {
        "_engine": None,
        "_extend_lease": None,
        "_lease": None,
        "_random": None,
        "job": "The running job (a :class:`~scheduler.JobInfo`).",
        "scheduler": "Scheduling from an action: each call in a transaction of its own (an "
        "action holds none).",
    }

    def __init__(
        self,
        engine: Engine,
        job: JobInfo,
        lease: RunLease,
        extend_lease: Callable[[], Awaitable[bool]],
    ) -> None:
        self._engine = engine
        self._lease = lease
        self._extend_lease = extend_lease
        self.job = job
        self._random: random.Random | None = None
        self.scheduler = ActionScheduling(engine)

    @property
    def random(self) -> random.Random:
        """The run's PRNG, seeded from the job id and attempt (a replay draws the same
        numbers); made on first use, so a handler that draws none pays nothing for it."""
        if self._random is None:
            self._random = random.Random(job_seed(self.job.id, self.job.attempt))  # noqa: S311 (the handler's seeded draws, not secrets)
        return self._random

    @property
    def now(self) -> datetime:
        """The scheduler's clock now, an aware UTC datetime (read at each use)."""
        return self._engine.clock.now()

    @overload
    async def run_mutation(
        self, fn: Callable[[TransactionContext, A], Awaitable[R]], args: A
    ) -> R: ...

    @overload
    async def run_mutation(
        self, fn: Callable[[TransactionContext, None], Awaitable[R]], args: None = None
    ) -> R: ...

    @overload
    async def run_mutation(self, fn: str, args: Any = None) -> Any: ...

    async def run_mutation(
        self, fn: str | Callable[[TransactionContext, Any], Awaitable[Any]], args: Any = None
    ) -> Any:
        """Run a mutation (a registered name, or an ``async def f(ctx, args)``) in its own
        transaction and return its result. A registered name with an ``args`` type gets
        ``args`` checked and as an instance of that type, as a job of it would."""
        if isinstance(fn, str):
            reg = self._engine.registry.mutation_named(fn)
            handler, args = reg.handler, reg.coerce_args(args)
        else:
            handler = fn
        async with open_transaction(self._engine) as ctx:
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
        held = await self._extend_lease()
        if held:
            lease.expires = max(lease.expires, sent_at + self._engine.settings.lease_seconds)
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
                    else "this process's proof of life lapsed since it claimed the job (another "
                    "process may have found it gone and taken the job)"
                    if self._lease.lapsed
                    else f"its lease surely lasts {left:.3f}s more, less than the {need:.3f}s "
                    "asked for"
                )
            )
