"""Store factories for the conformance suite: every store runs the same tests.

``STORE_KINDS`` lists the stores available here; a factory gives a fresh, unopened store
on a database of its own, and ``again()`` a second store on the same database (another
"process" of the same deployment).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import SqliteStore, Store

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

POSTGRES_DSN_ENV = "CRIER_TEST_POSTGRES_DSN"


class StoreFactory:
    def __init__(
        self, kind: str, make: Callable[[], Store], cleanup: Callable[[], Any] | None = None
    ):
        self.kind = kind
        self._make = make
        self.cleanup = cleanup

    def new(self) -> Store:
        """A store on this factory's database (call again for another connection to it)."""
        return self._make()

    again = new


def sqlite_factory(tmp_path: Path) -> StoreFactory:
    path = tmp_path / "scheduler.db"
    return StoreFactory("sqlite", lambda: SqliteStore(path))


STORE_KINDS = ["sqlite", "postgres"]


def postgres_dsn() -> str | None:
    return os.environ.get(POSTGRES_DSN_ENV) or None


def require_postgres(needs: str = "PostgreSQL tests need a server") -> str:
    """The server's DSN from the environment, or skip the test saying how to enable it."""
    dsn = postgres_dsn()
    if dsn is None:
        pytest.skip(
            f"{needs}: set {POSTGRES_DSN_ENV}=postgresql://USER@HOST:PORT/DB "
            "(.ci/run sets it for the local server)"
        )
    return dsn
