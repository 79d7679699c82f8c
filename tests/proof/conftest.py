"""The proof suites' switch between the CI subset and full-length runs.

``CRIER_FULL=1`` in the environment selects full length: more kills, more jobs, more
examples. Tests read the sizes from :data:`FULL` (via :func:`size`) and are marked ``slow``
when they take long at full length; the per-test timeout follows the mode.

The end-to-end fixtures of ``tests/bot`` (a fake Discord, a world of guilds, members and
channels, an in-process bot on a FakeClock) are reused here as they are.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TypeVar

from tests.bot.conftest import clock, crier, fake, other, world  # noqa: F401 (fixtures)

if TYPE_CHECKING:
    import pytest

FULL = os.environ.get("CRIER_FULL", "").strip() == "1"
"""True when CRIER_FULL=1: every proof suite runs at full length."""

T = TypeVar("T")


def size(ci: T, full: T) -> T:
    """The CI value, or the full-length one when CRIER_FULL=1."""
    return full if FULL else ci


def pytest_report_header(config: pytest.Config) -> str:
    mode = "full length (CRIER_FULL=1)" if FULL else "CI subset (set CRIER_FULL=1 for full length)"
    return f"proof suites: {mode}"
