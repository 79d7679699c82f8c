"""Cron expressions in English, for confirmations and lists: ``0 9 * * 1-5`` reads as
"at 09:00, Monday through Friday"."""

from __future__ import annotations

import re
from typing import Final

from scheduler.triggers import CRON_MACROS

from .words import CRON_DAY_NAMES, CRON_MONTH_NAMES, MONTH_NAMES, day_name, join_words

_NUMBER: Final = re.compile(r"[0-9]{1,2}", re.ASCII)


def describe_cron(expr: str, tz_name: str) -> str:
    """Describe a 5-field cron expression in English, followed by its zone.

    Common shapes read naturally (``"every day at 09:00 (Europe/London)"``,
    ``"at 09:00, Monday through Friday (UTC)"``, ``"every 15 minutes (UTC)"``,
    ``"at 12:00 on the last day of the month (UTC)"``); anything else is shown as
    ``"cron `expr` (zone)"``.
    """
    normalized = " ".join(expr.split())
    fields = CRON_MACROS.get(normalized.lower(), normalized).upper().split()
    words = _cron_words(fields) if len(fields) == 5 else None
    return f"{words or f'cron `{normalized}`'} ({tz_name})"


def _cron_words(fields: list[str]) -> str | None:
    minute, hour, dom, month, dow = fields
    if hour == "*" and dom == month == dow == "*":
        return _sub_hourly_words(minute)
    m = _number(minute, 0, 59)
    if m is None:
        return None
    if dom == month == dow == "*" and hour.startswith("*/"):
        step = _number(hour[2:], 1, 23)
        if step is None or 24 % step:
            return None
        return f"every hour at :{m:02d}" if step == 1 else f"every {step} hours at :{m:02d}"
    hours = [_number(h, 0, 23) for h in hour.split(",")]
    if None in hours:
        return None
    times = join_words([f"{h:02d}:{m:02d}" for h in sorted({h for h in hours if h is not None})])
    if dom == "*" and month == "*":
        return _weekly_words(times, dow)
    if dow == "*":
        return _monthly_words(times, dom, month)
    return None


def _sub_hourly_words(minute: str) -> str | None:
    if minute == "*":
        return "every minute"
    if minute.startswith("*/"):
        step = _number(minute[2:], 1, 59)
        if step is None or 60 % step:
            return None
        return "every minute" if step == 1 else f"every {step} minutes"
    m = _number(minute, 0, 59)
    return None if m is None else f"every hour at :{m:02d}"


def _weekly_words(times: str, dow: str) -> str | None:
    days = list(range(7)) if dow == "*" else _cron_days(dow)
    if days is None:
        return None
    if len(days) == 7:
        return f"every day at {times}"
    names = [day_name(d) for d in days]
    if len(days) == 1:
        return f"every {names[0]} at {times}"
    order = [(d - 1) % 7 for d in days]
    if len(days) >= 3 and order == list(range(order[0], order[0] + len(days))):
        return f"at {times}, {names[0]} through {names[-1]}"
    return f"at {times} on {join_words(names)}"


def _monthly_words(times: str, dom: str, month: str) -> str | None:
    day = None if dom == "L" else _number(dom, 1, 31)
    if dom != "L" and day is None:
        return None
    where = "the last day" if day is None else f"day {day}"
    if month == "*":
        skip = f", skipping months without a day {day}" if day and day > 28 else ""
        return f"at {times} on {where} of the month{skip}"
    months = _cron_months(month)
    if months is None:
        return None
    if len(months) == 1 and day is not None:
        note = ", only in leap years" if (months[0], day) == (2, 29) else ""
        return f"every year on {day} {MONTH_NAMES[months[0] - 1]} at {times}{note}"
    return f"at {times} on {where} of {join_words([MONTH_NAMES[m - 1] for m in months])}"


def _number(text: str, low: int, high: int) -> int | None:
    if not _NUMBER.fullmatch(text):
        return None
    value = int(text)
    return value if low <= value <= high else None


def _cron_days(field: str) -> list[int] | None:
    """The days (0 = Sunday) a plain day-of-week field names, Monday first; else ``None``."""
    days: set[int] = set()
    for item in field.split(","):
        start_text, dash, end_text = item.partition("-")
        start = CRON_DAY_NAMES.get(start_text, _number(start_text, 0, 7))
        end = CRON_DAY_NAMES.get(end_text, _number(end_text, 0, 7)) if dash else start
        if start is None or end is None:
            return None
        if dash and end == 0:
            end = 7  # SUN at the end of a range
        if end < start:
            return None
        days.update(d % 7 for d in range(start, end + 1))
    return sorted(days, key=lambda d: (d - 1) % 7)


def _cron_months(field: str) -> list[int] | None:
    months: list[int] = []
    for item in field.split(","):
        value = CRON_MONTH_NAMES.get(item, _number(item, 1, 12))
        if value is None:
            return None
        months.append(value)
    return sorted(set(months))
