"""Retention (``HISTORY_DAYS``): delivery records, change history and Discord events' rows
older than that are deleted, every hour, by one job for every instance.

The job (:data:`PRUNE_FN`) is the occurrence of a static schedule (:data:`RETENTION_CRON`),
so each hour's run is one job whatever the number of instances (the scheduler's idempotency
key of an occurrence). It walks ``bot_deliveries`` and ``bot_history`` in id order (the
order rows were written) from where the last run stopped (kept in ``bot_meta``), up to the
first row written after the retention's cutoff; every announcement met on the way has its
old rows deleted. A run therefore reads the rows that went past the cutoff since the last
one, not the whole table, and visits an announcement only when it has something new to
delete.

What is kept of each announcement, whatever its age (what ``/list``, ``/info`` and the
dashboard show, and what the bot itself reads back):

- its :data:`KEEP_DELIVERIES` latest occurrences that came, its latest attempted one (an
  edit brings its post up to date; ``/list`` shows its publish state) and its latest post;
- its :data:`KEEP_HISTORY` latest history entries (``/info`` lists all but one and says
  whether there were earlier ones), its creation, and its latest resume (a delivery of an
  occurrence that came while it was paused is told so);
- what the deleted delivery rows counted (``pruned_occurrences``, ``pruned_posts`` on its
  row, in the transaction that deletes them): its ``{occurrence}`` numbers and its number of
  posts (``times``) go on as if they were there.

The same run deletes what grows with use rather than with occurrences: the import dry runs
that expired, ``/postnow``'s posts older than the retention (those that ended), and the
command counts of past minutes of members who used no command since.

Each transaction deletes at most ``batch`` rows (and looks at a bounded number of
announcements), so a writer waits for one short transaction at most and memory stays flat;
a run that stops half-way (a crash, a deploy) leaves whole batches done, and the next run
goes on from them.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from scheduler import ActionContext, Registry, Retry, cron_jobs

from ..db import BotDb
from .reading import INFO_DELIVERIES, INFO_HISTORY
from .transfer import PENDING_FOR

if TYPE_CHECKING:
    from scheduler import CronJobs, Scheduler

    from ..db import Walked

log = logging.getLogger("crier.retention")

PRUNE_FN = "announcements:prune"
"""The job that deletes what is older than the retention (one run per hour)."""
RETENTION_CRON = "crier:retention"
"""The static schedule whose occurrences are the :data:`PRUNE_FN` jobs."""
PRUNE_EVERY = timedelta(hours=1)
"""How often the retention job runs."""
PRUNE_RETRY = Retry(max_failures=5, initial_backoff=60.0, base=2.0)


@dataclass(frozen=True, slots=True)
class PruneArgs:
    """A run of the retention job: it deletes what is older than the retention at its
    time (no arguments)."""


PRUNE_BATCH = 1000
"""The most rows one transaction of the retention deletes."""
WALK_BATCH = 1000
"""The most rows one read of a walk looks at."""
ANNOUNCEMENTS_PER_TRANSACTION = 100
"""The most announcements one transaction of the retention looks at."""

KEEP_DELIVERIES = INFO_DELIVERIES
"""An announcement's latest occurrences kept whatever their age (those /info lists)."""
KEEP_HISTORY = INFO_HISTORY + 1
"""An announcement's latest history entries kept whatever their age (those /info lists, and
one more, which tells it that there were earlier ones)."""

DELIVERIES_WALKED = "retention:deliveries"
"""``bot_meta``: the id of the last delivery row the walk went past."""
HISTORY_WALKED = "retention:history"
"""``bot_meta``: the id of the last history entry the walk went past."""


@dataclass(slots=True)
class Pruned:
    """What one run deleted, and in how many write transactions."""

    deliveries: int = 0
    history: int = 0
    events: int = 0
    pending_imports: int = 0
    extra_posts: int = 0
    command_counts: int = 0
    transactions: int = 0


PrunePart = Callable[[BotDb, int, int, Pruned], Awaitable[int]]
"""Delete what may go of one announcement, at most the budget given; how many rows."""
WalkPart = Callable[[BotDb, int, int], Awaitable[list["Walked"]]]
"""Read up to a number of rows of a table after an id, in id order."""


