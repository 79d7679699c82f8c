"""Whether a SQLite file is exactly as a store left it at a clean close, so opening it again
may skip ``PRAGMA quick_check`` (which reads every page: seconds for a file of a gigabyte).

At a clean close (the WAL checkpointed into the file and gone, or empty) the store stamps the
file's modification time with a value of its own (the time now, with random nanoseconds) and
writes ``<file>-verified`` beside it: the file's size, modification time, inode and device.
Any later write to the file, by SQLite or anything else, sets a new modification time,
so it no longer matches and the next open checks every page again; so does a file that
was never closed cleanly (the mark is removed as soon as a store has opened it). What
this does not catch is damage that leaves the modification time alone (a disk's silent
corruption, or a tool that restores the time): a full check still runs whenever the mark
does not match, and ``python -m scheduler`` users can run ``PRAGMA quick_check`` any time.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from pathlib import Path

SUFFIX = "-verified"


def _mark_path(path: Path) -> Path:
    return Path(f"{path}{SUFFIX}")


def _wal_empty(path: Path) -> bool:
    wal = Path(f"{path}-wal")
    try:
        return wal.stat().st_size == 0
    except FileNotFoundError:
        return True


def _identity(st: os.stat_result) -> dict[str, int]:
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino, "dev": st.st_dev}


def as_left(path: Path) -> bool:
    """Whether ``path`` is, byte for byte as far as the file system tells, the file a store
    closed cleanly (with nothing in its WAL)."""
    try:
        mark = json.loads(_mark_path(path).read_text("utf-8"))
        st = path.stat()
    except (OSError, ValueError):
        return False
    return isinstance(mark, dict) and mark == _identity(st) and _wal_empty(path)


def forget(path: Path) -> None:
    """Remove the mark (the file is open now: it may change, or be left half-written)."""
    with contextlib.suppress(FileNotFoundError):
        _mark_path(path).unlink()


def mark(path: Path) -> None:
    """Mark ``path`` as left cleanly now (call once every connection is closed), unless its
    WAL still holds frames (another connection is still writing)."""
    if not _wal_empty(path):
        return
    try:
        st = path.stat()
        stamp = time.time_ns() // 1000 * 1000 + 1 + secrets.randbelow(999)
        os.utime(path, ns=(st.st_atime_ns, stamp))
        target = _mark_path(path)
        tmp = Path(f"{target}.tmp")
        tmp.write_text(json.dumps(_identity(path.stat())), "utf-8")
        tmp.replace(target)
    except OSError:  # a read-only folder, say: the next open simply checks every page
        forget(path)
