"""Gateway IDENTIFYs within Discord's limits, across every instance on one database.

Discord allows one IDENTIFY per ``max_concurrency`` bucket (``shard_id % max_concurrency``)
every 5 s, and a daily budget of session starts (``session_start_limit`` of
``GET /gateway/bot``). :class:`IdentifyGate` reserves each IDENTIFY's turn through
``sched.reserve_slot`` (a pace key per bucket, shared by every instance on the database) and
refuses once the day's budget is down to what crier keeps (``SESSION_STARTS_KEPT``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scheduler import Clock, Pace, Scheduler
from scheduler.clock import sleep_until

from ..config import ConfigError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["IdentifyGate", "IdentifyRefused", "SessionStartLimit"]

log = logging.getLogger("crier.shards")

SessionStartLimit = dict[str, int]
"""``session_start_limit`` of ``GET /gateway/bot``: total, remaining, reset_after (ms),
max_concurrency."""


class IdentifyRefused(ConfigError):
    """The daily session start budget is down to what crier keeps: no IDENTIFY is sent."""


class IdentifyGate:
    """Waits each IDENTIFY's turn: at most one per bucket per ``interval`` across every
    instance sharing the database, and none once the day's session starts are down to
    ``kept``. ``fetch()`` reads ``session_start_limit`` afresh (``GET /gateway/bot``), so the
    budget counted is the bot's, every instance's starts included."""

    def __init__(
        self,
        sched: Scheduler,
        clock: Clock,
        fetch: Callable[[], Awaitable[SessionStartLimit]],
        *,
        interval: float,
        kept: int,
        max_concurrency: int,
    ) -> None:
        self.sched = sched
        self.clock = clock
        self.fetch = fetch
        self.interval = interval
        self.kept = kept
        self.max_concurrency = max(1, max_concurrency)
        self.identified = 0
        """IDENTIFY turns this process reserved."""
        self.waiting: set[int] = set()
        """Shards whose re-IDENTIFY waits for its turn in :meth:`wait` (tests drive the clock
        until every shard is ready or waiting)."""

    def bucket(self, shard_id: int) -> int:
        return shard_id % self.max_concurrency

    def check_budget(self, limit: SessionStartLimit) -> None:
        """Refuse (:class:`IdentifyRefused`) at or below ``kept`` session starts left; warn
        once a quarter of the day's budget or less is left."""
        total, remaining = int(limit["total"]), int(limit["remaining"])
        hours = int(limit.get("reset_after", 0)) / 3_600_000
        if remaining <= self.kept:
            raise IdentifyRefused(
                f"Discord's session start budget is down to {remaining} of {total} (it resets "
                f"in {hours:.1f} h): crier keeps the last {self.kept} (SESSION_STARTS_KEPT) and "
                "does not connect, since spending them all makes Discord reset the token. "
                "Find what restarts the bot so often, then start it after the reset."
            )
        if remaining <= max(total // 4, 2 * self.kept):
            log.warning(
                "Discord's session start budget is low: %d of %d left (resets in %.1f h); at "
                "%d crier stops connecting. Is something restarting the bot in a loop?",
                remaining, total, hours, self.kept,
            )  # fmt: skip

    async def turn(self, shard_id: int) -> float:
        """When shard ``shard_id`` may IDENTIFY (a timestamp on the clock; now, or its
        bucket's next free slot, reserved), or raise :class:`IdentifyRefused`."""
        self.check_budget(await self.fetch())
        self.identified += 1
        if self.interval <= 0:
            return self.clock.time()
        pace = Pace(f"gateway:identify:{self.bucket(shard_id)}", self.spacing)
        return (await self.sched.reserve_slot(pace)).timestamp()

    @property
    def margin(self) -> float:
        """How late after its turn an IDENTIFY may still go: a fifth of the interval, at
        least 0.25 s. A turn is a time on this process's clock; the IDENTIFY reaches Discord
        after its connection is set up, which takes longer for one shard than for another (a
        loaded machine, a slow TLS handshake)."""
        return max(self.interval / 5, 0.25)

    @property
    def spacing(self) -> float:
        """How far apart two turns of one bucket are reserved: the interval and the margin.
        Without the margin the first of two IDENTIFYs may arrive late and the next on time,
        closer than Discord allows, and be refused with op 9."""
        return self.interval + self.margin

    def in_time(self, turn: float) -> bool:
        """Whether an IDENTIFY sent now still keeps turn ``turn``: no later than the margin
        after it. One sent later may come within the interval of the bucket's next turn,
        which another instance is entitled to."""
        return self.interval <= 0 or self.clock.time() <= turn + self.margin

    async def wait(self, shard_id: int) -> None:
        """Wait until shard ``shard_id`` may IDENTIFY (see :meth:`turn`). A turn reached
        later than the margin (the process was stalled past it) is given up and a new one
        reserved, rather than identifying into the next turn's window."""
        while True:
            turn = await self.turn(shard_id)
            self.waiting.add(shard_id)
            try:
                await sleep_until(self.clock, turn)
            finally:
                self.waiting.discard(shard_id)
            if self.in_time(turn):
                return
            self.missed(shard_id, turn)

    def missed(self, shard_id: int, turn: float) -> None:
        """Log a turn given up for being reached too late."""
        log.info(
            "shard %d reached its IDENTIFY turn %.2f s late (more than the %.2f s margin): "
            "waiting for a new turn instead of crowding the next one",
            shard_id, self.clock.time() - turn, self.margin,
        )  # fmt: skip
