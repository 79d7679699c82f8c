"""Reminders for members: the **Remind me** button of each post of an announcement whose
reminders are on, its **Stop reminding me** answer, and ``/remindme id: before: stop:``.

Any member who can see the announcement's channel may ask (no manager right needed). Every
answer is ephemeral, in the member's language; a press or a command takes effect once
however many gateway sessions receive it (:func:`bot.commands.once.take`, and the command
tree's check for ``/remindme``).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands

from .. import i18n
from ..announcements import Announcement, AnnouncementState, NotFound
from ..announcements.reminders import REMIND_BUTTON, STOP_BUTTON
from ..limits import MAX_CHOICES, MAX_TEXT_OPTION
from ..render import (
    choice_label,
    reminder_already,
    reminder_stopped,
    reminders_on,
)
from ..requests.checks import Refusal, can_read
from ..requests.reminders import parse_lead
from .door import requester, speak_to
from .once import take
from .replies import AnswersErrors, answer_error, reply
from .transformers import AnnouncementId

if TYPE_CHECKING:
    from ..requests.request import Requester

log = logging.getLogger(__name__)

REMINDERS_COG = "ReminderCommands"
"""The cog's name (the buttons find it by this name)."""


class ReminderCommands(AnswersErrors, name=REMINDERS_COG):
    """/remindme (any member; guild only), and what the buttons do."""

    @app_commands.command(
        name="remindme", description="Be reminded by DM before each post of an announcement"
    )
    @app_commands.guild_only()
    @app_commands.describe(
        id="The announcement's number (its posts' Remind me button does the same)",
        before="How long before each post (15m, 1h, 1 day); default: the announcement's",
        stop="true: stop reminding me of it",
    )
    async def remindme(
        self,
        interaction: discord.Interaction,
        id: AnnouncementId,
        before: app_commands.Range[str, 1, MAX_TEXT_OPTION] | None = None,
        stop: bool = False,
    ) -> None:
        who = requester(interaction)
        a = await self._readable(who, id)
        if stop:
            was = await self.announcements.unsubscribe(a, who.member.id)
            log.info("member %d stopped the reminders of announcement %d", who.member.id, a.id)
            await reply(interaction, reminder_stopped(a, was))
            return
        lead = None if before is None else parse_lead(before, who.locale, off=False)
        subscribed = await self.announcements.subscribe(a, who.member.id, lead, who.locale)
        log.info("member %d asked for the reminders of announcement %d", who.member.id, a.id)
        await reply(interaction, reminders_on(subscribed))

    @remindme.autocomplete("id")
    async def remindme_ids(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[int]]:
        """The server's scheduled and paused announcements with reminders on whose channel
        the member can see."""
        guild, member = interaction.guild, interaction.user
        if guild is None or not isinstance(member, discord.Member):
            return []
        typed = current.strip().lstrip("#").lower()
        number = typed if typed.isdigit() else ""
        found = await self.announcements.choices(
            guild.id, (AnnouncementState.SCHEDULED, AnnouncementState.PAUSED), id_prefix=number
        )
        leads = await self.announcements.reminder_leads([a.id for a in found.items])
        out: list[app_commands.Choice[int]] = []
        for a in found.items:
            if a.id not in leads or not can_read(member, guild, a.channel_id):
                continue
            label = choice_label(a, found.next_fires.get(a.id))
            if typed and not number and typed not in label.lower():
                continue
            out.append(app_commands.Choice(name=label, value=a.local_id))
            if len(out) == MAX_CHOICES:
                break
        return out

    async def _readable(self, who: Requester, local_id: int) -> Announcement:
        """The server's announcement ``local_id`` if the member can see its channel and it
        still posts (else refused)."""
        a = await self.announcements.get(who.guild.id, local_id)
        return self._check(who, a)

    def _check(self, who: Requester, a: Announcement) -> Announcement:
        if not can_read(who.member, who.guild, a.channel_id):
            raise Refusal(
                i18n.t("Announcement #{id} is for a channel you can't see.", id=a.local_id)
            )
        if not a.live:
            raise Refusal(
                i18n.t("Announcement #{id} has nothing more to post, so there is nothing to "
                       "remind you of.", id=a.local_id)
            )  # fmt: skip
        return a

    async def pressed(self, interaction: discord.Interaction, announcement_id: int) -> None:
        """**Remind me** pressed: the member is reminded of every later occurrence, or, if
        they are already, offered to stop."""
        who = requester(interaction)
        a = await self.announcements.by_id(announcement_id)
        if a is None or a.guild_id != who.guild.id:
            raise NotFound(0 if a is None else a.local_id)
        self._check(who, a)
        found = await self.announcements.subscription(a.id, who.member.id)
        if found is not None:
            lead = found.before or await self.announcements.reminder_lead(a.id)
            view = discord.ui.View(timeout=None)
            view.add_item(StopButton(a.id))
            await reply(interaction, reminder_already(a, lead), view=view)
            return
        subscribed = await self.announcements.subscribe(a, who.member.id, None, who.locale)
        log.info("member %d pressed Remind me on announcement %d", who.member.id, a.id)
        await reply(interaction, reminders_on(subscribed))

    async def stopped(self, interaction: discord.Interaction, announcement_id: int) -> None:
        """**Stop reminding me** pressed (under the answer to a second press)."""
        who = requester(interaction)
        a = await self.announcements.by_id(announcement_id)
        if a is None or a.guild_id != who.guild.id:
            raise NotFound(0 if a is None else a.local_id)
        was = await self.announcements.unsubscribe(a, who.member.id)
        log.info("member %d stopped the reminders of announcement %d", who.member.id, a.id)
        await interaction.response.edit_message(
            content=reminder_stopped(a, was), view=None,
            allowed_mentions=discord.AllowedMentions.none(),
        )  # fmt: skip


