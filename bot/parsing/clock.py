"""A time of day as people write it: ``18:00``, ``6pm``, ``6:30 pm``, ``6.30pm``, ``18h30``,
``noon``, and (where the caller allows it) a bare hour such as the ``9`` of ``at 9``."""

from __future__ import annotations

import re
from datetime import time
from typing import Final

from ..i18n import t
from .errors import InputError
from .words import join_words

_A = re.ASCII
_CLOCK: Final = re.compile(
    r"(?P<h>[0-9]{1,2})"
    r"(?:(?P<sep>[:.h])(?P<m>[0-9]{2})(?::(?P<s>[0-9]{2}))?)?"
    r" ?(?P<ampm>[ap]\.?m\.?)?",
    _A,
)
CLOCK_TEXT: Final = r"(?:noon|midday|midnight|[0-9]{1,2}(?:[:.h][0-9]{2})? ?(?:[ap]\.?m\.?)?)"
"""A regular expression for anything :func:`parse_clock` may read (it still checks it)."""


def parse_clock(s: str, *, bare_hour: bool = False) -> time | None:
    """Read ``s`` (lower-case) as a time of day; ``None`` if it is not one.

    ``18:00``, ``18:00:30``, ``6pm``, ``6:30 pm``, ``6.30pm`` (a dot needs am/pm: ``18.30``
    could be a date), ``18h30`` (``18h`` alone is a duration), ``noon`` / ``midday``. With
    ``bare_hour`` a number alone is that hour (``at 9`` → 09:00) and ``midnight`` is 00:00.
    A form that is a time but not a real one (``25:00``, ``13pm``) raises
    :class:`InputError`.
    """
    if s in ("noon", "midday"):
        return time(12)
    if s == "midnight" and bare_hour:
        return time(0)
    match = _CLOCK.fullmatch(s)
    if match is None:
        return None
    sep, ampm = match["sep"], match["ampm"]
    if sep is None and ampm is None and not bare_hour:
        return None
    if sep == "." and ampm is None:
        return None
    if sep == "h" and (ampm is not None or match["s"] is not None):
        return None
    hour, minute, second = int(match["h"]), int(match["m"] or 0), int(match["s"] or 0)
    if minute > 59 or second > 59:
        raise InputError(t("`{text}` isn't a valid time: minutes and seconds go up to 59.", text=s))
    if ampm:
        if not 1 <= hour <= 12:
            raise InputError(
                t("`{text}` isn't a valid time: use `1`–`12` with am/pm, or `18:00`.", text=s)
            )
        hour = hour % 12 + (12 if ampm.startswith("p") else 0)
    elif hour > 23:
        raise InputError(
            t("`{text}` isn't a valid time: hours go from `00` to `23` (`00:00`).", text=s)
        )
    return time(hour, minute, second)


def clock_words(times: list[time]) -> str:
    """``09:00``, ``09:00 and 17:00``: the times as the confirmations write them."""
    return join_words([f"{t.hour:02d}:{t.minute:02d}" for t in times])
