"""Who may see what: a server's managers (the same rule as the commands,
:func:`bot.requests.checks.is_manager`) its announcements, the operators the scheduler.

A member's roles are read from Discord (a member fetch): for a page, at most
:data:`MEMBER_TTL` seconds old; for every change, at the moment it is asked for."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord

from ...requests.checks import is_manager

if TYPE_CHECKING:
    from scheduler import Clock

    from ...announcements import Announcements
    from ...models import DashboardSession

log = logging.getLogger(__name__)

MEMBER_TTL = 30.0
"""How long a member's roles read for a page are used for other pages."""


class Access:
    def __init__(
        self,
        client: discord.Client,
        announcements: Announcements,
        clock: Clock,
        operators: tuple[int, ...] | None,
    ) -> None:
        self.client = client
        self.announcements = announcements
        self.clock = clock
        self._operators = operators
        self._members: dict[tuple[int, int], tuple[float, discord.Member | None]] = {}

    async def member(
        self, guild: discord.Guild, user_id: int, *, fresh: bool
    ) -> discord.Member | None:
        """``user_id`` as a member of ``guild`` (None if they are not one); ``fresh``: read
        from Discord now, else possibly up to :data:`MEMBER_TTL` seconds ago."""
        key = (guild.id, user_id)
        now = self.clock.time()
        cached = self._members.get(key)
        if not fresh and cached is not None and cached[0] > now:
            return cached[1]
        try:
            found: discord.Member | None = await guild.fetch_member(user_id)
        except discord.NotFound:
            found = None
        self._members[key] = (now + MEMBER_TTL, found)
        return found

    def names(self, guild_id: int) -> dict[int, str]:
        """The display names of the members of ``guild_id`` read so far (for mentions)."""
        return {
            user_id: member.display_name
            for (gid, user_id), (_, member) in self._members.items()
            if gid == guild_id and member is not None
        }

    async def manager(
        self, session: DashboardSession, guild_id: int, *, fresh: bool
    ) -> tuple[discord.Guild, discord.Member] | None:
        """The server and the member if they may manage its announcements; None otherwise
        (the bot is not there, they are not a member, or they lack the rights)."""
        guild = self.client.get_guild(guild_id)
        if guild is None or (guild_id not in session.guild_ids and not fresh):
            return None
        member = await self.member(guild, session.user_id, fresh=fresh)
        if member is None:
            return None
        if not is_manager(member, await self.announcements.settings(guild.id)):
            return None
        return guild, member

    async def managed_guilds(self, session: DashboardSession) -> list[discord.Guild]:
        """The servers where the bot is and the viewer may manage announcements."""
        out = []
        for guild in sorted(self.client.guilds, key=lambda g: g.name.lower()):
            if guild.id in session.guild_ids and await self.manager(session, guild.id, fresh=False):
                out.append(guild)
        return out

    async def operators(self) -> tuple[int, ...]:
        """``DASHBOARD_OPERATORS``, else the application's owner (or its team's members)."""
        if self._operators is None:
            info = await self.client.application_info()
            if info.team is not None:
                self._operators = tuple(m.id for m in info.team.members)
            else:
                self._operators = (info.owner.id,)
        return self._operators

    async def is_operator(self, session: DashboardSession) -> bool:
        return session.user_id in await self.operators()
