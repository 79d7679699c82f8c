"""The ``bot_templates`` table (a server's templates), ``bot_imports`` (the announcements an
import created, by the key their export gave them) and ``bot_pending_imports`` (an import's
dry run waiting for its confirmation, one per member and server)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..models import Image, PostAs, Template, Tidy
from .styles import decode_style, encode_style
from .table import Table, optional_int

if TYPE_CHECKING:
    from collections.abc import Sequence

_COLUMNS = (
    "guild_id, name, content, title, silent, mention, channel_id, image_name, image_type, "
    "image_data, author_id, created_at, reminder_s, as_name, as_avatar_name, as_avatar_type, "
    "as_avatar, style, thumbnail_name, thumbnail_type, thumbnail_data, post_pin, post_replace, "
    "post_delete_after_s"
)


def _template(row: Any) -> Template:
    image = None
    if row["image_name"] is not None:
        image = Image(row["image_name"], row["image_type"], bytes(row["image_data"]))
    thumbnail = None
    if row["thumbnail_name"] is not None:
        thumbnail = Image(
            row["thumbnail_name"], row["thumbnail_type"], bytes(row["thumbnail_data"])
        )
    return Template(
        guild_id=int(row["guild_id"]),
        name=row["name"],
        content=row["content"],
        title=row["title"],
        silent=bool(row["silent"]),
        mention=row["mention"],
        channel_id=optional_int(row["channel_id"]),
        image=image,
        author_id=int(row["author_id"]),
        created_at=float(row["created_at"]),
        reminder=None if row["reminder_s"] is None else float(row["reminder_s"]),
        post_as=_post_as(row),
        style=decode_style(row["style"]),
        thumbnail=thumbnail,
        tidy=Tidy(
            bool(row["post_pin"]),
            bool(row["post_replace"]),
            None if row["post_delete_after_s"] is None else float(row["post_delete_after_s"]),
        ),
    )


def _post_as(row: Any) -> PostAs | None:
    if row["as_name"] is None:
        return None
    avatar = None
    if row["as_avatar"] is not None:
        avatar = Image(
            row["as_avatar_name"] or "avatar", row["as_avatar_type"], bytes(row["as_avatar"])
        )
    return PostAs(row["as_name"], avatar)


@dataclass(frozen=True, slots=True)
class PendingImport:
    """An import's dry run waiting for its confirmation: who ran it, the file, when."""

    guild_id: int
    user_id: int
    token: str
    document: str
    created_at: float


def name_key(name: str) -> str:
    """A template's name as it is looked up (case does not matter)."""
    return name.strip().casefold()


