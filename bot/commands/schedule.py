"""The slash commands, as a discord.py cog: parse, check, call the domain layer, reply
(always ephemerally).

The cog is built from the domain layer (:class:`Announcements`) and a clock; what it needs of
Discord at run time comes with the interaction, turned at the door into a plain request
(:func:`bot.commands.door.requester`: the guild, the member, their locale) that the checks
take. Every error is answered in one place (:meth:`AnnouncementCommands.cog_app_command_error`,
and the modal and the page buttons route theirs to the same mapping,
:func:`bot.commands.replies.answer_error`).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext.commands import Bot

from .. import i18n
from ..announcements import Announcements, GuildSettings
from ..i18n import t
from ..limits import MAX_CHOICES, MAX_EMBED_TITLE, MAX_MESSAGE, MAX_TAGS_TEXT, MAX_TEXT_OPTION
from ..models import Style, Tidy
from ..parsing import InputError
from ..render import PAGE_SIZE, canceled, confirmation, listing_page
from ..requests.checks import Refusal, can_read, hidden_channels
from ..requests.destinations import tag_choices
from ..requests.files import download
from ..requests.post_as import with_avatar
from ..requests.request import AnnouncementOptions, AnnouncementRequest
from ..requests.templates import started_from
from ..requests.validation import EMPTY_MESSAGE, UNTIL_ONE_OFF, check_request, empty_message
from .autocomplete import announcement_ids
from .door import manage_server_only, requester, speak_to
from .once import take
from .replies import AnswersErrors, answer_error, reply
from .templates import template_names
from .transformers import AnnouncementId, DestinationChannel, Timezone
from .views import COMMANDS_COG, ScheduleModal, page_buttons

if TYPE_CHECKING:
    from ..models import Image, PostAs

__all__ = [
    "EMPTY_MESSAGE",
    "UNTIL_ONE_OFF",
    "AnnouncementCommands",
    "AnnouncementOptions",
    "CommandTree",
    "can_read",
]

log = logging.getLogger(__name__)

LANGUAGES = i18n.LANGUAGES
"""The languages ``/settings language`` offers."""


class AnnouncementCommands(AnswersErrors, name=COMMANDS_COG):
    """/schedule, /list, /cancel and /settings (guild only)."""

    # --- /schedule -----------------------------------------------------------------------------

    @app_commands.command(
        name="schedule", description="Schedule an announcement (omit message to type it in a form)"
    )
    @app_commands.guild_only()
    @app_commands.describe(
        when="When: in 90m, tonight 9pm, tomorrow 9am, 24/12 18:00 (optional if repeat has a time)",
        message="The text to post (leave out to type a long or multi-line message)",
        channel="Where to post (default: this channel)",
        repeat="every friday at 8pm, daily at 9, biweekly, last day of the month, every 2h, cron",
        timezone="Time zone for `when` and `repeat` (default: yours, else the server's, else UTC)",
        mention="A role to ping (pick @everyone to ping everyone)",
        until="With repeat: when the repeats stop (read like `when`)",
        title="Post it as an embed with this title (names a forum post)",
        image="An image or file to post with it (kept, and uploaded with every post)",
        silent="Post with @silent: no push notification",
        publish="In an announcement channel: publish to following servers (default: yes)",
        tags="In a forum: the post's tags, separated by commas",
        template="Start from a saved template (/template list); any option given overrides it",
        event="Also create a Discord event for each occurrence (needs a location or a channel)",
        event_location="With event: where it takes place (an external event)",
        event_minutes="With event: how long it lasts, in minutes (default: 60)",
        event_channel="With event: the voice or stage channel it takes place in",
    )
    @app_commands.autocomplete(template=template_names)
    async def schedule(
        self,
        interaction: discord.Interaction,
        when: app_commands.Range[str, 1, MAX_TEXT_OPTION] | None = None,
        message: app_commands.Range[str, 1, MAX_MESSAGE] | None = None,
        channel: DestinationChannel | None = None,
        repeat: app_commands.Range[str, 1, MAX_TEXT_OPTION] | None = None,
        timezone: Timezone | None = None,
        mention: discord.Role | None = None,
        until: app_commands.Range[str, 1, MAX_TEXT_OPTION] | None = None,
        title: app_commands.Range[str, 1, MAX_EMBED_TITLE] | None = None,
        image: discord.Attachment | None = None,
        silent: bool | None = None,
        publish: bool | None = None,
        tags: app_commands.Range[str, 1, MAX_TAGS_TEXT] | None = None,
        template: app_commands.Range[str, 1, MAX_TEXT_OPTION] | None = None,
        event: bool | None = None,
        event_location: app_commands.Range[str, 1, MAX_TEXT_OPTION] | None = None,
        event_minutes: app_commands.Range[int, 1, 10080] | None = None,
        event_channel: discord.VoiceChannel | discord.StageChannel | None = None,
    ) -> None:
        channel_id = None if channel is None else channel.id
        mention_id = None if mention is None else mention.id
        stored: Image | None = None
        reminder: float | None = None
        post_as: PostAs | None = None
        style, thumbnail = Style(), None
        also_in: tuple[int, ...] = ()
        tidy: Tidy | None = None
        if template is not None:  # its fields fill in the options left out
            who = await self.manager(interaction)
            started = started_from(
                who.guild,
                await self.announcements.template(who.guild.id, template),
                message=message,
                title=title,
                silent=silent,
                channel_id=channel_id,
                mention_id=mention_id,
                has_image=image is not None,
            )
            message, title, silent = started.message, started.title, started.silent
            channel_id, mention_id, stored = started.channel_id, started.mention_id, started.image
            reminder, post_as = started.reminder, started.post_as
            style, thumbnail = started.style, started.thumbnail
            also_in = started.also_in
            tidy = started.tidy if started.tidy.on else None
        channel_id = channel_id or (interaction.channel or discord.Object(0)).id
        options = AnnouncementOptions(
            when=when,
            channel_id=channel_id,
            repeat=repeat,
            timezone=timezone,
            mention_id=mention_id,
            until=until,
            title=title,
            silent=bool(silent),
            publish=publish,
            tags=tags,
            has_files=image is not None or stored is not None,
            event=event,
            event_location=event_location,
            event_minutes=event_minutes,
            event_channel_id=None if event_channel is None else event_channel.id,
            kept_reminder=reminder,
            as_name=None if post_as is None else post_as.name,
            as_avatar=post_as is not None and post_as.avatar is not None,
            style=style,
            # (the template's places, but the channel it posts in now: one post there)
            kept_places=tuple(c for c in also_in if c != channel_id),
            kept_tidy=tidy,
        )
        if message is None:
            # Refused before any typing if anything else is wrong.
            request = AnnouncementRequest(requester(interaction), options)
            await check_request(self.announcements, self.clock, request)

            async def submit(
                submitted: discord.Interaction, text: str, heading: str | None
            ) -> None:
                typed = options if heading is None else replace(options, title=heading)
                asked = AnnouncementRequest(requester(submitted), typed, text)
                await self._create(submitted, asked, image, stored, post_as, thumbnail)

            await interaction.response.send_modal(ScheduleModal(submit, heading=title))
            return
        asked = AnnouncementRequest(requester(interaction), options, message)
        await self._create(interaction, asked, image, stored, post_as, thumbnail)

    @schedule.autocomplete("tags")
    async def tag_choices(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        """The tags of the forum picked in ``channel``, matching the name being typed."""
        return forum_tag_choices(interaction, current)

    async def _create(
        self,
        interaction: discord.Interaction,
        request: AnnouncementRequest,
        image: discord.Attachment | None,
        stored: Image | None = None,
        post_as: PostAs | None = None,
        thumbnail: Image | None = None,
    ) -> None:
        """Schedule what ``request`` asks for (its text typed), with ``image`` downloaded
        (or a template's ``stored`` file, the avatar of who it posts as and its style's
        ``thumbnail``), and answer ``interaction`` with the confirmation."""
        if not request.message.strip():
            raise InputError(empty_message())
        draft, notes, upcoming = await check_request(self.announcements, self.clock, request)
        if image is not None:
            file = await download(image, self.announcements.file_max_bytes)
            draft = replace(draft, images=(file,))
        elif stored is not None:
            draft = replace(draft, images=(stored,))
        if post_as is not None:
            draft = with_avatar(draft, post_as.avatar)
        if thumbnail is not None:
            draft = replace(draft, thumbnail=thumbnail)
        announcement, first = await self.announcements.create(draft)
        log.info(
            "announcement %d (#%d) scheduled in guild %d channel %d by %d",
            announcement.id, announcement.local_id, draft.guild_id, draft.channel_id,
            draft.author_id,
        )  # fmt: skip
        await reply(interaction, confirmation(announcement, first, notes, upcoming))

    # --- /list ---------------------------------------------------------------------------------

    @app_commands.command(name="list", description="List this server's announcements")
    @app_commands.guild_only()
    async def list_announcements(self, interaction: discord.Interaction) -> None:
        text, view = await self.list_page(interaction, 0)
        if view is None:
            await reply(interaction, text)
        else:
            await reply(interaction, text, view=view)

    async def list_page(
        self, interaction: discord.Interaction, page: int
    ) -> tuple[str, discord.ui.View | None]:
        """Page ``page`` (from 0; past the end, the last page) of this server's announcements,
        and its page buttons (none if everything fits on one page)."""
        who = requester(interaction)
        found = await self.announcements.listing_page(who.guild.id, page, PAGE_SIZE)
        items = found.listing.items
        hidden = hidden_channels(who.member, who.guild, (a.channel_id for a in items))
        text = listing_page(found.listing, found.page, who.guild.id, hidden)
        return text, page_buttons(found.page, found.pages)

    # --- /cancel -------------------------------------------------------------------------------

    @app_commands.command(name="cancel", description="Cancel a scheduled announcement")
    @app_commands.guild_only()
    @app_commands.describe(id="The announcement's number (see /list)")
    @app_commands.autocomplete(id=announcement_ids("cancel"))
    async def cancel(self, interaction: discord.Interaction, id: AnnouncementId) -> None:
        who = await self.reader(interaction, id)
        before = await self.announcements.cancel(who.guild.id, id, actor_id=who.member.id)
        await reply(interaction, canceled(before))

    # --- /settings -----------------------------------------------------------------------------

    @app_commands.command(
        name="settings", description="Server settings for announcements (Manage Server)"
    )
    @app_commands.guild_only()
    @app_commands.default_permissions(manage_guild=True)
    @manage_server_only()
    @app_commands.describe(
        timezone="Default time zone for this server",
        manager_role="A role that may schedule and cancel announcements",
        log_channel="Where to report announcements that could not be posted",
        clear="Remove one setting",
        language="The language of what the bot posts for everyone (default: the server's)",
    )
    @app_commands.choices(
        clear=[
            app_commands.Choice(name="default time zone", value="timezone"),
            app_commands.Choice(name="manager role", value="manager_role"),
            app_commands.Choice(name="log channel", value="log_channel"),
            app_commands.Choice(name="language", value="language"),
        ],
        language=[app_commands.Choice(name=name, value=key) for key, name in LANGUAGES.items()],
    )
    async def settings(
        self,
        interaction: discord.Interaction,
        timezone: Timezone | None = None,
        manager_role: discord.Role | None = None,
        log_channel: discord.TextChannel | None = None,
        clear: app_commands.Choice[str] | None = None,
        language: app_commands.Choice[str] | None = None,
    ) -> None:
        guild = requester(interaction).guild
        current = await self.announcements.settings(guild.id)
        zone_name = current.timezone if timezone is None else timezone.key
        role_id = current.manager_role_id
        log_id = current.log_channel_id
        chosen = current.language if language is None else language.value
        if manager_role is not None:
            if manager_role.is_default():
                raise Refusal(t("The manager role can't be @everyone."))
            role_id = manager_role.id
        if log_channel is not None:
            perms = log_channel.permissions_for(guild.me)
            if not (perms.view_channel and perms.send_messages):
                raise Refusal(
                    t("I can't post in {channel}; give me View Channel and Send Messages "
                      "there first.", channel=log_channel.mention)
                )  # fmt: skip
            log_id = log_channel.id
        cleared = None if clear is None else clear.value
        if cleared == "timezone":
            zone_name = None
        elif cleared == "manager_role":
            role_id = None
        elif cleared == "log_channel":
            log_id = None
        elif cleared == "language":
            chosen = None
        new = GuildSettings(guild.id, zone_name, role_id, log_id, chosen)
        changed = new != current
        if changed:
            await self.announcements.save_settings(new)
        await reply(interaction, settings_summary(new, changed))


def forum_tag_choices(
    interaction: discord.Interaction, current: str
) -> list[app_commands.Choice[str]]:
    """Autocomplete for ``tags``: the tags of the forum picked in the ``channel`` option."""
    guild = interaction.guild
    picked = getattr(interaction.namespace, "channel", None)
    if guild is None or picked is None:
        return []
    forum = guild.get_channel(picked.id)
    return [
        app_commands.Choice(name=name, value=value) for name, value in tag_choices(forum, current)
    ][:MAX_CHOICES]


def settings_summary(settings: GuildSettings, changed: bool) -> str:
    manager = (
        f"<@&{settings.manager_role_id}>"
        if settings.manager_role_id
        else t("none (Manage Server only)")
    )
    log_channel = f"<#{settings.log_channel_id}>" if settings.log_channel_id else t("none")
    language = (
        t("the server's own")
        if settings.language is None
        else LANGUAGES.get(settings.language, settings.language)
    )
    return "\n".join(
        [
            t("⚙️ **Settings** updated.") if changed else t("⚙️ **Settings**:"),
            t("**Default time zone:** {zone}", zone=settings.timezone or t("UTC (not set)")),
            t("**Manager role:** {role}", role=manager),
            t("**Log channel for failures:** {channel}", channel=log_channel),
            t("**Language of posts for everyone:** {language}", language=language),
        ]
    )


class CommandTree(app_commands.CommandTree[Bot]):
    """The command tree; an error that reaches no command (one that no longer exists, used
    before the last sync reached the member's client) is answered like a command's."""

    async def interaction_check(self, interaction: discord.Interaction[Bot], /) -> bool:
        """Every command and autocomplete runs in a task of its own, started for it: all it
        does from here on is interactive work (someone is waiting on the answer), and it
        takes effect once however many sessions received it (:func:`bot.commands.once.take`).
        Every command in a server counts towards the member's commands per minute (in the
        database, so the count holds across instances); past the limit, or if the count can't
        be written, it is answered privately here and not run."""
        if not take(interaction):
            return False
        speak_to(interaction)
        if interaction.type is discord.InteractionType.autocomplete:
            return True
        announcements = getattr(interaction.client, "announcements", None)
        if interaction.guild_id is None or not isinstance(announcements, Announcements):
            return True
        try:
            await announcements.count_command(interaction.guild_id, interaction.user.id)
        except Exception as exc:  # too many commands, or the store: answered, not run
            await answer_error(interaction, exc)
            return False
        return True

    async def on_error(
        self, interaction: discord.Interaction[Bot], error: app_commands.AppCommandError, /
    ) -> None:
        if interaction.command is None:
            await answer_error(interaction, error)
        else:  # the command's cog has answered it
            await super().on_error(interaction, error)
