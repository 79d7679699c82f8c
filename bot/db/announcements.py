"""The ``bot_announcements`` table: an announcement's row, written and found."""

from __future__ import annotations

import json
from datetime import date
from typing import TYPE_CHECKING, Any

from scheduler.triggers import DateStep

from ..models import LIVE_STATES, Announcement, AnnouncementState, Content, Destination, Draft
from ..parsing.skips import decode_skips, encode_skips
from .styles import decode_style, encode_style
from .table import Table, optional_int, state_in, state_values

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..parsing.skips import Skip

_ANNOUNCEMENT_COLUMNS = (
    "id, guild_id, local_id, channel_id, author_id, content, mention, allowed_mentions, "
    "first_ts, timezone, repeat_kind, repeat_cron, repeat_every, repeat_words, job_id, "
    "schedule_name, state, failure, last_message_id, created_at, updated_at, until_ts, revision, "
    "repeat_nth, repeat_step, title, silent, destination, publish, tags, repeat_skips, "
    "repeat_times, style"
)
_SELECT_ANNOUNCEMENT = f"SELECT {_ANNOUNCEMENT_COLUMNS} FROM bot_announcements "
_OPEN_STATES = (AnnouncementState.FAILED, AnnouncementState.PAUSED, AnnouncementState.SCHEDULED)
_CLOSED_STATES = (AnnouncementState.SENT, AnnouncementState.CANCELED, AnnouncementState.DONE)


def encode_nth(nth: Sequence[int]) -> str | None:
    """A rule's weekdays of the month as stored: ``"2,4"``, ``"-1"``; None when it has none."""
    return ",".join(str(n) for n in nth) if nth else None


def decode_nth(text: str | None) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split(",")) if text else ()


def encode_step(step: DateStep | None) -> str | None:
    """A rule's date step as stored (JSON), or None."""
    if step is None:
        return None
    return json.dumps({"count": step.count, "unit": step.unit, "since": step.since.isoformat()})


def decode_step(text: str | None) -> DateStep | None:
    if text is None:
        return None
    raw = json.loads(text)
    return DateStep(int(raw["count"]), raw["unit"], date.fromisoformat(raw["since"]))


def _announcement(row: Any) -> Announcement:
    every = row["repeat_every"]
    return Announcement(
        id=int(row["id"]),
        guild_id=int(row["guild_id"]),
        local_id=int(row["local_id"]),
        channel_id=int(row["channel_id"]),
        author_id=int(row["author_id"]),
        content=row["content"],
        mention=row["mention"],
        allowed_mentions=json.loads(row["allowed_mentions"]),
        first_ts=float(row["first_ts"]),
        timezone=row["timezone"],
        repeat_kind=row["repeat_kind"],
        repeat_cron=row["repeat_cron"],
        repeat_every=None if every is None else float(every),
        repeat_words=row["repeat_words"],
        job_id=optional_int(row["job_id"]),
        schedule_name=row["schedule_name"],
        state=AnnouncementState(row["state"]),
        failure=row["failure"],
        last_message_id=optional_int(row["last_message_id"]),
        created_at=float(row["created_at"]),
        updated_at=float(row["updated_at"]),
        until_ts=None if row["until_ts"] is None else float(row["until_ts"]),
        revision=int(row["revision"]),
        repeat_nth=decode_nth(row["repeat_nth"]),
        repeat_step=decode_step(row["repeat_step"]),
        rich=Content(
            title=row["title"],
            silent=bool(row["silent"]),
            destination=Destination(row["destination"]),
            publish=bool(row["publish"]),
            tags=tuple(int(t) for t in json.loads(row["tags"] or "[]")),
            style=decode_style(row["style"]),
        ),
        repeat_skips=decode_skips(row["repeat_skips"]),
        times=optional_int(row["repeat_times"]),
    )


