"""How the bot answers a member: always ephemerally, and every error mapped to an answer here.

Every refusal or bad input is answered with what was wrong; nothing is written. Unexpected
errors are logged with an id and answered with that id, never a traceback.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands
from discord.ext.commands import Cog

from scheduler.clock import Clock, SystemClock

from .. import i18n
from ..render import expected_answer, unexpected_answer
from ..requests.checks import require_manager, require_readable
from .door import answer_locale, requester
from .once import lost

if TYPE_CHECKING:
    from ..announcements import Announcements
    from ..requests.request import Requester

log = logging.getLogger(__name__)


async def reply(interaction: discord.Interaction, text: str, **kwargs: Any) -> None:
    """Answer ephemerally, whether or not the interaction was answered already."""
    kwargs.setdefault("allowed_mentions", discord.AllowedMentions.none())
    if interaction.response.is_done():
        await interaction.followup.send(text, ephemeral=True, **kwargs)
    else:
        await interaction.response.send_message(text, ephemeral=True, **kwargs)


def error_answer(interaction: discord.Interaction, error: BaseException) -> str:
    """What to tell the member about ``error``; an unexpected one is logged with an id."""
    # A handler's exception arrives wrapped (CommandInvokeError); a transformer's parser
    # error arrives as the cause of a TransformerError.
    cause = getattr(error, "original", error)
    if isinstance(cause, app_commands.TransformerError) and cause.__cause__ is not None:
        cause = cause.__cause__
    known = expected_answer(cause)
    if known is not None:
        return known
    if isinstance(cause, app_commands.TransformerError):
        # The option names a channel or role this bot doesn't have in this server (just
        # created, just deleted, or another server's): the input's fault, not ours.
        if cause.type is discord.AppCommandOptionType.role:
            return i18n.t(
                "I can't find that role in this server. Pick one from this server's list."
            )
        return i18n.t("I can't find that channel in this server. Pick one from this server's list.")
    name = interaction.command.name if interaction.command else "?"
    return unexpected_answer(cause, f"command {name}")


async def answer_error(interaction: discord.Interaction, error: BaseException) -> None:
    """Answer ``error`` (from a command, a modal or a button) the one way it is answered;
    nothing when another session handled the interaction (see :mod:`bot.commands.once`)."""
    if lost(interaction, error):
        return
    with i18n.speaking(answer_locale(interaction)):
        text = error_answer(interaction, error)
    try:
        await reply(interaction, text)
    except discord.HTTPException:
        log.warning("could not answer interaction %s", interaction.id)


class AnswersErrors(Cog):
    """The base of the bot's command cogs: built from the domain layer (and a clock), never
    from the client; every error a command of the cog raises is answered here, in one place."""

    def __init__(self, announcements: Announcements, clock: Clock | None = None) -> None:
        self.announcements = announcements
        self.clock: Clock = clock if clock is not None else SystemClock()

    async def reader(self, interaction: discord.Interaction, local_id: int) -> Requester:
        """The member, refused unless they are a manager and can read announcement
        ``local_id``'s channel (:func:`~bot.requests.checks.require_readable`)."""
        who = await self.manager(interaction)
        a = await self.announcements.get(who.guild.id, local_id)
        require_readable(who.member, who.guild, a)
        return who

    async def manager(self, interaction: discord.Interaction) -> Requester:
        """Who asks, once found to be a manager of the guild (else a :class:`Refusal`)."""
        who = requester(interaction)
        require_manager(who.member, await self.announcements.settings(who.guild.id))
        return who

    async def cog_app_command_error(
        self, interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        await answer_error(interaction, error)
