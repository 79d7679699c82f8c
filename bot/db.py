"""The bot's data layer: every SQL statement on the bot's tables, behind named methods.

:class:`BotDb` wraps a connection the scheduler hands out, ``ctx.db`` inside
``sched.transaction()`` / ``ctx.run_mutation`` or the one ``sched.reader()`` yields, so the
bot's writes commit or roll back together with the scheduler's (a delivery's bookkeeping and
its job's outcome, an announcement and its job or schedule): that shared transaction is what
the exactly-once guarantee rests on. Statements use ``?`` placeholders (the ``Db`` protocol
translates them for PostgreSQL) and rows are read by column name. No rules live here: what a
state means is decided in :mod:`bot.announcements` and :mod:`bot.delivery`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date
from typing import Any

from scheduler import Db
from scheduler.triggers import DateStep

from .models import (
    LIVE_STATES,
    Announcement,
    AnnouncementState,
    Content,
    DashboardSession,
    DeliveryRecord,
    DeliveryState,
    Destination,
    Draft,
    GuildSettings,
    HistoryAction,
    HistoryEntry,
    Image,
    PastDelivery,
    PublishState,
)

_ANNOUNCEMENT_COLUMNS = (
    "id, guild_id, local_id, channel_id, author_id, content, mention, allowed_mentions, "
    "first_ts, timezone, repeat_kind, repeat_cron, repeat_every, repeat_words, job_id, "
    "schedule_name, state, failure, last_message_id, created_at, updated_at, until_ts, revision, "
    "repeat_nth, repeat_step, title, silent, destination, publish, tags"
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


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


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
        job_id=_optional_int(row["job_id"]),
        schedule_name=row["schedule_name"],
        state=AnnouncementState(row["state"]),
        failure=row["failure"],
        last_message_id=_optional_int(row["last_message_id"]),
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
        ),
    )


def _rich_values(rich: Content) -> tuple[Any, ...]:
    """``title, silent, destination, publish, tags`` as stored."""
    tags = json.dumps([str(t) for t in rich.tags]) if rich.tags else None
    return (rich.title, int(rich.silent), rich.destination.value, int(rich.publish), tags)


_PAST_DELIVERY_COLUMNS = (
    "fire_ts, state, message_id, sent_at, late_by, error, revision, update_error, "
    "publish_state, publish_error, thread_id"
)


def _past_delivery(r: Any) -> PastDelivery:
    return PastDelivery(
        fire_ts=float(r["fire_ts"]),
        state=DeliveryState(r["state"]),
        message_id=_optional_int(r["message_id"]),
        sent_at=None if r["sent_at"] is None else float(r["sent_at"]),
        late_by=None if r["late_by"] is None else float(r["late_by"]),
        error=r["error"],
        revision=_optional_int(r["revision"]),
        update_error=r["update_error"],
        publish_state=None if r["publish_state"] is None else PublishState(r["publish_state"]),
        publish_error=r["publish_error"],
        thread_id=_optional_int(r["thread_id"]),
    )


def _state_in(states: Sequence[str]) -> str:
    """``state IN (?, …)`` with one placeholder per state."""
    return "state IN (" + ", ".join("?" * len(states)) + ")"


def _values(states: Sequence[str]) -> list[str]:
    """States as plain strings, the type every driver binds."""
    return [str(s) for s in states]


class BotDb:
    """The bot's tables, read and written on one connection of the scheduler's store."""

    __slots__ = ("db",)

    def __init__(self, db: Db) -> None:
        self.db = db

    async def _one(self, sql: str, params: Sequence[Any]) -> Any | None:
        cur = await self.db.execute(sql, params)
        return await cur.fetchone()

    async def _announcements(self, sql: str, params: Sequence[Any]) -> list[Announcement]:
        cur = await self.db.execute(sql, params)
        return [_announcement(r) for r in await cur.fetchall()]

    # --- guild settings ----------------------------------------------------------------------

    async def guild_settings(self, guild_id: int) -> GuildSettings | None:
        """The guild's settings row, or None if it has none yet."""
        row = await self._one(
            "SELECT timezone, manager_role_id, log_channel_id FROM bot_guild_settings "
            "WHERE guild_id = ?",
            (guild_id,),
        )
        if row is None:
            return None
        return GuildSettings(
            guild_id,
            row["timezone"],
            _optional_int(row["manager_role_id"]),
            _optional_int(row["log_channel_id"]),
        )

    async def save_guild_settings(self, settings: GuildSettings, now: float) -> None:
        """Write the guild's settings, creating or replacing its row."""
        await self.db.execute(
            "INSERT INTO bot_guild_settings "
            "(guild_id, timezone, manager_role_id, log_channel_id, updated_at) "
            "VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (guild_id) DO UPDATE SET timezone = excluded.timezone, "
            "manager_role_id = excluded.manager_role_id, "
            "log_channel_id = excluded.log_channel_id, updated_at = excluded.updated_at",
            (
                settings.guild_id,
                settings.timezone,
                settings.manager_role_id,
                settings.log_channel_id,
                now,
            ),
        )

    async def lock_guild(self, guild_id: int, now: float) -> None:
        """Write-lock the guild's settings row (creating it if need be) until the commit."""
        await self.db.execute(
            "INSERT INTO bot_guild_settings (guild_id, updated_at) VALUES (?, ?) "
            "ON CONFLICT (guild_id) DO UPDATE SET guild_id = excluded.guild_id",
            (guild_id, now),
        )

    # --- announcements -----------------------------------------------------------------------

    async def next_local_id(self, guild_id: int) -> int:
        """The number the guild's next announcement gets (one more than its highest)."""
        row = await self._one(
            "SELECT coalesce(max(local_id), 0) + 1 AS next_id FROM bot_announcements "
            "WHERE guild_id = ?",
            (guild_id,),
        )
        assert row is not None  # an aggregate always gives a row
        return int(row["next_id"])

    async def insert_announcement(self, draft: Draft, local_id: int, now: float) -> int:
        """Write a new scheduled announcement; returns its id."""
        rule = draft.repeat
        row = await self._one(
            "INSERT INTO bot_announcements (guild_id, local_id, channel_id, author_id, "
            "content, mention, allowed_mentions, first_ts, timezone, repeat_kind, "
            "repeat_cron, repeat_every, repeat_words, repeat_nth, repeat_step, state, "
            "created_at, updated_at, until_ts, title, silent, destination, publish, tags) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "RETURNING id",
            (
                draft.guild_id,
                local_id,
                draft.channel_id,
                draft.author_id,
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
                AnnouncementState.SCHEDULED.value,
                now,
                now,
                None if draft.until is None else draft.until.timestamp(),
                *_rich_values(draft.rich),
            ),
        )
        assert row is not None  # RETURNING gives the inserted row
        return int(row["id"])

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
        rule = draft.repeat
        await self.db.execute(
            "UPDATE bot_announcements SET channel_id = ?, content = ?, mention = ?, "
            "allowed_mentions = ?, first_ts = ?, timezone = ?, repeat_kind = ?, "
            "repeat_cron = ?, repeat_every = ?, repeat_words = ?, repeat_nth = ?, "
            "repeat_step = ?, revision = ?, updated_at = ?, title = ?, silent = ?, "
            "destination = ?, publish = ?, tags = ? WHERE id = ?",
            (
                draft.channel_id,
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
                revision,
                now,
                *_rich_values(draft.rich),
                announcement_id,
            ),
        )

    async def announcement(self, announcement_id: int) -> Announcement | None:
        """The announcement with this (global) id, or None."""
        row = await self._one(_SELECT_ANNOUNCEMENT + "WHERE id = ?", (announcement_id,))
        return None if row is None else _announcement(row)

    async def announcement_by_local_id(self, guild_id: int, local_id: int) -> Announcement | None:
        """The guild's announcement with this per-guild number, or None."""
        row = await self._one(
            _SELECT_ANNOUNCEMENT + "WHERE guild_id = ? AND local_id = ?", (guild_id, local_id)
        )
        return None if row is None else _announcement(row)

    async def live_announcements(self, guild_id: int, limit: int) -> list[Announcement]:
        """The guild's scheduled and paused announcements, newest first."""
        return await self._announcements(
            _SELECT_ANNOUNCEMENT + f"WHERE guild_id = ? AND {_state_in(LIVE_STATES)} "
            "ORDER BY local_id DESC LIMIT ?",
            (guild_id, *_values(LIVE_STATES), limit),
        )

    async def announcements_to_choose(
        self,
        guild_id: int,
        states: Sequence[str] | None,
        *,
        recurring: bool | None,
        id_prefix: str,
        limit: int,
    ) -> list[Announcement]:
        """The guild's announcements an ``id`` option may offer, newest first: in ``states``
        (None: any), recurring or one-off only if ``recurring`` says so, numbered from
        ``id_prefix`` (digits; "" for any)."""
        where = ["guild_id = ?"]
        params: list[Any] = [guild_id]
        if states is not None:
            where.append(_state_in(states))
            params += _values(states)
        if recurring is not None:
            where.append("repeat_kind IS NOT NULL" if recurring else "repeat_kind IS NULL")
        if id_prefix:
            where.append("CAST(local_id AS TEXT) LIKE ?")
            params.append(id_prefix + "%")
        return await self._announcements(
            _SELECT_ANNOUNCEMENT + "WHERE " + " AND ".join(where) + " "
            "ORDER BY local_id DESC LIMIT ?",
            (*params, limit),
        )

    async def count_announcements(self, guild_id: int) -> int:
        """How many announcements the guild has, in every state."""
        row = await self._one(
            "SELECT count(*) AS total FROM bot_announcements WHERE guild_id = ?", (guild_id,)
        )
        return 0 if row is None else int(row["total"])

    async def open_announcements(self, guild_id: int) -> list[Announcement]:
        """The guild's failed, paused and scheduled announcements, last updated first."""
        return await self._announcements(
            _SELECT_ANNOUNCEMENT + f"WHERE guild_id = ? AND {_state_in(_OPEN_STATES)} "
            "ORDER BY updated_at DESC, local_id DESC",
            (guild_id, *_values(_OPEN_STATES)),
        )

    async def closed_announcements(
        self, guild_id: int, limit: int, offset: int
    ) -> list[Announcement]:
        """A page of the guild's sent, canceled and ended announcements, last updated first."""
        return await self._announcements(
            _SELECT_ANNOUNCEMENT + f"WHERE guild_id = ? AND {_state_in(_CLOSED_STATES)} "
            "ORDER BY updated_at DESC, local_id DESC LIMIT ? OFFSET ?",
            (guild_id, *_values(_CLOSED_STATES), limit, offset),
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

    # --- deliveries (one row per occurrence) -------------------------------------------------

    async def delivery(self, announcement_id: int, fire_ts: float) -> DeliveryRecord | None:
        """What is recorded of the occurrence's delivery, or None before its first attempt."""
        row = await self._one(
            "SELECT state, message_id, first_attempt_at, nonce, thread_id FROM bot_deliveries "
            "WHERE announcement_id = ? AND fire_ts = ?",
            (announcement_id, fire_ts),
        )
        if row is None:
            return None
        return DeliveryRecord(
            state=DeliveryState(row["state"]),
            message_id=_optional_int(row["message_id"]),
            first_attempt_at=float(row["first_attempt_at"]),
            nonce=row["nonce"],
            thread_id=_optional_int(row["thread_id"]),
        )

    async def begin_delivery(
        self, announcement_id: int, fire_ts: float, job_id: int, nonce: str, now: float
    ) -> None:
        """Record the occurrence's first attempt (state ``sending``) before it is sent."""
        await self.db.execute(
            "INSERT INTO bot_deliveries (announcement_id, fire_ts, job_id, nonce, state, "
            "first_attempt_at) VALUES (?, ?, ?, ?, ?, ?)",
            (announcement_id, fire_ts, job_id, nonce, DeliveryState.SENDING.value, now),
        )

    async def retry_delivery(self, announcement_id: int, fire_ts: float, job_id: int) -> None:
        """Count one more attempt at the occurrence, by ``job_id``."""
        await self.db.execute(
            "UPDATE bot_deliveries SET attempts = attempts + 1, job_id = ? "
            "WHERE announcement_id = ? AND fire_ts = ?",
            (job_id, announcement_id, fire_ts),
        )

    async def record_missed(
        self,
        announcement_id: int,
        fire_ts: float,
        job_id: int,
        nonce: str,
        now: float,
        reason: str,
    ) -> None:
        """Record the occurrence missed (found too late to post) without sending it."""
        await self.db.execute(
            "INSERT INTO bot_deliveries (announcement_id, fire_ts, job_id, nonce, state, "
            "first_attempt_at, error) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (announcement_id, fire_ts, job_id, nonce, DeliveryState.MISSED.value, now, reason),
        )

    async def record_skipped(
        self, announcement_id: int, fire_ts: float, nonce: str, now: float, reason: str
    ) -> None:
        """Record the occurrence skipped before it came due: its job will post nothing."""
        await self.db.execute(
            "INSERT INTO bot_deliveries (announcement_id, fire_ts, nonce, state, "
            "first_attempt_at, error) VALUES (?, ?, ?, ?, ?, ?)",
            (announcement_id, fire_ts, nonce, DeliveryState.SKIPPED.value, now, reason),
        )

    async def mark_sent(
        self,
        announcement_id: int,
        fire_ts: float,
        message_id: int,
        now: float,
        late_by: float,
        revision: int,
    ) -> None:
        """Record the occurrence sent as ``message_id``, showing the announcement's
        ``revision``."""
        await self.db.execute(
            "UPDATE bot_deliveries SET state = ?, message_id = ?, sent_at = ?, late_by = ?, "
            "revision = ?, error = NULL WHERE announcement_id = ? AND fire_ts = ?",
            (
                DeliveryState.SENT.value,
                message_id,
                now,
                late_by,
                revision,
                announcement_id,
                fire_ts,
            ),
        )

    async def record_post_revision(
        self, announcement_id: int, fire_ts: float, revision: int
    ) -> None:
        """Record that the occurrence's posted message now shows ``revision``."""
        await self.db.execute(
            "UPDATE bot_deliveries SET revision = ?, update_error = NULL "
            "WHERE announcement_id = ? AND fire_ts = ?",
            (revision, announcement_id, fire_ts),
        )

    async def set_update_error(self, announcement_id: int, fire_ts: float, error: str) -> None:
        """Record why the occurrence's posted message is no longer brought up to date."""
        await self.db.execute(
            "UPDATE bot_deliveries SET update_error = ? WHERE announcement_id = ? AND fire_ts = ?",
            (error, announcement_id, fire_ts),
        )

    async def note_delivery_error(self, announcement_id: int, fire_ts: float, error: str) -> None:
        """Keep the latest transient error of an occurrence still being sent."""
        await self.db.execute(
            "UPDATE bot_deliveries SET error = ? WHERE announcement_id = ? AND fire_ts = ? "
            "AND state = ?",
            (error, announcement_id, fire_ts, DeliveryState.SENDING.value),
        )

    async def close_interrupted_delivery(
        self, announcement_id: int, fire_ts: float, error: str
    ) -> bool:
        """Record an occurrence whose attempt was interrupted (still ``sending``) failed with
        ``error``; False if it is not being sent."""
        cur = await self.db.execute(
            "UPDATE bot_deliveries SET state = ?, error = ? WHERE announcement_id = ? "
            "AND fire_ts = ? AND state = ?",
            (
                DeliveryState.FAILED.value,
                error,
                announcement_id,
                fire_ts,
                DeliveryState.SENDING.value,
            ),
        )
        return bool(cur.rowcount)

    async def mark_delivery_failed(self, announcement_id: int, fire_ts: float, error: str) -> bool:
        """Record the occurrence failed (a missed one stays missed) with ``error``; False if it
        was recorded sent, and nothing was changed."""
        cur = await self.db.execute(
            "UPDATE bot_deliveries SET state = CASE WHEN state = ? THEN state ELSE ? END, "
            "error = ? WHERE announcement_id = ? AND fire_ts = ? AND state <> ?",
            (
                DeliveryState.MISSED.value,
                DeliveryState.FAILED.value,
                error,
                announcement_id,
                fire_ts,
                DeliveryState.SENT.value,
            ),
        )
        return bool(cur.rowcount)

    async def recent_deliveries(self, announcement_id: int, limit: int) -> list[PastDelivery]:
        """The announcement's latest ``limit`` recorded occurrences, newest first."""
        cur = await self.db.execute(
            f"SELECT {_PAST_DELIVERY_COLUMNS} FROM bot_deliveries WHERE announcement_id = ? "
            "ORDER BY fire_ts DESC LIMIT ?",
            (announcement_id, limit),
        )
        return [_past_delivery(r) for r in await cur.fetchall()]

    async def last_attempted_delivery(self, announcement_id: int) -> PastDelivery | None:
        """The announcement's latest occurrence that was attempted (sent, being sent, failed
        or missed; a skipped one is not), or None."""
        row = await self._one(
            f"SELECT {_PAST_DELIVERY_COLUMNS} FROM bot_deliveries WHERE announcement_id = ? "
            "AND state <> ? ORDER BY fire_ts DESC LIMIT 1",
            (announcement_id, DeliveryState.SKIPPED.value),
        )
        return None if row is None else _past_delivery(row)

    async def past_delivery(self, announcement_id: int, fire_ts: float) -> PastDelivery | None:
        """The occurrence as recorded, or None."""
        row = await self._one(
            f"SELECT {_PAST_DELIVERY_COLUMNS} FROM bot_deliveries WHERE announcement_id = ? "
            "AND fire_ts = ?",
            (announcement_id, fire_ts),
        )
        return None if row is None else _past_delivery(row)

    async def skipped_fire_times(self, announcement_id: int, after: float) -> list[float]:
        """The occurrences after ``after`` recorded skipped (``/skip``), soonest first."""
        cur = await self.db.execute(
            "SELECT fire_ts FROM bot_deliveries WHERE announcement_id = ? AND state = ? "
            "AND fire_ts > ? ORDER BY fire_ts",
            (announcement_id, DeliveryState.SKIPPED.value, after),
        )
        return [float(r["fire_ts"]) for r in await cur.fetchall()]

    async def set_thread(self, announcement_id: int, fire_ts: float, thread_id: int) -> None:
        """Record the forum post the occurrence made (before it is recorded sent)."""
        await self.db.execute(
            "UPDATE bot_deliveries SET thread_id = ? WHERE announcement_id = ? AND fire_ts = ?",
            (thread_id, announcement_id, fire_ts),
        )

    async def recorded_threads(self, thread_ids: Sequence[int]) -> set[int]:
        """Which of these threads some occurrence recorded as its forum post."""
        if not thread_ids:
            return set()
        marks = ", ".join("?" * len(thread_ids))
        cur = await self.db.execute(
            f"SELECT thread_id FROM bot_deliveries WHERE thread_id IN ({marks})",
            tuple(thread_ids),
        )
        return {int(r["thread_id"]) for r in await cur.fetchall()}

    async def set_publish(
        self,
        announcement_id: int,
        fire_ts: float,
        state: PublishState,
        error: str | None,
        now: float | None,
    ) -> None:
        """Record where publishing the occurrence's post stands (``now``: when it ended)."""
        await self.db.execute(
            "UPDATE bot_deliveries SET publish_state = ?, publish_error = ?, published_at = ? "
            "WHERE announcement_id = ? AND fire_ts = ?",
            (state.value, error, now, announcement_id, fire_ts),
        )

    # --- attachments (the bytes are read only to post them) ----------------------------------

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
            f"WHERE f.guild_id = ? AND a.{_state_in(LIVE_STATES)} AND a.id <> ?",
            (guild_id, *_values(LIVE_STATES), except_announcement or 0),
        )
        assert row is not None  # an aggregate always gives a row
        return int(row["total"])

    # --- history (who changed what, when) ----------------------------------------------------

    async def add_history(
        self,
        announcement_id: int,
        action: HistoryAction,
        actor_id: int | None,
        now: float,
        detail: str = "",
    ) -> None:
        """Keep one change in the announcement's history."""
        await self.db.execute(
            "INSERT INTO bot_history (announcement_id, at, actor_id, action, detail) "
            "VALUES (?, ?, ?, ?, ?)",
            (announcement_id, now, actor_id, action.value, detail),
        )

    async def last_change_at(self, announcement_id: int, action: HistoryAction) -> float | None:
        """When the announcement last had a change of this kind, or None if never."""
        row = await self._one(
            "SELECT max(at) AS at FROM bot_history WHERE announcement_id = ? AND action = ?",
            (announcement_id, action.value),
        )
        return None if row is None or row["at"] is None else float(row["at"])

    async def history(self, announcement_id: int, limit: int) -> list[HistoryEntry]:
        """The announcement's latest ``limit`` changes, oldest first."""
        cur = await self.db.execute(
            "SELECT at, actor_id, action, detail FROM ("
            "SELECT id, at, actor_id, action, detail FROM bot_history "
            "WHERE announcement_id = ? ORDER BY id DESC LIMIT ?) AS latest ORDER BY id",
            (announcement_id, limit),
        )
        return [
            HistoryEntry(
                at=float(r["at"]),
                actor_id=_optional_int(r["actor_id"]),
                action=HistoryAction(r["action"]),
                detail=r["detail"],
            )
            for r in await cur.fetchall()
        ]

    # --- members' own settings ---------------------------------------------------------------

    async def member_timezone(self, user_id: int) -> str | None:
        """The timezone the member chose for the times they type, or None."""
        row = await self._one(
            "SELECT timezone FROM bot_member_settings WHERE user_id = ?", (user_id,)
        )
        return None if row is None else str(row["timezone"])

    async def set_member_timezone(self, user_id: int, timezone: str, now: float) -> None:
        """Set (or replace) the member's own timezone."""
        await self.db.execute(
            "INSERT INTO bot_member_settings (user_id, timezone, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (user_id) DO UPDATE SET timezone = excluded.timezone, "
            "updated_at = excluded.updated_at",
            (user_id, timezone, now),
        )

    # --- command sync bookkeeping (bot_meta) -------------------------------------------------

    async def ping(self) -> None:
        """Read one row of the bot's own tables: raises if the database cannot be read."""
        await self._one("SELECT key FROM bot_meta LIMIT 1", ())

    async def meta_value(self, key: str) -> str | None:
        """The value stored under ``key``, or None."""
        row = await self._one("SELECT value FROM bot_meta WHERE key = ?", (key,))
        return None if row is None else str(row["value"])

    async def set_meta(self, key: str, value: str) -> None:
        """Store ``value`` under ``key``, replacing any previous value."""
        await self.db.execute(
            "INSERT INTO bot_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    async def meta_keys(self, prefix: str) -> list[str]:
        """Every key that starts with ``prefix``."""
        cur = await self.db.execute("SELECT key FROM bot_meta WHERE key LIKE ?", (prefix + "%",))
        return [str(r["key"]) for r in await cur.fetchall()]

    async def delete_meta(self, key: str) -> None:
        """Forget ``key``."""
        await self.db.execute("DELETE FROM bot_meta WHERE key = ?", (key,))

    # --- the dashboard's logins (bot.web.dashboard) ------------------------------------------

    async def add_dashboard_session(self, session: DashboardSession, now: float) -> None:
        """Keep a new login; logins past their expiry are forgotten meanwhile."""
        await self.db.execute("DELETE FROM bot_dashboard_sessions WHERE expires_at <= ?", (now,))
        await self.db.execute(
            "INSERT INTO bot_dashboard_sessions (id_hash, user_id, username, guild_ids, "
            "csrf_token, flash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session.id_hash,
                session.user_id,
                session.username,
                json.dumps(sorted(session.guild_ids)),
                session.csrf_token,
                session.flash,
                now,
                session.expires_at,
            ),
        )

    async def dashboard_session(self, id_hash: str, now: float) -> DashboardSession | None:
        """The login whose id hashes to ``id_hash``, unless it expired."""
        row = await self._one(
            "SELECT id_hash, user_id, username, guild_ids, csrf_token, flash, expires_at "
            "FROM bot_dashboard_sessions WHERE id_hash = ? AND expires_at > ?",
            (id_hash, now),
        )
        if row is None:
            return None
        return DashboardSession(
            id_hash=str(row["id_hash"]),
            user_id=int(row["user_id"]),
            username=str(row["username"]),
            guild_ids=frozenset(int(g) for g in json.loads(row["guild_ids"])),
            csrf_token=str(row["csrf_token"]),
            flash=row["flash"],
            expires_at=float(row["expires_at"]),
        )

    async def set_dashboard_flash(self, id_hash: str, flash: str | None) -> None:
        """The answer to show once on the login's next page (None: shown)."""
        await self.db.execute(
            "UPDATE bot_dashboard_sessions SET flash = ? WHERE id_hash = ?", (flash, id_hash)
        )

    async def delete_dashboard_session(self, id_hash: str) -> None:
        """Log out."""
        await self.db.execute("DELETE FROM bot_dashboard_sessions WHERE id_hash = ?", (id_hash,))
