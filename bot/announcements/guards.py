"""The limits against abuse, checked: each refusal names its limit and the setting that sets
it, so a member knows what stopped them and an operator what to raise.

The counts are read in the same transaction as the write they guard, after the server's
settings row is locked (:meth:`bot.db.BotDb.lock_guild`): two instances creating in one
server at once take turns, so neither can pass a limit the other has just reached.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..config import MIB, ConfigError, Number, WholeNumber
from ..i18n import t, tn
from ..models import LIMIT_SETTINGS, GuildLimits, Limits
from ..parsing import RepeatRule, next_times
from ..parsing.spoken import decimal, number

if TYPE_CHECKING:
    from datetime import datetime
    from zoneinfo import ZoneInfo

GAPS_SAMPLED = 400
"""How many coming times of a repeat rule are looked at for its shortest gap (a cron rule's
gaps differ: ``0,1 9 * * *`` posts twice a minute apart once a day)."""


CRON_STEP = 60.0
"""A cron rule's shortest possible gap: a minute."""


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


def check_room(limits: Limits, live: int, adding: int) -> None:
    """Refuse ``adding`` announcements to a server that has ``live`` ones if that passes its
    limit of live announcements."""
    if live + adding <= limits.max_announcements:
        return
    setting = LIMIT_SETTINGS["max_announcements"]
    more = t("one more") if adding == 1 else tn("{count} more", "{count} more", adding,
                                                 count=number(adding))  # fmt: skip
    raise OverLimit(
        tn(
            "This server already has {count} live (scheduled or paused) announcement: {more} "
            "would pass its limit of {limit} ({setting}). Cancel announcements it no longer "
            "needs (`/list`), or ask for more: the bot's operator can raise it for this server.",
            "This server already has {count} live (scheduled or paused) announcements: {more} "
            "would pass its limit of {limit} ({setting}). Cancel announcements it no longer "
            "needs (`/list`), or ask for more: the bot's operator can raise it for this server.",
            live, count=number(live), more=more, limit=number(limits.max_announcements),
            setting=setting,
        )
    )  # fmt: skip


def check_templates(limits: Limits, saved: int, adding: int = 1) -> None:
    """Refuse saving ``adding`` templates in a server that has ``saved`` if that passes its
    limit of templates (for ``/template save`` and imports)."""
    if saved + adding <= limits.max_templates:
        return
    setting = LIMIT_SETTINGS["max_templates"]
    raise OverLimit(
        tn(
            "This server already has {count} templates, its limit is {limit} ({setting}). "
            "Delete templates it no longer needs (`/template list`), or ask for more: the "
            "bot's operator can raise it for this server.",
            "This server already has {count} templates, its limit is {limit} ({setting}). "
            "Delete templates it no longer needs (`/template list`), or ask for more: the "
            "bot's operator can raise it for this server.",
            saved, count=number(saved), limit=number(limits.max_templates), setting=setting,
        )
    )  # fmt: skip


def check_files(limits: Limits, kept: int, adding: int) -> None:
    """Refuse ``adding`` bytes of files to a server whose live announcements and templates
    keep ``kept`` if that passes its limit."""
    if kept + adding <= limits.files_max_bytes:
        return
    setting = LIMIT_SETTINGS["files_max_bytes"]
    raise TooMuchStored(
        t(
            "This server's announcements and templates already keep {kept} MiB of files; "
            "with these ({adding} MiB) they would pass the server's limit of {limit} MiB "
            "({setting}). Delete templates or cancel announcements with files you no longer "
            "need, or attach a smaller file.",
            kept=decimal(kept / MIB), adding=decimal(adding / MIB),
            limit=decimal(limits.files_max_bytes / MIB), setting=setting,
        )
    )  # fmt: skip


def shortest_gap(rule: RepeatRule, tz: ZoneInfo, start: datetime) -> float:
    """The shortest time, in seconds, between two of the rule's coming posts from ``start``
    (of the first :data:`GAPS_SAMPLED`)."""
    if rule.every is not None:
        return rule.every.total_seconds()
    times = next_times(rule, start, tz, GAPS_SAMPLED)
    return min((b - a).total_seconds() for a, b in itertools.pairwise(times))


