"""The slash commands: parse, check, call the domain layer, reply (always ephemerally).

Every refusal or bad input is answered with what was wrong and an example; nothing is
written. Unexpected errors are logged with an id and answered with that id, never a
traceback.
"""

from __future__ import annotations

import logging
import re
import uuid
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands

from scheduler.stores.sqlite import refused_write

from .announcements import Draft, GuildSettings, NotFound
from .checks import Refusal, check_channel, plan_mentions, require_manager
from .limits import MAX_MESSAGE
from .models import AnnouncementState
from .parsing import InputError, parse_repeat, parse_when, resolve_timezone, timezone_choices
from .render import PAGE_SIZE, choice_label, confirmation, listing_page

if TYPE_CHECKING:
    from .app import CrierBot

log = logging.getLogger("crier.commands")

EMPTY_MESSAGE = "The message is empty. Type the text to announce, e.g. `Standup in 5 minutes!`"


async def reply(interaction: discord.Interaction, text: str, **kwargs: Any) -> None:
    """Answer ephemerally, whether or not the interaction was answered already."""
    kwargs.setdefault("allowed_mentions", discord.AllowedMentions.none())
    if interaction.response.is_done():
        await interaction.followup.send(text, ephemeral=True, **kwargs)
    else:
        await interaction.response.send_message(text, ephemeral=True, **kwargs)


def _member(interaction: discord.Interaction) -> tuple[discord.Guild, discord.Member]:
    guild = interaction.guild
    member = interaction.user
    if guild is None or not isinstance(member, discord.Member):
        raise Refusal("Announcements are managed inside a server, not in DMs.")
    return guild, member


class ScheduleModal(discord.ui.Modal, title="New announcement"):
    """Asked when /schedule is used without `message`, for long or multi-line text."""

    body: discord.ui.TextInput[ScheduleModal] = discord.ui.TextInput(
        label="Message",
        style=discord.TextStyle.paragraph,
        placeholder="The announcement, exactly as it should be posted",
        max_length=MAX_MESSAGE,
    )

    def __init__(self, bot: CrierBot, options: dict[str, Any]) -> None:
        super().__init__(timeout=900)
        self.bot = bot
        self.options = options

    async def on_submit(self, interaction: discord.Interaction) -> None:
        await self.bot.commands.create(interaction, message=self.body.value, **self.options)

    async def on_error(self, interaction: discord.Interaction, error: Exception) -> None:  # type: ignore[override]
        await self.bot.commands.fail(interaction, error)


class PageButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"crier:list:(?P<page>\d+)"
):
    """A /list page button; the custom id carries the page, so it works across restarts."""

    def __init__(self, page: int, label: str, disabled: bool = False) -> None:
        super().__init__(
            discord.ui.Button(
                label=label,
                style=discord.ButtonStyle.secondary,
                custom_id=f"crier:list:{page}",
                disabled=disabled,
            )
        )
        self.page = page

    @classmethod
    async def from_custom_id(  # type: ignore[override]
        cls, interaction: discord.Interaction, item: discord.ui.Button[Any], match: re.Match[str], /
    ) -> PageButton:
        return cls(int(match["page"]), item.label or "")

    async def callback(self, interaction: discord.Interaction) -> None:
        bot: CrierBot = interaction.client  # type: ignore[assignment]
        try:
            text, view = await bot.commands.list_page(interaction, self.page)
        except Exception as exc:  # answered with an error id
            await bot.commands.fail(interaction, exc)
            return
        await interaction.response.edit_message(
            content=text, view=view, allowed_mentions=discord.AllowedMentions.none()
        )


