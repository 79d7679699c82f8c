"""The store interface: where jobs live, spoken in jobs and leases, never in SQL.

A store implements a handful of primitives (open, close, a write transaction, running a
scheduler operation, reads, a snapshot for application SQL). Everything else is written once
here on top of them and the operations of :mod:`scheduler._ops`, so every store gives it
the same meaning:

- :class:`Operations`, the named operations on jobs and schedules, available inside a write
  transaction (``tx.pause_schedule(name)``) and at a time (``store.at(now).pause_schedule(name)``);
- the driver's methods on :class:`Store` (claim due work, complete, extend a lease, reclaim
  expired leases, the next due time, prune), each run at the ``now`` it is given.

Each method's docstring is its contract; the conformance suite in ``tests/scheduler`` checks
it against every store. The types they speak are in :mod:`scheduler.store_types`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, ClassVar, Protocol, TypeVar

from ._ops import dispatch, history, reads, schedules, ticks
from ._ops import jobs as job_ops
from .migrations import MigrationSet
from .models import Job, JobState, Run
from .store_types import (
    Claim,
    CompletionReport,
    NewJob,
    Op,
    OpState,
    Outcome,
    ReclaimReport,
    ReconcileReport,
    Resolve,
    ScheduleDef,
    ScheduleRow,
    StoreGauges,
    TriggerOf,
)

T = TypeVar("T")


class Cursor:
    """The result of one statement, fully fetched (so it needs no connection afterwards).

    ``fetchone``/``fetchall`` are coroutines, as in aiosqlite, so code reads the same on
    every store.
    """

    __slots__ = ("_pos", "_rows", "lastrowid", "rowcount")

    def __init__(self, rows: list[Any], rowcount: int = -1, lastrowid: int | None = None) -> None:
        self._rows = rows
        self._pos = 0
        self.rowcount = rowcount
        self.lastrowid = lastrowid

    async def fetchone(self) -> Any | None:
        if self._pos >= len(self._rows):
            return None
        row = self._rows[self._pos]
        self._pos += 1
        return row

    async def fetchall(self) -> list[Any]:
        rest = self._rows[self._pos :]
        self._pos = len(self._rows)
        return rest

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iter()

    async def _iter(self) -> AsyncIterator[Any]:
        while self._pos < len(self._rows):
            self._pos += 1
            yield self._rows[self._pos - 1]


class Db(Protocol):
    """SQL access inside a transaction (``ctx.db``) or a snapshot.

    Parameters use ``?`` placeholders on every store (PostgreSQL stores translate them).
    Rows support access by index and by column name.
    """

    @property
    def dialect(self) -> str: ...

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor: ...

    async def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Cursor: ...


class Operations(ABC):
    """The named operations on the scheduler's data, each with the contract it keeps, written
    once over one primitive, :meth:`run`.

    A write transaction (:class:`Tx`) offers them in that transaction, at its time; a store
    offers them at a given time through :meth:`Store.at`, each write in a transaction of its
    own and each read against a snapshot. The operations themselves live in
    :mod:`scheduler._ops`.
    """

    @abstractmethod
    async def run(self, op: Callable[[OpState], Op[T]]) -> T:
        """Run a scheduler operation (see :mod:`scheduler.store_types`)."""

    async def read(self, op: Callable[[OpState], Op[T]]) -> T:
        """Run a read-only operation (in a transaction, simply in it)."""
        return await self.run(op)

    # --- jobs ------------------------------------------------------------------------------

    async def enqueue(self, job: NewJob) -> int:
        """Insert ``job``; with a live idempotency key, return the existing job's id and insert
        nothing. A child of a canceled parent is born canceled (firing its ``on_complete``).
        A transaction may batch the write until its next statement or its commit."""
        return await self.run(lambda st: job_ops.enqueue(st, job))

    async def enqueue_many(self, jobs: Sequence[NewJob]) -> list[int]:
        """:meth:`enqueue` each of ``jobs`` in order, as one operation (one round trip on a
        store that drives an operation whole); returns their ids in the same order. Each job
        means exactly what it would alone: a live idempotency key gives the existing job's id
        (also a key taken earlier in the same batch)."""
        return await self.run(lambda st: job_ops.enqueue_many(st, jobs))

    async def cancel(self, job_id: int) -> bool:
        """Cancel a pending job (firing its ``on_complete``) and, breadth first, its pending
        descendants, even when the job itself is running or finished. Returns whether the job
        itself was canceled; :class:`~scheduler.errors.JobNotFound` if there is no such job."""
        return await self.run(lambda st: job_ops.cancel(st, job_id))

    async def complete(
        self, outcomes: Sequence[Outcome], process: str | None = None
    ) -> CompletionReport:
        """Record run outcomes: success, retry with backoff, dead-letter (firing
        ``on_complete`` with the terminal result), or release. Each is fenced by the run count
        and ``in_progress``, so a late worker can never overwrite a newer outcome. Each
        outcome that applies writes its run's history row (ran by ``process``) in the same
        transaction; a stale one writes none."""
        return await self.run(lambda st: dispatch.complete(st, outcomes, process))

    # --- run history -----------------------------------------------------------------------

    async def runs(
        self,
        job_id: int | None = None,
        fn: str | None = None,
        since: float | None = None,
        limit: int = 100,
    ) -> list[Run]:
        """Up to ``limit`` recorded runs (at most ``RUN_LIST_LIMIT``), newest first: of one
        job and/or one function, finished at or after ``since`` (epoch seconds)."""
        return await self.read(lambda st: history.list_runs(st, job_id, fn, since, limit))

    async def gauges(self, cap: int = 100_000) -> StoreGauges:
        """Jobs by active state, the due backlog (work that could start now, and since when
        its oldest could), the due paced jobs waiting for their key's slot, and the schedule
        totals, for metrics: every count stops at ``cap`` rows, so a read costs the same
        however many jobs there are."""
        return await self.read(lambda st: reads.gauges(st, cap))

    async def prune_runs(self, before: float, limit: int = 5000) -> int:
        """Delete up to ``limit`` runs that finished before ``before``, oldest first; returns
        how many."""
        return await self.run(lambda st: history.prune_runs(st, before, limit))

    # --- schedules -------------------------------------------------------------------------

    async def create_schedule(self, definition: ScheduleDef, start: float | None = None) -> None:
        """Insert a schedule; it first fires at its trigger's first time after now, or at its
        first time at or after ``start`` when that is later. A taken name raises
        :class:`~scheduler.errors.DuplicateName`."""
        await self.run(lambda st: schedules.create(st, definition, start))

    async def create_schedules(
        self, items: Sequence[tuple[ScheduleDef, float | None]]
    ) -> list[float]:
        """:meth:`create_schedule` each ``(definition, start)`` in order, as one operation;
        returns their first fire times in the same order. A taken name (also one taken
        earlier in the same batch) raises :class:`~scheduler.errors.DuplicateName`."""
        return await self.run(lambda st: schedules.create_many(st, items))

    async def get_schedule(self, name: str) -> ScheduleRow:
        """The schedule named ``name``; :class:`~scheduler.errors.ScheduleNotFound` if none."""
        return await self.read(lambda st: schedules.get(st, name))

    async def get_schedules(self, names: Sequence[str]) -> dict[str, ScheduleRow]:
        """The schedules of ``names`` that exist, by name (a name with no schedule is left
        out), in one read however many there are."""
        return await self.read(lambda st: schedules.get_many(st, names))

    async def list_schedules(self, source: str | None = None) -> list[ScheduleRow]:
        """Every schedule by name, or only those of ``source`` (``"static"``/``"runtime"``)."""
        return await self.read(lambda st: schedules.list_all(st, source))

    async def pause_schedule(self, name: str) -> bool:
        """Stop ticking ``name``; occurrences already made are left alone. False if it was
        paused already."""
        return await self.run(lambda st: schedules.pause(st, name))

    async def resume_schedule(self, name: str, trigger_of: TriggerOf) -> bool:
        """Tick ``name`` again from its next time after now (paused time is not replayed).
        False if it was not paused."""
        return await self.run(lambda st: schedules.resume(st, name, trigger_of))

    async def trigger_schedule(self, name: str, resolve: Resolve) -> int:
        """Enqueue one occurrence of ``name`` due now (overlap and pause do not apply); returns
        its job id. ``resolve`` gives the live registry's target (None: the stored one)."""
        return await self.run(lambda st: schedules.trigger(st, name, resolve))

    async def backfill_schedule(
        self, name: str, start: float, end: float, trigger_of: TriggerOf, resolve: Resolve
    ) -> list[int]:
        """Enqueue, due now and oldest first, every fire time of ``name`` in ``[start, end]``
        whose occurrence does not exist yet; returns the new job ids. A range of more than
        ``BACKFILL_CAP`` times raises :class:`~scheduler.errors.InvalidSchedule`."""
        return await self.run(
            lambda st: schedules.backfill(st, name, start, end, trigger_of, resolve)
        )

    async def delete_schedule(self, name: str) -> int:
        """Delete ``name`` and cancel its pending occurrences; returns how many."""
        return await self.run(lambda st: schedules.delete(st, name))

    async def tick_schedules(self, limit: int, trigger_of: TriggerOf, resolve: Resolve) -> int:
        """Materialize the due times of up to ``limit`` due schedules under their catch-up
        and overlap policies, each as a job keyed by (name, fire time), and re-anchor each
        schedule past its whole backlog. Returns how many schedules were due."""
        return await self.run(lambda st: ticks.tick(st, limit, trigger_of, resolve))

    async def reconcile_schedules(self, definitions: Sequence[ScheduleDef]) -> ReconcileReport:
        """Make the static schedules match ``definitions`` by name: unchanged ones are left
        alone (keeping their phase), edited ones take the new definition from their next
        time after now, new ones start, missing ones are deleted with their pending
        occurrences canceled. A runtime schedule of the same name raises
        :class:`~scheduler.errors.DuplicateName`."""
        return await self.run(lambda st: schedules.reconcile(st, definitions))

    async def next_schedule_time(self) -> float | None:
        """The earliest next fire time of an active schedule, or None."""
        return await self.read(ticks.next_fire)


