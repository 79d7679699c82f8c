"""The engine: what the driver, the contexts and the schedule APIs share.

One ``Engine`` per :class:`~scheduler.Scheduler` holds the store, the registry, the clock and
the tunables, and offers the services built on them: opening a write transaction, validating
a job before anything is written, resolving a function against the registry, reading stored
triggers (cached), and ticking the schedules. The ``Scheduler`` owns the lifecycle and the
public API; everything below it takes the engine.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any, TypedDict, Unpack

from . import _codec
from .abc import OperationsAt, Store, Tx
from .clock import Clock, SystemClock
from .errors import InvalidArgument, SchedulerClosed
from .models import Pace, Retry
from .registry import Registry
from .stats import SchedulerStats
from .store_types import NewJob, Target, Trigger
from .triggers import trigger_from_json

KEY_LIMIT = 500
"""The longest idempotency key or job name, in characters."""


class JobOptions(TypedDict, total=False):
    """The options of ``run_after`` and ``run_at``, as keywords (see ``enqueue``)."""

    idempotency_key: str | None
    on_complete: str | None
    context: Any
    retry: Retry | None
    name: str | None
    parent_id: int | None
    pace: Pace | None


class EnqueueOptions(JobOptions, total=False):
    """The options of ``enqueue``, as keywords: those of :class:`JobOptions` and when."""

    run_at: datetime | float | None


class JobRequest:
    """One job of ``enqueue_many``: what ``enqueue(fn, args, **options)`` takes."""

    __slots__ = ("args", "fn", "options")

    def __init__(self, fn: str, args: Any = None, **options: Unpack[EnqueueOptions]) -> None:
        self.fn = fn
        self.args = args
        self.options = options

    def __repr__(self) -> str:
        return f"JobRequest({self.fn!r}, {self.args!r}, **{self.options!r})"


class Tunables(TypedDict, total=False):
    """The scheduler's tunables, as keywords (see :class:`~scheduler.Scheduler`)."""

    lease: timedelta | float
    lease_margin: timedelta | float | None
    sweep_interval: timedelta | float
    batch_size: int
    max_concurrency: int
    retention: timedelta | float | None
    run_retention: timedelta | float | None
    shutdown_grace: timedelta | float
    process_id: str | None


PROCESS_ID_LIMIT = 200
"""The longest process id, in characters."""