def _what_it_posts(draft: Draft) -> tuple[Any, ...]:
    """The columns from ``content`` to ``repeat_step``, in table order, as a draft sets them
    (written alike by a new announcement and by an edit)."""
    rule = draft.repeat
    return (
        draft.content,
        draft.mention,
        json.dumps(draft.allowed_mentions, sort_keys=True),
        draft.first.timestamp(),
        draft.timezone,
        None if rule is None else rule.kind,
        None if rule is None else rule.cron,
        None if rule is None or rule.every is None else rule.every.total_seconds(),
        None if rule is None else rule.words,
        None if rule is None else encode_nth(rule.nth),
        None if rule is None else encode_step(rule.step),
    )


def _rich_values(rich: Content) -> tuple[Any, ...]:
    """``title, silent, destination, publish, tags, style`` as stored."""
    tags = json.dumps([str(t) for t in rich.tags]) if rich.tags else None
    return (
        rich.title,
        int(rich.silent),
        rich.destination.value,
        int(rich.publish),
        tags,
        encode_style(rich.style),
    )


_INSERT_ANNOUNCEMENTS = (
    "INSERT INTO bot_announcements (guild_id, local_id, channel_id, author_id, "
    "content, mention, allowed_mentions, first_ts, timezone, repeat_kind, "
    "repeat_cron, repeat_every, repeat_words, repeat_nth, repeat_step, state, "
    "created_at, updated_at, until_ts, title, silent, destination, publish, tags, style, "
    "repeat_skips, repeat_times) VALUES "
)
_ROW_PLACEHOLDERS = "(" + ", ".join("?" * 27) + ")"
_ROWS_PER_INSERT = 500
"""Rows (or ids) per statement in the bulk writes: 27 columns x 500 stays far below the
bound-parameter limits of SQLite (32,766) and PostgreSQL (32,767)."""


def _rule_extras(draft: Draft) -> tuple[Any, ...]:
    """``repeat_skips, repeat_times`` as a draft sets them."""
    rule = draft.repeat
    return (None if rule is None else encode_skips(rule.skips), draft.times)


def _new_row(draft: Draft, local_id: int, now: float) -> tuple[Any, ...]:
    """The values of a new scheduled announcement, in ``_INSERT_ANNOUNCEMENTS``' order."""
    return (
        draft.guild_id,
        local_id,
        draft.channel_id,
        draft.author_id,
        *_what_it_posts(draft),
        AnnouncementState.SCHEDULED.value,
        now,
        now,
        None if draft.until is None else draft.until.timestamp(),
        *_rich_values(draft.rich),
        *_rule_extras(draft),
    )


