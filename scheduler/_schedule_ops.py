"""Database logic of recurring schedules, as sans-IO operations (see ``_ops``).

One engine serves static crons (reconciled from code at boot) and runtime schedules. A
schedule row holds its trigger, its target, its policies, and ``next_fire_ts``: the first
nominal fire time not yet materialized. A tick materializes due times as jobs keyed
``"<name>:<fire_ts>"`` (unique), so a time runs once however often it is computed, and
re-anchors ``next_fire_ts`` past the whole backlog from the trigger, never from "now".
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Literal

from . import _ops
from ._codec import ts_to_datetime
from ._codec import ts_to_datetime as _dt  # the short name the operations below use
from ._ops import stable_seed
from .errors import DuplicateName, InvalidSchedule, ScheduleNotFound, SchedulerError
from .models import JobState
from .store_types import (
    NewJob,
    Op,
    OpState,
    Params,
    Q,
    ReconcileReport,
    Resolve,
    ScheduleDef,
    ScheduleRow,
    Trigger,
    TriggerOf,
)
from .triggers import Interval, trigger_from_spec

log = logging.getLogger(__name__)

Overlap = Literal["skip", "buffer_one", "allow_all", "cancel_other"]
CatchUp = Literal["skip", "fire_once", "fire_all"]
OVERLAPS: tuple[str, ...] = ("skip", "buffer_one", "allow_all", "cancel_other")
CATCH_UPS: tuple[str, ...] = ("skip", "fire_once", "fire_all")

ON_TIME_GRACE = 60.0
"""Under ``catch_up="skip"``, the latest due time still fires if the tick reaches it within
this many seconds (it came due while the scheduler was running; only the tick was late).
Every earlier due time of the backlog, and a latest one found later than this, is missed
(counted in ``missed``): skip never fires a burst."""
FIRE_ALL_CAP = 1000
BACKFILL_CAP = 10_000
_US = timedelta(microseconds=1)


def occurrence_key(name: str, fire_ts: float) -> str:
    return f"{name}:{fire_ts!r}"


def jitter_offset(name: str, fire_ts: float, jitter: float) -> float:
    """The occurrence's delay in ``[0, jitter)``, drawn from a PRNG seeded by (name, time):
    the same in every process and every time it is recomputed."""
    if jitter <= 0:
        return 0.0
    return random.Random(stable_seed(occurrence_key(name, fire_ts))).uniform(0.0, jitter)


# --- writing definitions -----------------------------------------------------------------


def create(st: OpState, d: ScheduleDef, start: float | None = None) -> Op[None]:
    """Insert a schedule; its first fire is the trigger's first time after now, or its
    first time at or after ``start`` when that is later."""
    if start is not None and start > st.now:
        first = d.trigger.next_after(_dt(start) - _US).timestamp()
    else:
        first = d.trigger.next_after(_dt(st.now)).timestamp()
    row = yield Q("insert_schedule", _insert_params(st, d, first), "one")
    if row is None:
        raise DuplicateName(f"a schedule named {d.name!r} already exists")
    st.wake = True


def _definition_params(st: OpState, d: ScheduleDef, next_fire_ts: float) -> dict[str, Any]:
    """The parameters that write a schedule's definition (its trigger, target and policies)."""
    t = d.target
    return {
        "name": d.name,
        "trigger_spec": d.spec_json,
        "fn": t.fn,
        "kind": t.kind.value,
        "idempotent": int(t.idempotent),
        "max_failures": t.max_failures,
        "initial_backoff": t.initial_backoff,
        "backoff_base": t.backoff_base,
        "args": d.args_json,
        "overlap": d.overlap,
        "catch_up": d.catch_up,
        "catchup_window": d.catchup_window,
        "jitter": d.jitter,
        "next_fire_ts": next_fire_ts,
        "fingerprint": d.fingerprint,
        "now": st.now,
    }


def _insert_params(st: OpState, d: ScheduleDef, first: float) -> Params:
    return {
        **_definition_params(st, d, first),
        "source": d.source,
        "paused": 0,
        "last_fire_ts": None,
    }


def get(st: OpState, name: str) -> Op[ScheduleRow]:
    row = yield Q("get_schedule", {"name": name}, "one")
    if row is None:
        raise ScheduleNotFound(f"no schedule named {name!r}")
    return ScheduleRow.of(row)


def list_all(st: OpState, source: str | None = None) -> Op[list[ScheduleRow]]:
    rows = yield Q("list_schedules", {"source": source}, "all")
    return [ScheduleRow.of(r) for r in rows]


def pause(st: OpState, name: str) -> Op[bool]:
    """Stop ticking; occurrences already materialized are left alone. False if already paused."""
    row = yield from get(st, name)
    if row.paused:
        return False
    yield Q(
        "set_paused", {"name": name, "paused": 1, "next_fire_ts": row.next_fire_ts, "now": st.now}
    )
    return True


