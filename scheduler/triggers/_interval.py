"""Intervals: the absolute-time lattice ``anchor + k * every`` (unaffected by DST)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..errors import InvalidSchedule
from ._base import (
    ONE_US,
    Span,
    describe_spans,
    duration_parts,
    format_duration,
    latest_outside,
    next_outside,
    require_aware,
    spans_of,
    spans_spec,
)

if TYPE_CHECKING:
    from collections.abc import Iterable


@dataclass(frozen=True, slots=True, init=False, repr=False)
class Interval:
    """Fire times ``anchor + k * every`` for every integer ``k`` (absolute time, no DST).

    ``every`` must be a positive :class:`timedelta`; ``anchor`` must be aware (it is stored
    converted to UTC and may lie in the past or the future); ``exclude`` is spans of time
    ``(start, end)`` (aware, both ends included) whose points do not fire (kept in UTC,
    sorted and merged).  Raises :class:`InvalidSchedule` otherwise.  All arithmetic is
    exact integer microseconds.
    """

    every: timedelta
    anchor: datetime
    exclude: tuple[Span, ...]

    def __init__(
        self,
        every: timedelta,
        anchor: datetime,
        *,
        exclude: Iterable[tuple[datetime, datetime]] = (),
    ) -> None:
        if not isinstance(every, timedelta):
            raise InvalidSchedule(f"interval must be a timedelta, got {type(every).__name__}")
        if every <= timedelta(0):
            raise InvalidSchedule(f"interval must be positive, got {format_duration(every)}")
        object.__setattr__(self, "every", every)
        object.__setattr__(self, "anchor", require_aware(anchor, "interval anchor"))
        object.__setattr__(self, "exclude", spans_of(exclude))

    def __repr__(self) -> str:
        extra = f", exclude={self.exclude!r}" if self.exclude else ""
        return f"Interval(every={self.every!r}, anchor={self.anchor!r}{extra})"

    def _index(self, t: datetime) -> int:
        """Return ``k`` such that ``anchor + k*every <= t < anchor + (k+1)*every``."""
        return ((t - self.anchor) // ONE_US) // (self.every // ONE_US)

    def _point(self, k: int) -> datetime:
        """Return the lattice point ``anchor + k*every`` (raises OverflowError off-range)."""
        return self.anchor + timedelta(microseconds=k * (self.every // ONE_US))

    def next_after(self, t: datetime) -> datetime:
        """Return the smallest lattice point strictly after aware ``t`` outside the
        excluded spans, in UTC.

        O(1) (plus O(log n) per excluded span met).  Raises :class:`InvalidSchedule` for a
        naive ``t`` and :class:`OverflowError` if the point lies beyond the datetime range.
        """
        t_utc = require_aware(t, "t")
        if self.exclude:
            return next_outside(self.exclude, t_utc, self._next_point)
        return self._next_point(t_utc)

    def _next_point(self, t: datetime) -> datetime:
        return self._point(self._index(t) + 1)

    def latest_at_or_before(self, t: datetime) -> datetime | None:
        """Return the greatest lattice point ``<= t`` (aware ``t``) outside the excluded
        spans, in UTC.

        O(1) (plus O(log n) per excluded span met).  Returns ``None`` only if that point lies
        before the datetime range.  Raises :class:`InvalidSchedule` for a naive ``t``.
        """
        t_utc = require_aware(t, "t")
        if self.exclude:
            return latest_outside(self.exclude, t_utc, self._latest_point)
        return self._latest_point(t_utc)

    def _latest_point(self, t: datetime) -> datetime | None:
        k = self._index(t)
        try:
            return self._point(k)
        except OverflowError:
            return None

    def count_between(self, start: datetime, end: datetime) -> int:
        """Return how many fire times ``f`` satisfy ``start < f <= end`` (0 if
        ``end <= start``), excluded ones not counted.  Exact; O(1) plus O(1) per excluded
        span.  Raises :class:`InvalidSchedule` for naive arguments."""
        lo = require_aware(start, "start")
        hi = require_aware(end, "end")
        count = max(0, self._index(hi) - self._index(lo))
        for span_start, span_end in self.exclude:
            a = max(span_start - ONE_US, lo)
            b = min(span_end, hi)
            if b > a:
                count -= self._index(b) - self._index(a)
        return count

    def describe(self) -> str:
        """Return e.g. ``"every 15 minutes"``, ``"every hour"`` or
        ``"every hour except 1 span"``."""
        count, unit = duration_parts(self.every)
        words = f"every {unit}" if count == 1 else f"every {count} {unit}s"
        return words + describe_spans(self.exclude)

    def to_spec(self) -> dict[str, object]:
        """Return ``{"kind": "interval", "every_us": <int>, "anchor": <ISO 8601, UTC>}``,
        plus ``"exclude": [[start, end], ...]`` (ISO 8601, UTC) when it is set."""
        spec: dict[str, object] = {
            "kind": "interval",
            "every_us": self.every // ONE_US,
            "anchor": self.anchor.isoformat(),
        }
        if self.exclude:
            spec["exclude"] = spans_spec(self.exclude)
        return spec
