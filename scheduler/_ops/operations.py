"""The named operations: every operation of this package behind one method each, with the
contract it keeps, written once over one primitive, :meth:`Operations.run`.

There is one way to call them. In a write transaction, ``tx.cancel(job_id)`` (a
:class:`~scheduler.abc.Tx` is :class:`Operations` in that transaction, at its time); outside
one, at a given time, ``store.at(now).cancel(job_id)`` (each write in a transaction of its
own, each read against a snapshot). Every method reads the time from there, never from an
argument, and what schedule rows name is resolved by the store's resolver (see
:mod:`scheduler._resolver`), never by a callback.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, TypeVar

from . import compose, dispatch, history, reads, schedules, ticks
from . import jobs as job_ops

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..models import Job, JobState, Run
    from ..store_types import (
        Claim,
        CompletionReport,
        NewJob,
        Op,
        OpState,
        Outcome,
        ReclaimReport,
        ReconcileReport,
        ScheduleDef,
        ScheduleRow,
        StoreGauges,
    )

T = TypeVar("T")


class Operations(ABC):
    """The named operations on the scheduler's data, over :meth:`run` (and :meth:`read`,
    :meth:`run_brief`, which a store may run differently)."""

    __slots__ = ()

    @abstractmethod
    async def run(self, op: Callable[[OpState], Op[T]]) -> T:
        """Run a scheduler operation (see :mod:`scheduler.store_types`) and return its
        result."""

    async def read(self, op: Callable[[OpState], Op[T]]) -> T:
        """Run a read-only operation (in a transaction, simply in it)."""
        return await self.run(op)

    async def run_brief(self, op: Callable[[OpState], Op[T]]) -> T:
        """Run the driver's bookkeeping ``op`` (a claim, a batch of completions: a few
        indexed statements), which a store may run on the event loop's own thread."""
        return await self.run(op)

    # --- jobs ------------------------------------------------------------------------------

    async def enqueue(self, job: NewJob) -> int:
        """Insert ``job``; with a live idempotency key, return the existing job's id and insert
        nothing. A child of a canceled parent is born canceled (firing its ``on_complete``).
        A transaction may batch the write until its next statement or its commit."""
        return await self.run(lambda st: job_ops.enqueue(st, job))

    async def enqueue_many(self, jobs: Sequence[NewJob]) -> list[int]:
        """:meth:`enqueue` each of ``jobs`` in order, as one operation (one round trip on a
        store that drives an operation whole); returns their ids in the same order. Each job
        means exactly what it would alone: a live idempotency key gives the existing job's id
        (also a key taken earlier in the same batch)."""
        return await self.run(lambda st: job_ops.enqueue_many(st, jobs))

    async def debounce(self, job: NewJob, key: str, quiet: float, max_wait: float | None) -> int:
        """One job per burst of calls with ``job.fn`` and ``key``: the open one (pending and
        never started) takes ``job``'s arguments and runs ``quiet`` seconds from now, or
        ``max_wait`` after the burst's first call if that is sooner; without one, ``job``
        opens a burst. Returns the burst's job id, the same for every call of the burst.
        Two transactions opening one key's burst at once make one job (the unique index on
        open bursts decides); a call after the job started opens a new burst."""
        return await self.run(lambda st: compose.debounce(st, job, key, quiet, max_wait))

    async def batch(
        self, job: NewJob, key: str, item_json: str, max_items: int, max_wait: float
    ) -> int:
        """Add ``item_json`` to the open batch of ``job.fn`` and ``key`` (or open one with
        ``job``, whose arguments are ``{"key": key, "items": []}``): due ``max_wait`` after its
        first item, or at once (and closed) when ``max_items`` are in it. Returns the batch's
        job id. Each item is in exactly one batch; its handler gets the items in the order
        they were added, and a retry gets the same items."""
        return await self.run(
            lambda st: compose.batch(st, job, key, item_json, max_items, max_wait)
        )

    async def cancel(self, job_id: int) -> bool:
        """Cancel a pending job (firing its ``on_complete``) and, breadth first, its pending
        descendants, even when the job itself is running or finished. Returns whether the job
        itself was canceled; :class:`~scheduler.errors.JobNotFound` if there is no such job."""
        return await self.run(lambda st: job_ops.cancel(st, job_id))

    async def retry(self, job_id: int) -> bool:
        """Put a failed or canceled job back to pending now, with a fresh budget; False if it
        is in another state, :class:`~scheduler.errors.JobNotFound` if there is no such job."""
        return await self.run(lambda st: job_ops.retry(st, job_id))

    async def get_job(self, job_id: int) -> Job | None:
        """The job with its payloads (args, context, result, error), or None."""
        return await self.read(lambda st: reads.get_job(st, job_id))

    async def job_outcomes(self, job_ids: Sequence[int]) -> dict[int, dict[str, Any] | None]:
        """For each of ``job_ids`` that exists (one read however many), its terminal outcome
        as ``on_complete`` is given it (``{"kind": "success", "value"}``, ``{"kind":
        "failed", "error"}``, ``{"kind": "canceled"}``), or None while it has not ended; a
        job id with no job is left out."""
        return await self.read(lambda st: reads.job_outcomes(st, job_ids))

    async def list_jobs(
        self,
        *,
        state: JobState | None = None,
        fn: str | None = None,
        before_id: int | None = None,
        limit: int = 50,
    ) -> list[Job]:
        """Up to ``limit`` jobs, newest first, optionally of one state and/or function; page
        with ``before_id`` (only jobs with a smaller id)."""
        return await self.read(lambda st: reads.list_jobs(st, state, fn, before_id, limit))

    async def count_by_state(self) -> dict[JobState, int]:
        """How many jobs are in each state (every state present, 0 for none)."""
        return await self.read(reads.count_by_state)

    # --- the driver ------------------------------------------------------------------------

    async def claim_due(
        self,
        lease_until: float,
        *,
        mutation_limit: int,
        action_limit: int,
        process: str | None = None,
    ) -> Claim:
        """Claim up to ``mutation_limit`` due mutations and ``action_limit`` due actions, in
        ``next_ts`` order, each only if still exactly ``pending`` (a paced one only in its
        key's open slot); each claim bumps the job's run count (the fence) and sets its lease
        to ``lease_until``, held by ``process`` (the name a lost lease's run history row gets).
        Also returns when work is next due (actions only counted when ``action_limit > 0``)
        and the next schedule fire time."""
        return await self.run_brief(
            lambda st: dispatch.claim_due(st, lease_until, mutation_limit, action_limit, process)
        )

    async def complete(
        self, outcomes: Sequence[Outcome], process: str | None = None
    ) -> CompletionReport:
        """Record run outcomes: success, retry with backoff, dead-letter (firing
        ``on_complete`` with the terminal result), or release. Each is fenced by the run count
        and ``in_progress``, so a late worker can never overwrite a newer outcome. Each
        outcome that applies writes its run's history row (ran by ``process``) in the same
        transaction; a stale one writes none."""
        return await self.run_brief(lambda st: dispatch.complete(st, outcomes, process))

    async def extend_lease(self, job_id: int, run_count: int, until: float) -> bool:
        """Move a held lease to ``until``; False if the run no longer holds the job."""
        return await self.run(lambda st: dispatch.extend_lease(st, job_id, run_count, until))

    async def reclaim_expired(self, limit: int = 1000, process: str | None = None) -> ReclaimReport:
        """Reclaim up to ``limit`` jobs whose lease expired before now: mutations and
        idempotent actions back to pending with the attempt counted (dead-lettered once the
        budget is spent), other actions to failed with ``on_complete`` fired. Each lost run
        is recorded in the run history as ``lease_lost``, in the same transaction, ran by
        the process whose claim holds the lease (the sweeping ``process`` is named in its
        error)."""
        return await self.run(lambda st: dispatch.reclaim_expired(st, limit, process))

    async def next_due_time(self) -> float | None:
        """When the next pending job may start (a paced one: once its key's slot opens), or
        None if nothing is pending."""
        return await self.read(dispatch.next_due_time)

    async def prune(self, before: float, limit: int = 1000) -> int:
        """Delete up to ``limit`` terminal jobs (and their payloads) finished before
        ``before``, and the pace slots that opened before it; returns how many jobs."""
        return await self.run(lambda st: dispatch.prune(st, before, limit))

    # --- run history and metrics -----------------------------------------------------------

    async def runs(
        self,
        job_id: int | None = None,
        fn: str | None = None,
        since: float | None = None,
        limit: int = 100,
    ) -> list[Run]:
        """Up to ``limit`` recorded runs (at most ``RUN_LIST_LIMIT``), newest first: of one
        job and/or one function, finished at or after ``since`` (epoch seconds)."""
        return await self.read(lambda st: history.list_runs(st, job_id, fn, since, limit))

    async def gauges(self, cap: int = 100_000) -> StoreGauges:
        """Jobs by active state, the due backlog (work that could start now, and since when
        its oldest could), the due paced jobs waiting for their key's slot, and the schedule
        totals, for metrics: every count stops at ``cap`` rows, so a read costs the same
        however many jobs there are."""
        return await self.read(lambda st: reads.gauges(st, cap))

    async def prune_runs(self, before: float, limit: int = 5000) -> int:
        """Delete up to ``limit`` runs that finished before ``before``, oldest first; returns
        how many."""
        return await self.run(lambda st: history.prune_runs(st, before, limit))

    # --- schedules -------------------------------------------------------------------------

    async def create_schedule(self, definition: ScheduleDef, start: float | None = None) -> None:
        """Insert a schedule; it first fires at its trigger's first time after now, or at its
        first time at or after ``start`` when that is later. A taken name raises
        :class:`~scheduler.errors.DuplicateName`."""
        await self.run(lambda st: schedules.create(st, definition, start))

    async def create_schedules(
        self, items: Sequence[tuple[ScheduleDef, float | None]]
    ) -> list[float]:
        """:meth:`create_schedule` each ``(definition, start)`` in order, as one operation;
        returns their first fire times in the same order. A taken name (also one taken
        earlier in the same batch) raises :class:`~scheduler.errors.DuplicateName`."""
        return await self.run(lambda st: schedules.create_many(st, items))

    async def get_schedule(self, name: str) -> ScheduleRow:
        """The schedule named ``name``; :class:`~scheduler.errors.ScheduleNotFound` if none."""
        return await self.read(lambda st: schedules.get(st, name))

    async def get_schedules(self, names: Sequence[str]) -> dict[str, ScheduleRow]:
        """The schedules of ``names`` that exist, by name (a name with no schedule is left
        out), in one read however many there are."""
        return await self.read(lambda st: schedules.get_many(st, names))

    async def list_schedules(self, source: str | None = None) -> list[ScheduleRow]:
        """Every schedule by name, or only those of ``source`` (``"static"``/``"runtime"``)."""
        return await self.read(lambda st: schedules.list_all(st, source))

    async def pause_schedule(self, name: str) -> bool:
        """Stop ticking ``name``; occurrences already made are left alone. False if it was
        paused already."""
        return await self.run(lambda st: schedules.pause(st, name))

    async def resume_schedule(self, name: str) -> bool:
        """Tick ``name`` again from its next time after now (paused time is not replayed).
        False if it was not paused."""
        return await self.run(lambda st: schedules.resume(st, name))

    async def trigger_schedule(self, name: str) -> int:
        """Enqueue one occurrence of ``name`` due now (overlap and pause do not apply); returns
        its job id. It runs the live registry's target of its function (the stored one when
        this process does not know it)."""
        return await self.run(lambda st: schedules.trigger(st, name))

    async def backfill_schedule(self, name: str, start: float, end: float) -> list[int]:
        """Enqueue, due now and oldest first, every fire time of ``name`` in ``[start, end]``
        whose occurrence does not exist yet; returns the new job ids. A range of more than
        ``BACKFILL_CAP`` times raises :class:`~scheduler.errors.InvalidSchedule`."""
        return await self.run(lambda st: schedules.backfill(st, name, start, end))

    async def delete_schedule(self, name: str) -> int:
        """Delete ``name`` and cancel its pending occurrences; returns how many."""
        return await self.run(lambda st: schedules.delete(st, name))

    async def tick_schedules(self, limit: int) -> int:
        """Materialize the due times of up to ``limit`` due schedules under their catch-up
        and overlap policies, each as a job keyed by (name, fire time), and re-anchor each
        schedule past its whole backlog. Returns how many schedules were due."""
        return await self.run(lambda st: ticks.tick(st, limit))

    async def reconcile_schedules(self, definitions: Sequence[ScheduleDef]) -> ReconcileReport:
        """Make the static schedules match ``definitions`` by name: unchanged ones are left
        alone (keeping their phase), edited ones take the new definition from their next
        time after now, new ones start, missing ones are deleted with their pending
        occurrences canceled. A runtime schedule of the same name raises
        :class:`~scheduler.errors.DuplicateName`."""
        return await self.run(lambda st: schedules.reconcile(st, definitions))

    async def next_schedule_time(self) -> float | None:
        """The earliest next fire time of an active schedule, or None."""
        return await self.read(ticks.next_fire)
