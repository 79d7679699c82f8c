"""The embedded store: one SQLite file in WAL mode, one writer connection, one reader.

Every write goes through the single writer connection, serialized in this process by a
:class:`~scheduler._lanes.Lanes` gate (interactive transactions take it before queued bulk
ones) and by ``BEGIN IMMEDIATE`` (with a busy timeout) across processes, so two processes
on one file never both claim a job. Reads share one reader connection, through a gate of
the same kind. Each scheduler operation runs whole inside the
connection's thread: one thread hop per operation, however many statements it issues (the
plain :mod:`sqlite3` functions that run there are in :mod:`scheduler.stores._sqlite_thread`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

import aiosqlite

from .._lanes import Lanes
from .._ops import jobs
from ..abc import Cursor, Store, Tx
from ..errors import InvalidArgument, NotADatabase, SchedulerError, StoreError
from ..migrations import MigrationSet, scheduler_migrations
from ..store_types import NewJob, Op, OpState
from . import _process_liveness as process_liveness
from . import _sqlite_verified
from ._base import NestedTransactionGuard, ReadOnlyDb, quote_ident, settle
from ._process_liveness import ProcessLiveness

# WriteRefused and refused_write are part of this module's interface (the bot uses them).
from ._sqlite_refusals import RefusedWrites
from ._sqlite_refusals import WriteRefused as WriteRefused
from ._sqlite_refusals import refused_write as refused_write
from ._sqlite_thread import (
    WriterBusy,
    after_inserts,
    begin_then,
    drive,
    in_read_tx,
    in_write_tx,
    in_write_tx_now,
    next_job_id,
    numbered_queries,
    open_reader,
    open_writer,
    rollback_if_open,
    run_sql,
    user_execute,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence

T = TypeVar("T")

_HEADER = b"SQLite format 3\x00"
CHECKPOINT_EVERY = 256
log = logging.getLogger("scheduler.sqlite")
Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]

# The store whose writer the current task holds, to turn a nested transaction (which would
# wait for itself forever) into a clear error.
_nested = NestedTransactionGuard(
    "scheduler_sqlite_writer", "it would wait for itself", per_task=False
)


class SqliteTx(Tx):
    """A ``BEGIN IMMEDIATE`` transaction on the writer connection (this process's writer
    lock is held for its whole life).

    The ``BEGIN`` travels with the transaction's first statement, in the same round trip
    to the connection's thread (one hop fewer per transaction; a transaction that runs no
    statement costs none). Plain enqueues (no idempotency key, no parent) cost no round trip
    of their own: their ids are allocated here (the transaction holds the write lock, so
    nobody else inserts) and the rows are written in one batch ahead of the transaction's
    next statement or its commit.
    """

    dialect = "sqlite"

    def __init__(self, store: SqliteStore, state: OpState) -> None:
        self._store = store
        self._state = state
        self._buffer: list[tuple[int, NewJob]] = []
        self._next_id: int | None = None
        self.begun = False
        """Whether ``BEGIN IMMEDIATE`` has run (with the first statement)."""

    @property
    def state(self) -> OpState:
        return self._state

    async def _hop(self, fn: Callable[..., T], *args: Any) -> T:
        """One round trip, preceded by the ``BEGIN`` (the first time) and the buffered
        inserts (in the same trip)."""
        pending, self._buffer = self._buffer, []
        self._next_id = None  # whatever runs next may insert jobs itself
        if pending:
            args = (self._store._queries, self._state.now, pending, fn, args)
            fn = after_inserts
        if not self.begun:
            self.begun = True  # from here on a failure rolls back whatever did begin
            return await self._store._call(begin_then, fn, args)
        return await self._store._call(fn, *args)

    async def enqueue(self, job: NewJob) -> int:
        if job.idempotency_key is not None or job.parent_id is not None:
            return await self.run(lambda st: jobs.enqueue(st, job))
        if self._next_id is None:
            self._next_id = await self._hop(next_job_id)
        job_id = self._next_id
        self._next_id += 1
        self._buffer.append((job_id, job))
        self._state.wake = True
        return job_id

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return await self._hop(user_execute, sql, params, False)

    async def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Cursor:
        return await self._hop(user_execute, sql, params, True)

    async def run(self, op: Callable[[OpState], Op[T]]) -> T:
        return await self._hop(drive, self._store._queries, op(self._state))

    async def savepoint(self, name: str) -> None:
        await self._hop(run_sql, f"SAVEPOINT {quote_ident(name)}")

    async def release(self, name: str) -> None:
        await self._hop(run_sql, f"RELEASE {quote_ident(name)}")

    async def rollback_to(self, name: str) -> None:
        await self._hop(run_sql, f"ROLLBACK TO {quote_ident(name)}")

    async def commit(self) -> None:
        if self.begun or self._buffer:
            await self._hop(run_sql, "COMMIT")


class SqliteReadDb(ReadOnlyDb):
    dialect = "sqlite"

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return await self._store._read_call(user_execute, sql, params, False)


class SqliteStore(Store):
    """SQLite in WAL mode. ``path`` is a file (created with its folder if missing).

    ``synchronous`` is SQLite's durability setting: ``NORMAL`` (the default) in WAL mode
    survives a killed process (kill -9) without losing a committed transaction; only a power
    loss can roll back the last commits. Use ``FULL`` to survive that too, at a cost.
    """

    dialect: ClassVar[str] = "sqlite"

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Synchronous = "NORMAL",
        busy_timeout: float = 10.0,
    ) -> None:
        super().__init__()
        if str(path) == ":memory:" or str(path).startswith("file:"):
            raise InvalidArgument(
                "SqliteStore needs a file path (the writer and reader share it); "
                "use a temporary file for throwaway databases"
            )
        if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise InvalidArgument(
                f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}"
            )
        self.path = Path(path)
        self.synchronous = synchronous
        self.busy_timeout = busy_timeout
        self._queries = numbered_queries()
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._checkpointer: aiosqlite.Connection | None = None
        self._checkpoint_task: asyncio.Task[None] | None = None
        self._commits = 0
        self._opened = False
        """Whether ``open`` finished (so a clean close may mark the file as left sound)."""
        # The writer and the reader, each handed out interactive work first (see _lanes).
        self._lock = Lanes(1)
        self._read_lock = Lanes(1)
        self._refusals = RefusedWrites(self.path)
        # One machine by definition: a holder is its process (see _process_liveness).
        self.liveness = ProcessLiveness() if process_liveness.available() else None

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    @property
    def write_problem(self) -> str | None:
        """While the database's files cannot be written (see :class:`WriteRefused`): why."""
        return self._refusals.problem

    # --- opening -----------------------------------------------------------------------------

    def _check_file(self) -> None:
        if self.path.is_dir():
            raise NotADatabase(f"{self.path} is a directory, not a database file")
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return
        with self.path.open("rb") as f:
            header = f.read(len(_HEADER))
        if header and header != _HEADER:
            raise NotADatabase(
                f"{self.path} is not a SQLite database (its header is wrong); it was left "
                f"untouched. Point the store at a new file or restore the right one."
            )

    async def open(self, migrations: Sequence[MigrationSet] = ()) -> None:
        """Open the file (see :meth:`Store.open`). Every page is checked with ``PRAGMA
        quick_check`` first, unless the file is exactly as a store left it at a clean close
        (see :mod:`scheduler.stores._sqlite_verified`): a restart of a large database then
        costs no read of all of it, and any file changed since, or never closed cleanly, is
        checked in full."""
        self._check_file()
        sets = [scheduler_migrations(), *migrations]
        check_pages = not _sqlite_verified.as_left(self.path)
        try:
            # check_same_thread=False: claims may run on the event loop's thread (see
            # _run_brief); every use of the connection is serialized by the writer lock.
            self._writer = await aiosqlite.connect(
                self.path, isolation_level=None, check_same_thread=False
            )
            await self._open_writer(sets, check_pages)
            _sqlite_verified.forget(self.path)  # open now: it may change, or be left half-done
            self._opened = True
            self._reader = await aiosqlite.connect(self.path, isolation_level=None)
            await _in_thread(self._reader, open_reader, self.busy_timeout)
            self._checkpointer = await aiosqlite.connect(self.path, isolation_level=None)
            await _in_thread(self._checkpointer, open_reader, self.busy_timeout)
        except sqlite3.DatabaseError as exc:
            await self.close()
            raise StoreError(
                f"cannot use {self.path} as a database: {exc}. The file was not repaired or "
                f"changed; restore it from a backup or point the store at another file."
            ) from exc
        except BaseException:
            await self.close()
            raise

    async def _open_writer(self, sets: list[MigrationSet], check_pages: bool) -> None:
        """``open_writer`` in the writer's thread, tried again while the file is busy for
        up to the busy timeout. Several processes opening one new file at once race its
        switch to WAL mode, and a read then may be refused as busy without SQLite's busy
        handler waiting for it; every step of ``open_writer`` is a read or a whole
        transaction, so running it again is safe."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.busy_timeout
        delay = 0.01
        while True:
            try:
                await self._call(
                    open_writer, sets, self.path, self.synchronous, self.busy_timeout, check_pages
                )
                return
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or loop.time() + delay > deadline:
                    raise
                log.debug("%s is busy at open (%s); trying again", self.path, exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    def _committed(self) -> None:
        """Count commits; every ``CHECKPOINT_EVERY`` start a PASSIVE checkpoint on the
        checkpoint connection, off the writer's path (it copies WAL frames into the database
        without blocking writers or readers)."""
        self._commits += 1
        if self._commits % CHECKPOINT_EVERY or self._checkpointer is None:
            return
        if self._checkpoint_task is None or self._checkpoint_task.done():
            self._checkpoint_task = asyncio.create_task(self._checkpoint())

    async def _checkpoint(self) -> None:
        conn = self._checkpointer
        if conn is None:
            return
        try:
            await _in_thread(conn, run_sql, "PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:  # busy or closing: the next one will do
            log.debug("background checkpoint skipped: %s", exc)

    async def close(self) -> None:
        if self._checkpoint_task is not None:
            await asyncio.gather(self._checkpoint_task, return_exceptions=True)
            self._checkpoint_task = None
        clean = False
        if self._writer is not None:
            with contextlib.suppress(sqlite3.Error, ValueError):
                await _in_thread(self._writer, run_sql, "PRAGMA wal_checkpoint(TRUNCATE)")
                clean = self._opened
        for name in ("_checkpointer", "_reader", "_writer"):
            conn = getattr(self, name)
            setattr(self, name, None)
            if conn is not None:
                await conn.close()
        self._opened = False
        if clean:
            _sqlite_verified.mark(self.path)

    # --- calls into the connection threads -----------------------------------------------------

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` in the writer's thread. If the caller is cancelled, wait for
        the call to finish before re-raising, so the connection's state is always known."""
        conn = self._writer
        if conn is None:
            raise SchedulerError(f"{self!r} is not open")
        return await settle(_in_thread(conn, fn, *args))

    async def _read_call(self, fn: Callable[..., T], *args: Any) -> T:
        conn = self._reader
        if conn is None:
            raise SchedulerError(f"{self!r} is not open")
        async with self._read_lock.held():
            return await settle(_in_thread(conn, fn, *args))

    # --- writes the disk refuses (see _sqlite_refusals) -----------------------------------------

    def _changes(self) -> int:
        """Rows the writer connection has changed so far (read under the writer lock)."""
        writer = self._writer
        return -1 if writer is None else writer._conn.total_changes

    # --- transactions ----------------------------------------------------------------------------

    @asynccontextmanager
    async def _writer_held(self) -> AsyncIterator[None]:
        """Hold the writer for one write operation; a write the disk refuses comes out of it
        as :class:`WriteRefused` (said once), and the first write that changes rows after
        such refusals says once that writes work again."""
        token = _nested.enter(self)
        try:
            async with self._lock.held():
                before = self._changes()
                try:
                    yield
                except sqlite3.Error as exc:
                    refused = self._refusals.refusal(exc)
                    if refused is None:
                        raise
                    raise refused from exc
                else:
                    self._refusals.wrote(self._changes() != before)
        finally:
            _nested.leave(token)

    async def _run(self, now: float, op: Callable[[OpState], Op[T]]) -> T:
        state = OpState(now, self.resolver)
        async with self._writer_held():
            result: T = await self._call(in_write_tx, self._queries, op(state))
        self._committed()
        if state.wake:
            self._notify()
        if state.ended is not None:
            self._tell_ended(state.ended)
        return result

    async def _run_brief(self, now: float, op: Callable[[OpState], Op[T]]) -> T:
        """Run the driver's bookkeeping ``op`` (a claim, a batch of completions: a few
        indexed statements, a fraction of a millisecond) on the event loop's own thread
        when the write lock can be had at once. A hop to the connection's thread and back
        costs more than that: two thread switches, each of which may wait for the GIL's
        switch interval while the loop is busy, which on a busy machine is the lateness of
        every due job. When another process holds the database's write lock, the op waits
        for it in the thread instead."""
        state = OpState(now, self.resolver)
        async with self._writer_held():
            writer = self._writer
            if writer is None:
                raise SchedulerError(f"{self!r} is not open")
            try:
                result = in_write_tx_now(writer._conn, self._queries, op(state), self.busy_timeout)
            except WriterBusy:
                state = OpState(now, self.resolver)
                result = await self._call(in_write_tx, self._queries, op(state))
        self._committed()
        if state.wake:
            self._notify()
        if state.ended is not None:
            self._tell_ended(state.ended)
        return result

    async def _read(self, now: float, op: Callable[[OpState], Op[T]]) -> T:
        return await self._read_call(in_read_tx, self._queries, op(OpState(now, self.resolver)))

    @asynccontextmanager
    async def transaction(self, now: float) -> AsyncIterator[SqliteTx]:
        state = OpState(now, self.resolver)
        async with self._writer_held():
            tx = SqliteTx(self, state)
            try:
                yield tx
            except BaseException:
                if tx.begun:
                    await self._call(rollback_if_open)
                raise
            try:
                await tx.commit()
            except BaseException:
                if tx.begun:
                    await self._call(rollback_if_open)
                raise
        self._committed()
        if state.wake:
            self._notify()
        if state.ended is not None:
            self._tell_ended(state.ended)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[SqliteReadDb]:
        yield SqliteReadDb(self)

    def is_deterministic_error(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.IntegrityError)


def _busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused because another connection holds a lock (SQLITE_BUSY or
    SQLITE_LOCKED and their extended codes)."""
    return exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


async def _in_thread(conn: aiosqlite.Connection, fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(sqlite_connection, *args)`` in aiosqlite's connection thread: one hop.

    aiosqlite runs every call this way internally but only exposes one statement per call;
    an operation of several statements would cost a hop each, so this uses that same
    primitive (``Connection._execute``) for a whole operation. The test suite checks it is
    still there, so an aiosqlite upgrade that removes it fails loudly.
    """
    result: T = await conn._execute(fn, conn._conn, *args)  # type: ignore[no-untyped-call]
    return result
