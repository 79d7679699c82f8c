"""/edit, as a cog of its own: change an announcement, and the message it already posted.

The options left out keep the announcement's current values; the whole result is checked by
the same code as /schedule (:func:`bot.requests.validation.check_request`), so it gets the same
answers, and nothing is written on a refusal. Without any option to change, the form opens
prefilled with the current text.
"""

from __future__ import annotations

import dataclasses
import logging

import discord
from discord import app_commands

from ..announcements import Announcement, check_editable
from ..announcements.diff import Field
from ..i18n import t
from ..limits import MAX_CHOICE_NAME, MAX_CHOICES, MAX_EMBED_TITLE, MAX_MESSAGE, MAX_TEXT_OPTION
from ..models import PostAs
from ..parsing import InputError
from ..render import edit_reply
from ..requests.editing import NO_MENTION, NO_TITLE, EditOptions, check_edit
from ..requests.files import download
from ..requests.places import MAX_ALSO_IN
from ..requests.post_as import MAX_AS_NAME, read_avatar
from ..requests.validation import MAX_TIMES, empty_message
from .autocomplete import announcement_ids
from .door import requester
from .replies import AnswersErrors, reply
from .transformers import AnnouncementId, DestinationChannel, Timezone
from .views import ScheduleModal

log = logging.getLogger(__name__)


