"""A post's style as stored (``bot_announcements.style``, ``bot_templates.style``: JSON) and
the ``bot_thumbnails`` table: the thumbnail's bytes, uploaded with every post."""

from __future__ import annotations

import json
from typing import Any

from ..models import LIVE_STATES, EmbedField, Image, LinkButton, Style
from .table import Table, state_in, state_values


def encode_style(style: Style) -> str | None:
    """``style`` as stored: JSON with the parts it has (None: it has none)."""
    if style.empty:
        return None
    raw: dict[str, Any] = {}
    if style.color is not None:
        raw["color"] = style.color
    for key in ("footer", "thumbnail", "url"):
        if getattr(style, key) is not None:
            raw[key] = getattr(style, key)
    if style.fields:
        raw["fields"] = [[f.name, f.value, f.inline] for f in style.fields]
    if style.buttons:
        raw["buttons"] = [[b.label, b.url] for b in style.buttons]
    return json.dumps(raw, ensure_ascii=False, sort_keys=True)


def decode_style(text: str | None) -> Style:
    if not text:
        return Style()
    raw = json.loads(text)
    return Style(
        color=None if raw.get("color") is None else int(raw["color"]),
        footer=raw.get("footer"),
        thumbnail=raw.get("thumbnail"),
        url=raw.get("url"),
        fields=tuple(EmbedField(str(n), str(v), bool(i)) for n, v, i in raw.get("fields", [])),
        buttons=tuple(LinkButton(str(label), str(url)) for label, url in raw.get("buttons", [])),
    )


class ThumbnailTable(Table):
    """The announcements' thumbnails (the bytes are read only to post or export them)."""

    __slots__ = ()

    async def set_thumbnail(
        self, announcement_id: int, guild_id: int, image: Image | None, now: float
    ) -> None:
        """The thumbnail uploaded with every post of the announcement from now on (None:
        none)."""
        await self.db.execute(
            "DELETE FROM bot_thumbnails WHERE announcement_id = ?", (announcement_id,)
        )
        if image is None:
            return
        await self.db.execute(
            "INSERT INTO bot_thumbnails (announcement_id, guild_id, filename, content_type, "
            "size, data, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (announcement_id, guild_id, image.filename, image.content_type, len(image.data),
             image.data, now),
        )  # fmt: skip

    async def thumbnail(self, announcement_id: int) -> Image | None:
        """The thumbnail to upload with a post, bytes included (None: none)."""
        row = await self._one(
            "SELECT filename, content_type, data FROM bot_thumbnails WHERE announcement_id = ?",
            (announcement_id,),
        )
        if row is None:
            return None
        return Image(row["filename"], row["content_type"], bytes(row["data"]))

    async def thumbnail_size(self, announcement_id: int) -> int:
        """The bytes of the announcement's thumbnail (0: none); no bytes are read."""
        row = await self._one(
            "SELECT size FROM bot_thumbnails WHERE announcement_id = ?", (announcement_id,)
        )
        return 0 if row is None else int(row["size"])

    async def guild_thumbnail_bytes(self, guild_id: int, except_announcement: int | None) -> int:
        """The bytes the guild's live announcements keep in thumbnails (but one's)."""
        row = await self._one(
            "SELECT coalesce(sum(f.size), 0) AS total FROM bot_thumbnails f "
            "JOIN bot_announcements a ON a.id = f.announcement_id "
            f"WHERE f.guild_id = ? AND a.{state_in(LIVE_STATES)} AND a.id <> ?",
            (guild_id, *state_values(LIVE_STATES), except_announcement or 0),
        )
        return 0 if row is None else int(row["total"])

    async def live_thumbnails(self, guild_id: int) -> dict[int, Image]:
        """The thumbnail of every live announcement of the guild that has one, bytes
        included, in one read (an export): announcement id → its thumbnail."""
        cur = await self.db.execute(
            "SELECT f.announcement_id, f.filename, f.content_type, f.data FROM bot_thumbnails f "
            "JOIN bot_announcements a ON a.id = f.announcement_id "
            f"WHERE f.guild_id = ? AND a.{state_in(LIVE_STATES)}",
            (guild_id, *state_values(LIVE_STATES)),
        )
        return {
            int(r["announcement_id"]): Image(r["filename"], r["content_type"], bytes(r["data"]))
            for r in await cur.fetchall()
        }
