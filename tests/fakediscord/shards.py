"""Sharding as Discord does it: which shard a guild is on, who may IDENTIFY when, and what
``GET /gateway/bot`` says.

* A guild is on shard ``(guild_id >> 22) % num_shards``; DMs (no guild) are on shard 0. A
  session IDENTIFYs with ``shard: [shard_id, num_shards]`` (none means ``[0, 1]``) and gets the
  events of its shard's guilds only. Two sessions on one shard each get all of that shard's
  events (Discord does not deduplicate; the first interaction callback wins, a second one is
  400 40060).
* A session whose shard holds more than ``max_guilds_per_shard`` guilds (2,500, as Discord) is
  closed with 4011 "Sharding required." at IDENTIFY.
* ``session_start_limit``: ``total`` IDENTIFYs per ``reset_after`` seconds; each session
  started (and each IDENTIFY closed with 4011) takes one. An IDENTIFY with none ``remaining``
  is what Discord's docs describe: every session of the bot is terminated and its token reset
  (the connections close with 4004 and the old token no longer works, on REST either).
* IDENTIFY rate: at most one IDENTIFY per bucket (``shard_id % max_concurrency``) per
  ``identify_window`` seconds (5, as Discord; a constructor setting, and the window runs on an
  injectable clock). An IDENTIFY over its bucket's rate gets op 9 INVALID_SESSION (``d:
  false``). Every IDENTIFY is logged in :attr:`Sharding.identify_log`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

SHARDING_REQUIRED = 4011
INVALID_SHARD = 4010
DEFAULT_MAX_GUILDS_PER_SHARD = 2500
GUILDS_PER_RECOMMENDED_SHARD = 1000


def shard_of(guild_id: int | None, num_shards: int) -> int:
    """The shard a guild's events go to (DMs, ``guild_id`` None, go to shard 0)."""
    return 0 if guild_id is None else (guild_id >> 22) % num_shards


@dataclass(frozen=True, slots=True)
class IdentifyAttempt:
    """One IDENTIFY the gateway judged. ``outcome``: ``"accepted"``, ``"rate limited"`` (op 9),
    ``"sharding required"`` (4011), ``"invalid shard"`` (4010), ``"session start limit"``."""

    at: float
    shard: tuple[int, int]
    bucket: int
    outcome: str

    @property
    def accepted(self) -> bool:
        return self.outcome == "accepted"


def parse_shard(raw: Any) -> tuple[int, int] | None:
    """IDENTIFY's ``shard`` as ``(shard_id, num_shards)``: absent is ``(0, 1)``; anything but
    two integers with ``0 <= shard_id < num_shards`` is None (Discord closes with 4010)."""
    if raw is None:
        return (0, 1)
    if (
        isinstance(raw, list)
        and len(raw) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in raw)
        and 0 <= raw[0] < raw[1]
    ):
        return (raw[0], raw[1])
    return None


class Sharding:
    """The gateway's sharding rules and their counters (``fake.gateway.sharding``)."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        identify_window: float = 5.0,
        max_concurrency: int = 1,
        max_guilds_per_shard: int = DEFAULT_MAX_GUILDS_PER_SHARD,
        recommended_shards: int | None = None,
        session_start_total: int = 1000,
        session_start_reset_after: float = 86_400.0,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.clock = clock
        self.identify_window = identify_window
        self.max_concurrency = max_concurrency
        self.max_guilds_per_shard = max_guilds_per_shard
        self.recommended_shards = recommended_shards
        self.session_start_total = session_start_total
        self.session_start_reset_after = session_start_reset_after
        self.identify_log: list[IdentifyAttempt] = []
        self._last_identify: dict[int, float] = {}  # bucket -> when its last IDENTIFY passed
        self._starts_used = 0
        self._starts_window_began = clock()

    # --- session start limit -----------------------------------------------------------------

    def _roll_window(self) -> float:
        now = self.clock()
        if now - self._starts_window_began >= self.session_start_reset_after:
            self._starts_window_began = now
            self._starts_used = 0
        return now

    @property
    def remaining(self) -> int:
        """Session starts left in the current ``reset_after`` window."""
        self._roll_window()
        return max(self.session_start_total - self._starts_used, 0)

    def session_start_limit(self) -> dict[str, int]:
        """The ``session_start_limit`` object of ``GET /gateway/bot``."""
        now = self._roll_window()
        left = self._starts_window_began + self.session_start_reset_after - now
        return {
            "total": self.session_start_total,
            "remaining": max(self.session_start_total - self._starts_used, 0),
            "reset_after": max(math.ceil(left * 1000), 0),
            "max_concurrency": self.max_concurrency,
        }

    def gateway_bot(self, url: str, guild_count: int) -> dict[str, Any]:
        """The body of ``GET /gateway/bot``: ``shards`` is ``recommended_shards`` if set, else
        one per 1,000 guilds (at least one)."""
        shards = self.recommended_shards or max(
            1, math.ceil(guild_count / GUILDS_PER_RECOMMENDED_SHARD)
        )
        return {"url": url, "shards": shards, "session_start_limit": self.session_start_limit()}

    # --- judging an IDENTIFY -----------------------------------------------------------------

    def judge(self, shard: tuple[int, int] | None, guilds_on_shard: Callable[[], int]) -> str:
        """Judge one IDENTIFY (already authenticated) and log it; returns its outcome (see
        :class:`IdentifyAttempt`). ``guilds_on_shard()`` is asked only when the rest passed."""
        now = self._roll_window()
        if shard is None:
            self._log(now, (-1, -1), -1, "invalid shard")
            return "invalid shard"
        bucket = shard[0] % self.max_concurrency
        last = self._last_identify.get(bucket)
        if last is not None and now - last < self.identify_window:
            return self._log(now, shard, bucket, "rate limited")
        if self._starts_used >= self.session_start_total:
            return self._log(now, shard, bucket, "session start limit")
        self._last_identify[bucket] = now
        self._starts_used += 1
        if guilds_on_shard() > self.max_guilds_per_shard:
            return self._log(now, shard, bucket, "sharding required")
        return self._log(now, shard, bucket, "accepted")

    def _log(self, now: float, shard: tuple[int, int], bucket: int, outcome: str) -> str:
        self.identify_log.append(IdentifyAttempt(now, shard, bucket, outcome))
        return outcome


def guilds_on(guild_ids: Iterable[int], shard: tuple[int, int]) -> list[int]:
    """The ids among ``guild_ids`` that are on ``shard``."""
    shard_id, count = shard
    return [g for g in guild_ids if (g >> 22) % count == shard_id]
