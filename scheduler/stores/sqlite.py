"""The embedded store: one SQLite file in WAL mode, one writer connection, one reader.

Every write goes through the single writer connection, serialized by an asyncio lock in
this process and by ``BEGIN IMMEDIATE`` (with a busy timeout) across processes, so two
processes on one file never both claim a job. Each scheduler operation runs whole inside the
connection's thread: one thread hop per operation, however many statements it issues.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar, cast

import aiosqlite

from .. import _ops
from ..abc import Cursor, Store, Tx
from ..errors import InvalidArgument, NotADatabase, SchedulerError, StoreError
from ..migrations import VERSION_TABLE, MigrationSet, check_applied, scheduler_migrations
from ..sql import Numbered, Values, positional_queries
from ..store_types import Claim, NewJob, Op, OpState, Params, Q
from ._base import (
    NestedTransactionGuard,
    ReadOnlyDb,
    migration_failed,
    quote_ident,
    settle,
    version_table_ddl,
)

# WriteRefused and refused_write are part of this module's interface (the bot uses them).
from ._sqlite_refusals import RefusedWrites
from ._sqlite_refusals import WriteRefused as WriteRefused
from ._sqlite_refusals import refused_write as refused_write

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


Queries = dict[str, Numbered]


def _json_lists(values: Values, positions: frozenset[int]) -> Values:
    """``values``, with the lists at ``positions`` as the JSON arrays ``json_each`` reads."""

    def adapted(params: Params) -> tuple[Any, ...]:
        return tuple(json.dumps(v) if i in positions else v for i, v in enumerate(values(params)))

    return adapted


@cache
def _queries() -> Queries:
    """The SQLite queries numbered ``?n`` (bound by position, faster than by name)."""
    out: Queries = {}
    for name, q in positional_queries("sqlite", "?").items():
        lists = frozenset(i for i in range(len(q.names)) if f"json_each(?{i + 1})" in q.sql)
        out[name] = Numbered(q.sql, q.names, _json_lists(q.values, lists)) if lists else q
    return out


def _drive(conn: sqlite3.Connection, queries: Queries, gen: Op[T]) -> T:
    """Run a sans-IO operation to completion on ``conn`` (called in the connection thread).
    The connection's rows are :class:`sqlite3.Row`: the operations read them by name."""
    try:
        q: Q = next(gen)
        while True:
            query = queries[q.name]
            if q.fetch == "many":
                batch = cast("Sequence[Params]", q.params)
                q = gen.send(conn.executemany(query.sql, map(query.values, batch)).rowcount)
                continue
            cur = conn.execute(query.sql, query.values(cast("Params", q.params)))
            if q.fetch == "all":
                result: Any = cur.fetchall()
            elif q.fetch == "one":
                result = cur.fetchone()
                cur.fetchall()
            else:
                result = cur.rowcount
            q = gen.send(result)
    except StopIteration as stop:
        value: T = stop.value
        return value


class _Busy(Exception):
    """Another connection holds the write lock: take the waiting path instead."""


