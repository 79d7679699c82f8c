"""What every store does the same way, whatever its database.

A backend is connection plumbing plus its SQL (``scheduler/sql/<dialect>.sql`` and the
migrations under ``migrations/<component>/<dialect>``): the pieces here are the ones that
do not depend on the database. The guard against a nested write transaction in one task,
awaiting a database call to its end under cancellation, the version table and the messages
of the migration loop, quoting savepoint names, keeping a password out of messages, and
the read-only snapshot's refusal to write.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
from collections.abc import Awaitable, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from ..errors import InvalidArgument, MigrationError, SchedulerError
from ..migrations import VERSION_TABLE, Migration

if TYPE_CHECKING:
    from collections.abc import Awaitable, Sequence

    from ..abc import Cursor

T = TypeVar("T")


class NestedTransactionGuard:
    """Turns a second write transaction opened by the task that holds one into a clear error
    (it would wait for the first forever, or commit on its own).

    With ``per_task`` the holding task is recorded too: a task started inside a transaction
    inherits the context but may open transactions of its own (they wait their turn).
    Without it, any task in the holder's context is refused (the store has one writer, which
    the holder keeps until its task resumes).
    """

    def __init__(self, name: str, why: str, *, per_task: bool) -> None:
        self._holding: contextvars.ContextVar[tuple[object, object] | None] = (
            contextvars.ContextVar(name, default=None)
        )
        self._why = why
        self._per_task = per_task

    def enter(self, store: object) -> contextvars.Token[tuple[object, object] | None]:
        """Record that this task holds ``store``'s writer; raise if it already does."""
        task = asyncio.current_task() if self._per_task else None
        held = self._holding.get()
        if held is not None and held[0] is store and held[1] is task:
            raise SchedulerError(
                "a transaction is already open in this task: use its ctx.db / ctx.scheduler "
                f"instead of opening another one ({self._why})"
            )
        return self._holding.set((store, task))

    def leave(self, token: contextvars.Token[tuple[object, object] | None]) -> None:
        self._holding.reset(token)


async def settle(aw: Awaitable[T]) -> T:
    """Await ``aw`` to its end even if the caller is cancelled meanwhile (then re-raise the
    cancellation), so a connection is never left halfway through a call: its state is always
    known when the caller goes on."""
    task = asyncio.ensure_future(aw)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():
            with suppress(asyncio.CancelledError):
                await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # retrieved: the cancellation is what the caller sees
        raise


# --- migrations ------------------------------------------------------------------------------


def version_table_ddl(real: str) -> str:
    """The version table the migration loop records applied migrations in; ``real`` is the
    dialect's floating-point type (for ``applied_at``, epoch seconds)."""
    return (
        f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} ("
        "component TEXT NOT NULL, version INTEGER NOT NULL, name TEXT NOT NULL, "
        f"checksum TEXT NOT NULL, applied_at {real} NOT NULL, "
        "PRIMARY KEY (component, version))"
    )


def migration_failed(where: str, m: Migration, exc: BaseException) -> MigrationError:
    """The error for migration ``m`` failing on the database described by ``where``."""
    return MigrationError(f"{where}: migration {migration_label(m)} failed: {exc}")


def migration_label(m: Migration) -> str:
    return f"{m.component}/{m.version:04d}_{m.name}"


HOLD_MIGRATION_ENV = "SCHEDULER_TEST_HOLD_MIGRATION"
"""For crash tests only: ``COMPONENT/VERSION:PATH`` (e.g. ``crier/6:/tmp/held``) makes the
store that applies that migration stop inside its transaction, after the migration's
statements and before its commit, create ``PATH`` and wait there until the process is killed.
Unset (always, outside tests), it does nothing."""


def migration_hold(m: Migration) -> str | None:
    """The file to create before holding migration ``m`` (see :data:`HOLD_MIGRATION_ENV`)."""
    spec = os.environ.get(HOLD_MIGRATION_ENV)
    if not spec:
        return None
    which, _, path = spec.partition(":")
    return path if which == f"{m.component}/{m.version}" and path else None


def announce_hold(path: str) -> None:
    """Create ``path``: the migration is held (the test may kill the process now)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(str(os.getpid()))


# --- text in SQL and in messages -------------------------------------------------------------


def quote_ident(name: str) -> str:
    """``name`` as a quoted SQL identifier (a savepoint's, say)."""
    return '"' + name.replace('"', '""') + '"'


def redact_dsn(dsn: str) -> str:
    """A connection URL without its password, for messages."""
    try:
        parts = urlsplit(dsn)
        port = parts.port  # a port that is no number raises here too
    except ValueError:
        return "<dsn>"
    if parts.password is None:
        return dsn
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{port}" if port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class ReadOnlyDb:
    """The part of a snapshot's ``Db`` that is the same everywhere: it does not write."""

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        raise NotImplementedError

    async def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Cursor:
        raise InvalidArgument("a snapshot is read-only")
