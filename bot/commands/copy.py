"""The message command **Schedule a copy** (right-click a message → Apps): a form asks when,
how often and where (the message's own channel unless another is picked), then the message's
text, embed and files are scheduled as an announcement.

What can't be copied is refused before the form opens (:func:`bot.requests.copying.read_copy`:
a poll, stickers, another app's buttons, a file over ``FILE_MAX_MB`` or past the server's
``GUILD_FILES_MAX_MB``…). When the form is sent, the answer is deferred (the files are
downloaded then, and kept as bytes: Discord's links to them expire), the whole request is
checked like ``/schedule``'s, and the announcement is written, or refused with nothing
written.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

import discord
from discord import app_commands

from .. import i18n
from ..limits import MAX_TEXT_OPTION
from ..render import confirmation
from ..requests.copying import CopiedMessage, read_copy
from ..requests.files import download
from ..requests.request import AnnouncementOptions, AnnouncementRequest
from ..requests.validation import check_request
from .door import requester, speak_to
from .once import take
from .replies import AnswersErrors, answer_error, reply

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from discord.types.components import SelectDefaultValues as SelectDefaultValuePayload

    from scheduler import Clock

    from ..announcements import Announcements

log = logging.getLogger(__name__)

COPY_COMMAND = "Schedule a copy"
"""The message command's name (its translations are in the catalogs, context ``command``)."""

CHANNEL_TYPES = [
    discord.ChannelType.text,
    discord.ChannelType.news,
    discord.ChannelType.news_thread,
    discord.ChannelType.public_thread,
    discord.ChannelType.private_thread,
    discord.ChannelType.forum,
]
"""Where an announcement may post (as /schedule's ``channel`` option offers, but media
channels: Discord's API spec has no such channel type in a form's select yet)."""


class PickedChannel(discord.SelectDefaultValue):
    """The channel a form's select shows picked when it opens, its id sent as the string
    snowflake Discord's API spec asks for (discord.py sends an integer)."""

    def __init__(self, channel_id: int) -> None:
        super().__init__(id=channel_id, type=discord.SelectDefaultValueType.channel)

    def to_dict(self) -> SelectDefaultValuePayload:
        payload = super().to_dict()
        payload["id"] = str(self.id)  # type: ignore[typeddict-item]  # (as the spec types it)
        return payload


class CopyModal(discord.ui.Modal):
    """When, how often and where the copy posts; what was typed goes to ``submit``."""

    when: discord.ui.TextInput[CopyModal]
    repeat: discord.ui.TextInput[CopyModal]
    channel: discord.ui.ChannelSelect[CopyModal]

    def __init__(
        self,
        submit: Callable[[discord.Interaction, str, str, int], Awaitable[None]],
        *,
        channel_id: int,
    ) -> None:
        super().__init__(timeout=900, title=i18n.t("Schedule a copy"))
        self.when = discord.ui.TextInput(
            custom_id="when",
            label=i18n.t("When"),
            placeholder=i18n.t("in 2h, tomorrow 9am, 24/12 18:00"),
            required=False,
            max_length=MAX_TEXT_OPTION,
        )
        self.repeat = discord.ui.TextInput(
            custom_id="repeat",
            label=i18n.t("Repeat (optional)"),
            placeholder=i18n.t("daily, every friday at 8pm (empty: once)"),
            required=False,
            max_length=MAX_TEXT_OPTION,
        )
        self.channel = discord.ui.ChannelSelect(
            custom_id="channel",
            channel_types=CHANNEL_TYPES,
            default_values=[PickedChannel(channel_id)],
            min_values=1,
            max_values=1,
            required=True,
        )
        self.add_item(self.when)
        self.add_item(self.repeat)
        self.add_item(discord.ui.Label(text=i18n.t("Channel"), component=self.channel))
        self.submit = submit
        self.channel_id = channel_id

    async def on_submit(self, interaction: discord.Interaction) -> None:
        if not take(interaction):  # interactive, and once however many sessions received it
            return
        speak_to(interaction)
        picked = self.channel.values[0].id if self.channel.values else self.channel_id
        await self.submit(interaction, self.when.value, self.repeat.value, picked)

    async def on_error(  # type: ignore[override]
        self, interaction: discord.Interaction, error: Exception, /
    ) -> None:
        await answer_error(interaction, error)


class CopyCommands(AnswersErrors, name="CopyCommands"):
    """The message command "Schedule a copy" (:attr:`menu`, added to the tree by the bot)."""

    def __init__(self, announcements: Announcements, clock: Clock | None = None) -> None:
        super().__init__(announcements, clock)
        self.menu = app_commands.ContextMenu(
            name=COPY_COMMAND, callback=self.schedule_copy, type=discord.AppCommandType.message
        )
        self.menu.on_error = self._menu_error

    async def _menu_error(
        self, interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        await answer_error(interaction, error)

    @app_commands.guild_only()
    async def schedule_copy(
        self, interaction: discord.Interaction, message: discord.Message
    ) -> None:
        """Refuse at once what can't be copied; else open the form."""
        who = await self.manager(interaction)
        me = interaction.client.user
        copied = read_copy(
            message,
            bot_id=None if me is None else me.id,
            guild_id=who.guild.id,
            file_max_bytes=self.announcements.file_max_bytes,
        )
        await self.announcements.check_files_fit(who.guild.id, copied.size)

        async def submit(
            submitted: discord.Interaction, when: str, repeat: str, channel_id: int
        ) -> None:
            await self._create(submitted, copied, when, repeat, channel_id)

        await interaction.response.send_modal(CopyModal(submit, channel_id=message.channel.id))

    async def _create(
        self,
        interaction: discord.Interaction,
        copied: CopiedMessage,
        when: str,
        repeat: str,
        channel_id: int,
    ) -> None:
        options = AnnouncementOptions(
            when=when.strip() or None,
            channel_id=channel_id,
            repeat=repeat.strip() or None,
            timezone=None,
            mention_id=copied.mention_id,
            title=copied.title,
            has_files=bool(copied.files) or copied.thumbnail is not None,
            style=copied.style,
        )
        request = AnnouncementRequest(requester(interaction), options, copied.text)
        draft, notes, upcoming = await check_request(self.announcements, self.clock, request)
        if copied.files or copied.thumbnail is not None:
            # Downloading may take longer than Discord waits for an answer.
            await interaction.response.defer(ephemeral=True, thinking=True)
            limit = self.announcements.file_max_bytes
            images = tuple([await download(f, limit) for f in copied.files])
            draft = replace(draft, images=images)
            if copied.thumbnail is not None:
                draft = replace(draft, thumbnail=await download(copied.thumbnail, limit))
        announcement, first = await self.announcements.create(draft)
        log.info(
            "announcement %d (#%d) scheduled in guild %d channel %d by %d, copied from a "
            "message", announcement.id, announcement.local_id, draft.guild_id,
            draft.channel_id, draft.author_id,
        )  # fmt: skip
        notes += copied.notes
        await reply(interaction, confirmation(announcement, first, notes, upcoming))
