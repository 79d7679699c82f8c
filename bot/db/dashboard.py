"""The ``bot_dashboard_sessions`` table: the dashboard's logins (:mod:`bot.web.dashboard`)."""

from __future__ import annotations

import json

from ..models import DashboardSession
from .table import Table


class DashboardSessionTable(Table):
    """The dashboard's logins, kept by the hash of their id."""

    __slots__ = ()

    async def add_dashboard_session(self, session: DashboardSession, now: float) -> None:
        """Keep a new login; logins past their expiry are forgotten meanwhile."""
        await self.db.execute("DELETE FROM bot_dashboard_sessions WHERE expires_at <= ?", (now,))
        await self.db.execute(
            "INSERT INTO bot_dashboard_sessions (id_hash, user_id, username, guild_ids, "
            "csrf_token, flash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session.id_hash,
                session.user_id,
                session.username,
                json.dumps(sorted(session.guild_ids)),
                session.csrf_token,
                session.flash,
                now,
                session.expires_at,
            ),
        )

    async def dashboard_session(self, id_hash: str, now: float) -> DashboardSession | None:
        """The login whose id hashes to ``id_hash``, unless it expired."""
        row = await self._one(
            "SELECT id_hash, user_id, username, guild_ids, csrf_token, flash, expires_at "
            "FROM bot_dashboard_sessions WHERE id_hash = ? AND expires_at > ?",
            (id_hash, now),
        )
        if row is None:
            return None
        return DashboardSession(
            id_hash=str(row["id_hash"]),
            user_id=int(row["user_id"]),
            username=str(row["username"]),
            guild_ids=frozenset(int(g) for g in json.loads(row["guild_ids"])),
            csrf_token=str(row["csrf_token"]),
            flash=row["flash"],
            expires_at=float(row["expires_at"]),
        )

    async def set_dashboard_flash(self, id_hash: str, flash: str | None) -> None:
        """The answer to show once on the login's next page (None: shown)."""
        await self.db.execute(
            "UPDATE bot_dashboard_sessions SET flash = ? WHERE id_hash = ?", (flash, id_hash)
        )

    async def delete_dashboard_session(self, id_hash: str) -> None:
        """Log out."""
        await self.db.execute("DELETE FROM bot_dashboard_sessions WHERE id_hash = ?", (id_hash,))
