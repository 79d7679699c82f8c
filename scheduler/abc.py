"""The store interface: where jobs live, spoken in jobs and leases, never in SQL.

A store implements a handful of primitives (open, close, a write transaction, running a
scheduler operation, reads). The domain methods the driver uses (claim due work, complete,
extend a lease, reclaim expired leases, the next due time, prune, cancel) are written once
here on top of those primitives and the operations in ``scheduler._ops``, so every store
gives them the same meaning. Each method's docstring is its contract; the conformance suite
in ``tests/scheduler`` checks it against every store.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, ClassVar, Protocol

from . import _ops
from .migrations import MigrationSet
from .models import Job, JobState
from .store_types import Claim, CompletionReport, NewJob, Op, OpState, Outcome, ReclaimReport


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


class Tx(Db, Protocol):
    """An open write transaction of a store."""

    @property
    def state(self) -> OpState: ...

    async def run(self, op: Callable[[OpState], Op[Any]]) -> Any:
        """Run a scheduler operation inside this transaction."""
        ...

    async def enqueue(self, job: NewJob) -> int:
        """Insert ``job`` in this transaction (see ``scheduler._ops.enqueue``); a store may
        batch the write until the transaction's next statement or its commit."""
        ...

    async def savepoint(self, name: str) -> None: ...

    async def release(self, name: str) -> None: ...

    async def rollback_to(self, name: str) -> None: ...


CommitListener = Callable[[], None]


class Store(ABC):
    """Where jobs live. Subclasses provide the primitives; the domain methods are shared."""

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

    async def enqueue(self, job: NewJob, now: float) -> int:
        """Insert ``job`` in its own transaction; see :func:`scheduler._ops.enqueue`."""
        result: int = await self.run(lambda st: _ops.enqueue(st, job), now)
        return result

    async def claim_due(
        self, now: float, lease_until: float, *, mutation_limit: int, action_limit: int
    ) -> Claim:
        """Claim up to ``mutation_limit`` due mutations and ``action_limit`` due actions, in
        ``next_ts`` order, each only if still exactly ``pending``; each claim bumps the job's
        run count (the fence) and sets its lease to ``lease_until``. Also returns the earliest
        pending ``next_ts`` left (actions only counted when ``action_limit > 0``)."""
        claim: Claim = await self.run(
            lambda st: _ops.claim_due(st, lease_until, mutation_limit, action_limit), now
        )
        return claim

    async def complete(self, outcomes: Sequence[Outcome], now: float) -> CompletionReport:
        """Record run outcomes in one transaction: success, retry with backoff, dead-letter
        (firing ``on_complete`` with the terminal result), or release. Each is fenced by the
        run count and ``in_progress``, so a late worker can never overwrite a newer outcome."""
        report: CompletionReport = await self.run(lambda st: _ops.complete(st, outcomes), now)
        return report

    async def extend_lease(self, job_id: int, run_count: int, until: float, now: float) -> bool:
        """Move a held lease to ``until``; False if the run no longer holds the job."""
        held: bool = await self.run(lambda st: _ops.extend_lease(st, job_id, run_count, until), now)
        return held

    async def reclaim_expired(self, now: float, limit: int = 1000) -> ReclaimReport:
        """Reclaim up to ``limit`` jobs whose lease expired before ``now``: mutations and
        idempotent actions back to pending with the attempt counted (dead-lettered once the
        budget is spent), other actions to failed with ``on_complete`` fired."""
        report: ReclaimReport = await self.run(lambda st: _ops.reclaim_expired(st, limit), now)
        return report

    async def next_due_time(self, now: float) -> float | None:
        """The earliest ``next_ts`` of any pending job, or None."""
        result: float | None = await self.read(lambda st: _ops.next_due_time(st), now)
        return result

    async def prune(self, before: float, now: float, limit: int = 1000) -> int:
        """Delete up to ``limit`` terminal jobs (and their payloads) finished before ``before``."""
        n: int = await self.run(lambda st: _ops.prune(st, before, limit), now)
        return n

    async def cancel(self, job_id: int, now: float) -> bool:
        """Cancel a pending job and, breadth first, its pending descendants."""
        done: bool = await self.run(lambda st: _ops.cancel(st, job_id), now)
        return done

    async def retry(self, job_id: int, now: float) -> bool:
        """Put a failed or canceled job back to pending with a fresh budget."""
        done: bool = await self.run(lambda st: _ops.retry(st, job_id), now)
        return done

    async def get_job(self, job_id: int, now: float) -> Job | None:
        job: Job | None = await self.read(lambda st: _ops.get_job(st, job_id), now)
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
            lambda st: _ops.list_jobs(st, state, fn, before_id, limit), now
        )
        return jobs

    async def count_by_state(self, now: float) -> dict[JobState, int]:
        counts: dict[JobState, int] = await self.read(_ops.count_by_state, now)
        return counts
