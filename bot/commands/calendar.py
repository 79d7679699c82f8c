"""/calendar: the private address of the server's calendar feed (managers).

``/calendar`` answers with the address (made on first use); ``/calendar reset: true`` makes
a new one, and the old one stops working at once. The feed itself is served by the bot's web
server (:mod:`bot.web.calendar`), from the same rules the scheduler fires from
(:mod:`bot.announcements.calendar`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands

from ..render import calendar_answer, no_calendar
from ..requests.checks import require_reads_every
from .replies import AnswersErrors, reply

if TYPE_CHECKING:
    from collections.abc import Callable

    from scheduler import Clock

    from ..announcements import Announcements

log = logging.getLogger(__name__)

CALENDAR_COG = "CalendarCommands"


class CalendarCommands(AnswersErrors, name=CALENDAR_COG):
    """/calendar (guild only, managers)."""

    def __init__(
        self,
        announcements: Announcements,
        clock: Clock | None = None,
        *,
        web_base: Callable[[], tuple[str, bool] | None] | None = None,
    ) -> None:
        super().__init__(announcements, clock)
        self.web_base = web_base or (lambda: None)
        """Where the web server is reached, and whether that is its public address
        (``DASHBOARD_PUBLIC_URL``) rather than the one it listens on; None: no web server."""

    @app_commands.command(
        name="calendar",
        description="A private calendar (iCalendar) address of this server's announcements",
    )
    @app_commands.guild_only()
    @app_commands.describe(
        reset="Make a new address: the old one stops working (default: show the current one)"
    )
    async def calendar(self, interaction: discord.Interaction, reset: bool = False) -> None:
        who = await self.manager(interaction)
        require_reads_every(
            who.member, who.guild, await self.announcements.live(who.guild.id, 10**9)
        )
        base = self.web_base()
        if base is None:  # nothing would serve it: nothing is made
            await reply(interaction, no_calendar())
            return
        found = await self.announcements.calendar_address(who.guild.id, who.member.id, reset=reset)
        if found.new:
            log.info(
                "guild %d: calendar address %s by %d",
                who.guild.id,
                "replaced" if found.replaced else "made",
                who.member.id,
            )
        url, public = base
        await reply(interaction, calendar_answer(url, found, public=public))
