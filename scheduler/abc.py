"""The store interface: where jobs live, spoken in jobs and leases, never in SQL.

A store implements a handful of primitives: open, close, a write transaction, running one
scheduler operation (in a write transaction of its own, or read-only against a snapshot),
and a snapshot for application SQL. Everything else is written once on top of them, as the
named operations of :class:`~scheduler._ops.operations.Operations`, so every store gives it
the same meaning. They are called one way, with the time where the call runs:

- in a write transaction, at its time: ``async with store.transaction(now) as tx:
  await tx.cancel(job_id)``;
- at a given time, each write in a transaction of its own and each read against a
  snapshot: ``await store.at(now).cancel(job_id)`` (the driver's claims, completions, lease
  extensions and sweeps are called the same way).

Each method's docstring is its contract; the conformance suite in ``tests/scheduler`` checks
it against every store. The types they speak are in :mod:`scheduler.store_types`.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from ._ops.operations import Operations as Operations
from .store_types import Op, OpState, Resolver

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from .migrations import MigrationSet

T = TypeVar("T")


class Cursor:
    """The result of one statement, fully fetched (so it needs no connection afterwards).

    ``fetchone``/``fetchall`` are coroutines, as in aiosqlite, so code reads the same on
    every store.
    """

    __slots__ = {
        "_pos": None,
        "_rows": None,
        "lastrowid": "The id of the row an INSERT made, where the database tells it (else None).",
        "rowcount": "How many rows the statement changed (-1 where not known).",
    }

    def __init__(self, rows: list[Any], rowcount: int = -1, lastrowid: int | None = None) -> None:
        self._rows = rows
        self._pos = 0
        self.rowcount = rowcount
        self.lastrowid = lastrowid

    async def fetchone(self) -> Any | None:
        """The next row, or None after the last."""
        if self._pos >= len(self._rows):
            return None
        row = self._rows[self._pos]
        self._pos += 1
        return row

    async def fetchall(self) -> list[Any]:
        """The rows not fetched yet."""
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
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgres"``: which SQL the database speaks."""
        ...

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement with ``params`` bound to its ``?`` placeholders."""
        ...

    async def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Cursor:
        """Run one statement once for each parameter sequence of ``params``."""
        ...


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

    __slots__ = ("now", "store")

    def __init__(self, store: Store, now: float) -> None:
        self.store = store
        self.now = now

    async def run(self, op: Callable[[OpState], Op[T]]) -> T:
        return await self.store._run(self.now, op)

    async def read(self, op: Callable[[OpState], Op[T]]) -> T:
        return await self.store._read(self.now, op)

    async def run_brief(self, op: Callable[[OpState], Op[T]]) -> T:
        return await self.store._run_brief(self.now, op)


class Liveness(ABC):
    """How a store tells a lease holder that is gone from one that is alive (see
    :mod:`scheduler._holders`, which records and checks the proofs).

    A process proves it is alive with a *proof* (:meth:`prove`): text recorded in the
    database beside its holder name, which every process sharing the database can check
    (:meth:`gone`). Gone means provably gone: a process that has exited (the SQLite store,
    one machine), a database session that has ended (PostgreSQL). A holder that may merely
    be paused (SIGSTOP, a VM migration) or that this process cannot judge (another machine,
    another container's processes) is never gone: its leases run out as they always did.

    A proof may *lapse* while its process lives on (PostgreSQL: the session that proves it
    was lost): the store then calls :attr:`on_lapse` at once and bumps :attr:`epoch`; the
    process must :meth:`prove` itself again (a new proof) and, until it has, must not act
    on a lease taken under the old one (another process may find it gone meanwhile and take
    its leases).
    """

    epoch = 0
    """How many times this process's proof lapsed."""

    on_lapse: Callable[[], None] | None = None
    """Called (by the store, on its event loop) when this process's proof lapses."""

    @abstractmethod
    async def prove(self) -> str:
        """Prove this process alive from now on (until :meth:`close` or a lapse); the proof
        to record. Each call gives a new proof."""

    @abstractmethod
    async def gone(self, proofs: Mapping[str, str]) -> set[str]:
        """Of the holders named (each with its recorded proof), those provably gone."""

    @property
    @abstractmethod
    def proven(self) -> bool:
        """Whether the latest proof stands (made, and not lapsed since)."""

    @abstractmethod
    async def close(self) -> None:
        """Stop proving this process alive (its proof is gone from now on, where the store
        can tell). Idempotent."""


CommitListener = Callable[[], None]
EndListener = Callable[[Sequence[int] | None], None]
"""Told the ids of jobs that reached a terminal state, or None when some may have and which
is not known (another process's commits heard in bulk, a notification connection back after
being lost)."""


class Store(ABC):
    """Where jobs live. Subclasses provide the primitives (and a :class:`Tx`); callers use
    :meth:`transaction` and :meth:`at`, never the operation runners ``_run``, ``_read`` and
    ``_run_brief``, which are for those two."""

    dialect: ClassVar[str]

    def __init__(self) -> None:
        self._listeners: list[CommitListener] = []
        self._end_listeners: list[EndListener] = []
        self.resolver = Resolver()
        """How this store's operations resolve what schedule rows name (see
        :class:`~scheduler.store_types.Resolver`). A :class:`~scheduler.Scheduler` hands the
        store its own, on its registry, when it starts; until then no function is known, and
        every occurrence runs the target stored with its schedule."""
        self.system_time: Callable[[], float] = time.time
        """This machine's own wall clock, which a store whose database keeps a clock of its
        own (PostgreSQL) measures that clock against, to stamp leases by the database's (see
        :attr:`~scheduler.store_types.OpState.lease_offset`). A
        :class:`~scheduler.Scheduler` hands the store its clock's when it starts (see
        :func:`~scheduler.clock.system_time_of`)."""
        self.liveness: Liveness | None = None
        """How this store tells a gone lease holder from a live one (see :class:`Liveness`);
        None: it cannot, and a holder's leases are only ever lost when they expire."""

    @property
    def hears_others(self) -> bool:
        """Whether the commit listeners also hear the commits of other processes that
        changed pending work (PostgreSQL's LISTEN): then a process alone among the lease
        holders hears a new one register, and need not look every liveness interval."""
        return False

    @property
    def hearing(self) -> bool:
        """Whether the commit listeners hear other processes' commits right now (PostgreSQL:
        its LISTEN connection is up; a lost one wakes every listener once it is back, for
        what was missed meanwhile): then the driver needs no periodic pass to find work that
        another process made due."""
        return False

    # --- primitives ------------------------------------------------------------------------

    @abstractmethod
    async def open(self, migrations: Sequence[MigrationSet] = ()) -> None:
        """Connect, check the database, and apply the scheduler's and ``migrations``.

        A file that is not a database, or a database written by a newer schema, raises a
        :class:`~scheduler.errors.StoreError` and is left untouched. A database server that
        can't be reached for now raises :class:`~scheduler.errors.StoreUnavailable` (opening
        again later may work: nothing stays open), one that refuses the connection settings
        :class:`~scheduler.errors.StoreMisconfigured`.
        """

    @abstractmethod
    async def close(self) -> None:
        """Close every connection. Idempotent."""

    @abstractmethod
    def transaction(self, now: float) -> AbstractAsyncContextManager[Tx]:
        """A write transaction at ``now``: commits on normal exit, rolls back on an exception.

        Listeners are told after the commit if it changed pending work.
        """

    @abstractmethod
    def snapshot(self) -> AbstractAsyncContextManager[Db]:
        """Read-only SQL access for application queries, without taking the writer."""

    def at(self, now: float) -> OperationsAt:
        """The named :class:`Operations` at ``now``: each write in a transaction of its own,
        each read against a snapshot."""
        return OperationsAt(self, now)

    @abstractmethod
    async def _run(self, now: float, op: Callable[[OpState], Op[T]]) -> T:
        """Run one operation at ``now`` in its own write transaction (one round trip where
        possible), with an :class:`OpState` carrying :attr:`resolver`; tell the listeners
        after the commit if it changed pending work."""

    @abstractmethod
    async def _read(self, now: float, op: Callable[[OpState], Op[T]]) -> T:
        """Run a read-only operation at ``now`` against a consistent snapshot, without the
        writer."""

    async def _run_brief(self, now: float, op: Callable[[OpState], Op[T]]) -> T:
        """:meth:`_run` of the driver's bookkeeping (see :meth:`Operations.run_brief`); a
        store may run it another way (the SQLite store: on the event loop's own thread)."""
        return await self._run(now, op)

    def is_deterministic_error(self, exc: BaseException) -> bool:
        """Whether ``exc`` would fail the same way on every retry (a constraint violation)."""
        return False

    # --- wake-ups --------------------------------------------------------------------------

    def add_commit_listener(self, listener: CommitListener) -> None:
        """Call ``listener`` after every commit that changed pending work (and, on stores that
        can, after such commits by other processes)."""
        self._listeners.append(listener)

    def remove_commit_listener(self, listener: CommitListener) -> None:
        """Stop calling a listener :meth:`add_commit_listener` added (nothing if it is not)."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _notify(self) -> None:
        for listener in list(self._listeners):
            listener()

    def add_end_listener(self, listener: EndListener) -> None:
        """Call ``listener`` after every commit in which jobs reached a terminal state, with
        their ids (and, on stores that can, after such commits by other processes: with
        their ids, or None when which is not known)."""
        self._end_listeners.append(listener)

    def remove_end_listener(self, listener: EndListener) -> None:
        """Stop calling a listener :meth:`add_end_listener` added (nothing if it is not)."""
        if listener in self._end_listeners:
            self._end_listeners.remove(listener)

    def _tell_ended(self, job_ids: Sequence[int] | None) -> None:
        for listener in list(self._end_listeners):
            listener(job_ids)