def _cog(interaction: discord.Interaction) -> ReminderCommands:
    client: Any = interaction.client
    cog = client.get_cog(REMINDERS_COG) if hasattr(client, "get_cog") else None
    if not isinstance(cog, ReminderCommands):
        raise LookupError(f"no {REMINDERS_COG} cog is loaded to answer a Remind me button")
    return cog


class RemindButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=REMIND_BUTTON.replace("{}", r"(?P<id>\d+)"),
):
    """The **Remind me** button of a post; its custom id names the announcement, so it works
    from any instance, across restarts, on every post the announcement made."""

    def __init__(self, announcement_id: int, label: str = "") -> None:
        super().__init__(
            discord.ui.Button(
                label=label or None,
                style=discord.ButtonStyle.secondary,
                custom_id=REMIND_BUTTON.format(announcement_id),
            )
        )
        self.announcement_id = announcement_id

    @classmethod
    async def from_custom_id(  # type: ignore[override]
        cls, interaction: discord.Interaction, item: discord.ui.Button[Any], match: re.Match[str], /
    ) -> RemindButton:
        return cls(int(match["id"]), item.label or "")

    async def callback(self, interaction: discord.Interaction) -> None:
        if not take(interaction):  # interactive, and once however many sessions received it
            return
        speak_to(interaction)
        try:
            await _cog(interaction).pressed(interaction, self.announcement_id)
        except Exception as exc:  # answered in words (or with an error id)
            await answer_error(interaction, exc)


class StopButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=STOP_BUTTON.replace("{}", r"(?P<id>\d+)"),
):
    """**Stop reminding me**, under the answer to a second press of Remind me."""

    def __init__(self, announcement_id: int) -> None:
        super().__init__(
            discord.ui.Button(
                label=i18n.t("Stop reminding me"),
                style=discord.ButtonStyle.danger,
                custom_id=STOP_BUTTON.format(announcement_id),
            )
        )
        self.announcement_id = announcement_id

    @classmethod
    async def from_custom_id(  # type: ignore[override]
        cls, interaction: discord.Interaction, item: discord.ui.Button[Any], match: re.Match[str], /
    ) -> StopButton:
        return cls(int(match["id"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        if not take(interaction):
            return
        speak_to(interaction)
        try:
            await _cog(interaction).stopped(interaction, self.announcement_id)
        except Exception as exc:
            await answer_error(interaction, exc)
