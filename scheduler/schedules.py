"""Runtime schedules: ``sched.schedules`` and ``ctx.scheduler.schedules``, and the
definitions they (and the static crons of :mod:`scheduler.crons`) write.

Both APIs validate a definition completely, then call the store's named schedule
operations (:class:`scheduler.abc.Operations`); the logic lives in
:mod:`scheduler._ops.schedules`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from . import _codec
from ._engine import Engine, InTransaction
from ._ops.schedules import CATCH_UPS, OVERLAPS
from .errors import InvalidSchedule
from .registry import NAME_LIMIT
from .store_types import ScheduleDef, ScheduleRow
from .triggers import Cron, Interval

if TYPE_CHECKING:
    import builtins
    from collections.abc import AsyncIterator, Iterable

    from .abc import Operations
    from .models import Pace

__all__ = [
    "ScheduleInfo",
    "ScheduleOptions",
    "ScheduleRequest",
    "Schedules",
    "TransactionSchedules",
]

DEFAULT_WINDOW = timedelta(days=365)


class ScheduleOptions(TypedDict, total=False):
    """A schedule's policies, as keywords (defaults: ``"skip"``, ``"skip"``, a year, none,
    the registration's pace)."""

    overlap: str
    catch_up: str
    catchup_window: timedelta | float
    jitter: timedelta | float
    pace: Pace | None


class CreateOptions(ScheduleOptions, total=False):
    """The options of ``schedules.create``: a schedule's policies, its time zone and start."""

    tz: str | None
    start: datetime | float | None


class ScheduleRequest:
    """One schedule of ``schedules.create_many``: what ``create(name, spec, fn, args,
    **options)`` takes."""

    __slots__ = {
        "args": "The arguments of each occurrence's job.",
        "fn": "The registered function each occurrence runs.",
        "name": "The schedule's name, unique in the store.",
        "options": "The keywords of ``create`` given (a dict).",
        "spec": "A cron expression, a ``timedelta`` interval, or a ``Cron`` or ``Interval``.",
    }

    def __init__(
        self,
        name: str,
        spec: str | timedelta | Cron | Interval,
        fn: str,
        args: Any = None,
        **options: Unpack[CreateOptions],
    ) -> None:
        self.name = name
        self.spec = spec
        self.fn = fn
        self.args = args
        self.options = options

    def __repr__(self) -> str:
        return f"ScheduleRequest({self.name!r}, {self.spec!r}, {self.fn!r}, ...)"


@dataclass(frozen=True, slots=True)
class ScheduleInfo:
    """A schedule as stored: definition, state and counters."""

    name: str
    source: str
    """``"static"`` (from ``cron_jobs()``) or ``"runtime"`` (from ``schedules.create``)."""
    trigger: Cron | Interval
    fn: str
    args: Any
    overlap: str
    catch_up: str
    catchup_window: timedelta
    jitter: timedelta
    paused: bool
    next_fire: datetime | None
    """The next nominal fire time not yet materialized."""
    last_fire: datetime | None
    """The latest nominal fire time reached (fired or not)."""
    skipped: int
    """Times skipped because the previous occurrence was still pending or running."""
    missed: int
    """Times dropped by the catch-up policy (for cron schedules, a lower bound)."""
    last_error: str | None
    created: datetime

    @property
    def description(self) -> str:
        """The trigger in words: ``"cron '0 9 * * 1-5' (Europe/London)"``, ``"every hour"``."""
        return self.trigger.describe()

    @classmethod
    def of(cls, row: ScheduleRow, trigger: Cron | Interval) -> ScheduleInfo:
        """The schedule of a stored row and its parsed trigger (the stores' reads use it)."""
        to_dt = _codec.ts_to_datetime
        return cls(
            name=row.name,
            source=row.source,
            trigger=trigger,
            fn=row.target.fn,
            args=json.loads(row.args_json),
            overlap=row.overlap,
            catch_up=row.catch_up,
            catchup_window=timedelta(seconds=row.catchup_window),
            jitter=timedelta(seconds=row.jitter),
            paused=row.paused,
            next_fire=None if row.next_fire_ts is None else to_dt(row.next_fire_ts),
            last_fire=None if row.last_fire_ts is None else to_dt(row.last_fire_ts),
            skipped=row.skipped,
            missed=row.missed,
            last_error=row.last_error,
            created=to_dt(row.created_at),
        )


def check_schedule_name(name: object) -> str:
    return _codec.check_name(name, "a schedule name", NAME_LIMIT, InvalidSchedule)


