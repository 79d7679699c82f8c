"""What the retention job (``HISTORY_DAYS``) reads and deletes: the delivery rows, history
entries and Discord events' rows of an announcement older than the retention, but for what
``/list``, ``/info`` and the dashboard show; and the walks that find the announcements with
rows newly past it.

Every statement is bounded: a walk reads at most ``limit`` rows of a table by its primary
key from where the last one stopped, and a prune deletes at most ``limit`` rows of one
announcement by its ``(announcement_id, …)`` index, in the caller's transaction; what it
keeps is found by walking that index back from the newest (``ORDER BY … DESC LIMIT 1``). A delete
says what it deleted (``RETURNING``), so two prunes of one announcement at once (whose rows
the second finds gone) count each row once."""

from __future__ import annotations

from dataclasses import dataclass

from ..models import DeliveryState, HistoryAction
from .table import Table


@dataclass(frozen=True, slots=True)
class Walked:
    """One row a walk read: its id, its announcement, and when it was written."""

    id: int
    announcement_id: int
    at: float


_POSTED = (DeliveryState.SENT.value, DeliveryState.SENDING.value)


class RetentionTable(Table):
    """The retention's reads and deletes (see the module)."""

    __slots__ = ()

    async def walk_deliveries(self, after_id: int, limit: int) -> list[Walked]:
        """Up to ``limit`` delivery rows after ``after_id``, in id order (the order they
        were written: ``first_attempt_at`` is the time of the insert)."""
        cur = await self.db.execute(
            "SELECT id, announcement_id, first_attempt_at FROM bot_deliveries WHERE id > ? "
            "ORDER BY id LIMIT ?",
            (after_id, limit),
        )
        return [
            Walked(int(r["id"]), int(r["announcement_id"]), float(r["first_attempt_at"]))
            for r in await cur.fetchall()
        ]

    async def walk_history(self, after_id: int, limit: int) -> list[Walked]:
        """Up to ``limit`` history entries after ``after_id``, in id order (the order they
        were written, at ``at``)."""
        cur = await self.db.execute(
            "SELECT id, announcement_id, at FROM bot_history WHERE id > ? ORDER BY id LIMIT ?",
            (after_id, limit),
        )
        return [
            Walked(int(r["id"]), int(r["announcement_id"]), float(r["at"]))
            for r in await cur.fetchall()
        ]

    async def prune_deliveries(
        self, announcement_id: int, before: float, now: float, keep: int, limit: int
    ) -> int:
        """Delete up to ``limit`` of the announcement's delivery rows whose occurrence came
        before ``before``, oldest first, keeping its ``keep`` latest occurrences up to
        ``now`` (what /info lists), its latest attempted one (what an edit brings up to
        date, and /list's publish state) and its latest post; what they counted is added
        to the announcement's ``pruned_occurrences`` and ``pruned_posts``. The rows the
        deleted occurrences left in ``bot_webhook_posts`` and ``bot_place_deliveries`` go
        with them (at most one per place: 1 + ``MAX_PLACES`` rows per occurrence). How many
        delivery rows."""
        cur = await self.db.execute(
            "DELETE FROM bot_deliveries WHERE id IN ("
            " SELECT d.id FROM bot_deliveries d"
            " WHERE d.announcement_id = ? AND d.fire_ts < ?"
            "  AND d.fire_ts < (SELECT k.fire_ts FROM bot_deliveries k"
            "   WHERE k.announcement_id = ? AND k.fire_ts <= ?"
            "   ORDER BY k.fire_ts DESC LIMIT 1 OFFSET ?)"
            "  AND d.fire_ts <> COALESCE((SELECT t.fire_ts FROM bot_deliveries t"
            "   WHERE t.announcement_id = ? AND t.state <> ?"
            "   ORDER BY t.fire_ts DESC LIMIT 1), -1)"
            "  AND d.fire_ts <> COALESCE((SELECT p.fire_ts FROM bot_deliveries p"
            "   WHERE p.announcement_id = ? AND p.state IN (?, ?)"
            "   ORDER BY p.fire_ts DESC LIMIT 1), -1)"
            " ORDER BY d.fire_ts LIMIT ?) RETURNING state",
            (
                announcement_id, before,
                announcement_id, now, keep - 1,
                announcement_id, DeliveryState.SKIPPED.value,
                announcement_id, *_POSTED,
                limit,
            ),
        )  # fmt: skip
        states = [str(r["state"]) for r in await cur.fetchall()]
        if states:
            # What an occurrence whose row went left elsewhere goes too: the intents of posts
            # made as someone, and its posts in the other places (also_in). Those rows all
            # came before the cutoff: only the old ones are looked at.
            for table in ("bot_webhook_posts", "bot_place_deliveries"):
                await self.db.execute(
                    # (fire_ts < 0: an extra post's, /postnow's, none of an occurrence's.)
                    f"DELETE FROM {table} WHERE announcement_id = ? AND fire_ts >= 0 "
                    "AND fire_ts < ? "
                    "AND NOT EXISTS (SELECT 1 FROM bot_deliveries d "
                    f"WHERE d.announcement_id = ? AND d.fire_ts = {table}.fire_ts)",
                    (announcement_id, before, announcement_id),
                )
            posts = sum(1 for s in states if s in _POSTED)
            await self.db.execute(
                "UPDATE bot_announcements SET pruned_occurrences = pruned_occurrences + ?, "
                "pruned_posts = pruned_posts + ? WHERE id = ?",
                (len(states), posts, announcement_id),
            )
        return len(states)

    async def prune_history(
        self, announcement_id: int, before: float, keep: int, limit: int
    ) -> int:
        """Delete up to ``limit`` of the announcement's history entries made before
        ``before``, oldest first, keeping its ``keep`` latest (what /info lists, and
        whether there were earlier ones), its creation, and its latest resume (which tells
        a delivery that its time came while it was paused). How many."""
        cur = await self.db.execute(
            "DELETE FROM bot_history WHERE id IN ("
            " SELECT h.id FROM bot_history h"
            " WHERE h.announcement_id = ? AND h.at < ? AND h.action <> ?"
            "  AND h.id < (SELECT k.id FROM bot_history k WHERE k.announcement_id = ?"
            "   ORDER BY k.id DESC LIMIT 1 OFFSET ?)"
            "  AND h.id <> COALESCE((SELECT r.id FROM bot_history r"
            "   WHERE r.announcement_id = ? AND r.action = ? ORDER BY r.id DESC LIMIT 1), -1)"
            " ORDER BY h.id LIMIT ?) RETURNING id",
            (
                announcement_id, before, HistoryAction.CREATED.value,
                announcement_id, keep - 1,
                announcement_id, HistoryAction.RESUMED.value,
                limit,
            ),
        )  # fmt: skip
        return len(await cur.fetchall())

    async def prune_events(self, announcement_id: int, before: float, limit: int) -> int:
        """Delete up to ``limit`` of the announcement's Discord events' rows of occurrences
        before ``before``, oldest first (only those still to come are shown or synced).
        How many."""
        cur = await self.db.execute(
            "DELETE FROM bot_events WHERE announcement_id = ? AND fire_ts IN ("
            " SELECT fire_ts FROM bot_events WHERE announcement_id = ? AND fire_ts < ?"
            " ORDER BY fire_ts LIMIT ?) RETURNING fire_ts",
            (announcement_id, announcement_id, before, limit),
        )
        return len(await cur.fetchall())

    async def prune_extra_posts(self, before: float, limit: int) -> int:
        """Delete up to ``limit`` of ``/postnow``'s posts (any server's) asked for before
        ``before`` that ended (sent or failed), oldest first; how many."""
        cur = await self.db.execute(
            "DELETE FROM bot_extra_posts WHERE id IN (SELECT id FROM bot_extra_posts "
            "WHERE created_at < ? AND state IN ('sent', 'failed') ORDER BY id LIMIT ?) "
            "RETURNING id",
            (before, limit),
        )
        return len(await cur.fetchall())

    async def prune_stale_command_counts(self, minute: int, limit: int) -> int:
        """Delete up to ``limit`` members' command counts of minutes before ``minute`` (the
        count of a member who used no command since; each member's own are deleted at
        their next command); how many."""
        cur = await self.db.execute(
            "DELETE FROM bot_command_counts WHERE (guild_id, user_id, minute) IN ("
            "SELECT guild_id, user_id, minute FROM bot_command_counts WHERE minute < ? "
            "LIMIT ?) RETURNING minute",
            (minute, limit),
        )
        return len(await cur.fetchall())
