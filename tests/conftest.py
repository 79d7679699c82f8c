"""Shared fixtures. Every test runs with the network guard (only loopback is reachable) and
with the fake Discord's check of every request against Discord's API spec."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.fakediscord import netguard
from tests.fakediscord.apispec import failing_on_violations
from tests.scheduler.stores import STORE_KINDS, StoreFactory, require_postgres, sqlite_factory

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

network_guard = netguard.network_guard


@pytest.fixture(autouse=True)
def _no_internet(network_guard: object) -> Iterator[None]:
    """Any attempt to reach a non-loopback address fails the test."""
    return


@pytest.fixture(autouse=True)
def _discord_api_spec() -> Iterator[None]:
    """A request to a fake Discord that Discord's API spec refuses (and that the test did not
    send on purpose, inside ``fake.spec.allow_violations()``) fails the test, naming it."""
    with failing_on_violations():
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
