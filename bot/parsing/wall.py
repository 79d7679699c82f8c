"""Local wall times in a zone: which one a clock time means next, and the daylight-saving
gaps (times that don't exist) explained with the next valid time."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import TYPE_CHECKING

from ..i18n import t
from .display import discord_timestamp, past_message, plain_time, too_far_message, zone_label
from .errors import InputError
from .spoken import long_date

if TYPE_CHECKING:
    from collections.abc import Iterable


def days_in_month(year: int, month: int) -> int:
    following = date(year + month // 12, month % 12 + 1, 1)
    return (following - timedelta(days=1)).day


def exact_wall(naive: datetime, zone: tzinfo, now: datetime) -> datetime:
    """``naive`` read in ``zone`` (first occurrence if ambiguous).

    A future wall time skipped by a daylight-saving change is refused; a past one is
    returned as is, for the caller to refuse as past.
    """
    if not now.year - 2 <= naive.year <= now.year + 7:
        return _far_from_now(naive, zone, now)
    aware = naive.replace(tzinfo=zone)
    gap = skipped_span(naive, zone) if aware > now else None
    if gap is not None:
        start, end = gap
        raise InputError(
            gap_message(naive, zone, start, end),
            reason="gap",
            naive=naive,
            zone=zone,
            start=start,
            end=end,
        )
    return aware


def _far_from_now(naive: datetime, zone: tzinfo, now: datetime) -> datetime:
    """Refuse a wall time years away without converting it (that could overflow)."""
    aware = naive.replace(tzinfo=zone)
    understood = f"{discord_timestamp(aware)} ({plain_time(naive)} {zone_label(zone, naive)})"
    if naive.year > now.year:
        raise InputError(too_far_message(understood, now))
    raise InputError(past_message(understood))


def first_future(dates: Iterable[date], clock: time, zone: tzinfo, now: datetime) -> datetime:
    """The first ``clock`` on one of ``dates`` that is after ``now``.

    A wall time that happens twice normally means its first occurrence, but when "now" lies
    between the two occurrences the second one is the next, so that one is taken.
    """
    candidate = now
    for day in dates:
        naive = datetime.combine(day, clock)
        candidate = naive.replace(tzinfo=zone)
        if candidate > now:
            return exact_wall(naive, zone, now)
        repeated = candidate.replace(fold=1)  # in a gap fold=1 is earlier, so never chosen
        if repeated > now:
            return repeated
    return candidate  # not reached for the callers' date lists; _checked refuses it


def skipped_span(naive: datetime, zone: tzinfo) -> tuple[datetime, datetime] | None:
    """If ``naive`` is skipped in ``zone``, the local wall times where the skip starts and ends."""
    aware = naive.replace(tzinfo=zone)
    if aware.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == naive:
        return None
    before = aware.utcoffset() or timedelta(0)
    after = aware.replace(fold=1).utcoffset() or timedelta(0)
    low = naive - after  # UTC, before the transition
    high = naive - before  # UTC, at or after the transition
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        if middle.replace(tzinfo=UTC).astimezone(zone).utcoffset() == after:
            high = middle
        else:
            low = middle
    high = high.replace(microsecond=0)
    return high + before, high + after


def gap_message(naive: datetime, zone: tzinfo, start: datetime, end: datetime) -> str:
    where = zone_label(zone, naive)
    day = long_date(naive.date())
    same_day = start.date() == end.date()
    jump_from, jump_to = (
        (f"{start:%H:%M}", f"{end:%H:%M}") if same_day else (plain_time(start), plain_time(end))
    )
    return t(
        "{time} doesn't exist on {day} in {zone}: the clocks jump from {start} straight to "
        "{end}. The next valid time is {end}, so try `{suggestion}`.", time=f"{naive:%H:%M}",
        day=day, zone=where, start=jump_from, end=jump_to, suggestion=plain_time(end),
    )  # fmt: skip
