"""A repeat rule, a duration and calendar words said in the reader's language.

The rule's ``words`` are written once, in English, when it is read (and stored with the
announcement, for the history and the export); what a member reads in an answer is said here
from the rule itself, in the locale in effect (:func:`bot.i18n.speaking`): ``every Friday at
20:00`` to an English reader, ``chaque vendredi à 20:00`` to a French one. Day and month names
and lists (``a, b and c``) come from the locale's CLDR data (Babel).
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING

from babel.dates import format_date, format_time, get_day_names, get_month_names
from babel.lists import format_list
from babel.numbers import format_decimal

from scheduler.triggers import CRON_MACROS

from ..i18n import catalogs, current_locale, t, tn
from .cron_fields import cron_days as _cron_days
from .cron_fields import cron_months as _cron_months
from .cron_fields import number as _number
from .durations import duration_parts
from .words import MONTH_NAMES, WEEKDAY_NAMES, join_words

if TYPE_CHECKING:
    from scheduler.triggers import DateStep

    from .rule import RepeatRule


def _babel_locale() -> str | None:
    """The locale in effect as Babel names it, None for English (the source language)."""
    locale = current_locale()
    if locale is None or locale not in catalogs():
        return None
    return locale.replace("-", "_")


def day_name(weekday: int) -> str:
    """The name of a ``date.weekday()`` (0 = Monday) in the reader's language, as it is
    written inside a sentence (``Friday``, ``vendredi``, ``Freitag``)."""
    locale = _babel_locale()
    if locale is None:
        return WEEKDAY_NAMES[weekday]
    return str(get_day_names("wide", "format", locale)[weekday])


def cron_day_name(cron_number: int) -> str:
    """The name of the day with this cron number (0 and 7 = Sunday)."""
    return day_name((cron_number - 1) % 7)


def month_name(month: int) -> str:
    """The name of a month (1 = January) in the reader's language, inside a sentence."""
    locale = _babel_locale()
    if locale is None:
        return MONTH_NAMES[month - 1]
    return str(get_month_names("wide", "format", locale)[month])


