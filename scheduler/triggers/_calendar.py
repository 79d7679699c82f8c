"""Calendar rules that five cron fields cannot say, for :class:`scheduler.triggers.Cron`:
the nth (or last) weekday of a month and every n-th local day, week or month from a date
(:class:`DateStep`). Pure date arithmetic on local dates; the time-zone logic stays in
:mod:`scheduler.triggers`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Final, Literal

from ..errors import InvalidSchedule

if TYPE_CHECKING:
    from collections.abc import Iterable

MAX_DAYS_IN_MONTH: Final = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
"""Longest each month can be (February: 29, in leap years)."""

StepUnit = Literal["day", "week", "month"]
_STEP_UNITS: Final = ("day", "week", "month")
_NTH_VALUES: Final = frozenset({1, 2, 3, 4, 5, -1})
_ONE_DAY: Final = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class DateStep:
    """Every ``count``-th local day, week (Monday to Sunday) or calendar month, counted from
    the one that contains ``since`` (which matches; the lattice extends backwards too).

    Raises :class:`InvalidSchedule` for a count below 1, an unknown unit or a ``since`` that
    is not a :class:`~datetime.date`.
    """

    count: int
    unit: StepUnit
    since: date

    def __post_init__(self) -> None:
        if not isinstance(self.count, int) or isinstance(self.count, bool) or self.count < 1:
            raise InvalidSchedule(
                f"a date step's count must be an integer >= 1, got {self.count!r}"
            )
        if self.unit not in _STEP_UNITS:
            raise InvalidSchedule(
                f"a date step's unit must be 'day', 'week' or 'month', got {self.unit!r}"
            )
        if not isinstance(self.since, date) or isinstance(self.since, datetime):
            raise InvalidSchedule(f"a date step's since must be a date, got {self.since!r}")

    def _index(self, day: date) -> int:
        """Which period (0 = the one holding ``since``) ``day`` lies in."""
        if self.unit == "day":
            return (day - self.since).days
        if self.unit == "week":
            return (_monday(day) - _monday(self.since)).days // 7
        return (day.year - self.since.year) * 12 + day.month - self.since.month

    def allows(self, day: date) -> bool:
        """Whether ``day`` lies in one of the counted periods."""
        return self._index(day) % self.count == 0

    def next_allowed(self, day: date) -> date:
        """The first day of the first counted period after ``day``'s (``day`` not allowed)."""
        skip = self.count - self._index(day) % self.count
        if self.unit == "day":
            return day + timedelta(days=skip)
        if self.unit == "week":
            return _monday(day) + timedelta(weeks=skip)
        return _month_start(day.year, day.month - 1 + skip)

    def previous_allowed(self, day: date) -> date:
        """The last day of the last counted period before ``day``'s (``day`` not allowed)."""
        back = self._index(day) % self.count
        if self.unit == "day":
            return day - timedelta(days=back)
        if self.unit == "week":
            return _monday(day) - timedelta(weeks=back) + timedelta(days=6)
        return _month_start(day.year, day.month - back) - _ONE_DAY

    def months_of_year(self) -> frozenset[int]:
        """The months (1-12) a month step can fall in."""
        if self.unit != "month":
            raise RuntimeError("the only unit left is month")
        return frozenset((self.since.month - 1 + k * self.count) % 12 + 1 for k in range(12))

    def describe(self) -> str:
        unit = self.unit if self.count == 1 else f"{self.count} {self.unit}s"
        return f"every {unit} from {self.since.isoformat()}"

    def to_spec(self) -> dict[str, object]:
        return {"count": self.count, "unit": self.unit, "since": self.since.isoformat()}


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _month_start(year: int, month0: int) -> date:
    """The first day of month ``month0`` (0-based, may be outside 0-11) of ``year``."""
    return date(year + month0 // 12, month0 % 12 + 1, 1)


def _days_in_month(day: date) -> int:
    return (_month_start(day.year, day.month) - _ONE_DAY).day


def nth_of_month(day: date) -> tuple[int, bool]:
    """Which occurrence of its weekday ``day`` is in its month, and whether it is the last."""
    return (day.day - 1) // 7 + 1, day.day + 7 > _days_in_month(day)


def _nth_windows(year: int, month: int, nth: tuple[int, ...]) -> list[tuple[int, int]]:
    """The runs of days (first, last) of a month in which the nth weekdays ``nth`` fall."""
    length = _days_in_month(date(year, month, 1))
    windows = [((n - 1) * 7 + 1, n * 7) if n > 0 else (length - 6, length) for n in nth]
    return sorted((first, min(last, length)) for first, last in windows if first <= length)


def next_nth_window(day: date, nth: tuple[int, ...]) -> date:
    """The first day after ``day`` that lies in one of the months' ``nth`` windows."""
    for first, last in _nth_windows(day.year, day.month, nth):
        if day.day < last:
            return day.replace(day=max(first, day.day + 1))
    following = _month_start(day.year, day.month)
    # A month may have no window at all (no 29th: February has no 5th weekday window).
    while not (windows := _nth_windows(following.year, following.month, nth)):
        following = _month_start(following.year, following.month)
    return following.replace(day=windows[0][0])


def previous_nth_window(day: date, nth: tuple[int, ...]) -> date:
    """The last day before ``day`` that lies in one of the months' ``nth`` windows."""
    for first, last in reversed(_nth_windows(day.year, day.month, nth)):
        if day.day > first:
            return day.replace(day=min(last, day.day - 1))
    previous = date(day.year, day.month, 1) - _ONE_DAY
    while not (windows := _nth_windows(previous.year, previous.month, nth)):
        previous = date(previous.year, previous.month, 1) - _ONE_DAY
    return previous.replace(day=windows[-1][1])


def check_nth(nth: Iterable[int] | None, fields: list[str], expr: str) -> tuple[int, ...]:
    if nth is None:
        return ()
    values = tuple(sorted(set(nth), key=lambda n: (n < 0, n)))
    if not values or not all(isinstance(n, int) and n in _NTH_VALUES for n in values):
        raise InvalidSchedule(
            f"nth must list occurrences 1-5 or -1 (the last) of a weekday, got {nth!r}"
        )
    if fields[4] == "*" or fields[2] != "*":
        raise InvalidSchedule(
            f"nth applies to the weekdays of a cron expression whose day-of-month is '*' "
            f"and whose day-of-week is restricted, not to {expr!r}"
        )
    return values


def check_step(step: DateStep | None, fields: list[str], last: bool, expr: str) -> None:
    if step is None:
        return
    if not isinstance(step, DateStep):
        raise InvalidSchedule(f"step must be a DateStep, got {type(step).__name__}")
    dom, month, dow = fields[2], fields[3], fields[4]
    if month != "*":
        raise InvalidSchedule(f"a date step needs the month field '*', not in {expr!r}")
    if step.unit == "day" and (dom != "*" or dow != "*"):
        raise InvalidSchedule(f"a step of days needs day fields '* * *', not in {expr!r}")
    if step.unit == "week" and dom != "*":
        raise InvalidSchedule(f"a step of weeks needs day-of-month '*', not in {expr!r}")
    if step.unit == "month":
        if dom != "*" and dow != "*":
            raise InvalidSchedule(
                f"a step of months needs day-of-month or day-of-week '*', not in {expr!r}"
            )
        days = [int(d) for d in dom.split(",") if d.isdigit()]
        months = step.months_of_year()
        if (
            days
            and not last
            and not any(d <= MAX_DAYS_IN_MONTH[m - 1] for m in months for d in days)
        ):
            raise InvalidSchedule(
                f"{expr!r} every {step.count} months from {step.since.isoformat()} can never "
                "fire: its day-of-month never occurs in the months it falls in"
            )