class Retention:
    """The retention job: :meth:`register` it, pass :meth:`crons` to the scheduler."""

    def __init__(
        self,
        sched: Scheduler,
        keep_for: float,
        *,
        batch: int = PRUNE_BATCH,
        walk: int = WALK_BATCH,
    ) -> None:
        self.sched = sched
        self.keep_for = keep_for
        """Seconds: what is older is deleted (``HISTORY_DAYS``)."""
        self.batch = batch
        self.walk = walk
        self.pause_point: Callable[[], Awaitable[None]] | None = None
        """Awaited after each write transaction of a run (where a process could stop):
        tests read the database there, or stop the run."""

    def register(self, registry: Registry) -> None:
        """Register :data:`PRUNE_FN` (idempotent: a run that a crash cut short is run
        again, and goes on from what was done)."""
        registry.action(PRUNE_FN, args=PruneArgs, idempotent=True, retry=PRUNE_RETRY)(self._job)

    @staticmethod
    def crons() -> CronJobs:
        """The static schedule of the retention job: every :data:`PRUNE_EVERY`."""
        crons = cron_jobs()
        crons.interval(RETENTION_CRON, PRUNE_EVERY, PRUNE_FN, PruneArgs())
        return crons

    async def _job(self, ctx: ActionContext, args: PruneArgs) -> dict[str, int]:
        pruned = await self.prune(ctx.heartbeat)
        return asdict(pruned)

    async def prune(self, heartbeat: Callable[[], Awaitable[object]] | None = None) -> Pruned:
        """Delete what is older than the retention (see the module), a bounded batch per
        transaction; ``heartbeat`` is awaited after each (a job's, to keep its lease)."""
        now = self.sched.clock.now().timestamp()
        before = now - self.keep_for
        done = Pruned()

        async def step() -> None:
            done.transactions += 1
            if self.pause_point is not None:
                await self.pause_point()
            if heartbeat is not None:
                await heartbeat()

        async def occurrences(rows: BotDb, ann_id: int, budget: int, out: Pruned) -> int:
            n = await rows.prune_deliveries(ann_id, before, now, KEEP_DELIVERIES, budget)
            out.deliveries += n
            if n < budget:
                m = await rows.prune_events(ann_id, before, budget - n)
                out.events += m
                n += m
            return n

        async def history(rows: BotDb, ann_id: int, budget: int, out: Pruned) -> int:
            n = await rows.prune_history(ann_id, before, KEEP_HISTORY, budget)
            out.history += n
            return n

        await self._walk(DELIVERIES_WALKED, BotDb.walk_deliveries, before, occurrences, done, step)
        await self._walk(HISTORY_WALKED, BotDb.walk_history, before, history, done, step)
        # What grows with use rather than with occurrences: the dry runs of imports that
        # expired (each new one deletes a few too), /postnow's posts past the retention,
        # and the command counts of members who used no command since their minute.
        batch, minute = self.batch, int(now // 60)
        done.pending_imports = await self._drain(
            lambda rows: rows.prune_pending_imports(now - PENDING_FOR, batch), step
        )
        done.extra_posts = await self._drain(
            lambda rows: rows.prune_extra_posts(before, batch), step
        )
        done.command_counts = await self._drain(
            lambda rows: rows.prune_stale_command_counts(minute, batch), step
        )
        if done.deliveries or done.history or done.events or done.extra_posts:
            log.info(
                "retention: deleted %d delivery record(s), %d history entr(ies), %d Discord "
                "event record(s) and %d /postnow record(s) older than %g day(s)",
                done.deliveries, done.history, done.events, done.extra_posts,
                self.keep_for / 86400,
            )  # fmt: skip
        return done

    async def _drain(
        self, delete: Callable[[BotDb], Awaitable[int]], step: Callable[[], Awaitable[None]]
    ) -> int:
        """``delete`` (at most a batch) in a transaction of its own, again until it deletes
        less than a batch; how many in all."""
        total = 0
        while True:
            async with self.sched.transaction() as ctx:
                n = await delete(BotDb(ctx.db))
            total += n
            await step()
            if n < self.batch:
                return total

    async def _walk(
        self,
        key: str,
        read: WalkPart,
        before: float,
        prune: PrunePart,
        done: Pruned,
        step: Callable[[], Awaitable[None]],
    ) -> None:
        """Walk a table from the id kept under ``key`` up to its first row written at or
        after ``before``; ``prune`` each announcement met; keep where the walk stopped."""
        while True:
            async with self.sched.reader() as db:
                rows = BotDb(db)
                after = int(await rows.meta_value(key) or 0)
                walked = await read(rows, after, self.walk)
            old: list[Walked] = []
            for row in walked:
                if row.at >= before:
                    break
                old.append(row)
            if not old:
                return
            await self._prune_each(
                list(dict.fromkeys(r.announcement_id for r in old)), prune, done, step
            )
            async with self.sched.transaction() as ctx:
                await BotDb(ctx.db).set_meta(key, str(old[-1].id))
            await step()
            if len(old) < self.walk:
                return

    async def _prune_each(
        self,
        ann_ids: list[int],
        prune: PrunePart,
        done: Pruned,
        step: Callable[[], Awaitable[None]],
    ) -> None:
        """``prune`` each of ``ann_ids`` until it deletes nothing more, sharing each
        transaction's budget of :attr:`batch` rows among them (an announcement left with
        more goes on in the next transaction)."""
        pending = deque(ann_ids)
        while pending:
            async with self.sched.transaction() as ctx:
                rows = BotDb(ctx.db)
                budget, looked = self.batch, 0
                while pending and budget > 0 and looked < ANNOUNCEMENTS_PER_TRANSACTION:
                    budget -= await prune(rows, pending[0], budget, done)
                    looked += 1
                    if budget > 0:  # it had fewer: nothing of it is left to delete
                        pending.popleft()
            await step()
