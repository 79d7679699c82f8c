"""The ``bot_extra_posts`` table: the posts ``/postnow`` makes (one row per use of the
command, written with it; the intent before the send, the message after)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..models import Shown
from .table import Table, optional_int


@dataclass(frozen=True, slots=True)
class ExtraPost:
    """One extra post, as recorded."""

    id: int
    announcement_id: int
    guild_id: int
    fire_ts: float
    """The occurrence whose text it posts."""
    channel_id: int
    nonce: str
    state: str
    """``queued`` (asked for), ``sending`` (an attempt begun), ``sent`` or ``failed``."""
    first_attempt_at: float | None
    shown: Shown | None
    """What its first attempt showed (its language, its event); None before it."""
    message_id: int | None
    error: str | None


_COLUMNS = (
    "id, announcement_id, guild_id, fire_ts, channel_id, nonce, state, first_attempt_at, "
    "shown_locale, shown_event_id, message_id, error"
)


def _extra(row: Any) -> ExtraPost:
    shown = None
    if row["shown_locale"] is not None:  # ('' is English)
        shown = Shown(row["shown_locale"] or None, optional_int(row["shown_event_id"]))
    return ExtraPost(
        id=int(row["id"]),
        announcement_id=int(row["announcement_id"]),
        guild_id=int(row["guild_id"]),
        fire_ts=float(row["fire_ts"]),
        channel_id=int(row["channel_id"]),
        nonce=row["nonce"],
        state=row["state"],
        first_attempt_at=_float_or_none(row["first_attempt_at"]),
        shown=shown,
        message_id=optional_int(row["message_id"]),
        error=row["error"],
    )


class ExtraPostTable(Table):
    """The extra posts of ``/postnow``."""

    __slots__ = ()

    async def add_extra_post(
        self,
        *,
        announcement_id: int,
        guild_id: int,
        key: str,
        fire_ts: float,
        channel_id: int,
        nonce: str,
        actor_id: int | None,
        now: float,
    ) -> int:
        """Record an extra post asked for (``queued``); its id."""
        row = await self._one(
            "INSERT INTO bot_extra_posts (announcement_id, guild_id, request_key, fire_ts, "
            "channel_id, nonce, state, actor_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?) RETURNING id",
            (announcement_id, guild_id, key, fire_ts, channel_id, nonce, actor_id, now),
        )
        if row is None:
            raise RuntimeError("INSERT … RETURNING returned nothing")
        return int(row["id"])

    async def extra_post(self, extra_id: int) -> ExtraPost | None:
        return _extra_or_none(
            await self._one(f"SELECT {_COLUMNS} FROM bot_extra_posts WHERE id = ?", (extra_id,))
        )

    async def begin_extra_post(self, extra_id: int, now: float, shown: Shown) -> None:
        """An attempt begins: ``sending``, with the time of the first attempt and what it
        shows (a re-send keeps the first's)."""
        await self.db.execute(
            "UPDATE bot_extra_posts SET state = 'sending', first_attempt_at = ?, "
            "shown_locale = ?, shown_event_id = ? WHERE id = ? AND state = 'queued'",
            (now, shown.locale or "", shown.event_id, extra_id),
        )

    async def mark_extra_sent(self, extra_id: int, message_id: int, now: float) -> bool:
        """Recorded sent (False: it was ended otherwise meanwhile)."""
        cur = await self.db.execute(
            "UPDATE bot_extra_posts SET state = 'sent', message_id = ?, sent_at = ?, "
            "error = NULL WHERE id = ? AND state = 'sending' RETURNING id",
            (message_id, now, extra_id),
        )
        return bool(await cur.fetchall())

    async def mark_extra_failed(self, extra_id: int, error: str) -> bool:
        """Recorded failed with ``error`` (False: it was recorded sent meanwhile)."""
        cur = await self.db.execute(
            "UPDATE bot_extra_posts SET state = 'failed', error = ? "
            "WHERE id = ? AND state IN ('queued', 'sending') RETURNING id",
            (error, extra_id),
        )
        return bool(await cur.fetchall())

    async def note_extra_error(self, extra_id: int, error: str) -> None:
        """A transient failure of an attempt (it is tried again)."""
        await self.db.execute(
            "UPDATE bot_extra_posts SET error = ? WHERE id = ?", (error, extra_id)
        )


def _extra_or_none(row: Any) -> ExtraPost | None:
    return None if row is None else _extra(row)


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)
