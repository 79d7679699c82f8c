"""Recurrence triggers: pure functions from an instant to the next (or latest) fire time.

A trigger never touches a clock, a database or an event loop; it only answers questions
about a fixed, infinite set of *fire times* (aware instants):

* :class:`Cron` — a standard 5-field cron expression read as **local wall-clock time in an
  IANA time zone**.  Daylight-saving transitions follow one rule, stated in terms of the
  naive local wall times the expression matches:

  - a wall time that does not exist that day (it falls in a spring-forward gap) is
    **skipped** — the job does not run that day, it is not moved to the jump instant;
  - a wall time that happens twice (fall-back) fires **once**, at its *first* occurrence
    (``fold=0``); the repeated pass of the hour produces nothing.

  Formally: with ``E(w)`` the instant of wall time ``w`` read with ``fold=0``, the fire
  times are ``{E(w) : w matches the expression and w exists in the zone}``.  ``E``
  restricted to existing wall times is strictly increasing, so fire times are ordered
  exactly like their wall times and no wall time ever fires twice.

* :class:`Interval` — the absolute-time lattice ``anchor + k * every`` for every integer
  ``k`` (unaffected by DST), computed with exact integer microseconds.

Every datetime a trigger returns is aware and in UTC.  Every datetime it accepts must be
aware; a naive one raises :class:`~scheduler.errors.InvalidSchedule`.

Cron field syntax (validated here, with messages naming the field and the reason):
numbers, ``*``, ranges ``a-b``, steps ``*/n``, ``a-b/n`` and ``a/n`` (``a`` up to the
field's maximum), comma lists, month names ``JAN``-``DEC`` and day names ``SUN``-``SAT``
(case-insensitive; ``SUN`` at the end of a range means 7), day-of-week 0-7 (0 and 7 are
Sunday), ``L`` (last day of the month) in the day-of-month field, and the macros
``@hourly @daily @midnight @weekly @monthly @yearly @annually``.  When both day-of-month
and day-of-week are restricted (neither covers every value), a day matches if *either*
matches (Vixie cron); when only one is restricted, only that one applies.  Whether a field
is restricted depends on the set of values it denotes, not on its spelling (``1-31`` is the
same as ``*``).  Expressions that can never fire (``0 0 30 2 *``) are rejected.

Two calendar rules that five fields cannot say are keyword arguments of :class:`Cron`
(they restrict the *dates* the expression matches; times and the DST rule are unchanged):

* ``nth=(2, 4)``: a matching weekday counts only if it is the 2nd or 4th of its weekday in
  its month (``-1``: the last), e.g. ``Cron("0 9 * * 4", tz, nth=(2, 4))`` for 09:00 on
  the 2nd and 4th Thursday;
* ``step=DateStep(2, "week", date(2026, 12, 1))``: only every 2nd local week (Monday to
  Sunday), counted from the week of that date, e.g. every other Tuesday at 09:00; also
  ``"day"`` (every n-th local date) and ``"month"`` (every n-th calendar month).  Unlike an
  :class:`Interval` of 14 days, this keeps the local time of day across DST.

The expression is iterated by :mod:`croniter` on *naive* wall times only (a canonical
number-list form of the parsed fields is handed to it, so it sees exactly the schedule that
was validated; the parsing, validation and croniter walkers are in
:mod:`scheduler._cron_expr`); all time-zone logic lives here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Final, Protocol, runtime_checkable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter

from scheduler._calendar import (
    DateStep,
    check_nth,
    check_step,
    next_nth_window,
    nth_of_month,
    previous_nth_window,
)
from scheduler._cron_expr import CRON_MACROS as CRON_MACROS  # the bot's parsers read it
from scheduler._cron_expr import compile_cron, walker
from scheduler.errors import InvalidSchedule, SchedulerError

__all__ = [
    "Cron",
    "DateStep",
    "Interval",
    "Trigger",
    "trigger_from_spec",
    "validate_timezone",
]


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


# ---------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------

_ONE_US: Final = timedelta(microseconds=1)
_ONE_MINUTE: Final = timedelta(minutes=1)
_ONE_DAY: Final = timedelta(days=1)


def _require_aware(value: object, what: str) -> datetime:
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


def _duration_parts(td: timedelta) -> tuple[int, str]:
    """Split ``td`` into ``(count, unit)`` using the largest unit that divides it exactly."""
    us = td // _ONE_US
    if us == 0:
        return 0, "second"
    for unit, size in _DURATION_UNITS:
        if us % size == 0:
            return us // size, unit
    raise AssertionError("unreachable: the microsecond unit divides everything")


def _format_duration(td: timedelta) -> str:
    """Return ``td`` as e.g. ``"15 minutes"``, ``"1 hour"``, ``"-5 seconds"``."""
    count, unit = _duration_parts(td)
    return f"{count} {unit}" if abs(count) == 1 else f"{count} {unit}s"


# ---------------------------------------------------------------------------------------
# Cron
# ---------------------------------------------------------------------------------------

# Upper bound on consecutive candidate wall times rejected in one search (nonexistent, or
# on the wrong side of t in a repeated hour).  A rejection run is at most one DST gap or
# one repeated period of matching minutes -- at most a day (Samoa skipped 2011-12-30) --
# so this bound is never reached with real time-zone data; it only guarantees termination.
_MAX_REJECTED_CANDIDATES: Final = 20_000


@dataclass(frozen=True, slots=True, init=False, repr=False)
class Cron:
    """A cron expression evaluated on local wall-clock time in an IANA time zone.

    ``Cron(expr, tz=None, *, nth=None, step=None)``: ``tz`` is a zone name, a
    :class:`ZoneInfo` with a key, or ``None`` for UTC; ``nth`` and ``step`` restrict the
    dates the expression matches (see the module docstring).  Raises
    :class:`InvalidSchedule` for a malformed or never-firing expression or an unknown zone.
    See the module docstring for the DST rules.

    Equality and hashing use ``expr`` (whitespace-normalised, otherwise as written),
    ``tz_name``, ``nth`` and ``step``.
    """

    expr: str
    tz_name: str
    tz: ZoneInfo = field(compare=False)
    _croniter_expr: str = field(compare=False)
    nth: tuple[int, ...]
    step: DateStep | None

    def __init__(
        self,
        expr: str,
        tz: str | ZoneInfo | None = None,
        *,
        nth: Iterable[int] | None = None,
        step: DateStep | None = None,
    ) -> None:
        if not isinstance(expr, str):
            raise InvalidSchedule(f"cron expression must be a string, got {type(expr).__name__}")
        canonical = compile_cron(expr)
        if tz is None:
            zone = validate_timezone("UTC")
        elif isinstance(tz, ZoneInfo):
            if tz.key is None:
                raise InvalidSchedule(
                    "time zone has no IANA key (ZoneInfo.from_file); pass a zone name instead"
                )
            zone = validate_timezone(tz.key)
        elif isinstance(tz, str):
            zone = validate_timezone(tz)
        else:
            raise InvalidSchedule(
                f"time zone must be an IANA name or a ZoneInfo, got {type(tz).__name__}"
            )
        fields = canonical.split()
        nth_values = check_nth(nth, fields, expr)
        if nth_values and step is not None and step.unit != "month":
            raise InvalidSchedule("nth goes with a step of months only, not of days or weeks")
        check_step(step, fields, "L" in fields[2], expr)
        object.__setattr__(self, "expr", " ".join(expr.split()))
        object.__setattr__(self, "tz_name", zone.key)
        object.__setattr__(self, "tz", zone)
        object.__setattr__(self, "_croniter_expr", canonical)
        object.__setattr__(self, "nth", nth_values)
        object.__setattr__(self, "step", step)

    def _walls(self, start: datetime) -> croniter:
        """A croniter over this expression positioned at naive ``start``."""
        return walker(self._croniter_expr, start)

    def __repr__(self) -> str:
        extra = f", nth={self.nth!r}" if self.nth else ""
        extra += f", step={self.step!r}" if self.step is not None else ""
        return f"Cron({self.expr!r}, tz={self.tz_name!r}{extra})"

    def _instant(self, wall: datetime) -> datetime | None:
        """Return the UTC instant of naive local ``wall`` read with ``fold=0`` (its first
        occurrence), or ``None`` if ``wall`` does not exist in the zone (a DST gap)."""
        instant = wall.replace(tzinfo=self.tz, fold=0).astimezone(UTC)
        if instant.astimezone(self.tz).replace(tzinfo=None) != wall:
            return None
        return instant

    def _date_ok(self, day: date) -> bool:
        if self.step is not None and not self.step.allows(day):
            return False
        if self.nth:
            occurrence, last = nth_of_month(day)
            return occurrence in self.nth or (last and -1 in self.nth)
        return True

    def _skip_forward(self, day: date) -> datetime:
        """Where to reposition the walk after a wall on ``day``, a date the rule excludes:
        one minute before the next date that may match (``get_next`` is strict)."""
        if self.step is not None and not self.step.allows(day):
            after = self.step.next_allowed(day)
        else:
            after = next_nth_window(day, self.nth)
        return datetime.combine(after, time()) - _ONE_MINUTE

    def _skip_back(self, day: date) -> datetime:
        """Where to reposition the walk down after a wall on excluded ``day``: the midnight
        ending the previous date that may match (``get_prev`` is strict)."""
        if self.step is not None and not self.step.allows(day):
            before = self.step.previous_allowed(day)
        else:
            before = previous_nth_window(day, self.nth)
        return datetime.combine(before + _ONE_DAY, time())

    def next_after(self, t: datetime) -> datetime:
        """Return the first fire time strictly after aware ``t``, in UTC.

        Every existing wall time ``w`` with ``E(w) > t`` lies after ``t``'s own wall time
        (if ``t`` is in the repeated pass of an hour, after the whole repeated period), so
        the matching wall times after ``t``'s minute are walked in order and the first one
        that exists and maps past ``t`` is the answer; by monotonicity of ``E`` it is the
        smallest.  A wall on a date that ``nth``/``step`` exclude moves the walk on to the
        next date that may match.  Raises :class:`InvalidSchedule` for a naive ``t`` and
        :class:`OverflowError` if the answer would lie beyond the datetime range.
        """
        t_utc = _require_aware(t, "t")
        try:
            start = t_utc.astimezone(self.tz).replace(tzinfo=None, second=0, microsecond=0)
            walls = self._walls(start)
            for _ in range(_MAX_REJECTED_CANDIDATES):
                wall = walls.get_next(datetime)
                if not self._date_ok(wall.date()):
                    walls.set_current(self._skip_forward(wall.date()), force=True)
                    continue
                instant = self._instant(wall)
                if instant is not None and instant > t_utc:
                    return instant
        except (CroniterBadDateError, OverflowError, ValueError) as exc:
            # Only the ends of the datetime range get here (croniter reports a year out of
            # range as ValueError); `t` itself was validated above.
            raise OverflowError(
                f"{self.describe()} has no fire time after {t_utc.isoformat()} "
                "within the supported datetime range"
            ) from exc
        raise SchedulerError(  # pragma: no cover - unreachable with real tz data
            f"{self.describe()}: no fire time found after {t_utc.isoformat()} "
            f"within {_MAX_REJECTED_CANDIDATES} candidate wall times"
        )

    def latest_at_or_before(self, t: datetime) -> datetime | None:
        """Return the greatest fire time ``<= t`` (aware ``t``), in UTC.

        The mirror of :meth:`next_after`: walks matching wall times downwards from ``t``'s
        wall time (from the end of the repeated period when ``t`` is in the second pass of
        a fall-back hour, whose first-pass fire times precede ``t``).  The work is bounded:
        a validated expression matches an existing wall time at least every 8 years
        (29 February across a non-leap century year), and croniter jumps by fields, not by
        minutes; excluded dates are jumped over the same way.  Returns ``None`` only when
        the search would leave the datetime range.  Raises :class:`InvalidSchedule` for a
        naive ``t``.
        """
        t_utc = _require_aware(t, "t")
        try:
            local = t_utc.astimezone(self.tz)
            wall = local.replace(tzinfo=None)
            # In the second pass of a repeated period the fold=0 offset is the larger one.
            first_pass_offset = wall.replace(tzinfo=self.tz, fold=0).utcoffset()
            actual_offset = local.utcoffset()
            assert first_pass_offset is not None and actual_offset is not None
            upper = wall + max(timedelta(0), first_pass_offset - actual_offset)
            # croniter's get_prev is strict and minute-granular: start one minute past the
            # floor of `upper` to include `upper`'s own minute.
            start = upper.replace(second=0, microsecond=0) + _ONE_MINUTE
            walls = self._walls(start)
            for _ in range(_MAX_REJECTED_CANDIDATES):
                candidate = walls.get_prev(datetime)
                if not self._date_ok(candidate.date()):
                    walls.set_current(self._skip_back(candidate.date()), force=True)
                    continue
                instant = self._instant(candidate)
                if instant is not None and instant <= t_utc:
                    return instant
        except (CroniterBadDateError, OverflowError, ValueError):
            return None  # the search left the datetime range (see next_after)
        raise SchedulerError(  # pragma: no cover - unreachable with real tz data
            f"{self.describe()}: no fire time found at or before {t_utc.isoformat()} "
            f"within {_MAX_REJECTED_CANDIDATES} candidate wall times"
        )

    def describe(self) -> str:
        """Return e.g. ``"cron '0 9 * * 1-5' (Europe/London)"`` or
        ``"cron '0 9 * * 4' nth 2,4 (Europe/Paris)"``."""
        extra = f" nth {','.join(map(str, self.nth))}" if self.nth else ""
        extra += f" {self.step.describe()}" if self.step is not None else ""
        return f"cron {self.expr!r}{extra} ({self.tz_name})"

    def to_spec(self) -> dict[str, object]:
        """Return ``{"kind": "cron", "expr": ..., "tz": ...}``, plus ``"nth": [...]`` and
        ``"step": {"count", "unit", "since"}`` when they are set."""
        spec: dict[str, object] = {"kind": "cron", "expr": self.expr, "tz": self.tz_name}
        if self.nth:
            spec["nth"] = list(self.nth)
        if self.step is not None:
            spec["step"] = self.step.to_spec()
        return spec


# ---------------------------------------------------------------------------------------
# Interval
# ---------------------------------------------------------------------------------------


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
            raise InvalidSchedule(f"interval must be positive, got {_format_duration(every)}")
        object.__setattr__(self, "every", every)
        object.__setattr__(self, "anchor", _require_aware(anchor, "interval anchor"))

    def __repr__(self) -> str:
        return f"Interval(every={self.every!r}, anchor={self.anchor!r})"

    def _index(self, t: datetime) -> int:
        """Return ``k`` such that ``anchor + k*every <= t < anchor + (k+1)*every``."""
        return ((t - self.anchor) // _ONE_US) // (self.every // _ONE_US)

    def _point(self, k: int) -> datetime:
        """Return the lattice point ``anchor + k*every`` (raises OverflowError off-range)."""
        return self.anchor + timedelta(microseconds=k * (self.every // _ONE_US))

    def next_after(self, t: datetime) -> datetime:
        """Return the smallest lattice point strictly after aware ``t``, in UTC.

        O(1).  Raises :class:`InvalidSchedule` for a naive ``t`` and :class:`OverflowError`
        if the point lies beyond the datetime range.
        """
        return self._point(self._index(_require_aware(t, "t")) + 1)

    def latest_at_or_before(self, t: datetime) -> datetime | None:
        """Return the greatest lattice point ``<= t`` (aware ``t``), in UTC.

        O(1).  Returns ``None`` only if that point lies before the datetime range.
        Raises :class:`InvalidSchedule` for a naive ``t``.
        """
        k = self._index(_require_aware(t, "t"))
        try:
            return self._point(k)
        except OverflowError:
            return None

    def count_between(self, start: datetime, end: datetime) -> int:
        """Return how many fire times ``f`` satisfy ``start < f <= end`` (0 if
        ``end <= start``).  O(1) and exact.  Raises :class:`InvalidSchedule` for naive
        arguments."""
        first = self._index(_require_aware(start, "start"))
        last = self._index(_require_aware(end, "end"))
        return max(0, last - first)

    def describe(self) -> str:
        """Return e.g. ``"every 15 minutes"`` or ``"every hour"``."""
        count, unit = _duration_parts(self.every)
        return f"every {unit}" if count == 1 else f"every {count} {unit}s"

    def to_spec(self) -> dict[str, object]:
        """Return ``{"kind": "interval", "every_us": <int>, "anchor": <ISO 8601, UTC>}``."""
        return {
            "kind": "interval",
            "every_us": self.every // _ONE_US,
            "anchor": self.anchor.isoformat(),
        }


# ---------------------------------------------------------------------------------------
# Specs
# ---------------------------------------------------------------------------------------

# kind -> (required keys, optional keys)
_SPEC_KEYS: Final[dict[str, tuple[frozenset[str], frozenset[str]]]] = {
    "cron": (frozenset({"kind", "expr"}), frozenset({"tz", "nth", "step"})),
    "interval": (frozenset({"kind", "every_us", "anchor"}), frozenset()),
}


def trigger_from_spec(spec: dict[str, object]) -> Cron | Interval:
    """Rebuild a trigger from :meth:`Trigger.to_spec` output.

    ``{"kind": "cron", "expr": str, "tz": str}`` (``tz`` optional, default UTC; optional
    ``"nth": [int]`` and ``"step": {"count": int, "unit": str, "since": "YYYY-MM-DD"}``) or
    ``{"kind": "interval", "every_us": int, "anchor": ISO 8601 string with an offset}``.
    Unknown keys, missing keys and wrong types raise :class:`InvalidSchedule`, as does
    anything the trigger's constructor rejects.
    """
    if not isinstance(spec, Mapping):
        raise InvalidSchedule(f"trigger spec must be a dict, got {type(spec).__name__}")
    kind = spec.get("kind")
    if not isinstance(kind, str) or kind not in _SPEC_KEYS:
        raise InvalidSchedule(f"unknown trigger kind {kind!r} (expected 'cron' or 'interval')")
    required, optional = _SPEC_KEYS[kind]
    missing = sorted(required - spec.keys())
    if missing:
        raise InvalidSchedule(f"{kind} trigger spec is missing {', '.join(missing)}")
    unknown = sorted(str(key) for key in spec.keys() - required - optional)
    if unknown:
        raise InvalidSchedule(f"{kind} trigger spec has unknown keys {', '.join(unknown)}")

    if kind == "cron":
        expr = spec["expr"]
        tz = spec.get("tz", "UTC")
        if not isinstance(expr, str):
            raise InvalidSchedule(f"cron spec 'expr' must be a string, got {type(expr).__name__}")
        if not isinstance(tz, str):
            raise InvalidSchedule(f"cron spec 'tz' must be a string, got {type(tz).__name__}")
        nth = spec.get("nth")
        if nth is not None and not (isinstance(nth, list) and all(type(n) is int for n in nth)):
            raise InvalidSchedule(f"cron spec 'nth' must be a list of integers, got {nth!r}")
        return Cron(expr, tz, nth=nth, step=_step_from_spec(spec.get("step")))

    every_us = spec["every_us"]
    anchor_text = spec["anchor"]
    if not isinstance(every_us, int) or isinstance(every_us, bool):
        raise InvalidSchedule(
            f"interval spec 'every_us' must be an integer, got {type(every_us).__name__}"
        )
    if not isinstance(anchor_text, str):
        raise InvalidSchedule(
            f"interval spec 'anchor' must be an ISO 8601 string, got {type(anchor_text).__name__}"
        )
    try:
        anchor = datetime.fromisoformat(anchor_text)
        every = timedelta(microseconds=every_us)
    except (ValueError, OverflowError) as exc:
        raise InvalidSchedule(f"invalid interval spec: {exc}") from exc
    return Interval(every, anchor)


def _step_from_spec(value: object) -> DateStep | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != {"count", "unit", "since"}:
        raise InvalidSchedule(
            f"cron spec 'step' must be a dict with count, unit and since, got {value!r}"
        )
    since = value["since"]
    if not isinstance(since, str):
        raise InvalidSchedule(f"cron spec step 'since' must be an ISO date, got {since!r}")
    try:
        day = date.fromisoformat(since)
    except ValueError as exc:
        raise InvalidSchedule(f"cron spec step 'since' must be an ISO date: {exc}") from exc
    return DateStep(value["count"], value["unit"], day)


def trigger_from_json(spec_json: str) -> Cron | Interval:
    """:func:`trigger_from_spec` of a spec stored as JSON text (a schedule row's)."""
    spec = json.loads(spec_json)
    return trigger_from_spec(spec)
