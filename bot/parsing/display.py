"""How times are shown back to the user: Discord timestamps, the time a text was read as,
and the examples a refusal offers."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Final
from zoneinfo import ZoneInfo

from ..i18n import t
from .errors import MAX_AHEAD

EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_DISCORD_STYLES: Final = frozenset("tTdDfFR")


def discord_timestamp(when: datetime | float, style: str = "F") -> str:
    """Render an aware datetime, or epoch seconds (a stored time), as Discord markup, e.g.
    ``<t:1725000000:F>``: the one place the bot writes one.

    ``style`` is one of Discord's letters ``t T d D f F R``. Fractions of a second are dropped
    (rounded down).
    """
    if style not in _DISCORD_STYLES:
        raise ValueError(f"unknown Discord timestamp style {style!r}")
    if not isinstance(when, datetime):
        return f"<t:{math.floor(when)}:{style}>"
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError("discord_timestamp needs an aware datetime")
    return f"<t:{epoch_seconds(when)}:{style}>"


def epoch_seconds(dt: datetime) -> int:
    return (dt - EPOCH) // timedelta(seconds=1)


_SHOWABLE: Final = (
    datetime.min.replace(tzinfo=UTC) + timedelta(days=2),
    datetime.max.replace(tzinfo=UTC) - timedelta(days=2),
)
"""The times a Discord timestamp may name to be shown: those Python holds (years 1 to 9999)
in every time zone (their offsets are under a day)."""


def stamp_time(digits: str) -> datetime | None:
    """The time a Discord timestamp's ``<t:digits>`` names (``digits``: an optional minus
    and digits), in UTC; None when it is outside :data:`_SHOWABLE` (or too long to be a
    number of seconds at all): such markup, typed in a message or a file, is then shown as
    it was typed, never an error."""
    low, high = _SHOWABLE
    if len(digits) > 15:  # 12 digits reach past the year 9999; never a long int() here
        return None
    seconds = int(digits)
    if not epoch_seconds(low) <= seconds <= epoch_seconds(high):
        return None
    return EPOCH + timedelta(seconds=seconds)


def examples(now: datetime) -> str:
    return t(
        "`in 90m`, `18:00`, `tomorrow 09:00`, `{date}` or a Discord timestamp like "
        "`<t:1735000000>`", date=example_date(now.date()),
    )  # fmt: skip


def example_date(today: date) -> str:
    """A date-and-time example that is still ahead, like ``2026-12-24 18:00``."""
    year = today.year if (today.month, today.day) < (12, 24) else today.year + 1
    return f"{year}-12-24 18:00"


def past_message(understood: str) -> str:
    return t(
        "That time has already passed: I read it as {understood}. Please give a time in the "
        "future, like `in 2h` or `tomorrow 09:00`.", understood=understood,
    )  # fmt: skip


def too_far_message(understood: str | None, now: datetime) -> str:
    limit = discord_timestamp(now + MAX_AHEAD, "D")
    if understood:
        return t(
            "That's too far ahead. I read it as {understood}. I can schedule up to 5 years "
            "ahead (until {limit}).", understood=understood, limit=limit,
        )  # fmt: skip
    return t("That's too far ahead. I can schedule up to 5 years ahead (until {limit}).",
             limit=limit)  # fmt: skip


def understood_as(dt: datetime, zone: tzinfo) -> str:
    """``<t:N:F>`` plus a plain rendering in the zone used and in UTC."""
    local = dt.astimezone(zone)
    utc = dt.astimezone(UTC)
    zone_name = zone_label(zone, local)
    plain = f"{plain_time(utc)} UTC"
    if zone_name != "UTC":
        plain = f"{plain_time(local)} {zone_name} = {plain}"
    return f"{discord_timestamp(dt)} ({plain})"


def plain_time(dt: datetime) -> str:
    seconds = f":{dt.second:02d}" if dt.second else ""
    return f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d} {dt.hour:02d}:{dt.minute:02d}{seconds}"


def zone_label(zone: tzinfo, at: datetime) -> str:
    if isinstance(zone, ZoneInfo):
        return zone.key
    offset = zone.utcoffset(at) or timedelta(0)
    if not offset:
        return "UTC"
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(offset) // timedelta(minutes=1)
    return f"UTC{sign}{minutes // 60:02d}:{minutes % 60:02d}"
