"""A post's style as a member asks for it (``/style``, the dashboard's form), read and checked
against Discord's limits before anything is written.

- ``color``: a hex colour, ``#5865F2`` (the ``#`` may be left out); ``none``: crier's own;
- ``footer``: a line under the embed (placeholders allowed, counted at their longest);
- ``thumbnail``: an image shown at the embed's corner, kept and uploaded with every post;
- ``url``: where the embed's title links to, ``https://`` only;
- ``buttons``: up to 5 link buttons, each ``label | https://…``, separated by ``;`` (a
  command) or one per line (the dashboard, which also takes ``;``);
- embed fields (the dashboard only): a name, a value, side by side or not.

Each option given replaces that part; ``none`` clears it. The embed's parts need a title
(the post is an embed only with one); the buttons go under any post.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

import discord

from ..i18n import t
from ..limits import MAX_EMBED_TOTAL, clip
from ..models import EmbedField, LinkButton, Style
from ..parsing import InputError, concerning
from ..parsing.placeholders import WIDEST, check_placeholders, widest

if TYPE_CHECKING:
    from collections.abc import Sequence

NONE: Final = "none"
"""What each style option takes to mean "clear it"."""
MAX_FOOTER: Final = 2048
"""Characters in an embed's footer (Discord's limit)."""
MAX_FIELDS: Final = 25
"""Fields in one embed."""
MAX_FIELD_NAME: Final = 256
MAX_FIELD_VALUE: Final = 1024
MAX_BUTTONS: Final = 5
"""Link buttons per announcement (one row of Discord's)."""
MAX_BUTTON_LABEL: Final = 80
MAX_BUTTON_URL: Final = 512
"""Characters in a link button's URL (Discord's limit)."""
MAX_EMBED_URL: Final = 2048
"""Characters in an embed's title link (Discord's limit)."""
MAX_BUTTONS_TEXT: Final = MAX_BUTTONS * (MAX_BUTTON_LABEL + MAX_BUTTON_URL + 4)
"""Characters in the typed buttons (five of the longest, with their separators)."""
MAX_COLOR_TEXT: Final = 16
THUMBNAIL_TYPES: Final = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""The images Discord shows as an embed's thumbnail."""
STYLE_OPTIONS: Final = ("color", "footer", "thumbnail", "url", "buttons", "fields")
"""The style's parts, named as their options (and the dashboard's fields) are."""
EMBED_PARTS: Final = ("color", "footer", "thumbnail", "url", "fields")
"""The parts that style the embed (they need a title)."""

_HEX: Final = re.compile(r"#?([0-9a-fA-F]{6})")
_BUTTON_SEPARATOR: Final = re.compile(r"[;\n]")


@dataclass(frozen=True, slots=True)
class StyleEdit:
    """The ``/style`` options as typed (None: left out, the part stays as it is)."""

    color: str | None = None
    footer: str | None = None
    url: str | None = None
    buttons: str | None = None
    thumbnail: discord.Attachment | None = None
    """A new thumbnail (its bytes are downloaded once the whole edit is checked)."""
    clear: str | None = None
    """``thumbnail``: remove it; ``all``: remove the whole style first."""

    @property
    def empty(self) -> bool:
        return all(
            v is None
            for v in (self.color, self.footer, self.url, self.buttons, self.thumbnail, self.clear)
        )


def _cleared(text: str) -> bool:
    return text.strip().lower() == NONE


def parse_color(text: str) -> int | None:
    """``#5865F2`` (or ``5865f2``) as ``0x5865F2``; ``none``: None (crier's own colour)."""
    if _cleared(text):
        return None
    found = _HEX.fullmatch(text.strip()[:MAX_COLOR_TEXT])
    if found is None:
        raise InputError(
            t("`{typed}` is not a colour. Give one in hex like `#5865F2` (blurple), "
              "`#ED4245` (red) or `#57F287` (green), or `none` for the default.",
              typed=clip(text, 20)), field="color",
        )  # fmt: skip
    return int(found[1], 16)


def color_words(color: int | None) -> str:
    """``#5865F2``, or ``none``."""
    return NONE if color is None else f"#{color:06X}"


def parse_link(text: str, field: str, limit: int) -> str:
    """An ``https://`` address of at most ``limit`` characters, refused in words otherwise."""
    url = text.strip()
    parts = urlsplit(url[: limit + 1]) if url.isprintable() and " " not in url else None
    if parts is None or parts.scheme.lower() != "https" or not parts.hostname:
        raise InputError(
            t("`{typed}` is not a web address. Give one that starts with `https://`, e.g. "
              "`https://example.org/tickets`.", typed=clip(text, 40)), field=field,
        )  # fmt: skip
    if len(url) > limit:
        raise InputError(
            t("That address is {count} characters; Discord takes at most {limit}. Give a "
              "shorter one.", count=len(url), limit=limit), field=field,
        )  # fmt: skip
    return url


def parse_url(text: str) -> str | None:
    """The embed title's link (``none``: None)."""
    return None if _cleared(text) else parse_link(text, "url", MAX_EMBED_URL)


def parse_buttons(text: str) -> tuple[LinkButton, ...]:
    """``Tickets | https://…; Site | https://…`` (or one per line) as link buttons, at most
    :data:`MAX_BUTTONS`; ``none`` (or nothing): none."""
    if _cleared(text) or not text.strip():
        return ()
    if len(text) > MAX_BUTTONS_TEXT:
        raise InputError(too_many_buttons(), field="buttons")
    typed = [part.strip() for part in _BUTTON_SEPARATOR.split(text) if part.strip()]
    buttons = []
    for part in typed:
        label, bar, url = part.rpartition("|")
        label = label.strip()
        if not bar or not label:
            raise InputError(
                t("`{typed}` is not a button. Write each as `label | https://…`, separated "
                  "by `;`, e.g. `Tickets | https://example.org/t; Rules | "
                  "https://example.org/r`.", typed=clip(part, 40)), field="buttons",
            )  # fmt: skip
        if len(label) > MAX_BUTTON_LABEL:
            raise InputError(
                t("The button label `{label}` is {count} characters; Discord shows at most "
                  "{limit}. Shorten it.", label=clip(label, 30), count=len(label),
                  limit=MAX_BUTTON_LABEL), field="buttons",
            )  # fmt: skip
        buttons.append(LinkButton(label, parse_link(url, "buttons", MAX_BUTTON_URL)))
    return tuple(buttons)


def too_many_buttons(count: int | None = None) -> str:
    if count is None:
        return t("An announcement has at most {limit} link buttons.", limit=MAX_BUTTONS)
    return t(
        "That is {count} buttons; an announcement has at most {limit}. Leave some out.",
        count=count, limit=MAX_BUTTONS,
    )  # fmt: skip


def buttons_text(buttons: Sequence[LinkButton], separator: str = "; ") -> str:
    """The buttons as they are typed: ``Tickets | https://…; Site | https://…``."""
    return separator.join(f"{b.label} | {b.url}" for b in buttons)


def check_thumbnail_file(attachment: discord.Attachment) -> None:
    """Refuse a thumbnail Discord would not show (not a PNG, JPEG, GIF or WebP image)."""
    check_thumbnail_type(attachment.filename, attachment.content_type)


def check_thumbnail_type(filename: str, content_type: str | None) -> None:
    """Refuse a thumbnail file whose type is not one Discord shows (by its declared type)."""
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind not in THUMBNAIL_TYPES:
        raise InputError(
            t("`{file}` is not an image Discord shows as a thumbnail. Attach a PNG, JPEG, GIF "
              "or WebP image.", file=clip(filename, 40)), field="thumbnail",
        )  # fmt: skip


def edited_style(current: Style, edit: StyleEdit) -> Style:
    """``current`` with the parts ``edit`` gives replaced (``none``: cleared); a new
    thumbnail is named by its file (its bytes come later)."""
    style = Style() if edit.clear == "all" else current
    if edit.clear == "thumbnail":
        style = replace(style, thumbnail=None)
    if edit.color is not None:
        style = replace(style, color=parse_color(edit.color))
    if edit.footer is not None:
        footer = None if _cleared(edit.footer) or not edit.footer.strip() else edit.footer
        style = replace(style, footer=footer)
    if edit.url is not None:
        style = replace(style, url=parse_url(edit.url))
    if edit.buttons is not None:
        style = replace(style, buttons=parse_buttons(edit.buttons))
    if edit.thumbnail is not None:
        check_thumbnail_file(edit.thumbnail)
        style = replace(style, thumbnail=edit.thumbnail.filename)
    return style


def check_style(style: Style, title: str | None, message: str) -> None:
    """Refuse a style Discord would refuse or that can't show: the embed's parts without a
    title, more than :data:`MAX_FIELDS` fields, a field, footer or embed past Discord's
    limits (placeholders counted at their longest), unknown placeholders."""
    if title is None and style.embedded:
        part = next(p for p in EMBED_PARTS if _has(style, p))
        part = field_input(1, "name") if part == "fields" else part
        raise InputError(
            t("A colour, footer, thumbnail, title link or fields style an embed, and a post "
              "is an embed only with a title. Give it a title (`/edit title:`), or take the "
              "embed's style away (`/style clear:`)."), field=part,
        )  # fmt: skip
    with concerning("footer"):
        check_placeholders(style.footer, "the footer")
    footer = widest(style.footer) or ""
    if len(footer) > MAX_FOOTER:
        raise InputError(
            t("The footer is {count} characters; Discord allows {limit}. Shorten it.",
              count=len(footer), limit=MAX_FOOTER) + _widest_note(style.footer, footer),
            field="footer",
        )  # fmt: skip
    check_fields(style.fields)
    if len(style.buttons) > MAX_BUTTONS:
        raise InputError(too_many_buttons(len(style.buttons)), field="buttons")
    total = embed_size(style, title, message)
    if total > MAX_EMBED_TOTAL:
        raise InputError(
            t("With its title, text, footer and fields the embed is {count} characters; "
              "Discord allows {limit} in all. Shorten them (placeholders are counted at their "
              "longest).", count=total, limit=MAX_EMBED_TOTAL),
            field=field_input(len(style.fields), "value") if style.fields else "footer",
        )  # fmt: skip


def check_fields(fields: Sequence[EmbedField]) -> None:
    """At most 25 fields, each with a name and a value within Discord's limits (a refusal
    is about the dashboard's input of that field's name or value)."""
    if len(fields) > MAX_FIELDS:
        raise InputError(
            t("That is {count} fields; an embed has at most {limit}.", count=len(fields),
              limit=MAX_FIELDS), field=field_input(MAX_FIELDS + 1, "name"),
        )  # fmt: skip
    for n, f in enumerate(fields, 1):
        if not f.name.strip() or not f.value.strip():
            part = "name" if not f.name.strip() else "value"
            raise InputError(
                t("Field {n} needs both a name and a value.", n=n), field=field_input(n, part)
            )
        parts = (("name", f.name, MAX_FIELD_NAME), ("value", f.value, MAX_FIELD_VALUE))
        for part, text, limit in parts:
            with concerning(field_input(n, part)):
                check_placeholders(text, "a field")
            longest = widest(text) or ""
            if len(longest) > limit:
                raise InputError(
                    t("Field {n} is {count} characters where Discord allows {limit} (a name "
                      "256, a value 1024). Shorten it.", n=n, count=len(longest), limit=limit)
                    + _widest_note(text, longest), field=field_input(n, part),
                )  # fmt: skip


def field_input(n: int, part: str) -> str:
    """The dashboard's input of field ``n``'s (from 1) ``name`` or ``value``: what a refusal
    of it is about."""
    return f"field_{part}_{n}"


def embed_size(style: Style, title: str | None, message: str) -> int:
    """The characters Discord counts in the embed (title, description, footer, fields),
    each placeholder at its longest."""
    parts = [title or "", message, style.footer or ""]
    for f in style.fields:
        parts += [f.name, f.value]
    return sum(len(widest(p) or "") for p in parts)


def _has(style: Style, part: str) -> bool:
    value = getattr(style, part)
    return bool(value) if part == "fields" else value is not None


def _widest_note(typed: str | None, longest: str) -> str:
    if typed is None or typed == longest:
        return ""
    return " " + t(
        "(Placeholders are counted at their longest: `{{date}}` as {date} characters, "
        "`{{next}}` as {next}…)", date=WIDEST["date"], next=WIDEST["next"],
    )  # fmt: skip
