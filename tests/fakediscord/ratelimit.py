"""Discord-style rate limiting for the fake REST API.

* Every route belongs to a bucket. A bucket's window is keyed by the bucket plus the route's major
  parameter (channel id, guild id, or webhook id + token), exactly like Discord.
* Every response carries ``X-RateLimit-Limit/-Remaining/-Reset/-Reset-After/-Bucket``.
* The global limit (default 50 requests per second) applies to every bot-authenticated request
  except the interaction endpoints (interaction callbacks and interaction webhooks), which Discord
  exempts from the global limit.
* Exceeding a limit yields a 429 with ``retry_after`` in the JSON body, ``Retry-After``,
  ``X-RateLimit-Scope`` (``user``/``global``/``shared``), ``X-RateLimit-Global`` for global
  limits, and ``Via: 1.1 google`` (without ``Via`` discord.py assumes a Cloudflare ban).
* Tests can turn enforcement off, change limits, and inject 429 storms.

Time is the asyncio loop clock (real time).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import time
from dataclasses import dataclass, field


@dataclass
class BucketSpec:
    name: str
    limit: int
    per: float


@dataclass
class _Window:
    count: int = 0
    reset_at: float = 0.0


@dataclass
class Storm:
    """An injected run of 429s. ``times`` counts down as matching requests are rejected."""

    times: int
    retry_after: float
    is_global: bool = False
    scope: str = "user"
    method: str | None = None
    path_regex: str | None = None
    served: int = 0

    def matches(self, method: str, path: str) -> bool:
        if self.times <= 0:
            return False
        if self.method is not None and self.method.upper() != method.upper():
            return False
        return self.path_regex is None or re.fullmatch(self.path_regex, path) is not None


@dataclass
class Decision:
    """Outcome of a rate-limit check: headers to send, and whether to answer 429."""

    headers: dict[str, str] = field(default_factory=dict)
    limited: bool = False
    retry_after: float = 0.0
    is_global: bool = False
    scope: str = "user"

    def body(self) -> dict[str, object]:
        return {
            "message": "You are being rate limited.",
            "retry_after": round(self.retry_after, 3),
            "global": self.is_global,
            "code": 0,
        }

    def limited_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        headers["Retry-After"] = str(max(1, math.ceil(self.retry_after)))
        headers["X-RateLimit-Scope"] = self.scope
        headers["Via"] = "1.1 google"
        if self.is_global:
            headers["X-RateLimit-Global"] = "true"
        return headers


def _bucket_hash(name: str) -> str:
    return hashlib.sha1(name.encode(), usedforsecurity=False).hexdigest()[:32]


class RateLimiter:
    """Per-route buckets plus the global limit. See the module docstring."""

    def __init__(
        self,
        *,
        enabled: bool = True,
        message_limit: int = 5,
        message_per: float = 5.0,
        global_limit: int = 50,
        global_per: float = 1.0,
        default_limit: int = 50,
        default_per: float = 1.0,
    ) -> None:
        self.enabled = enabled
        self.global_limit = global_limit
        self.global_per = global_per
        self.buckets: dict[str, BucketSpec] = {
            "messages": BucketSpec("messages", message_limit, message_per),
            "default": BucketSpec("default", default_limit, default_per),
            "interactions": BucketSpec("interactions", 1000, 1.0),
            "webhooks": BucketSpec("webhooks", 50, 1.0),
            "commands": BucketSpec("commands", 50, 20.0),
        }
        self._windows: dict[tuple[str, str], _Window] = {}
        self._global = _Window()
        self.storms: list[Storm] = []

    # --- knobs -----------------------------------------------------------------------------------

    def set_message_limit(self, limit: int, per: float) -> None:
        """Per-channel message-create limit (Discord's is 5 per 5 s)."""
        self.buckets["messages"] = BucketSpec("messages", limit, per)
        self._drop_windows("messages")

    def set_global_limit(self, limit: int, per: float = 1.0) -> None:
        self.global_limit = limit
        self.global_per = per
        self._global = _Window()

    def set_bucket(self, name: str, limit: int, per: float) -> None:
        self.buckets[name] = BucketSpec(name, limit, per)
        self._drop_windows(name)

    def reset(self) -> None:
        """Forget every window (as if all limits had just reset)."""
        self._windows.clear()
        self._global = _Window()

    def inject_429(
        self,
        times: int = 1,
        *,
        retry_after: float = 0.05,
        is_global: bool = False,
        scope: str | None = None,
        method: str | None = None,
        path_regex: str | None = None,
    ) -> Storm:
        """Answer the next ``times`` matching requests with a 429 (route scope ``user`` unless
        ``is_global``; pass ``scope="shared"`` for a shared-resource limit). ``path_regex`` is
        matched with ``re.fullmatch`` against the path after ``/api/v10``."""
        storm = Storm(
            times=times,
            retry_after=retry_after,
            is_global=is_global,
            scope=scope or ("global" if is_global else "user"),
            method=method,
            path_regex=path_regex,
        )
        self.storms.append(storm)
        return storm

    # --- the check -------------------------------------------------------------------------------

    def _drop_windows(self, bucket: str) -> None:
        for key in [k for k in self._windows if k[0] == bucket]:
            del self._windows[key]

    @staticmethod
    def _now() -> float:
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return time.monotonic()

    def check(
        self, *, bucket: str, major: str, method: str, path: str, global_exempt: bool
    ) -> Decision:
        now = self._now()
        spec = self.buckets.get(bucket) or self.buckets["default"]
        key = (spec.name, major)
        window = self._windows.get(key)
        if window is None or now >= window.reset_at:
            window = _Window(count=0, reset_at=now + spec.per)
            self._windows[key] = window

        decision = Decision()

        for storm in self.storms:
            if storm.matches(method, path):
                storm.times -= 1
                storm.served += 1
                decision.limited = True
                decision.retry_after = storm.retry_after
                decision.is_global = storm.is_global
                decision.scope = storm.scope
                break
        self.storms = [s for s in self.storms if s.times > 0]

        if not decision.limited and self.enabled and not global_exempt:
            if now >= self._global.reset_at:
                self._global = _Window(count=0, reset_at=now + self.global_per)
            if self._global.count >= self.global_limit:
                decision.limited = True
                decision.is_global = True
                decision.scope = "global"
                decision.retry_after = max(self._global.reset_at - now, 0.001)

        if not decision.limited and self.enabled and window.count >= spec.limit:
            decision.limited = True
            decision.scope = "user"
            decision.retry_after = max(window.reset_at - now, 0.001)

        if not decision.limited:
            window.count += 1
            if not global_exempt:
                self._global.count += 1

        reset_after = max(window.reset_at - now, 0.0)
        # Round up so a client that waits exactly reset_after never arrives early.
        reset_after = math.ceil(reset_after * 1000) / 1000
        if self.enabled:
            remaining = max(spec.limit - window.count, 0)
            limit = spec.limit
        else:
            remaining = limit = max(spec.limit, 1000)
        if decision.is_global:
            # Discord's global 429s carry no per-route bucket information.
            decision.headers = {}
        else:
            decision.headers = {
                "X-RateLimit-Limit": str(limit),
                "X-RateLimit-Remaining": str(remaining if not decision.limited else 0),
                "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
                "X-RateLimit-Reset-After": f"{reset_after:.3f}",
                "X-RateLimit-Bucket": _bucket_hash(spec.name),
            }
        return decision
