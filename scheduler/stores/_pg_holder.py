"""Holder liveness on PostgreSQL: a holder is alive while its database session is.

A process proves itself alive by holding a session-level advisory lock on a connection of
its own (outside the pool, doing nothing else): the two-key lock ``(HOLDER_LOCK_CLASS,
key)``, ``key`` drawn at random for each proof. Its proof is ``session <server start>
<key>``. Another process judges the holder gone when no session of this database holds that
lock (``pg_locks``, which every role may read) and the server still runs since the proof
was made (``pg_postmaster_start_time()`` unchanged). So:

- a process that exits, is killed, or whose session an administrator ended, is gone as soon
  as the server has ended its session (at once for a closed socket);
- a process that is merely paused (SIGSTOP, a VM migration) keeps its session (its kernel
  still answers for the socket): it is alive, and its leases run out as they always did;
- after a server restart (every session ended, the server's start time changed) nobody is
  judged gone by a proof made before it: processes reconnect and prove themselves again,
  and a holder that never does loses its leases when they expire, as before.

A process whose holder session is lost while it lives on (a dropped connection, a
terminated backend) learns it at once (asyncpg's termination callback): its proof has
lapsed (:attr:`Liveness.on_lapse`, :attr:`Liveness.epoch`), and it proves itself again with
a new key, hence a new proof; another process that found the old proof gone in between has
taken its leases (fenced by that old proof), which the process finds out before it acts on
them (see :mod:`scheduler._holders`). A connection can also die without a word (a host
gone, a network cut): both ends keep TCP keepalive on it, so the process learns it within
about twice ``check_interval`` seconds of silence (its socket's keepalive probes), and the
server ends the session of a process whose host vanished as soon (``tcp_keepalives_*`` of
the session; PostgreSQL's default is the system's, often two hours), so that others find
it gone. No query is sent for it: an idle process costs its database no transactions.
Only where the socket cannot be reached is the connection asked ``SELECT 1`` instead.

The application must not take two-key advisory locks whose first key is
:data:`HOLDER_LOCK_CLASS`. Behind a connection pooler the holder's connection needs a
session of its own (session pooling), as LISTEN does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from typing import TYPE_CHECKING, Any

from ..abc import Liveness
from ._pg_connection import keep_alive

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

log = logging.getLogger("scheduler.postgres")

Connection = Any

HOLDER_LOCK_CLASS = 0x53434844
"""The first key of every holder's advisory lock ("SCHD")."""

KIND = "session"

_TRY_LOCK = "SELECT pg_try_advisory_lock($1::int4, $2::int4)"
_SERVER_START = "SELECT pg_postmaster_start_time()::text"
_LIVE_KEYS = """
SELECT objid::int8 AS key FROM pg_locks
WHERE locktype = 'advisory' AND classid = $1::int8 AND objsubid = 2 AND granted
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
"""


def _server_keepalives(idle: float) -> str:
    """The session settings that have the server probe this end of the connection after
    ``idle`` seconds of silence, three probes ``idle / 3`` apart (numbers only)."""
    quiet = max(1, round(idle))
    apart = max(1, round(idle / 3))
    return (
        f"SET tcp_keepalives_idle = {quiet}; SET tcp_keepalives_interval = {apart}; "
        "SET tcp_keepalives_count = 3"
    )


class SessionLiveness(Liveness):
    """A holder proved by a database session of its own, made by ``connect``; ``pooled``
    lends a connection of the store's pool for the checks of others' proofs."""

    def __init__(
        self,
        connect: Callable[[], Awaitable[Connection]],
        pooled: Callable[[], contextlib.AbstractAsyncContextManager[Connection]],
        *,
        check_interval: float,
        close_timeout: float,
    ) -> None:
        self._connect = connect
        self._pooled = pooled
        self._check_interval = check_interval
        self._close_timeout = close_timeout
        self._conn: Connection | None = None
        self._proof: str | None = None
        self._watch: asyncio.Task[None] | None = None
        self.backend_pid: int | None = None
        """The server process of the session that proves this one (tests end it)."""

    @property
    def proven(self) -> bool:
        return self._proof is not None

    async def prove(self) -> str:
        await self._drop()
        conn = await self._connect()
        try:
            with contextlib.suppress(Exception):  # PostgreSQL 14+: never end it for idling
                await conn.execute("SET idle_session_timeout = 0")
            with contextlib.suppress(Exception):  # the server's watch of this end (TCP only)
                await conn.execute(_server_keepalives(self._check_interval))
            started = str(await conn.fetchval(_SERVER_START))
            while True:
                key = 1 + secrets.randbelow(2**31 - 2)
                if await conn.fetchval(_TRY_LOCK, HOLDER_LOCK_CLASS, key):
                    break
        except BaseException:
            conn.terminate()
            raise
        proof = f"{KIND} {started} {key}"
        self._conn, self._proof = conn, proof
        self.backend_pid = conn.get_server_pid()
        conn.add_termination_listener(self._terminated)
        if not keep_alive(conn, self._check_interval):  # else the kernel ends a dead one
            self._watch = asyncio.create_task(self._check(conn), name="scheduler-holder-session")
        return proof

    def _terminated(self, conn: Connection) -> None:
        if conn is self._conn:
            self._lapse("its database session ended")

    def _lapse(self, why: str) -> None:
        if self._proof is None:
            return
        self._proof = None
        self._conn = None
        self.epoch += 1
        log.warning("this process's holder session was lost (%s): proving it again", why)
        if self.on_lapse is not None:
            self.on_lapse()

    async def _check(self, conn: Connection) -> None:
        """Ask the connection ``SELECT 1`` every interval (where keepalive cannot be set)."""
        while conn is self._conn:
            await asyncio.sleep(self._check_interval)
            if conn is not self._conn:
                return
            try:
                await conn.execute("SELECT 1", timeout=self._check_interval)
            except Exception as exc:
                conn.terminate()
                self._lapse(str(exc) or type(exc).__name__)
                return

    async def gone(self, proofs: Mapping[str, str]) -> set[str]:
        ours = {h: p.split(" ") for h, p in proofs.items()}
        ours = {h: p for h, p in ours.items() if len(p) >= 3 and p[0] == KIND}
        if not ours:
            return set()
        async with self._pooled() as conn:
            started = str(await conn.fetchval(_SERVER_START))
            live = {int(r["key"]) for r in await conn.fetch(_LIVE_KEYS, HOLDER_LOCK_CLASS)}
        out = set()
        for holder, parts in ours.items():
            its_start, key = " ".join(parts[1:-1]), parts[-1]
            if its_start == started and key.isdigit() and int(key) not in live:
                out.add(holder)
        return out

    async def _drop(self) -> None:
        conn, self._conn, self._proof = self._conn, None, None
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
        if conn is not None:
            try:
                await conn.close(timeout=self._close_timeout)
            except Exception:
                conn.terminate()

    async def close(self) -> None:
        await self._drop()