def build_def(
    engine: Engine,
    name: str,
    source: Literal["static", "runtime"],
    trigger: Cron | Interval,
    fn: str,
    args: Any,
    *,
    overlap: str = "skip",
    catch_up: str = "skip",
    catchup_window: timedelta | float = DEFAULT_WINDOW,
    jitter: timedelta | float = timedelta(0),
    pace: Pace | None = None,
) -> ScheduleDef:
    """Validate a definition completely (``fn`` against the registry) before anything is
    written."""
    check_schedule_name(name)
    if overlap not in OVERLAPS:
        raise InvalidSchedule(f"overlap must be one of {', '.join(OVERLAPS)}; got {overlap!r}")
    if catch_up not in CATCH_UPS:
        raise InvalidSchedule(f"catch_up must be one of {', '.join(CATCH_UPS)}; got {catch_up!r}")
    target = engine.resolver.target(fn)
    pace_key, pace_spacing = engine.pace_of(fn, pace)
    return ScheduleDef(
        name=name,
        source=source,
        trigger=trigger,
        target=target,
        args_json=engine.args_json(fn, args, f"args for schedule {name!r}"),
        overlap=overlap,
        catch_up=catch_up,
        catchup_window=_codec.to_seconds(
            catchup_window, "catchup_window", sign="positive", error=InvalidSchedule
        ),
        jitter=_codec.to_seconds(jitter, "jitter", sign="non-negative", error=InvalidSchedule),
        pace_key=pace_key,
        pace_spacing=pace_spacing,
    )


def make_trigger(
    spec: str | timedelta | Cron | Interval, tz: Any, anchor: datetime
) -> Cron | Interval:
    """A cron expression (in ``tz``) or an interval anchored at ``anchor``."""
    if isinstance(spec, Cron | Interval):
        if tz is not None:
            raise InvalidSchedule("tz goes with a cron expression, not with a trigger object")
        return spec
    if isinstance(spec, str):
        return Cron(spec, tz=tz)
    if isinstance(spec, timedelta):
        if tz is not None:
            raise InvalidSchedule("tz applies to cron expressions; an interval is absolute time")
        return Interval(spec, anchor)
    raise InvalidSchedule(
        f"a schedule spec is a cron expression (str) or an interval (timedelta), got {spec!r}"
    )


class _ScheduleReads(ABC):
    """``get`` and ``list``, the same in a transaction and outside one."""

    _engine: Engine

    @abstractmethod
    def _ops(self) -> Operations:
        """Where the reads run."""

    async def get(self, name: str) -> ScheduleInfo:
        """The schedule named ``name`` (``ScheduleNotFound`` if there is none)."""
        return self._info(await self._ops().get_schedule(name))

    async def get_many(self, names: Iterable[str]) -> dict[str, ScheduleInfo]:
        """The schedules of ``names`` that exist, by name (a missing one is left out), read
        at once: what ``get`` of each would give, without reading every schedule as
        ``list`` does."""
        wanted = sorted(set(names))
        if not wanted:
            return {}
        rows = await self._ops().get_schedules(wanted)
        return {name: self._info(row) for name, row in rows.items()}

    async def list(self) -> builtins.list[ScheduleInfo]:
        """Every schedule, by name."""
        return [self._info(row) for row in await self._ops().list_schedules()]

    def _info(self, row: ScheduleRow) -> ScheduleInfo:
        return ScheduleInfo.of(row, self._engine.resolver.trigger(row.trigger_spec))


