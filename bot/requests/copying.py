"""What "Schedule a copy" can take from a message someone already posted, or why it can't.

The message command hands over the message as Discord resolved it (its full text, embeds and
files, whatever the bot's intents). An announcement holds a text, an embed's title (the text
then being its description) and files, so a message is copied when it fits in that:

- its text (braces doubled, so that a copy never reads ``{date}`` as a placeholder);
- one embed of its own (not a link's preview, which Discord makes again from the text): its
  title, and its description as the text; a text beside it that only pings (``@everyone``
  or a role) becomes the announcement's ``mention``; the embed's picture when it is one of
  the message's files (crier shows the first picture inside the embed); its colour, footer,
  title link, fields and thumbnail (one of the message's files) as the announcement's style
  (``/style``), braces doubled in the footer and fields too;
- its files, by their announced sizes within ``FILE_MAX_MB`` each (downloaded when the form
  is sent: :func:`bot.requests.files.download`).

Anything else is refused with what it is: a poll, stickers, a voice message, a forwarded
message, a system message, buttons or menus of another app, an embed without a title or with
parts crier does not post (an author, a video, a time), a picture or thumbnail elsewhere than
in the message's files, more than one embed, a text or embed past Discord's limits, no text
at all. A footer's icon is the one part left out, with a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import discord

from ..i18n import t
from ..limits import MAX_EMBED_DESCRIPTION, MAX_EMBED_TITLE, MAX_FILES, MAX_MESSAGE
from ..models import EmbedField, Style
from ..parsing.spoken import decimal
from .checks import Refusal
from .style import check_thumbnail_type

if TYPE_CHECKING:
    from collections.abc import Sequence

MIB = 1024 * 1024

COPIED_TYPES = frozenset(
    {
        discord.MessageType.default,
        discord.MessageType.reply,
        discord.MessageType.chat_input_command,
        discord.MessageType.context_menu_command,
    }
)
"""Messages someone (or an app) wrote; the others are Discord's own notices."""

ONLY_PINGS = re.compile(r"(?:@everyone|<@&(\d{15,22})>)")
"""A text beside an embed that only pings: who the copy pings."""


@dataclass(frozen=True, slots=True)
class CopiedMessage:
    """What an announcement copied from a message posts."""

    text: str
    """The text (an embed's description when ``title`` is set), braces doubled."""
    title: str | None
    """The embed's title (braces doubled); None: a plain message."""
    mention_id: int | None
    """The role (the server's id: @everyone) the text beside the embed pinged."""
    files: tuple[discord.Attachment, ...]
    """The files to download, the embed's picture first."""
    notes: tuple[str, ...] = field(default=())
    """What was left out, for the member."""
    style: Style = field(default_factory=Style)
    """The embed's colour, footer, link, fields and thumbnail (its file's name)."""
    thumbnail: discord.Attachment | None = None
    """The file the embed shows as its thumbnail (kept apart from ``files``)."""

    @property
    def size(self) -> int:
        """The files' bytes together, as announced (the thumbnail's too)."""
        return sum(f.size for f in self.files) + (self.thumbnail.size if self.thumbnail else 0)


def escaped(text: str) -> str:
    """``text`` as an announcement's text that posts exactly it (braces doubled)."""
    return text.replace("{", "{{").replace("}", "}}")


def cannot_copy(what: str) -> Refusal:
    """The refusal of a message holding ``what`` (said in words)."""
    return Refusal(
        t("I can't copy this message: it has {what}, which an announcement can't post.",
          what=what)
    )  # fmt: skip


def read_copy(
    message: discord.Message, *, bot_id: int | None, guild_id: int, file_max_bytes: float
) -> CopiedMessage:
    """What an announcement copied from ``message`` posts, or a :class:`Refusal` saying what
    of it can't be copied (nothing is downloaded here: the files' sizes are as Discord
    announced them, checked again as they arrive). ``bot_id``: this bot's own user (its own
    buttons are not copied: an announcement's come from its settings)."""
    refuse_uncopyable(message, bot_id)
    own = [e for e in message.embeds if e.type == "rich"]
    if len(own) > 1:
        raise cannot_copy(t("{count} embeds (an announcement posts one)", count=len(own)))
    files = list(message.attachments)
    check_files(files, file_max_bytes)
    if own:
        return embed_copy(own[0], message.content, files, guild_id)
    content = message.content
    if not content.strip():
        raise Refusal(
            t("I can't copy this message: it has no text, and an announcement posts a "
              "text (with its files). Use `/schedule` with a text and the file.")
        )  # fmt: skip
    if len(content) > MAX_MESSAGE:
        raise cannot_copy(
            t("{count} characters (an announcement posts at most {limit})",
              count=len(content), limit=MAX_MESSAGE)
        )  # fmt: skip
    return CopiedMessage(escaped(content), None, None, tuple(files))


