"""Turn the `repeat` text of ``/schedule`` into a recurrence rule.

Pure functions, like :mod:`bot.parsing.when`: bad input raises
:class:`~bot.parsing.InputError` with a friendly message that shows valid input.

Accepted ``repeat`` forms (case-insensitive), given the first occurrence ``first``:

* no repeat: ``once``, ``none``, ``no``, ``never``, ``off`` or empty → ``None``;
* presets, taken from ``first``'s wall-clock time in the announcement's zone, so they keep
  the same local time across daylight-saving changes (the engine evaluates cron in that
  zone): ``daily`` / ``every day`` → ``M H * * *``; ``weekly`` / ``every week`` →
  ``M H * * DOW``; ``weekdays`` / ``every weekday`` → ``M H * * 1-5``; ``weekends`` →
  ``M H * * 0,6``; ``every monday`` / ``every mon, wed and fri`` → those days;
  ``monthly`` / ``every month`` → ``M H D * *``; ``every 3 months`` (2, 3, 4 or 6) →
  ``M H D m1,m2,.. *`` starting from ``first``'s month; ``yearly`` / ``annually`` →
  ``M H D MON *``;
* intervals of exact elapsed time, anchored at ``first``: ``every 30 minutes``,
  ``every 2h``, ``every 1.5 hours``, ``every 2h30m``, ``90m`` (``every`` optional),
  from 1 minute to 366 days;
* a 5-field cron expression (``0 9 * * 1-5``, ``0 9 * * MON-FRI``) or a macro (``@daily``),
  read in the announcement's zone and validated by :class:`scheduler.triggers.Cron`.

Decisions:

* ``hourly`` / ``every hour`` is an *interval* of one hour, not ``M * * * *``: a local-time
  cron skips the repeated hour when clocks fall back, and every real zone except
  Australia/Lord_Howe shifts by whole hours, so the interval keeps the same minute.
* Monthly on day 31 uses ``L`` (the last day of every month); monthly on day 29 or 30 keeps
  the day and skips months that lack it (the description says so).
* Intervals in days or weeks are exact multiples of 24 hours, so their local time moves by
  an hour across a daylight-saving change; ``daily``/``weekly`` do not.
* Cron fires on whole minutes, so a preset drops ``first``'s seconds; ``* * * * *`` (every
  minute) is allowed, the shortest interval being one minute anyway.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Final, Literal
from zoneinfo import ZoneInfo

from scheduler.errors import InvalidSchedule
from scheduler.triggers import CRON_MACROS, Cron

from .cron_words import describe_cron
from .durations import duration_parts, parse_duration, spoken_duration
from .errors import InputError
from .words import WEEKDAY_NAMES, WEEKDAY_WORDS, cron_day

__all__ = ["MAX_INTERVAL", "MIN_INTERVAL", "RepeatRule", "parse_repeat"]

MIN_INTERVAL: Final = timedelta(minutes=1)
MAX_INTERVAL: Final = timedelta(days=366)


@dataclass(frozen=True, slots=True)
class RepeatRule:
    """How an announcement repeats after its first occurrence.

    ``kind == "cron"``: ``cron`` is a 5-field expression evaluated in the announcement's
    zone and ``every`` is ``None``. ``kind == "interval"``: ``every`` is the exact period,
    anchored at the first occurrence, and ``cron`` is ``None``. ``words`` describes the rule
    for people, e.g. ``"every day at 09:00 (Europe/London)"`` or ``"every 2 hours"``.
    """

    kind: Literal["cron", "interval"]
    cron: str | None
    every: timedelta | None
    words: str

    def __post_init__(self) -> None:
        if (self.kind == "cron") != (self.cron is not None) or (self.cron is None) == (
            self.every is None
        ):
            raise ValueError(f"inconsistent RepeatRule: {self!r}")


_NO_REPEAT: Final = frozenset(
    {"", "once", "none", "no", "never", "off", "no repeat", "don't repeat", "one-off"}
)
_EXAMPLES: Final = (
    "`daily`, `weekly`, `every weekday`, `every 2 hours` "
    "or a cron expression like `0 9 * * 1-5` (09:00 on weekdays)"
)
_DAY_WORDS: Final = {
    **{word: cron_day(day) for word, day in WEEKDAY_WORDS.items()},
    **{name.lower() + "s": cron_day(day) for day, name in enumerate(WEEKDAY_NAMES)},
}
"""Words for a day in a repeat rule (``monday``, ``mon``, ``mondays``…) → cron day number."""

_A = re.ASCII
_EVERY: Final = re.compile(r"(?:every|each|repeat every) ", _A)
_SINGLE_UNIT: Final = re.compile(
    r"(?:every|each) (?:1 ?|one |a )?"
    r"(second|sec|s|minute|min|m|hour|hr|h|day|d|week|wk|w|month|mo|year|yr|y)",
    _A,
)
_LY_WORDS: Final = {
    "hourly": "hour",
    "daily": "day",
    "weekly": "week",
    "monthly": "month",
    "yearly": "year",
    "annually": "year",
}
_UNIT_WORDS: Final = {
    **dict.fromkeys(("second", "sec", "s"), "second"),
    **dict.fromkeys(("minute", "min", "m"), "minute"),
    **dict.fromkeys(("hour", "hr", "h"), "hour"),
    **dict.fromkeys(("day", "d"), "day"),
    **dict.fromkeys(("week", "wk", "w"), "week"),
    **dict.fromkeys(("month", "mo"), "month"),
    **dict.fromkeys(("year", "yr", "y"), "year"),
}
# Single units that repeat as exact intervals; "hour" too (see the module docstring).
_EXACT_UNITS: Final = {"second": 1, "minute": 60, "hour": 3600}
_N_MONTHS: Final = re.compile(r"(?:(?:every|each) )?([0-9]{1,6}) ?(?:months?|mo)", _A)
_N_YEARS: Final = re.compile(r"(?:(?:every|each) )?([0-9]{1,6}) ?(?:years?|yrs?|y)", _A)
_DAY_SEPARATOR: Final = r", ?| and | ?& ?"
_WEEKDAY_LIST: Final = re.compile(
    rf"(?:(?:every|each|on) )?([a-z]+(?:(?:{_DAY_SEPARATOR})[a-z]+)*)", _A
)
_CRON_TOKEN: Final = re.compile(r"[0-9a-z*?#/,\-]+", _A)


# --------------------------------------------------------------------------- public API


def parse_repeat(text: str, first: datetime, tz: ZoneInfo) -> RepeatRule | None:
    """Read the user's ``repeat`` text; ``None`` means "do not repeat".

    ``first`` is the first occurrence (aware; the parsed ``when``) and ``tz`` the
    announcement's zone: presets are taken from ``first``'s wall-clock time in ``tz`` and
    cron rules are evaluated in ``tz``. See the module docstring for the accepted forms.
    Raises :class:`~bot.parsing.InputError` with a user-facing message otherwise.
    """
    if first.tzinfo is None or first.utcoffset() is None:
        raise ValueError("parse_repeat needs an aware 'first'")
    s = " ".join(text.lower().split()).replace("every other ", "every 2 ")
    if s in _NO_REPEAT:
        return None
    if len(s) > 100:
        raise InputError(f"That's too long for a repeat rule. Try {_EXAMPLES}.")
    local = first.astimezone(tz)
    rule = _preset(s, local, tz) or _interval(s) or _cron(s, tz)
    if rule is None:
        raise InputError(f"I couldn't read that as a repeat rule. Try {_EXAMPLES}.")
    return rule


# --------------------------------------------------------------------------- presets


def _zone_name(tz: ZoneInfo) -> str:
    return tz.key if tz.key is not None else str(tz)


def _cron_rule(expr: str, tz: ZoneInfo) -> RepeatRule:
    """Validate ``expr`` with the engine's own cron parser and describe it."""
    try:
        Cron(expr, tz)
    except InvalidSchedule as e:
        reason = str(e).removeprefix(f"invalid cron expression {expr!r}: ")
        raise InputError(
            f"`{expr}` isn't a valid cron expression: {reason}. A cron expression has 5 "
            "fields (minute hour day month weekday), like `0 9 * * 1-5` for 09:00 on weekdays."
        ) from None
    return RepeatRule("cron", expr, None, describe_cron(expr, _zone_name(tz)))


