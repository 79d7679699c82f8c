"""Where an announcement's schedule stands in the scheduler: read in the bot's SQL from the
scheduler's own tables (in the same database), through their indexes only:
``scheduler_jobs`` by ``(schedule_name, fire_ts)`` and ``scheduler_schedules`` by its
primary key. Only the columns named here are read."""

from __future__ import annotations

from .table import Table

# The schedule's pending occurrence jobs of one function (due, or waiting for their
# channel's slot) and its next fire, the earliest of them.
_NEXT_OCCURRENCE = (
    "SELECT min(t) AS first FROM ("
    "SELECT fire_ts AS t FROM scheduler_jobs "
    "WHERE schedule_name = ? AND state = 'pending' AND fn = ? AND fire_ts IS NOT NULL "
    "UNION ALL "
    "SELECT next_fire_ts AS t FROM scheduler_schedules WHERE name = ?"
    ") AS times"
)


class OccurrenceReads(Table):
    """A schedule's coming occurrence (on the scheduler's tables)."""

    __slots__ = ()

    async def next_occurrence(self, schedule_name: str, fn: str) -> float | None:
        """The fire time of the schedule's first occurrence still to run: the earliest of
        its pending ``fn`` jobs (one already due but not yet run included) and its next
        fire; None if it has neither (or there is no such schedule). One statement, its
        cost the schedule's own jobs, however many other jobs are pending."""
        row = await self._one(_NEXT_OCCURRENCE, (schedule_name, fn, schedule_name))
        return None if row is None or row["first"] is None else float(row["first"])
