"""An /edit checked: the options given, the announcement's values for the rest, checked by
the same code as /schedule (:func:`bot.requests.validation.check_request`) in
:func:`check_edit`. Shared by the /edit command and the dashboard's edit form."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import discord

from ..i18n import t
from ..models import Image, Style
from ..parsing import concerning, resolve_timezone
from .checks import Refusal, require_readable
from .request import AnnouncementOptions, AnnouncementRequest, KeptMentions, Requester
from .style import StyleEdit, edited_style
from .validation import Checked, check_request

if TYPE_CHECKING:
    from scheduler import Clock

    from ..announcements import Announcement, Announcements

_ROLE_MARKUP = re.compile(r"<@&(\d{1,22})>")
NO_MENTION = "none"
"""The ``mention`` value that pings nobody (the one the autocomplete and the form offer)."""
NO_MENTION_WORDS = frozenset({NO_MENTION, "no", "never", "off", "once"})
"""What ``mention`` takes to mean "ping nobody"."""
NO_TITLE = "none"
"""The ``title`` that removes the title (the post is plain text again)."""


@dataclass(frozen=True, slots=True)
class EditOptions:
    """The /edit options other than ``id``, ``message`` and ``update_posted``, as typed."""

    when: str | None = None
    repeat: str | None = None
    channel_id: int | None = None
    timezone: ZoneInfo | None = None
    mention: str | None = None
    until: str | None = None
    title: str | None = None
    """A new title (``none`` removes it: the post is plain text again)."""
    silent: bool | None = None
    image: discord.Attachment | None = None
    event: bool | None = None
    event_location: str | None = None
    event_minutes: int | None = None
    event_channel_id: int | None = None
    reminder: str | None = None
    """How long before each occurrence members are reminded (``none``: off)."""
    times: int | None = None
    """End after this many posts (0: no such end)."""
    style: StyleEdit | Style | None = None
    """``/style``'s options, or the dashboard form's whole style (None: the style stays
    as it is)."""
    as_name: str | None = None
    """Post as this name from now on (``none``: as the bot again)."""
    as_avatar: discord.Attachment | Image | None = None
    """The avatar of those posts (an image: attached to /edit, or uploaded on the
    dashboard's form)."""
    also_in: str | None = None
    """The other places it posts in (``#news #events``; ``none``: no other place)."""
    pin: bool | None = None
    """Pin each post and unpin the one before (None: as it is)."""
    replace: bool | None = None
    """Delete the post before once a new one is up (None: as it is)."""
    delete_after: str | None = None
    """Delete each post this long after it went up (``none``: keep them)."""

    @property
    def empty(self) -> bool:
        return all(
            v is None
            for v in (
                self.when,
                self.repeat,
                self.channel_id,
                self.timezone,
                self.mention,
                self.until,
                self.title,
                self.silent,
                self.image,
                self.event,
                self.event_location,
                self.event_minutes,
                self.event_channel_id,
                self.reminder,
                self.times,
                self.as_name,
                self.as_avatar,
                self.also_in,
                self.pin,
                self.replace,
                self.delete_after,
            )
        ) and (self.style is None or (isinstance(self.style, StyleEdit) and self.style.empty))

    @property
    def changes_timing(self) -> bool:
        return self.when is not None or self.repeat is not None or self.timezone is not None


def mention_option(guild: discord.Guild, typed: str) -> int | None:
    """The role the ``mention`` option names (its id; the guild's id for @everyone), or None
    for ``none``; refused like /schedule's role option when there is no such role."""
    text = typed.strip()
    lowered = text.lower().lstrip("@")
    if lowered in NO_MENTION_WORDS:
        return None
    if lowered in ("everyone", "here"):
        return guild.default_role.id
    found = _ROLE_MARKUP.fullmatch(text)
    if found is not None or text.isdigit():
        role = guild.get_role(int(found[1] if found else text))
    else:
        role = discord.utils.find(lambda r: r.name.lower() == lowered, guild.roles)
    if role is None:
        raise Refusal(t("I can't find that role in this server."))
    return role.id


async def edit_options(
    announcements: Announcements,
    clock: Clock,
    guild: discord.Guild,
    a: Announcement,
    options: EditOptions,
) -> tuple[AnnouncementOptions, bool]:
    """The /schedule options the edit amounts to (the options left out keep ``a``'s
    values), and whether a new ``when`` was given."""
    zone = options.timezone or resolve_timezone(a.timezone)
    when: str | datetime
    if options.when is not None:
        when = options.when
    elif options.changes_timing and a.live:
        when = await announcements.anchor(a)
        if options.repeat is None and a.repeat_kind == "cron" and when > clock.now():
            # A new zone for the same rule: the coming occurrence is the same wall-clock
            # time in the new zone (found from there on, not from the old zone's instant).
            wall = when.astimezone(resolve_timezone(a.timezone)).replace(tzinfo=zone)
            when = max(wall, clock.now())
    else:
        when = datetime.fromtimestamp(a.first_ts, UTC)
    kept = None
    mention_id = None
    if options.mention is None:
        kept = KeptMentions(a.mention, a.allowed_mentions)
    else:
        with concerning("mention"):
            mention_id = mention_option(guild, options.mention)
    until: str | datetime | None = options.until
    if until is None and a.until_ts is not None:
        until = datetime.fromtimestamp(a.until_ts, UTC)
    moved = options.channel_id is not None and options.channel_id != a.channel_id
    style = a.rich.style
    if isinstance(options.style, Style):
        style = options.style
    elif options.style is not None:
        style = edited_style(style, options.style)
    title = a.rich.title
    if options.title is not None:
        title = None if options.title.strip().lower() == NO_TITLE else options.title
    asked = AnnouncementOptions(
        when=when,
        channel_id=options.channel_id or a.channel_id,
        repeat=a.rule if options.repeat is None else options.repeat,
        timezone=zone,
        mention_id=mention_id,
        kept_mentions=kept,
        until=until,
        title=title,
        silent=a.rich.silent if options.silent is None else options.silent,
        publish=None if moved else a.rich.publish,
        tags=None if moved else a.rich.tags,
        has_files=options.image is not None
        or style.thumbnail is not None
        or bool(await announcements.image_names(a.id)),
        event=options.event,
        event_location=options.event_location,
        event_minutes=options.event_minutes,
        event_channel_id=options.event_channel_id,
        kept_event=await announcements.event_spec(a.id),
        reminder=options.reminder,
        kept_reminder=await announcements.reminder_lead(a.id),
        times=a.times if options.times is None else options.times,
        skips=a.repeat_skips,
        style=style,
        as_name=options.as_name,
        as_avatar=options.as_avatar is not None,
        kept_as_name=(await announcements.post_as_names([a.id])).get(a.id),
        also_in=options.also_in,
        kept_places=tuple(p.channel_id for p in await announcements.places(a.id)),
        pin=options.pin,
        replace=options.replace,
        delete_after=options.delete_after,
        kept_tidy=await announcements.tidy(a.id),
    )
    return asked, options.when is not None


async def check_edit(
    announcements: Announcements,
    clock: Clock,
    requester: Requester,
    a: Announcement,
    options: EditOptions,
    message: str = "",
) -> tuple[Checked, bool]:
    """The edit of ``a`` that ``options`` and ``message`` ask for (an empty message: the
    form is still to be shown), checked in full like /schedule; and whether a new ``when``
    was given. The draft keeps ``a``'s files (``images=None``): a caller given a new file
    puts it in."""
    require_readable(requester.member, requester.guild, a)  # before anything of it is read
    asked, when_given = await edit_options(announcements, clock, requester.guild, a, options)
    checked = await check_request(
        announcements, clock, AnnouncementRequest(requester, asked, message)
    )
    return checked._replace(draft=replace(checked.draft, images=None)), when_given
