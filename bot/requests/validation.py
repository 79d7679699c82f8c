"""Checking what a member asks for, the one way ``/schedule`` and ``/edit`` both do it.

:func:`check_request` takes the request built at the door
(:class:`~bot.requests.request.AnnouncementRequest`: who asks, the options as typed or, for
an edit, the announcement's current values for the options left out) and returns the
:class:`~bot.models.Draft` to write, or refuses with what was wrong
(:class:`~bot.requests.checks.Refusal`, :class:`~bot.parsing.InputError`) before anything is
written: permissions, channel, time, repeat rule, ``until``, mentions, length and style are
checked in that order, with the same answers for both commands and the dashboard.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

import discord

from ..announcements import Announcements, Draft, GuildSettings, mention_markup
from ..i18n import t
from ..limits import MAX_EMBED_DESCRIPTION, MAX_EMBED_TITLE, MAX_EMBED_TOTAL, MAX_MESSAGE
from ..models import Content, Destination, Style
from ..parsing import (
    InputError,
    RepeatRule,
    ScheduleReading,
    concerning,
    date_notes,
    discord_timestamp,
    next_times,
    parse_repeat,
    parse_until,
    parse_when,
    read_schedule,
    resolve_timezone,
)
from ..parsing.placeholders import WIDEST, check_placeholders, widest
from ..parsing.rule import kept_skips
from .checks import Refusal, plan_mentions, require_manager
from .destinations import Target, check_destination, forum_title, resolve_tags, split_tags
from .events import EventRoom, check_event
from .places import check_places
from .post_as import check_places_post_as, check_post_as
from .previous import check_tidy
from .reminders import check_reminder
from .style import check_style

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

    from scheduler import Clock

    from .request import AnnouncementOptions, AnnouncementRequest

EMPTY_MESSAGE = "The message is empty. Type the text to announce, e.g. `Standup in 5 minutes!`"
"""The refusal of an empty message (in English: :func:`empty_message` says it)."""


def empty_message() -> str:
    """:data:`EMPTY_MESSAGE` in the language in effect."""
    return t("The message is empty. Type the text to announce, e.g. `Standup in 5 minutes!`")


def until_one_off() -> str:
    """:data:`UNTIL_ONE_OFF` in the language in effect."""
    return t(
        "`until` is for repeating announcements (it is when the repeats stop); this one posts "
        "once. Add a `repeat` (e.g. `repeat: daily`), or leave `until` out."
    )


UNTIL_ONE_OFF = (
    "`until` is for repeating announcements (it is when the repeats stop); this one posts "
    "once. Add a `repeat` (e.g. `repeat: daily`), or leave `until` out."
)
NO_UNTIL = frozenset({"none", "no", "never", "off", "once"})
"""What ``until`` takes to mean "no end" (on /edit: the end it had is removed)."""


class Checked(NamedTuple):
    """A request that passed every check."""

    draft: Draft
    """The announcement to write."""
    notes: list[str]
    """For the member: how a date was read, who is pinged."""
    upcoming: tuple[datetime, ...]
    """Its first posts (three for a repeating one)."""


async def check_request(
    announcements: Announcements,
    clock: Clock,
    request: AnnouncementRequest,
    *,
    room: EventRoom | None = None,
) -> Checked:
    """The announcement ``request`` asks for, checked in full (permissions, channel, time,
    repeat rule, until, mentions, length); refused with what was wrong. An empty message
    (the form is still to be shown) checks everything else. Dates like ``24/12`` are read by
    the requester's locale. ``room``: the servers' Discord events as already asked (an
    import shares one between its rows)."""
    guild, member = request.requester.guild, request.requester.member
    options, message = request.options, request.message
    settings = await announcements.settings(guild.id)
    require_manager(member, settings)
    title = options.title.strip() if options.title and options.title.strip() else None
    with concerning("channel"):
        found = await find_target(guild, options.channel_id)
        channel, destination = check_destination(
            member, guild.me, found, embed=title is not None, files=options.has_files
        )
        rich = _content(options, channel, destination, title, form_pending=not message)
    zone = options.timezone or await typing_zone(announcements, member, settings)
    now = clock.now()
    locale = request.requester.locale
    reading = _reading(options.when, options.repeat, zone, now, locale)
    first, rule = reading.first, reading.rule
    with concerning("until"):
        until = _until(options.until, rule, first, zone, now, locale)
    if rule is not None and options.skips:
        rule = kept_skips(rule, options.skips, zone, first)
        upcoming = tuple(next_times(rule, first, zone, 3))
        first = upcoming[0]
    else:
        upcoming = reading.upcoming
    with concerning("times"):
        times = _times(options.times, rule)
    if until is not None:
        upcoming = tuple(t for t in upcoming if t <= until)
    if times is not None:
        upcoming = upcoming[:times]
    with concerning("mention"):
        mention, allowed, notes = _mentions(request, channel)
    prefix = 0 if mention is None else len(mention_markup(mention)) + 1
    if message and not message.strip():
        raise InputError(empty_message(), field="message")
    with concerning("message"):
        check_placeholders(message, "the message")
    with concerning("title"):
        check_placeholders(title, "the title")
    check_widest_length(message, prefix, title)
    check_style(rich.style, title, message)
    with concerning("event"):
        event = await check_event(guild, options, room)
    with concerning("reminder"):
        reminder = check_reminder(options, request.requester.locale)
    post_as = check_post_as(options, member, guild.me, channel, destination, rich.publish)
    with concerning("also_in"):
        places = await check_places(
            request.requester, options, channel.id, embed=title is not None,
            files=options.has_files,
        )  # fmt: skip
    check_places_post_as(post_as, options, member, guild, places)
    with concerning("delete_after"):
        tidy = check_tidy(options, channel, destination, guild.me, request.requester.locale)
    draft = Draft(
        guild_id=guild.id,
        channel_id=channel.id,
        author_id=member.id,
        content=message,
        mention=mention,
        allowed_mentions=allowed,
        first=first,
        timezone=zone.key,
        repeat=rule,
        until=until,
        rich=rich,
        event=event,
        reminder=reminder,
        times=times,
        post_as=post_as,
        places=places,
        tidy=tidy,
    )
    return Checked(draft, [*reading.notes, *notes], upcoming)


MAX_TIMES = 10_000
"""The most posts ``times`` may end a repeating announcement after."""


def times_one_off() -> str:
    return t(
        "`times` is for repeating announcements (it ends them after that many posts); this "
        "one posts once. Add a `repeat` (e.g. `repeat: daily`), or leave `times` out."
    )


def _times(times: int | None, rule: RepeatRule | None) -> int | None:
    """How many posts a repeating announcement ends after (None or 0: no such end)."""
    if not times:
        return None
    if rule is None:
        raise InputError(times_one_off())
    if not 1 <= times <= MAX_TIMES:
        raise InputError(
            t("`times` is a number of posts from 1 to {most} (0 for no such end).",
              most=MAX_TIMES)
        )  # fmt: skip
    return times


def _mentions(
    request: AnnouncementRequest, channel: Target
) -> tuple[str | None, dict[str, Any], list[str]]:
    """What the announcement pings and may ping, and the notes about it: an edit that leaves
    ``mention`` alone keeps what was decided when it was scheduled; anything else is decided
    from the requester's rights now."""
    options, guild = request.options, request.requester.guild
    if options.kept_mentions is not None:
        return options.kept_mentions.mention, options.kept_mentions.allowed, []
    role = None if options.mention_id is None else guild.get_role(options.mention_id)
    if options.mention_id is not None and role is None:
        raise Refusal(t("I can't find that role in this server."))
    plan = plan_mentions(request.requester.member, guild.me, channel, role, request.message)
    return plan.mention, plan.allowed, plan.notes


