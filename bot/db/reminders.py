"""The reminder tables: an announcement's lead (``bot_reminder_settings``), the members who
asked (``bot_reminder_subscribers``), one row per (occurrence, member) reminded or skipped
(``bot_reminders``, the once-key written before the direct message), their counts once the
occurrence is well past (``bot_reminder_counts``) and the members' DM channels
(``bot_dm_channels``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .table import Table, optional_int

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence


@dataclass(frozen=True, slots=True)
class Subscriber:
    """A member who asked to be reminded of an announcement's occurrences."""

    user_id: int
    before: float | None
    """Their own lead in seconds (None: the announcement's)."""
    locale: str | None
    """The language they asked in (their reminders are said in it; None: the server's)."""


@dataclass(frozen=True, slots=True)
class ReminderRow:
    """One (occurrence, member) reminder as recorded."""

    user_id: int
    state: str
    """``queued`` (recorded with its group, not tried yet), ``sending`` (marked right
    before its direct message), ``sent`` or ``skipped``."""
    reason: str | None
    nonce: str
    job_id: int | None
    attempt_at: float


@dataclass(frozen=True, slots=True)
class ReminderCounts:
    """How the reminders of one occurrence went."""

    fire_ts: float
    sent: int = 0
    closed: int = 0
    """Skipped: their direct messages are closed (Discord's 50007)."""
    left: int = 0
    """Skipped: no longer a member of the server."""
    hidden: int = 0
    """Skipped: they can no longer see the announcement's channel."""
    late: int = 0
    """Skipped: the occurrence came before they could be reminded (the bot was down)."""
    failed: int = 0
    """Skipped: may not have been delivered (Discord kept failing, or a crash too long ago
    to send again safely)."""
    sending: int = 0
    """Being sent now."""

    @property
    def skipped(self) -> int:
        return self.closed + self.left + self.hidden + self.late + self.failed


SKIP_REASONS = ("closed", "left", "hidden", "late", "failed")
"""Why a member was not reminded, as ``bot_reminders.reason`` records it (and the column of
``bot_reminder_counts`` it is counted in: ``left`` is ``left_server`` there)."""
_COUNT_COLUMNS = {"sent": "sent", **{r: r for r in SKIP_REASONS}, "left": "left_server"}


def _row(row: Any) -> ReminderRow:
    return ReminderRow(
        user_id=int(row["user_id"]),
        state=row["state"],
        reason=row["reason"],
        nonce=row["nonce"],
        job_id=optional_int(row["job_id"]),
        attempt_at=float(row["attempt_at"]),
    )


