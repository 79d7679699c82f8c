"""The limits against abuse, checked: each refusal names its limit and the setting that sets
it, so a member knows what stopped them and an operator what to raise.

The counts are read in the same transaction as the write they guard, after the server's
settings row is locked (:meth:`bot.db.BotDb.lock_guild`): two instances creating in one
server at once take turns, so neither can pass a limit the other has just reached.
"""

from __future__ import annotations

import itertools
from datetime import datetime
from zoneinfo import ZoneInfo

from ..config import MIB
from ..models import LIMIT_SETTINGS, Limits
from ..parsing import RepeatRule, next_times

GAPS_SAMPLED = 400
"""How many coming times of a repeat rule are looked at for its shortest gap (a cron rule's
gaps differ: ``0,1 9 * * *`` posts twice a minute apart once a day)."""


class OverLimit(ValueError):
    """A server (or member) would pass one of its limits; ``str(e)`` says which, and the
    setting that sets it (shown to the member)."""


class TooMuchStored(OverLimit):
    """The server's announcements would keep more bytes in files than the limit allows."""


class TooManyCommands(OverLimit):
    """A member used more commands this minute than the limit allows; ``wait`` is how many
    seconds are left of the minute."""

    def __init__(self, message: str, wait: int) -> None:
        super().__init__(message)
        self.wait = wait


def _raise_hint() -> str:
    return "the bot's operator can raise it for this server"


def check_room(limits: Limits, live: int, adding: int) -> None:
    """Refuse ``adding`` announcements to a server that has ``live`` ones if that passes its
    limit of live announcements."""
    if live + adding <= limits.max_announcements:
        return
    setting = LIMIT_SETTINGS["max_announcements"]
    more = "one more" if adding == 1 else f"{adding:,} more"
    raise OverLimit(
        f"This server already has {live:,} live (scheduled or paused) announcements: "
        f"{more} would pass its limit of {limits.max_announcements:,} ({setting}). Cancel "
        f"announcements it no longer needs (`/list`), or ask for more: {_raise_hint()}."
    )


def check_templates(limits: Limits, saved: int, adding: int = 1) -> None:
    """Refuse saving ``adding`` templates in a server that has ``saved`` if that passes its
    limit of templates (for ``/template save`` and imports)."""
    if saved + adding <= limits.max_templates:
        return
    setting = LIMIT_SETTINGS["max_templates"]
    raise OverLimit(
        f"This server already has {saved:,} templates, its limit is {limits.max_templates:,} "
        f"({setting}). Delete templates it no longer needs (`/template list`), or ask for "
        f"more: {_raise_hint()}."
    )


def check_files(limits: Limits, kept: int, adding: int) -> None:
    """Refuse ``adding`` bytes of files to a server whose live announcements keep ``kept``
    if that passes its limit."""
    if kept + adding <= limits.files_max_bytes:
        return
    setting = LIMIT_SETTINGS["files_max_bytes"]
    raise TooMuchStored(
        f"This server's announcements already keep {kept / MIB:.1f} MiB of files; with this "
        f"one ({adding / MIB:.1f} MiB) they would pass the server's limit of "
        f"{limits.files_max_bytes / MIB:.1f} MiB ({setting}). Cancel announcements with "
        "files you no longer need, or attach a smaller one."
    )


def shortest_gap(rule: RepeatRule, tz: ZoneInfo, start: datetime) -> float:
    """The shortest time, in seconds, between two of the rule's coming posts from ``start``
    (of the first :data:`GAPS_SAMPLED`)."""
    if rule.every is not None:
        return rule.every.total_seconds()
    times = next_times(rule, start, tz, GAPS_SAMPLED)
    return min((b - a).total_seconds() for a, b in itertools.pairwise(times))


def check_repeat(limits: Limits, rule: RepeatRule, tz: ZoneInfo, start: datetime) -> None:
    """Refuse a repeat rule that posts more often than the server's shortest repeat."""
    gap = shortest_gap(rule, tz, start)
    if gap >= limits.min_repeat_seconds:
        return
    setting = LIMIT_SETTINGS["min_repeat_seconds"]
    shortest = _minutes(limits.min_repeat_seconds)
    raise OverLimit(
        f"That repeats too often for this server: posts would be {_minutes(gap)} apart, and "
        f"the shortest repeat here is {shortest} ({setting}). Choose a longer repeat, e.g. "
        f"`every {shortest}`."
    )


def _minutes(seconds: float) -> str:
    minutes = seconds / 60
    text = f"{minutes:g}" if minutes < 10 else f"{minutes:.0f}"
    return f"{text} minute" + ("" if text == "1" else "s")
