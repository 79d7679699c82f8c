"""The engine: what the driver, the contexts and the schedule APIs share.

One ``Engine`` per :class:`~scheduler.Scheduler` holds the store, the registry (and the
resolver on it), the clock and the settings, and offers the services built on them: opening
the store for them, a write transaction, the store's operations at the clock's time,
validating a job before anything is written, and ticking the schedules. The ``Scheduler``
owns the lifecycle and the public API; everything below it takes the engine.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from . import _codec
from ._holders import Holders
from ._ops.compose import BATCH_ITEMS_LIMIT
from ._resolver import Resolver
from .abc import OperationsAt, Store, Tx
from .clock import Clock, SystemClock, system_time_of
from .errors import InvalidArgument, SchedulerClosed
from .models import Concurrency, Pace, Retry, check_priority
from .registry import Registry
from .settings import SERVER_BATCH, Settings, Tunables
from .stats import SchedulerStats
from .store_types import NewJob

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
    from datetime import datetime, timedelta

    from .migrations import MigrationSet

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
    priority: int
    timeout: timedelta | float | None
    concurrency: Concurrency | None


class EnqueueOptions(JobOptions, total=False):
    """The options of ``enqueue``, as keywords: those of :class:`JobOptions` and when."""

    run_at: datetime | float | None


class JobRequest:
    """One job of ``enqueue_many``: what ``enqueue(fn, args, **options)`` takes."""

    __slots__ = {
        "args": "The job's arguments.",
        "fn": "The registered function the job runs.",
        "options": "The keywords of ``enqueue`` given (a dict).",
    }

    def __init__(self, fn: str, args: Any = None, **options: Unpack[EnqueueOptions]) -> None:
        self.fn = fn
        self.args = args
        self.options = options

    def __repr__(self) -> str:
        return f"JobRequest({self.fn!r}, {self.args!r}, **{self.options!r})"


class Engine:
    """The store, the registry, the clock and the settings, with the services on them.

    The tunables (the keywords of :class:`~scheduler.settings.Tunables`) are validated into
    :attr:`settings`; see :class:`~scheduler.Scheduler` for their meaning.
    """

    def __init__(
        self,
        store: Store,
        registry: Registry,
        clock: Clock | None = None,
        **tunables: Unpack[Tunables],
    ) -> None:
        if not isinstance(store, Store):
            raise InvalidArgument(f"store must be a scheduler Store, got {store!r}")
        if not isinstance(registry, Registry):
            raise InvalidArgument(f"registry must be a scheduler Registry, got {registry!r}")
        if store.dialect == "postgres":  # many writers: larger batches by default
            tunables.setdefault("batch_size", SERVER_BATCH)
            tunables.setdefault("max_concurrency", SERVER_BATCH)
        self.settings = Settings.of(**tunables)
        self.store = store
        self.registry = registry
        self.resolver = Resolver(registry)
        """What the store's operations resolve schedule rows with (handed to the store by
        :meth:`open_store`) and what new schedule definitions are checked with."""
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.stats = SchedulerStats()
        """What this process's driver has done (see :mod:`scheduler.stats`)."""
        self.holders = Holders(store, self.clock, self.settings, self.stats)
        """This process as a lease holder, and its watch over the others (see
        :mod:`scheduler._holders`)."""
        self.running = False
        """Whether transactions may be opened (set by the scheduler's lifecycle: from its
        start until its stop has drained the in-flight work)."""

    # --- access to the store ----------------------------------------------------------------

    async def open_store(self, migrations: Sequence[MigrationSet] = ()) -> None:
        """Hand the store this engine's resolver and its clock's machine time, then open it
        (applying ``migrations``): from here on its operations resolve schedule rows in this
        engine's registry, and a store that follows its database's clock measures it
        against this clock's machine."""
        self.store.resolver = self.resolver
        self.store.system_time = system_time_of(self.clock)
        await self.store.open(migrations)

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
        priority: int = 0,
        timeout: timedelta | float | None = None,
        concurrency: Concurrency | None = None,
    ) -> NewJob:
        """Validate everything about a job before anything is written: ``fn`` (and
        ``on_complete``) against the registry, the options, and that ``args`` (checked
        against the registration's ``args`` type, if any) and ``context`` can be stored.
        The job is stored under the registration's own name, also when ``fn`` is an alias."""
        reg = self.registry.get(fn)
        if on_complete is not None:
            on_complete = self.registry.mutation_named(on_complete).name
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
        limit = self.concurrency_of(fn, concurrency, paced=pace_key is not None)
        priority = check_priority(priority)
        run_timeout = (
            None if timeout is None else _codec.to_seconds(timeout, "timeout", sign="positive")
        )
        context_type, context_blob = _codec.encode_context(context)
        return NewJob(
            fn=reg.name,
            kind=reg.kind,
            next_ts=next_ts,
            max_failures=policy.max_failures,
            initial_backoff=policy.backoff_seconds,
            backoff_base=float(policy.base),
            idempotent=reg.idempotent,
            args_json=self.args_json(fn, args, f"args for {fn!r}"),
            context_type=context_type,
            context=context_blob,
            idempotency_key=idempotency_key,
            on_complete=on_complete,
            name=name,
            parent_id=parent_id,
            pace_key=pace_key,
            pace_spacing=pace_spacing,
            priority=priority,
            timeout=run_timeout,
            concurrency_key=None if limit is None else limit.key,
            concurrency_limit=None if limit is None else limit.limit,
        )

    def debounce_job(
        self,
        fn: str,
        args: Any,
        now: float,
        key: str,
        quiet: timedelta | float,
        max_wait: timedelta | float | None,
    ) -> tuple[NewJob, str, float, float | None]:
        """Validate a debounce call before anything is written: the job it would open (as
        :meth:`new_job` with the registration's defaults), its key, ``quiet`` and
        ``max_wait`` in seconds."""
        _codec.check_name(key, "key", KEY_LIMIT)
        quiet_s = _codec.to_seconds(quiet, "quiet", sign="non-negative")
        wait_s = (
            None
            if max_wait is None
            else _codec.to_seconds(max_wait, "max_wait", sign="non-negative")
        )
        return self.new_job(fn, args, now), key, quiet_s, wait_s

    def batch_job(
        self,
        fn: str,
        item: Any,
        now: float,
        key: str,
        max_items: int,
        max_wait: timedelta | float,
    ) -> tuple[NewJob, str, str, int, float]:
        """Validate a batch call before anything is written: the job a new batch would be
        (its arguments ``{"key": key, "items": []}``), the item as stored (checked, with a
        typed registration, as an element of its ``items``), the key, ``max_items`` and
        ``max_wait`` in seconds."""
        _codec.check_name(key, "key", KEY_LIMIT)
        if isinstance(max_items, bool) or not isinstance(max_items, int):
            raise InvalidArgument(f"max_items must be a whole number, got {max_items!r}")
        if not 1 <= max_items <= BATCH_ITEMS_LIMIT:
            raise InvalidArgument(
                f"max_items must be from 1 to {BATCH_ITEMS_LIMIT}, got {max_items}"
            )
        wait_s = _codec.to_seconds(max_wait, "max_wait", sign="non-negative")
        what = f"a batch item for {fn!r}"
        envelope = self.registry.get(fn).encode_args({"key": key, "items": [item]}, what)
        items = envelope.get("items") if isinstance(envelope, dict) else None
        if not isinstance(items, list) or len(items) != 1 or envelope.get("key") != key:
            raise InvalidArgument(
                f"{fn!r} takes batches: its args type must have the fields key (str) and "
                "items (a list or tuple of the items)"
            )
        item_json = _codec.dumps(items[0], what)
        job = self.new_job(fn, {**envelope, "items": []}, now)
        return job, key, item_json, max_items, wait_s

    def args_json(self, fn: str, args: Any, what: str) -> str:
        """``args`` as a job or schedule of ``fn`` stores them: checked against its
        registration's ``args`` type, if any, then JSON (``what`` names them in an error)."""
        return _codec.dumps(self.registry.get(fn).encode_args(args, what), what)

    def pace_of(self, fn: str, pace: Pace | None) -> tuple[str | None, float | None]:
        """The pace key and spacing of a job or schedule of ``fn``: ``pace``, else the
        registration's default (none: unpaced)."""
        if pace is not None and not isinstance(pace, Pace):
            raise InvalidArgument(f"pace must be a Pace(key, spacing), got {pace!r}")
        chosen = pace if pace is not None else self.registry.get(fn).pace
        if chosen is None:
            return None, None
        return chosen.key, chosen.spacing_seconds

    def concurrency_of(
        self, fn: str, concurrency: Concurrency | None, *, paced: bool
    ) -> Concurrency | None:
        """The concurrency of a job of ``fn``: ``concurrency``, else the registration's
        default (none: no limit). A job takes a pace or a concurrency, not both: one given
        with a pace is refused; a registration's default gives way to a pace the job names."""
        if concurrency is not None and not isinstance(concurrency, Concurrency):
            raise InvalidArgument(
                f"concurrency must be a Concurrency(key, limit), got {concurrency!r}"
            )
        if concurrency is None:
            return None if paced else self.registry.get(fn).concurrency
        if paced:
            raise InvalidArgument(f"a job of {fn!r} takes a pace or a concurrency, not both")
        return concurrency

    # --- schedules --------------------------------------------------------------------------

    async def tick_schedules(self) -> None:
        """Materialize the due occurrences of every due schedule, a batch at a time."""
        batch = self.settings.batch_size
        while await self.store.at(self.clock.time()).tick_schedules(batch) == batch:
            pass


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