def check_repeat(limits: Limits, rule: RepeatRule, tz: ZoneInfo, start: datetime) -> None:
    """Refuse a repeat rule that posts more often than the server's shortest repeat. (A
    cron rule is never under a minute, the shortest one may be: none is looked at then.)"""
    if rule.every is None and limits.min_repeat_seconds <= CRON_STEP:
        return
    gap = shortest_gap(rule, tz, start)
    if gap >= limits.min_repeat_seconds:
        return
    setting = LIMIT_SETTINGS["min_repeat_seconds"]
    shortest = _minutes(limits.min_repeat_seconds)
    raise OverLimit(
        t(
            "That repeats too often for this server: posts would be {gap} apart, and the "
            "shortest repeat here is {shortest} ({setting}). Choose a longer repeat, e.g. "
            "`every {example}`.",
            gap=_minutes(gap), shortest=shortest, setting=setting, example=_example(
                limits.min_repeat_seconds),
        )
    )  # fmt: skip


def _minutes(seconds: float) -> str:
    minutes = seconds / 60
    text = f"{minutes:g}" if minutes < 10 else f"{minutes:.0f}"
    count = float(text)
    if count != int(count):
        return t("{count} minutes", count=decimal(count, 2))
    return tn("{count} minute", "{count} minutes", int(count), count=number(int(count)))


def _example(seconds: float) -> str:
    """A repeat as typed (in English: ``every 5 minutes``), at least ``seconds`` apart."""
    minutes = seconds / 60
    text = f"{minutes:g}" if minutes < 10 else f"{minutes:.0f}"
    return f"{text} minute" + ("" if text == "1" else "s")


# --- what an operator may set for one server (python -m bot limits, the dashboard) ----------


@dataclass(frozen=True, slots=True)
class LimitOption:
    """One limit an operator sets for a server: its name on the command line and in the
    dashboard's form, the :class:`~bot.models.Limits` field it sets, how its text is read
    (in its own unit) and that unit's size."""

    name: str
    field: str
    parse: Callable[[str, str], Any]
    unit: str
    scale: float = 1.0

    def show(self, value: float) -> str:
        shown = value / self.scale
        text = f"{shown:,.0f}" if shown == int(shown) else f"{shown:,.2f}"
        return f"{text} {self.unit}".rstrip()


LIMIT_OPTIONS: tuple[LimitOption, ...] = (
    LimitOption("announcements", "max_announcements", WholeNumber(minimum=1), ""),
    LimitOption("templates", "max_templates", WholeNumber(minimum=1), ""),
    LimitOption("files-mb", "files_max_bytes", Number(0.0, 100_000.0, scale=MIB), "MiB", MIB),
    LimitOption(
        "min-repeat-minutes",
        "min_repeat_seconds",
        Number(1.0, 60.0 * 24 * 366, scale=60.0),
        "minutes",
        60.0,
    ),
    LimitOption("commands-per-minute", "commands_per_minute", WholeNumber(minimum=1), ""),
)
"""Every limit an operator may set for one server, in the order they are shown."""

DEFAULT = "default"
"""The value that gives a server the instance's limit back."""


class BadLimit(ValueError):
    """An operator's value for a limit can't be read; ``str(e)`` says which and why."""


def changed_limits(current: GuildLimits, given: Mapping[str, str]) -> GuildLimits:
    """``current`` with the operator's ``given`` values (by option name, each a number in the
    option's unit, or ``default`` for the instance's); raises :class:`BadLimit`."""
    options = {o.name: o for o in LIMIT_OPTIONS}
    changes: dict[str, Any] = {}
    for name, raw in given.items():
        option = options.get(name)
        if option is None:
            raise BadLimit(f"there is no limit called {name!r} (limits: {', '.join(options)})")
        text = raw.strip()
        if text.lower() == DEFAULT:
            changes[option.field] = None
            continue
        try:
            changes[option.field] = option.parse(name, text)
        except ConfigError as exc:
            raise BadLimit(str(exc)) from None
    return replace(current, **changes)


def limit_lines(limits: Limits, override: GuildLimits | None) -> list[str]:
    """Each limit of a server, in words: its value, and whether it is this server's own or
    the instance's setting."""
    lines = []
    for option in LIMIT_OPTIONS:
        value = getattr(limits, option.field)
        own = override is not None and getattr(override, option.field) is not None
        where = "set for this server" if own else LIMIT_SETTINGS[option.field]
        lines.append(f"{option.name}: {option.show(value)} ({where})")
    return lines
