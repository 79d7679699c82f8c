"""Durations in words, both ways: reading ``2h30m`` and writing ``1 hour and 30 minutes``."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import TYPE_CHECKING, Final

from .errors import MAX_INPUT_LENGTH
from .words import join_words

if TYPE_CHECKING:
    from datetime import timedelta

_UNIT_SECONDS: Final = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600),
    **dict.fromkeys(("d", "day", "days"), 86400),
    **dict.fromkeys(("w", "wk", "wks", "week", "weeks"), 604800),
}
_SPOKEN_FRACTIONS: Final = (
    ("an hour and a half", "90m"),
    ("one and a half hours", "90m"),
    ("half an hour", "30m"),
    ("half a day", "12h"),
    ("a quarter of an hour", "15m"),
    ("quarter of an hour", "15m"),
    ("a quarter hour", "15m"),
)
"""Spoken fractions of a unit, as the compact form they mean."""
_DURATION_PART: Final = re.compile(
    r" ?(?:, ?)?(?:and )?(?:([0-9]+(?:\.[0-9]+)?) ?([a-z]+)|(an?) ([a-z]+))", re.ASCII
)


def parse_duration(text: str) -> Fraction | None:
    """Read a duration like ``2h30m``, ``1 day, 3 hours``, ``an hour``, ``1.5h`` or
    ``half an hour``.

    ``text`` must already be lower-case with single spaces. Returns the length in seconds
    (exact, possibly huge), or ``None`` if the text is not a duration at all (or is longer
    than :data:`MAX_INPUT_LENGTH`).
    """
    if len(text) > MAX_INPUT_LENGTH:
        return None
    for spoken, compact in _SPOKEN_FRACTIONS:
        text = text.replace(spoken, compact)
    total = Fraction(0)
    pos = 0
    while pos < len(text):
        match = _DURATION_PART.match(text, pos)
        if match is None or (pos == 0 and match.group(0).startswith((" ", ",", "and"))):
            return None
        number, unit = match.group(1) or match.group(3), match.group(2) or match.group(4)
        if unit not in _UNIT_SECONDS:
            return None
        amount = Fraction(1) if number in ("a", "an") else Fraction(number)
        total += amount * _UNIT_SECONDS[unit]
        pos = match.end()
    return total if pos else None


def duration_parts(length: timedelta) -> list[tuple[int, str]]:
    """``length`` (rounded to a second) as amounts of units, largest first: whole weeks
    alone, else days, hours, minutes and seconds (units of 0 left out)."""
    total = round(length.total_seconds())
    if total % 604800 == 0:
        return [(total // 604800, "week")]
    return [
        (amount, unit)
        for amount, unit in (
            (total // 86400, "day"),
            (total % 86400 // 3600, "hour"),
            (total % 3600 // 60, "minute"),
            (total % 60, "second"),
        )
        if amount
    ]


def spoken_duration(length: timedelta) -> str:
    """``length`` in words: ``30 minutes``, ``2 weeks``, ``1 hour and 30 minutes``."""
    return join_words([f"{n} {unit}{'s' if n != 1 else ''}" for n, unit in duration_parts(length)])
