"""The settings tables: a guild's (``bot_guild_settings``), a member's own
(``bot_member_settings``) and the bot's own bookkeeping (``bot_meta``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models import GuildSettings
from .table import Table, optional_int

if TYPE_CHECKING:
    from collections.abc import Sequence


class SettingsTables(Table):
    """Guild settings, members' own settings and the bot's key-value bookkeeping."""

    __slots__ = ()

    # --- guild settings ----------------------------------------------------------------------

    async def guild_settings(self, guild_id: int) -> GuildSettings | None:
        """The guild's settings row, or None if it has none yet."""
        row = await self._one(
            "SELECT timezone, manager_role_id, log_channel_id, language FROM bot_guild_settings "
            "WHERE guild_id = ?",
            (guild_id,),
        )
        if row is None:
            return None
        return GuildSettings(
            guild_id,
            row["timezone"],
            optional_int(row["manager_role_id"]),
            optional_int(row["log_channel_id"]),
            row["language"],
        )

    async def save_guild_settings(self, settings: GuildSettings, now: float) -> None:
        """Write the guild's settings, creating or replacing its row."""
        await self.db.execute(
            "INSERT INTO bot_guild_settings "
            "(guild_id, timezone, manager_role_id, log_channel_id, language, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (guild_id) DO UPDATE SET timezone = excluded.timezone, "
            "manager_role_id = excluded.manager_role_id, "
            "log_channel_id = excluded.log_channel_id, language = excluded.language, "
            "updated_at = excluded.updated_at",
            (
                settings.guild_id,
                settings.timezone,
                settings.manager_role_id,
                settings.log_channel_id,
                settings.language,
                now,
            ),
        )

    async def lock_guild(self, guild_id: int, now: float) -> None:
        """Write-lock the guild's settings row (creating it if need be) until the commit."""
        await self.db.execute(
            "INSERT INTO bot_guild_settings (guild_id, updated_at) VALUES (?, ?) "
            "ON CONFLICT (guild_id) DO UPDATE SET guild_id = excluded.guild_id",
            (guild_id, now),
        )

    async def lock_guilds(self, guild_ids: Sequence[int], now: float) -> None:
        """:meth:`lock_guild` for each guild, in one call (lock them in one order everywhere,
        e.g. sorted, so two such calls cannot deadlock on PostgreSQL)."""
        await self.db.executemany(
            "INSERT INTO bot_guild_settings (guild_id, updated_at) VALUES (?, ?) "
            "ON CONFLICT (guild_id) DO UPDATE SET guild_id = excluded.guild_id",
            [(g, now) for g in guild_ids],
        )

    # --- members' own settings ---------------------------------------------------------------

    async def member_timezone(self, user_id: int) -> str | None:
        """The timezone the member chose for the times they type, or None."""
        row = await self._one(
            "SELECT timezone FROM bot_member_settings WHERE user_id = ?", (user_id,)
        )
        return None if row is None else str(row["timezone"])

    async def set_member_timezone(self, user_id: int, timezone: str, now: float) -> None:
        """Set (or replace) the member's own timezone."""
        await self.db.execute(
            "INSERT INTO bot_member_settings (user_id, timezone, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (user_id) DO UPDATE SET timezone = excluded.timezone, "
            "updated_at = excluded.updated_at",
            (user_id, timezone, now),
        )

    # --- command sync bookkeeping (bot_meta) -------------------------------------------------

    async def ping(self) -> None:
        """Read one row of the bot's own tables: raises if the database cannot be read."""
        await self._one("SELECT key FROM bot_meta LIMIT 1", ())

    async def meta_value(self, key: str) -> str | None:
        """The value stored under ``key``, or None."""
        row = await self._one("SELECT value FROM bot_meta WHERE key = ?", (key,))
        return None if row is None else str(row["value"])

    async def set_meta(self, key: str, value: str) -> None:
        """Store ``value`` under ``key``, replacing any previous value."""
        await self.db.execute(
            "INSERT INTO bot_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    async def meta_keys(self, prefix: str) -> list[str]:
        """Every key that starts with ``prefix``."""
        cur = await self.db.execute("SELECT key FROM bot_meta WHERE key LIKE ?", (prefix + "%",))
        return [str(r["key"]) for r in await cur.fetchall()]

    async def delete_meta(self, key: str) -> None:
        """Forget ``key``."""
        await self.db.execute("DELETE FROM bot_meta WHERE key = ?", (key,))
