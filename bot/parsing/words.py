"""English calendar words: the day and month names the parsers read and the describers write.

Weekdays are numbered like :meth:`datetime.date.weekday` (0 = Monday) unless a name says
``cron``: cron numbers days from 0 = Sunday and months from 1 = January.
"""

from __future__ import annotations

from typing import Final

WEEKDAY_NAMES: Final = (
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
)
"""Day names by ``date.weekday()`` (0 = Monday)."""

MONTH_NAMES: Final = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
"""Month names, January first (``MONTH_NAMES[month - 1]``)."""

WEEKDAY_WORDS: Final = {
    **{name.lower(): day for day, name in enumerate(WEEKDAY_NAMES)},
    **{name[:3].lower(): day for day, name in enumerate(WEEKDAY_NAMES)},
    "tues": 1,
    "thur": 3,
    "thurs": 3,
}
"""Lower-case words for a weekday (``monday``, ``mon``, ``tues``…) → ``date.weekday()``."""

MONTH_WORDS: Final = {
    **{name.lower(): month for month, name in enumerate(MONTH_NAMES, 1)},
    **{name[:3].lower(): month for month, name in enumerate(MONTH_NAMES, 1)},
    "sept": 9,
}
"""Lower-case words for a month (``december``, ``dec``, ``sept``) → its number (1-12)."""


def cron_day(weekday: int) -> int:
    """The cron number (0 = Sunday) of a ``date.weekday()`` (0 = Monday)."""
    return (weekday + 1) % 7


def day_name(cron_number: int) -> str:
    """The name of the day with this cron number (0 and 7 = Sunday)."""
    return WEEKDAY_NAMES[(cron_number - 1) % 7]


CRON_DAY_NAMES: Final = {name[:3].upper(): cron_day(day) for day, name in enumerate(WEEKDAY_NAMES)}
"""Day names in a cron field (``SUN``…``SAT``) → cron day number."""

CRON_MONTH_NAMES: Final = {name[:3].upper(): month for month, name in enumerate(MONTH_NAMES, 1)}
"""Month names in a cron field (``JAN``…``DEC``) → month number."""


def join_words(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