def resume(st: OpState, name: str, trigger_of: TriggerOf) -> Op[bool]:
    """Tick again from the next time after now: paused time is not replayed."""
    row = yield from get(st, name)
    if not row.paused:
        return False
    nxt = trigger_of(row.trigger_spec).next_after(_dt(st.now)).timestamp()
    yield Q("set_paused", {"name": name, "paused": 0, "next_fire_ts": nxt, "now": st.now})
    st.wake = True
    return True


def delete(st: OpState, name: str) -> Op[int]:
    """Delete the schedule and cancel its pending occurrences; returns how many."""
    yield from get(st, name)
    yield Q("delete_schedule", {"name": name})
    return (yield from _cancel_pending(st, name))


def _cancel_pending(st: OpState, name: str) -> Op[int]:
    ids = [int(r["id"]) for r in (yield Q("schedule_pending_ids", {"schedule_name": name}, "all"))]
    for job_id in ids:
        yield from _ops.cancel(st, job_id)
    return len(ids)


def _occurrence(row: ScheduleRow | ScheduleDef, fire_ts: float, next_ts: float) -> NewJob:
    target = row.target
    jitter = jitter_offset(row.name, fire_ts, row.jitter)
    return NewJob(
        fn=target.fn,
        kind=target.kind,
        next_ts=next_ts + jitter,
        max_failures=target.max_failures,
        initial_backoff=target.initial_backoff,
        backoff_base=target.backoff_base,
        idempotent=target.idempotent,
        args_json=row.args_json,
        idempotency_key=occurrence_key(row.name, fire_ts),
        name=row.name,
        schedule_name=row.name,
        fire_ts=fire_ts,
        jitter=jitter if row.jitter > 0 else None,
    )


def trigger(st: OpState, name: str, resolve: Resolve) -> Op[int]:
    """Run the schedule now, once (a manual occurrence; overlap and pause do not apply)."""
    row = yield from get(st, name)
    row = _with_live_target(row, resolve)
    job = _occurrence(row, st.now, st.now)
    job = NewJob(**{**_fields(job), "idempotency_key": f"{name}:trigger:{st.now!r}"})
    job_id: int = yield from _ops.enqueue(st, job)
    return job_id


def _fields(job: NewJob) -> dict[str, Any]:
    return {f: getattr(job, f) for f in job.__dataclass_fields__}


def backfill(
    st: OpState, name: str, start: float, end: float, trigger_of: TriggerOf, resolve: Resolve
) -> Op[list[int]]:
    """Enqueue every fire time in ``[start, end]`` that has not run, oldest first, due now.

    Times whose occurrence exists (it ran, runs, or is pending) are not repeated.
    """
    if end < start:
        raise InvalidSchedule(
            f"backfill end {_dt(end).isoformat()} is before its start {_dt(start).isoformat()}"
        )
    row = yield from get(st, name)
    row = _with_live_target(row, resolve)
    trig = trigger_of(row.trigger_spec)
    times: list[float] = []
    t = trig.next_after(_dt(start) - _US)
    while t <= _dt(end):
        times.append(t.timestamp())
        if len(times) > BACKFILL_CAP:
            raise InvalidSchedule(
                f"backfill of {name!r} covers more than {BACKFILL_CAP} fire times; "
                "split it into smaller ranges"
            )
        t = trig.next_after(t)
    created: list[int] = []
    for fire_ts in times:
        existing = yield Q("job_by_key", {"idempotency_key": occurrence_key(name, fire_ts)}, "one")
        if existing is None:
            created.append((yield from _ops.enqueue(st, _occurrence(row, fire_ts, st.now))))
    return created


def _with_live_target(row: ScheduleRow, resolve: Resolve) -> ScheduleRow:
    live = resolve(row.target.fn)
    if live is None or live == row.target:
        return row
    return ScheduleRow(**{**{f: getattr(row, f) for f in row.__dataclass_fields__}, "target": live})


# --- ticks ---------------------------------------------------------------------------------


def next_fire(st: OpState) -> Op[float | None]:
    row = yield Q("next_schedule_fire", {}, "one")
    return None if row is None else float(row["next_fire_ts"])


def tick(st: OpState, limit: int, trigger_of: TriggerOf, resolve: Resolve) -> Op[int]:
    """Materialize the due times of up to ``limit`` due schedules; returns how many were due."""
    due = yield Q("due_schedules", {"now": st.now, "limit": limit}, "all")
    rows = [ScheduleRow.of(r) for r in due]
    for row in rows:
        try:
            trig = trigger_of(row.trigger_spec)
        except SchedulerError as exc:  # a stored spec this code cannot read
            yield Q("advance_schedule", _advance(st, row, None, row.last_fire_ts, 0, 0, str(exc)))
            continue
        yield from _tick_one(st, row, trig, resolve)
    return len(rows)


