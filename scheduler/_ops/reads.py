"""The scheduler's reads of jobs, as sans-IO operations (see :mod:`scheduler._ops.jobs`): one
job, a page of jobs, the count in each state, the bounded counts metrics read, the
:class:`~scheduler.models.Job` a job row becomes, and a payload row as a handler sees it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _codec
from .._codec import optional_float
from ..models import Job, JobKind, JobState
from ..store_types import Op, OpState, Q, Row, StoreGauges

if TYPE_CHECKING:
    from collections.abc import Sequence


def get_job(st: OpState, job_id: int) -> Op[Job | None]:
    row = yield Q("get_job", {"job_id": job_id}, "one")
    if row is None:
        return None
    items = yield from batch_items(st, [job_id] if row["batch"] else [])
    return job_from_row(row, st.lease_offset, items.get(job_id))


def batch_items(st: OpState, job_ids: Sequence[int]) -> Op[dict[int, list[Any]]]:
    """The items of the batches ``job_ids`` (jobs whose payload row is marked ``batch``), by
    job id, each batch's in the order they were added: one query, none for no batch."""
    if not job_ids:
        return {}
    ids = list(job_ids)
    rows = yield Q("batch_items_of", {"job_ids": ids}, "all")
    items: dict[int, list[Any]] = {}
    for r in rows:
        items.setdefault(int(r["job_id"]), []).append(_codec.loads(r["item"]))
    return items


def job_outcomes(st: OpState, job_ids: Sequence[int]) -> Op[dict[int, dict[str, Any] | None]]:
    """For each of ``job_ids`` that exists, its terminal outcome (what ``on_complete`` is
    given: ``{"kind": "success", "value"}``, ``{"kind": "failed", "error"}`` or
    ``{"kind": "canceled"}``), or None while it has not ended. A job with no row is left
    out."""
    rows = yield Q("job_outcomes", {"job_ids": list(job_ids)}, "all")
    return {int(r["id"]): outcome_of(r) for r in rows}


def outcome_of(r: Row) -> dict[str, Any] | None:
    """A ``job_outcomes`` row's outcome (None unless the job is in a terminal state)."""
    state = r["state"]
    if state == JobState.SUCCESS:
        return {"kind": "success", "value": _codec.loads(r["result"])}
    if state == JobState.FAILED:
        return {"kind": "failed", "error": r["error"] or "failed"}
    if state == JobState.CANCELED:
        return {"kind": "canceled"}
    return None


def list_jobs(
    st: OpState,
    state: JobState | None,
    fn: str | None,
    before_id: int | None,
    limit: int,
) -> Op[list[Job]]:
    params = {
        "state": None if state is None else state.value,
        "fn": fn,
        "before_id": before_id,
        "limit": limit,
    }
    rows = yield Q("list_jobs", params, "all")
    return [job_from_row(r, st.lease_offset) for r in rows]


def count_by_state(st: OpState) -> Op[dict[JobState, int]]:
    rows = yield Q("count_by_state", {}, "all")
    counts = dict.fromkeys(JobState, 0)
    for r in rows:
        counts[JobState(r["state"])] = int(r["n"])
    return counts


