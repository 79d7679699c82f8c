"""Recurring schedules: the runtime API (``sched.schedules``) and the static registry
(``cron_jobs()``), both served by one engine (``scheduler._schedule_ops``)."""

from __future__ import annotations

import builtins
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from . import _codec
from . import _schedule_ops as ops
from ._schedule_ops import CATCH_UPS, OVERLAPS
from .errors import DuplicateName, InvalidArgument, InvalidSchedule
from .models import ts_to_datetime
from .store_types import Op, OpState, ScheduleDef, ScheduleRow, Target
from .triggers import Cron, Interval, trigger_from_spec, validate_timezone

if TYPE_CHECKING:
    from ._scheduler import Scheduler
    from .abc import Tx

__all__ = ["CronJobs", "ScheduleInfo", "Schedules", "TxSchedules", "cron_jobs"]

DEFAULT_WINDOW = timedelta(days=365)


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
        return self.trigger.describe()

    @classmethod
    def of(cls, row: ScheduleRow, trigger: Cron | Interval) -> ScheduleInfo:
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
            next_fire=None if row.next_fire_ts is None else ts_to_datetime(row.next_fire_ts),
            last_fire=None if row.last_fire_ts is None else ts_to_datetime(row.last_fire_ts),
            skipped=row.skipped,
            missed=row.missed,
            last_error=row.last_error,
            created=ts_to_datetime(row.created_at),
        )


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise InvalidSchedule(
            f"a schedule name must be a non-empty string of at most 200 characters, got {name!r}"
        )
    return name


def _seconds(value: timedelta | float, what: str, *, positive: bool) -> float:
    try:
        seconds = _codec.to_seconds(value, what)
    except InvalidArgument as exc:
        raise InvalidSchedule(str(exc)) from None
    if seconds < 0 or (positive and seconds == 0):
        raise InvalidSchedule(f"{what} must be {'positive' if positive else '>= 0'}, got {value!r}")
    return seconds


