"""Writes the disk refuses, on the SQLite store: telling them apart, saying so once.

A full disk, a process file size limit (``ulimit -f``) or a failing disk make SQLite refuse
a write with one of a few result codes. The store turns such an error into
:class:`WriteRefused`, logs one line saying why on the first refusal after writes worked,
and one when a write that changes rows succeeds again.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from typing import TYPE_CHECKING

from ..errors import StoreError

if TYPE_CHECKING:
    from pathlib import Path

# The store's own logger name: operators filter on it, and these lines are the store's.
log = logging.getLogger("scheduler.sqlite")


# SQLite's result codes for a write that the disk or the system refused: the disk is full
# (SQLITE_FULL), or a write, sync, truncation or shared-memory growth failed (SQLITE_IOERR_*:
# a file size limit, a full disk that SQLite saw as an I/O error, a failing disk).
_REFUSED_WRITE = frozenset(
    {
        13,  # SQLITE_FULL
        10 | 3 << 8,  # SQLITE_IOERR_WRITE
        10 | 4 << 8,  # SQLITE_IOERR_FSYNC
        10 | 5 << 8,  # SQLITE_IOERR_DIR_FSYNC
        10 | 6 << 8,  # SQLITE_IOERR_TRUNCATE
        10 | 19 << 8,  # SQLITE_IOERR_SHMSIZE
    }
)
_NEARLY_FULL = 1 << 20
"""Free bytes under which a refused write is put down to a full disk."""


class WriteRefused(StoreError, sqlite3.OperationalError):
    """The database's files could not be written: the disk is full, the process's file size
    limit is reached, or the disk failed the write. Nothing of the transaction was committed
    and nothing committed before is lost; the same work can be done again once writes succeed.
    (Also a :class:`sqlite3.OperationalError`, as the error it stands for.)"""


def refused_code(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's own error for a write the disk refused."""
    return isinstance(exc, sqlite3.Error) and (
        getattr(exc, "sqlite_errorcode", None) in _REFUSED_WRITE
    )


def refused_write(exc: BaseException | None) -> bool:
    """Whether ``exc``, or an error that led to it, is a write the database's disk refused."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, WriteRefused) or refused_code(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def file_size_limit() -> int | None:
    """This process's file size limit (RLIMIT_FSIZE) in bytes, or None if it has none."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on POSIX
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


class RefusedWrites:
    """The refusals of one database's writes: whether writes are being refused, since when,
    how often and why (``problem``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problem: str | None = None
        self._since: float | None = None
        self._count = 0

    def refusal(self, exc: sqlite3.Error) -> WriteRefused | None:
        """If ``exc`` is a write the disk refused: the error to raise instead. The first
        refusal after writes worked logs one line saying why; the next ones say nothing
        until a write succeeds again (the callers retry them, and each would say the same)."""
        if isinstance(exc, WriteRefused) or not refused_code(exc):
            return None
        self._count += 1
        if self._since is None:
            self._since = time.monotonic()
            self.problem = self.diagnose(exc)
            log.error(
                "cannot write to the database %s: %s. Nothing already saved is lost; work "
                "that comes due waits, and resumes by itself once writes succeed again",
                self.path,
                self.problem,
            )
        refused = WriteRefused(f"cannot write to the database {self.path}: {self.problem}")
        refused.sqlite_errorcode = exc.sqlite_errorcode
        refused.sqlite_errorname = exc.sqlite_errorname
        return refused

    def wrote(self, changed_rows: bool) -> None:
        """A write transaction committed; if it changed rows (so its pages reached the disk)
        after writes were refused, say once that they work again."""
        if self._since is None or not changed_rows:
            return
        log.warning(
            "the database %s can be written again (writes were refused for %.0fs, %d time(s)); "
            "due work resumes",
            self.path,
            time.monotonic() - self._since,
            self._count,
        )
        self._since = None
        self._count = 0
        self.problem = None

    def diagnose(self, exc: BaseException) -> str:
        """Why a write was refused, as far as this process can tell."""
        files = [self.path.with_name(self.path.name + suffix) for suffix in ("", "-wal", "-shm")]
        largest = max((f.stat().st_size for f in files if f.exists()), default=0)
        limit = file_size_limit()
        if limit is not None and largest + _NEARLY_FULL > limit:
            return (
                f"this process may not write files past {limit} bytes (its file size limit, "
                f"RLIMIT_FSIZE or `ulimit -f`), and the database's files are up to {largest} "
                "bytes; raise the limit"
            )
        try:
            st = os.statvfs(self.path.parent)
        except OSError:
            free = None
        else:
            free = st.f_bavail * st.f_frsize
        code = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
        if free is not None and free < _NEARLY_FULL:
            return f"the disk is full ({free} bytes free in {self.path.parent}); free some space"
        return f"the disk refused the write ({code}: {exc}); it may be full or failing"
