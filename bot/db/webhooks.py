"""Posting as the community: who an announcement posts as (``bot_post_as``), the webhook
the bot made in each channel (``bot_webhooks``, its token a secret), and the intent of each
occurrence posted through one (``bot_webhook_posts``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..models import LIVE_STATES, Image, PostAs
from .table import Table, optional_int, state_in, state_values

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass(frozen=True, slots=True)
class ChannelWebhook:
    """The webhook the bot made in a channel: its id, its token (a secret: never logged,
    exported or shown) and what name and avatar it has now (a digest; None: unknown)."""

    channel_id: int
    webhook_id: int
    token: str
    persona: str | None

    def __repr__(self) -> str:  # never the token, whatever prints it
        return f"ChannelWebhook(channel_id={self.channel_id}, webhook_id={self.webhook_id})"


@dataclass(frozen=True, slots=True)
class WebhookPost:
    """The intent of an occurrence posted through a webhook (see the migration)."""

    after_id: int
    webhook_id: int | None
    where_id: int | None
    mark: str | None
    message_id: int | None = None


class WebhookTable(Table):
    """``bot_post_as``, ``bot_webhooks`` and ``bot_webhook_posts``."""

    __slots__ = ()

    # --- who an announcement posts as ------------------------------------------------------

    async def post_as(self, announcement_id: int) -> PostAs | None:
        """Who the announcement posts as, its avatar's bytes included (None: the bot)."""
        row = await self._one(
            "SELECT name, avatar_name, avatar_type, avatar FROM bot_post_as "
            "WHERE announcement_id = ?",
            (announcement_id,),
        )
        if row is None:
            return None
        avatar = None
        if row["avatar"] is not None:
            avatar = Image(row["avatar_name"] or "avatar", row["avatar_type"], bytes(row["avatar"]))
        return PostAs(row["name"], avatar)

    async def posts_as(self, announcement_ids: Sequence[int]) -> dict[int, PostAs]:
        """Who each of these announcements posts as, avatars included (those that post as
        the bot are left out)."""
        found: dict[int, PostAs] = {}
        for start in range(0, len(announcement_ids), 500):
            part = list(announcement_ids[start : start + 500])
            marks = ", ".join("?" * len(part))
            cur = await self.db.execute(
                "SELECT announcement_id, name, avatar_name, avatar_type, avatar FROM bot_post_as "
                f"WHERE announcement_id IN ({marks})",
                tuple(part),
            )
            for r in await cur.fetchall():
                avatar = None
                if r["avatar"] is not None:
                    name = r["avatar_name"] or "avatar"
                    avatar = Image(name, r["avatar_type"], bytes(r["avatar"]))
                found[int(r["announcement_id"])] = PostAs(r["name"], avatar)
        return found

    async def post_as_names(self, announcement_ids: Sequence[int]) -> dict[int, str]:
        """The name each of these announcements posts as (those that post as the bot are
        left out); no avatar is read."""
        if not announcement_ids:
            return {}
        marks = ", ".join("?" * len(announcement_ids))
        cur = await self.db.execute(
            f"SELECT announcement_id, name FROM bot_post_as WHERE announcement_id IN ({marks})",
            tuple(announcement_ids),
        )
        return {int(r["announcement_id"]): r["name"] for r in await cur.fetchall()}

    async def set_post_as(
        self, announcement_id: int, guild_id: int, post_as: PostAs | None
    ) -> None:
        """From now on the announcement posts as ``post_as`` (None: as the bot); with
        ``keep_avatar`` its stored avatar stays."""
        if post_as is None:
            await self.db.execute(
                "DELETE FROM bot_post_as WHERE announcement_id = ?", (announcement_id,)
            )
            return
        if post_as.keep_avatar:
            cur = await self.db.execute(
                "UPDATE bot_post_as SET name = ? WHERE announcement_id = ? "
                "RETURNING announcement_id",
                (post_as.name, announcement_id),
            )
            if await cur.fetchone() is not None:
                return
        avatar = post_as.avatar
        await self.db.execute(
            "DELETE FROM bot_post_as WHERE announcement_id = ?", (announcement_id,)
        )
        await self.db.execute(
            "INSERT INTO bot_post_as (announcement_id, guild_id, name, avatar_name, avatar_type, "
            "avatar, avatar_size) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                announcement_id,
                guild_id,
                post_as.name,
                None if avatar is None else avatar.filename,
                None if avatar is None else avatar.content_type,
                None if avatar is None else avatar.data,
                0 if avatar is None else len(avatar.data),
            ),
        )

    async def post_as_avatar_size(self, announcement_id: int) -> int:
        """The bytes of the announcement's avatar (0: none)."""
        row = await self._one(
            "SELECT avatar_size FROM bot_post_as WHERE announcement_id = ?", (announcement_id,)
        )
        return 0 if row is None else int(row["avatar_size"])

    async def guild_avatar_bytes(self, guild_id: int, except_announcement: int | None) -> int:
        """The bytes the guild's live announcements keep in avatars (but one's, if given)."""
        row = await self._one(
            "SELECT coalesce(sum(p.avatar_size), 0) AS total FROM bot_post_as p "
            "JOIN bot_announcements a ON a.id = p.announcement_id "
            f"WHERE p.guild_id = ? AND a.{state_in(LIVE_STATES)} AND a.id <> ?",
            (guild_id, *state_values(LIVE_STATES), except_announcement or 0),
        )
        if row is None:
            raise RuntimeError("an aggregate always gives a row")
        return int(row["total"])

    # --- the webhook of each channel ---------------------------------------------------------

    async def channel_webhook(self, channel_id: int) -> ChannelWebhook | None:
        row = await self._one(
            "SELECT channel_id, webhook_id, token, persona FROM bot_webhooks WHERE channel_id = ?",
            (channel_id,),
        )
        if row is None:
            return None
        return ChannelWebhook(
            int(row["channel_id"]), int(row["webhook_id"]), row["token"], row["persona"]
        )

    async def webhook_by_id(self, webhook_id: int) -> ChannelWebhook | None:
        """The stored webhook with this id (None: the bot has it no more)."""
        row = await self._one(
            "SELECT channel_id, webhook_id, token, persona FROM bot_webhooks WHERE webhook_id = ?",
            (webhook_id,),
        )
        if row is None:
            return None
        return ChannelWebhook(
            int(row["channel_id"]), int(row["webhook_id"]), row["token"], row["persona"]
        )

    async def save_channel_webhook(self, hook: ChannelWebhook, guild_id: int) -> None:
        """The channel's webhook from now on (the one it had is forgotten)."""
        await self.db.execute("DELETE FROM bot_webhooks WHERE channel_id = ?", (hook.channel_id,))
        await self.db.execute(
            "INSERT INTO bot_webhooks (channel_id, guild_id, webhook_id, token, persona) "
            "VALUES (?, ?, ?, ?, ?)",
            (hook.channel_id, guild_id, hook.webhook_id, hook.token, hook.persona),
        )

    async def set_webhook_persona(self, channel_id: int, webhook_id: int, persona: str) -> None:
        await self.db.execute(
            "UPDATE bot_webhooks SET persona = ? WHERE channel_id = ? AND webhook_id = ?",
            (persona, channel_id, webhook_id),
        )

    async def forget_channel_webhook(self, channel_id: int, webhook_id: int) -> None:
        """The channel's webhook ``webhook_id`` is gone (deleted by someone): forgotten,
        unless another one was saved meanwhile."""
        await self.db.execute(
            "DELETE FROM bot_webhooks WHERE channel_id = ? AND webhook_id = ?",
            (channel_id, webhook_id),
        )

    # --- the intent of each occurrence posted through one ------------------------------------

    async def begin_webhook_post(
        self, announcement_id: int, fire_ts: float, channel_id: int, guild_id: int, after_id: int
    ) -> None:
        """The occurrence goes through a webhook: recorded before anything is sent."""
        await self.db.execute(
            "INSERT INTO bot_webhook_posts (announcement_id, fire_ts, channel_id, guild_id, "
            "after_id) VALUES (?, ?, ?, ?, ?)",
            (announcement_id, fire_ts, channel_id, guild_id, after_id),
        )

    async def webhook_post(
        self, announcement_id: int, fire_ts: float, channel_id: int
    ) -> WebhookPost | None:
        row = await self._one(
            "SELECT after_id, webhook_id, where_id, mark, message_id FROM bot_webhook_posts "
            "WHERE announcement_id = ? AND fire_ts = ? AND channel_id = ?",
            (announcement_id, fire_ts, channel_id),
        )
        if row is None:
            return None
        return WebhookPost(
            int(row["after_id"]),
            optional_int(row["webhook_id"]),
            optional_int(row["where_id"]),
            row["mark"],
            optional_int(row["message_id"]),
        )

    async def note_webhook_execute(
        self,
        announcement_id: int,
        fire_ts: float,
        channel_id: int,
        *,
        webhook_id: int,
        where_id: int | None,
        mark: str,
    ) -> None:
        """Right before an execute: through which webhook, in which thread (None: its
        channel, or a new forum post), showing what."""
        await self.db.execute(
            "UPDATE bot_webhook_posts SET webhook_id = ?, where_id = ?, mark = ? "
            "WHERE announcement_id = ? AND fire_ts = ? AND channel_id = ?",
            (webhook_id, where_id, mark, announcement_id, fire_ts, channel_id),
        )

    async def set_webhook_message(
        self,
        announcement_id: int,
        fire_ts: float,
        channel_id: int,
        message_id: int,
        thread_id: int | None,
    ) -> None:
        """The occurrence is posted through the webhook as ``message_id``, in the thread
        ``thread_id`` (a thread's, a forum post's; None: in the webhook's channel)."""
        await self.db.execute(
            "UPDATE bot_webhook_posts SET message_id = ?, where_id = ? "
            "WHERE announcement_id = ? AND fire_ts = ? AND channel_id = ?",
            (message_id, thread_id, announcement_id, fire_ts, channel_id),
        )

    async def webhook_message(self, message_id: int) -> tuple[int, int | None] | None:
        """The webhook that posted ``message_id`` and the thread it is in (None: its
        channel), when an occurrence was posted through one."""
        row = await self._one(
            "SELECT webhook_id, where_id FROM bot_webhook_posts WHERE message_id = ?",
            (message_id,),
        )
        if row is None or row["webhook_id"] is None:
            return None
        return int(row["webhook_id"]), optional_int(row["where_id"])

    async def recorded_messages(self, message_ids: Sequence[int]) -> set[int]:
        """Which of these messages an occurrence recorded as its post."""
        if not message_ids:
            return set()
        marks = ", ".join("?" * len(message_ids))
        cur = await self.db.execute(
            f"SELECT message_id FROM bot_deliveries WHERE message_id IN ({marks})",
            tuple(message_ids),
        )
        return {int(r["message_id"]) for r in await cur.fetchall()}
