"""The ``bot_calendar_tokens`` table: each server's calendar feed address
(:mod:`bot.announcements.calendar`), and the cheap reads the feed is served from."""

from __future__ import annotations

from typing import Any

from ..models import AnnouncementState
from .table import Table

_LIVE = (str(AnnouncementState.SCHEDULED), str(AnnouncementState.PAUSED))


class CalendarTable(Table):
    """A server's calendar token, found by its hash."""

    __slots__ = ()

    async def calendar_token(self, guild_id: int) -> str | None:
        """The server's calendar token (None: it has none yet)."""
        row = await self._one(
            "SELECT token FROM bot_calendar_tokens WHERE guild_id = ?", (guild_id,)
        )
        return None if row is None else str(row["token"])

    async def set_calendar_token(
        self,
        guild_id: int,
        token: str,
        token_hash: str,
        actor_id: int,
        now: float,
        *,
        replace: bool,
    ) -> str:
        """Make ``token`` the server's (``replace``: in place of the one it has, which no
        longer is; else only if it has none); the server's token as it then stands."""
        on_conflict = (
            "DO UPDATE SET token = excluded.token, token_hash = excluded.token_hash, "
            "created_by = excluded.created_by, created_at = excluded.created_at"
            if replace
            else "DO NOTHING"
        )
        await self.db.execute(
            "INSERT INTO bot_calendar_tokens (guild_id, token, token_hash, created_by, "
            f"created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (guild_id) {on_conflict}",
            (guild_id, token, token_hash, actor_id, now),
        )
        found = await self.calendar_token(guild_id)
        if found is None:
            raise RuntimeError("the token written above, in this transaction, is gone")
        return found

    async def calendar_guild(self, token_hash: str) -> int | None:
        """The server whose calendar token hashes to ``token_hash`` (None: no server's)."""
        row = await self._one(
            "SELECT guild_id FROM bot_calendar_tokens WHERE token_hash = ?", (token_hash,)
        )
        return None if row is None else int(row["guild_id"])

    async def calendar_version(self, guild_id: int) -> tuple[Any, ...]:
        """What changes whenever something the server's feed shows may have changed but the
        time: its announcements' number and latest ``updated_at`` (written by every change
        and post), their edits, and its latest history entry (every change writes one, at
        any clock)."""
        row = await self._one(
            "SELECT count(*) AS n, max(a.updated_at) AS changed, sum(a.edits) AS edits, "
            "(SELECT max(h.id) FROM bot_history h JOIN bot_announcements b "
            "ON b.id = h.announcement_id WHERE b.guild_id = ?) AS latest "
            "FROM bot_announcements a WHERE a.guild_id = ?",
            (guild_id, guild_id),
        )
        if row is None:
            return (0, None, None, None)
        return (int(row["n"]), row["changed"], row["edits"], row["latest"])

    async def edit_counts(self, guild_id: int) -> dict[int, int]:
        """How many times each live announcement of the server was edited (``edits``,
        counted with each ``edited`` history entry and never pruned), by announcement id:
        the feed's SEQUENCE."""
        cur = await self.db.execute(
            "SELECT id, edits FROM bot_announcements WHERE guild_id = ? AND state IN (?, ?)",
            (guild_id, *_LIVE),
        )
        return {int(r["id"]): int(r["edits"]) for r in await cur.fetchall()}
