"""Numeric dates such as ``24/12``, ``12/24/2026`` or ``24.12.2026``, read in the order the
member's Discord language writes them: month/day for ``en-US``, day/month for the others.

Without a locale such a date is refused as ambiguous, with the ISO form as the suggestion.
With one, a date that is real one way round only (``24/12`` can only be day/month) is read
that way whatever the locale; either way the reading is said back (:attr:`NumericDate.note`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Final

from ..i18n import t
from .display import example_date
from .errors import InputError
from .spoken import month_name

NUMERIC_DATE: Final = re.compile(
    r"([0-9]{1,2})([/.])([0-9]{1,2})(?:\2([0-9]{4}|[0-9]{2}))?", re.ASCII
)
_MONTH_FIRST: Final = frozenset({"en-us"})


@dataclass(frozen=True, slots=True)
class NumericDate:
    """A numeric date as read: ``year`` is ``None`` when it was left out."""

    year: int | None
    month: int
    day: int
    note: str


def month_first(locale: str) -> bool:
    """Whether ``locale`` (a Discord locale such as ``en-US``) writes the month first."""
    return locale.replace("_", "-").lower() in _MONTH_FIRST


def read_numeric_date(s: str, today: date, locale: str | None) -> NumericDate | None:
    """``s`` read as a numeric date, or ``None`` if it isn't one.

    Raises :class:`InputError` when it is one but can't be read: ambiguous without a
    locale, or no real date either way round.
    """
    match = NUMERIC_DATE.fullmatch(s)
    if match is None:
        return None
    first, second = int(match[1]), int(match[3])
    year = (
        None
        if match[4] is None
        else int(match[4]) % 100 + 2000
        if len(match[4]) == 2
        else int(match[4])
    )
    as_day_month = _real(year, second, first)
    as_month_day = _real(year, first, second)
    if locale is None:
        raise InputError(
            t("I can't tell whether `{text}` is day/month or month/day. Please write the date "
              "as year-month-day, like `{example}`.", text=s, example=example_date(today))
        )  # fmt: skip
    if not (as_day_month or as_month_day):
        raise InputError(t("`{text}` isn't a real date, day/month or month/day.", text=s))
    wanted_month_first = locale is not None and month_first(locale)
    if as_day_month and as_month_day:
        use_month_first = wanted_month_first
        order = t("month/day") if use_month_first else t("day/month")
        why = t("{order}, as dates are written in your Discord language `{language}`",
                order=order, language=locale)  # fmt: skip
    else:
        use_month_first = as_month_day
        impossible = second if use_month_first else first
        why = t("{number} can't be a month", number=impossible)
    month, day = (first, second) if use_month_first else (second, first)
    if year is None:
        shown = t("{day} {month}", day=day, month=month_name(month))
    else:
        shown = t("{day} {month} {year}", day=day, month=month_name(month), year=year)
    return NumericDate(year, month, day, t("I read `{text}` as {date} ({why}).", text=s,
                                           date=shown, why=why))  # fmt: skip


def _real(year: int | None, month: int, day: int) -> bool:
    try:
        date(2000 if year is None else year, month, day)  # 2000: 29 February exists
    except ValueError:
        return False
    return True