def default_process_id() -> str:
    """This process's name in the run history: host, pid and a random suffix (a pid is
    reused after a restart, and by processes in different containers of one host)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def _positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(f"{what} must be a positive int, got {value!r}")
    return value


class Engine:
    """The store, the registry, the clock and the tunables, with the services on them.

    Tunables (validated here): ``lease_seconds``, ``lease_margin``, ``sweep_seconds``,
    ``batch_size``, ``max_concurrency``, ``retention_seconds`` (None keeps terminal jobs
    forever), ``run_retention_seconds`` (None keeps the run history forever),
    ``shutdown_grace`` and ``process_id``; see :class:`~scheduler.Scheduler` for their meaning.
    """

    def __init__(
        self,
        store: Store,
        registry: Registry,
        clock: Clock | None = None,
        *,
        lease: timedelta | float = timedelta(seconds=30),
        lease_margin: timedelta | float | None = None,
        sweep_interval: timedelta | float = timedelta(seconds=30),
        batch_size: int = 64,
        max_concurrency: int = 64,
        retention: timedelta | float | None = timedelta(days=7),
        run_retention: timedelta | float | None = timedelta(days=7),
        shutdown_grace: timedelta | float = timedelta(seconds=10),
        process_id: str | None = None,
    ) -> None:
        if not isinstance(store, Store):
            raise InvalidArgument(f"store must be a scheduler Store, got {store!r}")
        if not isinstance(registry, Registry):
            raise InvalidArgument(f"registry must be a scheduler Registry, got {registry!r}")
        self.batch_size = _positive_int(batch_size, "batch_size")
        self.max_concurrency = _positive_int(max_concurrency, "max_concurrency")
        self.store = store
        self.registry = registry
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.lease_seconds = _codec.to_seconds(lease, "lease", sign="positive")
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
        self.sweep_seconds = _codec.to_seconds(sweep_interval, "sweep_interval", sign="positive")
        self.retention_seconds = (
            None
            if retention is None
            else _codec.to_seconds(retention, "retention", sign="positive")
        )
        self.run_retention_seconds = (
            None
            if run_retention is None
            else _codec.to_seconds(run_retention, "run_retention", sign="positive")
        )
        self.shutdown_grace = _codec.to_seconds(shutdown_grace, "shutdown_grace")
        if process_id is not None:
            _codec.check_name(process_id, "process_id", PROCESS_ID_LIMIT)
        self.process_id = default_process_id() if process_id is None else process_id
        self.stats = SchedulerStats()
        """What this process's driver has done (see :mod:`scheduler.stats`)."""
        self.running = False
        """Whether transactions may be opened (set by the scheduler's lifecycle: from its
        start until its stop has drained the in-flight work)."""
        self._triggers: dict[str, Trigger] = {}

    # --- access to the store ----------------------------------------------------------------

    def ensure_running(self) -> None:
        if not self.running:
            raise SchedulerClosed("the scheduler is not running (use `async with Scheduler(...)`)")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Tx]:
        """A write transaction at the clock's time now (the scheduler must be running)."""
        self.ensure_running()
        async with self.store.transaction(self.clock.time()) as tx:
            yield tx

    def now(self) -> OperationsAt:
        """The store's named operations at the clock's time now (the scheduler must be
        running): each write in a transaction of its own, each read against a snapshot."""
        self.ensure_running()
        return self.store.at(self.clock.time())

    # --- jobs -------------------------------------------------------------------------------

    def new_job(
        self,
        fn: str,
        args: Any,
        now: float,
        *,
        run_at: datetime | float | None = None,
        idempotency_key: str | None = None,
        on_complete: str | None = None,
        context: Any = None,
        retry: Retry | None = None,
        name: str | None = None,
        parent_id: int | None = None,
        pace: Pace | None = None,
    ) -> NewJob:
        """Validate everything about a job before anything is written: ``fn`` (and
        ``on_complete``) against the registry, the options, and that ``args`` and ``context``
        can be stored."""
        reg = self.registry.get(fn)
        if on_complete is not None:
            self.registry.mutation_named(on_complete)
        if retry is not None and not isinstance(retry, Retry):
            raise InvalidArgument(f"retry must be a Retry(...), got {retry!r}")
        policy = retry or reg.retry
        for label, value in (("idempotency_key", idempotency_key), ("name", name)):
            if value is not None:
                _codec.check_name(value, label, KEY_LIMIT)
        if parent_id is not None and (
            isinstance(parent_id, bool) or not isinstance(parent_id, int)
        ):
            raise InvalidArgument(f"parent_id must be a job id (int), got {parent_id!r}")
        next_ts = now if run_at is None else _codec.to_timestamp(run_at)
        pace_key, pace_spacing = self.pace_of(fn, pace)
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
            pace_key=pace_key,
            pace_spacing=pace_spacing,
        )

    def pace_of(self, fn: str, pace: Pace | None) -> tuple[str | None, float | None]:
        """The pace key and spacing of a job or schedule of ``fn``: ``pace``, else the
        registration's default (none: unpaced)."""
        if pace is not None and not isinstance(pace, Pace):
            raise InvalidArgument(f"pace must be a Pace(key, spacing), got {pace!r}")
        chosen = pace if pace is not None else self.registry.get(fn).pace
        if chosen is None:
            return None, None
        return chosen.key, chosen.spacing_seconds

    # --- schedules --------------------------------------------------------------------------

    def trigger_of(self, spec_json: str) -> Trigger:
        """The trigger a schedule row stores (parsed once per spec)."""
        trig = self._triggers.get(spec_json)
        if trig is None:
            trig = self._triggers[spec_json] = trigger_from_json(spec_json)
        return trig

    def target(self, fn: str) -> Target:
        """What a schedule of ``fn`` runs, from the registry (``UnknownFunction`` if absent)."""
        reg = self.registry.get(fn)
        return Target(
            fn=fn,
            kind=reg.kind,
            idempotent=reg.idempotent,
            max_failures=reg.retry.max_failures,
            initial_backoff=reg.retry.backoff_seconds,
            backoff_base=float(reg.retry.base),
        )

    def resolve(self, fn: str) -> Target | None:
        """The registry's target for ``fn``, or None when this process does not know it."""
        return self.target(fn) if fn in self.registry else None

    async def tick_schedules(self) -> None:
        """Materialize the due occurrences of every due schedule, a batch at a time."""
        while True:
            ops = self.store.at(self.clock.time())
            n = await ops.tick_schedules(self.batch_size, self.trigger_of, self.resolve)
            if n < self.batch_size:
                return

    async def next_schedule_time(self) -> float | None:
        """The earliest next fire time of an active schedule, or None."""
        return await self.store.at(self.clock.time()).next_schedule_time()


class InTransaction:
    """Base of the APIs that write in a caller's transaction (``ctx.scheduler`` and
    ``ctx.scheduler.schedules``). ``before_write`` runs before each write: a mutation's
    opens its savepoint, so a handler that writes nothing costs no round trip."""

    def __init__(
        self,
        engine: Engine,
        tx: Tx,
        before_write: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._engine = engine
        self._tx = tx
        self._before_write = before_write

    async def _writing(self) -> Tx:
        """The transaction, ready to be written to."""
        if self._before_write is not None:
            await self._before_write()
        return self._tx
