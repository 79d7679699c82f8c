"""What the PostgreSQL store does on one asyncpg connection, with no state of the store's:
read a command status's row count, run application SQL (``?`` placeholders), and roll back
whatever is open in a way no cancellation can interrupt."""

from __future__ import annotations

import logging
import socket
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Any

import asyncpg

from ..abc import Cursor
from ..errors import InvalidArgument
from ..sql.placeholders import translate_placeholders
from ._base import settle

# The store's own logger: everything the PostgreSQL store says goes under one name.
log = logging.getLogger("scheduler.postgres")

# asyncpg ships no type information: its connections are ``Any`` here.
Connection = Any

# How many application statements' shapes (returns rows or not) are remembered.
_SHAPES_KEPT = 1000

# How long a rollback may take before the connection is given up (terminated, and replaced
# by the pool): after a cancellation the server may be slow to answer, or gone.
_ABORT_TIMEOUT = 10.0


def rowcount(status: str | None) -> int:
    """The row count in a command status (``"INSERT 0 3"`` is 3, ``"CREATE TABLE"`` is -1)."""
    if not status:
        return -1
    head, _, last = status.rpartition(" ")
    return int(last) if head and last.isdigit() else -1


# --- a long-lived connection's watch ----------------------------------------------------------

KEEPALIVE_PROBES = 3
"""Unanswered TCP keepalive probes after which the kernel gives a connection up."""


def keep_alive(conn: Connection, idle: float) -> bool:
    """Have the kernel watch ``conn``'s socket, so a connection that dies without a word (a
    host gone, a network cut) ends within about twice ``idle`` seconds of silence, and
    asyncpg's termination callbacks run, without a query: keepalive probes after ``idle``
    seconds of silence, ``idle / 3`` apart, three unanswered ending it. A local (Unix)
    socket needs none: its peer is this machine's server, which closes it when its session
    ends. False when the socket cannot be reached (not an asyncpg connection as this knows
    it): the caller then asks the connection itself every so often."""
    transport = getattr(conn, "_transport", None)
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None:
        return False
    if sock.family == getattr(socket, "AF_UNIX", None):
        return True
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return False
    quiet = max(1, round(idle))
    apart = max(1, round(idle / KEEPALIVE_PROBES))
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for name, value in (
            ("TCP_KEEPIDLE", quiet),  # Linux, BSDs
            ("TCP_KEEPALIVE", quiet),  # macOS's name for it
            ("TCP_KEEPINTVL", apart),
            ("TCP_KEEPCNT", KEEPALIVE_PROBES),
        ):
            option = getattr(socket, name, None)
            if option is not None:
                sock.setsockopt(socket.IPPROTO_TCP, option, value)
    except OSError:
        return False
    return True


# --- application SQL -----------------------------------------------------------------------


def user_params(params: Sequence[Any]) -> tuple[Any, ...]:
    """Application SQL's parameters, as the tuple asyncpg binds to ``$1..$n``."""
    if isinstance(params, str | bytes | Mapping):
        raise InvalidArgument(
            "SQL parameters must be a sequence of values for the ? placeholders "
            f"(named parameters are not supported), got {type(params).__name__}"
        )
    return tuple(params)


async def user_execute(
    conn: Connection, sql: str, params: Sequence[Any], returns_rows: dict[str, bool]
) -> Cursor:
    """Run application SQL: rows, and the row count from the command status.

    The first time a statement is seen it is prepared, to learn whether it returns rows
    (a prepared statement reports both rows and status, at the cost of a second round
    trip), and the answer is kept in ``returns_rows`` (translated SQL -> whether it returns
    rows). After that it takes one round trip through asyncpg's statement cache: a
    statement that returns rows is fetched (its count is the number of rows: a SELECT's,
    or a RETURNING's, which returns one row per row changed), any other is executed for
    its status.
    """
    args = user_params(params)
    text = translate_placeholders(sql)
    known = returns_rows.get(text)
    if known is None:
        stmt = await conn.prepare(text)
        rows: list[Any] = await stmt.fetch(*args)
        if len(returns_rows) >= _SHAPES_KEPT:
            returns_rows.clear()
        returns_rows[text] = bool(stmt.get_attributes())
        return Cursor(rows, rowcount(stmt.get_statusmsg()), None)
    if known:
        rows = await conn.fetch(text, *args)
        return Cursor(rows, len(rows), None)
    return Cursor([], rowcount(await conn.execute(text, *args)), None)


# --- cancellation-safe rollback ------------------------------------------------------------


def _closed(conn: Connection) -> bool:
    """Whether the session behind ``conn`` is over (the server ended it, or the pool already
    took back the connection because it closed): its transaction went with it."""
    try:
        return bool(conn.is_closed())
    except asyncpg.InterfaceError:  # a pool's proxy, detached when its connection closed
        return True


async def abort(conn: Connection) -> None:
    """Roll back whatever is open on ``conn``; a connection that cannot roll back is
    terminated, so the pool replaces it instead of handing out a half-finished transaction.
    A connection already closed has nothing to roll back (and must not hide, behind an error
    of its own, the error that the caller is handling)."""

    async def rollback() -> None:
        if _closed(conn):
            return
        try:
            await conn.execute("ROLLBACK", timeout=_ABORT_TIMEOUT)
        except Exception as exc:
            if _closed(conn):
                return  # it died meanwhile: the server rolled it back
            log.warning("rollback failed (%s); dropping the connection", exc)
            with suppress(Exception):
                conn.terminate()

    await settle(rollback())
