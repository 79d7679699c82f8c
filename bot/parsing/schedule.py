"""``when`` and ``repeat`` read together: the first time, the rule, the next times, and what
to say about how the text was read.

``when`` may be left out when ``repeat`` names a time of day: the first time is then the
rule's next one. When both are given, ``when`` is where the rule starts: the first post is
the rule's first time at or after it (``when`` itself for an interval or a matching time).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..i18n import t
from .display import examples
from .errors import InputError, concerning
from .repeat import parse_repeat
from .rule import RepeatRule, next_times
from .when import date_notes, parse_when

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo


@dataclass(frozen=True, slots=True)
class ScheduleReading:
    """What ``/schedule``'s ``when`` and ``repeat`` say: ``upcoming`` holds the first posts
    (``upcoming[0]`` is the first; one for a one-off), ``notes`` how dates were read."""

    first: datetime
    rule: RepeatRule | None
    upcoming: tuple[datetime, ...]
    notes: tuple[str, ...]


def read_schedule(
    when: str | None,
    repeat: str | None,
    tz: ZoneInfo,
    now: datetime,
    *,
    locale: str | None = None,
    count: int = 3,
) -> ScheduleReading:
    """Read ``when`` and ``repeat`` (either may be ``None`` or blank, not both) in zone
    ``tz`` at ``now``, for a member whose Discord locale is ``locale``; ``upcoming`` has the
    first ``count`` posts of a repeating announcement. Raises :class:`InputError`."""
    when_text = (when or "").strip()
    repeat_text = (repeat or "").strip()
    if not when_text:
        if not repeat_text:
            raise InputError(
                t("Please say when to post it, like {examples}.", examples=examples(now)),
                field="when",
            )
        said: list[str] = []
        with concerning("repeat"):
            rule = parse_repeat(repeat_text, now, tz, need_time=True, locale=locale, notes=said)
        if rule is None:
            raise InputError(
                t("Please say when to post it, like {examples}.", examples=examples(now)),
                field="when",
            )
        upcoming = next_times(rule, now, tz, count)
        return ScheduleReading(upcoming[0], rule, tuple(upcoming), tuple(said))
    with concerning("when"):
        start = parse_when(when_text, tz, now, locale=locale)
    notes = tuple(date_notes(when_text, tz, now, locale))
    said = []
    rule = None
    if repeat_text:
        with concerning("repeat"):
            rule = parse_repeat(repeat_text, start, tz, locale=locale, notes=said)
    if rule is None:
        return ScheduleReading(start, None, (start,), notes)
    upcoming = next_times(rule, start, tz, count)
    return ScheduleReading(upcoming[0], rule, tuple(upcoming), notes + tuple(said))
