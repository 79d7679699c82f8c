"""Shared fixtures. Every test runs with the network guard (only loopback is reachable) and
with the fake Discord's check of every request against Discord's API spec.

The scheduler's tests have their own conftest (``tests/scheduler/conftest.py``: the guard
again, and the stores): they also run against the installed scheduler wheel alone, where
this file (which imports the fake Discord, so discord.py) is not loaded."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pytest

from tests.fakediscord.apispec import failing_on_violations
from tests.support import netguard

if TYPE_CHECKING:
    from collections.abc import Iterator

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


def pytest_sessionfinish() -> None:
    """This process's pooled PostgreSQL test databases are dropped (``tests/scheduler/pg.py``)."""
    pg = sys.modules.get("tests.scheduler.pg")
    if pg is not None:
        pg.drop_pool()
