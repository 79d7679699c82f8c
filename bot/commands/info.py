"""/info: everything about one announcement, for the members who may manage it.

Its errors are answered like every command's (:func:`bot.commands.replies.answer_error`).
"""

from __future__ import annotations

import discord
from discord import app_commands

from ..render import info_page
from ..requests.checks import can_read
from .autocomplete import announcement_ids
from .replies import AnswersErrors, reply
from .transformers import AnnouncementId


class InfoCommands(AnswersErrors, name="InfoCommands"):
    """/info (guild only)."""

    @app_commands.command(name="info", description="Everything about one announcement")
    @app_commands.guild_only()
    @app_commands.describe(id="The announcement's number (see /list)")
    @app_commands.autocomplete(id=announcement_ids("info"))
    async def info(self, interaction: discord.Interaction, id: AnnouncementId) -> None:
        # The same rights as /cancel: it shows the text, the history and who made it.
        who = await self.manager(interaction)
        details = await self.announcements.info(who.guild.id, id)
        hidden = not can_read(who.member, who.guild, details.announcement.channel_id)
        await reply(interaction, info_page(details, hidden))