def _due_times(row: ScheduleRow, trig: Trigger, now: float) -> tuple[list[float], int, bool, float]:
    """The times to fire now under the catch-up policy, how many due times are dropped,
    whether they form a backlog batch (fired one after another), and the latest due time."""
    assert row.next_fire_ts is not None
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
    if isinstance(trig, Interval):
        n = min(cap, trig.count_between(_dt(lo) - _US, _dt(hi)))
        newest = trig.latest_at_or_before(_dt(hi))
        assert newest is not None
        return [(newest - trig.every * i).timestamp() for i in range(n - 1, -1, -1)]
    out: list[float] = []
    t = trig.latest_at_or_before(_dt(hi))
    while t is not None and t.timestamp() >= lo and len(out) < cap:
        out.append(t.timestamp())
        t = trig.latest_at_or_before(t - _US)
    out.reverse()
    return out


def _tick_one(st: OpState, row: ScheduleRow, trig: Trigger, resolve: Resolve) -> Op[None]:
    now = st.now
    assert row.next_fire_ts is not None
    times, missed, batch, last_ts = _due_times(row, trig, now)
    nxt = trig.next_after(_dt(now)).timestamp()
    error: str | None = None
    skipped = 0
    live = resolve(row.target.fn)
    if live is None:
        error = f"function {row.target.fn!r} is not registered in the process that ticked"
        missed += len(times)
        times = []
    elif live != row.target:
        row = _with_live_target(row, resolve)
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
                        yield from _ops.cancel(st, int(r["id"]))
                active = []
            elif batch or (row.overlap == "buffer_one" and not held):
                runnable = False
            else:
                skipped += 1
                continue
        yield from _ops.enqueue(st, _occurrence(row, fire_ts, fire_ts), held=not runnable)
        held = held or not runnable
        busy = True
    return skipped


# --- static crons --------------------------------------------------------------------------


def reconcile(st: OpState, defs: Sequence[ScheduleDef]) -> Op[ReconcileReport]:
    """Make the static schedules in the table match ``defs``, by name.

    Unchanged entries are not touched (they keep their phase and fire nothing extra);
    edited ones take the new definition from the next time after now; new ones start;
    removed ones are deleted and their pending occurrences canceled.
    """
    got = yield Q("static_fingerprints", {}, "all")
    existing = {r["name"]: (r["fingerprint"], r["source"]) for r in got}
    added: list[str] = []
    changed: list[str] = []
    unchanged = 0
    now_dt = _dt(st.now)
    first_fire: dict[Trigger, float] = {}  # many entries share an expression
    new_rows: list[Params] = []
    for d in defs:
        found = existing.get(d.name)
        if found is None:
            first = first_fire.get(d.trigger)
            if first is None:
                first = first_fire[d.trigger] = d.trigger.next_after(now_dt).timestamp()
            new_rows.append(_insert_params(st, d, first))
            added.append(d.name)
            continue
        fingerprint, source = found
        if source != "static":
            raise DuplicateName(
                f"static cron {d.name!r} clashes with a runtime schedule of the same name"
            )
        if fingerprint == d.fingerprint:
            unchanged += 1
            continue
        old = yield from get(st, d.name)
        d = _keep_phase(d, old)
        next_fire_ts = d.trigger.next_after(now_dt).timestamp()
        yield Q("update_schedule_definition", _definition_params(st, d, next_fire_ts))
        changed.append(d.name)
    if new_rows:
        yield Q("insert_schedules", tuple(new_rows), "many")
    wanted = {d.name for d in defs}
    removed = sorted(n for n, (_, src) in existing.items() if src == "static" and n not in wanted)
    for name in removed:
        yield Q("delete_schedule", {"name": name})
        yield from _cancel_pending(st, name)
    if added or changed or removed:
        st.wake = True
    return ReconcileReport(added, changed, removed, unchanged)


def _keep_phase(d: ScheduleDef, old: ScheduleRow) -> ScheduleDef:
    """An edited interval with the same period keeps its old anchor (its phase)."""
    if not isinstance(d.trigger, Interval):
        return d
    old_trigger = trigger_from_spec(json.loads(old.trigger_spec))
    if isinstance(old_trigger, Interval) and old_trigger.every == d.trigger.every:
        return dataclasses.replace(d, trigger=old_trigger)
    return d


def describe_row(row: ScheduleRow, trig: Trigger) -> dict[str, Any]:
    """A JSON-able view of a schedule row (for the command line)."""
    return {
        "name": row.name,
        "source": row.source,
        "trigger": trig.describe(),
        "fn": row.target.fn,
        "paused": row.paused,
        "next_fire": None
        if row.next_fire_ts is None
        else ts_to_datetime(row.next_fire_ts).isoformat(),
        "last_fire": None
        if row.last_fire_ts is None
        else ts_to_datetime(row.last_fire_ts).isoformat(),
        "overlap": row.overlap,
        "catch_up": row.catch_up,
        "skipped": row.skipped,
        "missed": row.missed,
        "last_error": row.last_error,
    }
