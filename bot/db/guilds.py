"""A server's standing: whether the bot left it (``bot_guilds_left``), the limits an operator
set for it (``bot_guild_limits``), its members' command counts (``bot_command_counts``), and
forgetting everything of it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..models import AnnouncementState, GuildLimits, LeftGuild
from .table import Table, optional_int

ENDED_STATES = (AnnouncementState.CANCELED, AnnouncementState.FAILED)
"""Announcements that will never post again nor be edited (``/edit`` and ``/resume`` take
neither): their files are kept only while a job still refers to them. (A ``sent`` or
``done`` one keeps its files: an edit of its posted message uploads them again, and
without them would take the picture off the post.)"""

_LIMIT_COLUMNS = (
    "max_announcements",
    "max_templates",
    "files_max_bytes",
    "min_repeat_seconds",
    "commands_per_minute",
)


@dataclass(frozen=True, slots=True)
class Deliverer:
    """An announcement's job (a one-off's) or schedule (a recurring one's), and its state."""

    announcement_id: int
    state: AnnouncementState
    job_id: int | None
    schedule_name: str | None
    until_ts: float | None


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


class GuildTables(Table):
    """Servers left, per-server limits, command counts."""

    __slots__ = ()

    # --- servers the bot left ----------------------------------------------------------------

    async def left_guild(self, guild_id: int) -> LeftGuild | None:
        """When the bot left the guild, if it is not in it now (as far as it was told)."""
        row = await self._one(
            "SELECT guild_id, left_at, forget_at, forget_job_id FROM bot_guilds_left "
            "WHERE guild_id = ?",
            (guild_id,),
        )
        return None if row is None else _left(row)

    async def mark_left(self, guild_id: int, left_at: float, forget_at: float) -> bool:
        """Record that the bot left the guild; False (nothing written) if it was already."""
        row = await self._one(
            "INSERT INTO bot_guilds_left (guild_id, left_at, forget_at) VALUES (?, ?, ?) "
            "ON CONFLICT (guild_id) DO NOTHING RETURNING guild_id",
            (guild_id, left_at, forget_at),
        )
        return row is not None

    async def set_forget_job(self, guild_id: int, job_id: int) -> None:
        await self.db.execute(
            "UPDATE bot_guilds_left SET forget_job_id = ? WHERE guild_id = ?", (job_id, guild_id)
        )

    async def unmark_left(self, guild_id: int) -> LeftGuild | None:
        """The bot is in the guild again: its record of leaving, gone (None: there was none)."""
        row = await self._one(
            "DELETE FROM bot_guilds_left WHERE guild_id = ? "
            "RETURNING guild_id, left_at, forget_at, forget_job_id",
            (guild_id,),
        )
        return None if row is None else _left(row)

    async def left_guild_ids(self, guild_ids: list[int]) -> set[int]:
        """Which of ``guild_ids`` the bot is recorded to have left."""
        if not guild_ids:
            return set()
        marks = ", ".join("?" * len(guild_ids))
        cur = await self.db.execute(
            f"SELECT guild_id FROM bot_guilds_left WHERE guild_id IN ({marks})", guild_ids
        )
        return {int(r["guild_id"]) for r in await cur.fetchall()}

    async def guild_deliverers(self, guild_id: int) -> list[Deliverer]:
        """What delivers each of the guild's announcements (its job or schedule)."""
        cur = await self.db.execute(
            "SELECT id, state, job_id, schedule_name, until_ts FROM bot_announcements "
            "WHERE guild_id = ? ORDER BY id",
            (guild_id,),
        )
        return [
            Deliverer(
                int(r["id"]),
                AnnouncementState(r["state"]),
                optional_int(r["job_id"]),
                r["schedule_name"],
                _optional_float(r["until_ts"]),
            )
            for r in await cur.fetchall()
        ]

    async def forget_guild_rows(self, guild_id: int) -> dict[str, int]:
        """Delete every row of the bot's tables that belongs to the guild (its announcements
        with their deliveries, history, files, events and reminders; its templates, the keys of what
        it imported and its dry runs waiting for confirmation; its settings, limits, command
        counts, its calendar address and the record that it was left) and take it out of
        dashboard sessions; how many rows of each table went."""
        gone: dict[str, int] = {}
        # Its announcements locked first: a delivery that locked one (recording its
        # occurrence) commits before the deletes below, which then see its rows; one after
        # finds the announcement gone and records nothing.
        await self.lock_guild_announcements(guild_id)
        of_guild = "SELECT id FROM bot_announcements WHERE guild_id = ?"
        for table in (
            "bot_deliveries",
            "bot_history",
            "bot_event_settings",
            "bot_events",
        ):
            gone[table] = await self._count_deleted(
                f"DELETE FROM {table} WHERE announcement_id IN ({of_guild}) "
                "RETURNING announcement_id",
                (guild_id,),
            )
        for table in (
            "bot_attachments",
            "bot_thumbnails",
            "bot_announcements",
            "bot_templates",
            "bot_imports",
            "bot_pending_imports",
            "bot_guild_settings",
            "bot_guild_limits",
            "bot_command_counts",
            "bot_guilds_left",
            "bot_reminder_settings",
            "bot_reminder_subscribers",
            "bot_reminders",
            "bot_reminder_counts",
            "bot_extra_posts",
            "bot_post_as",
            "bot_webhooks",
            "bot_webhook_posts",
            "bot_calendar_tokens",
            "bot_announcement_places",
            "bot_template_places",
            "bot_place_deliveries",
            "bot_post_settings",
            "bot_posts",
            "bot_post_claims",
        ):
            gone[table] = await self._count_deleted(
                f"DELETE FROM {table} WHERE guild_id = ? RETURNING guild_id", (guild_id,)
            )
        gone["bot_dashboard_sessions"] = await self._drop_guild_from_sessions(guild_id)
        return gone

    async def lock_guild_announcements(self, guild_id: int) -> list[int]:
        """Write-lock every announcement row of the guild until the commit (waiting for the
        transactions that locked one: ``lock_announcement``); their ids."""
        cur = await self.db.execute(
            "UPDATE bot_announcements SET id = id WHERE guild_id = ? RETURNING id", (guild_id,)
        )
        return sorted(int(r["id"]) for r in await cur.fetchall())

    async def _count_deleted(self, sql: str, params: tuple[Any, ...]) -> int:
        cur = await self.db.execute(sql, params)
        return len(await cur.fetchall())

    async def _drop_guild_from_sessions(self, guild_id: int) -> int:
        """Take the guild out of the dashboard sessions that list it (the servers a user was
        in at login); how many sessions listed it."""
        cur = await self.db.execute(
            "SELECT id_hash, guild_ids FROM bot_dashboard_sessions WHERE guild_ids LIKE ?",
            (f"%{guild_id}%",),
        )
        changed = 0
        for row in await cur.fetchall():
            ids = [int(g) for g in json.loads(row["guild_ids"])]
            if guild_id not in ids:
                continue
            kept = json.dumps(sorted(g for g in ids if g != guild_id))
            await self.db.execute(
                "UPDATE bot_dashboard_sessions SET guild_ids = ? WHERE id_hash = ?",
                (kept, row["id_hash"]),
            )
            changed += 1
        return changed

    # --- files nothing refers to -------------------------------------------------------------

    async def drop_unreferenced_files(
        self, announcement_id: int, *, running_job: int | None = None
    ) -> int:
        """Delete the files of the announcement if it is canceled or failed and no live job
        (but ``running_job``, the one asking) refers to them any more: an update of a
        posted message uploads them again (its thumbnail too). How many files went."""
        marks = ", ".join("?" * len(ENDED_STATES))
        gone = 0
        for table in ("bot_attachments", "bot_thumbnails"):
            gone += await self._count_deleted(
                f"DELETE FROM {table} WHERE announcement_id IN ("
                f"SELECT a.id FROM bot_announcements a WHERE a.id = ? AND a.state IN ({marks}) "
                "AND NOT EXISTS (SELECT 1 FROM scheduler_jobs j "
                "WHERE j.state IN ('pending', 'held', 'in_progress') AND j.id <> ? "
                "AND j.idempotency_key LIKE 'post-update:' || a.id || ':%')"
                ") RETURNING announcement_id",
                (announcement_id, *(str(s) for s in ENDED_STATES), running_job or 0),
            )
        return gone

    # --- limits --------------------------------------------------------------------------------

    async def guild_limits(self, guild_id: int) -> GuildLimits | None:
        """What an operator set for the guild in place of the instance's limits."""
        row = await self._one(
            f"SELECT {', '.join(_LIMIT_COLUMNS)} FROM bot_guild_limits WHERE guild_id = ?",
            (guild_id,),
        )
        if row is None:
            return None
        return GuildLimits(
            guild_id,
            max_announcements=optional_int(row["max_announcements"]),
            max_templates=optional_int(row["max_templates"]),
            files_max_bytes=_optional_float(row["files_max_bytes"]),
            min_repeat_seconds=_optional_float(row["min_repeat_seconds"]),
            commands_per_minute=optional_int(row["commands_per_minute"]),
        )

    async def save_guild_limits(self, limits: GuildLimits, now: float) -> None:
        """Write what an operator set for the guild (None: the instance's limit)."""
        values = [getattr(limits, c) for c in _LIMIT_COLUMNS]
        if limits.files_max_bytes is not None:
            values[2] = round(limits.files_max_bytes)
        await self.db.execute(
            f"INSERT INTO bot_guild_limits (guild_id, {', '.join(_LIMIT_COLUMNS)}, updated_at) "
            f"VALUES (?, {', '.join('?' * len(_LIMIT_COLUMNS))}, ?) "
            "ON CONFLICT (guild_id) DO UPDATE SET "
            + ", ".join(f"{c} = excluded.{c}" for c in (*_LIMIT_COLUMNS, "updated_at")),
            (limits.guild_id, *values, now),
        )

    async def live_count(self, guild_id: int) -> int:
        """How many of the guild's announcements are live (scheduled or paused)."""
        row = await self._one(
            "SELECT count(*) AS n FROM bot_announcements WHERE guild_id = ? AND state IN (?, ?)",
            (guild_id, str(AnnouncementState.SCHEDULED), str(AnnouncementState.PAUSED)),
        )
        if row is None:
            raise RuntimeError("expected row is not None")
        return int(row["n"])

    # --- command counts ----------------------------------------------------------------------

    async def count_command(self, guild_id: int, user_id: int, minute: int) -> int:
        """Count one command of the member in the guild in ``minute``; how many they used in
        it, this one included."""
        row = await self._one(
            "INSERT INTO bot_command_counts (guild_id, user_id, minute, count) "
            "VALUES (?, ?, ?, 1) ON CONFLICT (guild_id, user_id, minute) "
            "DO UPDATE SET count = bot_command_counts.count + 1 RETURNING count",
            (guild_id, user_id, minute),
        )
        if row is None:
            raise RuntimeError("expected row is not None")
        return int(row["count"])

    async def prune_command_counts(self, guild_id: int, user_id: int, minute: int) -> None:
        """Delete the member's counts of the minutes before ``minute`` in the guild (a
        member keeps at most one row: the minute they last used a command in)."""
        await self.db.execute(
            "DELETE FROM bot_command_counts WHERE guild_id = ? AND user_id = ? AND minute < ?",
            (guild_id, user_id, minute),
        )


def _left(row: Any) -> LeftGuild:
    return LeftGuild(
        int(row["guild_id"]),
        float(row["left_at"]),
        float(row["forget_at"]),
        optional_int(row["forget_job_id"]),
    )