def gauges(st: OpState, cap: int) -> Op[StoreGauges]:
    """The store's gauges at ``st.now``, every count stopping at ``cap`` rows, so a scrape
    costs the same however many jobs there are (the paced part costs one probe per pace key).

    The backlog is the work that could start now: due unpaced jobs, and each pace key's first
    pending job once it is due and its key's slot is open (its age counted from the later of
    the two). Due paced jobs behind their key's slot are counted apart, as waiting: they are
    not late, they are kept to their spacing. So are due jobs under a concurrency limit
    whose turn has not come (their key is at its limit); those whose turn has come are
    backlog (the limited part costs a read of the due limited jobs)."""
    rows = yield Q("count_active_capped", {"cap": cap}, "all")
    active = {r["state"]: int(r["n"]) for r in rows}
    due = 0
    oldest: float | None = None
    for kind in JobKind:
        row = yield Q("count_due_capped", {"kind": kind.value, "now": st.now, "cap": cap}, "one")
        due += int(row["n"])
        first = yield Q("next_due", {"kind": kind.value}, "one")
        firsts = [] if first is None else [float(first["next_ts"])]
        # The jobs of other priorities than 0, a priority at a time (each an index range).
        for level in (yield Q("ranked_levels", {"kind": kind.value}, "all")):
            if float(level["first_ts"]) > st.now or due >= cap:
                continue
            params = {"kind": kind.value, "priority": level["priority"], "now": st.now, "cap": cap}
            row = yield Q("count_ranked_due_capped", params, "one")
            due += int(row["n"])
            firsts.append(float(level["first_ts"]))
        for ts in firsts:
            if ts <= st.now:
                oldest = ts if oldest is None else min(oldest, ts)
    clocks = {"now": st.now, "lease_now": st.lease_now, "lease_offset": st.lease_offset}
    paced = yield Q("paced_gauges", {**clocks, "cap": cap}, "one")
    startable = int(paced["startable"])
    due += startable
    since = optional_float(paced["startable_since"])
    if since is not None:
        oldest = since if oldest is None else min(oldest, since)
    limited = yield Q("limited_gauges", {"now": st.now, "cap": cap}, "one")
    startable_limited = int(limited["startable"])
    due += startable_limited
    since = optional_float(limited["startable_since"])
    if since is not None:
        oldest = since if oldest is None else min(oldest, since)
    totals = yield Q("schedule_totals", {}, "one")
    return StoreGauges(
        active=active,
        due=min(due, cap),
        oldest_due=oldest,
        paced_waiting=max(0, min(int(paced["due"]), cap) - startable),
        schedules=int(totals["n"]),
        schedule_missed=int(totals["missed"]),
        schedule_skipped=int(totals["skipped"]),
        limited_waiting=max(0, min(int(limited["due"]), cap) - startable_limited),
    )


def job_from_row(r: Row, lease_offset: float = 0.0, items: list[Any] | None = None) -> Job:
    """A :class:`Job` from a ``get_job`` / ``list_jobs`` row, its lease's expiry read back
    from the lease clock (``lease_offset`` ahead) onto the application's, as its other
    times are; a batch's with its ``items``."""
    args, context = decode_payload(r, items)
    return Job(
        id=int(r["id"]),
        fn=r["fn"],
        kind=JobKind(r["kind"]),
        state=JobState(r["state"]),
        next_ts=float(r["next_ts"]),
        attempts=int(r["attempts"]),
        max_failures=int(r["max_failures"]),
        run_count=int(r["run_count"]),
        lease_expires_at=(
            None if r["lease_expires_at"] is None else float(r["lease_expires_at"]) - lease_offset
        ),
        parent_id=None if r["parent_id"] is None else int(r["parent_id"]),
        idempotency_key=r["idempotency_key"],
        on_complete=r["on_complete"],
        name=r["name"],
        schedule_name=r["schedule_name"],
        fire_ts=optional_float(r["fire_ts"]),
        jitter=optional_float(r["jitter"]),
        created_at=float(r["created_at"]),
        updated_at=float(r["updated_at"]),
        finished_at=optional_float(r["finished_at"]),
        args=args,
        context=context,
        result=_codec.loads(r["result"]),
        error=r["error"],
        pace_key=r["pace_key"],
        pace_spacing=optional_float(r["pace_spacing"]),
        priority=int(r["priority"]),
        timeout=optional_float(r["run_timeout"]),
        concurrency_key=r["conc_key"],
        concurrency_limit=None if r["conc_limit"] is None else int(r["conc_limit"]),
    )


def decode_payload(p: Row, items: list[Any] | None = None) -> tuple[Any, Any]:
    """A payload row's arguments and context as a handler sees them: an ``on_complete``
    callback gets the context of the job it reports on inside its arguments, a batch its
    ``items`` (read by :func:`batch_items`) in its ``{"key", "items"}``."""
    args = _codec.loads(p["args"])
    if items is not None and isinstance(args, dict):
        args = {**args, "items": items}
    context = _codec.decode_context(p["context_type"], p["context"])
    if p["callback_of"] is not None and isinstance(args, dict):
        return {**args, "context": context}, None
    return args, context
