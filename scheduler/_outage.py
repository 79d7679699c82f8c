"""The scheduler's own loops when its store fails: said once, counted meanwhile, said once
when it works again.

The dispatch loop, the lease sweep and the recording of completions retry for as long as the
store fails (it is down, unreachable, its file unreadable). Logging every failed pass, each
with a traceback, would bury the one line that matters under thousands of copies of it. So
the first failure of any of them logs one ERROR line with the reason; while they go on
failing nothing more is logged (each failure is counted in ``sched.stats.loop_failures``,
exported as ``scheduler_loop_failures``); at the first pass of any of them that works again
(the store is back), one INFO line says so, with how long and how many failures it took.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging

    from .stats import SchedulerStats

LOOPS = ("dispatch", "sweep", "completions")
"""The scheduler's own loops that retry on a failing store."""


class Outage:
    """Whether the scheduler's loops are failing, since when, and how often: one line at
    the start, one at the end (see the module)."""

    def __init__(self, stats: SchedulerStats, log: logging.Logger, where: str) -> None:
        self.stats = stats
        self.log = log
        self.where = where
        """The store, as the lines name it."""
        self.failing = False
        """Whether the last pass of the loops failed."""
        self._since = 0.0
        self._failures = 0

    def failed(self, loop: str, exc: BaseException) -> None:
        """A pass of ``loop`` failed with ``exc``: the first failure is logged, every one
        counted."""
        self.stats.loop_failures[loop] = self.stats.loop_failures.get(loop, 0) + 1
        self._failures += 1
        if not self.failing:
            self._since = time.monotonic()
            # The error itself is the record's argument (not only its text), so that a
            # logging filter can tell what it was (an application that already reported
            # that cause in its own words may drop this line).
            self.log.error(
                "the scheduler cannot use its store %s (%s failed: %s: %s); retrying quietly "
                "until it works again",
                self.where,
                loop,
                type(exc).__name__,
                exc,
            )
        self.failing = True

    def worked(self, loop: str) -> None:
        """A pass of ``loop`` worked: the store works, the end of a failure is logged."""
        if not self.failing:
            return
        self.failing = False
        self.log.info(
            "the scheduler's store %s works again (%s worked; it failed for %.0fs, %d time(s))",
            self.where,
            loop,
            time.monotonic() - self._since,
            self._failures,
        )
        self._failures = 0
