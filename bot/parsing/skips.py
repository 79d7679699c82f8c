"""Skipped dates: the spans of local wall time in which a repeating announcement does not
post (``/skip id: date:``, ``/skip id: from: to:``), kept as part of its rule.

A :class:`Skip` is a closed span of *wall* time in the announcement's zone, so it keeps its
meaning when the zone's offset changes within it (a skipped day is the whole local day,
23 or 25 hours long across a daylight-saving change). :func:`wall_spans` turns one into
the exact instants whose local wall time it holds, which the scheduler's trigger excludes
(``exclude=``): the scheduler itself never fires a skipped occurrence.

Everything here is pure: the zone and "now" are passed in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Final

from .spoken import clock, long_date

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from zoneinfo import ZoneInfo

ONE_US: Final = timedelta(microseconds=1)
_DAY_END: Final = time(23, 59, 59, 999_999)
_MINUTE_END: Final = timedelta(seconds=59, microseconds=999_999)
_STEP: Final = timedelta(hours=6)
"""How far apart the offset is sampled when looking for a zone's changes (no zone changes its
offset twice within six hours)."""
MAX_SKIPS: Final = 100
"""The most skipped spans one announcement keeps (past ones are dropped)."""


@dataclass(frozen=True, slots=True, order=True)
class Skip:
    """A closed span of local wall time, ``start <= end`` (naive, to the microsecond)."""

    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        if self.start.tzinfo is not None or self.end.tzinfo is not None:
            raise ValueError("a skip is local wall time (naive datetimes)")
        if self.end < self.start:
            raise ValueError(f"a skip ends before it starts: {self.start} > {self.end}")

    @classmethod
    def day(cls, day: date) -> Skip:
        """The whole local day ``day``."""
        return cls(datetime.combine(day, time()), datetime.combine(day, _DAY_END))

    @classmethod
    def minute(cls, wall: datetime) -> Skip:
        """The local minute of ``wall`` (an occurrence named by its date and time)."""
        start = wall.replace(second=0, microsecond=0)
        return cls(start, start + _MINUTE_END)

    @classmethod
    def between(cls, start: date | datetime, end: date | datetime) -> Skip:
        """From ``start`` to ``end``, both included: a date alone is the start of that day as
        a start and its end as an end; a time is its whole minute."""
        if isinstance(start, datetime):
            lo = start.replace(second=0, microsecond=0)
        else:
            lo = datetime.combine(start, time())
        if isinstance(end, datetime):
            hi = end.replace(second=0, microsecond=0) + _MINUTE_END
        else:
            hi = datetime.combine(end, _DAY_END)
        return cls(lo, hi)

    @property
    def whole_days(self) -> bool:
        return self.start.time() == time() and self.end.time() == _DAY_END

    @property
    def one_minute(self) -> bool:
        return self.end - self.start == _MINUTE_END and self.start.second == 0

    def words(self) -> str:
        """For people, in the reader's language: ``Friday 25 December 2026``, ``Friday 25
        December 2026 18:00``, or a range of either, ``… – …``."""
        if self.whole_days:
            if self.start.date() == self.end.date():
                return long_date(self.start.date())
            return f"{long_date(self.start.date())} – {long_date(self.end.date())}"
        if self.one_minute:
            return f"{long_date(self.start.date())} {clock(self.start)}"
        start = long_date(self.start.date())
        if self.start.time() != time():
            start += f" {clock(self.start)}"
        end = long_date(self.end.date())
        if self.end.time() != _DAY_END:
            end += f" {clock(self.end)}"
        return f"{start} – {end}"

    def label(self) -> str:
        """In no language: ``2026-12-25``, ``2026-12-25 18:00``, ``2026-12-24 18:00 –
        2027-01-02`` (what the history keeps)."""
        if self.one_minute:
            return f"{self.start:%Y-%m-%d %H:%M}"
        start = f"{self.start:%Y-%m-%d}" + (
            "" if self.start.time() == time() else f" {self.start:%H:%M}"
        )
        end = f"{self.end:%Y-%m-%d}" + ("" if self.end.time() == _DAY_END else f" {self.end:%H:%M}")
        return start if start == end else f"{start} – {end}"

    def to_json(self) -> list[str]:
        return [self.start.isoformat(), self.end.isoformat()]

    @classmethod
    def from_json(cls, value: object) -> Skip:
        """A skip as :meth:`to_json` wrote it; ValueError for anything else."""
        if not (
            isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)
        ):
            raise ValueError(f"a skip is [start, end] (ISO local times), not {value!r}")
        return cls(datetime.fromisoformat(value[0]), datetime.fromisoformat(value[1]))


def encode_skips(skips: Sequence[Skip]) -> str | None:
    """The skips as stored (JSON), None when there are none."""
    return json.dumps([s.to_json() for s in skips]) if skips else None


def decode_skips(text: str | None) -> tuple[Skip, ...]:
    if not text:
        return ()
    raw = json.loads(text)
    if not isinstance(raw, list):
        raise ValueError(f"skips are a list, not {raw!r}")
    return tuple(Skip.from_json(item) for item in raw)


def merged(skips: Iterable[Skip]) -> tuple[Skip, ...]:
    """The skips sorted, the overlapping or touching ones made one."""
    out: list[Skip] = []
    for s in sorted(skips):
        if out and s.start <= out[-1].end + ONE_US:
            out[-1] = Skip(out[-1].start, max(out[-1].end, s.end))
        else:
            out.append(s)
    return tuple(out)


def without(skips: Iterable[Skip], taken: Skip) -> tuple[Skip, ...]:
    """The skips with the wall time ``taken`` holds taken out of them (a span partly in it
    keeps the rest, in one or two pieces)."""
    out: list[Skip] = []
    for s in skips:
        if s.end < taken.start or s.start > taken.end:
            out.append(s)
            continue
        if s.start < taken.start:
            out.append(Skip(s.start, taken.start - ONE_US))
        if s.end > taken.end:
            out.append(Skip(taken.end + ONE_US, s.end))
    return merged(out)


def still_to_come(skips: Iterable[Skip], zone: ZoneInfo, now: datetime) -> tuple[Skip, ...]:
    """The skips that end after ``now`` (the past ones hold nothing still to come)."""
    return tuple(s for s in skips if any(end > now for _, end in wall_spans(s, zone)))


def wall_spans(skip: Skip, zone: ZoneInfo) -> list[tuple[datetime, datetime]]:
    """The instants (aware, UTC, closed spans, ordered) whose local wall time in ``zone``
    lies in ``skip``: exact across daylight-saving changes (a repeated hour's second pass
    is held when its wall time is; a span starting in a skipped hour starts where the clocks
    land)."""
    lo = (skip.start - timedelta(hours=15)).replace(tzinfo=UTC)
    stop = (skip.end + timedelta(hours=15)).replace(tzinfo=UTC)
    out: list[tuple[datetime, datetime]] = []
    for seg_start, seg_end, offset in _segments(lo, stop, zone):
        start = max(seg_start, (skip.start - offset).replace(tzinfo=UTC))
        end = min(seg_end - ONE_US, (skip.end - offset).replace(tzinfo=UTC))
        if start > end:
            continue
        if out and start <= out[-1][1] + ONE_US:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _segments(
    start: datetime, stop: datetime, zone: ZoneInfo
) -> list[tuple[datetime, datetime, timedelta]]:
    """``[start, stop)`` cut where ``zone``'s offset changes: ``(from, to, offset)``."""
    out = []
    seg = start
    offset = _offset(seg, zone)
    t = seg
    while t < stop:
        nxt = min(t + _STEP, stop)
        if _offset(nxt, zone) != offset:
            change = _change_between(t, nxt, zone, offset)
            out.append((seg, change, offset))
            seg, offset = change, _offset(change, zone)
            t = change
            continue
        t = nxt
    out.append((seg, stop, offset))
    return out


