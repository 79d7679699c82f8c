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
  ``M H D m1,m2,.. *`` starting from ``first``'s month (other steps up to 12: a date step);
  ``yearly`` / ``annually`` → ``M H D MON *``;
* the phrases of :mod:`.phrases`: a weekday or several with a time, several times a day,
  every N days/weeks/months, biweekly, quarterly, the nth or last weekday of the month, the
  last day of the month, monthly on the 15th, every year on december 24 at 18:00;
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
* ``every N days`` / ``every N weeks`` (whole numbers) are local-time date steps from the
  first occurrence (:mod:`.phrases`), so they keep their local time across daylight-saving
  changes; durations with other parts (``every 36 hours``, ``every 1.5 days``) are exact
  intervals.
* Cron fires on whole minutes, so a preset drops ``first``'s seconds; ``* * * * *`` (every
  minute) is allowed, the shortest interval being one minute anyway.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from fractions import Fraction
from typing import TYPE_CHECKING, Final

from scheduler.errors import InvalidSchedule
from scheduler.triggers import CRON_MACROS, Cron

from ..i18n import t
from .cron_words import describe_cron
from .durations import duration_parts, parse_duration, spoken_duration
from .errors import MAX_INPUT_LENGTH, InputError
from .languages import read_localized
from .phrases import read_phrase
from .rule import RepeatRule
from .words import WEEKDAY_NAMES, WEEKDAY_WORDS, cron_day

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

__all__ = ["MAX_INTERVAL", "MIN_INTERVAL", "RepeatRule", "parse_repeat"]

MIN_INTERVAL: Final = timedelta(minutes=1)
MAX_INTERVAL: Final = timedelta(days=366)


_NO_REPEAT: Final = frozenset(
    {"", "once", "none", "no", "never", "off", "no repeat", "don't repeat", "one-off"}
)


