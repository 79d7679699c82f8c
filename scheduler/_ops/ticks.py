"""The schedule tick, as sans-IO operations (see :mod:`scheduler._ops.jobs`): materialize
the due times of due schedules as occurrence jobs under each schedule's catch-up and overlap
policies, and re-anchor ``next_fire_ts`` past the whole backlog from the trigger, never
from "now".

The occurrence a fire time becomes (its key, its jitter, its target) is built by
:mod:`scheduler._ops.schedules`, which also writes the definitions this reads.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from .._codec import ts_to_datetime as _dt  # the short name the operations below use
from ..errors import SchedulerError
from ..models import JobState
from ..store_types import Op, OpState, Params, Q, ScheduleRow, Trigger
from ..triggers import Interval
from . import jobs
from .schedules import occurrence, occurrence_key, with_live_target

# The name these warnings have always had (they were logged from _schedule_ops).
log = logging.getLogger("scheduler._schedule_ops")

ON_TIME_GRACE = 60.0
"""Under ``catch_up="skip"``, the latest due time still fires if the tick reaches it within
this many seconds (it came due while the scheduler was running; only the tick was late).
Every earlier due time of the backlog, and a latest one found later than this, is missed
(counted in ``missed``): skip never fires a burst."""
FIRE_ALL_CAP = 1000
_US = timedelta(microseconds=1)


def next_fire(st: OpState) -> Op[float | None]:
    row = yield Q("next_schedule_fire", {}, "one")
    return None if row is None else float(row["next_fire_ts"])


def tick(st: OpState, limit: int) -> Op[int]:
    """Materialize the due times of up to ``limit`` due schedules; returns how many were due."""
    due = yield Q("due_schedules", {"now": st.now, "limit": limit}, "all")
    rows = [ScheduleRow.of(r) for r in due]
    for row in rows:
        try:
            trig = st.resolver.trigger(row.trigger_spec)
        except SchedulerError as exc:  # a stored spec this code cannot read
            yield Q("advance_schedule", _advance(st, row, None, row.last_fire_ts, 0, 0, str(exc)))
            continue
        yield from _tick_one(st, row, trig)
    return len(rows)


def _due_times(row: ScheduleRow, trig: Trigger, now: float) -> tuple[list[float], int, bool, float]:
    """The times to fire now under the catch-up policy, how many due times are dropped,
    whether they form a backlog batch (fired one after another), and the latest due time."""
    if row.next_fire_ts is None:
        raise RuntimeError("a due schedule has its next fire time")
    first = row.next_fire_ts
    now_dt = _dt(now)
    latest_dt = trig.latest_at_or_before(now_dt)
    latest = first if latest_dt is None else max(first, latest_dt.timestamp())
    due = _count_due(trig, first, latest)
    window_start = now - row.catchup_window
    if row.catch_up == "fire_all":
        times = _newest(trig, max(first, window_start), latest, FIRE_ALL_CAP)
        return times, max(0, due - len(times)), len(times) > 1, latest
    if row.catch_up == "fire_once":
        times = [latest] if latest >= window_start else []
    else:
        times = [latest] if now - latest <= ON_TIME_GRACE else []
    return times, max(0, due - len(times)), False, latest


def _count_due(trig: Trigger, first: float, latest: float) -> int:
    """Due times in [first, latest]: exact for intervals (O(1)); for cron, 1 or 2 ("more
    than one"), which keeps skip/fire_once to a bounded handful of computations."""
    if isinstance(trig, Interval):
        return trig.count_between(_dt(first) - _US, _dt(latest))
    return 1 if latest <= first else 2


def _newest(trig: Trigger, lo: float, hi: float, cap: int) -> list[float]:
    """Up to ``cap`` fire times in ``[lo, hi]``, the newest ones, oldest first."""
    if hi < lo:
        return []
    if isinstance(trig, Interval) and not trig.exclude:
        n = min(cap, trig.count_between(_dt(lo) - _US, _dt(hi)))
        newest = trig.latest_at_or_before(_dt(hi))
        if newest is None:
            raise RuntimeError("an interval fires at or before a due time")
        return [(newest - trig.every * i).timestamp() for i in range(n - 1, -1, -1)]
    out: list[float] = []
    t = trig.latest_at_or_before(_dt(hi))
    while t is not None and t.timestamp() >= lo and len(out) < cap:
        out.append(t.timestamp())
        t = trig.latest_at_or_before(t - _US)
    out.reverse()
    return out


def _tick_one(st: OpState, row: ScheduleRow, trig: Trigger) -> Op[None]:
    now = st.now
    if row.next_fire_ts is None:
        raise RuntimeError("a due schedule has its next fire time")
    times, missed, batch, last_ts = _due_times(row, trig, now)
    nxt = trig.next_after(_dt(now)).timestamp()
    error: str | None = None
    skipped = 0
    live = st.resolver.live_target(row.target.fn)
    if live is None:
        error = f"function {row.target.fn!r} is not registered in the process that ticked"
        missed += len(times)
        times = []
    else:
        row = with_live_target(row, live)
    if times:
        skipped = yield from _materialize(st, row, times, batch)
    if missed:
        log.warning(
            "schedule %r: %d due time(s) dropped by catch_up=%s", row.name, missed, row.catch_up
        )
    yield Q("advance_schedule", _advance(st, row, nxt, last_ts, skipped, missed, error))
    st.wake = True


def _advance(
    st: OpState,
    row: ScheduleRow,
    next_fire_ts: float | None,
    last_fire_ts: float | None,
    skipped: int,
    missed: int,
    error: str | None,
) -> Params:
    """The parameters of ``advance_schedule``: the tick's result for ``row``, fenced on the
    next fire time the tick read."""
    return {
        "name": row.name,
        "from_fire_ts": row.next_fire_ts,
        "next_fire_ts": next_fire_ts,
        "last_fire_ts": last_fire_ts,
        "skipped": skipped,
        "missed": missed,
        "last_error": error,
        "now": st.now,
    }


def _materialize(st: OpState, row: ScheduleRow, times: list[float], batch: bool) -> Op[int]:
    """Create the occurrences for ``times`` under the overlap policy; returns how many were
    skipped."""
    active = yield Q("schedule_active_jobs", {"schedule_name": row.name}, "all")
    held = any(r["state"] == JobState.HELD for r in active)
    busy = bool(active)
    skipped = 0
    for fire_ts in times:
        key = occurrence_key(row.name, fire_ts)
        if (yield Q("job_by_key", {"idempotency_key": key}, "one")) is not None:
            continue  # this time already has its occurrence
        runnable = True
        if busy and row.overlap != "allow_all":
            if row.overlap == "cancel_other":
                for r in active:
                    if r["state"] in (JobState.PENDING, JobState.HELD):
                        yield from jobs.cancel(st, int(r["id"]))
                active = []
            elif batch or (row.overlap == "buffer_one" and not held):
                runnable = False
            else:
                skipped += 1
                continue
        yield from jobs.enqueue(st, occurrence(row, fire_ts, fire_ts), held=not runnable)
        held = held or not runnable
        busy = True
    return skipped
