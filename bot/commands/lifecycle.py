"""/pause, /resume and /timezone, as a discord.py cog beside the announcement commands.

Each command checks who may use it, calls one domain method (one transaction with its
history row) and replies ephemerally; a change that can't be made is answered by
:func:`bot.commands.replies.answer_error` with why and what to do instead, and changes nothing.
"""

from __future__ import annotations

import logging

import discord
from discord import app_commands

from ..i18n import t
from ..render import paused, resumed
from .autocomplete import announcement_ids
from .door import requester
from .replies import AnswersErrors, reply
from .transformers import AnnouncementId, Timezone

log = logging.getLogger(__name__)

LIFECYCLE_COG = "Lifecycle"


class LifecycleCommands(AnswersErrors, name=LIFECYCLE_COG):
    """/pause, /resume (managers) and /timezone (any member); guild only (/skip:
    :mod:`bot.commands.skips`)."""

    async def _manager(self, interaction: discord.Interaction, local_id: int) -> tuple[int, int]:
        """The guild's id and the member's, once the member is found to be a manager who can
        read announcement ``local_id``."""
        who = await self.reader(interaction, local_id)
        return who.guild.id, who.member.id

    @app_commands.command(
        name="pause", description="Pause an announcement: nothing posts until resumed"
    )
    @app_commands.guild_only()
    @app_commands.describe(id="The announcement's number (see /list)")
    @app_commands.autocomplete(id=announcement_ids("pause"))
    async def pause(self, interaction: discord.Interaction, id: AnnouncementId) -> None:
        guild_id, member_id = await self._manager(interaction, id)
        before = await self.announcements.pause(guild_id, id, member_id)
        log.info("announcement %d (#%d) paused by %d", before.id, id, member_id)
        await reply(interaction, paused(before))

    @app_commands.command(
        name="resume", description="Resume a paused announcement from its next future time"
    )
    @app_commands.guild_only()
    @app_commands.describe(id="The announcement's number (see /list)")
    @app_commands.autocomplete(id=announcement_ids("resume"))
    async def resume(self, interaction: discord.Interaction, id: AnnouncementId) -> None:
        guild_id, member_id = await self._manager(interaction, id)
        before, nxt = await self.announcements.resume(guild_id, id, member_id)
        log.info("announcement %d (#%d) resumed by %d", before.id, id, member_id)
        await reply(interaction, resumed(before, nxt))

    @app_commands.command(
        name="timezone", description="Your own time zone for the times you type (any member)"
    )
    @app_commands.guild_only()
    @app_commands.describe(zone="An IANA zone, like Europe/Berlin (leave out to see yours)")
    async def timezone(
        self, interaction: discord.Interaction, zone: Timezone | None = None
    ) -> None:
        who = requester(interaction)
        if zone is not None:
            await self.announcements.set_member_timezone(who.member.id, zone.key)
            await reply(
                interaction,
                t("🌐 Your time zone is now **{zone}**: the times you type in `/schedule` and "
                  "`/edit` are read in it, unless you pick a `timezone` there.", zone=zone.key),
            )  # fmt: skip
            return
        own = await self.announcements.member_timezone(who.member.id)
        server = (await self.announcements.settings(who.guild.id)).timezone
        if own is not None:
            text = t("🌐 Your time zone is **{zone}**.", zone=own)
        elif server is not None:
            text = t(
                "🌐 You haven't set a time zone; times you type are read in the server's, "
                "**{zone}**.", zone=server,
            )  # fmt: skip
        else:
            text = t("🌐 You haven't set a time zone; times you type are read in **UTC**.")
        await reply(interaction, text + " " + t("Set yours with `/timezone zone:…`."))
