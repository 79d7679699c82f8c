"""``python -m bot backup PATH``: a copy of the database named by ``DATABASE_URL``.

On SQLite the copy is taken with SQLite's online backup API (the bot may keep running: the
copy is the database as one read transaction saw it, and a running bot's writes go on),
written beside ``PATH`` first, checked with ``PRAGMA integrity_check`` and only then moved to
``PATH``. On PostgreSQL nothing is copied: the one ``pg_dump`` command to run is printed, with
the database's URL. Never needs Discord (nor the token).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import ConfigError, load_setting, without_password
from ..db.copying import backup_and_check

if TYPE_CHECKING:
    import argparse


class BackupError(Exception):
    """A backup that was not made; the message says why (the source is untouched)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        metavar="PATH",
        type=Path,
        help="the file to write the copy to (SQLite); it must not exist yet",
    )


@dataclass(frozen=True, slots=True)
class Copied:
    source: Path
    target: Path
    size: int
    tables: int


def backup_sqlite(source: Path, target: Path) -> Copied:
    """Copy the SQLite database ``source`` to ``target`` (which must not exist) online, then
    check the copy; :class:`BackupError` if any of it fails (``target`` is then not left)."""
    if not source.is_file():
        raise BackupError(f"there is no database at {source} (DATABASE_URL): nothing to back up")
    if target.exists():
        raise BackupError(f"{target} already exists: give a new file for the backup")
    if not target.parent.is_dir():
        raise BackupError(f"{target.parent} is not a directory: give a file in one")
    partial = target.with_name(f".{target.name}.partial")
    with contextlib.suppress(FileNotFoundError):
        partial.unlink()
    try:
        problems, tables = backup_and_check(source, partial)
        if problems != ["ok"]:
            raise BackupError(
                f"the copy of {source} failed its integrity check ({'; '.join(problems)}); "
                "it was not kept. Check the database itself with: "
                f"sqlite3 {shlex.quote(str(source))} 'PRAGMA integrity_check'"
            )
        if tables == 0:
            raise BackupError(f"{source} holds no tables: it is not crier's database")
        size = partial.stat().st_size
        with open(partial, "rb") as f:
            os.fsync(f.fileno())
        os.replace(partial, target)
    except sqlite3.Error as exc:
        raise BackupError(f"could not back up {source}: {exc}") from None
    finally:
        for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
    return Copied(source, target, size, tables)


def pg_dump_command(url: str, target: Path) -> str:
    """The one command that backs up the PostgreSQL database at ``url`` into ``target``."""
    return shlex.join(["pg_dump", "--format=custom", f"--file={target}", url])


def run(args: argparse.Namespace) -> int:
    try:
        url: str = load_setting("database_url")
    except ConfigError as exc:
        print(f"crier: {exc}", file=sys.stderr)
        return 2
    target: Path = args.path
    if url.startswith(("postgresql://", "postgres://")):
        print(
            f"crier: {without_password(url)} is PostgreSQL: back it up with pg_dump "
            "(it runs while the bot does); the command:",
            file=sys.stderr,
        )
        print(pg_dump_command(url, target))
        return 0
    source = Path(url[len("sqlite:///") :])
    try:
        copied = backup_sqlite(source, target)
    except BackupError as exc:
        print(f"crier: {exc}", file=sys.stderr)
        return 1
    print(
        f"backed up {copied.source} to {copied.target} ({copied.size:,} bytes, "
        f"{copied.tables} tables); integrity check of the copy: ok"
    )
    return 0
