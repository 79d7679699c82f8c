"""Logins to the dashboard, kept in the bot's database: the browser holds a random session
id (32 bytes) in an HttpOnly, SameSite=Lax cookie; the database keeps only its SHA-256."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...db import BotDb
from ...models import DashboardSession

if TYPE_CHECKING:
    from scheduler import Clock, Scheduler

SESSION_COOKIE = "crier_session"
STATE_COOKIE = "crier_oauth_state"
SESSION_SECONDS = 7 * 24 * 3600
"""How long a login lasts (then the user logs in again, and their servers are read again)."""


def hash_id(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Identity:
    """Who logged in, as Discord told us."""

    user_id: int
    username: str
    guild_ids: frozenset[int]
    locale: str | None = None
    """Their Discord language (``identify`` gives it), the dashboard's unless they pick one."""


class Sessions:
    def __init__(self, sched: Scheduler, clock: Clock) -> None:
        self.sched = sched
        self.clock = clock

    async def open(self, who: Identity) -> str:
        """A new login for ``who``; returns the session id for the cookie (kept nowhere)."""
        session_id = secrets.token_urlsafe(32)
        now = self.clock.time()
        session = DashboardSession(
            id_hash=hash_id(session_id),
            user_id=who.user_id,
            username=who.username,
            guild_ids=who.guild_ids,
            csrf_token=secrets.token_urlsafe(32),
            flash=None,
            expires_at=now + SESSION_SECONDS,
        )
        async with self.sched.transaction() as ctx:
            await BotDb(ctx.db).add_dashboard_session(session, now)
        return session_id

    async def find(self, session_id: str | None) -> DashboardSession | None:
        if not session_id:
            return None
        async with self.sched.reader() as db:
            return await BotDb(db).dashboard_session(hash_id(session_id), self.clock.time())

    async def set_flash(self, session: DashboardSession, text: str | None) -> None:
        async with self.sched.transaction() as ctx:
            await BotDb(ctx.db).set_dashboard_flash(session.id_hash, text)

    async def close(self, session: DashboardSession) -> None:
        async with self.sched.transaction() as ctx:
            await BotDb(ctx.db).delete_dashboard_session(session.id_hash)
