"""Numbered SQL migrations per dialect, applied in order and recorded in a version table.

A component (the scheduler itself, or an application that keeps its own tables in the same
database) ships a directory per dialect holding ``NNNN_description.sql`` files. The store
applies the ones not yet recorded in ``scheduler_migrations``, each in its own transaction,
refuses a database that records a version newer than the files it has, and refuses files
edited after they were applied (their checksum is recorded).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from .errors import MigrationError

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_COMPONENT = re.compile(r"^[a-z][a-z0-9_.-]{0,62}$")

VERSION_TABLE = "scheduler_migrations"


@dataclass(frozen=True, slots=True)
class Migration:
    component: str
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class MigrationSet:
    """A component's migrations: ``root/<dialect>/NNNN_name.sql``."""

    component: str
    root: Traversable | Path

    def __post_init__(self) -> None:
        if not isinstance(self.component, str) or not _COMPONENT.match(self.component):
            raise MigrationError(
                f"a migration component name is lowercase letters, digits, '_', '.', '-' "
                f"(starting with a letter), got {self.component!r}"
            )

    def load(self, dialect: str) -> list[Migration]:
        """The component's migrations for ``dialect``, in version order, numbered 1, 2, 3…"""
        folder = self.root / dialect
        if not folder.is_dir():
            raise MigrationError(f"{self.component}: no migrations for {dialect} at {folder}")
        found: list[Migration] = []
        for entry in folder.iterdir():
            match = _FILE.match(entry.name)
            if match is None:
                continue
            text = entry.read_text("utf-8")
            found.append(Migration(self.component, int(match[1]), match[2], text))
        found.sort(key=lambda m: m.version)
        for expected, m in enumerate(found, start=1):
            if m.version != expected:
                raise MigrationError(
                    f"{self.component}/{dialect}: migration {expected:04d} is missing "
                    f"(found {m.version:04d}_{m.name}.sql)"
                )
        return found


def packaged(package: str, component: str, source_dir: str) -> MigrationSet:
    """The migrations shipped inside ``package`` as ``_migrations/``.

    An installed wheel carries them there; in a source checkout (an editable install) they
    are read from ``<project>/migrations/<source_dir>`` beside the package. Neither depends on
    the working directory.
    """
    shipped = resources.files(package) / "_migrations"
    if shipped.is_dir():
        return MigrationSet(component, shipped)
    module_file = resources.files(package)
    checkout = Path(str(module_file)).resolve().parent / "migrations" / source_dir
    return MigrationSet(component, checkout)


def scheduler_migrations() -> MigrationSet:
    """The scheduler's own tables."""
    return packaged("scheduler", "scheduler", "scheduler")


def check_applied(
    migrations: list[Migration], applied: dict[int, str], where: str
) -> list[Migration]:
    """The migrations still to apply, after checking what the database already records.

    ``applied`` maps version to recorded checksum. A recorded version newer than any file is a
    database written by newer code (:class:`~scheduler.errors.SchemaTooNew`); a recorded
    checksum that differs from its file means the file was edited after it was applied.
    """
    from .errors import SchemaTooNew

    if not migrations:
        return []
    component = migrations[0].component
    known = migrations[-1].version
    newest = max(applied, default=0)
    if newest > known:
        raise SchemaTooNew(
            f"{where} was written by a newer version of this software: its {component!r} schema "
            f"is at version {newest}, this code knows versions up to {known}. Upgrade, or point "
            f"it at another database; nothing in it was changed."
        )
    for m in migrations:
        recorded = applied.get(m.version)
        if recorded is not None and recorded != m.checksum:
            raise MigrationError(
                f"{where}: migration {component}/{m.version:04d}_{m.name} was changed after it "
                f"was applied; add a new migration instead of editing an applied one"
            )
    return [m for m in migrations if m.version not in applied]
