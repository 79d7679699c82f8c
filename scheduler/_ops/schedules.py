"""Database logic of recurring schedules, as sans-IO operations (see
:mod:`scheduler._ops.jobs`).

One engine serves static crons (reconciled from code at boot) and runtime schedules. A
schedule row holds its trigger, its target, its policies, and ``next_fire_ts``: the first
nominal fire time not yet materialized. Here: writing and reading definitions, manual runs
and backfills, reconciling the static crons, and the occurrence job a fire time becomes
(keyed ``"<name>:<fire_ts>"``, unique, so a time runs once however often it is computed).
The tick, which materializes due times under the catch-up and overlap policies, is in
:mod:`scheduler._ops.ticks`.
"""

from __future__ import annotations

import dataclasses
import json
import random
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from .._codec import ts_to_datetime
from .._codec import ts_to_datetime as _dt  # the short name the operations below use
from ..errors import DuplicateName, InvalidSchedule, ScheduleNotFound
from ..store_types import (
    NewJob,
    Op,
    OpState,
    Params,
    Q,
    ReconcileReport,
    ScheduleDef,
    ScheduleRow,
    Target,
    Trigger,
)
from ..triggers import Interval, trigger_from_spec
from . import jobs
from .seeds import stable_seed

if TYPE_CHECKING:
    from collections.abc import Sequence

Overlap = Literal["skip", "buffer_one", "allow_all", "cancel_other"]
CatchUp = Literal["skip", "fire_once", "fire_all"]
OVERLAPS: tuple[str, ...] = ("skip", "buffer_one", "allow_all", "cancel_other")
CATCH_UPS: tuple[str, ...] = ("skip", "fire_once", "fire_all")

BACKFILL_CAP = 10_000
_US = timedelta(microseconds=1)


def occurrence_key(name: str, fire_ts: float) -> str:
    return f"{name}:{fire_ts!r}"


def jitter_offset(name: str, fire_ts: float, jitter: float) -> float:
    """The occurrence's delay in ``[0, jitter)``, drawn from a PRNG seeded by (name, time):
    the same in every process and every time it is recomputed."""
    if jitter <= 0:
        return 0.0
    return random.Random(stable_seed(occurrence_key(name, fire_ts))).uniform(0.0, jitter)  # noqa: S311 (a jitter, not a secret)


# --- writing definitions -----------------------------------------------------------------


def create(st: OpState, d: ScheduleDef, start: float | None = None) -> Op[float]:
    """Insert a schedule; its first fire is the trigger's first time after now, or its
    first time at or after ``start`` when that is later. Returns that first fire time."""
    if start is not None and start > st.now:
        first = d.trigger.next_after(_dt(start) - _US).timestamp()
    else:
        first = d.trigger.next_after(_dt(st.now)).timestamp()
    row = yield Q("insert_schedule", _insert_params(st, d, first), "one")
    if row is None:
        raise DuplicateName(f"a schedule named {d.name!r} already exists")
    st.wake = True
    return first


def create_many(st: OpState, items: Sequence[tuple[ScheduleDef, float | None]]) -> Op[list[float]]:
    """:func:`create` for each ``(definition, start)`` in order, in one operation; their
    first fire times, in the same order."""
    firsts: list[float] = []
    for d, start in items:
        firsts.append((yield from create(st, d, start)))
    return firsts


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
        "pace_key": d.pace_key,
        "pace_spacing": d.pace_spacing,
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


def get_many(st: OpState, names: Sequence[str]) -> Op[dict[str, ScheduleRow]]:
    rows = yield Q("get_schedules", {"names": list(names)}, "all")
    return {r["name"]: ScheduleRow.of(r) for r in rows}


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


def resume(st: OpState, name: str) -> Op[bool]:
    """Tick again from the next time after now: paused time is not replayed."""
    row = yield from get(st, name)
    if not row.paused:
        return False
    nxt = st.resolver.trigger(row.trigger_spec).next_after(_dt(st.now)).timestamp()
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
        yield from jobs.cancel(st, job_id)
    return len(ids)


def occurrence(row: ScheduleRow | ScheduleDef, fire_ts: float, next_ts: float) -> NewJob:
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
        pace_key=row.pace_key,
        pace_spacing=row.pace_spacing,
        # A schedule's own pace wins over its function's concurrency (a job takes one).
        concurrency_key=None if row.pace_key is not None else target.concurrency_key,
        concurrency_limit=None if row.pace_key is not None else target.concurrency_limit,
    )


def trigger(st: OpState, name: str) -> Op[int]:
    """Run the schedule now, once (a manual occurrence; overlap and pause do not apply)."""
    row = yield from get(st, name)
    row = with_live_target(row, st.resolver.live_target(row.target.fn))
    job = occurrence(row, st.now, st.now)
    job = dataclasses.replace(job, idempotency_key=f"{name}:trigger:{st.now!r}")
    job_id: int = yield from jobs.enqueue(st, job)
    return job_id


def backfill(st: OpState, name: str, start: float, end: float) -> Op[list[int]]:
    """Enqueue every fire time in ``[start, end]`` that has not run, oldest first, due now.

    Times whose occurrence exists (it ran, runs, or is pending) are not repeated.
    """
    if end < start:
        raise InvalidSchedule(
            f"backfill end {_dt(end).isoformat()} is before its start {_dt(start).isoformat()}"
        )
    row = yield from get(st, name)
    row = with_live_target(row, st.resolver.live_target(row.target.fn))
    trig = st.resolver.trigger(row.trigger_spec)
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
            created.append((yield from jobs.enqueue(st, occurrence(row, fire_ts, st.now))))
    return created


def with_live_target(row: ScheduleRow, live: Target | None) -> ScheduleRow:
    """``row`` running ``live`` (the registry's target of its function in this process)
    instead of the target stored with it; ``row`` itself when there is none or it is the
    same."""
    if live is None or live == row.target:
        return row
    return dataclasses.replace(row, target=live)


# --- static crons --------------------------------------------------------------------------


def reconcile(st: OpState, defs: Sequence[ScheduleDef]) -> Op[ReconcileReport]:
    """Make the static schedules in the table match ``defs``, by name.

    Unchanged entries are not touched (they keep their phase and fire nothing extra);
    edited ones take the new definition from the next time after now; new ones start;
    removed ones are deleted and their pending occurrences canceled.
    """
    yield Q("lock_static_schedules", {}, "one")  # instances starting together: one at a time
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
