"""The ``bot_attachments`` table: the files posted with an announcement."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models import LIVE_STATES, Image
from .table import Table, state_in, state_values

if TYPE_CHECKING:
    from collections.abc import Sequence


class AttachmentTable(Table):
    """The announcements' files (the bytes are read only to post them)."""

    __slots__ = ()

    async def replace_images(
        self, announcement_id: int, guild_id: int, images: Sequence[Image], now: float
    ) -> None:
        """The files uploaded with every post of the announcement, from now on."""
        await self.db.execute(
            "DELETE FROM bot_attachments WHERE announcement_id = ?", (announcement_id,)
        )
        for position, image in enumerate(images):
            await self.db.execute(
                "INSERT INTO bot_attachments (announcement_id, guild_id, position, filename, "
                "content_type, size, data, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    announcement_id,
                    guild_id,
                    position,
                    image.filename,
                    image.content_type,
                    len(image.data),
                    image.data,
                    now,
                ),
            )

    async def images(self, announcement_id: int) -> list[Image]:
        """The files to upload with a post, bytes included."""
        cur = await self.db.execute(
            "SELECT filename, content_type, data FROM bot_attachments "
            "WHERE announcement_id = ? ORDER BY position",
            (announcement_id,),
        )
        return [
            Image(r["filename"], r["content_type"], bytes(r["data"])) for r in await cur.fetchall()
        ]

    async def image_names(self, announcement_id: int) -> list[tuple[str, int]]:
        """The names and sizes of the files uploaded with a post (no bytes read)."""
        cur = await self.db.execute(
            "SELECT filename, size FROM bot_attachments WHERE announcement_id = ? "
            "ORDER BY position",
            (announcement_id,),
        )
        return [(r["filename"], int(r["size"])) for r in await cur.fetchall()]

    async def guild_image_bytes(self, guild_id: int, except_announcement: int | None) -> int:
        """The bytes the guild's live announcements keep in files (but one's, if given)."""
        row = await self._one(
            "SELECT coalesce(sum(f.size), 0) AS total FROM bot_attachments f "
            "JOIN bot_announcements a ON a.id = f.announcement_id "
            f"WHERE f.guild_id = ? AND a.{state_in(LIVE_STATES)} AND a.id <> ?",
            (guild_id, *state_values(LIVE_STATES), except_announcement or 0),
        )
        if row is None:
            raise RuntimeError("an aggregate always gives a row")
        return int(row["total"])

    async def live_images(self, guild_id: int) -> dict[int, list[Image]]:
        """The files of every live announcement of the guild, bytes included, in one read
        (an export): announcement id → its files in order."""
        cur = await self.db.execute(
            "SELECT f.announcement_id, f.filename, f.content_type, f.data FROM bot_attachments f "
            "JOIN bot_announcements a ON a.id = f.announcement_id "
            f"WHERE f.guild_id = ? AND a.{state_in(LIVE_STATES)} "
            "ORDER BY f.announcement_id, f.position",
            (guild_id, *state_values(LIVE_STATES)),
        )
        out: dict[int, list[Image]] = {}
        for r in await cur.fetchall():
            image = Image(r["filename"], r["content_type"], bytes(r["data"]))
            out.setdefault(int(r["announcement_id"]), []).append(image)
        return out
