"""The previous post: ``bot_post_settings`` (pin, replace, delete after), ``bot_posts`` (each
post up, with what is still to be done to it) and ``bot_post_claims`` (the one job working on
an announcement's posts)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..models import Tidy
from .table import Table

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass(frozen=True, slots=True)
class PostRow:
    """One post of an announcement, as recorded."""

    announcement_id: int
    message_id: int
    guild_id: int
    channel_id: int
    posted_at: float
    pin_state: str | None
    """None (never asked), ``pin`` (to pin: the intent), ``pinned``, ``unpin`` (to unpin),
    ``unpinned``, ``gone`` (deleted before it could be pinned) or ``failed``."""
    remove_state: str | None
    """None (kept, or ``delete_at`` still to come), ``delete`` (to delete: the intent),
    ``deleted``, ``gone`` (deleted by someone else first) or ``failed``."""
    delete_at: float | None
    error: str | None


PIN_PENDING = ("pin", "unpin")
SETTLED_PIN = (None, "unpinned", "gone", "failed")
SETTLED_REMOVE = ("deleted", "gone", "failed")

_COLUMNS = (
    "announcement_id, message_id, guild_id, channel_id, posted_at, pin_state, remove_state, "
    "delete_at, error"
)


def latest_in_each_channel(posts: Sequence[PostRow]) -> list[PostRow]:
    """Of ``posts`` (oldest first), the latest in each channel: the announcement's own and
    each of its other places (``also_in``) have a latest post of their own."""
    latest: dict[int, PostRow] = {}
    for post in posts:
        latest[post.channel_id] = post
    return sorted(latest.values(), key=lambda p: (p.posted_at, p.message_id))


def _post(r: Any) -> PostRow:
    return PostRow(
        announcement_id=int(r["announcement_id"]),
        message_id=int(r["message_id"]),
        guild_id=int(r["guild_id"]),
        channel_id=int(r["channel_id"]),
        posted_at=float(r["posted_at"]),
        pin_state=r["pin_state"],
        remove_state=r["remove_state"],
        delete_at=None if r["delete_at"] is None else float(r["delete_at"]),
        error=r["error"],
    )


class PostTables(Table):
    """The previous post's settings, the posts and their claims."""

    __slots__ = ()

    # --- settings ----------------------------------------------------------------------------

    async def tidy(self, announcement_id: int) -> Tidy:
        """What becomes of the announcement's posts (nothing: the default)."""
        row = await self._one(
            "SELECT pin, replace_previous, delete_after_s FROM bot_post_settings "
            "WHERE announcement_id = ?",
            (announcement_id,),
        )
        if row is None:
            return Tidy()
        after = row["delete_after_s"]
        return Tidy(
            bool(row["pin"]), bool(row["replace_previous"]), None if after is None else float(after)
        )

    async def tidies(self, announcement_ids: Sequence[int]) -> dict[int, Tidy]:
        """What becomes of the posts of those of the announcements that set any of it."""
        found: dict[int, Tidy] = {}
        ids = list(announcement_ids)
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ", ".join("?" * len(part))
            cur = await self.db.execute(
                "SELECT announcement_id, pin, replace_previous, delete_after_s "
                f"FROM bot_post_settings WHERE announcement_id IN ({marks})",
                tuple(part),
            )
            for r in await cur.fetchall():
                after = r["delete_after_s"]
                found[int(r["announcement_id"])] = Tidy(
                    bool(r["pin"]),
                    bool(r["replace_previous"]),
                    None if after is None else float(after),
                )
        return found

    async def set_tidy(self, announcement_id: int, guild_id: int, tidy: Tidy) -> None:
        await self.db.execute(
            "DELETE FROM bot_post_settings WHERE announcement_id = ?", (announcement_id,)
        )
        if tidy.on:
            await self.db.execute(
                "INSERT INTO bot_post_settings (announcement_id, guild_id, pin, "
                "replace_previous, delete_after_s) VALUES (?, ?, ?, ?, ?)",
                (announcement_id, guild_id, int(tidy.pin), int(tidy.replace), tidy.delete_after),
            )

    # --- posts -------------------------------------------------------------------------------

    async def posts_of(self, announcement_id: int) -> list[PostRow]:
        """The announcement's recorded posts, oldest first."""
        cur = await self.db.execute(
            f"SELECT {_COLUMNS} FROM bot_posts WHERE announcement_id = ? "
            "ORDER BY posted_at, message_id",
            (announcement_id,),
        )
        return [_post(r) for r in await cur.fetchall()]

    async def add_post(
        self,
        announcement_id: int,
        message_id: int,
        guild_id: int,
        channel_id: int,
        posted_at: float,
        *,
        pin: bool,
        delete_at: float | None,
    ) -> bool:
        """Record a post up (``pin``: to be pinned); False if it was recorded already."""
        cur = await self.db.execute(
            "INSERT INTO bot_posts (announcement_id, message_id, guild_id, channel_id, "
            "posted_at, pin_state, delete_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (announcement_id, message_id) DO NOTHING RETURNING message_id",
            (
                announcement_id,
                message_id,
                guild_id,
                channel_id,
                posted_at,
                "pin" if pin else None,
                delete_at,
            ),
        )
        return bool(await cur.fetchall())

    async def unpin_others(
        self, announcement_id: int, keep: int | None, *, channel_id: int | None = None
    ) -> int:
        """Every post of the announcement but ``keep`` (in ``channel_id``, if given: each
        place keeps its own latest post pinned) that is pinned or to be pinned: to be
        unpinned (a pin still to come may be under way: unpinning it after is harmless)."""
        where, params = "", [announcement_id, keep if keep is not None else -1]
        if channel_id is not None:
            where = " AND channel_id = ?"
            params.append(channel_id)
        cur = await self.db.execute(
            "UPDATE bot_posts SET pin_state = 'unpin' WHERE announcement_id = ? "
            f"AND message_id != ? AND pin_state IN ('pin', 'pinned'){where} RETURNING message_id",
            tuple(params),
        )
        return len(await cur.fetchall())

    async def pin_again(self, announcement_id: int, message_id: int) -> bool:
        """The post is to be pinned (again) unless it is pinned or gone."""
        cur = await self.db.execute(
            "UPDATE bot_posts SET pin_state = 'pin' WHERE announcement_id = ? "
            "AND message_id = ? AND (pin_state IS NULL OR pin_state IN ('unpin', 'unpinned', "
            "'failed')) RETURNING message_id",
            (announcement_id, message_id),
        )
        return bool(await cur.fetchall())

    async def mark_delete(self, announcement_id: int, message_id: int) -> bool:
        """The post is to be deleted (the intent); False if it is deleted or being so."""
        cur = await self.db.execute(
            "UPDATE bot_posts SET remove_state = 'delete' WHERE announcement_id = ? "
            "AND message_id = ? AND remove_state IS NULL RETURNING message_id",
            (announcement_id, message_id),
        )
        return bool(await cur.fetchall())

    async def set_delete_times(self, announcement_id: int, after: float | None) -> list[PostRow]:
        """Each post still kept is deleted ``after`` seconds after it went up (None: kept);
        the posts whose time changed."""
        if after is None:
            cur = await self.db.execute(
                "UPDATE bot_posts SET delete_at = NULL WHERE announcement_id = ? "
                f"AND remove_state IS NULL AND delete_at IS NOT NULL RETURNING {_COLUMNS}",
                (announcement_id,),
            )
        else:
            cur = await self.db.execute(
                "UPDATE bot_posts SET delete_at = posted_at + ? WHERE announcement_id = ? "
                f"AND remove_state IS NULL RETURNING {_COLUMNS}",
                (after, announcement_id),
            )
        return [_post(r) for r in await cur.fetchall()]

    async def step_done(
        self,
        announcement_id: int,
        message_id: int,
        column: str,
        was: str,
        now_state: str,
        error: str | None = None,
    ) -> bool:
        """The post's step ``column`` (``pin_state``/``remove_state``) went from ``was`` to
        ``now_state`` (False: it was changed meanwhile, e.g. a pin superseded)."""
        if column not in ("pin_state", "remove_state"):
            raise ValueError(column)
        cur = await self.db.execute(
            f"UPDATE bot_posts SET {column} = ?, error = COALESCE(?, error) "
            f"WHERE announcement_id = ? AND message_id = ? AND {column} = ? RETURNING message_id",
            (now_state, error, announcement_id, message_id, was),
        )
        return bool(await cur.fetchall())

    async def deleted_due(self, announcement_id: int, message_id: int, now: float) -> bool:
        """A post whose ``delete_at`` came: its deletion is the intent now."""
        cur = await self.db.execute(
            "UPDATE bot_posts SET remove_state = 'delete' WHERE announcement_id = ? "
            "AND message_id = ? AND remove_state IS NULL AND delete_at IS NOT NULL "
            "AND delete_at <= ? RETURNING message_id",
            (announcement_id, message_id, now),
        )
        return bool(await cur.fetchall())

    async def prune_posts(self, announcement_id: int, keep: Sequence[int]) -> int:
        """Forget the announcement's posts with nothing left to do (but those in ``keep``)."""
        marks = ", ".join("?" * len(keep)) if keep else "-1"
        cur = await self.db.execute(
            "DELETE FROM bot_posts WHERE announcement_id = ? "
            f"AND message_id NOT IN ({marks}) "
            "AND (pin_state IS NULL OR pin_state IN ('unpinned', 'gone', 'failed')) "
            "AND (remove_state IN ('deleted', 'gone', 'failed') OR (remove_state IS NULL "
            "AND delete_at IS NULL)) RETURNING message_id",
            (announcement_id, *keep),
        )
        return len(await cur.fetchall())

    async def post_removed(self, announcement_id: int, message_id: int) -> bool:
        """Whether the post was deleted (or is to be) as the announcement's settings say
        (``replace``, ``delete_after``), or found deleted by someone else meanwhile."""
        row = await self._one(
            "SELECT remove_state FROM bot_posts WHERE announcement_id = ? AND message_id = ?",
            (announcement_id, message_id),
        )
        return row is not None and row["remove_state"] in ("delete", "deleted", "gone")

    async def post_problem(self, announcement_id: int) -> PostRow | None:
        """The latest post of the announcement whose pin, unpin or deletion Discord refused."""
        return _post_or_none(
            await self._one(
                f"SELECT {_COLUMNS} FROM bot_posts WHERE announcement_id = ? AND "
                "(pin_state = 'failed' OR remove_state = 'failed') "
                "ORDER BY posted_at DESC, message_id DESC LIMIT 1",
                (announcement_id,),
            )
        )

    # --- claims ------------------------------------------------------------------------------

    async def claim_posts(
        self,
        announcement_id: int,
        guild_id: int,
        job_id: int,
        attempt: int,
        now: float,
        until: float,
    ) -> bool:
        """Take the announcement's posts for this run of job ``job_id`` until ``until``:
        False when another job's run holds them (an earlier run of this job is taken over)."""
        await self.db.execute(
            "DELETE FROM bot_post_claims WHERE announcement_id = ? AND (job_id = ? OR "
            "until_ts < ?)",
            (announcement_id, job_id, now),
        )
        cur = await self.db.execute(
            "INSERT INTO bot_post_claims (announcement_id, guild_id, job_id, attempt, until_ts) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (announcement_id) DO NOTHING "
            "RETURNING announcement_id",
            (announcement_id, guild_id, job_id, attempt, until),
        )
        return bool(await cur.fetchall())

    async def release_posts(self, announcement_id: int, job_id: int, attempt: int) -> None:
        """This run lets the posts go (a later run of its job holding them keeps them)."""
        await self.db.execute(
            "DELETE FROM bot_post_claims WHERE announcement_id = ? AND job_id = ? AND attempt = ?",
            (announcement_id, job_id, attempt),
        )


def _post_or_none(row: Any) -> PostRow | None:
    return None if row is None else _post(row)
