"""The scheduler's tests' fixtures: the network guard and the stores.

Nothing here, in the scheduler's tests or in what they import imports the bot, discord.py
or the fake Discord: they also run against the installed scheduler wheel alone, in a
virtualenv without them (``scripts/scheduler_alone.py``, a step of ``.ci/run``), where the
repository's top conftest is not loaded; ``tests/test_scheduler_distribution.py`` checks
their imports."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pytest

from tests.scheduler.stores import STORE_KINDS, StoreFactory, require_postgres, sqlite_factory
from tests.support import netguard

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

network_guard = netguard.network_guard


@pytest.fixture(autouse=True)
def _no_internet(network_guard: object) -> Iterator[None]:
    """Any attempt to reach a non-loopback address fails the test."""
    return


@pytest.fixture(params=STORE_KINDS)
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreFactory]:
    """A factory of stores on one fresh database, for each store kind available here."""
    if request.param == "sqlite":
        yield sqlite_factory(tmp_path)
        return
    dsn = require_postgres()
    from tests.scheduler.pg import postgres_factory

    factory = await postgres_factory(dsn)
    try:
        yield factory
    finally:
        if factory.cleanup is not None:
            await factory.cleanup()


def pytest_sessionfinish() -> None:
    """This process's pooled PostgreSQL test databases are dropped (``tests/scheduler/pg.py``)."""
    pg = sys.modules.get("tests.scheduler.pg")
    if pg is not None:
        pg.drop_pool()