class Commands:
    def __init__(self, bot: CrierBot) -> None:
        self.bot = bot

    # --- errors ------------------------------------------------------------------------------

    async def fail(self, interaction: discord.Interaction, error: BaseException) -> None:
        original = getattr(error, "original", error)
        if isinstance(original, Refusal | InputError):
            text = str(original)
        elif isinstance(original, NotFound):
            text = f"{original}. Use `/list` to see this server's announcements."
        elif refused_write(original):
            # The store has logged why, once; the member can only wait for the operator.
            text = (
                "I can't save anything right now: my database can't be written (its disk is "
                "full or failing). Nothing was saved; try again later."
            )
        elif isinstance(original, app_commands.TransformerError):
            # The option names a channel or role this bot doesn't have in this server (just
            # created, just deleted, or another server's): the input's fault, not ours.
            what = "role" if original.type is discord.AppCommandOptionType.role else "channel"
            text = f"I can't find that {what} in this server. Pick one from this server's list."
        else:
            ref = uuid.uuid4().hex[:8]
            log.error(
                "command %s failed (error id %s)",
                interaction.command.name if interaction.command else "?",
                ref,
                exc_info=original,
            )
            text = f"Something went wrong on my side (error id `{ref}`). Nothing was saved."
        try:
            await reply(interaction, text)
        except discord.HTTPException:
            log.warning("could not answer interaction %s", interaction.id)

    # --- /schedule -----------------------------------------------------------------------------

    async def schedule(
        self,
        interaction: discord.Interaction,
        when: str,
        message: str | None,
        channel: discord.TextChannel | None,
        repeat: str | None,
        timezone: str | None,
        mention: discord.Role | None,
    ) -> None:
        options: dict[str, Any] = {
            "when": when,
            "channel_id": (channel or interaction.channel or discord.Object(0)).id,
            "repeat": repeat,
            "timezone": timezone,
            "mention_id": None if mention is None else mention.id,
        }
        if message is None:
            await self._validate(interaction, message="", **options)  # refuse before typing
            await interaction.response.send_modal(ScheduleModal(self.bot, options))
            return
        await self.create(interaction, message=message, **options)

    async def _validate(
        self,
        interaction: discord.Interaction,
        *,
        message: str,
        when: str,
        channel_id: int,
        repeat: str | None,
        timezone: str | None,
        mention_id: int | None,
    ) -> tuple[Draft, list[str]]:
        guild, member = _member(interaction)
        settings = await self.bot.announcements.settings(guild.id)
        require_manager(member, settings)
        target = guild.get_channel_or_thread(channel_id)
        if target is None:
            raise Refusal("I can't find that channel in this server.")
        channel = check_channel(member, guild.me, target)
        zone_name = timezone or settings.timezone or "UTC"
        tz = resolve_timezone(zone_name)
        now = self.bot.clock.now()
        first = parse_when(when, tz, now)
        rule = parse_repeat(repeat, first, tz) if repeat and repeat.strip() else None
        role = None if mention_id is None else guild.get_role(mention_id)
        if mention_id is not None and role is None:
            raise Refusal("I can't find that role in this server.")
        plan = plan_mentions(member, guild.me, channel, role, message)
        prefix = 0 if plan.mention is None else len(_mention_prefix(plan.mention)) + 1
        if message and not message.strip():
            raise InputError(EMPTY_MESSAGE)
        if len(message) + prefix > MAX_MESSAGE:
            raise InputError(
                f"The message is {len(message) + prefix} characters (with the mention); "
                f"Discord allows {MAX_MESSAGE}. Shorten it or split it into two announcements."
            )
        draft = Draft(
            guild_id=guild.id,
            channel_id=channel.id,
            author_id=member.id,
            content=message,
            mention=plan.mention,
            allowed_mentions=plan.allowed,
            first=first,
            timezone=getattr(tz, "key", None) or zone_name,
            repeat=rule,
        )
        return draft, plan.notes

    async def create(
        self, interaction: discord.Interaction, *, message: str, **options: Any
    ) -> None:
        if not message.strip():
            raise InputError(EMPTY_MESSAGE)
        draft, notes = await self._validate(interaction, message=message, **options)
        announcement, first = await self.bot.announcements.create(draft)
        log.info(
            "announcement %d (#%d) scheduled in guild %d channel %d by %d",
            announcement.id, announcement.local_id, draft.guild_id, draft.channel_id,
            draft.author_id,
        )  # fmt: skip
        await reply(interaction, confirmation(announcement, first, notes))

    # --- /list ---------------------------------------------------------------------------------

    async def list_page(
        self, interaction: discord.Interaction, page: int
    ) -> tuple[str, discord.ui.View | None]:
        guild, member = _member(interaction)
        listing = await self.bot.announcements.listing(guild.id, page * PAGE_SIZE, PAGE_SIZE)
        pages = max(1, -(-listing.total // PAGE_SIZE))
        if page >= pages and page > 0:
            return await self.list_page(interaction, pages - 1)
        hidden = {a.channel_id for a in listing.items if not _can_read(member, guild, a.channel_id)}
        text = listing_page(listing, page, guild.id, hidden)
        if pages == 1:
            return text, None
        view = discord.ui.View(timeout=None)
        view.add_item(PageButton(max(0, page - 1), "◀ Newer", disabled=page == 0))
        view.add_item(PageButton(page + 1, "Older ▶", disabled=page + 1 >= pages))
        return text, view

    async def list_command(self, interaction: discord.Interaction) -> None:
        text, view = await self.list_page(interaction, 0)
        if view is None:
            await reply(interaction, text)
        else:
            await reply(interaction, text, view=view)

    # --- /cancel -------------------------------------------------------------------------------

    async def cancel(self, interaction: discord.Interaction, id: int) -> None:
        guild, member = _member(interaction)
        settings = await self.bot.announcements.settings(guild.id)
        require_manager(member, settings)
        before = await self.bot.announcements.cancel(guild.id, id)
        if before.state == AnnouncementState.SENT:
            raise Refusal(f"Announcement #{id} was already posted; there is nothing to cancel.")
        if before.state == AnnouncementState.CANCELED:
            raise Refusal(f"Announcement #{id} was already canceled.")
        if before.state == AnnouncementState.FAILED:
            raise Refusal(
                f"Announcement #{id} already failed ({before.failure}); nothing to cancel."
            )
        what = "Its schedule is deleted." if before.recurring else "It will not be posted."
        await reply(
            interaction, f"🚫 Canceled announcement **#{id}** for <#{before.channel_id}>. {what}"
        )

    async def cancel_choices(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[int]]:
        guild, member = interaction.guild, interaction.user
        if guild is None or not isinstance(member, discord.Member):
            return []
        typed = current.strip().lstrip("#").lower()
        out: list[app_commands.Choice[int]] = []
        for a in await self.bot.announcements.live(guild.id):
            hidden = not _can_read(member, guild, a.channel_id)
            label = choice_label(a, await self.bot.announcements.next_fire(a), hidden)
            if typed.isdigit():  # a number is an id: match ids that start with it
                if not str(a.local_id).startswith(typed):
                    continue
            elif typed and typed not in label.lower():
                continue
            out.append(app_commands.Choice(name=label, value=a.local_id))
            if len(out) == 25:
                break
        return out

    # --- /settings -----------------------------------------------------------------------------

    async def settings(
        self,
        interaction: discord.Interaction,
        timezone: str | None,
        manager_role: discord.Role | None,
        log_channel: discord.TextChannel | None,
        clear: str | None,
    ) -> None:
        guild, member = _member(interaction)
        if not (member.guild_permissions.manage_guild or member.guild_permissions.administrator):
            raise Refusal("Only members with **Manage Server** can change these settings.")
        current = await self.bot.announcements.settings(guild.id)
        tz = current.timezone
        role_id = current.manager_role_id
        log_id = current.log_channel_id
        if timezone is not None:
            tz = getattr(resolve_timezone(timezone), "key", None) or timezone
        if manager_role is not None:
            if manager_role.is_default():
                raise Refusal("The manager role can't be @everyone.")
            role_id = manager_role.id
        if log_channel is not None:
            me = guild.me
            perms = log_channel.permissions_for(me)
            if not (perms.view_channel and perms.send_messages):
                raise Refusal(
                    f"I can't post in {log_channel.mention}; give me View Channel and "
                    "Send Messages there first."
                )
            log_id = log_channel.id
        if clear == "timezone":
            tz = None
        elif clear == "manager_role":
            role_id = None
        elif clear == "log_channel":
            log_id = None
        new = GuildSettings(guild.id, tz, role_id, log_id)
        changed = new != current
        if changed:
            await self.bot.announcements.save_settings(new)
        lines = [
            "⚙️ **Settings**" + (" updated." if changed else ":"),
            f"**Default time zone:** {new.timezone or 'UTC (not set)'}",
            "**Manager role:** "
            + (
                f"<@&{new.manager_role_id}>" if new.manager_role_id else "none (Manage Server only)"
            ),
            "**Log channel for failures:** "
            + (f"<#{new.log_channel_id}>" if new.log_channel_id else "none"),
        ]
        await reply(interaction, "\n".join(lines))


def _can_read(member: discord.Member, guild: discord.Guild, channel_id: int) -> bool:
    """Whether ``member`` may read the text of an announcement meant for that channel: only
    if they can view it (Discord would never show them a message there); for a channel no
    longer in the server, only if they manage the server."""
    channel = guild.get_channel_or_thread(channel_id)
    if channel is None:
        perms = member.guild_permissions
        return perms.administrator or perms.manage_guild
    return channel.permissions_for(member).view_channel


def _mention_prefix(mention: str) -> str:
    from .announcements import mention_markup

    return mention_markup(mention)


async def timezone_autocomplete(
    interaction: discord.Interaction, current: str
) -> list[app_commands.Choice[str]]:
    return [app_commands.Choice(name=z, value=z) for z in timezone_choices(current, 25)]


def build_tree(bot: CrierBot) -> app_commands.CommandTree[CrierBot]:
    """The command tree: /schedule, /list, /cancel, /settings (guild only)."""
    tree: app_commands.CommandTree[CrierBot] = app_commands.CommandTree(bot)
    commands = bot.commands

    @tree.command(
        name="schedule", description="Schedule an announcement (omit message to type it in a form)"
    )
    @app_commands.guild_only()
    @app_commands.describe(
        when="When to post: in 90m, 18:00, tomorrow 09:00, 2026-12-24 18:00, or <t:1735000000>",
        message="The text to post (leave out to type a long or multi-line message)",
        channel="Where to post (default: this channel)",
        repeat="hourly, daily, weekly, monthly, every 2h, every 30 minutes, or cron (0 9 * * 1-5)",
        timezone="Time zone for `when` and `repeat` (default: the server's, else UTC)",
        mention="A role to ping (pick @everyone to ping everyone)",
    )
    @app_commands.autocomplete(timezone=timezone_autocomplete)
    async def schedule(
        interaction: discord.Interaction,
        when: app_commands.Range[str, 1, 100],
        message: app_commands.Range[str, 1, MAX_MESSAGE] | None = None,
        channel: discord.TextChannel | None = None,
        repeat: app_commands.Range[str, 1, 100] | None = None,
        timezone: app_commands.Range[str, 1, 64] | None = None,
        mention: discord.Role | None = None,
    ) -> None:
        await commands.schedule(interaction, when, message, channel, repeat, timezone, mention)

    @tree.command(name="list", description="List this server's announcements")
    @app_commands.guild_only()
    async def list_(interaction: discord.Interaction) -> None:
        await commands.list_command(interaction)

    @tree.command(name="cancel", description="Cancel a scheduled announcement")
    @app_commands.guild_only()
    @app_commands.describe(id="The announcement's number (see /list)")
    async def cancel(
        interaction: discord.Interaction, id: app_commands.Range[int, 1, 2**53]
    ) -> None:
        await commands.cancel(interaction, id)

    @cancel.autocomplete("id")
    async def cancel_id(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[int]]:
        return await commands.cancel_choices(interaction, current)

    @tree.command(name="settings", description="Server settings for announcements (Manage Server)")
    @app_commands.guild_only()
    @app_commands.default_permissions(manage_guild=True)
    @app_commands.describe(
        timezone="Default time zone for this server",
        manager_role="A role that may schedule and cancel announcements",
        log_channel="Where to report announcements that could not be posted",
        clear="Remove one setting",
    )
    @app_commands.autocomplete(timezone=timezone_autocomplete)
    @app_commands.choices(
        clear=[
            app_commands.Choice(name="default time zone", value="timezone"),
            app_commands.Choice(name="manager role", value="manager_role"),
            app_commands.Choice(name="log channel", value="log_channel"),
        ]
    )
    async def settings(
        interaction: discord.Interaction,
        timezone: app_commands.Range[str, 1, 64] | None = None,
        manager_role: discord.Role | None = None,
        log_channel: discord.TextChannel | None = None,
        clear: app_commands.Choice[str] | None = None,
    ) -> None:
        await commands.settings(
            interaction, timezone, manager_role, log_channel, None if clear is None else clear.value
        )

    @tree.error
    async def on_error(
        interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        await commands.fail(interaction, error)

    return tree
