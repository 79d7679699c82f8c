"""The door: a slash command's interaction turned, once, into the plain request the checks
take (:class:`~bot.requests.request.Requester`: the server, the member, their locale). Past
this point nothing reads the ``discord.Interaction`` but the reply."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import discord
from discord import app_commands

from .. import i18n
from ..requests.checks import Refusal
from ..requests.request import Requester

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")


def speak_to(interaction: discord.Interaction) -> None:
    """Say this interaction's answers in the member's Discord locale (each interaction is
    handled in a task of its own, so the locale holds for the rest of it)."""
    i18n.CURRENT.set(answer_locale(interaction))


def answer_locale(interaction: discord.Interaction) -> str | None:
    """The locale of the answers to ``interaction``: the member's, else the server's."""
    return _locale(interaction)


def requester(interaction: discord.Interaction) -> Requester:
    """Who used the command, and where: the server, the member and the locale their dates
    are read by (the member's Discord locale, else the server's); refused outside a
    server."""
    guild = interaction.guild
    member = interaction.user
    if guild is None or not isinstance(member, discord.Member):
        raise Refusal(i18n.t("Announcements are managed inside a server, not in DMs."))
    return Requester(guild, member, _locale(interaction))


def _locale(interaction: discord.Interaction) -> str | None:
    """The member's Discord locale (``en-US``, ``fr``…), else the server's, else ``None``."""
    for locale in (interaction.locale, interaction.guild_locale):
        if locale is not None:
            return str(locale.value)
    return None


def manage_server_only() -> Callable[[T], T]:
    """A command check: the member has Manage Server (or Administrator). Checks run before
    the options are converted: anyone else is refused before what they typed is looked at."""

    def has_manage_server(interaction: discord.Interaction) -> bool:
        perms = requester(interaction).member.guild_permissions
        if perms.manage_guild or perms.administrator:
            return True
        raise Refusal(i18n.t("Only members with **Manage Server** can change these settings."))

    return app_commands.check(has_manage_server)