def _offset(t: datetime, zone: ZoneInfo) -> timedelta:
    return t.astimezone(zone).utcoffset() or timedelta(0)


def _change_between(lo: datetime, hi: datetime, zone: ZoneInfo, before: timedelta) -> datetime:
    """The first instant in ``(lo, hi]`` whose offset is not ``before`` (offsets change on
    whole seconds)."""
    lo_s, hi_s = int(lo.timestamp()), int(hi.timestamp())
    while hi_s - lo_s > 1:
        mid = (lo_s + hi_s) // 2
        if _offset(datetime.fromtimestamp(mid, UTC), zone) == before:
            lo_s = mid
        else:
            hi_s = mid
    return datetime.fromtimestamp(hi_s, UTC)


def excluded_spans(skips: Iterable[Skip], zone: ZoneInfo) -> list[tuple[datetime, datetime]]:
    """Every instant the skips hold, as the scheduler's triggers take them (``exclude=``)."""
    return [span for s in skips for span in wall_spans(s, zone)]


def holds(skips: Iterable[Skip], fire: datetime, zone: ZoneInfo) -> bool:
    """Whether one of the skips holds the occurrence at ``fire`` (by its local wall time)."""
    wall = fire.astimezone(zone).replace(tzinfo=None)
    return any(s.start <= wall <= s.end for s in skips)
