"""What the announcements' methods share: the scheduler, the limits, and the settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import default
from ..db import BotDb
from ..models import GuildSettings
from .jobs import channel_pace

if TYPE_CHECKING:
    from scheduler import Pace, Scheduler


class AnnouncementService:
    """The scheduler and the limits every part of :class:`bot.announcements.Announcements`
    works with; guild and member settings."""

    def __init__(
        self,
        sched: Scheduler,
        catch_up_window: float = default("catch_up_window"),
        *,
        send_spacing: float = default("send_spacing"),
        file_max_bytes: float = default("file_max_bytes"),
        guild_files_max_bytes: float = default("guild_files_max_bytes"),
        templates_per_guild: int = default("templates_per_guild"),
    ) -> None:
        self.sched = sched
        self.catch_up_window = catch_up_window
        self.send_spacing = send_spacing
        """Seconds between the starts of two deliveries to one channel, in every instance."""
        self.file_max_bytes = file_max_bytes
        """The largest file one announcement may carry (checked as it is downloaded)."""
        self.guild_files_max_bytes = guild_files_max_bytes
        """The most one server's live announcements may keep in files together."""
        self.templates_per_guild = templates_per_guild
        """The most templates one server may keep."""

    def pace(self, channel_id: int) -> Pace | None:
        """The pace of the delivery jobs (and schedules) that post to ``channel_id``."""
        return channel_pace(channel_id, self.send_spacing)

    # --- settings ------------------------------------------------------------------------------

    async def settings(self, guild_id: int) -> GuildSettings:
        async with self.sched.reader() as db:
            found = await BotDb(db).guild_settings(guild_id)
        return found or GuildSettings(guild_id)

    async def save_settings(self, new: GuildSettings) -> None:
        async with self.sched.transaction() as ctx:
            await BotDb(ctx.db).save_guild_settings(new, ctx.now.timestamp())

    # --- members' own settings -----------------------------------------------------------------

    async def member_timezone(self, user_id: int) -> str | None:
        async with self.sched.reader() as db:
            return await BotDb(db).member_timezone(user_id)

    async def set_member_timezone(self, user_id: int, timezone: str) -> None:
        async with self.sched.transaction() as ctx:
            await BotDb(ctx.db).set_member_timezone(user_id, timezone, ctx.now.timestamp())
