"""/postnow and /test (managers): an announcement's next post, now or as a test.

``/postnow id:`` posts the next occurrence's text now, as an extra post: the schedule is
unchanged (that occurrence still posts at its time). The extra post and its job are recorded
in the transaction that takes the interaction's once key (:mod:`bot.commands.once`), so
however many gateway sessions see the command, it posts once; the job posts it exactly once
(:mod:`bot.posting.extra`).

``/test id:`` sends the manager, by direct message, exactly what the next post will be (its
text, embed, files and buttons), rendered by the code every post is rendered by
(:func:`bot.posting.payload.render_post`). The interaction's once key is taken before the
DM, so only one session sends it; the DM carries a nonce of the interaction's too. Closed
DMs (50007) are answered with what to change.
"""

from __future__ import annotations

import hashlib
import logging

import discord
from discord import app_commands

from ..announcements import NotPossible, Why
from ..posting.failures import REQUEST_ERRORS, classify
from ..posting.payload import posting_locale, render_post
from ..render import posting_now, test_not_sent, test_sent
from .autocomplete import announcement_ids
from .replies import AnswersErrors, reply
from .transformers import AnnouncementId

log = logging.getLogger(__name__)

POSTING_COG = "PostingCommands"
CANNOT_DM = 50007
"""Discord's refusal of a direct message to a member who does not accept them."""


def preview_nonce(interaction_id: int) -> str:
    """The nonce of the test DM sent for one interaction (at most 25 characters)."""
    return "t" + hashlib.blake2b(str(interaction_id).encode(), digest_size=12).hexdigest()[:24]


class PostingCommands(AnswersErrors, name=POSTING_COG):
    """/postnow and /test (guild only, managers who can read the announcement)."""

    @app_commands.command(
        name="postnow",
        description="Post an announcement's next post now, as an extra post (its schedule stays)",
    )
    @app_commands.guild_only()
    @app_commands.describe(id="The announcement's number (see /list)")
    @app_commands.autocomplete(id=announcement_ids("postnow"))
    async def postnow(self, interaction: discord.Interaction, id: AnnouncementId) -> None:
        who = await self.reader(interaction, id)
        done = await self.announcements.post_now(
            who.guild.id, id, who.member.id, f"interaction:{interaction.id}"
        )
        log.info(
            "announcement %d (#%d): posted now (extra post %d) by %d",
            done.announcement.id, id, done.extra_id, who.member.id,
        )  # fmt: skip
        await reply(interaction, posting_now(done))

    @app_commands.command(
        name="test", description="Get by DM exactly what an announcement's next post will be"
    )
    @app_commands.guild_only()
    @app_commands.describe(id="The announcement's number (see /list)")
    @app_commands.autocomplete(id=announcement_ids("test"))
    async def test(self, interaction: discord.Interaction, id: AnnouncementId) -> None:
        who = await self.reader(interaction, id)
        a = await self.announcements.get(who.guild.id, id)
        fire = await self.announcements.next_fire(a)
        if fire is None:
            why = Why.NOT_SCHEDULED if a.live else Why.NOTHING_NEXT
            raise NotPossible(why, a)
        await interaction.response.defer(ephemeral=True, thinking=True)
        # Only one session sends it: the interaction's once key, taken before the DM.
        async with self.announcements.sched.transaction():
            pass
        client = interaction.client
        locale = await posting_locale(client, self.announcements, a.guild_id)
        _, payload = await render_post(
            self.announcements, a, fire.timestamp(), locale=locale, words=locale, event=None
        )
        options = payload.send_options()
        options["allowed_mentions"] = discord.AllowedMentions.none()  # a DM pings nobody
        try:
            dm = await who.member.create_dm()
            await dm.send(nonce=preview_nonce(interaction.id), **options)
        except REQUEST_ERRORS as exc:
            failed = classify(exc)
            log.info(
                "announcement %d (#%d): the test DM to %d was not sent: %s",
                a.id, id, who.member.id, failed.reason,
            )  # fmt: skip
            await reply(interaction, test_not_sent(a, failed.code == CANNOT_DM, failed.reason))
            return
        log.info("announcement %d (#%d): test sent by DM to %d", a.id, id, who.member.id)
        await reply(interaction, test_sent(a, fire))
