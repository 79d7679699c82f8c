"""What the dashboard remembers about who asked what, bounded: tables whose entries expire
(:class:`ExpiringTable`), rate limits by key over them (:class:`RateLimit`), and the address
a request is counted under (:func:`client_address`).

Nothing here grows with the number of addresses or members that ever asked: an entry is
dropped once it has expired, and every table sweeps its expired entries as it grows."""

from __future__ import annotations

import ipaddress
from collections import deque
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from aiohttp import web

    from scheduler import Clock

K = TypeVar("K")
V = TypeVar("V")


class ExpiringTable(Generic[K, V]):
    """Values by key, each until its own expiry (the clock's seconds). An expired entry is
    never returned, and every expired entry is dropped whenever the table has doubled since
    it was last swept: its size stays within twice the entries alive at the last sweep."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._entries: dict[K, tuple[float, V]] = {}
        self._swept_at = 64

    def get(self, key: K) -> V | None:
        found = self._entries.get(key)
        if found is None:
            return None
        if found[0] <= self.clock.time():
            del self._entries[key]
            return None
        return found[1]

    def put(self, key: K, value: V, seconds: float) -> None:
        """Keep ``value`` for ``key`` for ``seconds`` from now."""
        self._entries[key] = (self.clock.time() + seconds, value)
        if len(self._entries) >= 2 * self._swept_at:
            self.sweep()

    def pop(self, key: K) -> V | None:
        found = self.get(key)
        self._entries.pop(key, None)
        return found

    def sweep(self) -> None:
        """Drop every expired entry."""
        now = self.clock.time()
        self._entries = {k: e for k, e in self._entries.items() if e[0] > now}
        self._swept_at = max(64, len(self._entries))

    def items(self) -> list[tuple[K, V]]:
        """The entries not expired."""
        now = self.clock.time()
        return [(k, v) for k, (at, v) in self._entries.items() if at > now]

    def __len__(self) -> int:
        """The entries kept, expired ones not yet swept included."""
        return len(self._entries)


class RateLimit(Generic[K]):
    """At most ``count`` events per ``seconds`` for one key (an address, a member)."""

    def __init__(self, clock: Clock, count: int, seconds: float) -> None:
        self.clock, self.count, self.seconds = clock, count, seconds
        self._seen: ExpiringTable[K, deque[float]] = ExpiringTable(clock)

    def _recent(self, key: K) -> deque[float]:
        seen = self._seen.get(key) or deque()
        now = self.clock.time()
        while seen and seen[0] <= now - self.seconds:
            seen.popleft()
        return seen

    def full(self, key: K) -> bool:
        """Whether ``key`` has had its ``count`` events in the last ``seconds``."""
        return len(self._recent(key)) >= self.count

    def note(self, key: K) -> None:
        """One more event for ``key``."""
        seen = self._recent(key)
        seen.append(self.clock.time())
        self._seen.put(key, seen, self.seconds)

    def allow(self, key: K) -> bool:
        """One more event for ``key`` unless it has had its ``count`` already (then False)."""
        if self.full(key):
            return False
        self.note(key)
        return True

    def __len__(self) -> int:
        """The keys kept (see :class:`ExpiringTable`)."""
        return len(self._seen)


def client_address(request: web.Request, behind_proxy: bool) -> str:
    """The address a request is counted under: the peer's, or, ``behind_proxy`` (the
    dashboard has a public address, ``DASHBOARD_PUBLIC_URL``) and the peer a reverse proxy
    of this machine or its private network (a loopback or private address: a proxy in front
    of a container comes from one), the last address of its ``X-Forwarded-For``, which that
    proxy wrote. A peer from the Internet has its ``X-Forwarded-For`` ignored: a client can
    write any address there."""
    peer = request.remote or "?"
    if not behind_proxy or not _proxy(peer):
        return peer
    forwarded = request.headers.get("X-Forwarded-For", "")
    last = forwarded.rsplit(",", 1)[-1].strip()
    try:
        return str(ipaddress.ip_address(last))
    except ValueError:
        return peer


def _proxy(address: str) -> bool:
    """Whether a request from ``address`` may come from the dashboard's reverse proxy: a
    loopback or private (RFC 1918, unique local, link-local) address."""
    try:
        found = ipaddress.ip_address(address)
    except ValueError:
        return False
    return found.is_loopback or found.is_private
