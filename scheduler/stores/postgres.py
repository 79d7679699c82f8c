"""The multi-instance store: PostgreSQL through an asyncpg connection pool.

Any number of processes share one database. Claims lock the rows they take with
``FOR UPDATE SKIP LOCKED``, so concurrent claimers get disjoint batches without waiting for
each other; completions, lease extensions and reclaims are fenced by state and run count.
A commit that changed pending work sends ``NOTIFY`` on a channel inside its transaction (and
one in which jobs ended, their ids, for whoever awaits their results), and
every store keeps one dedicated ``LISTEN`` connection (outside the pool) that wakes its
drivers when another process commits such work; if that connection is lost it is
re-established in the background with backoff, while the driver's lease sweep keeps work
moving. Local commits wake local listeners at once, without waiting for the round trip.

Leases, heartbeats, the sweep's expiry test, named leases, pace slots and once keys are
stamped and compared on the database's clock, whatever the clocks of the processes sharing
it say: the store measures how far the database's clock is ahead of its machine's and
corrects those stamps by it (:mod:`scheduler.stores._pg_clock`); due times are the
application's.

A process that holds leases proves it is alive with a session of its own holding an
advisory lock (:mod:`scheduler.stores._pg_holder`): once that session has ended, the other
processes take its leases at once (see :mod:`scheduler._holders`).

Every transaction runs at READ COMMITTED (what the claim query's ``SKIP LOCKED`` is written
for); ``read`` runs in a read-only REPEATABLE READ transaction. Application SQL
(``ctx.db.execute``) uses ``?`` placeholders as on SQLite; they are rewritten to ``$n``
(:mod:`scheduler.stores._pg_connection` runs it; the migrations are in ``_pg_migrations``).

Unlike SQLite, PostgreSQL aborts the whole transaction when a statement fails: only a
``ROLLBACK TO SAVEPOINT`` (what the driver does around each mutation) makes it usable again.
A transaction left aborted is rolled back at the end and reported with a
:class:`~scheduler.errors.StoreError` rather than silently dropped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
import ssl
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

try:
    import asyncpg
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "PostgresStore needs asyncpg: pip install 'crier-scheduler[postgres]' "
        "(or pip install asyncpg)"
    ) from exc

from .._lanes import Lanes
from ..abc import Cursor, Store, Tx
from ..errors import (
    InvalidArgument,
    SchedulerError,
    StoreError,
    StoreMisconfigured,
    StoreUnavailable,
)
from ..migrations import MigrationSet, scheduler_migrations
from ..sql import Numbered, positional_queries
from ..sql.placeholders import translate_placeholders
from ..store_types import Op, OpState, Params, Q
from ._base import NestedTransactionGuard, ReadOnlyDb, quote_ident, redact_dsn, settle
from ._pg_clock import OPEN_SAMPLES, DatabaseClock
from ._pg_connection import abort, user_execute, user_params
from ._pg_connection import rowcount as rowcount  # part of this module's interface (tests read it)
from ._pg_holder import SessionLiveness
from ._pg_listener import WakeListener, ended_payload
from ._pg_migrations import migrate

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence

T = TypeVar("T")

log = logging.getLogger("scheduler.postgres")

# asyncpg ships no type information: its connections are ``Any`` here.
Connection = Any

DEFAULT_CHANNEL = "scheduler_wake"
_CHANNEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")

# asyncpg 0.30 lets a pool skip its session reset (RESET ALL, UNLISTEN *, ... on every
# release: about half the cost of a short operation). Older versions always reset.
_CAN_SKIP_RESET = hasattr(asyncpg.Connection, "get_reset_query")

# The store whose write transaction the current task holds, to turn a nested transaction
# (a second connection, committing on its own, or a deadlock on the first one's row locks)
# into a clear error. The task is recorded too: a task started inside a transaction inherits
# this context but is free to open transactions of its own.
_nested = NestedTransactionGuard(
    "scheduler_postgres_writer",
    "it would commit separately, or wait for the first one's locks forever",
    per_task=True,
)


# --- transactions and read access ----------------------------------------------------------


def jsonb_parameters(queries: dict[str, Numbered]) -> dict[str, frozenset[int]]:
    """For each query that takes ``$n::jsonb`` parameters, their positions: those values
    (lists, as the SQLite store hands them to ``json_each``) are sent as JSON text."""
    out: dict[str, frozenset[int]] = {}
    for name, q in queries.items():
        at = frozenset(i for i in range(len(q.names)) if f"${i + 1}::jsonb" in q.sql)
        if at:
            out[name] = at
    return out


class PostgresTx(Tx):
    """An open READ COMMITTED write transaction on one pooled connection."""

    dialect = "postgres"

    def __init__(self, store: PostgresStore, conn: Connection, state: OpState) -> None:
        self._store = store
        self._conn = conn
        self._state = state

    @property
    def state(self) -> OpState:
        return self._state

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        self._store._touched(self._conn)
        return await self._store._user_execute(self._conn, sql, params)

    async def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Cursor:
        """Run ``sql`` once per parameter row, pipelined; ``rowcount`` is -1 (PostgreSQL's
        batch protocol reports no total)."""
        rows = [user_params(p) for p in params]
        self._store._touched(self._conn)
        await self._conn.executemany(translate_placeholders(sql), rows)
        return Cursor([], -1)

    async def run(self, op: Callable[[OpState], Op[T]]) -> T:
        return await self._store._drive(self._conn, op(self._state))

    async def savepoint(self, name: str) -> None:
        await self._conn.execute(f"SAVEPOINT {quote_ident(name)}")

    async def release(self, name: str) -> None:
        await self._conn.execute(f"RELEASE SAVEPOINT {quote_ident(name)}")

    async def rollback_to(self, name: str) -> None:
        await self._conn.execute(f"ROLLBACK TO SAVEPOINT {quote_ident(name)}")


class PostgresReadDb(ReadOnlyDb):
    """A read-only READ COMMITTED transaction: each statement sees the latest commit."""

    dialect = "postgres"

    def __init__(self, store: PostgresStore, conn: Connection) -> None:
        self._store = store
        self._conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        self._store._touched(self._conn)
        return await self._store._user_execute(self._conn, sql, params)


async def migrate_connection(conn: Any, migrations: Sequence[MigrationSet] = ()) -> None:
    """Apply the scheduler's migrations and ``migrations`` on the asyncpg connection
    ``conn``, as :meth:`PostgresStore.open` does. Inside a transaction of the caller's, each
    migration's own transaction is a savepoint of it: a caller that rolls back (a tool that
    creates the schema and fills it in one transaction, say) leaves no table behind."""
    await migrate(conn, [s.load("postgres") for s in (scheduler_migrations(), *migrations)])


# --- the store -------------------------------------------------------------------------------

_UNAVAILABLE_CLASSES = ("08", "57")
"""SQLSTATE classes of a server that can't take the connection now: connection exceptions
(lost while connecting) and operator intervention (starting up, shutting down)."""
_UNAVAILABLE_STATES = frozenset({"3D000", "53300"})
"""The database does not exist (yet); the server has no connection slot left."""
_MISCONFIGURED_STATES = frozenset({"42501"})
"""Not allowed to connect to this database (its CONNECT privilege)."""


def connect_failure(exc: BaseException) -> type[StoreError]:
    """The :class:`StoreError` a failure to connect is: :class:`StoreUnavailable` when the
    same settings may work later (refused, reset or timed out, a host name that did not
    resolve, a server starting up or full, a database not created yet),
    :class:`StoreMisconfigured` when the settings themselves are refused (a password, a role,
    an access rule, a certificate, an address or option it cannot use)."""
    if isinstance(exc, ssl.SSLError):  # an OSError, but no network trouble
        return StoreMisconfigured
    if isinstance(exc, OSError | TimeoutError):
        return StoreUnavailable
    if isinstance(exc, asyncpg.PostgresError):
        state = exc.sqlstate or ""
        if state in _UNAVAILABLE_STATES or state[:2] in _UNAVAILABLE_CLASSES:
            return StoreUnavailable
        if state[:2] == "28" or state in _MISCONFIGURED_STATES:  # invalid authorization
            return StoreMisconfigured
        return StoreError
    if isinstance(exc, asyncpg.InterfaceError | ValueError):  # a DSN or option it can't use
        return StoreMisconfigured
    return StoreError


class PostgresStore(Store):
    """PostgreSQL through an asyncpg pool of ``min_size``..``max_size`` connections, plus one
    dedicated LISTEN connection when ``listen`` is true (turn it off for tools that never run
    a driver).

    ``channel`` is the NOTIFY channel shared by every process of a deployment. The LISTEN
    connection and the holder session's are watched by TCP keepalive (probes after
    ``listen_check_interval`` seconds of silence; no query, so an idle process costs the
    database no transactions for them) and, once lost, re-established with exponential
    backoff up to ``listen_retry_max`` seconds. The offset of the database's
    clock from this machine's, which leases are corrected by, is measured at open and again
    every ``clock_check_interval`` seconds (and at once after this machine's clock stepped).
    Other keyword arguments go
    to :func:`asyncpg.connect` for every connection (``ssl``, ``server_settings``, ...).

    Behind a connection pooler, use session pooling: LISTEN and prepared statements need a
    session of their own.
    """

    dialect: ClassVar[str] = "postgres"

    def __init__(
        self,
        dsn: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        channel: str = DEFAULT_CHANNEL,
        listen: bool = True,
        listen_check_interval: float = 30.0,
        listen_retry_max: float = 30.0,
        clock_check_interval: float = 30.0,
        close_timeout: float = 10.0,
        application_name: str = "scheduler",
        **connect_kwargs: Any,
    ) -> None:
        super().__init__()
        if not isinstance(dsn, str) or not dsn:
            raise InvalidArgument(f"dsn must be a PostgreSQL connection string, got {dsn!r}")
        if not isinstance(min_size, int) or not isinstance(max_size, int):
            raise InvalidArgument("min_size and max_size must be ints")
        if min_size < 0 or max_size < 1 or min_size > max_size:
            raise InvalidArgument(
                f"need 0 <= min_size <= max_size and max_size >= 1, got {min_size}, {max_size}"
            )
        if not isinstance(channel, str) or not _CHANNEL.fullmatch(channel):
            raise InvalidArgument(
                f"channel must be a plain identifier (letters, digits, _; at most 63), "
                f"got {channel!r}"
            )
        for label, value in (
            ("listen_check_interval", listen_check_interval),
            ("listen_retry_max", listen_retry_max),
            ("clock_check_interval", clock_check_interval),
            ("close_timeout", close_timeout),
        ):
            if not value > 0:
                raise InvalidArgument(f"{label} must be positive, got {value!r}")
        self.dsn = dsn
        self.min_size = min_size
        self.max_size = max_size
        self.channel = channel
        self.listen = listen
        self.listen_check_interval = float(listen_check_interval)
        self.listen_retry_max = float(listen_retry_max)
        self.close_timeout = float(close_timeout)
        self.application_name = application_name
        self._connect_kwargs = connect_kwargs
        self._db_clock = DatabaseClock(float(clock_check_interval))
        self._queries = positional_queries("postgres")
        self._json_params = jsonb_parameters(self._queries)
        # Tags this store's NOTIFYs, so its own commits (already announced locally) are not
        # announced twice when they come back through LISTEN.
        self._token = secrets.token_hex(8)
        # The wake-up and the commit in one round trip (a simple-protocol script). Both
        # strings are checked above (an identifier, hex digits): nothing here is user data.
        self._notify_and_commit = f"SELECT pg_notify('{channel}', '{self._token}'); COMMIT"
        self._pool: Any = None
        self._lanes = Lanes(max_size)
        self._listener = WakeListener(
            self,
            self._connect_listener,
            channel,
            self._token,
            self._notify,
            self._tell_ended,
            check_interval=self.listen_check_interval,
            retry_max=self.listen_retry_max,
            close_timeout=self.close_timeout,
        )
        self.holder_session = SessionLiveness(
            self._connect_holder,
            self._acquire,
            check_interval=self.listen_check_interval,
            close_timeout=self.close_timeout,
        )
        """The session that proves this process alive as a lease holder (see
        :mod:`scheduler.stores._pg_holder`)."""
        self.liveness = self.holder_session
        # Server pids of pooled connections that ran application SQL: only those get the
        # full session reset when they go back to the pool (the scheduler's own operations
        # leave nothing behind: they always end their transaction).
        self._touched_pids: set[int] = set()
        # Application SQL (translated) -> whether it returns rows; see _user_execute.
        self._returns_rows: dict[str, bool] = {}

    def __repr__(self) -> str:
        return f"PostgresStore({redact_dsn(self.dsn)!r})"

    @property
    def hears_others(self) -> bool:
        return self.listen

    @property
    def hearing(self) -> bool:
        return self.listen and self._listener.conn is not None

    def _kwargs(self, application_name: str) -> dict[str, Any]:
        kwargs = dict(self._connect_kwargs)
        settings = {"application_name": application_name, **kwargs.pop("server_settings", {})}
        kwargs["server_settings"] = settings
        return kwargs

    # --- opening -----------------------------------------------------------------------------

    async def open(self, migrations: Sequence[MigrationSet] = ()) -> None:
        if self._pool is not None:
            raise SchedulerError(f"{self!r} is already open")
        # Read every migration file before touching the database.
        loaded = [s.load("postgres") for s in (scheduler_migrations(), *migrations)]
        try:
            pool_kwargs = self._kwargs(self.application_name)
            if _CAN_SKIP_RESET:
                pool_kwargs["reset"] = self._reset_session
            self._pool = await asyncpg.create_pool(
                self.dsn, min_size=self.min_size, max_size=self.max_size, **pool_kwargs
            )
        except (
            OSError,
            TimeoutError,
            ValueError,
            asyncpg.PostgresError,
            asyncpg.InterfaceError,
        ) as exc:
            raise connect_failure(exc)(f"cannot connect to {self!r}: {exc}") from exc
        try:
            async with self._pool.acquire() as conn:
                self._touched(conn)  # migrations are application SQL too
                await migrate(conn, loaded)
                await self._db_clock.measure(conn, self.system_time, OPEN_SAMPLES)
            if self.listen:
                await self._listener.start()
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        await self.holder_session.close()
        await self._listener.close()
        pool, self._pool = self._pool, None
        if pool is not None:
            try:
                await asyncio.wait_for(pool.close(), self.close_timeout)
            except TimeoutError:
                log.warning(
                    "%r: connections still in use after %.0fs; terminating them",
                    self,
                    self.close_timeout,
                )
                pool.terminate()

    async def _user_execute(self, conn: Connection, sql: str, params: Sequence[Any]) -> Cursor:
        """Run application SQL (see :func:`user_execute`), with this store's statement shapes."""
        return await user_execute(conn, sql, params, self._returns_rows)

    def _touched(self, conn: Connection) -> None:
        if _CAN_SKIP_RESET:
            self._touched_pids.add(conn.get_server_pid())

    async def _reset_session(self, conn: Connection) -> None:
        """The pool's reset on release: a connection that ran application SQL (which may
        have SET a variable, taken a session advisory lock, LISTENed) gets asyncpg's full
        reset; one that only ran the scheduler's own queries needs none."""
        pid = conn.get_server_pid()
        if pid in self._touched_pids:
            self._touched_pids.discard(pid)
            query = conn.get_reset_query()
            if query:
                await conn.execute(query)

    @property
    def clock_offset(self) -> float:
        """Seconds the database's clock is ahead of this machine's (negative: behind), as
        last measured: what leases and the other coordination stamps are corrected by."""
        return self._db_clock.offset

    async def _lease_offset(self, conn: Connection) -> float:
        """The offset to stamp leases with, measured again on ``conn`` first when due."""
        if self._db_clock.due(self.system_time):
            return await self._db_clock.measure(conn, self.system_time)
        return self._db_clock.offset

    # --- the LISTEN connection (see _pg_listener) -------------------------------------------

    async def _connect_listener(self) -> Connection:
        return await asyncpg.connect(self.dsn, **self._kwargs(f"{self.application_name}-listen"))

    async def _connect_holder(self) -> Connection:
        """The connection whose session proves this process alive (see ``_pg_holder``)."""
        return await asyncpg.connect(self.dsn, **self._kwargs(f"{self.application_name}-holder"))

    # --- running operations ------------------------------------------------------------------

    @asynccontextmanager
    async def _acquire(self) -> AsyncIterator[Connection]:
        """A pooled connection, interactive work served first (see scheduler._lanes): the
        gate holds as many permits as the pool has connections, so the pool never queues
        anyone itself."""
        if self._pool is None:
            raise SchedulerError(f"{self!r} is not open")
        async with self._lanes.held(), self._pool.acquire() as conn:
            yield conn

    async def _drive(self, conn: Connection, gen: Op[T]) -> T:
        """Run a sans-IO operation to completion on ``conn``, one await per query."""
        try:
            q: Q = next(gen)
            while True:
                result = await self._query(conn, q)
                q = gen.send(result)
        except StopIteration as stop:
            value: T = stop.value
            return value
        finally:
            gen.close()

    async def _query(self, conn: Connection, q: Q) -> Any:
        query = self._queries[q.name]
        sql = query.sql
        if q.fetch == "many":
            batch = cast("Sequence[Params]", q.params)
            await conn.executemany(sql, list(map(query.values, batch)))
            return len(batch)
        params = cast("Params", q.params)
        if q.name == "set_error" and isinstance(params["error"], str):
            # Error text is diagnostic and PostgreSQL text cannot hold NUL: a handler's
            # exception message must not make its own completion unrecordable.
            params = {**params, "error": params["error"].replace("\x00", "\ufffd")}
        args = query.values(params)
        json_at = self._json_params.get(q.name)
        if json_at:
            args = tuple(json.dumps(a) if i in json_at else a for i, a in enumerate(args))
        if q.fetch == "all":
            return await conn.fetch(sql, *args)
        if q.fetch == "one":
            return await conn.fetchrow(sql, *args)
        return rowcount(await conn.execute(sql, *args))

    @asynccontextmanager
    async def _write(self, state: OpState) -> AsyncIterator[Connection]:
        """A READ COMMITTED transaction on a pooled connection: commits (with the wake-up
        NOTIFY in it when ``state.wake``) on normal exit, rolls back on any exception, and
        always gives the connection back clean, cancellation included."""
        token = _nested.enter(self)
        committed = False
        try:
            async with self._acquire() as conn:
                try:
                    await conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
                    # Inside the transaction: a measurement of its own would be one more
                    # transaction for the database to count (an idle process's included).
                    state.lease_offset = await self._lease_offset(conn)
                    yield conn
                    await settle(self._commit(conn, state))
                    committed = True
                except BaseException:
                    await abort(conn)
                    raise
        except Exception as exc:
            if not committed:
                raise
            # Giving the connection back failed (its session reset met a connection that
            # died just after the COMMIT): the pool drops it; the transaction stands.
            log.warning("a connection was lost just after its transaction committed (%s)", exc)
        finally:
            _nested.leave(token)

    async def _commit(self, conn: Connection, state: OpState) -> None:
        status = await conn.execute(self._commit_script(state))
        if status != "COMMIT":
            raise StoreError(
                "the transaction was rolled back: a statement in it failed and the error was "
                "caught without a ROLLBACK TO SAVEPOINT, so PostgreSQL discarded all of it"
            )
        if state.wake:
            self._notify()
        if state.ended is not None:
            self._tell_ended(state.ended)

    def _commit_script(self, state: OpState) -> str:
        """The COMMIT, with the NOTIFYs its transaction owes in the same round trip: the
        wake-up when it changed pending work, and the ids of the jobs that ended in it (for
        whoever awaits their results in another process)."""
        if state.ended is None:
            return self._notify_and_commit if state.wake else "COMMIT"
        # The payload is the channel's name, hex digits, ids and commas: no user data.
        ended = f"pg_notify('{self.channel}', '{ended_payload(self._token, state.ended)}')"
        wake = f"pg_notify('{self.channel}', '{self._token}'), " if state.wake else ""
        return f"SELECT {wake}{ended}; COMMIT"

    async def _run(self, now: float, op: Callable[[OpState], Op[T]]) -> T:
        state = OpState(now, self.resolver)
        async with self._write(state) as conn:
            result = await self._drive(conn, op(state))
        return result

    async def _read(self, now: float, op: Callable[[OpState], Op[T]]) -> T:
        async with self._acquire() as conn:
            try:
                await conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                state = OpState(now, self.resolver, lease_offset=await self._lease_offset(conn))
                result = await self._drive(conn, op(state))
            finally:
                await abort(conn)  # nothing to keep
        return result

    @asynccontextmanager
    async def transaction(self, now: float) -> AsyncIterator[PostgresTx]:
        state = OpState(now, self.resolver)
        async with self._write(state) as conn:
            yield PostgresTx(self, conn, state)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[PostgresReadDb]:
        async with self._acquire() as conn:
            try:
                await conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY")
                yield PostgresReadDb(self, conn)
            finally:
                await abort(conn)

    def is_deterministic_error(self, exc: BaseException) -> bool:
        """Constraint violations (unique, foreign key, check, not null) and data errors
        (invalid text for a type, out-of-range numbers, division by zero, a parameter of
        the wrong Python type): the same statement fails the same way on every retry."""
        return isinstance(
            exc,
            asyncpg.IntegrityConstraintViolationError
            | asyncpg.DataError
            | asyncpg.exceptions._base.DataError,
        )
