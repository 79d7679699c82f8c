"""Cron expressions on local wall-clock time in an IANA time zone (the DST rules are in the
docstring of :mod:`scheduler.triggers`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Final
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, croniter

from ..errors import InvalidSchedule, SchedulerError
from ._base import (
    ONE_DAY,
    ONE_MINUTE,
    Span,
    describe_spans,
    latest_outside,
    next_outside,
    require_aware,
    spans_of,
    spans_spec,
    validate_timezone,
)
from ._calendar import (
    DateStep,
    check_nth,
    check_step,
    next_nth_window,
    nth_of_month,
    previous_nth_window,
)
from ._expr import compile_cron, walker

if TYPE_CHECKING:
    from collections.abc import Iterable

# Upper bound on consecutive candidate wall times rejected in one search (nonexistent, or
# on the wrong side of t in a repeated hour).  A rejection run is at most one DST gap or
# one repeated period of matching minutes -- at most a day (Samoa skipped 2011-12-30) --
# so this bound is never reached with real time-zone data; it only guarantees termination.
_MAX_REJECTED_CANDIDATES: Final = 20_000


@dataclass(frozen=True, slots=True, init=False, repr=False)
class Cron:
    """A cron expression evaluated on local wall-clock time in an IANA time zone.

    ``Cron(expr, tz=None, *, nth=None, step=None, exclude=())``: ``tz`` is a zone name, a
    :class:`ZoneInfo` with a key, or ``None`` for UTC; ``nth`` and ``step`` restrict the
    dates the expression matches (see the module docstring); ``exclude`` is spans of time
    ``(start, end)`` (aware, both ends included) in which it does not fire (kept in UTC,
    sorted and merged, as ``exclude``).  Raises :class:`InvalidSchedule` for a malformed or
    never-firing expression, an unknown zone or a span that ends before it starts.  See the
    module docstring for the DST rules.

    Equality and hashing use ``expr`` (whitespace-normalised, otherwise as written),
    ``tz_name``, ``nth``, ``step`` and ``exclude``.
    """

    expr: str
    tz_name: str
    tz: ZoneInfo = field(compare=False)
    _croniter_expr: str = field(compare=False)
    nth: tuple[int, ...]
    step: DateStep | None
    exclude: tuple[Span, ...]

    def __init__(
        self,
        expr: str,
        tz: str | ZoneInfo | None = None,
        *,
        nth: Iterable[int] | None = None,
        step: DateStep | None = None,
        exclude: Iterable[tuple[datetime, datetime]] = (),
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
        object.__setattr__(self, "exclude", spans_of(exclude))

    def _walls(self, start: datetime) -> croniter:
        """A croniter over this expression positioned at naive ``start``."""
        return walker(self._croniter_expr, start)

    def __repr__(self) -> str:
        extra = f", nth={self.nth!r}" if self.nth else ""
        extra += f", step={self.step!r}" if self.step is not None else ""
        extra += f", exclude={self.exclude!r}" if self.exclude else ""
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
        return datetime.combine(after, time()) - ONE_MINUTE

    def _skip_back(self, day: date) -> datetime:
        """Where to reposition the walk down after a wall on excluded ``day``: the midnight
        ending the previous date that may match (``get_prev`` is strict)."""
        if self.step is not None and not self.step.allows(day):
            before = self.step.previous_allowed(day)
        else:
            before = previous_nth_window(day, self.nth)
        return datetime.combine(before + ONE_DAY, time())

    def next_after(self, t: datetime) -> datetime:
        """Return the first fire time strictly after aware ``t``, in UTC.

        Every existing wall time ``w`` with ``E(w) > t`` lies after ``t``'s own wall time
        (if ``t`` is in the repeated pass of an hour, after the whole repeated period), so
        the matching wall times after ``t``'s minute are walked in order and the first one
        that exists and maps past ``t`` is the answer; by monotonicity of ``E`` it is the
        smallest.  A wall on a date that ``nth``/``step`` exclude moves the walk on to the
        next date that may match; a fire time in an excluded span moves it past the span.
        Raises :class:`InvalidSchedule` for a naive ``t`` and :class:`OverflowError` if the
        answer would lie beyond the datetime range.
        """
        t_utc = require_aware(t, "t")
        if self.exclude:
            return next_outside(self.exclude, t_utc, self._next_after)
        return self._next_after(t_utc)

    def _next_after(self, t_utc: datetime) -> datetime:
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
        the search would leave the datetime range.  A fire time in an excluded span moves
        it before the span.  Raises :class:`InvalidSchedule` for a naive ``t``.
        """
        t_utc = require_aware(t, "t")
        if self.exclude:
            return latest_outside(self.exclude, t_utc, self._latest_at_or_before)
        return self._latest_at_or_before(t_utc)

    def _latest_at_or_before(self, t_utc: datetime) -> datetime | None:
        try:
            local = t_utc.astimezone(self.tz)
            wall = local.replace(tzinfo=None)
            # In the second pass of a repeated period the fold=0 offset is the larger one.
            first_pass_offset = wall.replace(tzinfo=self.tz, fold=0).utcoffset()
            actual_offset = local.utcoffset()
            if first_pass_offset is None or actual_offset is None:
                raise RuntimeError("both passes found an offset")
            upper = wall + max(timedelta(0), first_pass_offset - actual_offset)
            # croniter's get_prev is strict and minute-granular: start one minute past the
            # floor of `upper` to include `upper`'s own minute.
            start = upper.replace(second=0, microsecond=0) + ONE_MINUTE
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
        """Return e.g. ``"cron '0 9 * * 1-5' (Europe/London)"``,
        ``"cron '0 9 * * 4' nth 2,4 (Europe/Paris)"`` or
        ``"cron '0 9 * * *' (UTC) except 2 spans"``."""
        extra = f" nth {','.join(map(str, self.nth))}" if self.nth else ""
        extra += f" {self.step.describe()}" if self.step is not None else ""
        return f"cron {self.expr!r}{extra} ({self.tz_name}){describe_spans(self.exclude)}"

    def to_spec(self) -> dict[str, object]:
        """Return ``{"kind": "cron", "expr": ..., "tz": ...}``, plus ``"nth": [...]``,
        ``"step": {"count", "unit", "since"}`` and ``"exclude": [[start, end], ...]`` (ISO
        8601, UTC) when they are set."""
        spec: dict[str, object] = {"kind": "cron", "expr": self.expr, "tz": self.tz_name}
        if self.nth:
            spec["nth"] = list(self.nth)
        if self.step is not None:
            spec["step"] = self.step.to_spec()
        if self.exclude:
            spec["exclude"] = spans_spec(self.exclude)
        return spec
