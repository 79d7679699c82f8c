"""/template save, list and delete: a server's templates, for the members who may schedule.

Like every command, each takes effect once however many sessions receive it
(:mod:`bot.commands.once`: the tree's ``interaction_check``), and its errors are answered in
one place (:func:`bot.commands.replies.answer_error`).
"""

from __future__ import annotations

import discord
from discord import app_commands

from .. import i18n
from ..announcements import MAX_TEMPLATE_NAME
from ..limits import MAX_CHOICES, MAX_TEXT_OPTION
from ..render import template_list, template_saved
from ..requests.templates import template_from
from .autocomplete import ServesAnnouncements
from .door import requester
from .replies import AnswersErrors, reply
from .transformers import AnnouncementId


async def template_names(
    interaction: discord.Interaction, current: str
) -> list[app_commands.Choice[str]]:
    """The server's template names that contain what is being typed (names only: no file
    is read for a keystroke)."""
    guild, client = interaction.guild, interaction.client
    if guild is None or not isinstance(client, ServesAnnouncements):
        return []
    typed = current.casefold()
    names = await client.announcements.template_names(guild.id)
    return [app_commands.Choice(name=n, value=n) for n in names if typed in n.casefold()][
        :MAX_CHOICES
    ]


class TemplateCommands(AnswersErrors, name="TemplateCommands"):
    """/template (guild only)."""

    template = app_commands.Group(
        name="template",
        description="Saved templates to start announcements from",
        guild_only=True,
        allowed_contexts=app_commands.AppCommandContext(guild=True),
    )

    @template.command(name="save", description="Save an announcement as a template")
    @app_commands.describe(
        name="The template's name (used as /schedule template:name)",
        source="The announcement to copy (its number, see /list)",
    )
    @app_commands.rename(source="from")
    async def save(
        self,
        interaction: discord.Interaction,
        name: app_commands.Range[str, 1, MAX_TEMPLATE_NAME],
        source: AnnouncementId,
    ) -> None:
        made = await template_from(self.announcements, requester(interaction), source, name)
        kept = await self.announcements.save_template(made)
        await reply(interaction, template_saved(kept, source))

    @template.command(name="list", description="This server's templates")
    async def list_templates(self, interaction: discord.Interaction) -> None:
        who = await self.manager(interaction)
        kept = await self.announcements.templates(who.guild.id)
        _, limits = await self.announcements.guild_limits(who.guild.id)
        await reply(interaction, template_list(kept, limits.max_templates))

    @template.command(name="delete", description="Delete a template")
    @app_commands.describe(name="The template to delete")
    @app_commands.autocomplete(name=template_names)
    async def delete(
        self, interaction: discord.Interaction, name: app_commands.Range[str, 1, MAX_TEXT_OPTION]
    ) -> None:
        who = await self.manager(interaction)
        await self.announcements.delete_template(who.guild.id, name)
        await reply(
            interaction, i18n.t("🗑️ Deleted the template `{name}`.", name=" ".join(name.split()))
        )
