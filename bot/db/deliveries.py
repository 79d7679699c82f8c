"""The ``bot_deliveries`` table (one row per occurrence) and ``bot_history`` (who changed
what, when)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..models import (
    DeliveryRecord,
    DeliveryState,
    HistoryAction,
    HistoryEntry,
    PastDelivery,
    PublishState,
    Shown,
)
from .table import Table, optional_int

if TYPE_CHECKING:
    from collections.abc import Sequence

_PAST_DELIVERY_COLUMNS = (
    "fire_ts, state, message_id, sent_at, late_by, error, revision, update_error, "
    "publish_state, publish_error, thread_id"
)


def _past_delivery(r: Any) -> PastDelivery:
    return PastDelivery(
        fire_ts=float(r["fire_ts"]),
        state=DeliveryState(r["state"]),
        message_id=optional_int(r["message_id"]),
        sent_at=None if r["sent_at"] is None else float(r["sent_at"]),
        late_by=None if r["late_by"] is None else float(r["late_by"]),
        error=r["error"],
        revision=optional_int(r["revision"]),
        update_error=r["update_error"],
        publish_state=None if r["publish_state"] is None else PublishState(r["publish_state"]),
        publish_error=r["publish_error"],
        thread_id=optional_int(r["thread_id"]),
    )


class DeliveryTable(Table):
    """The occurrences' delivery rows and the announcements' history."""

    __slots__ = ()

    async def occurrences_before(self, announcement_id: int, fire_ts: float) -> int:
        """How many of the announcement's occurrences before ``fire_ts`` are recorded (in any
        state): those the retention deleted (all older than any occurrence still to come)
        and one read of the ``(announcement_id, fire_ts)`` index, in one statement (one
        snapshot: a prune committing in between is counted once)."""
        row = await self._one(
            "SELECT COALESCE((SELECT pruned_occurrences FROM bot_announcements WHERE id = ?), 0)"
            " + (SELECT COUNT(*) FROM bot_deliveries WHERE announcement_id = ? AND fire_ts < ?)"
            " AS n",
            (announcement_id, announcement_id, fire_ts),
        )
        return 0 if row is None else int(row["n"])

    async def delivery(self, announcement_id: int, fire_ts: float) -> DeliveryRecord | None:
        """What is recorded of the occurrence's delivery, or None before its first attempt."""
        row = await self._one(
            "SELECT state, message_id, first_attempt_at, nonce, thread_id, shown_locale, "
            "shown_event_id FROM bot_deliveries WHERE announcement_id = ? AND fire_ts = ?",
            (announcement_id, fire_ts),
        )
        if row is None:
            return None
        shown = None
        if row["shown_locale"] is not None:  # ('' is English; NULL: not recorded)
            shown = Shown(row["shown_locale"] or None, optional_int(row["shown_event_id"]))
        return DeliveryRecord(
            state=DeliveryState(row["state"]),
            message_id=optional_int(row["message_id"]),
            first_attempt_at=float(row["first_attempt_at"]),
            nonce=row["nonce"],
            thread_id=optional_int(row["thread_id"]),
            shown=shown,
        )

    async def begin_delivery(
        self,
        announcement_id: int,
        fire_ts: float,
        job_id: int,
        nonce: str,
        now: float,
        shown: Shown | None = None,
    ) -> None:
        """Record the occurrence's first attempt (state ``sending``) before it is sent, with
        what it shows (``shown``) that a re-send must show the same."""
        locale = None if shown is None else shown.locale or ""
        event_id = None if shown is None else shown.event_id
        await self.db.execute(
            "INSERT INTO bot_deliveries (announcement_id, fire_ts, job_id, nonce, state, "
            "first_attempt_at, shown_locale, shown_event_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (announcement_id, fire_ts, job_id, nonce, DeliveryState.SENDING.value, now,
             locale, event_id),
        )  # fmt: skip

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
        job_id: int | None,
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

    async def posts_made(self, announcement_id: int) -> int:
        """How many of the announcement's occurrences are posted or being posted (what
        ``times`` counts): those the retention deleted and those recorded, in one statement
        (one snapshot)."""
        row = await self._one(
            "SELECT COALESCE((SELECT pruned_posts FROM bot_announcements WHERE id = ?), 0)"
            " + (SELECT COUNT(*) FROM bot_deliveries WHERE announcement_id = ? "
            "AND state IN (?, ?)) AS n",
            (
                announcement_id,
                announcement_id,
                DeliveryState.SENT.value,
                DeliveryState.SENDING.value,
            ),
        )
        return 0 if row is None else int(row["n"])

    async def latest_post(self, announcement_id: int) -> float | None:
        """The fire time of the announcement's latest occurrence posted or being posted."""
        row = await self._one(
            "SELECT max(fire_ts) AS t FROM bot_deliveries WHERE announcement_id = ? "
            "AND state IN (?, ?)",
            (announcement_id, DeliveryState.SENT.value, DeliveryState.SENDING.value),
        )
        return None if row is None or row["t"] is None else float(row["t"])

    async def states_from(self, announcement_id: int, start: float) -> dict[float, DeliveryState]:
        """The recorded states of the announcement's occurrences from ``start`` on."""
        cur = await self.db.execute(
            "SELECT fire_ts, state FROM bot_deliveries WHERE announcement_id = ? AND fire_ts >= ?",
            (announcement_id, start),
        )
        return {float(r["fire_ts"]): DeliveryState(r["state"]) for r in await cur.fetchall()}

    async def skipped_ahead(self, after: float) -> list[tuple[int, float]]:
        """Every occurrence after ``after`` recorded skipped ahead of time (by ``/skip``
        before a skip was part of the rule): ``(announcement_id, fire_ts)``."""
        cur = await self.db.execute(
            "SELECT announcement_id, fire_ts FROM bot_deliveries WHERE state = ? "
            "AND fire_ts > ? ORDER BY announcement_id, fire_ts",
            (DeliveryState.SKIPPED.value, after),
        )
        return [(int(r["announcement_id"]), float(r["fire_ts"])) for r in await cur.fetchall()]

    async def forget_skipped(self, announcement_id: int, lo: float, hi: float) -> int:
        """Take back the occurrences in ``[lo, hi]`` recorded skipped ahead of time (by a
        ``/skip`` of an earlier version); how many."""
        cur = await self.db.execute(
            "DELETE FROM bot_deliveries WHERE announcement_id = ? AND state = ? "
            "AND fire_ts >= ? AND fire_ts <= ? AND job_id IS NULL",
            (announcement_id, DeliveryState.SKIPPED.value, lo, hi),
        )
        return int(cur.rowcount or 0)

    async def set_thread(self, announcement_id: int, fire_ts: float, thread_id: int) -> None:
        """Record the forum post the occurrence made (before it is recorded sent)."""
        await self.db.execute(
            "UPDATE bot_deliveries SET thread_id = ? WHERE announcement_id = ? AND fire_ts = ?",
            (thread_id, announcement_id, fire_ts),
        )

    async def recorded_threads(self, thread_ids: Sequence[int]) -> set[int]:
        """Which of these threads some occurrence (or an extra post, ``/postnow``) recorded
        as its forum post."""
        if not thread_ids:
            return set()
        marks = ", ".join("?" * len(thread_ids))
        cur = await self.db.execute(
            f"SELECT thread_id AS t FROM bot_deliveries WHERE thread_id IN ({marks}) "
            f"UNION SELECT message_id AS t FROM bot_extra_posts WHERE message_id IN ({marks})",
            (*thread_ids, *thread_ids),
        )
        return {int(r["t"]) for r in await cur.fetchall()}

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

    # --- history (who changed what, when) ----------------------------------------------------

    async def add_history(
        self,
        announcement_id: int,
        action: HistoryAction,
        actor_id: int | None,
        now: float,
        detail: str = "",
    ) -> None:
        """Keep one change in the announcement's history (an edit is counted in its
        ``edits`` too: the calendar feed's SEQUENCE, which must never go down, while
        ``HISTORY_DAYS`` prunes the history)."""
        await self.db.execute(
            "INSERT INTO bot_history (announcement_id, at, actor_id, action, detail) "
            "VALUES (?, ?, ?, ?, ?)",
            (announcement_id, now, actor_id, action.value, detail),
        )
        if action == HistoryAction.EDITED:
            await self._count_edit(announcement_id)

    async def _count_edit(self, announcement_id: int) -> None:
        await self.db.execute(
            "UPDATE bot_announcements SET edits = edits + 1 WHERE id = ?", (announcement_id,)
        )

    async def add_histories(
        self, entries: Sequence[tuple[int, HistoryAction, int | None]], now: float
    ) -> None:
        """:meth:`add_history` for each ``(announcement_id, action, actor_id)``, in order, in
        one call."""
        if entries:
            await self.db.executemany(
                "INSERT INTO bot_history (announcement_id, at, actor_id, action, detail) "
                "VALUES (?, ?, ?, ?, '')",
                [(ann_id, now, actor, action.value) for ann_id, action, actor in entries],
            )
        for ann_id, action, _ in entries:
            if action == HistoryAction.EDITED:
                await self._count_edit(ann_id)

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
                actor_id=optional_int(r["actor_id"]),
                action=HistoryAction(r["action"]),
                detail=r["detail"],
            )
            for r in await cur.fetchall()
        ]
