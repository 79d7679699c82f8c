"""Static recurring jobs declared in code (``cron_jobs()``), reconciled into the database at
boot by name; they run on the same engine as runtime schedules (:mod:`scheduler.schedules`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Unpack

from . import _codec
from .errors import DuplicateName, InvalidSchedule
from .schedules import ScheduleOptions, build_def, check_schedule_name, make_trigger
from .triggers import validate_timezone

if TYPE_CHECKING:
    from ._engine import Engine
    from .store_types import ReconcileReport, ScheduleDef

__all__ = ["CronJobs", "cron_jobs", "reconcile_crons"]

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
    options: ScheduleOptions


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
        options: ScheduleOptions,
    ) -> None:
        check_schedule_name(name)
        if name in self._entries:
            raise DuplicateName(f"a cron named {name!r} is already registered")
        if not isinstance(fn, str) or not fn:
            raise InvalidSchedule(f"fn must be a registered function name, got {fn!r}")
        unknown = set(options) - set(ScheduleOptions.__annotations__)
        if unknown:
            raise InvalidSchedule(f"unknown cron option(s): {', '.join(sorted(unknown))}")
        # Validate what can be validated without the registry, at registration time (typed
        # arguments are checked against their function's registration at boot).
        make_trigger(spec, tz, datetime.fromtimestamp(0).astimezone())
        if not dataclasses.is_dataclass(args):
            _codec.dumps(args, f"args for cron {name!r}")
        if tz is not None:
            validate_timezone(tz)
        self._entries[name] = _Entry(name, spec, tz, fn, args, options)

    def interval(
        self,
        name: str,
        every: timedelta,
        fn: str,
        args: Any = None,
        **options: Unpack[ScheduleOptions],
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
        **options: Unpack[ScheduleOptions],
    ) -> None:
        """A cron expression, on local wall-clock time in ``tz`` (default UTC)."""
        self._add(name, expr, tz, fn, args, options)

    def daily(
        self,
        name: str,
        hour_utc: int,
        minute_utc: int,
        fn: str,
        args: Any = None,
        **options: Unpack[ScheduleOptions],
    ) -> None:
        """Every day at ``hour_utc:minute_utc`` UTC."""
        h = _int_in(hour_utc, 0, 23, "hour_utc")
        m = _int_in(minute_utc, 0, 59, "minute_utc")
        self._add(name, f"{m} {h} * * *", None, fn, args, options)

    def hourly(
        self,
        name: str,
        minute_utc: int,
        fn: str,
        args: Any = None,
        **options: Unpack[ScheduleOptions],
    ) -> None:
        """Every hour at ``minute_utc`` past."""
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
        **options: Unpack[ScheduleOptions],
    ) -> None:
        """Every week on ``day_of_week`` (0 = Sunday, or a day's name: ``"friday"``, ``"fri"``)
        at ``hour_utc:minute_utc`` UTC."""
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
        **options: Unpack[ScheduleOptions],
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

    def definitions(self, engine: Engine, now: datetime) -> list[ScheduleDef]:
        """The entries as definitions (functions resolved against the engine's registry)."""
        return [
            build_def(
                engine,
                e.name,
                "static",
                make_trigger(e.spec, e.tz, now),
                e.fn,
                e.args,
                **e.options,
            )
            for e in self._entries.values()
        ]


def cron_jobs() -> CronJobs:
    """A new, empty static registry: ``crons = cron_jobs(); crons.daily(...)``."""
    return CronJobs()


async def reconcile_crons(engine: Engine, crons: CronJobs) -> ReconcileReport:
    """Make the stored static schedules match ``crons`` (see
    :meth:`scheduler.abc.Operations.reconcile_schedules`)."""
    now = engine.clock.time()
    definitions = crons.definitions(engine, _codec.ts_to_datetime(now))
    return await engine.store.at(now).reconcile_schedules(definitions)
