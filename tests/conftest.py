"""Shared fixtures. Every test runs with the network guard: only loopback is reachable."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.scheduler.stores import STORE_KINDS, StoreFactory, require_postgres, sqlite_factory

try:
    from tests.fakediscord.netguard import network_guard
except ImportError:  # pragma: no cover - the guard ships with the fake Discord

    @pytest.fixture
    def network_guard() -> Iterator[None]:
        yield


@pytest.fixture(autouse=True)
def _no_internet(network_guard: object) -> Iterator[None]:
    """Any attempt to reach a non-loopback address fails the test."""
    yield


@pytest.fixture(params=STORE_KINDS)
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreFactory]:
    """A factory of stores on one fresh database, for each store kind available here."""
    if request.param == "sqlite":
        yield sqlite_factory(tmp_path)
        return
    dsn = require_postgres()
    try:
        from tests.scheduler.pg import postgres_factory
    except ImportError:
        pytest.skip("the PostgreSQL store is not part of this build yet")
    factory = await postgres_factory(dsn)
    try:
        yield factory
    finally:
        if factory.cleanup is not None:
            await factory.cleanup()