async def find_target(
    guild: discord.Guild, channel_id: int
) -> discord.abc.GuildChannel | discord.Thread:
    """The channel or thread with this id in ``guild``: from the cache, else (an archived
    thread is not cached) asked of Discord. Whether an announcement may post there is
    :func:`check_destination`'s to say."""
    found: discord.abc.GuildChannel | discord.Thread | None = guild.get_channel_or_thread(
        channel_id
    )
    if found is None:
        try:
            found = await guild.fetch_channel(channel_id)
        except (discord.NotFound, discord.Forbidden, discord.InvalidData):
            found = None  # gone, hidden from the bot, or another server's
    if found is None or found.guild.id != guild.id:
        raise Refusal(t("I can't find that channel in this server."))
    return found


def check_widest_length(message: str, prefix: int, title: str | None) -> None:
    """:func:`check_length` with each placeholder counted at its longest (an occurrence's
    text must fit whatever it renders to)."""
    widest_message = widest(message) or ""
    widest_title = widest(title)
    try:
        check_length(widest_message, prefix, widest_title)
    except InputError as too_long:
        if widest_message == message and widest_title == title:
            raise
        raise InputError(
            f"{too_long} "
            + t("(Placeholders are counted at their longest: `{{date}}` as {date} characters, "
                "`{{next}}` as {next}…)", date=WIDEST["date"], next=WIDEST["next"]),
            field=too_long.field,
        ) from None  # fmt: skip