class TransactionSchedules(_ScheduleReads, InTransaction):
    """``ctx.scheduler.schedules``: runtime schedules written in the caller's transaction
    (so an application row and its schedule commit together)."""

    def _ops(self) -> Operations:
        return self._tx

    async def create(
        self,
        name: str,
        spec: str | timedelta | Cron | Interval,
        fn: str,
        args: Any = None,
        *,
        tz: str | None = None,
        start: datetime | float | None = None,
        **options: Unpack[ScheduleOptions],
    ) -> ScheduleInfo:
        """Create a runtime schedule. ``spec`` is a cron expression (evaluated in ``tz``) or
        a ``timedelta`` interval, anchored at ``start`` (default: now). With ``start`` in the
        future, nothing fires before it. Options: ``overlap`` (``"skip"``), ``catch_up``
        (``"skip"``), ``catchup_window`` (a year), ``jitter`` (none), ``pace`` (every
        occurrence carries it; default: the function's registration's). A taken name raises
        ``DuplicateName``."""
        definition, begin = self._definition(name, spec, fn, args, tz, start, options)
        await (await self._writing()).create_schedule(definition, begin)
        return await self.get(name)

    async def create_many(self, requests: Iterable[ScheduleRequest]) -> builtins.list[datetime]:
        """:meth:`create` for each request, in order, as one write (one round trip on
        SQLite); returns each schedule's first fire time, in the same order. Every request
        is validated before anything is written; a taken name (also one earlier in the
        batch) raises ``DuplicateName``."""
        items = []
        for r in requests:
            opts: CreateOptions = {**r.options}
            tz = opts.pop("tz", None)
            start = opts.pop("start", None)
            items.append(self._definition(r.name, r.spec, r.fn, r.args, tz, start, opts))
        if not items:
            return []
        firsts = await (await self._writing()).create_schedules(items)
        return [_codec.ts_to_datetime(t) for t in firsts]

    def _definition(
        self,
        name: str,
        spec: str | timedelta | Cron | Interval,
        fn: str,
        args: Any,
        tz: str | None,
        start: datetime | float | None,
        options: ScheduleOptions,
    ) -> tuple[ScheduleDef, float | None]:
        """A validated runtime definition, and its start (None: now)."""
        begin = None if start is None else _codec.to_timestamp(start, "start")
        anchor = self._tx.state.now if begin is None else begin
        trigger = make_trigger(spec, tz, _codec.ts_to_datetime(anchor))
        return build_def(self._engine, name, "runtime", trigger, fn, args, **options), begin

    async def pause(self, name: str) -> bool:
        """Stop firing (False if it was paused already)."""
        return await (await self._writing()).pause_schedule(name)

    async def resume(self, name: str) -> bool:
        """Fire again from the next time after now; paused time is not replayed."""
        return await (await self._writing()).resume_schedule(name)

    async def trigger(self, name: str) -> int:
        """Run the schedule's function now, once; returns the job id."""
        return await (await self._writing()).trigger_schedule(name)

    async def backfill(
        self, name: str, start: datetime | float, end: datetime | float
    ) -> builtins.list[int]:
        """Run every fire time in ``[start, end]`` that has not run yet, oldest first, now.
        Returns the ids of the jobs it created."""
        lo = _codec.to_timestamp(start, "start")
        hi = _codec.to_timestamp(end, "end")
        return await (await self._writing()).backfill_schedule(name, lo, hi)

    async def delete(self, name: str) -> int:
        """Delete the schedule; its pending occurrences are canceled (returns how many)."""
        return await (await self._writing()).delete_schedule(name)


class Schedules(_ScheduleReads):
    """``sched.schedules``: the calls of :class:`TransactionSchedules`, each write in a
    transaction of its own and each read against a snapshot."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def _ops(self) -> Operations:
        return self._engine.now()

    @asynccontextmanager
    async def _own_transaction(self) -> AsyncIterator[TransactionSchedules]:
        async with self._engine.transaction() as tx:
            yield TransactionSchedules(self._engine, tx)

    async def create(
        self,
        name: str,
        spec: str | timedelta | Cron | Interval,
        fn: str,
        args: Any = None,
        **options: Unpack[CreateOptions],
    ) -> ScheduleInfo:
        """:meth:`TransactionSchedules.create` in a transaction of its own."""
        async with self._own_transaction() as schedules:
            return await schedules.create(name, spec, fn, args, **options)

    async def create_many(self, requests: Iterable[ScheduleRequest]) -> builtins.list[datetime]:
        """:meth:`TransactionSchedules.create_many` in a transaction of its own."""
        async with self._own_transaction() as schedules:
            return await schedules.create_many(requests)

    async def pause(self, name: str) -> bool:
        """:meth:`TransactionSchedules.pause` in a transaction of its own."""
        async with self._own_transaction() as schedules:
            return await schedules.pause(name)

    async def resume(self, name: str) -> bool:
        """:meth:`TransactionSchedules.resume` in a transaction of its own."""
        async with self._own_transaction() as schedules:
            return await schedules.resume(name)

    async def trigger(self, name: str) -> int:
        """:meth:`TransactionSchedules.trigger` in a transaction of its own."""
        async with self._own_transaction() as schedules:
            return await schedules.trigger(name)

    async def backfill(
        self, name: str, start: datetime | float, end: datetime | float
    ) -> builtins.list[int]:
        """:meth:`TransactionSchedules.backfill` in a transaction of its own."""
        async with self._own_transaction() as schedules:
            return await schedules.backfill(name, start, end)

    async def delete(self, name: str) -> int:
        """:meth:`TransactionSchedules.delete` in a transaction of its own."""
        async with self._own_transaction() as schedules:
            return await schedules.delete(name)
