"""Intervals: the absolute-time lattice ``anchor + k * every`` (unaffected by DST)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ..errors import InvalidSchedule
from ._base import ONE_US, duration_parts, format_duration, require_aware


@dataclass(frozen=True, slots=True, init=False, repr=False)
class Interval:
    """Fire times ``anchor + k * every`` for every integer ``k`` (absolute time, no DST).

    ``every`` must be a positive :class:`timedelta`; ``anchor`` must be aware (it is stored
    converted to UTC and may lie in the past or the future).  Raises
    :class:`InvalidSchedule` otherwise.  All arithmetic is exact integer microseconds.
    """

    every: timedelta
    anchor: datetime

    def __init__(self, every: timedelta, anchor: datetime) -> None:
        if not isinstance(every, timedelta):
            raise InvalidSchedule(f"interval must be a timedelta, got {type(every).__name__}")
        if every <= timedelta(0):
            raise InvalidSchedule(f"interval must be positive, got {format_duration(every)}")
        object.__setattr__(self, "every", every)
        object.__setattr__(self, "anchor", require_aware(anchor, "interval anchor"))

    def __repr__(self) -> str:
        return f"Interval(every={self.every!r}, anchor={self.anchor!r})"

    def _index(self, t: datetime) -> int:
        """Return ``k`` such that ``anchor + k*every <= t < anchor + (k+1)*every``."""
        return ((t - self.anchor) // ONE_US) // (self.every // ONE_US)

    def _point(self, k: int) -> datetime:
        """Return the lattice point ``anchor + k*every`` (raises OverflowError off-range)."""
        return self.anchor + timedelta(microseconds=k * (self.every // ONE_US))

    def next_after(self, t: datetime) -> datetime:
        """Return the smallest lattice point strictly after aware ``t``, in UTC.

        O(1).  Raises :class:`InvalidSchedule` for a naive ``t`` and :class:`OverflowError`
        if the point lies beyond the datetime range.
        """
        return self._point(self._index(require_aware(t, "t")) + 1)

    def latest_at_or_before(self, t: datetime) -> datetime | None:
        """Return the greatest lattice point ``<= t`` (aware ``t``), in UTC.

        O(1).  Returns ``None`` only if that point lies before the datetime range.
        Raises :class:`InvalidSchedule` for a naive ``t``.
        """
        k = self._index(require_aware(t, "t"))
        try:
            return self._point(k)
        except OverflowError:
            return None

    def count_between(self, start: datetime, end: datetime) -> int:
        """Return how many fire times ``f`` satisfy ``start < f <= end`` (0 if
        ``end <= start``).  O(1) and exact.  Raises :class:`InvalidSchedule` for naive
        arguments."""
        first = self._index(require_aware(start, "start"))
        last = self._index(require_aware(end, "end"))
        return max(0, last - first)

    def describe(self) -> str:
        """Return e.g. ``"every 15 minutes"`` or ``"every hour"``."""
        count, unit = duration_parts(self.every)
        return f"every {unit}" if count == 1 else f"every {count} {unit}s"

    def to_spec(self) -> dict[str, object]:
        """Return ``{"kind": "interval", "every_us": <int>, "anchor": <ISO 8601, UTC>}``."""
        return {
            "kind": "interval",
            "every_us": self.every // ONE_US,
            "anchor": self.anchor.isoformat(),
        }