def check_length(message: str, prefix: int, title: str | None) -> None:
    """The text fits Discord's limits: 2000 characters in a message, or with a ``title``
    (an embed) 256 in its title, 4096 in its description and 6000 in all."""
    if title is None:
        if len(message) + prefix > MAX_MESSAGE:
            raise InputError(
                t("The message is {count} characters (with the mention); Discord allows "
                  "{limit}. Shorten it or split it into two announcements.",
                  count=len(message) + prefix, limit=MAX_MESSAGE), field="message"
            )  # fmt: skip
        return
    if len(title) > MAX_EMBED_TITLE:
        raise InputError(
            t("The title is {count} characters; an embed's title may have at most {limit}. "
              "Shorten it, e.g. `title: Weekly update`.", count=len(title),
              limit=MAX_EMBED_TITLE), field="title"
        )  # fmt: skip
    if len(message) > MAX_EMBED_DESCRIPTION:
        raise InputError(
            t("The message is {count} characters; under a title (an embed) Discord allows "
              "{limit}. Shorten it or split it into two announcements.", count=len(message),
              limit=MAX_EMBED_DESCRIPTION), field="message"
        )  # fmt: skip
    if len(title) + len(message) > MAX_EMBED_TOTAL:
        raise InputError(
            t("The title and message are {count} characters together; an embed may have "
              "{limit} in all. Shorten them.", count=len(title) + len(message),
              limit=MAX_EMBED_TOTAL), field="message"
        )  # fmt: skip


def _content(
    options: AnnouncementOptions,
    channel: Target,
    destination: Destination,
    title: str | None,
    *,
    form_pending: bool,
) -> Content:
    """The title, silence, publishing and tags asked for, as the destination allows (a
    forum's title may still come with the form, when it is still to be shown)."""
    if options.publish and destination != Destination.ANNOUNCEMENT:
        raise Refusal(
            t("{channel} is not an announcement channel: only posts there can be published "
              "to following servers. Leave `publish` out.", channel=channel.mention)
        )  # fmt: skip
    tags: tuple[int, ...] = ()
    if isinstance(channel, discord.ForumChannel):
        if not form_pending:
            with concerning("title"):
                check_placeholders(title, "the title")
                forum_title(widest(title), channel)
        if isinstance(options.tags, tuple):
            known = {t.id for t in channel.available_tags}
            tags = tuple(t for t in options.tags if t in known)
            if not tags and channel.flags.require_tag:
                tags = resolve_tags(channel, [])  # refused: the forum requires one
        else:
            tags = resolve_tags(channel, split_tags(options.tags))
    elif isinstance(options.tags, str) and split_tags(options.tags):
        raise Refusal(
            t("{channel} is not a forum channel: only forum posts have tags. Leave `tags` "
              "out.", channel=channel.mention)
        )  # fmt: skip
    publish = destination == Destination.ANNOUNCEMENT and options.publish is not False
    return Content(
        title=title,
        silent=options.silent,
        destination=destination,
        publish=publish,
        tags=tags,
        style=options.style or Style(),
    )