class AnnouncementTable(Table):
    """The announcements' rows."""

    __slots__ = ()

    async def _announcements(self, sql: str, params: Sequence[Any]) -> list[Announcement]:
        cur = await self.db.execute(sql, params)
        return [_announcement(r) for r in await cur.fetchall()]

    async def next_local_id(self, guild_id: int) -> int:
        """The number the guild's next announcement gets (one more than its highest)."""
        row = await self._one(
            "SELECT coalesce(max(local_id), 0) + 1 AS next_id FROM bot_announcements "
            "WHERE guild_id = ?",
            (guild_id,),
        )
        if row is None:
            raise RuntimeError("an aggregate always gives a row")
        return int(row["next_id"])

    async def insert_announcement(self, draft: Draft, local_id: int, now: float) -> int:
        """Write a new scheduled announcement; returns its id."""
        row = await self._one(
            _INSERT_ANNOUNCEMENTS + _ROW_PLACEHOLDERS + " RETURNING id",
            _new_row(draft, local_id, now),
        )
        if row is None:
            raise RuntimeError("RETURNING gives the inserted row")
        return int(row["id"])

    async def insert_announcements(
        self, numbered: Sequence[tuple[Draft, int]], now: float
    ) -> list[int]:
        """Write new scheduled announcements, each ``(draft, local_id)`` as
        :meth:`insert_announcement` would, a few hundred rows a statement; returns their ids
        in the same order."""
        ids: list[int] = []
        for start in range(0, len(numbered), _ROWS_PER_INSERT):
            chunk = numbered[start : start + _ROWS_PER_INSERT]
            params: list[Any] = []
            for draft, local_id in chunk:
                params += _new_row(draft, local_id, now)
            cur = await self.db.execute(
                _INSERT_ANNOUNCEMENTS + ", ".join([_ROW_PLACEHOLDERS] * len(chunk))
                + " RETURNING id, guild_id, local_id",
                params,
            )  # fmt: skip
            by_number = {
                (int(r["guild_id"]), int(r["local_id"])): int(r["id"]) for r in await cur.fetchall()
            }
            ids += [by_number[(d.guild_id, n)] for d, n in chunk]
        return ids

    async def next_local_ids(self, guild_ids: Sequence[int]) -> dict[int, int]:
        """:meth:`next_local_id` of each guild, a few hundred guilds a statement."""
        out = dict.fromkeys(guild_ids, 1)
        for start in range(0, len(guild_ids), _ROWS_PER_INSERT):
            chunk = guild_ids[start : start + _ROWS_PER_INSERT]
            cur = await self.db.execute(
                "SELECT guild_id, max(local_id) + 1 AS next_id FROM bot_announcements "
                f"WHERE guild_id IN ({', '.join('?' * len(chunk))}) GROUP BY guild_id",
                chunk,
            )
            for r in await cur.fetchall():
                out[int(r["guild_id"])] = int(r["next_id"])
        return out

    async def set_jobs(self, pairs: Sequence[tuple[int, int | None]]) -> None:
        """:meth:`set_job` for each ``(announcement_id, job_id)``, in one call."""
        if pairs:
            await self.db.executemany(
                "UPDATE bot_announcements SET job_id = ? WHERE id = ?",
                [(job_id, ann_id) for ann_id, job_id in pairs],
            )

    async def set_schedules(self, pairs: Sequence[tuple[int, str | None]]) -> None:
        """:meth:`set_schedule` for each ``(announcement_id, schedule_name)``, in one call."""
        if pairs:
            await self.db.executemany(
                "UPDATE bot_announcements SET schedule_name = ? WHERE id = ?",
                [(name, ann_id) for ann_id, name in pairs],
            )

    async def announcements_by_ids(self, ids: Sequence[int]) -> list[Announcement]:
        """The announcements with these (global) ids, in the same order (each must exist)."""
        found: dict[int, Announcement] = {}
        for start in range(0, len(ids), _ROWS_PER_INSERT):
            chunk = ids[start : start + _ROWS_PER_INSERT]
            for a in await self._announcements(
                _SELECT_ANNOUNCEMENT + f"WHERE id IN ({', '.join('?' * len(chunk))})", chunk
            ):
                found[a.id] = a
        return [found[i] for i in ids]

    async def set_job(self, announcement_id: int, job_id: int | None) -> None:
        """Record the job that delivers a one-off announcement (None: it has none)."""
        await self.db.execute(
            "UPDATE bot_announcements SET job_id = ? WHERE id = ?", (job_id, announcement_id)
        )

    async def set_schedule(self, announcement_id: int, schedule_name: str | None) -> None:
        """Record the schedule that delivers a recurring announcement (None: it has none)."""
        await self.db.execute(
            "UPDATE bot_announcements SET schedule_name = ? WHERE id = ?",
            (schedule_name, announcement_id),
        )

    async def update_announcement(
        self, announcement_id: int, draft: Draft, revision: int, now: float
    ) -> None:
        """Write an edit: what the announcement posts, where, when and how it repeats (its
        id, guild, author, state, until and job or schedule are left as they are)."""
        await self.db.execute(
            "UPDATE bot_announcements SET channel_id = ?, content = ?, mention = ?, "
            "allowed_mentions = ?, first_ts = ?, timezone = ?, repeat_kind = ?, "
            "repeat_cron = ?, repeat_every = ?, repeat_words = ?, repeat_nth = ?, "
            "repeat_step = ?, revision = ?, updated_at = ?, title = ?, silent = ?, "
            "destination = ?, publish = ?, tags = ?, style = ?, repeat_skips = ?, repeat_times = ? "
            "WHERE id = ?",
            (
                draft.channel_id,
                *_what_it_posts(draft),
                revision,
                now,
                *_rich_values(draft.rich),
                *_rule_extras(draft),
                announcement_id,
            ),
        )

    async def announcement(self, announcement_id: int) -> Announcement | None:
        """The announcement with this (global) id, or None."""
        row = await self._one(_SELECT_ANNOUNCEMENT + "WHERE id = ?", (announcement_id,))
        return None if row is None else _announcement(row)

    async def lock_announcement(self, announcement_id: int) -> bool:
        """Write-lock the announcement's row until the commit (on PostgreSQL, forgetting its
        server waits for it, and it for that: ``lock_guild_announcements``); False (nothing
        locked) if it is no more."""
        row = await self._one(
            "UPDATE bot_announcements SET id = id WHERE id = ? RETURNING id", (announcement_id,)
        )
        return row is not None

    async def announcement_by_local_id(self, guild_id: int, local_id: int) -> Announcement | None:
        """The guild's announcement with this per-guild number, or None."""
        row = await self._one(
            _SELECT_ANNOUNCEMENT + "WHERE guild_id = ? AND local_id = ?", (guild_id, local_id)
        )
        return None if row is None else _announcement(row)

    async def live_announcements(self, guild_id: int, limit: int) -> list[Announcement]:
        """The guild's scheduled and paused announcements, newest first."""
        return await self._announcements(
            _SELECT_ANNOUNCEMENT + f"WHERE guild_id = ? AND {state_in(LIVE_STATES)} "
            "ORDER BY local_id DESC LIMIT ?",
            (guild_id, *state_values(LIVE_STATES), limit),
        )

    async def set_state(self, announcement_id: int, state: AnnouncementState, now: float) -> None:
        """Move an announcement to ``state``."""
        await self.db.execute(
            "UPDATE bot_announcements SET state = ?, updated_at = ? WHERE id = ?",
            (state.value, now, announcement_id),
        )

    async def set_resumed(self, announcement_id: int, now: float) -> None:
        """Move an announcement back to ``scheduled``, forgetting why it was paused."""
        await self.db.execute(
            "UPDATE bot_announcements SET state = ?, failure = NULL, updated_at = ? WHERE id = ?",
            (AnnouncementState.SCHEDULED.value, now, announcement_id),
        )

    async def set_skips(self, announcement_id: int, skips: Sequence[Skip], now: float) -> None:
        """Keep a recurring announcement's skipped spans (its schedule is made again with
        them by the caller)."""
        await self.db.execute(
            "UPDATE bot_announcements SET repeat_skips = ?, updated_at = ? WHERE id = ?",
            (encode_skips(skips), now, announcement_id),
        )

    async def set_until(self, announcement_id: int, until_ts: float | None, now: float) -> None:
        """Set (or clear, with None) the time after which a recurring announcement stops."""
        await self.db.execute(
            "UPDATE bot_announcements SET until_ts = ?, updated_at = ? WHERE id = ?",
            (until_ts, now, announcement_id),
        )

    async def set_failure(
        self, announcement_id: int, state: AnnouncementState, failure: str, now: float
    ) -> None:
        """Move an announcement to ``state`` with the reason its last occurrence failed."""
        await self.db.execute(
            "UPDATE bot_announcements SET state = ?, failure = ?, updated_at = ? WHERE id = ?",
            (state.value, failure, now, announcement_id),
        )

    async def record_posted(self, announcement_id: int, message_id: int, now: float) -> None:
        """Record the announcement's latest message and clear its failure; a one-off
        scheduled announcement is then sent."""
        await self.db.execute(
            "UPDATE bot_announcements SET last_message_id = ?, failure = NULL, updated_at = ?, "
            "state = CASE WHEN repeat_kind IS NULL AND state = ? THEN ? ELSE state END "
            "WHERE id = ?",
            (
                message_id,
                now,
                AnnouncementState.SCHEDULED.value,
                AnnouncementState.SENT.value,
                announcement_id,
            ),
        )
