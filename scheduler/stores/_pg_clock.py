"""The database's clock as this process sees it: how far it is ahead of this machine's.

Processes on several machines share one PostgreSQL database, and their own clocks may be
seconds or minutes apart. What they compare with each other (a claim's lease, a heartbeat,
the sweep's test for an expired lease, named leases and lease groups, pace slots, once keys'
expiry) is therefore stamped on the database's clock: the store measures how far that clock
is ahead of its machine's and adds it to each such stamp
(:attr:`~scheduler.store_types.OpState.lease_offset`). Due times stay the application's.

The measurement is Cristian's: read ``clock_timestamp()`` in one round trip and compare it
with the machine's clock halfway through. The database read its clock within the round trip,
so the estimate is off by at most half of it (a millisecond on one host or a LAN, far less
than the lease margin). A reading inside the round trip's own window (the clocks agree as
closely as can be measured: one host, or machines on NTP) counts as no offset, so on one host
the stamps are exactly what the process's clock says, as on SQLite.

It is measured when the store opens (the shortest of a few round trips), and again before an
operation once the last measurement is ``interval`` old, or at once when this machine's wall
clock moved more or less than elapsed time since (an NTP step, a changed system time), so a
step is corrected at the next operation. Elapsed time is the machine's :func:`time.monotonic`,
whatever clock the scheduler runs on: the offset is between two real clocks, and a fake clock
moves the stamps only by moving the time they are taken at.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

log = logging.getLogger("scheduler.postgres")

_READ_CLOCK = "SELECT extract(epoch FROM clock_timestamp())::float8"

OPEN_SAMPLES = 3
"""Round trips measured when the store opens (the shortest one is kept)."""

NOTABLE = 1.0
"""An offset (or a change of it) this large is logged as a warning: a clock that far off
would break leases on any store that did not correct it."""


class DatabaseClock:
    """The offset of the database's clock from this machine's (``system_time``), kept fresh."""

    def __init__(
        self,
        interval: float = 30.0,
        step_tolerance: float = 0.25,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = interval
        self.step_tolerance = step_tolerance
        self._monotonic = monotonic
        self.offset = 0.0
        """Seconds the database's clock is ahead of this machine's (negative: behind)."""
        self.round_trip: float | None = None
        """The round trip of the measurement :attr:`offset` came from (None: not measured)."""
        self._at_system = 0.0
        self._at_monotonic = 0.0
        self._measuring = False

    def due(self, system_time: Callable[[], float]) -> bool:
        """Whether the offset should be measured again: never measured, ``interval`` old, or
        this machine's wall clock stepped since."""
        if self.round_trip is None:
            return True
        if self._measuring:
            return False  # another operation is measuring: use the offset as it stands
        elapsed = self._monotonic() - self._at_monotonic
        if elapsed >= self.interval:
            return True
        return abs((system_time() - self._at_system) - elapsed) > self.step_tolerance

    async def measure(self, conn: Any, system_time: Callable[[], float], samples: int = 1) -> float:
        """Measure the offset on ``conn`` (the shortest of ``samples`` round trips); the
        offset."""
        self._measuring = True
        try:
            best: tuple[float, float, float, float, float] | None = None
            for _ in range(max(1, samples)):
                t0, m0 = system_time(), self._monotonic()
                db = float(await conn.fetchval(_READ_CLOCK))
                t1, m1 = system_time(), self._monotonic()
                if best is None or t1 - t0 < best[0]:
                    best = (t1 - t0, t0, t1, db, (m0 + m1) / 2)
        finally:
            self._measuring = False
        if best is None:  # the loop above runs at least once
            raise RuntimeError("no clock sample was taken")
        round_trip, t0, t1, db, mono = best
        mid = (t0 + t1) / 2
        offset = 0.0 if t0 <= db <= t1 else db - mid
        self._record(offset, round_trip, mid, mono)
        return offset

    def _record(self, offset: float, round_trip: float, at_system: float, at_mono: float) -> None:
        first = self.round_trip is None
        if (first and abs(offset) >= NOTABLE) or abs(offset - self.offset) >= NOTABLE:
            side = "ahead of" if offset < 0 else "behind"
            log.warning(
                "this machine's clock is %.3fs %s the database's: leases, heartbeats, pace "
                "slots and once keys follow the database's clock (due times follow this one)",
                abs(offset),
                side,
            )
        self.offset = offset
        self.round_trip = max(0.0, round_trip)
        self._at_system = at_system
        self._at_monotonic = at_mono
