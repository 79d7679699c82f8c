"""Reports to a guild's log channel (failures to post, posts that can't be updated)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord

from .failures import describe

if TYPE_CHECKING:
    from ..announcements import Announcements
    from .pacer import ChannelPacer

__all__ = ["LogChannel"]

log = logging.getLogger("crier.delivery")  # tests and operators filter on this name


class LogChannel:
    """Posts reports to each guild's log channel (from its settings), pinging no one, in
    the channel's turn (``pacer``: spaced with this process's other requests there)."""

    def __init__(
        self, client: discord.Client, announcements: Announcements, pacer: ChannelPacer
    ) -> None:
        self.client = client
        self.announcements = announcements
        self.pacer = pacer

    async def tell(self, guild_id: int, text: str) -> None:
        """Post ``text`` to the guild's log channel, if it has one. A report Discord refuses
        is logged, not raised: it does not fail the job that reports."""
        settings = await self.announcements.settings(guild_id)
        if settings.log_channel_id is None:
            return
        try:
            async with self.pacer.slot(settings.log_channel_id) as turn:
                turn.sent = True
                await self.client.get_partial_messageable(settings.log_channel_id).send(
                    text, allowed_mentions=discord.AllowedMentions.none()
                )
        except discord.HTTPException as exc:
            log.warning(
                "could not post the failure report to log channel %d of guild %d: %s",
                settings.log_channel_id, guild_id, describe(exc),
            )  # fmt: skip
