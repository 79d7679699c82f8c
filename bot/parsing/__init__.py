"""Reading what people type into ``/schedule``: when to post, how it repeats, in which zone.

Everything here is pure (no Discord, no I/O, no clock: "now" is passed in). Bad input raises
:class:`InputError`, whose message is shown to the user as it is.

- :mod:`.when`: the ``when`` text → an instant;
- :mod:`.repeat`: the ``repeat`` text → a :class:`RepeatRule` (cron or interval), with the
  phrases of :mod:`.phrases`; :mod:`.rule`: the rule, its trigger and its next times;
- :mod:`.clock`: a time of day; :mod:`.dates`: ``24/12`` read by locale; :mod:`.wall`:
  local wall times and DST gaps;
- :mod:`.schedule`: ``when`` and ``repeat`` together → the first and next times;
- :mod:`.zones`: time zone names, forgiving lookup and autocomplete;
- :mod:`.durations`: ``2h30m`` read, ``1 hour and 30 minutes`` written;
- :mod:`.cron_words`: a cron expression described in English;
- :mod:`.display`: times shown back (Discord timestamps, what a text was read as);
- :mod:`.languages`: times and repeats typed in French, German and Spanish (one table
  per language, read by the English parser);
- :mod:`.words`: day and month names; :mod:`.errors`: the error and the input limits.
"""

from __future__ import annotations

from .cron_words import describe_cron
from .display import discord_timestamp
from .durations import parse_duration, spoken_duration
from .errors import MAX_AHEAD, MAX_INPUT_LENGTH, ConcernsField, InputError, concerning
from .repeat import MAX_INTERVAL, MIN_INTERVAL, parse_repeat
from .rule import RepeatRule, next_times, repeat_kind
from .schedule import ScheduleReading, read_schedule
from .when import date_notes, parse_until, parse_when
from .zones import COMMON_ZONES, resolve_timezone, timezone_choices, zone_names

__all__ = [
    "COMMON_ZONES",
    "MAX_AHEAD",
    "MAX_INPUT_LENGTH",
    "MAX_INTERVAL",
    "MIN_INTERVAL",
    "ConcernsField",
    "InputError",
    "RepeatRule",
    "ScheduleReading",
    "concerning",
    "date_notes",
    "describe_cron",
    "discord_timestamp",
    "next_times",
    "parse_duration",
    "parse_repeat",
    "parse_until",
    "parse_when",
    "read_schedule",
    "repeat_kind",
    "resolve_timezone",
    "spoken_duration",
    "timezone_choices",
    "zone_names",
]