def listed(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` in the reader's language."""
    locale = _babel_locale()
    if locale is None:
        return join_words(items)
    return str(format_list(items, locale=locale))


def long_date(day: date) -> str:
    """A date with its weekday, in the reader's language (``Friday 5 December 2025``)."""
    locale = _babel_locale()
    if locale is None:
        return f"{WEEKDAY_NAMES[day.weekday()]} {day.day} {MONTH_NAMES[day.month - 1]} {day.year}"
    return str(format_date(day, "full", locale=locale))


def clock(at: time | datetime) -> str:
    """A time of day, ``20:00`` (24-hour in every shipped language)."""
    locale = _babel_locale()
    if locale is None:
        return f"{at.hour:02d}:{at.minute:02d}"
    return str(format_time(at, "HH:mm", locale=locale))


def _unit(n: int, unit: str) -> str:
    if unit == "week":
        return tn("{n} week", "{n} weeks", n)
    if unit == "day":
        return tn("{n} day", "{n} days", n)
    if unit == "hour":
        return tn("{n} hour", "{n} hours", n)
    if unit == "minute":
        return tn("{n} minute", "{n} minutes", n)
    return tn("{n} second", "{n} seconds", n)


def duration(length: timedelta) -> str:
    """``length`` in words in the reader's language: ``1 hour and 30 minutes``."""
    parts = duration_parts(length) or [(0, "second")]
    return listed([_unit(n, unit) for n, unit in parts])


def every(length: timedelta) -> str:
    """An interval rule: ``every 2 hours``, ``every hour``, ``every 1 hour and 30 minutes``."""
    parts = duration_parts(length)
    if len(parts) == 1:
        n, unit = parts[0]
        if unit == "week":
            return t("every week") if n == 1 else tn("every {n} week", "every {n} weeks", n)
        if unit == "day":
            return t("every day") if n == 1 else tn("every {n} day", "every {n} days", n)
        if unit == "hour":
            return t("every hour") if n == 1 else tn("every {n} hour", "every {n} hours", n)
        if unit == "minute":
            return t("every minute") if n == 1 else tn("every {n} minute", "every {n} minutes", n)
    return t("every {duration}", duration=duration(length))


def spoken_rule(rule: RepeatRule, zone: str) -> str:
    """How ``rule`` repeats, in the reader's language; a calendar rule is followed by the
    zone it is read in (``zone``), like its stored words."""
    if rule.every is not None:
        return every(rule.every)
    expr = " ".join((rule.cron or "").split())
    fields = CRON_MACROS.get(expr.lower(), expr).upper().split()
    words = None
    if len(fields) == 5:
        if rule.nth:
            words = _nth_words(fields, rule.nth, rule.step)
        elif rule.step is not None:
            words = _step_words(fields, rule.step)
        else:
            words = cron_words(fields)
    if words is None:
        words = t("cron `{expr}`", expr=expr)
    return f"{words} ({zone})"


def _times(minute: int, hour_field: str) -> str | None:
    hours = [_number(h, 0, 23) for h in hour_field.split(",")]
    if None in hours:
        return None
    return listed([clock(time(h, minute)) for h in sorted({h for h in hours if h is not None})])


def cron_words(fields: list[str]) -> str | None:
    """A 5-field cron expression's common shapes in words, in the language in effect (None:
    a shape without words)."""
    minute, hour, dom, month, dow = fields
    if hour == "*" and dom == month == dow == "*":
        return _sub_hourly(minute)
    m = _number(minute, 0, 59)
    if m is None:
        return None
    if dom == month == dow == "*" and hour.startswith("*/"):
        step = _number(hour[2:], 1, 23)
        if step is None or 24 % step:
            return None
        if step == 1:
            return t("every hour at :{minute}", minute=f"{m:02d}")
        return tn("every {n} hour at :{minute}", "every {n} hours at :{minute}", step,
                  minute=f"{m:02d}")  # fmt: skip
    times = _times(m, hour)
    if times is None:
        return None
    if dom == "*" and month == "*":
        return _weekly(times, dow)
    if dow == "*":
        return _monthly(times, dom, month)
    return None


def _sub_hourly(minute: str) -> str | None:
    if minute == "*":
        return t("every minute")
    if minute.startswith("*/"):
        step = _number(minute[2:], 1, 59)
        if step is None or 60 % step:
            return None
        if step == 1:
            return t("every minute")
        return tn("every {n} minute", "every {n} minutes", step)
    m = _number(minute, 0, 59)
    return None if m is None else t("every hour at :{minute}", minute=f"{m:02d}")


def _weekly(times: str, dow: str) -> str | None:
    days = list(range(7)) if dow == "*" else _cron_days(dow)
    if days is None:
        return None
    if len(days) == 7:
        return t("every day at {times}", times=times)
    names = [cron_day_name(d) for d in days]
    if len(days) == 1:
        return t("every {day} at {times}", day=names[0], times=times)
    order = [(d - 1) % 7 for d in days]
    if len(days) >= 3 and order == list(range(order[0], order[0] + len(days))):
        return t("at {times}, {first} through {last}", times=times, first=names[0],
                 last=names[-1])  # fmt: skip
    return t("at {times} on {days}", times=times, days=listed(names))


def _skipping(day: int | None) -> str:
    if day is not None and day > 28:
        return t(", skipping months without a day {day}", day=day)
    return ""


def _monthly(times: str, dom: str, month: str) -> str | None:
    day = None if dom == "L" else _number(dom, 1, 31)
    if dom != "L" and day is None:
        return None
    if month == "*":
        if day is None:
            return t("at {times} on the last day of the month", times=times)
        return t("at {times} on day {day} of the month", times=times, day=day) + _skipping(day)
    months = _cron_months(month)
    if months is None:
        return None
    if len(months) == 1 and day is not None:
        if (months[0], day) == (2, 29):
            return t("every year on {day} {month} at {times}, only in leap years", day=day,
                     month=month_name(2), times=times)  # fmt: skip
        return t("every year on {day} {month} at {times}", day=day,
                 month=month_name(months[0]), times=times)  # fmt: skip
    names = listed([month_name(m) for m in months])
    if day is None:
        return t("at {times} on the last day of {months}", times=times, months=names)
    return t("at {times} on day {day} of {months}", times=times, day=day, months=names)


def _ordinal(n: int) -> str:
    return {
        1: t("first"),
        2: t("second"),
        3: t("third"),
        4: t("fourth"),
        5: t("fifth"),
    }.get(n) or t("last")


def _nth_words(fields: list[str], nth: tuple[int, ...], step: DateStep | None) -> str | None:
    minute, hour, _dom, _month, dow = fields
    m = _number(minute, 0, 59)
    day = _number(dow, 0, 7)
    times = None if m is None else _times(m, hour)
    if times is None or day is None:
        return None
    ordinals = listed([_ordinal(n) for n in nth])
    if step is None or step.count == 1:
        return t("on the {ordinals} {day} of every month, at {times}", ordinals=ordinals,
                 day=cron_day_name(day), times=times)  # fmt: skip
    return tn(
        "on the {ordinals} {day} of every {n} month, at {times}",
        "on the {ordinals} {day} of every {n} months, at {times}",
        step.count, ordinals=ordinals, day=cron_day_name(day), times=times,
    )  # fmt: skip


def _step_words(fields: list[str], step: DateStep) -> str | None:
    minute, hour, dom, _month, dow = fields
    m = _number(minute, 0, 59)
    times = None if m is None else _times(m, hour)
    if times is None:
        return None
    n = step.count
    if step.unit == "day":
        return tn("every {n} day at {times}, from {date}", "every {n} days at {times}, from {date}",
                  n, times=times, date=long_date(step.since))  # fmt: skip
    if step.unit == "week":
        days = _cron_days(dow)
        if days is None:
            return None
        return tn(
            "every {n} week on {days} at {times}, from the week of {date}",
            "every {n} weeks on {days} at {times}, from the week of {date}",
            n, days=listed([cron_day_name(d) for d in days]), times=times,
            date=long_date(step.since),
        )  # fmt: skip
    if dom == "L":
        return tn("every {n} month on the last day, at {times}",
                  "every {n} months on the last day, at {times}", n, times=times)  # fmt: skip
    day = _number(dom, 1, 31)
    if day is None:
        return None
    return tn("every {n} month on day {day}, at {times}",
              "every {n} months on day {day}, at {times}", n, day=day,
              times=times) + _skipping(day)  # fmt: skip


def number(n: int) -> str:
    """A whole number as the reader's language writes it (``1,500``, ``1 500``, ``1.500``)."""
    locale = _babel_locale()
    return f"{n:,}" if locale is None else str(format_decimal(n, locale=locale))


def decimal(x: float, places: int = 1) -> str:
    """A number with ``places`` decimals as the reader's language writes it (``2.5``, ``2,5``)."""
    locale = _babel_locale()
    if locale is None:
        return f"{x:.{places}f}"
    return str(format_decimal(x, format="#,##0." + "0" * places, locale=locale))