def _in_write_tx(conn: sqlite3.Connection, queries: Queries, gen: Op[T], *, wait: bool = True) -> T:
    """Run ``gen`` in one ``BEGIN IMMEDIATE`` transaction. With ``wait=False`` a write lock
    held elsewhere raises :class:`_Busy` (the caller has set a zero busy timeout)."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if wait:
            raise
        raise _Busy from exc
    try:
        result = _drive(conn, queries, gen)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


def _in_write_tx_now(
    conn: sqlite3.Connection, queries: Queries, gen: Op[T], busy_timeout: float
) -> T:
    """``_in_write_tx`` without waiting for the write lock (raises :class:`_Busy`)."""
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        return _in_write_tx(conn, queries, gen, wait=False)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")


def _in_read_tx(conn: sqlite3.Connection, queries: Queries, gen: Op[T]) -> T:
    conn.execute("BEGIN")
    try:
        return _drive(conn, queries, gen)
    finally:
        conn.execute("COMMIT")


def _user_execute(conn: sqlite3.Connection, sql: str, params: Sequence[Any], many: bool) -> Cursor:
    cur = conn.cursor()
    cur.row_factory = sqlite3.Row
    if many:
        cur.executemany(sql, params)
        rows: list[Any] = []
    else:
        cur.execute(sql, params)
        rows = cur.fetchall()
    return Cursor(rows, cur.rowcount, cur.lastrowid)


def _next_job_id(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM scheduler_jobs").fetchone()
    return int(row[0])


def _insert_buffered(
    conn: sqlite3.Connection, queries: Queries, now: float, jobs: list[tuple[int, NewJob]]
) -> None:
    insert_job, insert_args = queries["insert_job_with_id"], queries["insert_args"]
    job_rows = [
        {
            "id": job_id,
            "fn": j.fn,
            "kind": j.kind.value,
            "next_ts": j.next_ts,
            "max_failures": j.max_failures,
            "initial_backoff": j.initial_backoff,
            "backoff_base": j.backoff_base,
            "idempotent": int(j.idempotent),
            "on_complete": j.on_complete,
            "name": j.name,
            "schedule_name": j.schedule_name,
            "fire_ts": j.fire_ts,
            "jitter": j.jitter,
            "now": now,
        }
        for job_id, j in jobs
    ]
    arg_rows = [
        {
            "job_id": job_id,
            "args": j.args_json,
            "context_type": j.context_type,
            "context": j.context,
            "callback_of": None,
        }
        for job_id, j in jobs
    ]
    conn.executemany(insert_job.sql, map(insert_job.values, job_rows))
    conn.executemany(insert_args.sql, map(insert_args.values, arg_rows))


def _after_inserts(
    conn: sqlite3.Connection,
    queries: Queries,
    now: float,
    jobs: list[tuple[int, NewJob]],
    fn: Callable[..., T],
    args: tuple[Any, ...],
) -> T:
    _insert_buffered(conn, queries, now, jobs)
    return fn(conn, *args)


class SqliteTx(Tx):
    """An open ``BEGIN IMMEDIATE`` transaction on the writer connection.

    Plain enqueues (no idempotency key, no parent) cost no round trip: their ids are
    allocated here (the transaction holds the write lock, so nobody else inserts) and the
    rows are written in one batch ahead of the transaction's next statement or its commit.
    """

    dialect = "sqlite"

    def __init__(self, store: SqliteStore, state: OpState) -> None:
        self._store = store
        self._state = state
        self._buffer: list[tuple[int, NewJob]] = []
        self._next_id: int | None = None

    @property
    def state(self) -> OpState:
        return self._state

    async def _hop(self, fn: Callable[..., T], *args: Any) -> T:
        """One round trip, preceded by the buffered inserts (in the same trip)."""
        pending, self._buffer = self._buffer, []
        self._next_id = None  # whatever runs next may insert jobs itself
        if pending:
            return await self._store._call(
                _after_inserts, self._store._queries, self._state.now, pending, fn, args
            )
        return await self._store._call(fn, *args)

    async def enqueue(self, job: NewJob) -> int:
        if job.idempotency_key is not None or job.parent_id is not None:
            return await self.run(lambda st: _ops.enqueue(st, job))
        if self._next_id is None:
            self._next_id = await self._hop(_next_job_id)
        job_id = self._next_id
        self._next_id += 1
        self._buffer.append((job_id, job))
        self._state.wake = True
        return job_id

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return await self._hop(_user_execute, sql, params, False)

    async def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Cursor:
        return await self._hop(_user_execute, sql, params, True)

    async def run(self, op: Callable[[OpState], Op[T]]) -> T:
        return await self._hop(_drive, self._store._queries, op(self._state))

    async def savepoint(self, name: str) -> None:
        await self._hop(_exec, f"SAVEPOINT {quote_ident(name)}")

    async def release(self, name: str) -> None:
        await self._hop(_exec, f"RELEASE {quote_ident(name)}")

    async def rollback_to(self, name: str) -> None:
        await self._hop(_exec, f"ROLLBACK TO {quote_ident(name)}")

    async def commit(self) -> None:
        await self._hop(_exec, "COMMIT")


def _exec(conn: sqlite3.Connection, sql: str) -> None:
    conn.execute(sql)


class SqliteReadDb(ReadOnlyDb):
    dialect = "sqlite"

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return await self._store._read_call(_user_execute, sql, params, False)


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
        self._queries = _queries()
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._checkpointer: aiosqlite.Connection | None = None
        self._checkpoint_task: asyncio.Task[None] | None = None
        self._commits = 0
        self._lock = asyncio.Lock()
        self._read_lock = asyncio.Lock()
        self._refusals = RefusedWrites(self.path)

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
        self._check_file()
        sets = [scheduler_migrations(), *migrations]
        try:
            # check_same_thread=False: claims may run on the event loop's thread (see
            # claim_due); every use of the connection is serialized by the writer lock.
            self._writer = await aiosqlite.connect(
                self.path, isolation_level=None, check_same_thread=False
            )
            await self._call(self._sync_open, sets)
            self._reader = await aiosqlite.connect(self.path, isolation_level=None)
            await _in_thread(self._reader, self._sync_open_reader)
            self._checkpointer = await aiosqlite.connect(self.path, isolation_level=None)
            await _in_thread(self._checkpointer, self._sync_open_reader)
        except sqlite3.DatabaseError as exc:
            await self.close()
            raise StoreError(
                f"cannot use {self.path} as a database: {exc}. The file was not repaired or "
                f"changed; restore it from a backup or point the store at another file."
            ) from exc
        except BaseException:
            await self.close()
            raise

    def _sync_open(self, conn: sqlite3.Connection, sets: list[MigrationSet]) -> None:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        # Read-only checks first: a database we must refuse is left exactly as it was.
        # A damaged file is refused before anything reads or writes it, not found out later
        # by whichever query first touches the bad page (quick_check reads every page once:
        # about 0.1 s per 100 MB from the page cache).
        problems = [str(r[0]) for r in conn.execute("PRAGMA quick_check(3)").fetchall()]
        if problems != ["ok"]:
            found = " ".join(" ".join(problems).replace("*** in database main ***", "").split())
            raise sqlite3.DatabaseError(f"the file is damaged ({found})")
        pending = [
            (s, check_applied(s.load("sqlite"), self._applied(conn, s.component), str(self.path)))
            for s in sets
        ]
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreError(f"{self.path}: could not switch to WAL mode (got {mode!r})")
        conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        # Commits never stop to checkpoint the WAL (a stall of up to tens of milliseconds on
        # a busy disk); a separate connection does it in the background (see _committed).
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute(version_table_ddl("REAL"))
        for _set, todo in pending:
            for m in todo:
                script = (
                    "BEGIN IMMEDIATE;\n"
                    f"INSERT INTO {VERSION_TABLE} (component, version, name, checksum, applied_at) "
                    f"VALUES ('{m.component}', {m.version}, '{m.name}', '{m.checksum}', "
                    f"{time.time()!r});\n"
                    f"{m.sql}\n;\nCOMMIT;"
                )
                try:
                    conn.executescript(script)
                except sqlite3.Error as exc:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    if m.version in self._applied(conn, m.component):
                        continue  # another process applied it first
                    raise migration_failed(str(self.path), m, exc) from exc

    @staticmethod
    def _applied(conn: sqlite3.Connection, component: str) -> dict[int, str]:
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (VERSION_TABLE,)
        ).fetchone()
        if not exists:
            return {}
        rows = conn.execute(
            f"SELECT version, checksum FROM {VERSION_TABLE} WHERE component = ?", (component,)
        ).fetchall()
        return {int(v): str(c) for v, c in rows}

    def _sync_open_reader(self, conn: sqlite3.Connection) -> None:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        conn.execute("PRAGMA query_only = ON")

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
            await _in_thread(conn, _exec, "PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:  # busy or closing: the next one will do
            log.debug("background checkpoint skipped: %s", exc)

    async def close(self) -> None:
        if self._checkpoint_task is not None:
            await asyncio.gather(self._checkpoint_task, return_exceptions=True)
            self._checkpoint_task = None
        if self._writer is not None:
            with contextlib.suppress(sqlite3.Error, ValueError):
                await _in_thread(self._writer, _exec, "PRAGMA wal_checkpoint(TRUNCATE)")
        for name in ("_checkpointer", "_reader", "_writer"):
            conn = getattr(self, name)
            setattr(self, name, None)
            if conn is not None:
                await conn.close()

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
        async with self._read_lock:
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
            async with self._lock:
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

    async def run(self, op: Callable[[OpState], Op[T]], now: float) -> T:
        state = OpState(now)
        async with self._writer_held():
            result: T = await self._call(_in_write_tx, self._queries, op(state))
        self._committed()
        if state.wake:
            self._notify()
        return result

    async def claim_due(
        self, now: float, lease_until: float, *, mutation_limit: int, action_limit: int
    ) -> Claim:
        """As :meth:`Store.claim_due`, run on the event loop's own thread when the write lock
        can be had at once: a claim is a few indexed statements (a fraction of a
        millisecond), while two thread switches to and from the connection's thread cost
        more, and on a busy machine much more, which is the lateness of every due job.
        When another process holds the database's write lock, it waits in the thread."""
        state = OpState(now)
        op = _ops.claim_due(state, lease_until, mutation_limit, action_limit)
        async with self._writer_held():
            writer = self._writer
            if writer is None:
                raise SchedulerError(f"{self!r} is not open")
            conn = writer._conn
            try:
                claim: Claim = _in_write_tx_now(conn, self._queries, op, self.busy_timeout)
            except _Busy:
                claim = await self._call(
                    _in_write_tx,
                    self._queries,
                    _ops.claim_due(state, lease_until, mutation_limit, action_limit),
                )
        self._committed()
        if state.wake:
            self._notify()
        return claim

    async def read(self, op: Callable[[OpState], Op[T]], now: float) -> T:
        return await self._read_call(_in_read_tx, self._queries, op(OpState(now)))

    @asynccontextmanager
    async def transaction(self, now: float) -> AsyncIterator[SqliteTx]:
        state = OpState(now)
        async with self._writer_held():
            try:
                await self._call(_exec, "BEGIN IMMEDIATE")
                tx = SqliteTx(self, state)
                yield tx
            except BaseException:
                await self._call(_rollback)
                raise
            try:
                await tx.commit()
            except BaseException:
                await self._call(_rollback)
                raise
        self._committed()
        if state.wake:
            self._notify()

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[SqliteReadDb]:
        yield SqliteReadDb(self)

    def is_deterministic_error(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.IntegrityError)


async def _in_thread(conn: aiosqlite.Connection, fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(sqlite_connection, *args)`` in aiosqlite's connection thread: one hop.

    aiosqlite runs every call this way internally but only exposes one statement per call;
    an operation of several statements would cost a hop each, so this uses that same
    primitive (``Connection._execute``) for a whole operation. The test suite checks it is
    still there, so an aiosqlite upgrade that removes it fails loudly.
    """
    result: T = await conn._execute(fn, conn._conn, *args)  # type: ignore[no-untyped-call]
    return result


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")
