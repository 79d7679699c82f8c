"""The PostgreSQL store's LISTEN connection: wake-ups from other processes' commits.

One dedicated connection (outside the pool) listens on the deployment's channel; a
notification whose payload is not this store's own token wakes the store's drivers, and one
that says which jobs ended (:func:`ended_payload`) wakes whoever awaits their results. The
connection is checked after ``check_interval`` seconds of silence (a connection can die
silently) and,
once lost, re-established in the background with exponential backoff up to ``retry_max``;
meanwhile the drivers' lease sweep keeps work moving, and the wake-up after reconnecting
covers the commits made while it was down. The check is TCP keepalive on the connection's
socket (the kernel's probes, no query: an idle deployment's database counts no transactions
for it); only where the socket cannot be reached is the connection asked ``SELECT 1``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import TYPE_CHECKING, Any

from ._pg_connection import keep_alive

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

# The store's own logger name: these lines are the store's, and operators filter on it.
log = logging.getLogger("scheduler.postgres")

# asyncpg ships no type information: its connections are ``Any`` here.
Connection = Any


ENDED_PREFIX = "ended:"
"""What starts the payload of a notification that jobs reached a terminal state:
``ended:<token>:<ids>``, the ids comma-separated, or ``*`` when they would not fit (a
process that hears it re-reads every job it awaits). Any other payload is a wake-up, tagged
with the sending store's token (processes of an earlier release wake on this one too, which
costs them one pass and nothing else)."""

ENDED_IDS_LIMIT = 7000
"""The longest list of ids sent in one notification (PostgreSQL's limit is 8000 bytes)."""


def ended_payload(token: str, job_ids: Sequence[int]) -> str:
    """The payload telling other processes that ``job_ids`` ended (digits, commas and the
    store's hex token only: safe to write into SQL as a literal)."""
    ids = ",".join(str(int(i)) for i in job_ids)
    return f"{ENDED_PREFIX}{token}:{ids if len(ids) <= ENDED_IDS_LIMIT else '*'}"


def parse_ended(payload: str) -> tuple[str, list[int] | None]:
    """The sender's token and the ids of an :func:`ended_payload` (None: every awaited job
    may have ended); a payload that does not parse means the same as ``*``."""
    token, _, ids = payload[len(ENDED_PREFIX) :].partition(":")
    try:
        return token, None if ids == "*" else [int(i) for i in ids.split(",") if i]
    except ValueError:
        return token, None


class WakeListener:
    """LISTEN on ``channel`` through connections made by ``connect``; call ``wake`` for each
    wake-up not tagged ``token``, ``ended`` with the ids of each notification of ended jobs
    not tagged ``token``, and both once after every reconnection (``ended`` with None).
    ``owner`` names the store in log lines; a connection that does not close within
    ``close_timeout`` seconds is terminated."""

    def __init__(
        self,
        owner: object,
        connect: Callable[[], Awaitable[Connection]],
        channel: str,
        token: str,
        wake: Callable[[], None],
        ended: Callable[[Sequence[int] | None], None],
        *,
        check_interval: float,
        retry_max: float,
        close_timeout: float,
    ) -> None:
        self._owner = owner
        self._connect = connect
        self._channel = channel
        self._token = token
        self._wake = wake
        self._ended = ended
        self._check_interval = check_interval
        self._retry_max = retry_max
        self._close_timeout = close_timeout
        self.conn: Connection | None = None
        """The current LISTEN connection (None while it is being re-established)."""
        self.reconnects = 0
        """How many times the connection was lost and re-established."""
        self._task: asyncio.Task[None] | None = None
        self._kept_alive = False
        """Whether the current connection is watched by TCP keepalive (else by queries)."""

    async def start(self) -> None:
        """Connect (an error here is the caller's) and supervise the connection from now on."""
        conn = await self._listen()
        self._task = asyncio.create_task(self._supervise(conn), name="scheduler-postgres-listen")

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                await conn.close(timeout=self._close_timeout)
            except Exception:
                conn.terminate()

    async def _listen(self) -> Connection:
        conn = await self._connect()
        try:
            await conn.add_listener(self._channel, self._on_notification)
        except BaseException:
            conn.terminate()
            raise
        self.conn = conn
        self._kept_alive = keep_alive(conn, self._check_interval)
        return conn

    def _on_notification(self, conn: Connection, pid: int, channel: str, payload: str) -> None:
        if payload.startswith(ENDED_PREFIX):
            token, ids = parse_ended(payload)
            if token != self._token:  # this store's own were told at its commit
                self._ended(ids)
        elif payload != self._token:
            self._wake()

    async def _supervise(self, conn: Connection) -> None:
        """Watch the LISTEN connection; when it is lost, reconnect with backoff."""
        while True:
            await self._watch(conn)
            self.conn = None
            log.warning(
                "%r: lost the LISTEN connection; reconnecting (until then other processes' "
                "commits are picked up by the lease sweep)",
                self._owner,
            )
            conn = await self._reconnect()
            self.reconnects += 1
            log.info("%r: LISTEN connection re-established", self._owner)
            self._wake()  # commits made while it was down were not heard
            self._ended(None)

    async def _watch(self, conn: Connection) -> None:
        lost = asyncio.Event()
        conn.add_termination_listener(lambda _conn: lost.set())
        if conn.is_closed():
            return
        if self._kept_alive:
            await lost.wait()  # the kernel's keepalive ends a connection that died silently
            return
        while not lost.is_set() and not conn.is_closed():
            try:
                await asyncio.wait_for(lost.wait(), self._check_interval)
            except TimeoutError:
                try:  # a connection can die silently (no FIN); ask it
                    await conn.execute("SELECT 1", timeout=self._check_interval)
                except Exception:
                    conn.terminate()
                    return

    async def _reconnect(self) -> Connection:
        delay = 0.0
        while True:
            try:
                conn: Connection = await self._listen()
                return conn
            except Exception as exc:
                delay = min(self._retry_max, max(0.25, delay * 2))
                log.warning(
                    "%r: could not re-establish the LISTEN connection (%s); retrying in %.1fs",
                    self._owner,
                    exc,
                    delay,
                )
            await asyncio.sleep(delay * random.uniform(0.75, 1.0))  # noqa: S311 (a jitter, not a secret)
