"""Announcements: the bot's domain layer over the scheduler, with no Discord code.

An announcement row and the job (one-off) or schedule (recurring) that delivers it are
written in one transaction. Every id a user sees is the per-guild ``local_id``; every lookup
is by ``(guild_id, local_id)``, so another guild's id is simply "not found".
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler import ScheduleNotFound, Scheduler

from .repeat import RepeatRule

SEND_FN = "announcements:send"
_EPOCH = datetime.fromtimestamp(0, UTC)
LIVE_STATES = ("scheduled", "paused")


def schedule_name(announcement_id: int) -> str:
    return f"announcement:{announcement_id}"


@dataclass(frozen=True, slots=True)
class GuildSettings:
    guild_id: int
    timezone: str | None = None
    manager_role_id: int | None = None
    log_channel_id: int | None = None


@dataclass(frozen=True, slots=True)
class Draft:
    """An announcement that passed every check, ready to be written."""

    guild_id: int
    channel_id: int
    author_id: int
    content: str
    mention: str | None
    allowed_mentions: dict[str, Any]
    first: datetime
    timezone: str
    repeat: RepeatRule | None


@dataclass(frozen=True, slots=True)
class Announcement:
    id: int
    guild_id: int
    local_id: int
    channel_id: int
    author_id: int
    content: str
    mention: str | None
    allowed_mentions: dict[str, Any]
    first_ts: float
    timezone: str
    repeat_kind: str | None
    repeat_cron: str | None
    repeat_every: float | None
    repeat_words: str | None
    job_id: int | None
    schedule_name: str | None
    state: str
    failure: str | None
    last_message_id: int | None
    created_at: float
    updated_at: float

    @property
    def recurring(self) -> bool:
        return self.repeat_kind is not None

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    @property
    def text(self) -> str:
        """The message as posted: the chosen mention first, then the text exactly as typed."""
        if self.mention is None:
            return self.content
        return f"{mention_markup(self.mention)} {self.content}"


def mention_markup(mention: str) -> str:
    if mention in ("everyone", "here"):
        return f"@{mention}"
    return f"<@&{mention.removeprefix('role:')}>"


_COLUMNS = (
    "id, guild_id, local_id, channel_id, author_id, content, mention, allowed_mentions, "
    "first_ts, timezone, repeat_kind, repeat_cron, repeat_every, repeat_words, job_id, "
    "schedule_name, state, failure, last_message_id, created_at, updated_at"
)


def _row(r: Any) -> Announcement:
    return Announcement(
        id=int(r[0]),
        guild_id=int(r[1]),
        local_id=int(r[2]),
        channel_id=int(r[3]),
        author_id=int(r[4]),
        content=r[5],
        mention=r[6],
        allowed_mentions=json.loads(r[7]),
        first_ts=float(r[8]),
        timezone=r[9],
        repeat_kind=r[10],
        repeat_cron=r[11],
        repeat_every=None if r[12] is None else float(r[12]),
        repeat_words=r[13],
        job_id=None if r[14] is None else int(r[14]),
        schedule_name=r[15],
        state=r[16],
        failure=r[17],
        last_message_id=None if r[18] is None else int(r[18]),
        created_at=float(r[19]),
        updated_at=float(r[20]),
    )


class NotFound(LookupError):
    pass


@dataclass(frozen=True, slots=True)
class Listing:
    items: list[Announcement]
    total: int
    next_fires: dict[int, datetime | None]


class Announcements:
    """Create, list and cancel announcements, and keep guild settings."""

    def __init__(self, sched: Scheduler, catch_up_window: float = 3600.0) -> None:
        self.sched = sched
        self.catch_up_window = catch_up_window

    # --- settings ------------------------------------------------------------------------------

    async def settings(self, guild_id: int) -> GuildSettings:
        async with self.sched.reader() as db:
            cur = await db.execute(
                "SELECT timezone, manager_role_id, log_channel_id FROM bot_guild_settings "
                "WHERE guild_id = ?",
                (guild_id,),
            )
            row = await cur.fetchone()
        if row is None:
            return GuildSettings(guild_id)
        return GuildSettings(
            guild_id,
            row[0],
            None if row[1] is None else int(row[1]),
            None if row[2] is None else int(row[2]),
        )

    async def save_settings(self, new: GuildSettings) -> None:
        async with self.sched.transaction() as ctx:
            await ctx.db.execute(
                "INSERT INTO bot_guild_settings "
                "(guild_id, timezone, manager_role_id, log_channel_id, updated_at) "
                "VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (guild_id) DO UPDATE SET timezone = excluded.timezone, "
                "manager_role_id = excluded.manager_role_id, "
                "log_channel_id = excluded.log_channel_id, updated_at = excluded.updated_at",
                (
                    new.guild_id,
                    new.timezone,
                    new.manager_role_id,
                    new.log_channel_id,
                    ctx.now.timestamp(),
                ),
            )

    # --- create --------------------------------------------------------------------------------

    async def create(self, d: Draft) -> tuple[Announcement, datetime]:
        """Write the announcement and its job or schedule together; returns it with its first
        delivery time."""
        first_ts = d.first.timestamp()
        async with self.sched.transaction() as ctx:
            now = ctx.now.timestamp()
            # Lock the guild's settings row (creating it if need be) so that concurrent
            # creates in one guild take their numbers one after the other: on PostgreSQL
            # (READ COMMITTED) two of them would otherwise read the same max(local_id) and
            # one would fail on UNIQUE (guild_id, local_id).
            await ctx.db.execute(
                "INSERT INTO bot_guild_settings (guild_id, updated_at) VALUES (?, ?) "
                "ON CONFLICT (guild_id) DO UPDATE SET guild_id = excluded.guild_id",
                (d.guild_id, now),
            )
            cur = await ctx.db.execute(
                "SELECT coalesce(max(local_id), 0) + 1 FROM bot_announcements WHERE guild_id = ?",
                (d.guild_id,),
            )
            local_id = int((await cur.fetchone())[0])
            r = d.repeat
            cur = await ctx.db.execute(
                "INSERT INTO bot_announcements (guild_id, local_id, channel_id, author_id, "
                "content, mention, allowed_mentions, first_ts, timezone, repeat_kind, "
                "repeat_cron, repeat_every, repeat_words, state, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'scheduled', ?, ?) RETURNING id",
                (
                    d.guild_id,
                    local_id,
                    d.channel_id,
                    d.author_id,
                    d.content,
                    d.mention,
                    json.dumps(d.allowed_mentions, sort_keys=True),
                    first_ts,
                    d.timezone,
                    None if r is None else r.kind,
                    None if r is None else r.cron,
                    None if r is None or r.every is None else r.every.total_seconds(),
                    None if r is None else r.words,
                    now,
                    now,
                ),
            )
            ann_id = int((await cur.fetchone())[0])
            first = d.first
            if r is None:
                job_id = await ctx.scheduler.run_at(
                    d.first,
                    SEND_FN,
                    {"announcement_id": ann_id, "fire_ts": first_ts},
                    idempotency_key=f"announcement:{ann_id}:{first_ts!r}",
                    name=f"announcement {ann_id}",
                )
                await ctx.db.execute(
                    "UPDATE bot_announcements SET job_id = ? WHERE id = ?", (job_id, ann_id)
                )
            else:
                name = schedule_name(ann_id)
                spec: str | timedelta = r.cron if r.cron is not None else r.every  # type: ignore[assignment]
                info = await ctx.scheduler.schedules.create(
                    name,
                    spec,
                    SEND_FN,
                    {"announcement_id": ann_id},
                    tz=d.timezone if r.kind == "cron" else None,
                    start=d.first,
                    catch_up="fire_once",
                    catchup_window=timedelta(seconds=self.catch_up_window),
                    overlap="skip",
                )
                first = info.next_fire or d.first
                await ctx.db.execute(
                    "UPDATE bot_announcements SET schedule_name = ? WHERE id = ?", (name, ann_id)
                )
            cur = await ctx.db.execute(
                f"SELECT {_COLUMNS} FROM bot_announcements WHERE id = ?", (ann_id,)
            )
            ann = _row(await cur.fetchone())
        return ann, first

    # --- read ----------------------------------------------------------------------------------

    async def get(self, guild_id: int, local_id: int) -> Announcement:
        async with self.sched.reader() as db:
            cur = await db.execute(
                f"SELECT {_COLUMNS} FROM bot_announcements WHERE guild_id = ? AND local_id = ?",
                (guild_id, local_id),
            )
            row = await cur.fetchone()
        if row is None:
            raise NotFound(f"announcement #{local_id} not found")
        return _row(row)

    async def by_id(self, announcement_id: int) -> Announcement | None:
        async with self.sched.reader() as db:
            cur = await db.execute(
                f"SELECT {_COLUMNS} FROM bot_announcements WHERE id = ?", (announcement_id,)
            )
            row = await cur.fetchone()
        return None if row is None else _row(row)

    async def live(self, guild_id: int, limit: int = 200) -> list[Announcement]:
        async with self.sched.reader() as db:
            cur = await db.execute(
                f"SELECT {_COLUMNS} FROM bot_announcements "
                "WHERE guild_id = ? AND state IN ('scheduled', 'paused') "
                "ORDER BY local_id DESC LIMIT ?",
                (guild_id, limit),
            )
            return [_row(r) for r in await cur.fetchall()]

    async def listing(self, guild_id: int, offset: int, limit: int) -> Listing:
        """A page of the guild's announcements: failures (and paused ones) newest first, then
        the scheduled ones by their next time, then the rest (sent, canceled) newest first."""
        async with self.sched.reader() as db:
            cur = await db.execute(
                "SELECT count(*) FROM bot_announcements WHERE guild_id = ?", (guild_id,)
            )
            counted = await cur.fetchone()
            total = 0 if counted is None else int(counted[0])
            cur = await db.execute(
                f"SELECT {_COLUMNS} FROM bot_announcements "
                "WHERE guild_id = ? AND state IN ('failed', 'paused', 'scheduled') "
                "ORDER BY updated_at DESC, local_id DESC",
                (guild_id,),
            )
            open_rows = [_row(r) for r in await cur.fetchall()]
        fires = await self._next_fires(open_rows)
        troubled = [a for a in open_rows if a.state != "scheduled"]
        upcoming = sorted(
            (a for a in open_rows if a.state == "scheduled"),
            key=lambda a: (fires.get(a.id) is None, fires.get(a.id) or _EPOCH, a.local_id),
        )
        head = troubled + upcoming
        items = head[offset : offset + limit]
        if len(items) < limit:
            async with self.sched.reader() as db:
                cur = await db.execute(
                    f"SELECT {_COLUMNS} FROM bot_announcements "
                    "WHERE guild_id = ? AND state IN ('sent', 'canceled') "
                    "ORDER BY updated_at DESC, local_id DESC LIMIT ? OFFSET ?",
                    (guild_id, limit - len(items), max(0, offset - len(head))),
                )
                items += [_row(r) for r in await cur.fetchall()]
        return Listing(items, total, {a.id: fires.get(a.id) for a in items})

    async def _next_fires(self, rows: list[Announcement]) -> dict[int, datetime | None]:
        """Next delivery times, with one read of the schedules for the recurring ones."""
        recurring = {a.schedule_name for a in rows if a.schedule_name and a.state == "scheduled"}
        schedules = (
            {s.name: s.next_fire for s in await self.sched.schedules.list()} if recurring else {}
        )
        out: dict[int, datetime | None] = {}
        for a in rows:
            if a.state != "scheduled":
                out[a.id] = None
            elif a.schedule_name is None:
                out[a.id] = datetime.fromtimestamp(a.first_ts, UTC)
            else:
                out[a.id] = schedules.get(a.schedule_name)
        return out

    async def next_fire(self, a: Announcement) -> datetime | None:
        if a.state != "scheduled":
            return None
        if a.schedule_name is None:
            return datetime.fromtimestamp(a.first_ts, UTC)
        try:
            info = await self.sched.schedules.get(a.schedule_name)
        except ScheduleNotFound:
            return None
        return info.next_fire

    # --- cancel --------------------------------------------------------------------------------

    async def cancel(self, guild_id: int, local_id: int) -> Announcement:
        """Cancel a live announcement (its pending delivery or its schedule).

        Raises :class:`NotFound`; returns the row as it was if it was no longer live (the
        caller says why: already sent, failed or canceled)."""
        async with self.sched.transaction() as ctx:
            cur = await ctx.db.execute(
                f"SELECT {_COLUMNS} FROM bot_announcements WHERE guild_id = ? AND local_id = ?",
                (guild_id, local_id),
            )
            row = await cur.fetchone()
            if row is None:
                raise NotFound(f"announcement #{local_id} not found")
            a = _row(row)
            if not a.live:
                return a
            if a.job_id is not None:
                await ctx.scheduler.cancel(a.job_id)
            if a.schedule_name is not None:
                with contextlib.suppress(ScheduleNotFound):
                    await ctx.scheduler.schedules.delete(a.schedule_name)
            await ctx.db.execute(
                "UPDATE bot_announcements SET state = 'canceled', updated_at = ? WHERE id = ?",
                (ctx.now.timestamp(), a.id),
            )
        return a
