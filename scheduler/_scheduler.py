"""The ``Scheduler``: the lifecycle (open, reconcile, drive, drain, close) and the public API.

Everything it does between start and stop goes through its :class:`~scheduler._engine.Engine`
(store, registry, clock, settings and the services on them), which is also what the driver,
the contexts and the schedule APIs are given.
"""

from __future__ import annotations

import contextlib
import logging
from contextlib import AbstractContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, Unpack

from . import _codec
from . import _lanes as lanes
from ._driver import Driver
from ._engine import Engine, EnqueueOptions, JobOptions, JobRequest
from ._ops import pacing
from ._results import ResultWaiters
from .context import TransactionContext, open_transaction
from .crons import CronJobs, reconcile_crons
from .errors import InvalidArgument
from .leases import Leases
from .models import Job, JobState, Pace, Run
from .schedules import Schedules

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Sequence
    from types import TracebackType

    from .abc import Db, Store
    from .clock import Clock
    from .migrations import MigrationSet
    from .registry import Registry
    from .settings import Settings, Tunables
    from .stats import SchedulerStats

log = logging.getLogger(__name__)


def _lane(interactive: bool | None) -> AbstractContextManager[None]:
    """The lane a call asked for, or the caller's own (None)."""
    return contextlib.nullcontext() if interactive is None else lanes.interactive(interactive)


