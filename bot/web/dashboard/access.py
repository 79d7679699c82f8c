"""Who may see what: a server's managers (the same rule as the commands,
:func:`bot.requests.checks.is_manager`) its announcements, the operators the scheduler.

A member's roles are read from Discord (a member fetch) and kept a short while: a page uses
a read at most :data:`MEMBER_TTL` seconds old; a change reads them again (a role taken away
a moment ago counts), unless the member was refused (not a member, not a manager) in the
last :data:`REFUSED_TTL` seconds: they are refused again from the read that refused them,
so refused requests cost Discord nothing. The operators are read again every
:data:`OPERATORS_TTL` seconds."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import discord

from ...requests.checks import is_manager
from .throttle import ExpiringTable

if TYPE_CHECKING:
    from scheduler import Clock

    from ...announcements import Announcements
    from ...models import DashboardSession

log = logging.getLogger(__name__)

MEMBER_TTL = 30.0
"""How long a member's roles read for a page are used for other pages."""
REFUSED_TTL = 60.0
"""How long a member refused a change (not a member, not a manager) is refused from the
same read, without asking Discord again."""
OPERATORS_TTL = 300.0
"""How long the application's owner and team, read from Discord, are the operators."""
OPERATORS_RETRY = 30.0
"""How long after Discord failed to say who they are the operators are asked for again."""
OPERATOR_ROLES = frozenset({discord.TeamMemberRole.admin, discord.TeamMemberRole.developer})
"""The roles of a team's members that make them operators (not Read-only)."""


@dataclass(frozen=True, slots=True)
class _Read:
    at: float
    member: discord.Member | None
    refused: bool = False


def operators_of(info: discord.AppInfo) -> tuple[int, ...]:
    """The operators an application's info names: its owner; for a team's application, the
    team's owner and its members who accepted the invitation with the Admin or Developer
    role (not Read-only, not invited only)."""
    team = info.team
    if team is None:
        return (info.owner.id,)
    members = [
        m.id
        for m in team.members
        if m.membership_state == discord.TeamMembershipState.accepted and m.role in OPERATOR_ROLES
    ]
    owner = [] if team.owner_id is None else [team.owner_id]
    return tuple(dict.fromkeys([*owner, *members]))


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
        self._configured = operators
        self._operators: tuple[int, ...] = ()
        self._operators_until = float("-inf")
        self._members: ExpiringTable[tuple[int, int], _Read] = ExpiringTable(clock)

    async def member(
        self, guild: discord.Guild, user_id: int, *, change: bool = False
    ) -> discord.Member | None:
        """``user_id`` as a member of ``guild`` (None if they are not one), read from Discord
        at most :data:`MEMBER_TTL` seconds ago, or now for a ``change``; refused lately (see
        :meth:`refused`): from the read that refused them."""
        key = (guild.id, user_id)
        kept = self._members.get(key)
        if kept is not None and (kept.refused or not change):
            return kept.member
        try:
            found: discord.Member | None = await guild.fetch_member(user_id)
        except discord.NotFound:
            found = None
        ttl = REFUSED_TTL if found is None else MEMBER_TTL
        self._members.put(key, _Read(self.clock.time(), found, refused=found is None), ttl)
        return found

    def refused(self, guild_id: int, user_id: int) -> None:
        """The member was refused a change: answer them from the same read for
        :data:`REFUSED_TTL` seconds."""
        kept = self._members.get((guild_id, user_id))
        if kept is not None and not kept.refused:
            self._members.put((guild_id, user_id), _Read(kept.at, kept.member, True), REFUSED_TTL)

    def names(self, guild_id: int) -> dict[int, str]:
        """The display names of the members of ``guild_id`` read lately (for mentions)."""
        return {
            user_id: kept.member.display_name
            for (gid, user_id), kept in self._members.items()
            if gid == guild_id and kept.member is not None
        }

    async def manager(
        self, session: DashboardSession, guild_id: int
    ) -> tuple[discord.Guild, discord.Member] | None:
        """The server and the member if they may manage its announcements; None otherwise
        (the bot is not there, they are not a member, or they lack the rights)."""
        guild = self.client.get_guild(guild_id)
        if guild is None or guild_id not in session.guild_ids:
            return None
        member = await self.member(guild, session.user_id)
        if member is None:
            return None
        if not is_manager(member, await self.announcements.settings(guild.id)):
            return None
        return guild, member

    async def managed_guilds(self, session: DashboardSession) -> list[discord.Guild]:
        """The servers where the bot is and the viewer may manage announcements."""
        out = []
        for guild in sorted(self.client.guilds, key=lambda g: g.name.lower()):
            if guild.id in session.guild_ids and await self.manager(session, guild.id):
                out.append(guild)
        return out

    async def operators(self) -> tuple[int, ...]:
        """``DASHBOARD_OPERATORS``, else the application's owner or its team's operators
        (:func:`operators_of`), read again every :data:`OPERATORS_TTL` seconds."""
        if self._configured is not None:
            return self._configured
        now = self.clock.time()
        if now >= self._operators_until:
            try:
                info = await self.client.application_info()
            except (discord.HTTPException, OSError) as exc:
                log.warning("could not read the application's owner and team: %s", exc)
                self._operators_until = now + OPERATORS_RETRY  # the ones known meanwhile
            else:
                self._operators = operators_of(info)
                self._operators_until = now + OPERATORS_TTL
        return self._operators

    async def is_operator(self, session: DashboardSession) -> bool:
        return session.user_id in await self.operators()