class EditCommands(AnswersErrors, name="EditCommands"):
    """/edit (guild only)."""

    @app_commands.command(
        name="edit", description="Change an announcement (and the message it already posted)"
    )
    @app_commands.guild_only()
    @app_commands.describe(
        id="The announcement's number (see /list)",
        message="The new text (leave every option out to edit the text in a form)",
        when="A new time: in 90m, 18:00, tomorrow 09:00, 24/12 18:00, or <t:1735000000>",
        repeat="A new rule (daily, weekly, every 2h, 0 9 * * 1-5…), or none to post once",
        channel="Where to post from now on",
        timezone="The zone for `when`, `until` and the rule",
        mention="A role to ping, everyone, or none",
        until="When a repeating announcement stops (a time like `when`), or none",
        title="A title (the post becomes an embed), or none for plain text",
        image="A new image or file to post with it (replaces the current one)",
        silent="Post with @silent (no push notification)",
        update_posted="Also edit the message already posted (default: yes)",
        event="Create a Discord event for each occurrence (true), or stop (false)",
        event_location="The event's place (an external event)",
        event_minutes="How long the event lasts, in minutes",
        event_channel="The voice or stage channel the event takes place in",
        reminder="Remind the members who ask, by DM, this long before each post (15m), or none",
        times="End a repeating announcement after this many posts (0: no such end)",
        as_name="Post under this name (through a webhook of the channel), or none for the bot",
        as_avatar="The avatar of those posts (a PNG, JPEG, GIF or WebP image)",
        also_in="Also post each time in these channels: #news #events (or none)",
        pin="Pin each post and unpin the previous one (true), or stop (false)",
        replace="Delete the previous post once the new one is up (true), or stop (false)",
        delete_after="Delete each post this long after it went up (24h, 2 days), or none",
    )
    @app_commands.autocomplete(id=announcement_ids("edit"))
    async def edit(
        self,
        interaction: discord.Interaction,
        id: AnnouncementId,
        message: app_commands.Range[str, 1, MAX_MESSAGE] | None = None,
        when: app_commands.Range[str, 1, MAX_TEXT_OPTION] | None = None,
        repeat: app_commands.Range[str, 1, MAX_TEXT_OPTION] | None = None,
        channel: DestinationChannel | None = None,
        timezone: Timezone | None = None,
        mention: app_commands.Range[str, 1, MAX_TEXT_OPTION] | None = None,
        until: app_commands.Range[str, 1, MAX_TEXT_OPTION] | None = None,
        title: app_commands.Range[str, 1, MAX_EMBED_TITLE] | None = None,
        image: discord.Attachment | None = None,
        silent: bool | None = None,
        update_posted: bool = True,
        event: bool | None = None,
        event_location: app_commands.Range[str, 1, MAX_TEXT_OPTION] | None = None,
        event_minutes: app_commands.Range[int, 1, 10080] | None = None,
        event_channel: discord.VoiceChannel | discord.StageChannel | None = None,
        reminder: app_commands.Range[str, 1, MAX_TEXT_OPTION] | None = None,
        times: app_commands.Range[int, 0, MAX_TIMES] | None = None,
        as_name: app_commands.Range[str, 1, MAX_AS_NAME] | None = None,
        as_avatar: discord.Attachment | None = None,
        also_in: app_commands.Range[str, 1, MAX_ALSO_IN] | None = None,
        pin: bool | None = None,
        replace: bool | None = None,
        delete_after: app_commands.Range[str, 1, MAX_TEXT_OPTION] | None = None,
    ) -> None:
        who = await self.manager(interaction)
        current = await self.announcements.get(who.guild.id, id)
        options = EditOptions(
            when=when,
            repeat=repeat,
            channel_id=None if channel is None else channel.id,
            timezone=timezone,
            mention=mention,
            until=until,
            title=title,
            silent=silent,
            image=image,
            event=event,
            event_location=event_location,
            event_minutes=event_minutes,
            event_channel_id=None if event_channel is None else event_channel.id,
            reminder=reminder,
            times=times,
            as_name=as_name,
            as_avatar=as_avatar,
            also_in=also_in,
            pin=pin,
            replace=replace,
            delete_after=delete_after,
        )
        if message is None and options.empty:
            check_editable(current, {Field.MESSAGE})
            # Refused before any typing if anything else is wrong.
            await check_edit(self.announcements, self.clock, who, current, options)

            async def submit(
                submitted: discord.Interaction, text: str, heading: str | None
            ) -> None:
                # The form shows the title too: emptied, the post is plain text again.
                typed = dataclasses.replace(options, title=heading or NO_TITLE)
                await self._apply(submitted, current, typed, text, update_posted)

            modal = ScheduleModal(
                submit,
                title=t("Edit announcement #{id}", id=current.local_id),
                text=current.content,
                heading=current.rich.title,
            )
            await interaction.response.send_modal(modal)
            return
        await self._apply(
            interaction,
            current,
            options,
            current.content if message is None else message,
            update_posted,
        )

    async def _apply(
        self,
        interaction: discord.Interaction,
        current: Announcement,
        options: EditOptions,
        message: str,
        update_posted: bool,
    ) -> None:
        """Apply the edit ``options`` (and ``message``) ask for to ``current``, checked like
        /schedule, and answer ``interaction`` with what changed."""
        if not message.strip():
            raise InputError(empty_message())
        who = requester(interaction)
        guild, member = who.guild, who.member
        (draft, notes, _), when_given = await check_edit(
            self.announcements, self.clock, who, current, options, message
        )
        if options.image is not None:  # else the files are kept
            file = await download(options.image, self.announcements.file_max_bytes)
            draft = dataclasses.replace(draft, images=(file,))
        if isinstance(options.as_avatar, discord.Attachment) and isinstance(draft.post_as, PostAs):
            avatar = await read_avatar(options.as_avatar, self.announcements.file_max_bytes)
            with_avatar = dataclasses.replace(draft.post_as, avatar=avatar)
            draft = dataclasses.replace(draft, post_as=with_avatar)
        outcome = await self.announcements.edit(
            current, draft, when_given=when_given, update_posted=update_posted, actor_id=member.id
        )
        if outcome.changes:
            log.info(
                "announcement %d (#%d) edited in guild %d by %d: %s",
                current.id, current.local_id, guild.id, member.id,
                ", ".join(c.field for c in outcome.changes),
            )  # fmt: skip
        await reply(interaction, edit_reply(outcome, notes))

    @edit.autocomplete("mention")
    async def mention_choices(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        """``none``, ``everyone`` and the server's roles whose name contains the typed text."""
        guild = interaction.guild
        if guild is None:
            return []
        typed = current.strip().lstrip("@").lower()
        named = [(t("none (no ping)"), NO_MENTION), ("@everyone", "everyone")]
        named += [
            (f"@{r.name}"[:MAX_CHOICE_NAME], str(r.id))
            for r in reversed(guild.roles)
            if not r.is_default()
        ]
        return [
            app_commands.Choice(name=name, value=value)
            for name, value in named
            if not typed or typed in name.lower()
        ][:MAX_CHOICES]
