"""What the announcements' methods share: the scheduler, the limits, and the settings."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from scheduler import Pace, Scheduler

from ..config import default
from ..db import BotDb
from ..models import GuildLimits, GuildSettings, Limits
from .guards import changed_limits, check_files
from .jobs import channel_pace

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

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
        limits: Limits | None = None,
        forget_after: float = default("forget_after"),
        report_gather: float = default("report_gather"),
        edit_quiet: float = default("edit_quiet"),
    ) -> None:
        self.sched = sched
        self.catch_up_window = catch_up_window
        self.send_spacing = send_spacing
        """Seconds between the starts of two deliveries to one channel, in every instance."""
        self.file_max_bytes = file_max_bytes
        """The largest file one announcement may carry (checked as it is downloaded)."""
        self.limits = limits or Limits(files_max_bytes=guild_files_max_bytes)
        """How much one server may do, unless an operator set otherwise for it."""
        self.guild_files_max_bytes = self.limits.files_max_bytes
        """The most one server's live announcements and templates may keep in files
        together."""
        self.forget_after = forget_after
        """Seconds after the bot leaves a server that everything of it is deleted."""
        self.report_gather = report_gather
        """Seconds a server's failure reports are gathered into one message after the first
        (``REPORT_DIGEST_SECONDS``)."""
        self.edit_quiet = edit_quiet
        """Seconds after the last of a burst of edits that its posted message is edited
        (``EDIT_QUIET_SECONDS``)."""
        self._server_locales: list[weakref.WeakMethod[Callable[[int], str | None]]] = []

    def read_server_locales(self, lookup: Callable[[int], str | None]) -> None:
        """Let :meth:`posts_language` ask ``lookup`` (a bound method, e.g. a Discord
        client's, held weakly: a closed shard's client is not kept alive by it) for a
        server's own language, None when it does not know the server."""
        self._server_locales.append(weakref.WeakMethod(lookup))

    async def posts_language(self, guild_id: int) -> str | None:
        """The language the server's posts are said in: the one chosen with ``/settings
        language``, else the server's own as a connected client knows it, else None
        (English). What /info and the dashboard's preview render a post's dates in."""
        chosen = (await self.settings(guild_id)).language
        if chosen is not None:
            return chosen
        self._server_locales = [ref for ref in self._server_locales if ref() is not None]
        for ref in self._server_locales:
            lookup = ref()
            if lookup is not None and (found := lookup(guild_id)) is not None:
                return found
        return None

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

    # --- limits ---------------------------------------------------------------------------------

    async def limits_in(self, rows: BotDb, guild_id: int) -> Limits:
        """The guild's limits, read on ``rows``' connection (in its transaction)."""
        return self.limits.for_guild(await rows.guild_limits(guild_id))

    async def check_room_for_files(
        self, rows: BotDb, guild_id: int, adding: int, *, except_announcement: int | None = None
    ) -> None:
        """Refuse (:class:`~.guards.TooMuchStored`) ``adding`` bytes of files in the guild
        if, with the files its live announcements (but ``except_announcement``'s, being
        replaced: its files and thumbnail) and its templates keep, that passes its
        ``GUILD_FILES_MAX_MB``. Read on ``rows``' connection, after the guild's settings row
        is locked."""
        if not adding:
            return
        kept = await rows.guild_image_bytes(guild_id, except_announcement)
        kept += await rows.guild_thumbnail_bytes(guild_id, except_announcement)
        kept += await rows.template_file_bytes(guild_id)
        kept += await rows.guild_avatar_bytes(guild_id, None)
        check_files(await self.limits_in(rows, guild_id), kept, adding)

    async def check_files_fit(self, guild_id: int, adding: int) -> None:
        """Refuse (:class:`~.guards.TooMuchStored`) ``adding`` bytes of files the guild has
        no room for now (asked before a form is shown; the write checks again)."""
        async with self.sched.reader() as db:
            await self.check_room_for_files(BotDb(db), guild_id, adding)

    async def guild_limits(self, guild_id: int) -> tuple[GuildLimits | None, Limits]:
        """What an operator set for the guild (None: nothing), and its limits with that."""
        async with self.sched.reader() as db:
            override = await BotDb(db).guild_limits(guild_id)
        return override, self.limits.for_guild(override)

    async def set_guild_limits(self, override: GuildLimits) -> Limits:
        """Set the guild's limits in place of the instance's (a None field: the
        instance's); returns its limits with them."""
        async with self.sched.transaction() as ctx:
            await BotDb(ctx.db).save_guild_limits(override, ctx.now.timestamp())
        return self.limits.for_guild(override)

    async def change_guild_limits(
        self, guild_id: int, given: Mapping[str, str]
    ) -> tuple[GuildLimits, Limits]:
        """Set some of the guild's limits from an operator's text (:func:`changed_limits`:
        by option name; ``default`` gives back the instance's), the others kept; returns
        what is set for the guild and its limits with it. Raises ``BadLimit`` (nothing is
        written)."""
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            current = await rows.guild_limits(guild_id) or GuildLimits(guild_id)
            new = changed_limits(current, given)
            await rows.save_guild_limits(new, ctx.now.timestamp())
        return new, self.limits.for_guild(new)

    # --- members' own settings -----------------------------------------------------------------

    async def member_timezone(self, user_id: int) -> str | None:
        async with self.sched.reader() as db:
            return await BotDb(db).member_timezone(user_id)

    async def set_member_timezone(self, user_id: int, timezone: str) -> None:
        async with self.sched.transaction() as ctx:
            await BotDb(ctx.db).set_member_timezone(user_id, timezone, ctx.now.timestamp())
