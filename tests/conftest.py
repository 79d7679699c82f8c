"""Shared fixtures. Every test runs with the network guard (only loopback is reachable) and
with the fake Discord's check of every request against Discord's API spec.

The scheduler's tests have their own conftest (``tests/scheduler/conftest.py``: the guard
again, and the stores): they also run against the installed scheduler wheel alone, where
this file (which imports the fake Discord, so discord.py) is not loaded."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.fakediscord.apispec import failing_on_violations
from tests.support import netguard

if TYPE_CHECKING:
    from collections.abc import Iterator

DURATIONS = Path(__file__).with_name("durations.txt")


def _known_durations() -> dict[str, float]:
    """``tests/durations.txt``: test id -> seconds a full run took on it."""
    known: dict[str, float] = {}
    for line in DURATIONS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            seconds, nodeid = line.split(maxsplit=1)
            known[nodeid] = float(seconds)
    return known


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first (the longest-processing-time rule): handed out two at a time
    to the workers, they overlap each other and the many short tests fill in around them,
    instead of a two-minute test starting last while the other workers have nothing left.
    The rest keep their order (a stable sort). Every worker sorts the same way, as xdist
    requires."""
    known = _known_durations()
    items.sort(key=lambda item: -known.get(item.nodeid, 0.0))


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