class Tx(Operations):
    """An open write transaction of a store: SQL (as a :class:`Db`), savepoints, and the
    named operations, all in this transaction."""

    dialect: ClassVar[str]

    @property
    @abstractmethod
    def state(self) -> OpState:
        """The transaction's shared operation state (its time, whether it woke the driver)."""

    @abstractmethod
    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor: ...

    @abstractmethod
    async def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Cursor: ...

    @abstractmethod
    async def savepoint(self, name: str) -> None: ...

    @abstractmethod
    async def release(self, name: str) -> None: ...

    @abstractmethod
    async def rollback_to(self, name: str) -> None: ...


class OperationsAt(Operations):
    """A store's named operations at one time (:meth:`Store.at`): each write in a
    transaction of its own, in one round trip where the store can; each read against a
    snapshot, without the writer."""

    def __init__(self, store: Store, now: float) -> None:
        self.store = store
        self.now = now

    async def run(self, op: Callable[[OpState], Op[T]]) -> T:
        result: T = await self.store.run(op, self.now)
        return result

    async def read(self, op: Callable[[OpState], Op[T]]) -> T:
        result: T = await self.store.read(op, self.now)
        return result


CommitListener = Callable[[], None]


class Store(ABC):
    """Where jobs live. Subclasses provide the primitives (and a :class:`Tx`); the domain
    methods are shared."""

    dialect: ClassVar[str]

    def __init__(self) -> None:
        self._listeners: list[CommitListener] = []

    # --- primitives ------------------------------------------------------------------------

    @abstractmethod
    async def open(self, migrations: Sequence[MigrationSet] = ()) -> None:
        """Connect, check the database, and apply the scheduler's and ``migrations``.

        A file that is not a database, or a database written by a newer schema, raises a
        :class:`~scheduler.errors.StoreError` and is left untouched.
        """

    @abstractmethod
    async def close(self) -> None:
        """Close every connection. Idempotent."""

    @abstractmethod
    def transaction(self, now: float) -> AbstractAsyncContextManager[Tx]:
        """A write transaction: commits on normal exit, rolls back on an exception.

        Listeners are told after the commit if it changed pending work.
        """

    @abstractmethod
    async def run(self, op: Callable[[OpState], Op[Any]], now: float) -> Any:
        """Run one operation in its own write transaction (one round trip where possible)."""

    @abstractmethod
    async def read(self, op: Callable[[OpState], Op[Any]], now: float) -> Any:
        """Run a read-only operation against a consistent snapshot, without the writer."""

    @abstractmethod
    def snapshot(self) -> AbstractAsyncContextManager[Db]:
        """Read-only SQL access for application queries, without taking the writer."""

    def is_deterministic_error(self, exc: BaseException) -> bool:
        """Whether ``exc`` would fail the same way on every retry (a constraint violation)."""
        return False

    # --- wake-ups --------------------------------------------------------------------------

    def add_commit_listener(self, listener: CommitListener) -> None:
        """Call ``listener`` after every commit that changed pending work (and, on stores that
        can, after such commits by other processes)."""
        self._listeners.append(listener)

    def remove_commit_listener(self, listener: CommitListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _notify(self) -> None:
        for listener in list(self._listeners):
            listener()

    # --- domain methods --------------------------------------------------------------------

    def at(self, now: float) -> OperationsAt:
        """The named :class:`Operations` at ``now``: each write in a transaction of its own,
        each read against a snapshot."""
        return OperationsAt(self, now)

    async def enqueue(self, job: NewJob, now: float) -> int:
        """:meth:`Operations.enqueue` in a transaction of its own."""
        return await self.at(now).enqueue(job)

    async def claim_due(
        self,
        now: float,
        lease_until: float,
        *,
        mutation_limit: int,
        action_limit: int,
        process: str | None = None,
    ) -> Claim:
        """Claim up to ``mutation_limit`` due mutations and ``action_limit`` due actions, in
        ``next_ts`` order, each only if still exactly ``pending``; each claim bumps the job's
        run count (the fence) and sets its lease to ``lease_until``, held by ``process``
        (the name a lost lease's run history row gets). Also returns the earliest pending
        ``next_ts`` left (actions only counted when ``action_limit > 0``)."""
        claim: Claim = await self.run(
            lambda st: dispatch.claim_due(st, lease_until, mutation_limit, action_limit, process),
            now,
        )
        return claim

    async def complete(
        self, outcomes: Sequence[Outcome], now: float, process: str | None = None
    ) -> CompletionReport:
        """:meth:`Operations.complete` in one transaction of its own."""
        return await self.at(now).complete(outcomes, process)

    async def extend_lease(self, job_id: int, run_count: int, until: float, now: float) -> bool:
        """Move a held lease to ``until``; False if the run no longer holds the job."""
        held: bool = await self.run(
            lambda st: dispatch.extend_lease(st, job_id, run_count, until), now
        )
        return held

    async def reclaim_expired(
        self, now: float, limit: int = 1000, process: str | None = None
    ) -> ReclaimReport:
        """Reclaim up to ``limit`` jobs whose lease expired before ``now``: mutations and
        idempotent actions back to pending with the attempt counted (dead-lettered once the
        budget is spent), other actions to failed with ``on_complete`` fired. Each lost run
        is recorded in the run history as ``lease_lost``, in the same transaction, ran by
        the process whose claim holds the lease (the sweeping ``process`` is named in its
        error)."""
        report: ReclaimReport = await self.run(
            lambda st: dispatch.reclaim_expired(st, limit, process), now
        )
        return report

    async def next_due_time(self, now: float) -> float | None:
        """The earliest ``next_ts`` of any pending job, or None."""
        result: float | None = await self.read(lambda st: dispatch.next_due_time(st), now)
        return result

    async def prune(self, before: float, now: float, limit: int = 1000) -> int:
        """Delete up to ``limit`` terminal jobs (and their payloads) finished before ``before``."""
        n: int = await self.run(lambda st: dispatch.prune(st, before, limit), now)
        return n

    async def cancel(self, job_id: int, now: float) -> bool:
        """:meth:`Operations.cancel` in a transaction of its own."""
        return await self.at(now).cancel(job_id)

    async def retry(self, job_id: int, now: float) -> bool:
        """Put a failed or canceled job back to pending with a fresh budget."""
        done: bool = await self.run(lambda st: job_ops.retry(st, job_id), now)
        return done

    async def get_job(self, job_id: int, now: float) -> Job | None:
        job: Job | None = await self.read(lambda st: reads.get_job(st, job_id), now)
        return job

    async def list_jobs(
        self,
        now: float,
        *,
        state: JobState | None = None,
        fn: str | None = None,
        before_id: int | None = None,
        limit: int = 50,
    ) -> list[Job]:
        """Jobs, newest first, optionally filtered; page with ``before_id``."""
        jobs: list[Job] = await self.read(
            lambda st: reads.list_jobs(st, state, fn, before_id, limit), now
        )
        return jobs

    async def count_by_state(self, now: float) -> dict[JobState, int]:
        counts: dict[JobState, int] = await self.read(reads.count_by_state, now)
        return counts
