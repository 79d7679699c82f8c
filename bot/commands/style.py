"""/style: how an announcement's posts look beyond their text (managers who can read it).

``color``, ``footer``, ``thumbnail`` and ``url`` style the embed (a post with a title);
``buttons`` puts up to 5 link buttons under any post (``label | https://…``, separated by
``;``). Each option given replaces that part, ``none`` clears it; ``clear:`` takes the
thumbnail, or the whole style, away. The edit is checked and written like an ``/edit`` (the
same checks, history, and update of the message already posted); without any option the
answer shows the style as it is. Embed fields are edited on the dashboard.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import discord
from discord import app_commands

from ..render import edit_reply, style_answer
from ..requests.editing import EditOptions, check_edit
from ..requests.files import download
from ..requests.style import MAX_BUTTONS_TEXT, MAX_EMBED_URL, MAX_FOOTER, StyleEdit
from .autocomplete import announcement_ids
from .replies import AnswersErrors, reply
from .transformers import AnnouncementId

log = logging.getLogger(__name__)


class StyleCommands(AnswersErrors, name="StyleCommands"):
    """/style (guild only)."""

    @app_commands.command(
        name="style", description="Style an announcement's posts: colour, footer, link buttons…"
    )
    @app_commands.guild_only()
    @app_commands.describe(
        id="The announcement's number (see /list)",
        color="The embed's colour in hex, like #5865F2, or none",
        footer="A line under the embed (placeholders like {date} work), or none",
        thumbnail="A small image at the embed's corner (PNG, JPEG, GIF or WebP)",
        url="Where the title links to (https://…), or none",
        buttons="Link buttons: label | https://… separated by ; (at most 5), or none",
        clear="Take the thumbnail, or the whole style, away",
        update_posted="Also restyle the message already posted (default: yes)",
    )
    @app_commands.choices(
        clear=[
            app_commands.Choice(name="thumbnail", value="thumbnail"),
            app_commands.Choice(name="all styling", value="all"),
        ]
    )
    @app_commands.autocomplete(id=announcement_ids("edit"))
    async def style(
        self,
        interaction: discord.Interaction,
        id: AnnouncementId,
        color: app_commands.Range[str, 1, 16] | None = None,
        footer: app_commands.Range[str, 1, MAX_FOOTER] | None = None,
        thumbnail: discord.Attachment | None = None,
        url: app_commands.Range[str, 1, MAX_EMBED_URL] | None = None,
        buttons: app_commands.Range[str, 1, MAX_BUTTONS_TEXT] | None = None,
        clear: app_commands.Choice[str] | None = None,
        update_posted: bool = True,
    ) -> None:
        who = await self.manager(interaction)
        current = await self.announcements.get(who.guild.id, id)
        edit = StyleEdit(
            color=color,
            footer=footer,
            url=url,
            buttons=buttons,
            thumbnail=thumbnail,
            clear=None if clear is None else clear.value,
        )
        options = EditOptions(style=edit)
        (draft, notes, _), _ = await check_edit(
            self.announcements, self.clock, who, current, options, current.content
        )
        if edit.empty:
            await reply(interaction, style_answer(current))
            return
        if thumbnail is not None:  # checked in full first: only then downloaded
            file = await download(thumbnail, self.announcements.file_max_bytes)
            draft = replace(draft, thumbnail=file)
        outcome = await self.announcements.edit(
            current, draft, when_given=False, update_posted=update_posted, actor_id=who.member.id
        )
        if outcome.changes:
            log.info(
                "announcement %d (#%d) restyled in guild %d by %d: %s",
                current.id, current.local_id, who.guild.id, who.member.id,
                ", ".join(c.field for c in outcome.changes),
            )  # fmt: skip
        await reply(interaction, edit_reply(outcome, notes))
