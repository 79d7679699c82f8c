"""The fields of a 5-field cron expression as plain numbers: a number in a range, the days a
day-of-week field names, the months a month field names (``None`` for anything else)."""

from __future__ import annotations

import re
from typing import Final

from .words import CRON_DAY_NAMES, CRON_MONTH_NAMES

_NUMBER: Final = re.compile(r"[0-9]{1,2}", re.ASCII)


def number(text: str, low: int, high: int) -> int | None:
    if not _NUMBER.fullmatch(text):
        return None
    value = int(text)
    return value if low <= value <= high else None


def cron_days(field: str) -> list[int] | None:
    """The days (0 = Sunday) a plain day-of-week field names, Monday first; else ``None``."""
    days: set[int] = set()
    for item in field.split(","):
        start_text, dash, end_text = item.partition("-")
        start = CRON_DAY_NAMES.get(start_text, number(start_text, 0, 7))
        end = CRON_DAY_NAMES.get(end_text, number(end_text, 0, 7)) if dash else start
        if start is None or end is None:
            return None
        if dash and end == 0:
            end = 7  # SUN at the end of a range
        if end < start:
            return None
        days.update(d % 7 for d in range(start, end + 1))
    return sorted(days, key=lambda d: (d - 1) % 7)


def cron_months(field: str) -> list[int] | None:
    months: list[int] = []
    for item in field.split(","):
        value = CRON_MONTH_NAMES.get(item, number(item, 1, 12))
        if value is None:
            return None
        months.append(value)
    return sorted(set(months))