class Scheduler:
    """Durable jobs in the application's own database.

    ``async with Scheduler(store, registry) as sched:`` opens the store (applying
    migrations), reconciles static crons, and starts the driver; leaving the block stops
    claiming and lets in-flight work finish within ``shutdown_grace``.

    Tunables: ``lease`` (how long a claim holds a job before the sweep may reclaim it),
    ``lease_margin`` (how much of a lease an action's ``ctx.lease_remaining()`` holds back:
    the wall-clock skew tolerated between the processes sharing a SQLite store, and between
    this process's wall clock and itself across a step; on PostgreSQL leases follow the
    database's clock and the margin covers the error of measuring it, milliseconds; default
    a fifth of the lease, at most 5 s),
    ``sweep_interval`` (the only periodic timer), ``batch_size`` (jobs per claim),
    ``max_concurrency`` (actions running at once), ``retention`` (how long terminal jobs are
    kept; None keeps them forever), ``run_retention`` (how long the run history is kept,
    default 7 days; None keeps it forever), ``process_id`` (this process's name in the run
    history and on its leases; default host, pid and a random suffix), ``liveness_interval``
    (how often this process checks whether the other lease holders are alive: one the
    database can tell is gone loses its leases at once, see :mod:`scheduler._holders`;
    default 1 s), ``migrations`` (the application's own
    migration sets, applied with the scheduler's). They are validated when the scheduler
    is built, into :attr:`settings` (in seconds).
    """

    def __init__(
        self,
        store: Store,
        registry: Registry,
        crons: CronJobs | None = None,
        clock: Clock | None = None,
        *,
        migrations: Sequence[MigrationSet] = (),
        **tunables: Unpack[Tunables],
    ) -> None:
        self._engine = Engine(store, registry, clock, **tunables)
        self.crons = crons
        self.migrations = tuple(migrations)
        self._driver: Driver | None = None
        self._results = ResultWaiters(self._engine)
        self._driven = False
        """Whether :attr:`_driver` runs the work now (from start until stop)."""
        self._stopping = False

    # --- what it was built with (read-only) ------------------------------------------------

    @property
    def store(self) -> Store:
        """The store it was built with."""
        return self._engine.store

    @property
    def registry(self) -> Registry:
        """The registry of the functions its jobs and schedules run."""
        return self._engine.registry

    @property
    def clock(self) -> Clock:
        """The clock it reads the time from and sets its timers on."""
        return self._engine.clock

    @property
    def settings(self) -> Settings:
        """The tunables it was built with, validated and in seconds."""
        return self._engine.settings

    @property
    def stats(self) -> SchedulerStats:
        """What this process's driver has done since the scheduler was built."""
        return self._engine.stats

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

    async def open(self) -> None:
        """Open the store (applying the migrations) **without the driver**: transactions,
        enqueues, schedules, the reader and the job queries work, but nothing is claimed,
        run, ticked or swept by this process, and the crons are not reconciled.

        For a process that writes work for another one to run (an operator's command line
        beside the running application). :meth:`wake`, :meth:`sweep` and :meth:`wait_idle`
        raise :class:`RuntimeError` here; :meth:`close` (or :meth:`stop`) closes the store;
        :meth:`start` afterwards starts the driver on the open store."""
        if self.running:
            return
        await self._engine.open_store(self.migrations)
        self._results.attach()
        self._engine.running = True

    async def close(self) -> None:
        """Close what :meth:`open` opened; on a started scheduler, :meth:`stop`."""
        await self.stop()

    async def start(self) -> None:
        """Open the store, reconcile crons, start the driver (its first pass and sweep run now).
        On a scheduler already opened without its driver (:meth:`open`), the store stays
        open and the rest is done."""
        if self._driven:
            return
        opened = self.running
        if not opened:
            await self._engine.open_store(self.migrations)
        try:
            await self._reconcile_crons()
        except BaseException:
            if not opened:
                await self.store.close()
            raise
        try:
            await self._engine.holders.start()  # before the driver claims anything
        except BaseException:
            if not opened:
                await self.store.close()
            raise
        self._driver = Driver(self._engine)
        self.store.add_commit_listener(self._driver.wake)
        self._engine.holders.add_listener(self._driver.wake)
        self._results.attach()
        self._engine.running = True
        self._driver.start()
        self._driven = True

    async def stop(self, grace: timedelta | float | None = None) -> None:
        """Stop claiming; wait up to ``grace`` (default ``shutdown_grace``) for in-flight work;
        cancel what is left (rolled back or recorded, never half-written); close the store."""
        if not self.running or self._stopping:
            return
        driver = self._driver
        if not self._driven or driver is None:  # opened without its driver: only the store
            self._engine.running = False
            await self._results.detach()
            await self._engine.holders.stop()
            await self.store.close()
            return
        self._stopping = True  # in-flight work may still use transactions and heartbeats
        seconds = (
            self.settings.shutdown_grace if grace is None else _codec.to_seconds(grace, "grace")
        )
        try:
            await driver.stop(seconds)
        finally:
            self._engine.running = False
            self._stopping = False
            self._driven = False
            self.store.remove_commit_listener(driver.wake)
            await self._results.detach()
            self._engine.holders.remove_listener(driver.wake)
            try:
                await self._engine.holders.stop()
            finally:
                await self.store.close()

    @property
    def running(self) -> bool:
        """Whether the store is open for transactions (from :meth:`start` or :meth:`open`
        until :meth:`stop`); :attr:`driven` says whether work also runs here."""
        return self._engine.running

    @property
    def driven(self) -> bool:
        """Whether this process's driver runs the work (started, not merely :meth:`open`)."""
        return self._driven

    def _check_driven(self, what: str) -> Driver:
        self._engine.ensure_running()
        if not self._driven or self._driver is None:
            raise RuntimeError(
                f"{what} needs the driver, and this scheduler was opened without its driver "
                "(open(), not start()): nothing is claimed or run in this process"
            )
        return self._driver

    async def _reconcile_crons(self) -> None:
        if not self.crons:
            return
        report = await reconcile_crons(self._engine, self.crons)
        # Routine at every start: only a change an operator should see is logged higher.
        log.log(
            logging.INFO if report.changed or report.removed else logging.DEBUG,
            "crons reconciled: %d added, %d changed, %d removed, %d unchanged",
            len(report.added),
            len(report.changed),
            len(report.removed),
            report.unchanged,
        )

    # --- transactions --------------------------------------------------------------------------

    @asynccontextmanager
    async def transaction(
        self, *, interactive: bool | None = None
    ) -> AsyncIterator[TransactionContext]:
        """One write transaction: ``ctx.db`` runs SQL in it, ``ctx.scheduler`` schedules in it;
        both commit together on normal exit and roll back on an exception.

        ``interactive=True`` (someone is waiting on it: a command, a page) takes the store's
        connection before any queued background work, ``False`` queues it as background work;
        the default is the lane of the calling context (see :func:`scheduler.interactive`)."""
        with _lane(interactive):
            async with open_transaction(self._engine) as ctx:
                yield ctx

    @asynccontextmanager
    async def reader(self, *, interactive: bool | None = None) -> AsyncIterator[Db]:
        """Read-only SQL that never waits for the writer (each statement sees the latest
        commit). ``interactive`` as for :meth:`transaction`: on a store with one reader
        connection, an interactive read's statements go before queued background reads."""
        self._engine.ensure_running()
        with _lane(interactive):
            async with self.store.snapshot() as db:
                yield db

    # --- jobs ------------------------------------------------------------------------------------

    async def enqueue(self, fn: str, args: Any = None, **options: Unpack[EnqueueOptions]) -> int:
        """``ctx.scheduler.enqueue`` in a transaction of its own."""
        async with self.transaction() as ctx:
            return await ctx.scheduler.enqueue(fn, args, **options)

    async def enqueue_many(self, requests: Iterable[JobRequest]) -> list[int]:
        """``ctx.scheduler.enqueue_many`` in a transaction of its own."""
        async with self.transaction() as ctx:
            return await ctx.scheduler.enqueue_many(requests)

    async def run_after(
        self, delay: timedelta | float, fn: str, args: Any = None, **options: Unpack[JobOptions]
    ) -> int:
        """``ctx.scheduler.run_after`` in a transaction of its own."""
        async with self.transaction() as ctx:
            return await ctx.scheduler.run_after(delay, fn, args, **options)

    async def run_at(
        self, when: datetime | float, fn: str, args: Any = None, **options: Unpack[JobOptions]
    ) -> int:
        """``ctx.scheduler.run_at`` in a transaction of its own."""
        async with self.transaction() as ctx:
            return await ctx.scheduler.run_at(when, fn, args, **options)

    async def debounce(
        self,
        fn: str,
        args: Any = None,
        *,
        key: str,
        quiet: timedelta | float,
        max_wait: timedelta | float | None = None,
    ) -> int:
        """``ctx.scheduler.debounce`` in a transaction of its own."""
        async with self.transaction() as ctx:
            return await ctx.scheduler.debounce(fn, args, key=key, quiet=quiet, max_wait=max_wait)

    async def batch(
        self,
        fn: str,
        item: Any,
        *,
        key: str,
        max_items: int,
        max_wait: timedelta | float,
    ) -> int:
        """``ctx.scheduler.batch`` in a transaction of its own."""
        async with self.transaction() as ctx:
            return await ctx.scheduler.batch(
                fn, item, key=key, max_items=max_items, max_wait=max_wait
            )

    async def cancel(self, job_id: int) -> bool:
        """``ctx.scheduler.cancel`` in a transaction of its own."""
        async with self.transaction() as ctx:
            return await ctx.scheduler.cancel(job_id)

    async def retry(self, job_id: int) -> bool:
        """Put a failed or canceled job back to pending now, with a fresh retry budget."""
        return await self._engine.now().retry(job_id)

    async def get_job(self, job_id: int) -> Job | None:
        """The job with its payloads (args, result, error), or None if there is no such job."""
        return await self._engine.now().get_job(job_id)

    async def list_jobs(
        self,
        *,
        state: JobState | str | None = None,
        fn: str | None = None,
        before_id: int | None = None,
        limit: int = 50,
    ) -> list[Job]:
        """Jobs newest first (payloads other than the error omitted); page with ``before_id``."""
        ops = self._engine.now()
        st = None if state is None else JobState(state)
        return await ops.list_jobs(state=st, fn=fn, before_id=before_id, limit=limit)

    async def runs(
        self,
        job_id: int | None = None,
        fn: str | None = None,
        since: datetime | float | None = None,
        limit: int = 100,
    ) -> list[Run]:
        """The run history, newest first: every attempt of every job (of ``job_id``, of
        ``fn``, finished at or after ``since``), kept for ``run_retention``."""
        ops = self._engine.now()
        start = None if since is None else _codec.to_timestamp(since)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidArgument(f"limit must be a whole number, got {limit!r}")
        return await ops.runs(job_id, fn, start, limit)

    async def result(
        self,
        job_id: int,
        timeout: timedelta | float | None = None,  # noqa: ASYNC109 (on the scheduler's clock, which asyncio.timeout cannot follow)
    ) -> dict[str, Any]:
        """Wait for job ``job_id`` to end and return its outcome, as its ``on_complete`` is
        given it: ``{"kind": "success", "value": ...}`` (what the handler returned),
        ``{"kind": "failed", "error": "..."}`` or ``{"kind": "canceled"}``.

        Any job of the store, made by any process sharing it, at any delay: a job due in a
        week is awaited for a week (retries included: only its terminal state counts). The
        wait is woken by the commit that ends the job, not by polling: at once when this
        process ends it, and on PostgreSQL when another process does (through the
        notification that commit sends). On SQLite, a job ended by *another process* is seen
        at the next ``sweep_interval`` at the latest (a SQLite file cannot notify; the driver
        sees other processes' work the same way). ``timeout`` (seconds or a ``timedelta``,
        on the scheduler's clock) raises :class:`TimeoutError` when it runs out first; an id
        with no job raises :class:`~scheduler.JobNotFound` (a :class:`LookupError`), as does
        a job deleted by ``retention`` before it was read. Works with or without the driver
        (:meth:`open` too); a wait still going when the scheduler stops raises
        :class:`~scheduler.SchedulerClosed`."""
        return await self._results.wait(job_id, timeout)

    # --- recurring schedules ------------------------------------------------------------------

    @property
    def schedules(self) -> Schedules:
        """Runtime schedules: ``create``, ``pause``, ``resume``, ``trigger``, ``backfill``,
        ``delete``, ``get``, ``list`` (each in its own transaction; inside a transaction use
        ``ctx.scheduler.schedules``)."""
        return Schedules(self._engine)

    @property
    def leases(self) -> Leases:
        """Named leases, and fair shares of a group of keys among the processes sharing the
        store (see :mod:`scheduler.leases`)."""
        return Leases(self._engine)

    async def reserve_slot(self, pace: Pace) -> datetime:
        """Reserve the next start of ``pace``'s key, in turn with every process sharing the
        store and with the key's paced jobs: when it starts (now if the key's slot is open,
        else when it opens). Wait until then before acting: two reservations of one key
        start at least ``pace.spacing`` apart. For work that is not a job but must keep to a
        shared rate (e.g. a gateway's connection limit)."""
        reserve = partial(pacing.reserve, key=pace.key, spacing=pace.spacing_seconds)
        start = await self._engine.now().run(reserve)
        return datetime.fromtimestamp(start, UTC)

    # --- waiting -------------------------------------------------------------------------------

    def wake(self) -> None:
        """Ask the driver for a pass now (e.g. after another process enqueued work)."""
        self._check_driven("wake()").wake()

    async def sweep(self) -> None:
        """Run the lease sweep and pruning now, as the periodic sweep would."""
        await self._check_driven("sweep()").sweep_once()

    async def wait_idle(self) -> None:
        """Return once no job and no schedule tick is due now and nothing is in progress here.

        With a :class:`~scheduler.testing.FakeClock`, move the clock and then await this.
        """
        driver = self._check_driven("wait_idle()")
        while True:
            changed = driver.change_event  # taken first, so no change can slip past
            if not driver.busy():
                ops = self.store.at(self.clock.time())
                nxt = await ops.next_due_time()
                tick = await ops.next_schedule_time()
                due = any(t is not None and t <= ops.now for t in (nxt, tick))
                if not driver.busy():
                    if not due:
                        return
                    driver.wake()  # due work the driver was not told about
            await changed.wait()
