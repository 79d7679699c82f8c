"""Cron expressions as text: parse and validate the five fields, compile them to the
canonical number-list form croniter is handed, and keep croniter walkers over that form.

Everything about the time zone (and the DST rule) lives in :class:`scheduler.triggers.Cron`;
this module only deals in naive wall times.  The field syntax is described in
:mod:`scheduler.triggers`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Final

from croniter import croniter

from ..errors import InvalidSchedule
from ._calendar import MAX_DAYS_IN_MONTH

if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["CRON_MACROS", "compile_cron", "walker"]

_MONTH_NAMES: Final = {
    name: number
    for number, name in enumerate(
        ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"),
        start=1,
    )
}
_DAY_NAMES: Final = {
    name: number for number, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))
}
CRON_MACROS: Final = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
_DIGITS: Final = re.compile(r"[0-9]+")
_L_VARIANT: Final = re.compile(r"L|L-[0-9]*|[0-9]*LW?|LW", re.IGNORECASE)
_FIELD_LIST: Final = "minute hour day-of-month month day-of-week"


@dataclass(frozen=True, slots=True)
class _FieldSpec:
    """Static description of one cron field."""

    name: str
    low: int
    high: int  # largest number accepted in the expression (day-of-week: 7)
    star_high: int  # upper end of '*' and of 'a/n' (day-of-week: 6)
    names: Mapping[str, int]
    name_hint: str

    @property
    def full(self) -> frozenset[int]:
        """Every value the field can take after normalisation (7 -> 0 for day-of-week)."""
        return frozenset(range(self.low, self.star_high + 1))


_MINUTE: Final = _FieldSpec("minute", 0, 59, 59, {}, "")
_HOUR: Final = _FieldSpec("hour", 0, 23, 23, {}, "")
_DOM: Final = _FieldSpec("day-of-month", 1, 31, 31, {}, "")
_MONTH: Final = _FieldSpec("month", 1, 12, 12, _MONTH_NAMES, "JAN-DEC")
_DOW: Final = _FieldSpec("day-of-week", 0, 7, 6, _DAY_NAMES, "SUN-SAT")
_FIELDS: Final = (_MINUTE, _HOUR, _DOM, _MONTH, _DOW)


class _FieldError(Exception):
    """Internal: why one field is invalid (turned into InvalidSchedule by the caller)."""


def _parse_value(spec: _FieldSpec, text: str, *, range_end: bool = False) -> int:
    """Parse one number or name of ``spec``'s field, checking its range."""
    if _DIGITS.fullmatch(text):
        number = int(text)
        if not spec.low <= number <= spec.high:
            raise _FieldError(f"{number} is out of range {spec.low}-{spec.high}")
        return number
    if text == "":
        raise _FieldError("missing value")
    upper = text.upper()
    if upper in spec.names:
        number = spec.names[upper]
        # 'FRI-SUN' can only mean Friday through Sunday: SUN ends a range as 7.
        if range_end and spec is _DOW and number == 0:
            return 7
        return number
    if upper == "L":
        raise _FieldError("'L' (last day of the month) is only allowed in the day-of-month field")
    if spec.names:
        raise _FieldError(
            f"unknown value {text!r} (expected a number {spec.low}-{spec.high} "
            f"or a name {spec.name_hint})"
        )
    raise _FieldError(f"{text!r} is not a number (expected {spec.low}-{spec.high})")


def _parse_field(spec: _FieldSpec, text: str) -> tuple[frozenset[int], bool]:
    """Parse one field into its set of values and whether it contains ``L``.

    Day-of-week 7 is normalised to 0.  Raises :class:`_FieldError` with the reason.
    """
    values: set[int] = set()
    last = False
    for item in text.split(","):
        _refuse_unsupported(item)
        base, slash, step_text = item.partition("/")
        step = _parse_step(item, step_text) if slash else 1
        if spec is _DOM and _L_VARIANT.fullmatch(base):
            _check_last(item, base, stepped=bool(slash))
            last = True
            continue
        low, high = _parse_bounds(spec, base, stepped=bool(slash))
        values.update(range(low, high + 1, step))
    if spec is _DOW and 7 in values:
        values.discard(7)
        values.add(0)
    return frozenset(values), last


def _refuse_unsupported(item: str) -> None:
    """Refuse an empty list item and the syntax other crons have but this one does not."""
    if item == "":
        raise _FieldError("empty list item")
    if "?" in item:
        raise _FieldError("'?' is not supported (use '*')")
    if "#" in item:
        raise _FieldError("'#' (nth weekday of the month) is not supported")


def _parse_step(item: str, step_text: str) -> int:
    """The step after an item's ``/``."""
    if "/" in step_text:
        raise _FieldError(f"{item!r} has more than one '/'")
    if not _DIGITS.fullmatch(step_text):
        raise _FieldError(f"step {step_text!r} is not a number")
    step = int(step_text)
    if step < 1:
        raise _FieldError(f"step must be at least 1, got {step}")
    return step