def _preset(s: str, local: datetime, tz: ZoneInfo) -> RepeatRule | None:
    unit = _LY_WORDS.get(s)
    if unit is None and (match := _SINGLE_UNIT.fullmatch(s)) is not None:
        unit = _UNIT_WORDS[match[1]]
    if unit in _EXACT_UNITS:
        return _interval_rule(Fraction(_EXACT_UNITS[unit]))
    if unit is not None:
        return _cron_rule(_unit_cron(unit, local), tz)
    if (match := _N_MONTHS.fullmatch(s)) is not None:
        return _cron_rule(_months_cron(int(match[1]), local), tz)
    if (match := _N_YEARS.fullmatch(s)) is not None:
        raise InputError("I can only repeat every year, not every few years. Try `yearly`.")
    days = _weekday_set(s)
    if days is not None:
        dow = "1-5" if days == [1, 2, 3, 4, 5] else ",".join(map(str, days))
        return _cron_rule(f"{local.minute} {local.hour} * * {dow}", tz)
    return None


def _unit_cron(unit: str, local: datetime) -> str:
    clock = f"{local.minute} {local.hour}"
    if unit == "day":
        return f"{clock} * * *"
    if unit == "week":
        return f"{clock} * * {local.isoweekday() % 7}"
    if unit == "month":
        return f"{clock} {_month_day(local)} * *"
    return f"{clock} {local.day} {local.month} *"


