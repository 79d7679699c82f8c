"""The dispatch loop: wake on commit, one timer to the earliest due job, the sweep backstop.

Nothing here polls except the lease sweep. A pass claims due work in batches, starts the
actions (up to the concurrency limit) and runs the mutations in one write transaction, each
in its own savepoint; completions of actions travel to the store in batches. A wake that
lands while a pass runs causes exactly one more pass.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import TYPE_CHECKING, Any

from . import _runs, _sweep
from ._engine import Engine
from ._outage import Outage
from .abc import Tx
from .clock import Deadline, TimerHandle, monotonic_of
from .context import (
    ActionContext,
    LazySavepointDb,
    RunLease,
    TransactionContext,
    TransactionScheduling,
)
from .errors import (
    JobTimeout,
    LeaseLost,
    NonRetryable,
    NotSerializable,
    RetryLater,
    SchedulerError,
)
from .models import JobInfo, JobKind

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from ._engine import Engine
    from .abc import Tx
    from .registry import Registration
    from .store_types import ClaimedJob, Outcome

log = logging.getLogger("scheduler.driver")

FLUSH_BATCH = 512
"""Outcomes recorded per transaction (keeps each completion transaction short)."""


class Driver:
    """Claims due work and runs it: mutations in one write transaction per batch, actions
    as tasks under a lease; records the outcomes; ticks the schedules; sweeps."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.settings = engine.settings
        self.store = engine.store
        self.clock = engine.clock
        self.monotonic = monotonic_of(engine.clock)
        self._wake = asyncio.Event()
        self._timer: TimerHandle | None = None
        self._armed: float | None = None
        """When the loop's timer wakes it (None: it waits for a wake-up alone)."""
        self._stopping = False
        self._passing = False
        self._saturated = False
        self._actions: set[asyncio.Task[None]] = set()
        self._completions: list[Outcome] = []
        self._recording = 0
        """Outcomes taken by a flush that is still writing them."""
        self._flush_task: asyncio.Task[None] | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self._sweep_task: asyncio.Task[None] | None = None
        self.outage = Outage(engine.stats, log, repr(engine.store))
        """The loops' failures: logged once when they start and once when they end."""
        self._sweeping = False
        self._next_sweep = 0.0
        """When (by ``self.monotonic``) the sweeper's next sweep is due."""
        self._idle = asyncio.Event()
        self.passes = 0
        """How many dispatch passes ran (for tests and benchmarks)."""

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self._next_sweep = self.monotonic()  # the first sweep is due at once
        self._loop_task = asyncio.create_task(self._loop(), name="scheduler-driver")
        self._sweep_task = asyncio.create_task(self._sweeper(), name="scheduler-sweep")

    def wake(self) -> None:
        self._wake.set()
        self._changed()

    async def stop(self, grace: float) -> None:
        """Stop claiming, let in-flight work finish within ``grace`` seconds, then cancel the
        rest: mutations roll back and are released, interrupted actions are recorded."""
        self._stopping = True
        self._wake.set()
        if self._timer is not None:
            self._timer.cancel()
        if self._sweep_task is not None:
            self._sweep_task.cancel()
            await asyncio.gather(self._sweep_task, return_exceptions=True)
        waiting: set[asyncio.Task[Any]] = set(self._actions)
        if self._loop_task is not None:
            waiting.add(self._loop_task)
        if waiting:
            _, late = await asyncio.wait(waiting, timeout=grace)
            for task in late:
                task.cancel()
            if late:
                log.warning(
                    "shutdown: cancelled %d run(s) still going after %.1fs", len(late), grace
                )
                await asyncio.gather(*late, return_exceptions=True)
        await self._drain_completions()

    # --- the loop ------------------------------------------------------------------------------

    async def _loop(self) -> None:
        while not self._stopping:
            self._wake.clear()
            self._passing = True
            try:
                next_due = await self._pass()
                self.outage.worked("dispatch")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.outage.failed("dispatch", exc)  # logged once, when it starts failing
                next_due = self.clock.time() + 1.0
            finally:
                self._passing = False
                self.passes += 1
                self._changed()
            if self._stopping:
                break
            if self._wake.is_set():
                continue  # woken mid-pass: one more pass
            self._arm(next_due)
            await self._wake.wait()

    def _arm(self, ts: float | None) -> None:
        self._armed = ts
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if ts is not None:
            self._timer = self.clock.call_at(ts, self._wake.set)

    async def _pass(self) -> float | None:
        engine, settings = self.engine, self.settings
        # A lapsed proof of life (see scheduler._holders): nothing is claimed until this
        # process has proved itself again, since another may find it gone meanwhile (a pass
        # that cannot prove it fails, as one that cannot reach the store does).
        await engine.holders.restore()
        batch = settings.batch_size
        while True:
            now = self.clock.time()
            # A finished run holds its slot until its outcome is recorded, so a slow store
            # cannot pile up unrecorded completions (and their leases) without bound.
            unrecorded = len(self._completions) + self._recording
            free = max(0, settings.max_concurrency - len(self._actions) - unrecorded)
            action_limit = min(batch, free)
            # Taken before the claim is sent: the lease the store stamps with ``now`` cannot
            # have begun earlier than this, so leases measured from it never overstate.
            claimed_at = self.monotonic()
            epoch = engine.holders.epoch  # likewise: a lapse after this may lose the claim
            claim = await self.store.at(now).claim_due(
                now + settings.lease_seconds,
                mutation_limit=batch,
                action_limit=action_limit,
                process=settings.process_id,
            )
            engine.stats.claimed_jobs((j.kind, now - j.next_ts) for j in claim.jobs)
            mutations = [j for j in claim.jobs if j.kind is JobKind.MUTATION]
            actions = [j for j in claim.jobs if j.kind is JobKind.ACTION]
            for job in actions:
                task = asyncio.create_task(
                    self._run_action(job, claimed_at, epoch), name=f"scheduler-job-{job.id}"
                )
                self._actions.add(task)
            self._saturated = action_limit == 0 or len(actions) == action_limit
            if mutations:
                await self._run_mutations(mutations)
            if self._stopping:
                return None
            if claim.next_tick is not None and claim.next_tick <= self.clock.time():
                await engine.tick_schedules()
                continue  # claim what the tick made due
            full = len(mutations) == batch or (actions and len(actions) == action_limit)
            if not full:
                times = [t for t in (claim.next_due, claim.next_tick) if t is not None]
                return min(times, default=None)

    # --- mutations -----------------------------------------------------------------------------

    async def _run_mutations(self, jobs: list[ClaimedJob]) -> None:
        try:
            async with self.store.transaction(self.clock.time()) as tx:
                outcomes = [await self._run_mutation(tx, job) for job in jobs]
                # Every completion commits with the batch's writes: one round trip for all.
                report = await tx.complete(outcomes, self.settings.process_id)
            self.engine.stats.recorded(report.outcomes, report.stale)
        except asyncio.CancelledError:
            # Rolled back: nothing they did happened. Hand them back without counting.
            await self._record([_runs.released(j) for j in jobs], urgent=True)
            raise
        except Exception as exc:
            log.exception("mutation batch of %d job(s) failed to commit", len(jobs))
            await self._record([_runs.commit_failed(j, exc) for j in jobs], urgent=True)

    async def _run_mutation(self, tx: Tx, job: ClaimedJob) -> Outcome:
        try:
            reg = self.engine.registry.mutation_named(job.fn)
            args = reg.decode_args(job.args)
        except SchedulerError as exc:
            return _runs.failed(job, exc, retryable=False)
        db = LazySavepointDb(tx, f"job_{job.id}")
        ctx = TransactionContext(
            db,
            TransactionScheduling(self.engine, tx, db.ensure),
            tx.state.now,
            _runs.job_info(job),
        )
        try:
            outcome = _runs.succeeded(job, await self._bounded(job, reg, reg.handler(ctx, args)))
        except Exception as exc:
            if db.opened:
                await tx.rollback_to(db.savepoint)
                await tx.release(db.savepoint)
            return self._failure(job, exc)
        if db.opened:
            await tx.release(db.savepoint)
        return outcome

    async def _bounded(self, job: ClaimedJob, reg: Registration, run: Awaitable[Any]) -> Any:
        """Await a handler's ``run`` within the job's timeout (its own, else the
        registration's, else none), measured on the scheduler's clock from now: a run still
        going then is cancelled, and :class:`JobTimeout` raised in its place."""
        timeout = job.timeout if job.timeout is not None else reg.timeout
        if timeout is None:
            return await run
        error = partial(JobTimeout, f"still running after its timeout of {timeout:g}s: cancelled")
        with Deadline(self.clock, self.clock.time() + timeout, error):
            return await run

    def _failure(self, job: ClaimedJob, exc: Exception) -> Outcome:
        deterministic = isinstance(exc, NonRetryable | NotSerializable) or (
            self.store.is_deterministic_error(exc)
        )
        if isinstance(exc, JobTimeout):
            log.warning(
                "job %d (%s) attempt %d %s", job.id, job.fn, job.attempts + 1, exc
            )  # no traceback: where it was cancelled says nothing
        elif isinstance(exc, RetryLater):
            log.warning(
                "job %d (%s) attempt %d failed: %s; will retry",
                job.id, job.fn, job.attempts + 1, _runs.describe_error(exc),
            )  # fmt: skip
        elif not isinstance(exc, NonRetryable):
            log.warning(
                "job %d (%s) attempt %d failed: %s",
                job.id,
                job.fn,
                job.attempts + 1,
                _runs.describe_error(exc),
                exc_info=exc,
            )
        return _runs.failed(job, exc, retryable=not deterministic)

    # --- actions -------------------------------------------------------------------------------

    async def _run_action(self, job: ClaimedJob, claimed_at: float, epoch: int) -> None:
        task = asyncio.current_task()
        try:
            outcome = await self._action_outcome(job, claimed_at, epoch)
        finally:
            if task is not None:
                self._actions.discard(task)
        if outcome is not None:
            # Its slot stays taken until the outcome is recorded: the flush wakes the loop
            # then (waking it now would claim with no more room than before).
            await self._record([outcome])
            return
        self._changed()
        if self._saturated and not self._stopping:
            self.wake()

    async def _action_outcome(
        self, job: ClaimedJob, claimed_at: float, epoch: int
    ) -> Outcome | None:
        """The run's outcome to record; None when there is nothing to record (the job was
        found to be held by another run, so any write would be fenced out anyway)."""
        try:
            reg = self.engine.registry.get(job.fn)
            if reg.kind is not JobKind.ACTION:
                raise SchedulerError(f"{job.fn!r} is no longer registered as an action")
            args = reg.decode_args(job.args)
        except SchedulerError as exc:
            return _runs.failed(job, exc, retryable=False)
        settings = self.settings
        lease = RunLease(
            self.monotonic,
            claimed_at + settings.lease_seconds,
            settings.lease_margin,
            intact=partial(self.engine.holders.intact, epoch),
        )
        lease.task = asyncio.current_task()
        info = _runs.job_info(job)
        ctx = ActionContext(self.engine, info, lease, partial(self.heartbeat, info))
        try:
            return _runs.succeeded(job, await self._bounded(job, reg, reg.handler(ctx, args)))
        except LeaseLost as exc:
            return self._discarded(job, lease, exc)
        except asyncio.CancelledError as exc:
            if lease.lost and not self._stopping:
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                return self._discarded(job, lease, exc)
            return _runs.interrupted(job)
        except Exception as exc:
            return self._failure(job, exc)

    def _discarded(self, job: ClaimedJob, lease: RunLease, exc: BaseException) -> Outcome | None:
        """A run that stopped because it may no longer hold its lease: logged once, without
        a traceback (see :func:`scheduler._runs.lease_lost` for what is recorded)."""
        why = "the job was reclaimed" if lease.lost else str(exc)
        log.warning(
            "job %d (%s) run %d discarded: lease lost (%s)", job.id, job.fn, job.run_count, why
        )
        return _runs.lease_lost(job, found_lost=lease.lost, why=why)

    async def _record(self, outcomes: list[Outcome], urgent: bool = False) -> None:
        self._completions.extend(outcomes)
        if urgent:
            await self._drain_completions()
        elif self._flush_task is None or self._flush_task.done():
            self._flush_task = asyncio.create_task(self._flush(), name="scheduler-completions")

    async def _flush(self) -> None:
        failures = 0
        while self._completions:
            batch = self._completions[:FLUSH_BATCH]
            del self._completions[:FLUSH_BATCH]
            self._recording = len(batch)
            try:
                ops = self.store.at(self.clock.time())
                report = await ops.complete(batch, self.settings.process_id)
            except Exception as exc:
                self._recording = 0
                failures += 1
                if self._stopping and failures >= 3:
                    log.exception(
                        "could not record %d completion(s) at shutdown; their leases will "
                        "expire and the sweep will settle them",
                        len(batch),
                    )
                    continue
                self.outage.failed("completions", exc)
                self._completions[:0] = batch
                await asyncio.sleep(min(5.0, 0.1 * 2**failures))
                continue
            self._recording = 0
            self.outage.worked("completions")
            self.engine.stats.recorded(report.outcomes, report.stale)
            if report.stale:
                log.warning(
                    "%d outcome(s) discarded: their lease had expired and the job moved on",
                    report.stale,
                )
            if self._saturated and not self._stopping:
                self.wake()  # slots were held by these outcomes
        self._changed()

    async def _drain_completions(self) -> None:
        if self._flush_task is not None and not self._flush_task.done():
            await self._flush_task
        if self._completions:
            await self._flush()

    # --- the sweep -----------------------------------------------------------------------------

    async def _sweeper(self) -> None:
        while not self._stopping:
            try:
                await self.sweep_once()
                self.outage.worked("sweep")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.outage.failed("sweep", exc)
            self._next_sweep = self.monotonic() + self.settings.sweep_seconds
            await self.clock.sleep(self.settings.sweep_seconds)

    async def sweep_once(self) -> None:
        """Run the sweep (see :mod:`scheduler._sweep`), then wake the loop: the backstop for
        work made due by a commit that was not heard (another process's, on a store that
        does not hear them now). A store that hears them needs no such pass (what the sweep
        itself reclaimed woke the loop with its commit), so the loop's timer is only armed
        again: a wall clock stepped forward meanwhile is caught up with without a
        transaction."""
        self._sweeping = True
        try:
            await _sweep.sweep(self.engine)
        finally:
            self._sweeping = False
        if not self.store.hearing:
            self.wake()
            return
        if not self._passing and not self._wake.is_set():
            self._arm(self._armed)
        self._changed()  # the sweep has ended: whoever waits for idleness looks again

    def _sweep_due(self) -> bool:
        """A sweep runs, or the sweeper's is due (its sleep ended, or is about to, and it has
        not started yet): what it reclaims becomes due work, so the driver is not idle."""
        if self._sweeping:
            return True
        task = self._sweep_task
        return (
            task is not None
            and not task.done()
            and not self._stopping
            and self.monotonic() >= self._next_sweep
        )

    # --- idleness ------------------------------------------------------------------------------

    def busy(self) -> bool:
        return (
            self._passing
            or self._wake.is_set()
            or bool(self._actions)
            or bool(self._completions)
            or self._recording > 0
            or (self._flush_task is not None and not self._flush_task.done())
            or self._sweep_due()
        )

    def _changed(self) -> None:
        self._idle.set()
        self._idle = asyncio.Event()

    @property
    def change_event(self) -> asyncio.Event:
        """An event set at the driver's next change of state (pass end, run end, wake)."""
        return self._idle

    async def heartbeat(self, job: JobInfo) -> bool:
        """Extend the lease of ``job``'s run by the lease duration; False if the run no
        longer holds the job."""
        self.engine.ensure_running()
        now = self.clock.time()
        until = now + self.settings.lease_seconds
        return await self.store.at(now).extend_lease(job.id, job.run_count, until)