class TemplateTable(Table):
    """Templates, and the keys of imported announcements."""

    __slots__ = ()

    async def templates(self, guild_id: int) -> list[Template]:
        """The guild's templates, by name."""
        cur = await self.db.execute(
            f"SELECT {_COLUMNS} FROM bot_templates WHERE guild_id = ? ORDER BY name_key",
            (guild_id,),
        )
        return [_template(r) for r in await cur.fetchall()]

    async def template(self, guild_id: int, name: str) -> Template | None:
        row = await self._one(
            f"SELECT {_COLUMNS} FROM bot_templates WHERE guild_id = ? AND name_key = ?",
            (guild_id, name_key(name)),
        )
        return None if row is None else _template(row)

    async def template_names(self, guild_id: int) -> list[str]:
        """The guild's templates' names, by name (no file is read: an autocomplete's)."""
        cur = await self.db.execute(
            "SELECT name FROM bot_templates WHERE guild_id = ? ORDER BY name_key", (guild_id,)
        )
        return [str(r["name"]) for r in await cur.fetchall()]

    async def template_file_bytes(self, guild_id: int) -> int:
        """The bytes the guild's templates keep in files (their recorded sizes) and avatars."""
        row = await self._one(
            "SELECT coalesce(sum(image_size + thumbnail_size), 0) "
            "+ coalesce(sum(length(as_avatar)), 0) AS total "
            "FROM bot_templates WHERE guild_id = ?",
            (guild_id,),
        )
        return 0 if row is None else int(row["total"])

    async def template_count(self, guild_id: int) -> int:
        row = await self._one(
            "SELECT COUNT(*) AS n FROM bot_templates WHERE guild_id = ?", (guild_id,)
        )
        return 0 if row is None else int(row["n"])

    async def insert_template(self, t: Template) -> None:
        """Write a new template (its name must be free: UNIQUE (guild_id, name_key))."""
        image, thumbnail = t.image, t.thumbnail
        avatar = None if t.post_as is None else t.post_as.avatar
        await self.db.execute(
            f"INSERT INTO bot_templates ({_COLUMNS}, name_key, image_size, thumbnail_size) "
            f"VALUES ({', '.join('?' * 27)})",
            (
                t.guild_id,
                t.name,
                t.content,
                t.title,
                int(t.silent),
                t.mention,
                t.channel_id,
                None if image is None else image.filename,
                None if image is None else image.content_type,
                None if image is None else image.data,
                t.author_id,
                t.created_at,
                t.reminder,
                None if t.post_as is None else t.post_as.name,
                None if avatar is None else avatar.filename,
                None if avatar is None else avatar.content_type,
                None if avatar is None else avatar.data,
                encode_style(t.style),
                None if thumbnail is None else thumbnail.filename,
                None if thumbnail is None else thumbnail.content_type,
                None if thumbnail is None else thumbnail.data,
                int(t.tidy.pin),
                int(t.tidy.replace),
                t.tidy.delete_after,
                name_key(t.name),
                0 if image is None else len(image.data),
                0 if thumbnail is None else len(thumbnail.data),
            ),
        )

    async def delete_template(self, guild_id: int, name: str) -> bool:
        cur = await self.db.execute(
            "DELETE FROM bot_templates WHERE guild_id = ? AND name_key = ?",
            (guild_id, name_key(name)),
        )
        return bool(cur.rowcount)

    # --- imports -------------------------------------------------------------------------------

    async def imported(self, guild_id: int, keys: Sequence[str]) -> dict[str, int]:
        """Of ``keys``, those an import into the guild already created: key → announcement."""
        found: dict[str, int] = {}
        for start in range(0, len(keys), 500):
            part = list(keys[start : start + 500])
            marks = ", ".join("?" * len(part))
            cur = await self.db.execute(
                "SELECT import_key, announcement_id FROM bot_imports "
                f"WHERE guild_id = ? AND import_key IN ({marks})",
                (guild_id, *part),
            )
            found.update({r["import_key"]: int(r["announcement_id"]) for r in await cur.fetchall()})
        return found

    async def record_imports(
        self, guild_id: int, made: Sequence[tuple[str, int]], now: float
    ) -> None:
        """Remember that an import created these announcements (key, announcement id)."""
        await self.db.executemany(
            "INSERT INTO bot_imports (guild_id, import_key, announcement_id, imported_at) "
            "VALUES (?, ?, ?, ?)",
            [(guild_id, key, ann_id, now) for key, ann_id in made],
        )

    # --- dry runs waiting for their confirmation -----------------------------------------------

    async def keep_pending_import(self, pending: PendingImport) -> None:
        """Keep the member's dry run in the guild, in place of their older one."""
        await self.db.execute(
            "INSERT INTO bot_pending_imports (guild_id, user_id, token, document, created_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (guild_id, user_id) DO UPDATE SET "
            "token = excluded.token, document = excluded.document, "
            "created_at = excluded.created_at",
            (pending.guild_id, pending.user_id, pending.token, pending.document,
             pending.created_at),
        )  # fmt: skip

    async def pending_import(self, guild_id: int, token: str) -> PendingImport | None:
        row = await self._one(
            "SELECT user_id, document, created_at FROM bot_pending_imports "
            "WHERE guild_id = ? AND token = ?",
            (guild_id, token),
        )
        if row is None:
            return None
        return PendingImport(
            guild_id, int(row["user_id"]), token, str(row["document"]), float(row["created_at"])
        )

    async def delete_pending_import(self, guild_id: int, token: str) -> bool:
        cur = await self.db.execute(
            "DELETE FROM bot_pending_imports WHERE guild_id = ? AND token = ?", (guild_id, token)
        )
        return bool(cur.rowcount)

    async def prune_pending_imports(self, before: float, limit: int) -> int:
        """Delete up to ``limit`` dry runs (of any guild) made before ``before``; how many."""
        cur = await self.db.execute(
            "DELETE FROM bot_pending_imports WHERE (guild_id, user_id) IN ("
            "SELECT guild_id, user_id FROM bot_pending_imports WHERE created_at < ? "
            "ORDER BY created_at LIMIT ?) RETURNING guild_id",
            (before, limit),
        )
        return len(await cur.fetchall())