def build_def(
    sched: Scheduler,
    *,
    name: str,
    source: str,
    trigger: Cron | Interval,
    fn: str,
    args: Any,
    overlap: str,
    catch_up: str,
    catchup_window: timedelta | float,
    jitter: timedelta | float,
) -> ScheduleDef:
    """Validate a definition completely before anything is written."""
    _check_name(name)
    if overlap not in OVERLAPS:
        raise InvalidSchedule(f"overlap must be one of {', '.join(OVERLAPS)}; got {overlap!r}")
    if catch_up not in CATCH_UPS:
        raise InvalidSchedule(f"catch_up must be one of {', '.join(CATCH_UPS)}; got {catch_up!r}")
    target = sched._target(fn)
    return ScheduleDef(
        name=name,
        source="static" if source == "static" else "runtime",
        trigger=trigger,
        target=target,
        args_json=_codec.dumps(args, f"args for schedule {name!r}"),
        overlap=overlap,
        catch_up=catch_up,
        catchup_window=_seconds(catchup_window, "catchup_window", positive=True),
        jitter=_seconds(jitter, "jitter", positive=False),
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


class TxSchedules:
    """``ctx.scheduler.schedules``: runtime schedules written in the caller's transaction."""

    def __init__(
        self, sched: Scheduler, tx: Tx, before_write: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        self._sched = sched
        self._tx = tx
        self._before_write = before_write

    async def _run(self, op: Callable[[OpState], Op[Any]]) -> Any:
        if self._before_write is not None:
            await self._before_write()
        return await self._tx.run(op)

    async def create(
        self,
        name: str,
        spec: str | timedelta | Cron | Interval,
        fn: str,
        args: Any = None,
        *,
        tz: str | None = None,
        overlap: str = "skip",
        catch_up: str = "skip",
        catchup_window: timedelta | float = DEFAULT_WINDOW,
        jitter: timedelta | float = timedelta(0),
        start: datetime | float | None = None,
    ) -> ScheduleInfo:
        """Create a runtime schedule. ``spec`` is a cron expression (evaluated in ``tz``) or
        a ``timedelta`` interval, anchored at ``start`` (default: now). With ``start`` in the
        future, nothing fires before it. A taken name raises ``DuplicateName``."""
        now = self._tx.state.now
        begin = None if start is None else _codec.to_timestamp(start, "start")
        anchor = now if begin is None else begin
        trigger = make_trigger(spec, tz, ts_to_datetime(anchor))
        d = build_def(
            self._sched,
            name=name,
            source="runtime",
            trigger=trigger,
            fn=fn,
            args=args,
            overlap=overlap,
            catch_up=catch_up,
            catchup_window=catchup_window,
            jitter=jitter,
        )
        await self._run(lambda st: ops.create(st, d, begin))
        return await self.get(name)

    async def get(self, name: str) -> ScheduleInfo:
        row: ScheduleRow = await self._tx.run(lambda st: ops.get(st, name))
        return ScheduleInfo.of(row, self._sched._trigger_of(row.trigger_spec))

    async def list(self) -> list[ScheduleInfo]:
        rows: list[ScheduleRow] = await self._tx.run(lambda st: ops.list_all(st))
        return [ScheduleInfo.of(r, self._sched._trigger_of(r.trigger_spec)) for r in rows]

    async def pause(self, name: str) -> bool:
        """Stop firing (False if it was paused already)."""
        done: bool = await self._run(lambda st: ops.pause(st, name))
        return done

    async def resume(self, name: str) -> bool:
        """Fire again from the next time after now; paused time is not replayed."""
        done: bool = await self._run(lambda st: ops.resume(st, name, self._sched._trigger_of))
        return done

    async def trigger(self, name: str) -> int:
        """Run the schedule's function now, once; returns the job id."""
        job_id: int = await self._run(lambda st: ops.trigger(st, name, self._sched._resolve))
        return job_id

    async def backfill(
        self, name: str, start: datetime | float, end: datetime | float
    ) -> builtins.list[int]:
        """Run every fire time in ``[start, end]`` that has not run yet, oldest first, now.
        Returns the ids of the jobs it created."""
        lo = _codec.to_timestamp(start, "start")
        hi = _codec.to_timestamp(end, "end")
        created: builtins.list[int] = await self._run(
            lambda st: ops.backfill(st, name, lo, hi, self._sched._trigger_of, self._sched._resolve)
        )
        return created

    async def delete(self, name: str) -> int:
        """Delete the schedule; its pending occurrences are canceled (returns how many)."""
        n: int = await self._run(lambda st: ops.delete(st, name))
        return n


class Schedules:
    """``sched.schedules``: each call runs in a transaction of its own."""

    def __init__(self, sched: Scheduler) -> None:
        self._sched = sched

    async def create(
        self,
        name: str,
        spec: str | timedelta | Cron | Interval,
        fn: str,
        args: Any = None,
        **options: Any,
    ) -> ScheduleInfo:
        async with self._sched.transaction() as ctx:
            return await ctx.scheduler.schedules.create(name, spec, fn, args, **options)

    async def pause(self, name: str) -> bool:
        async with self._sched.transaction() as ctx:
            return await ctx.scheduler.schedules.pause(name)

    async def resume(self, name: str) -> bool:
        async with self._sched.transaction() as ctx:
            return await ctx.scheduler.schedules.resume(name)

    async def trigger(self, name: str) -> int:
        async with self._sched.transaction() as ctx:
            return await ctx.scheduler.schedules.trigger(name)

    async def backfill(
        self, name: str, start: datetime | float, end: datetime | float
    ) -> list[int]:
        async with self._sched.transaction() as ctx:
            return await ctx.scheduler.schedules.backfill(name, start, end)

    async def delete(self, name: str) -> int:
        async with self._sched.transaction() as ctx:
            return await ctx.scheduler.schedules.delete(name)

    async def get(self, name: str) -> ScheduleInfo:
        row: ScheduleRow = await self._sched._read(lambda st: ops.get(st, name))
        return ScheduleInfo.of(row, self._sched._trigger_of(row.trigger_spec))

    async def list(self) -> list[ScheduleInfo]:
        rows: list[ScheduleRow] = await self._sched._read(lambda st: ops.list_all(st))
        return [ScheduleInfo.of(r, self._sched._trigger_of(r.trigger_spec)) for r in rows]


# --- the static registry -------------------------------------------------------------------

_DAYS = {
    "sunday": 0, "monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5,
    "saturday": 6,
}  # fmt: skip


def _int_in(value: object, lo: int, hi: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InvalidSchedule(f"{what} must be an integer from {lo} to {hi}, got {value!r}")
    return value


def _day_of_week(value: object) -> int:
    if isinstance(value, str):
        key = value.strip().lower()
        for day, n in _DAYS.items():
            if key in (day, day[:3]):
                return n
        raise InvalidSchedule(f"day_of_week must be a day name like 'friday', got {value!r}")
    return _int_in(value, 0, 6, "day_of_week (0 = Sunday)")


@dataclass(frozen=True, slots=True)
class _Entry:
    name: str
    spec: str | timedelta
    tz: str | None
    fn: str
    args: Any
    options: dict[str, Any]


class CronJobs:
    """Static recurring jobs declared in code, reconciled into the database at boot by name.

    The convenience methods (``daily``, ``hourly``, ``weekly``, ``monthly``) are UTC and take
    no time zone; use ``cron(..., tz=...)`` for local wall-clock schedules.
    """

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def _add(
        self,
        name: str,
        spec: str | timedelta,
        tz: str | None,
        fn: str,
        args: Any,
        options: dict[str, Any],
    ) -> None:
        _check_name(name)
        if name in self._entries:
            raise DuplicateName(f"a cron named {name!r} is already registered")
        if not isinstance(fn, str) or not fn:
            raise InvalidSchedule(f"fn must be a registered function name, got {fn!r}")
        unknown = set(options) - {"catch_up", "overlap", "catchup_window", "jitter"}
        if unknown:
            raise InvalidSchedule(f"unknown cron option(s): {', '.join(sorted(unknown))}")
        # Validate what can be validated without the registry, at registration time.
        make_trigger(spec, tz, datetime.fromtimestamp(0).astimezone())
        _codec.dumps(args, f"args for cron {name!r}")
        if tz is not None:
            validate_timezone(tz)
        self._entries[name] = _Entry(name, spec, tz, fn, args, options)

    def interval(
        self, name: str, every: timedelta, fn: str, args: Any = None, **options: Any
    ) -> None:
        """Every ``every``, anchored at the first boot that registers it."""
        if not isinstance(every, timedelta):
            raise InvalidSchedule(f"every must be a timedelta, got {every!r}")
        self._add(name, every, None, fn, args, options)

    def cron(
        self,
        name: str,
        expr: str,
        fn: str,
        args: Any = None,
        *,
        tz: str | None = None,
        **options: Any,
    ) -> None:
        """A cron expression, on local wall-clock time in ``tz`` (default UTC)."""
        self._add(name, expr, tz, fn, args, options)

    def daily(
        self, name: str, hour_utc: int, minute_utc: int, fn: str, args: Any = None, **options: Any
    ) -> None:
        h = _int_in(hour_utc, 0, 23, "hour_utc")
        m = _int_in(minute_utc, 0, 59, "minute_utc")
        self._add(name, f"{m} {h} * * *", None, fn, args, options)

    def hourly(self, name: str, minute_utc: int, fn: str, args: Any = None, **options: Any) -> None:
        m = _int_in(minute_utc, 0, 59, "minute_utc")
        self._add(name, f"{m} * * * *", None, fn, args, options)

    def weekly(
        self,
        name: str,
        day_of_week: int | str,
        hour_utc: int,
        minute_utc: int,
        fn: str,
        args: Any = None,
        **options: Any,
    ) -> None:
        d = _day_of_week(day_of_week)
        h = _int_in(hour_utc, 0, 23, "hour_utc")
        m = _int_in(minute_utc, 0, 59, "minute_utc")
        self._add(name, f"{m} {h} * * {d}", None, fn, args, options)

    def monthly(
        self,
        name: str,
        day: int,
        hour_utc: int,
        minute_utc: int,
        fn: str,
        args: Any = None,
        **options: Any,
    ) -> None:
        """On ``day`` of each month (months without that day are skipped)."""
        d = _int_in(day, 1, 31, "day")
        h = _int_in(hour_utc, 0, 23, "hour_utc")
        m = _int_in(minute_utc, 0, 59, "minute_utc")
        self._add(name, f"{m} {h} {d} * *", None, fn, args, options)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def definitions(self, sched: Scheduler, now: datetime) -> list[ScheduleDef]:
        """The entries as definitions (functions resolved against ``sched``'s registry)."""
        out: list[ScheduleDef] = []
        for e in self._entries.values():
            opts = {
                "overlap": "skip",
                "catch_up": "skip",
                "catchup_window": DEFAULT_WINDOW,
                "jitter": timedelta(0),
                **e.options,
            }
            out.append(
                build_def(
                    sched,
                    name=e.name,
                    source="static",
                    trigger=make_trigger(e.spec, e.tz, now),
                    fn=e.fn,
                    args=e.args,
                    **opts,
                )
            )
        return out


def cron_jobs() -> CronJobs:
    """A new, empty static registry: ``crons = cron_jobs(); crons.daily(...)``."""
    return CronJobs()


def trigger_from_json(spec_json: str) -> Cron | Interval:
    return trigger_from_spec(json.loads(spec_json))


def target_of(fn: str, reg: Any) -> Target:
    return Target(
        fn=fn,
        kind=reg.kind,
        idempotent=reg.idempotent,
        max_failures=reg.retry.max_failures,
        initial_backoff=reg.retry.backoff_seconds,
        backoff_base=float(reg.retry.base),
    )
