"""What every trigger shares: the :class:`Trigger` protocol, aware-time and time-zone checks,
and durations in words."""

from __future__ import annotations

from bisect import bisect_right
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import InvalidSchedule

if TYPE_CHECKING:
    from collections.abc import Callable


@runtime_checkable
class Trigger(Protocol):
    """The questions a scheduler asks about a recurrence.

    Implementations are immutable and pure.  ``t`` must be an aware datetime (any zone);
    a naive one raises :class:`InvalidSchedule`.  Results are aware datetimes in UTC.
    """

    def next_after(self, t: datetime) -> datetime:
        """Return the first fire time strictly after ``t``.

        Guarantees: the result ``r`` is ``> t``; ``next_after(u) == r`` for every ``u`` in
        ``[t, r)`` (no fire time is skipped); iterating ``r = next_after(r)`` strictly
        increases.
        """
        ...

    def latest_at_or_before(self, t: datetime) -> datetime | None:
        """Return the greatest fire time ``<= t``, or ``None`` if there is none.

        It is the inverse of :meth:`next_after`: if ``p = latest_at_or_before(t)`` is not
        ``None`` then ``p <= t < next_after(p)``.  The work is bounded no matter how far
        back ``p`` lies.
        """
        ...

    def describe(self) -> str:
        """Return a short English description, e.g. ``"every 15 minutes"``."""
        ...

    def to_spec(self) -> dict[str, object]:
        """Return a JSON-serialisable dict that :func:`trigger_from_spec` turns back into an
        equal trigger."""
        ...


ONE_US: Final = timedelta(microseconds=1)
ONE_MINUTE: Final = timedelta(minutes=1)
ONE_DAY: Final = timedelta(days=1)


def require_aware(value: object, what: str) -> datetime:
    """Return ``value`` converted to UTC, or raise :class:`InvalidSchedule` if it is not an
    aware datetime."""
    if not isinstance(value, datetime):
        raise InvalidSchedule(f"{what} must be an aware datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidSchedule(
            f"{what} must be an aware datetime (with a tzinfo), got naive {value.isoformat()}"
        )
    return value.astimezone(UTC)


def validate_timezone(name: str) -> ZoneInfo:
    """Return the :class:`~zoneinfo.ZoneInfo` for an IANA zone name such as
    ``"Europe/London"`` or ``"UTC"``.

    Raises :class:`InvalidSchedule` naming the zone if it is not a string or no such zone
    exists (names are case-sensitive, as in the IANA database).
    """
    if not isinstance(name, str):
        raise InvalidSchedule(f"time zone must be a string, got {type(name).__name__}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise InvalidSchedule(
            f"unknown time zone {name!r} "
            "(expected an IANA time zone name such as 'Europe/London' or 'UTC')"
        ) from exc


_DURATION_UNITS: Final = (
    ("week", 7 * 86_400_000_000),
    ("day", 86_400_000_000),
    ("hour", 3_600_000_000),
    ("minute", 60_000_000),
    ("second", 1_000_000),
    ("millisecond", 1_000),
    ("microsecond", 1),
)


def duration_parts(td: timedelta) -> tuple[int, str]:
    """Split ``td`` into ``(count, unit)`` using the largest unit that divides it exactly."""
    us = td // ONE_US
    if us == 0:
        return 0, "second"
    for unit, size in _DURATION_UNITS:
        if us % size == 0:
            return us // size, unit
    raise AssertionError("unreachable: the microsecond unit divides everything")


def format_duration(td: timedelta) -> str:
    """Return ``td`` as e.g. ``"15 minutes"``, ``"1 hour"``, ``"-5 seconds"``."""
    count, unit = duration_parts(td)
    return f"{count} {unit}" if abs(count) == 1 else f"{count} {unit}s"


Span = tuple[datetime, datetime]
"""A closed span of time ``(start, end)``, both aware and in UTC, ``start <= end``."""


def spans_of(value: object) -> tuple[Span, ...]:
    """``exclude=`` as a trigger keeps it: each ``(start, end)`` pair of aware datetimes
    converted to UTC, sorted, and overlapping or touching spans merged (so the result is
    ordered and disjoint). Raises :class:`InvalidSchedule` for anything else, or a span that
    ends before it starts."""
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
        raise InvalidSchedule(
            f"exclude must be pairs of (start, end) datetimes, got {type(value).__name__}"
        )
    pairs: list[Span] = []
    for item in value:
        if not isinstance(item, tuple | list) or len(item) != 2:
            raise InvalidSchedule(f"exclude takes (start, end) pairs, got {item!r}")
        start = require_aware(item[0], "an excluded span's start")
        end = require_aware(item[1], "an excluded span's end")
        if end < start:
            raise InvalidSchedule(
                f"an excluded span ends before it starts: {start.isoformat()} > {end.isoformat()}"
            )
        pairs.append((start, end))
    pairs.sort()
    merged: list[Span] = []
    for start, end in pairs:
        if merged and start <= merged[-1][1] + ONE_US:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged)


def covering(spans: tuple[Span, ...], t: datetime) -> Span | None:
    """The span of ``spans`` (ordered, disjoint) that holds ``t``, or None (O(log n))."""
    i = bisect_right(spans, t, key=lambda span: span[0]) - 1
    if i >= 0 and spans[i][1] >= t:
        return spans[i]
    return None


def next_outside(
    spans: tuple[Span, ...], t: datetime, next_after: Callable[[datetime], datetime]
) -> datetime:
    """The first time ``next_after`` gives after ``t`` that no span holds: each span met is
    stepped over whole, so the work grows with the spans met, not with the fire times in
    them."""
    r = next_after(t)
    while (span := covering(spans, r)) is not None:
        r = next_after(span[1])
    return r


def latest_outside(
    spans: tuple[Span, ...],
    t: datetime,
    latest_at_or_before: Callable[[datetime], datetime | None],
) -> datetime | None:
    """The mirror of :func:`next_outside`: the latest time ``<= t`` no span holds."""
    p = latest_at_or_before(t)
    while p is not None and (span := covering(spans, p)) is not None:
        try:
            p = latest_at_or_before(span[0] - ONE_US)
        except OverflowError:
            return None
    return p


def spans_spec(spans: tuple[Span, ...]) -> list[list[str]]:
    return [[start.isoformat(), end.isoformat()] for start, end in spans]


def describe_spans(spans: tuple[Span, ...]) -> str:
    """``""``, or e.g. ``" except 2 spans"`` to append to a description."""
    if not spans:
        return ""
    return f" except {len(spans)} span" + ("" if len(spans) == 1 else "s")