def _check_last(item: str, base: str, *, stepped: bool) -> None:
    """Day-of-month ``L`` (any case) stands alone: no variant, no step."""
    if base.upper() != "L":
        raise _FieldError(
            f"{item!r} is not supported ('L' must stand alone: the last day of the month)"
        )
    if stepped:
        raise _FieldError("'L' (last day of the month) cannot take a step")


def _parse_bounds(spec: _FieldSpec, base: str, *, stepped: bool) -> tuple[int, int]:
    """The first and last value an item's part before ``/`` covers: ``*``, a range, or one
    value (to the field's end when it takes a step)."""
    if base == "*":
        return spec.low, spec.star_high
    if "-" not in base:
        low = _parse_value(spec, base)
        return low, max(low, spec.star_high) if stepped else low
    start_text, _, end_text = base.partition("-")
    if start_text == "" or end_text == "" or "-" in end_text:
        raise _FieldError(f"malformed range {base!r} (expected start-end)")
    low = _parse_value(spec, start_text)
    high = _parse_value(spec, end_text, range_end=True)
    if low > high:
        hint = " (use 7 for Sunday at the end of a range)" if spec is _DOW else ""
        raise _FieldError(f"range start {start_text} is after range end {end_text}{hint}")
    return low, high


def _render(values: frozenset[int], spec: _FieldSpec, *, last: bool = False) -> str:
    """Render a parsed field in croniter's plain syntax: ``*`` if it covers every value,
    else a sorted number list (plus ``L``)."""
    if values == spec.full:
        return "*"
    items = [str(v) for v in sorted(values)]
    if last:
        items.append("L")
    return ",".join(items)


_walkers = threading.local()
_WALKER_CACHE_SIZE: Final = 4096


def walker(expr: str, start: datetime) -> croniter:
    """A croniter for ``expr`` positioned at ``start``.

    Building a croniter parses and expands the expression, several times the cost of a
    step, so one is kept per expression and thread and repositioned for each search.
    """
    cache: dict[str, croniter] | None = getattr(_walkers, "cache", None)
    if cache is None:
        cache = _walkers.cache = {}
    it = cache.get(expr)
    if it is None:
        if len(cache) >= _WALKER_CACHE_SIZE:
            cache.clear()
        it = cache[expr] = croniter(expr, start)
    else:
        it.set_current(start, force=True)
    return it


_CACHED_LONGEST: Final = 256
"""The longest expression whose compiled form is kept: a longer one (its canonical form is
no longer than a shorter one's) is compiled each time, so the cache holds at most
4096 × this many characters whatever it is given."""


def compile_cron(expr: str) -> str:
    """Validate a cron expression and return its canonical croniter form.

    Raises :class:`InvalidSchedule` naming the offending field and the reason.
    """
    if len(expr) > _CACHED_LONGEST:
        return _compile_cron(expr)
    return _compile_cron_kept(expr)


@lru_cache(maxsize=4096)
def _compile_cron_kept(expr: str) -> str:
    return _compile_cron(expr)


def _compile_cron(expr: str) -> str:
    stripped = expr.strip()
    if not stripped:
        raise InvalidSchedule(f"invalid cron expression {expr!r}: expression is empty")
    if stripped.startswith("@"):
        macro = CRON_MACROS.get(stripped.lower())
        if macro is None:
            known = " ".join(CRON_MACROS)
            raise InvalidSchedule(
                f"invalid cron expression {expr!r}: unknown macro {stripped!r} (supported: {known})"
            )
        stripped = macro
    texts = stripped.split()
    if len(texts) != len(_FIELDS):
        raise InvalidSchedule(
            f"invalid cron expression {expr!r}: expected {len(_FIELDS)} fields "
            f"({_FIELD_LIST}), got {len(texts)}"
        )
    parsed: list[tuple[frozenset[int], bool]] = []
    for spec, text in zip(_FIELDS, texts, strict=True):
        try:
            parsed.append(_parse_field(spec, text))
        except _FieldError as exc:
            raise InvalidSchedule(
                f"invalid cron expression {expr!r}: {spec.name} field {text!r}: {exc}"
            ) from None
    (minutes, _), (hours, _), (days, last), (months, _), (weekdays, _) = parsed

    dom_restricted = days != _DOM.full
    dow_restricted = weekdays != _DOW.full
    dom_text = _render(days, _DOM, last=last)
    if dom_restricted and not (
        last or any(day <= MAX_DAYS_IN_MONTH[month - 1] for month in months for day in days)
    ):
        if not dow_restricted:
            raise InvalidSchedule(
                f"invalid cron expression {expr!r}: it can never fire: "
                f"day-of-month {texts[2]!r} never occurs in month {texts[3]!r}"
            )
        # Either-matches semantics: the day-of-month half can never match, so the
        # schedule is the day-of-week half alone (which croniter computes faster).
        dom_text = "*"
    return " ".join(
        (
            _render(minutes, _MINUTE),
            _render(hours, _HOUR),
            dom_text,
            _render(months, _MONTH),
            _render(weekdays, _DOW),
        )
    )