def refuse_uncopyable(message: discord.Message, bot_id: int | None) -> None:
    """Refuse a message that holds what no announcement posts (a notice from Discord, a
    poll, stickers, a voice message, a forwarded message, another app's components)."""
    if message.type not in COPIED_TYPES:
        raise Refusal(
            t("I can't copy this message: it is a notice from Discord, not a message someone "
              "wrote.")
        )  # fmt: skip
    if message.poll is not None:
        raise cannot_copy(t("a poll"))
    if message.stickers:
        raise cannot_copy(t("a sticker"))
    if message.flags.voice:
        raise cannot_copy(t("a voice message"))
    if message.message_snapshots:
        raise Refusal(
            t("I can't copy a forwarded message. Open the original message and copy that one.")
        )
    if message.components and message.author.id != bot_id:
        raise cannot_copy(t("buttons or menus of another app"))


def embed_copy(
    embed: discord.Embed, content: str, files: list[discord.Attachment], guild_id: int
) -> CopiedMessage:
    """The copy of a message with an embed of its own (and ``content`` beside it)."""
    leftover = embed_parts_left_over(embed)
    if leftover:
        raise cannot_copy(t("an embed with {parts}", parts=", ".join(leftover)))
    thumbnail = None
    if embed.thumbnail.url:
        thumbnail = next((f for f in files if embed.thumbnail.url in (f.url, f.proxy_url)), None)
        if thumbnail is None:
            raise cannot_copy(t("an embed showing a thumbnail from elsewhere than its files"))
        check_thumbnail_type(thumbnail.filename, thumbnail.content_type)
        files = [f for f in files if f is not thumbnail]
    title = embed.title or ""
    if not title.strip():
        raise cannot_copy(t("an embed without a title"))
    description = embed.description or ""
    mention_id: int | None = None
    if content.strip():
        pinged = ONLY_PINGS.fullmatch(content.strip())
        if description.strip() and pinged is None:
            raise cannot_copy(t("both a text and an embed with a text of its own"))
        if pinged is not None:
            mention_id = int(pinged[1]) if pinged[1] else guild_id
        else:
            description = content
    if not description.strip():
        raise cannot_copy(t("an embed without a text"))
    if len(title) > MAX_EMBED_TITLE or len(description) > MAX_EMBED_DESCRIPTION:
        raise cannot_copy(t("an embed past Discord's limits"))
    if embed.image.url:
        picture = next((f for f in files if embed.image.url in (f.url, f.proxy_url)), None)
        if picture is None:
            raise cannot_copy(t("an embed showing a picture from elsewhere than its files"))
        files = [picture, *(f for f in files if f is not picture)]
    notes: tuple[str, ...] = ()
    if embed.footer.icon_url:
        notes = (t("The footer's icon is left out: crier's footers are text."),)
    style = Style(
        color=None if embed.colour is None else embed.colour.value,
        footer=None if not embed.footer.text else escaped(embed.footer.text),
        thumbnail=None if thumbnail is None else thumbnail.filename,
        url=embed.url or None,
        fields=tuple(
            EmbedField(escaped(f.name or ""), escaped(f.value or ""), bool(f.inline))
            for f in embed.fields
        ),
    )
    return CopiedMessage(
        escaped(description), escaped(title), mention_id, tuple(files), notes, style, thumbnail
    )


def embed_parts_left_over(embed: discord.Embed) -> list[str]:
    """The parts of ``embed`` an announcement does not post, in words."""
    parts = {
        t("an author"): bool(embed.author.name),
        t("a video"): bool(embed.video.url),
        t("a time"): embed.timestamp is not None,
    }
    return [name for name, present in parts.items() if present]


def check_files(files: Sequence[discord.Attachment], file_max_bytes: float) -> None:
    """The message's files, as their sizes were announced: at most ``file_max_bytes`` each
    (``FILE_MAX_MB``) and :data:`MAX_FILES`."""
    if len(files) > MAX_FILES:
        raise cannot_copy(t("{count} files (a message carries at most {limit})",
                            count=len(files), limit=MAX_FILES))  # fmt: skip
    for f in files:
        if f.size > file_max_bytes:
            raise Refusal(
                t("I can't copy this message: its file `{file}` is {size} MiB, and an "
                  "announcement's file may be at most {limit} MiB.", file=f.filename,
                  size=decimal(f.size / MIB), limit=decimal(file_max_bytes / MIB))
            )  # fmt: skip