def _examples() -> str:
    """The repeat rules a refusal suggests, in the reader's language (each catalog's are
    read back by its parser in ``tests/bot/test_examples.py``)."""
    return t(
        "`daily`, `weekly`, `every weekday`, `every 2 hours`, `every friday at 20:00`, "
        "`first monday of the month`, `monthly on the 15th` or a cron expression like "
        "`0 9 * * 1-5` (09:00 on weekdays)"
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
_MONTH_LISTS: Final = frozenset({1, 2, 3, 4, 6, 12})
"""Month steps that one list of months says; other steps are date steps (:mod:`.phrases`)."""
_N_YEARS: Final = re.compile(r"(?:(?:every|each) )?([0-9]{1,6}) ?(?:years?|yrs?|y)", _A)
_DAY_SEPARATOR: Final = r", ?| and | ?& ?"
_WEEKDAY_LIST: Final = re.compile(
    rf"(?:(?:every|each|on) )?([a-z]+(?:(?:{_DAY_SEPARATOR})[a-z]+)*)", _A
)
_CRON_TOKEN: Final = re.compile(r"[0-9a-z*?#/,\-]+", _A)


# --------------------------------------------------------------------------- public API


def parse_repeat(
    text: str,
    first: datetime,
    tz: ZoneInfo,
    *,
    need_time: bool = False,
    locale: str | None = None,
    notes: list[str] | None = None,
) -> RepeatRule | None:
    """Read the user's ``repeat`` text; ``None`` means "do not repeat".

    ``first`` is the first occurrence (aware; the parsed ``when``) and ``tz`` the
    announcement's zone: presets are taken from ``first``'s wall-clock time in ``tz`` and
    cron rules are evaluated in ``tz``. With ``need_time`` (``when`` was left out, ``first``
    is "now") the rule must name its time of day (``every friday at 8pm``). See the module
    docstring and :mod:`.phrases` for the accepted forms. Raises
    :class:`~bot.parsing.InputError` with a user-facing message otherwise. In a locale
    with a language of :mod:`.languages` the text is read in that language first, then in
    English; then ``I read `tous les vendredis à 20h` as `every friday at 20:00`.`` is
    appended to ``notes`` (when given).
    """
    if first.tzinfo is None or first.utcoffset() is None:
        raise ValueError("parse_repeat needs an aware 'first'")
    return read_localized(
        text,
        locale,
        "repeat",
        lambda typed: _parse_repeat_english(typed, first, tz, need_time),
        notes,
    )


def _parse_repeat_english(
    text: str, first: datetime, tz: ZoneInfo, need_time: bool
) -> RepeatRule | None:
    s = " ".join(text.lower().split()).rstrip(".!").replace("every other ", "every 2 ")
    if s in _NO_REPEAT:
        return None
    if len(s) > MAX_INPUT_LENGTH:
        raise InputError(
            t("That's too long for a repeat rule. Try {examples}.", examples=_examples())
        )
    local = first.astimezone(tz)
    if need_time:
        rule = read_phrase(s, first, tz, need_time=True) or _cron(s, tz)
        preset = None if rule is not None else _preset_or_none(s, local, tz) or _interval(s)
        if preset is not None and preset.kind == "interval":
            raise InputError(
                t(
                    "`{text}` counts from a first time: please give `when` too, like `in 10m` or "
                    "`18:00`.",
                    text=s,
                )
            )
        if preset is not None:
            raise InputError(
                t(
                    "`{text}` doesn't say at what time: give `when` too, or name a time of day "
                    "in the rule, like `{text} at 9:00`.",
                    text=s,
                ),
                reason="repeat_needs_time",
            )
    else:
        rule = _preset(s, local, tz) or read_phrase(s, first, tz) or _interval(s) or _cron(s, tz)
    if rule is None:
        raise InputError(_refusal(s))
    return rule


def _refusal(s: str) -> str:
    """Why ``s`` is refused, naming the accepted forms closest to it."""
    if re.search(r"\b(?:twice|two times)\b", s, _A):
        return t("Please say the times: like `at 9:00 and 17:00 every day` (or `every 12 hours`).")
    if re.search(r"\b(?:three|3) times\b", s, _A):
        return t("Please say the times: like `at 8:00, 12:00 and 18:00 every day`.")
    part = re.search(r"\b(morning|afternoon|evening|night|tonight)s?\b", s, _A)
    if part is not None:
        clock = _PART_CLOCKS[part[1]]
        before = s[: part.start()].split()
        if not before or before[-1] in ("every", "each", "in", "the"):
            before = (
                [*before[:-1], "every day"] if before and before[-1] != "the" else ["every day"]
            )
        example = " ".join([*before, f"at {clock}"])
        return t(
            "Please give a time instead of `{word}`: like `{example}`.",
            word=part[1],
            example=example,
        )
    return t("I couldn't read that as a repeat rule. Try {examples}.", examples=_examples())


_PART_CLOCKS: Final = {
    "morning": "9:00",
    "afternoon": "15:00",
    "evening": "18:00",
    "night": "21:00",
    "tonight": "21:00",
}


def _preset_or_none(s: str, local: datetime, tz: ZoneInfo) -> RepeatRule | None:
    try:
        return _preset(s, local, tz)
    except InputError:
        return None


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
            t(
                "`{expr}` isn't a valid cron expression: {reason}. A cron expression has 5 "
                "fields (minute hour day month weekday), like `0 9 * * 1-5` for 09:00 on "
                "weekdays.",
                expr=expr,
                reason=reason,
            )
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
    if (match := _N_MONTHS.fullmatch(s)) is not None and int(match[1]) in _MONTH_LISTS:
        return _cron_rule(_months_cron(int(match[1]), local), tz)
    if (match := _N_YEARS.fullmatch(s)) is not None:
        raise InputError(t("I can only repeat every year, not every few years. Try `yearly`."))
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
            t(
                "That repeats too often: the shortest interval is 1 minute. "
                "Try `every 5 minutes` or `every hour`."
            )
        )
    if seconds > MAX_INTERVAL.total_seconds():
        raise InputError(
            t("That interval is too long: the longest is 366 days. For once a year use `yearly`.")
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
            raise InputError(
                t("`{text}` isn't a cron macro I know. Try `@daily` or `@weekly`.", text=s)
            )
        return _cron_rule(CRON_MACROS[s], tz)
    tokens = s.split(" ")
    if len(tokens) < 3 or not all(_CRON_TOKEN.fullmatch(t) for t in tokens):
        return None
    if not re.fullmatch(r"[0-9*?][0-9*?,/\-]*", tokens[0], _A):
        return None
    return _cron_rule(s.upper(), tz)