def _month_day(local: datetime) -> str:
    """Day-of-month for a monthly rule: ``L`` for the 31st (the last day of every month)."""
    return "L" if local.day == 31 else str(local.day)


def _months_cron(n: int, local: datetime) -> str:
    if n == 1:
        return _unit_cron("month", local)
    if n == 12:
        return _unit_cron("year", local)
    if n not in (2, 3, 4, 6):
        raise InputError(
            f"I can repeat every 1, 2, 3, 4, 6 or 12 months, not every {n}. "
            "Try `every 3 months` or `monthly`."
        )
    months = sorted((local.month - 1 + k) % 12 + 1 for k in range(0, 12, n))
    return f"{local.minute} {local.hour} {_month_day(local)} {','.join(map(str, months))} *"


def _weekday_set(s: str) -> list[int] | None:
    """Cron day numbers for ``weekdays``, ``weekends``, ``every monday``, ``mon, wed and fri``."""
    if s in ("weekdays", "every weekday", "on weekdays"):
        return [1, 2, 3, 4, 5]
    if s in ("weekends", "every weekend", "on weekends", "every weekend day"):
        return [0, 6]
    match = _WEEKDAY_LIST.fullmatch(s)
    if match is None:
        return None
    words = re.split(_DAY_SEPARATOR, match[1])
    if not all(word in _DAY_WORDS for word in words):
        return None
    return sorted({_DAY_WORDS[word] for word in words})


# --------------------------------------------------------------------------- intervals


def _interval(s: str) -> RepeatRule | None:
    match = _EVERY.match(s)
    seconds = parse_duration(s[match.end() :] if match else s)
    return None if seconds is None else _interval_rule(seconds)


def _interval_rule(seconds: Fraction) -> RepeatRule:
    if seconds < MIN_INTERVAL.total_seconds():
        raise InputError(
            "That repeats too often: the shortest interval is 1 minute. "
            "Try `every 5 minutes` or `every hour`."
        )
    if seconds > MAX_INTERVAL.total_seconds():
        raise InputError(
            "That interval is too long: the longest is 366 days. For once a year use `yearly`."
        )
    every = timedelta(microseconds=round(seconds * 1_000_000))
    return RepeatRule("interval", None, every, _describe_interval(every))


def _describe_interval(every: timedelta) -> str:
    """``every 30 minutes``, ``every hour``, ``every 2 weeks``, ``every 1 hour and 30 minutes``."""
    parts = duration_parts(every)
    if len(parts) == 1 and parts[0][0] == 1:
        return f"every {parts[0][1]}"
    return "every " + spoken_duration(every)


# --------------------------------------------------------------------------- cron


def _cron(s: str, tz: ZoneInfo) -> RepeatRule | None:
    if s.startswith("@"):
        if s not in CRON_MACROS:
            raise InputError(f"`{s}` isn't a cron macro I know. Try `@daily` or `@weekly`.")
        return _cron_rule(CRON_MACROS[s], tz)
    tokens = s.split(" ")
    if len(tokens) < 3 or not all(_CRON_TOKEN.fullmatch(t) for t in tokens):
        return None
    if not re.fullmatch(r"[0-9*?][0-9*?,/\-]*", tokens[0], _A):
        return None
    return _cron_rule(s.upper(), tz)
