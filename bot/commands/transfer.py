"""/export and /import: a server's announcements and templates as a ``.json`` file, and such
a file imported (a dry run first, then all of it or nothing).

The dry run waiting for its button is kept in the database (``bot_pending_imports``, one per
member and server: a new one replaces the member's older one; it expires after
:data:`~bot.announcements.PENDING_FOR`), not in this process: the click may reach another
instance, and the file's attachment URL expires. The confirmation re-checks every row (the
server may have changed), and deletes the dry run in the same commit as the import, so a
second click (or a second session given the same click) imports nothing. Every command and
the button take effect once (:mod:`bot.commands.once`).
"""

from __future__ import annotations

import asyncio
import io
import re
from dataclasses import replace
from typing import Any

import discord
from discord import app_commands

from .. import i18n
from ..render import exported, import_report
from ..requests.checks import Refusal, can_read, require_manager
from ..requests.export_doc import (
    MAX_IMPORT_BYTES,
    DocumentRefused,
    document_bytes,
    export_document,
    read_document,
)
from ..requests.files import download
from ..requests.importing import ImportPlan, plan_import
from ..requests.request import Requester
from .door import requester, speak_to
from .once import take
from .replies import AnswersErrors, answer_error, reply

__all__ = ["ConfirmImport", "TransferCommands"]

EXPIRED = i18n.marked(
    "This import was already applied, or its dry run expired (they wait 15 minutes) or was "
    "replaced by your newer one. Run `/import` again to see what it would do now."
)


def expired() -> str:
    """:data:`EXPIRED` in the member's language."""
    return i18n.translate(EXPIRED, i18n.current_locale(), context=i18n.ANSWER)