class ReminderTable(Table):
    """Reminder settings, subscribers, the reminders sent and their counts."""

    __slots__ = ()

    # --- the announcement's lead ----------------------------------------------------------------

    async def reminder_lead(self, announcement_id: int) -> float | None:
        """How long before each occurrence its members are reminded (None: they are not)."""
        row = await self._one(
            "SELECT before_s FROM bot_reminder_settings WHERE announcement_id = ?",
            (announcement_id,),
        )
        return None if row is None else float(row["before_s"])

    async def reminder_leads(self, announcement_ids: Sequence[int]) -> dict[int, float]:
        if not announcement_ids:
            return {}
        marks = ", ".join("?" * len(announcement_ids))
        cur = await self.db.execute(
            "SELECT announcement_id, before_s FROM bot_reminder_settings "
            f"WHERE announcement_id IN ({marks})",
            list(announcement_ids),
        )
        return {int(r["announcement_id"]): float(r["before_s"]) for r in await cur.fetchall()}

    async def set_reminder_lead(
        self, announcement_id: int, guild_id: int, before: float | None
    ) -> None:
        """Remind the announcement's members ``before`` seconds ahead (None: no more)."""
        await self.db.execute(
            "DELETE FROM bot_reminder_settings WHERE announcement_id = ?", (announcement_id,)
        )
        if before is None:
            return
        await self.db.execute(
            "INSERT INTO bot_reminder_settings (announcement_id, guild_id, before_s) "
            "VALUES (?, ?, ?)",
            (announcement_id, guild_id, before),
        )

    # --- who asked -------------------------------------------------------------------------------

    async def subscriber(self, announcement_id: int, user_id: int) -> Subscriber | None:
        row = await self._one(
            "SELECT user_id, before_s, locale FROM bot_reminder_subscribers "
            "WHERE announcement_id = ? AND user_id = ?",
            (announcement_id, user_id),
        )
        return None if row is None else _subscriber(row)

    async def subscribe(
        self,
        announcement_id: int,
        guild_id: int,
        user_id: int,
        before: float | None,
        locale: str | None,
        now: float,
    ) -> None:
        """The member is reminded of every later occurrence (``before``: their own lead;
        asking again replaces it)."""
        await self.db.execute(
            "INSERT INTO bot_reminder_subscribers (announcement_id, user_id, guild_id, "
            "before_s, locale, created_at) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (announcement_id, user_id) DO UPDATE SET before_s = excluded.before_s, "
            "locale = excluded.locale",
            (announcement_id, user_id, guild_id, before, locale, now),
        )

    async def unsubscribe(self, announcement_id: int, user_id: int) -> bool:
        """The member is reminded no more; whether they were."""
        cur = await self.db.execute(
            "DELETE FROM bot_reminder_subscribers WHERE announcement_id = ? AND user_id = ? "
            "RETURNING user_id",
            (announcement_id, user_id),
        )
        return bool(await cur.fetchall())

    async def subscriber_count(self, announcement_id: int) -> int:
        row = await self._one(
            "SELECT COUNT(*) AS n FROM bot_reminder_subscribers WHERE announcement_id = ?",
            (announcement_id,),
        )
        return 0 if row is None else int(row["n"])

    async def subscriber_leads(self, announcement_id: int) -> list[float | None]:
        """The leads the announcement's subscribers chose (None: the announcement's)."""
        cur = await self.db.execute(
            "SELECT DISTINCT before_s FROM bot_reminder_subscribers WHERE announcement_id = ?",
            (announcement_id,),
        )
        return [
            None if r["before_s"] is None else float(r["before_s"]) for r in await cur.fetchall()
        ]

    async def due_subscribers(
        self,
        announcement_id: int,
        fire_ts: float,
        *,
        lead: float,
        at_least: float,
        after_user: int,
        limit: int,
    ) -> list[Subscriber]:
        """A page of the subscribers due for the occurrence at ``fire_ts``: their lead
        (``lead`` when they chose none) at least ``at_least`` seconds, not recorded for it
        yet, by user id after ``after_user``."""
        cur = await self.db.execute(
            "SELECT s.user_id, s.before_s, s.locale FROM bot_reminder_subscribers s "
            "WHERE s.announcement_id = ? AND s.user_id > ? AND COALESCE(s.before_s, ?) >= ? "
            "AND NOT EXISTS (SELECT 1 FROM bot_reminders r WHERE r.announcement_id = ? "
            "AND r.fire_ts = ? AND r.user_id = s.user_id) ORDER BY s.user_id LIMIT ?",
            (announcement_id, after_user, lead, at_least, announcement_id, fire_ts, limit),
        )
        return [_subscriber(r) for r in await cur.fetchall()]

    async def subscribed_among(self, announcement_id: int, user_ids: Sequence[int]) -> set[int]:
        """Which of ``user_ids`` asked to be reminded (they are reminded at their own lead)."""
        return await self._among(
            "SELECT user_id FROM bot_reminder_subscribers WHERE announcement_id = ? AND user_id",
            (announcement_id,),
            user_ids,
        )

    async def pending_leads(self, announcement_id: int, fire_ts: float) -> list[float | None]:
        """The leads of the subscribers not recorded yet for the occurrence at ``fire_ts``."""
        cur = await self.db.execute(
            "SELECT DISTINCT s.before_s FROM bot_reminder_subscribers s "
            "WHERE s.announcement_id = ? AND NOT EXISTS (SELECT 1 FROM bot_reminders r "
            "WHERE r.announcement_id = ? AND r.fire_ts = ? AND r.user_id = s.user_id)",
            (announcement_id, announcement_id, fire_ts),
        )
        return [
            None if r["before_s"] is None else float(r["before_s"]) for r in await cur.fetchall()
        ]

    # --- each (occurrence, member) -----------------------------------------------------------

    async def recorded_among(
        self, announcement_id: int, fire_ts: float, user_ids: Sequence[int]
    ) -> set[int]:
        """Which of ``user_ids`` are recorded for the occurrence at ``fire_ts``."""
        return await self._among(
            "SELECT user_id FROM bot_reminders WHERE announcement_id = ? AND fire_ts = ? "
            "AND user_id",
            (announcement_id, fire_ts),
            user_ids,
        )

    async def claim_reminders(
        self,
        announcement_id: int,
        fire_ts: float,
        guild_id: int,
        job_id: int,
        claims: Sequence[tuple[int, str, str, str | None]],
        now: float,
    ) -> set[int]:
        """Record each ``(user_id, nonce, state, reason)`` of ``claims`` for the occurrence
        (``sending``, before its direct message; or ``skipped`` with why), unless the member
        is recorded for it already; the members recorded now."""
        if not claims:
            return set()
        values = ", ".join("(?, ?, ?, ?, ?, ?, ?, ?, ?)" for _ in claims)
        params: list[Any] = []
        for user_id, nonce, state, reason in claims:
            params += [announcement_id, fire_ts, user_id, guild_id, state, reason, nonce, job_id]
            params.append(now)
        cur = await self.db.execute(
            "INSERT INTO bot_reminders (announcement_id, fire_ts, user_id, guild_id, state, "
            f"reason, nonce, job_id, attempt_at) VALUES {values} "
            "ON CONFLICT (announcement_id, fire_ts, user_id) DO NOTHING RETURNING user_id",
            params,
        )
        return {int(r["user_id"]) for r in await cur.fetchall()}

    async def unfinished_reminders(self, announcement_id: int, fire_ts: float) -> list[ReminderRow]:
        """The occurrence's reminders ``queued`` or ``sending`` (a run interrupted, or
        running)."""
        cur = await self.db.execute(
            "SELECT user_id, state, reason, nonce, job_id, attempt_at FROM bot_reminders "
            "WHERE announcement_id = ? AND fire_ts = ? AND state IN ('queued', 'sending') "
            "ORDER BY user_id",
            (announcement_id, fire_ts),
        )
        return [_row(r) for r in await cur.fetchall()]

    async def start_reminder(
        self, announcement_id: int, fire_ts: float, user_id: int, job_id: int, now: float
    ) -> bool:
        """Mark the member's ``queued`` reminder ``sending`` by job ``job_id`` at ``now``,
        right before its DM; False (send nothing) when it is no longer queued."""
        cur = await self.db.execute(
            "UPDATE bot_reminders SET state = 'sending', job_id = ?, attempt_at = ? "
            "WHERE announcement_id = ? AND fire_ts = ? AND user_id = ? AND state = 'queued' "
            "RETURNING user_id",
            (job_id, now, announcement_id, fire_ts, user_id),
        )
        return bool(await cur.fetchall())

    async def give_up_reminders(self, announcement_id: int, job_id: int) -> None:
        """Job ``job_id`` gives up the reminders it left ``queued`` or ``sending``: skipped,
        as may not have been delivered (Discord kept failing)."""
        await self.db.execute(
            "UPDATE bot_reminders SET state = 'skipped', reason = 'failed' "
            "WHERE announcement_id = ? AND job_id = ? AND state IN ('queued', 'sending')",
            (announcement_id, job_id),
        )

    async def drop_untried_reminders(self, announcement_id: int) -> int:
        """Take back every reminder of the announcement recorded but never tried
        (``queued``); how many."""
        cur = await self.db.execute(
            "DELETE FROM bot_reminders WHERE announcement_id = ? AND state = 'queued' "
            "RETURNING user_id",
            (announcement_id,),
        )
        return len(await cur.fetchall())

    async def drop_untried(self, announcement_id: int, fire_ts: float) -> int:
        """Take back the occurrence's reminders recorded but never tried (``queued``): it
        reminds nobody more. How many."""
        cur = await self.db.execute(
            "DELETE FROM bot_reminders WHERE announcement_id = ? AND fire_ts = ? "
            "AND state = 'queued' RETURNING user_id",
            (announcement_id, fire_ts),
        )
        return len(await cur.fetchall())

    async def end_reminders(
        self,
        announcement_id: int,
        fire_ts: float,
        ended: Iterable[tuple[int, str, str | None, int | None]],
    ) -> None:
        """Record how each ``(user_id, state, reason, message_id)`` of ``ended`` went (only
        a reminder still ``sending`` changes)."""
        rows = [
            (state, reason, message_id, announcement_id, fire_ts, user_id)
            for user_id, state, reason, message_id in ended
        ]
        if rows:
            await self.db.executemany(
                "UPDATE bot_reminders SET state = ?, reason = ?, message_id = ? "
                "WHERE announcement_id = ? AND fire_ts = ? AND user_id = ? AND state = 'sending'",
                rows,
            )

    async def set_late(self, announcement_id: int, fire_ts: float, guild_id: int) -> int:
        """Count the members who asked and are not recorded for the occurrence at
        ``fire_ts`` as reminded too late (it came first); how many. Counting again counts
        the same members once."""
        row = await self._one(
            "SELECT COUNT(*) AS n FROM bot_reminder_subscribers s WHERE s.announcement_id = ? "
            "AND NOT EXISTS (SELECT 1 FROM bot_reminders r WHERE r.announcement_id = ? "
            "AND r.fire_ts = ? AND r.user_id = s.user_id)",
            (announcement_id, announcement_id, fire_ts),
        )
        late = 0 if row is None else int(row["n"])
        if late:
            await self._ensure_counts(announcement_id, fire_ts, guild_id)
            await self.db.execute(
                "UPDATE bot_reminder_counts SET late = ? WHERE announcement_id = ? AND fire_ts = ?",
                (late, announcement_id, fire_ts),
            )
        return late

    async def fold_reminders(self, announcement_id: int, before: float, kept: int) -> int:
        """Count the reminders of the announcement's occurrences before ``before`` into
        ``bot_reminder_counts`` (one still ``sending`` counts as may not have been
        delivered) and delete them (no run reminds anyone of a past occurrence: they were
        only kept as its once-keys); keep the counts of its latest ``kept`` occurrences.
        How many rows were folded."""
        cur = await self.db.execute(
            "SELECT fire_ts, guild_id, state, reason, COUNT(*) AS n FROM bot_reminders "
            "WHERE announcement_id = ? AND fire_ts < ? GROUP BY fire_ts, guild_id, state, reason",
            (announcement_id, before),
        )
        folded = 0
        for row in await cur.fetchall():
            fire_ts, n = float(row["fire_ts"]), int(row["n"])
            outcome = _outcome(row["state"], row["reason"])
            if row["state"] == "queued":  # never tried before the occurrence came
                outcome = "late"
            column = _COUNT_COLUMNS.get(outcome, "failed")
            await self._ensure_counts(announcement_id, fire_ts, int(row["guild_id"]))
            await self.db.execute(
                f"UPDATE bot_reminder_counts SET {column} = {column} + ? "
                "WHERE announcement_id = ? AND fire_ts = ?",
                (n, announcement_id, fire_ts),
            )
            folded += n
        await self.db.execute(
            "DELETE FROM bot_reminders WHERE announcement_id = ? AND fire_ts < ?",
            (announcement_id, before),
        )
        await self.db.execute(
            "DELETE FROM bot_reminder_counts WHERE announcement_id = ? AND fire_ts NOT IN ("
            "SELECT fire_ts FROM bot_reminder_counts WHERE announcement_id = ? "
            "ORDER BY fire_ts DESC LIMIT ?)",
            (announcement_id, announcement_id, kept),
        )
        return folded

    async def reminder_counts(self, announcement_id: int, limit: int) -> list[ReminderCounts]:
        """How the reminders of the announcement's latest ``limit`` occurrences went, newest
        first (those still recorded one by one, and those counted)."""
        counts: dict[float, dict[str, int]] = {}
        cur = await self.db.execute(
            "SELECT fire_ts, sent, closed, left_server, hidden, late, failed FROM "
            "bot_reminder_counts WHERE announcement_id = ? ORDER BY fire_ts DESC LIMIT ?",
            (announcement_id, limit),
        )
        for r in await cur.fetchall():
            counts[float(r["fire_ts"])] = {
                "sent": int(r["sent"]), "closed": int(r["closed"]), "left": int(r["left_server"]),
                "hidden": int(r["hidden"]), "late": int(r["late"]), "failed": int(r["failed"]),
            }  # fmt: skip
        cur = await self.db.execute(
            "SELECT fire_ts, state, reason, COUNT(*) AS n FROM bot_reminders "
            "WHERE announcement_id = ? GROUP BY fire_ts, state, reason",
            (announcement_id,),
        )
        for r in await cur.fetchall():
            outcome = _outcome(r["state"], r["reason"])
            kept = counts.setdefault(float(r["fire_ts"]), {})
            kept[outcome] = kept.get(outcome, 0) + int(r["n"])
        newest = sorted(counts, reverse=True)[:limit]
        return [ReminderCounts(ts, **counts[ts]) for ts in newest]

    # --- DM channels ---------------------------------------------------------------------------

    async def dm_channels(self, user_ids: Sequence[int]) -> dict[int, int]:
        """The DM channels kept of those of ``user_ids`` reminded before."""
        found: dict[int, int] = {}
        for start in range(0, len(user_ids), _IN_CHUNK):
            chunk = list(user_ids[start : start + _IN_CHUNK])
            marks = ", ".join("?" * len(chunk))
            cur = await self.db.execute(
                f"SELECT user_id, channel_id FROM bot_dm_channels WHERE user_id IN ({marks})",
                chunk,
            )
            found.update({int(r["user_id"]): int(r["channel_id"]) for r in await cur.fetchall()})
        return found

    async def set_dm_channel(self, user_id: int, channel_id: int) -> None:
        await self.db.execute(
            "INSERT INTO bot_dm_channels (user_id, channel_id) VALUES (?, ?) "
            "ON CONFLICT (user_id) DO UPDATE SET channel_id = excluded.channel_id",
            (user_id, channel_id),
        )

    # --- helpers ------------------------------------------------------------------------------

    async def _ensure_counts(self, announcement_id: int, fire_ts: float, guild_id: int) -> None:
        await self.db.execute(
            "INSERT INTO bot_reminder_counts (announcement_id, fire_ts, guild_id) "
            "VALUES (?, ?, ?) ON CONFLICT (announcement_id, fire_ts) DO NOTHING",
            (announcement_id, fire_ts, guild_id),
        )

    async def _among(self, sql: str, params: tuple[Any, ...], user_ids: Sequence[int]) -> set[int]:
        found: set[int] = set()
        for start in range(0, len(user_ids), _IN_CHUNK):
            chunk = list(user_ids[start : start + _IN_CHUNK])
            marks = ", ".join("?" * len(chunk))
            cur = await self.db.execute(f"{sql} IN ({marks})", [*params, *chunk])
            found.update(int(r["user_id"]) for r in await cur.fetchall())
        return found


_IN_CHUNK = 500
"""The most ids one ``IN (…)`` list binds (SQLite allows 32,766 parameters, PostgreSQL
32,767; smaller lists keep each statement cheap to plan)."""


def _outcome(state: str, reason: str | None) -> str:
    """What a recorded reminder counts as: ``sent``, ``sending`` (``queued`` too: about to
    be), or why it was skipped."""
    if state in ("sent", "sending"):
        return state
    if state == "queued":
        return "sending"
    return reason if reason in SKIP_REASONS else "failed"


def _subscriber(row: Any) -> Subscriber:
    before = row["before_s"]
    return Subscriber(
        user_id=int(row["user_id"]),
        before=None if before is None else float(before),
        locale=row["locale"],
    )
