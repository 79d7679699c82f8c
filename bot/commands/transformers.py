"""Option types that parse themselves: a `timezone` option arrives as a zone.

A `when` option is parsed in the handler, not here: reading it needs the zone the member
chose or the server's default (a database read through the domain layer) and the cog's
clock, and must come after the permission refusals; a transformer sees neither the cog nor
the other options' converted values.
"""

from __future__ import annotations

from typing import Any, cast
from zoneinfo import ZoneInfo

import discord
from discord import app_commands

from ..limits import MAX_ANNOUNCEMENT_ID, MAX_CHOICES, MAX_ZONE_NAME
from ..parsing import resolve_timezone, timezone_choices

AnnouncementId = app_commands.Range[int, 1, MAX_ANNOUNCEMENT_ID]
"""An announcement's number (as /list shows it), the ``id`` option of the commands that act on
one announcement."""


class TimezoneTransformer(app_commands.Transformer):
    """An IANA zone name (any case, spaces for underscores), with autocomplete. An unknown
    name is refused with the parser's answer, which suggests the closest names."""

    @property
    def type(self) -> discord.AppCommandOptionType:
        return discord.AppCommandOptionType.string

    @property
    def min_value(self) -> int:
        return 1

    @property
    def max_value(self) -> int:
        return MAX_ZONE_NAME

    async def transform(self, interaction: discord.Interaction, value: str, /) -> ZoneInfo:
        return resolve_timezone(value)

    async def autocomplete(
        self, interaction: discord.Interaction, value: int | float | str, /
    ) -> list[app_commands.Choice[int | float | str]]:
        typed = str(value)
        return [app_commands.Choice(name=z, value=z) for z in timezone_choices(typed, MAX_CHOICES)]


Timezone = app_commands.Transform[ZoneInfo, TimezoneTransformer]


class DestinationTransformer(app_commands.Transformer):
    """A channel an announcement may post in: a text or announcement channel, a thread (an
    archived one too, which the client doesn't keep in its cache) or a forum. Arrives as
    what the interaction carries (its id is looked up again, with a fetch if need be, by the
    shared check)."""

    @property
    def type(self) -> discord.AppCommandOptionType:
        return discord.AppCommandOptionType.channel

    @property
    def channel_types(self) -> list[discord.ChannelType]:
        t = discord.ChannelType
        return [
            t.text,
            t.news,
            t.news_thread,
            t.public_thread,
            t.private_thread,
            t.forum,
            t.media,
        ]

    async def transform(
        self, interaction: discord.Interaction, value: Any, /
    ) -> app_commands.AppCommandChannel | app_commands.AppCommandThread:
        # discord.py resolves a channel option to one of these and hands it over untyped.
        return cast("app_commands.AppCommandChannel | app_commands.AppCommandThread", value)


DestinationChannel = app_commands.Transform[
    app_commands.AppCommandChannel | app_commands.AppCommandThread, DestinationTransformer
]
"""The ``channel`` option of /schedule and /edit."""