class TransferCommands(AnswersErrors, name="TransferCommands"):
    """/export and /import (guild only)."""

    @app_commands.command(
        name="export", description="This server's announcements and templates as a .json file"
    )
    @app_commands.guild_only()
    async def export(self, interaction: discord.Interaction) -> None:
        who = await self.manager(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)
        found = await self.announcements.export_rows(who.guild.id)
        # The text of an announcement for a channel the member can't see is never shown to them.
        hidden = [
            a for a in found.announcements if not can_read(who.member, who.guild, a.channel_id)
        ]
        if hidden:
            kept = [a for a in found.announcements if a not in hidden]
            found = replace(found, announcements=kept)
        doc = export_document(who.guild, found, self.clock.now())
        data = await asyncio.to_thread(document_bytes, doc)  # off the event loop
        day = self.clock.now().strftime("%Y-%m-%d")
        text = exported(len(found.announcements), len(found.templates), len(data))
        if hidden:
            text += "\n" + i18n.tn(
                "Left out: {n} announcement for a channel you can't see.",
                "Left out: {n} announcements for channels you can't see.",
                len(hidden),
            )
        if len(data) > MAX_IMPORT_BYTES:
            text += "\n" + i18n.t(
                "⚠️ This file is larger than `/import` takes ({limit} MiB): its files make it "
                "large; import it in parts (edit the file) or without them.",
                limit=MAX_IMPORT_BYTES // 2**20,
            )
        file = discord.File(io.BytesIO(data), filename=f"crier-{who.guild.id}-{day}.json")
        await reply(interaction, text, file=file)

    @app_commands.command(
        name="import", description="Import an /export file: a dry run first, then all or nothing"
    )
    @app_commands.guild_only()
    @app_commands.describe(
        file="The .json file /export made",
        confirm="Apply it at once if nothing is refused (default: show the dry run and a button)",
    )
    async def import_file(
        self, interaction: discord.Interaction, file: discord.Attachment, confirm: bool = False
    ) -> None:
        who = await self.manager(interaction)
        if file.size > MAX_IMPORT_BYTES:
            raise DocumentRefused(
                i18n.t("That file is {size} MiB; an import may be at most {limit} MiB.",
                       size=f"{file.size / (1024 * 1024):.1f}",
                       limit=MAX_IMPORT_BYTES // (1024 * 1024))
            )  # fmt: skip
        await interaction.response.defer(ephemeral=True, thinking=True)
        raw = (await download(file, MAX_IMPORT_BYTES)).data
        doc = await asyncio.to_thread(read_document, raw)  # off the event loop
        plan = await plan_import(self.announcements, self.clock, who, doc)
        if confirm and not plan.refused and plan.anything:
            await self._apply(interaction, who, plan, pending=None)
            return
        view = None
        if not plan.refused and plan.anything:
            token = await self.announcements.keep_pending(who.guild.id, who.member.id, raw.decode())
            view = discord.ui.View(timeout=None)
            view.add_item(ConfirmImport(who.guild.id, token))
        await _answer(interaction, plan, view=view)

    async def _apply(
        self,
        interaction: discord.Interaction,
        who: Requester,
        plan: ImportPlan,
        pending: str | None,
    ) -> None:
        done = await self.announcements.import_all(
            who.guild.id, plan.rows, plan.new_templates, actor_id=who.member.id, pending=pending
        )
        await _answer(interaction, plan, done=done)

    async def confirm(self, interaction: discord.Interaction, guild_id: int, token: str) -> None:
        """The dry run's button: re-check every row, then import all of it or nothing."""
        who = requester(interaction)
        if who.guild.id != guild_id:
            raise Refusal(expired())
        require_manager(who.member, await self.announcements.settings(who.guild.id))
        found = await self.announcements.pending(guild_id, token)
        if found is None:
            raise Refusal(expired())
        if found.user_id != who.member.id:
            raise Refusal(i18n.t("Only the member who ran this import can confirm it."))
        await interaction.response.defer(ephemeral=True, thinking=True)
        doc = await asyncio.to_thread(read_document, found.document.encode())
        plan = await plan_import(self.announcements, self.clock, who, doc)
        if plan.refused or not plan.anything:
            await _answer(interaction, plan)  # the server changed since the dry run
            return
        await self._apply(interaction, who, plan, pending=token)


async def _answer(
    interaction: discord.Interaction,
    plan: ImportPlan,
    *,
    done: Any = None,
    view: discord.ui.View | None = None,
) -> None:
    text, whole = import_report(plan, done=done)
    extra: dict[str, Any] = {}
    if view is not None:
        extra["view"] = view
    if whole != text:
        extra["file"] = discord.File(io.BytesIO(whole.encode()), filename="import-report.txt")
    await reply(interaction, text, **extra)


class ConfirmImport(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"crier:import:(?P<guild>\d+):(?P<token>[0-9a-f]+)",
):
    """The dry run's "Import all" button; its custom id names the dry run kept in the
    database, so it works from any instance and across restarts."""

    def __init__(self, guild_id: int, token: str) -> None:
        super().__init__(
            discord.ui.Button(
                label=i18n.t("Import all"),
                style=discord.ButtonStyle.primary,
                custom_id=f"crier:import:{guild_id}:{token}",
            )
        )
        self.guild_id = guild_id
        self.token = token

    @classmethod
    async def from_custom_id(  # type: ignore[override]
        cls, interaction: discord.Interaction, item: discord.ui.Button[Any], match: re.Match[str], /
    ) -> ConfirmImport:
        return cls(int(match["guild"]), match["token"])

    async def callback(self, interaction: discord.Interaction) -> None:
        if not take(interaction):  # interactive, and once however many sessions received it
            return
        speak_to(interaction)
        client: Any = interaction.client
        cog = client.get_cog("TransferCommands") if hasattr(client, "get_cog") else None
        try:
            if not isinstance(cog, TransferCommands):
                raise LookupError("no TransferCommands cog is loaded to confirm an import")
            await cog.confirm(interaction, self.guild_id, self.token)
        except Exception as exc:  # answered in words (or with an error id)
            await answer_error(interaction, exc)
