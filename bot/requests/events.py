"""The Discord scheduled event a /schedule or /edit asks for (``event: true``), checked:
where it takes place, for how long, whether the bot may create it there, and whether the
server has room for it (Discord keeps at most 100 scheduled or active events per server)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord

from ..i18n import ANSWER, current_locale, marked, t, translate
from ..models import EventSpec
from .checks import Refusal

if TYPE_CHECKING:
    from .request import AnnouncementOptions

DEFAULT_EVENT_MINUTES = 60
MAX_EVENT_MINUTES = 7 * 24 * 60
MAX_LOCATION = 100
EVENT_LIMIT = 100
"""Discord keeps at most this many scheduled or active events per server (error 30038)."""
NEEDS_A_PLACE = marked(
    "A Discord event needs a place: give `event_location` (e.g. `event_location: Town hall`) "
    "or `event_channel` (a voice or stage channel)."
)
ONE_PLACE = marked(
    "Give `event_location` or `event_channel`, not both: an event takes place in one."
)
EVENT_OPTIONS_ALONE = marked(
    "`event_location`, `event_channel` and `event_minutes` describe the Discord event: add "
    "`event: true`, or leave them out."
)
EVENT_PERMISSIONS = {
    "view_channel": marked("View Channel"),
    "connect": marked("Connect"),
    "create_events": marked("Create Events"),
    "manage_channels": marked("Manage Channels"),
    "mute_members": marked("Mute Members"),
    "move_members": marked("Move Members"),
}
"""Discord's names of the permissions an event's channel asks of the bot."""


def said(message: str) -> str:
    """One of this module's messages (English) in the reader's language."""
    return translate(message, current_locale(), context=ANSWER)


def event_asked(options: AnnouncementOptions) -> bool:
    """Whether any event option was given."""
    return options.event is not None or any(
        v is not None
        for v in (options.event_location, options.event_minutes, options.event_channel_id)
    )


class EventRoom:
    """How many scheduled or active Discord events each server has, asked of Discord at
    most once per server: a request checks its one event against it, an import checks every
    row against the one answer (an import of 300 rows with events asks once, not 300
    times)."""

    __slots__ = ("_live",)

    def __init__(self) -> None:
        self._live: dict[int, int] = {}

    async def live(self, guild: discord.Guild) -> int:
        """The server's scheduled or active events (asked of Discord the first time)."""
        if guild.id not in self._live:
            events = await guild.fetch_scheduled_events(with_counts=False)
            live = (discord.EventStatus.scheduled, discord.EventStatus.active)
            self._live[guild.id] = sum(e.status in live for e in events)
        return self._live[guild.id]


async def check_event(
    guild: discord.Guild, options: AnnouncementOptions, room: EventRoom | None = None
) -> EventSpec | None:
    """The event each occurrence gets (None: none), refused in words: no place, two places,
    a channel that is not a voice or stage channel of the server, permissions the bot lacks
    (asked for only here, when an event is wanted), or a server at Discord's limit of
    events (when events are newly turned on; counted by ``room``, which many checks may
    share so that Discord is asked once)."""
    kept = options.kept_event
    if options.event is False:
        return None
    if options.event is None and kept is None:
        if event_asked(options):
            raise Refusal(said(EVENT_OPTIONS_ALONE))
        return None
    location = options.event_location
    channel_id = options.event_channel_id
    if location is not None and channel_id is not None:
        raise Refusal(said(ONE_PLACE), field="event_location")
    if location is None and channel_id is None and kept is not None:
        location, channel_id = kept.location, kept.channel_id
    minutes = options.event_minutes
    if minutes is None:
        minutes = kept.minutes if kept is not None else DEFAULT_EVENT_MINUTES
    if not 1 <= minutes <= MAX_EVENT_MINUTES:
        raise Refusal(
            t("`event_minutes` is between 1 and {limit} (a week).", limit=MAX_EVENT_MINUTES),
            field="event_minutes",
        )
    if location is not None:
        location = location.strip()
        if not location or len(location) > MAX_LOCATION:
            raise Refusal(
                t("`event_location` is 1 to {limit} characters.", limit=MAX_LOCATION),
                field="event_location",
            )
    if location is None and channel_id is None:
        raise Refusal(said(NEEDS_A_PLACE), field="event_location")
    spec = EventSpec(minutes=minutes, location=location, channel_id=channel_id)
    _check_permissions(guild, spec)
    if kept is None:
        await _check_room(guild, room or EventRoom())
    return spec


def _check_permissions(guild: discord.Guild, spec: EventSpec) -> None:
    """The bot may create (and then edit and cancel) the event where it takes place."""
    me = guild.me
    if spec.channel_id is None:
        if not me.guild_permissions.create_events:
            raise Refusal(
                t("I need the **Create Events** permission in this server to create its "
                  "Discord events (or leave `event` out).")
            )  # fmt: skip
        return
    channel = guild.get_channel(spec.channel_id)
    if not isinstance(channel, (discord.VoiceChannel, discord.StageChannel)):
        raise Refusal(
            t("`event_channel` must be a voice or stage channel of this server."),
            field="event_channel",
        )
    perms = channel.permissions_for(me)
    needed = ["view_channel", "connect", "create_events"]
    if isinstance(channel, discord.StageChannel):
        needed += ["manage_channels", "mute_members", "move_members"]
    missing = [name for name in needed if not getattr(perms, name)]
    if missing:
        names = ", ".join(f"**{said(EVENT_PERMISSIONS[n])}**" for n in missing)
        raise Refusal(
            t("I need {permissions} in {channel} to create its Discord events there.",
              permissions=names, channel=channel.mention), field="event_channel"
        )  # fmt: skip


async def _check_room(guild: discord.Guild, room: EventRoom) -> None:
    """Refused when the server already has Discord's most events (asked of Discord once
    per ``room``)."""
    live = await room.live(guild)
    if live >= EVENT_LIMIT:
        raise Refusal(
            t("This server already has {count} scheduled Discord events, the most Discord "
              "allows ({limit}). Cancel or end some events first, or schedule this without "
              "`event`.", count=live, limit=EVENT_LIMIT)
        )  # fmt: skip