async def typing_zone(
    announcements: Announcements, member: discord.Member, settings: GuildSettings
) -> ZoneInfo:
    """The zone the times a member types are read in when they name none: their own
    (``/timezone``), else the server's, else UTC."""
    own = await announcements.member_timezone(member.id)
    return resolve_timezone(own or settings.timezone or "UTC")


def _reading(
    when: str | datetime | None,
    repeat: str | RepeatRule | None,
    zone: ZoneInfo,
    now: datetime,
    locale: str | None,
) -> ScheduleReading:
    """``when`` and ``repeat`` read together, as /schedule reads them; on /edit either may be
    kept: ``when`` as a time already set (where the rule starts; not checked again),
    ``repeat`` as the announcement's rule (a cron rule follows ``zone``, which may be new)."""
    if not isinstance(when, datetime) and not isinstance(repeat, RepeatRule):
        return read_schedule(when, repeat, zone, now, locale=locale)
    notes: tuple[str, ...] = ()
    if isinstance(when, datetime):
        start = when
    else:
        text = when or ""
        with concerning("when"):
            start = parse_when(text, zone, now, locale=locale)
        notes = tuple(date_notes(text, zone, now, locale))
    if isinstance(repeat, RepeatRule):
        rule: RepeatRule | None = _in_zone(repeat, zone)
    elif repeat and repeat.strip():
        said: list[str] = []
        with concerning("repeat"):
            rule = parse_repeat(repeat, start, zone, locale=locale, notes=said)
        notes += tuple(said)
    else:
        rule = None
    if rule is None:
        return ScheduleReading(start, None, (start,), notes)
    upcoming = tuple(next_times(rule, start, zone, 3))
    return ScheduleReading(upcoming[0], rule, upcoming, notes)


_ZONE_IN_WORDS = re.compile(r"\(([^()]+)\)$")


def _in_zone(rule: RepeatRule, zone: ZoneInfo) -> RepeatRule:
    """A kept cron rule, said in ``zone`` (its words end with the zone it is read in)."""
    if rule.cron is None or not _ZONE_IN_WORDS.search(rule.words):
        return rule
    return replace(rule, words=_ZONE_IN_WORDS.sub(f"({zone.key})", rule.words))


def _until(
    until: str | datetime | None,
    rule: RepeatRule | None,
    first: datetime,
    zone: ZoneInfo,
    now: datetime,
    locale: str | None,
) -> datetime | None:
    """When a recurring announcement stops: a time after its first post, read like
    ``when``; on /edit, ``none`` clears it and a kept one is checked against the new first
    time."""
    if until is None or (isinstance(until, str) and until.strip().lower() in NO_UNTIL):
        return None
    if rule is None:
        if isinstance(until, datetime):
            return None  # it no longer repeats: there is nothing to end
        raise InputError(until_one_off())
    if isinstance(until, str):
        return parse_until(until, zone, now, first, locale=locale)
    if until <= first:
        raise InputError(
            t("`until` ({until}) must be after the first time ({first}): it is when the "
              "repeats stop. Give a later `until` too, or `until: none`.",
              until=discord_timestamp(until, "F"), first=discord_timestamp(first, "F"))
        )  # fmt: skip
    return until
