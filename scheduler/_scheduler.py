"""The ``Scheduler``: owns a store, a registry and the driver."""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, TypeVar

from . import _codec
from . import _schedule_ops as schedule_ops
from ._driver import Driver
from .abc import Db, Store
from .clock import Clock, SystemClock
from .context import TransactionContext, TxScheduler
from .errors import InvalidArgument, SchedulerClosed
from .migrations import MigrationSet
from .models import Job, JobInfo, JobState, Retry, ts_to_datetime
from .registry import Registry
from .schedules import CronJobs, Schedules, target_of, trigger_from_json
from .store_types import NewJob, Op, OpState, Target
from .triggers import Cron, Interval

T = TypeVar("T")

log = logging.getLogger("scheduler")


def _positive_seconds(value: timedelta | float, what: str) -> float:
    seconds = _codec.to_seconds(value, what)
    if seconds <= 0:
        raise InvalidArgument(f"{what} must be positive, got {value!r}")
    return seconds


class Scheduler:
    """Durable jobs in the application's own database.

    ``async with Scheduler(store, registry) as sched:`` opens the store (applying
    migrations), reconciles static crons, and starts the driver; leaving the block stops
    claiming and lets in-flight work finish within ``shutdown_grace``.

    Tunables: ``lease`` (how long a claim holds a job before the sweep may reclaim it),
    ``lease_margin`` (how much of a lease an action's ``ctx.lease_remaining()`` holds back:
    the wall-clock skew tolerated between the processes sharing the store, and between this
    process's wall clock and itself across a step; default a fifth of the lease, at most
    5 s),
    ``sweep_interval`` (the only periodic timer), ``batch_size`` (jobs per claim),
    ``max_concurrency`` (actions running at once), ``retention`` (how long terminal jobs are
    kept; None keeps them forever), ``migrations`` (the application's own migration sets,
    applied with the scheduler's).
    """

    def __init__(
        self,
        store: Store,
        registry: Registry,
        crons: CronJobs | None = None,
        clock: Clock | None = None,
        *,
        lease: timedelta | float = timedelta(seconds=30),
        lease_margin: timedelta | float | None = None,
        sweep_interval: timedelta | float = timedelta(seconds=30),
        batch_size: int = 64,
        max_concurrency: int = 64,
        retention: timedelta | float | None = timedelta(days=7),
        shutdown_grace: timedelta | float = timedelta(seconds=10),
        migrations: Sequence[MigrationSet] = (),
    ) -> None:
        if not isinstance(store, Store):
            raise InvalidArgument(f"store must be a scheduler Store, got {store!r}")
        if not isinstance(registry, Registry):
            raise InvalidArgument(f"registry must be a scheduler Registry, got {registry!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgument(f"batch_size must be a positive int, got {batch_size!r}")
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise InvalidArgument(
                f"max_concurrency must be a positive int, got {max_concurrency!r}"
            )
        self.store = store
        self.registry = registry
        self.crons = crons
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.lease_seconds = _positive_seconds(lease, "lease")
        self.lease_margin = (
            min(5.0, self.lease_seconds / 5)
            if lease_margin is None
            else _codec.to_seconds(lease_margin, "lease_margin")
        )
        if not 0 <= self.lease_margin < self.lease_seconds:
            raise InvalidArgument(
                f"lease_margin must be at least 0 and less than the lease "
                f"({self.lease_seconds}s), got {lease_margin!r}"
            )
        self.sweep_seconds = _positive_seconds(sweep_interval, "sweep_interval")
        self.batch_size = batch_size
        self.max_concurrency = max_concurrency
        self.retention_seconds = (
            None if retention is None else _positive_seconds(retention, "retention")
        )
        self.shutdown_grace = _codec.to_seconds(shutdown_grace, "shutdown_grace")
        self.migrations = tuple(migrations)
        self._driver: Driver | None = None
        self._started = False
        self._stopping = False
        self._triggers: dict[str, Cron | Interval] = {}

    # --- lifecycle -----------------------------------------------------------------------------

    async def __aenter__(self) -> Scheduler:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Open the store, reconcile crons, start the driver (its first pass and sweep run now)."""
        if self._started:
            return
        await self.store.open(self.migrations)
        try:
            await self._reconcile_crons()
        except BaseException:
            await self.store.close()
            raise
        self._driver = Driver(self)
        self.store.add_commit_listener(self._driver.wake)
        self._started = True
        self._driver.start()

    async def stop(self, grace: timedelta | float | None = None) -> None:
        """Stop claiming; wait up to ``grace`` (default ``shutdown_grace``) for in-flight work;
        cancel what is left (rolled back or recorded, never half-written); close the store."""
        if not self._started or self._stopping:
            return
        self._stopping = True  # in-flight work may still use transactions and heartbeats
        driver = self._driver
        assert driver is not None
        seconds = self.shutdown_grace if grace is None else _codec.to_seconds(grace, "grace")
        try:
            await driver.stop(seconds)
        finally:
            self._started = False
            self._stopping = False
            self.store.remove_commit_listener(driver.wake)
            await self.store.close()

    @property
    def running(self) -> bool:
        return self._started

    def _check_open(self) -> Driver:
        if not self._started or self._driver is None:
            raise SchedulerClosed("the scheduler is not running (use `async with Scheduler(...)`)")
        return self._driver

    # --- transactions --------------------------------------------------------------------------

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[TransactionContext]:
        """One write transaction: ``ctx.db`` runs SQL in it, ``ctx.scheduler`` schedules in it;
        both commit together on normal exit and roll back on an exception."""
        self._check_open()
        now = self.clock.time()
        async with self.store.transaction(now) as tx:
            yield TransactionContext(tx, TxScheduler(self, tx), now, random.Random())

    @asynccontextmanager
    async def reader(self) -> AsyncIterator[Db]:
        """Read-only SQL that never waits for the writer (each statement sees the latest commit)."""
        self._check_open()
        async with self.store.snapshot() as db:
            yield db

    # --- jobs ------------------------------------------------------------------------------------

    def _new_job(
        self,
        fn: str,
        args: Any,
        *,
        run_at: datetime | float | None,
        idempotency_key: str | None,
        on_complete: str | None,
        context: Any,
        retry: Retry | None,
        name: str | None,
        parent_id: int | None,
        now: float,
        schedule_name: str | None = None,
        fire_ts: float | None = None,
        jitter: float | None = None,
    ) -> NewJob:
        """Validate everything about a job before anything is written."""
        reg = self.registry.get(fn)
        if on_complete is not None:
            self.registry.mutation_named(on_complete)
        if retry is not None and not isinstance(retry, Retry):
            raise InvalidArgument(f"retry must be a Retry(...), got {retry!r}")
        policy = retry or reg.retry
        for label, value in (("idempotency_key", idempotency_key), ("name", name)):
            if value is not None and (
                not isinstance(value, str) or not value or len(value) > 500 or "\x00" in value
            ):
                raise InvalidArgument(
                    f"{label} must be a non-empty string of at most 500 characters "
                    "without NUL characters"
                )
        if parent_id is not None and (
            isinstance(parent_id, bool) or not isinstance(parent_id, int)
        ):
            raise InvalidArgument(f"parent_id must be a job id (int), got {parent_id!r}")
        next_ts = now if run_at is None else _codec.to_timestamp(run_at)
        context_type, context_blob = _codec.encode_context(context)
        return NewJob(
            fn=fn,
            kind=reg.kind,
            next_ts=next_ts,
            max_failures=policy.max_failures,
            initial_backoff=policy.backoff_seconds,
            backoff_base=float(policy.base),
            idempotent=reg.idempotent,
            args_json=_codec.dumps(args, f"args for {fn!r}"),
            context_type=context_type,
            context=context_blob,
            idempotency_key=idempotency_key,
            on_complete=on_complete,
            name=name,
            parent_id=parent_id,
            schedule_name=schedule_name,
            fire_ts=fire_ts,
            jitter=jitter,
        )

    async def enqueue(self, fn: str, args: Any = None, **options: Any) -> int:
        """``ctx.scheduler.enqueue`` in a transaction of its own."""
        async with self.transaction() as ctx:
            return await ctx.scheduler.enqueue(fn, args, **options)

    async def run_after(
        self, delay: timedelta | float, fn: str, args: Any = None, **options: Any
    ) -> int:
        async with self.transaction() as ctx:
            return await ctx.scheduler.run_after(delay, fn, args, **options)

    async def run_at(
        self, when: datetime | float, fn: str, args: Any = None, **options: Any
    ) -> int:
        async with self.transaction() as ctx:
            return await ctx.scheduler.run_at(when, fn, args, **options)

    async def cancel(self, job_id: int) -> bool:
        async with self.transaction() as ctx:
            return await ctx.scheduler.cancel(job_id)

    async def retry(self, job_id: int) -> bool:
        """Put a failed or canceled job back to pending now, with a fresh retry budget."""
        self._check_open()
        return await self.store.retry(job_id, self.clock.time())

    async def get_job(self, job_id: int) -> Job | None:
        """The job with its payloads (args, result, error), or None if there is no such job."""
        self._check_open()
        return await self.store.get_job(job_id, self.clock.time())

    async def list_jobs(
        self,
        *,
        state: JobState | str | None = None,
        fn: str | None = None,
        before_id: int | None = None,
        limit: int = 50,
    ) -> list[Job]:
        """Jobs newest first (payloads other than the error omitted); page with ``before_id``."""
        self._check_open()
        st = None if state is None else JobState(state)
        return await self.store.list_jobs(
            self.clock.time(), state=st, fn=fn, before_id=before_id, limit=limit
        )

    async def _heartbeat(self, job: JobInfo) -> bool:
        return await self._check_open().heartbeat(job)

    # --- recurring schedules ------------------------------------------------------------------

    @property
    def schedules(self) -> Schedules:
        """Runtime schedules: ``create``, ``pause``, ``resume``, ``trigger``, ``backfill``,
        ``delete``, ``get``, ``list`` (each in its own transaction; inside a transaction use
        ``ctx.scheduler.schedules``)."""
        return Schedules(self)

    def _trigger_of(self, spec_json: str) -> Cron | Interval:
        trig = self._triggers.get(spec_json)
        if trig is None:
            trig = self._triggers[spec_json] = trigger_from_json(spec_json)
        return trig

    def _target(self, fn: str) -> Target:
        return target_of(fn, self.registry.get(fn))

    def _resolve(self, fn: str) -> Target | None:
        return self._target(fn) if fn in self.registry else None

    async def _read(self, op: Callable[[OpState], Op[T]]) -> T:
        self._check_open()
        result: T = await self.store.read(op, self.clock.time())
        return result

    async def _reconcile_crons(self) -> None:
        if not self.crons:
            return
        now = self.clock.time()
        defs = self.crons.definitions(self, ts_to_datetime(now))
        report = await self.store.run(lambda st: schedule_ops.reconcile(st, defs), now)
        log.info(
            "crons reconciled: %d added, %d changed, %d removed, %d unchanged",
            len(report.added),
            len(report.changed),
            len(report.removed),
            report.unchanged,
        )

    async def _tick_schedules(self) -> None:
        """Materialize the due occurrences of every due schedule."""
        while True:
            n = await self.store.run(
                lambda st: schedule_ops.tick(st, self.batch_size, self._trigger_of, self._resolve),
                self.clock.time(),
            )
            if n < self.batch_size:
                return

    # --- waiting -------------------------------------------------------------------------------

    def wake(self) -> None:
        """Ask the driver for a pass now (e.g. after another process enqueued work)."""
        self._check_open().wake()

    async def sweep(self) -> None:
        """Run the lease sweep and pruning now, as the periodic sweep would."""
        await self._check_open().sweep_once()

    async def wait_idle(self) -> None:
        """Return once no job and no schedule tick is due now and nothing is in progress here.

        With a :class:`~scheduler.testing.FakeClock`, move the clock and then await this.
        """
        driver = self._check_open()
        while True:
            changed = driver.change_event  # taken first, so no change can slip past
            if not driver.busy():
                now = self.clock.time()
                nxt = await self.store.next_due_time(now)
                tick = await self._next_schedule_time()
                due = any(t is not None and t <= now for t in (nxt, tick))
                if not driver.busy():
                    if not due:
                        return
                    driver.wake()  # due work the driver was not told about
            await changed.wait()

    async def _next_schedule_time(self) -> float | None:
        result: float | None = await self.store.read(schedule_ops.next_fire, self.clock.time())
        return result
