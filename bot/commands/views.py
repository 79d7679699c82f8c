"""The interactive parts of the answers: the /schedule form and the /list page buttons.

Their errors are answered like a command's (:func:`bot.commands.replies.answer_error`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

import discord
from discord.ext.commands import Bot

from .. import i18n
from ..limits import MAX_EMBED_TITLE, MAX_MESSAGE
from .door import speak_to
from .once import take
from .replies import answer_error

if TYPE_CHECKING:
    import re
    from collections.abc import Awaitable, Callable

COMMANDS_COG = "AnnouncementCommands"
"""The name of the cog that renders /list pages (the page buttons find it by this name)."""


class ScheduleModal(discord.ui.Modal, title="New announcement"):
    """Asked when /schedule is used without `message`, for long or multi-line text (and by
    /edit without options, prefilled with the current ``text`` and ``heading`` under its own
    ``title``); the submitted text and embed title go to ``submit`` with the interaction."""

    body: discord.ui.TextInput[ScheduleModal]
    heading: discord.ui.TextInput[ScheduleModal]

    def __init__(
        self,
        submit: Callable[[discord.Interaction, str, str | None], Awaitable[None]],
        *,
        title: str | None = None,
        text: str | None = None,
        heading: str | None = None,
    ) -> None:
        super().__init__(timeout=900, title=i18n.t("New announcement") if title is None else title)
        # Made here, in the member's language (the labels are theirs).
        self.body = discord.ui.TextInput(
            label=i18n.t("Message"),
            style=discord.TextStyle.paragraph,
            placeholder=i18n.t("The announcement, exactly as it should be posted"),
            max_length=MAX_MESSAGE,
        )
        self.heading = discord.ui.TextInput(
            label=i18n.t("Title (optional: posts it as an embed)"),
            style=discord.TextStyle.short,
            placeholder=i18n.t("Names a forum post; leave empty for a plain message"),
            required=False,
            max_length=MAX_EMBED_TITLE,
        )
        self.add_item(self.body)
        self.add_item(self.heading)
        self.body.default = text
        self.heading.default = heading
        self.submit = submit

    async def on_submit(self, interaction: discord.Interaction) -> None:
        """``submit`` gets the text and the title typed (None when it was left empty)."""
        if take(interaction):  # interactive, and once however many sessions received it
            speak_to(interaction)
            await self.submit(interaction, self.body.value, self.heading.value.strip() or None)

    # The same signature as discord.py's Modal.on_error (a modal's error has no item), which
    # mypy still checks against BaseView.on_error's (interaction, error, item).
    async def on_error(  # type: ignore[override]
        self, interaction: discord.Interaction, error: Exception, /
    ) -> None:
        await answer_error(interaction, error)


class ListPages(Protocol):
    """What a page button needs from the commands cog."""

    async def list_page(
        self, interaction: discord.Interaction, page: int
    ) -> tuple[str, discord.ui.View | None]: ...


class PageButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"crier:list:(?P<page>\d+)"
):
    """A /list page button; the custom id carries the page, so it works across restarts."""

    def __init__(self, page: int, label: str, disabled: bool = False) -> None:
        super().__init__(
            discord.ui.Button(
                label=label,
                style=discord.ButtonStyle.secondary,
                custom_id=f"crier:list:{page}",
                disabled=disabled,
            )
        )
        self.page = page

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> PageButton:
        label = item.label if isinstance(item, discord.ui.Button) else None
        return cls(int(match["page"]), label or "")

    async def callback(self, interaction: discord.Interaction) -> None:
        if not take(interaction):  # interactive, and once however many sessions received it
            return
        speak_to(interaction)
        try:
            text, view = await _list_pages(interaction).list_page(interaction, self.page)
            await interaction.response.edit_message(
                content=text, view=view, allowed_mentions=discord.AllowedMentions.none()
            )
        except Exception as exc:  # answered with an error id (or not at all: lost the race)
            await answer_error(interaction, exc)


def _list_pages(interaction: discord.Interaction) -> ListPages:
    client = interaction.client
    cog = client.get_cog(COMMANDS_COG) if isinstance(client, Bot) else None
    if cog is None:
        raise LookupError(f"no {COMMANDS_COG} cog is loaded to render /list pages")
    return cast("ListPages", cog)


def page_buttons(page: int, pages: int) -> discord.ui.View | None:
    """The ◀ Newer / Older ▶ buttons under page ``page`` (from 0) of ``pages``; none for one."""
    if pages == 1:
        return None
    view = discord.ui.View(timeout=None)
    view.add_item(PageButton(max(0, page - 1), i18n.t("◀ Newer"), disabled=page == 0))
    view.add_item(PageButton(page + 1, i18n.t("Older ▶"), disabled=page + 1 >= pages))
    return view
