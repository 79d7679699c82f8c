"""The driver's operations (see :mod:`scheduler._ops.jobs` for how an operation runs): claim
due work under a lease, record how runs ended, extend a lease, reclaim expired ones, prune
what retention lets go, and say when work is next due.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _codec
from .._codec import optional_float
from ..models import JobKind, RunOutcome
from ..store_types import (
    Claim,
    ClaimedJob,
    CompletionReport,
    Op,
    OpState,
    Outcome,
    Q,
    ReclaimReport,
    Row,
)
from . import history, limits, pacing
from .jobs import fire_on_complete, release_held
from .reads import batch_items, decode_payload
from .seeds import backoff_delay

if TYPE_CHECKING:
    from collections.abc import Sequence

# --- claim and complete --------------------------------------------------------------------


def claim_due(
    st: OpState,
    lease_until: float,
    mutation_limit: int,
    action_limit: int,
    process: str | None = None,
) -> Op[Claim]:
    """Move up to the given numbers of due pending jobs to ``in_progress`` under a lease
    held by ``process`` (kept on the job, so a lost lease's history names it).

    Due jobs start by priority (highest first), then in due order. Each claim is conditional
    on the job still being exactly ``pending``; a paced job is claimed only in its key's
    open slot, which the claim takes (see ``_pacing``); a job under a concurrency limit
    only while its key has a place free, in due order (see ``_limits``). Due times are
    compared on ``now``'s clock; the lease (``lease_until``, on that clock too) is stamped on
    the lease clock (see :attr:`OpState.lease_offset`).

    Without jobs of another priority than 0 (the plan says so) this is the claim of before
    priorities: due unpaced jobs in due order, then paced ones with the room left.
    """
    include_actions = action_limit > 0
    # The next paced and limited starts, the next schedule fire and the priorities in use,
    # in one query.
    plan = yield from pacing.plan(st, include_actions)
    room = {JobKind.MUTATION: mutation_limit, JobKind.ACTION: action_limit}
    heads: list[Any] = []
    paced_now = plan.start is not None and plan.start <= st.now
    if paced_now:
        heads = yield from pacing.heads(st, mutation_limit, action_limit, plan.ranked_paced)
    limited: set[int] = set()
    limited_now = plan.limited_start is not None and plan.limited_start <= st.now
    if limited_now:
        got = yield from limits.heads(st, mutation_limit, action_limit)
        limited = {int(h["id"]) for h in got}
        heads = [*heads, *got]
    lease = st.on_lease_clock(lease_until)
    rows: list[Any] = []
    chosen: list[Any] = []
    levels: dict[JobKind, list[tuple[int, float]]] = {}
    for kind, limit in room.items():
        if limit <= 0:
            continue
        if kind in plan.ranked:
            got = yield Q("ranked_levels", {"kind": kind.value}, "all")
            levels[kind] = [(int(r["priority"]), float(r["first_ts"])) for r in got]
        walk = _Walk(st, kind, limit, lease, process)
        kind_heads = [h for h in heads if h["kind"] == kind.value]
        claimed, picked = yield from walk.run(levels.get(kind, []), kind_heads)
        rows.extend(claimed)
        chosen.extend(picked)
        if walk.ranked_claimed:
            levels.pop(kind)  # claimed from: read again below
    if paced_now:
        paced = [h for h in chosen if int(h["id"]) not in limited]
        rows.extend((yield from pacing.claim_heads(st, paced, lease_until, process)))
    if limited_now:
        picked = [h for h in chosen if int(h["id"]) in limited]
        rows.extend((yield from limits.claim_heads(st, picked, lease_until, process)))
    if paced_now or limited_now:
        plan = yield from pacing.plan(st, include_actions)
    jobs: list[ClaimedJob] = []
    if rows:
        ids = [int(r["id"]) for r in rows]
        got = yield Q("claimed_args", {"job_ids": ids}, "all")
        payloads = {int(p["job_id"]): p for p in got}
        items = yield from batch_items(st, [int(p["job_id"]) for p in got if p["batch"]])
        # The batch starts in the order it was claimed in: by priority, then due order.
        for r in sorted(rows, key=lambda r: (-int(r["priority"]), r["next_ts"], r["id"])):
            job_id = int(r["id"])
            jobs.append(_claimed(r, payloads.get(job_id), items.get(job_id)))
    unpaced = yield from _next_unpaced(include_actions, plan.ranked, levels)
    starts = (plan.start, plan.limited_start, unpaced)
    next_due = min((t for t in starts if t is not None), default=None)
    return Claim(jobs, next_due, plan.next_tick)


class _Walk:
    """One kind's claim of unpaced jobs, priority by priority, highest first: the due
    priorities other than 0 (``levels``), 0 (the jobs of the default priority, in an index of
    their own), and the priorities of the paced and limited jobs that may start now
    (``heads``): at each priority its due unpaced jobs are claimed in due order, then its
    heads are picked, while the kind has room. The picked heads are claimed together
    afterwards, when their keys' slots are taken (paced) or their keys locked and their
    places counted again (limited)."""

    def __init__(
        self, st: OpState, kind: JobKind, room: int, lease: float, process: str | None
    ) -> None:
        self.now = st.now
        self.params = {"kind": kind.value, "now": st.now, "lease_until": lease, "process": process}
        self.room = room
        self.ranked_claimed = False
        """Whether jobs of a priority other than 0 were claimed (their levels changed)."""

    def run(
        self, levels: list[tuple[int, float]], heads: list[Any]
    ) -> Op[tuple[list[Any], list[Any]]]:
        due = {p for p, first in levels if first <= self.now}
        walk = sorted(due | {0} | {int(h["priority"]) for h in heads}, reverse=True)
        rows: list[Any] = []
        picked: list[Any] = []
        for priority in walk:
            if self.room <= 0:
                break
            if priority == 0:
                got = yield Q("claim_due", {**self.params, "limit": self.room}, "all")
            elif priority in due:
                params = {**self.params, "priority": priority, "limit": self.room}
                got = yield Q("claim_ranked", params, "all")
                self.ranked_claimed = True
            else:
                got = []
            rows.extend(got)
            self.room -= len(got)
            for head in heads:
                if self.room > 0 and int(head["priority"]) == priority:
                    picked.append(head)
                    self.room -= 1
        return rows, picked


def _claimed(r: Row, payload: Row | None, items: list[Any] | None) -> ClaimedJob:
    # claimed_args reads the context of callbacks only: other handlers get theirs separately.
    args = None if payload is None else decode_payload(payload, items)[0]
    return ClaimedJob(
        id=int(r["id"]),
        fn=r["fn"],
        kind=JobKind(r["kind"]),
        attempts=int(r["attempts"]),
        max_failures=int(r["max_failures"]),
        initial_backoff=float(r["initial_backoff"]),
        backoff_base=float(r["backoff_base"]),
        run_count=int(r["run_count"]),
        next_ts=float(r["next_ts"]),
        on_complete=r["on_complete"],
        name=r["name"],
        idempotent=bool(r["idempotent"]),
        schedule_name=r["schedule_name"],
        fire_ts=optional_float(r["fire_ts"]),
        args=args,
        priority=int(r["priority"]),
        timeout=optional_float(r["run_timeout"]),
        concurrency_key=r["conc_key"],
    )


def next_due_time(st: OpState, include_actions: bool = True) -> Op[float | None]:
    """When the next pending job may start: the earliest due unpaced job, the earliest
    time a paced one's key's slot lets it start, or the earliest first job of a limited key
    with a place free (None if nothing is pending, or nothing could start before a job ends)."""
    plan = yield from pacing.plan(st, include_actions)
    unpaced = yield from _next_unpaced(include_actions, plan.ranked, {})
    starts = (plan.start, plan.limited_start, unpaced)
    return min((t for t in starts if t is not None), default=None)


def _next_unpaced(
    include_actions: bool,
    ranked: frozenset[JobKind],
    levels: dict[JobKind, list[tuple[int, float]]],
) -> Op[float | None]:
    """The earliest due time of an unpaced pending job: of the default priority's, and of
    the other priorities' (the kinds in ``ranked``), whose levels are read unless ``levels``
    has them already."""
    times: list[float] = []
    kinds = (JobKind.MUTATION, JobKind.ACTION) if include_actions else (JobKind.MUTATION,)
    for kind in kinds:
        row = yield Q("next_due", {"kind": kind.value}, "one")
        if row is not None:
            times.append(float(row["next_ts"]))
        if kind in ranked:
            known = levels.get(kind)
            if known is None:
                got = yield Q("ranked_levels", {"kind": kind.value}, "all")
                known = [(int(r["priority"]), float(r["first_ts"])) for r in got]
            times.extend(first for _, first in known)
    return min(times, default=None)


def complete(
    st: OpState, outcomes: Sequence[Outcome], process: str | None = None
) -> Op[CompletionReport]:
    """Record how runs ended, each fenced by (id, run count, in_progress), with the run
    history's rows for them (ran by ``process``).

    A stale outcome (the lease was lost and the job moved on) changes nothing.
    Terminal transitions fire ``on_complete`` in the same transaction.
    """
    kinds = [o.run_outcome for o in outcomes]
    yield from history.record_outcomes(st, outcomes, kinds, process)
    succeeded = yield from _finish_successes(st, [o for o in outcomes if o.ok and not o.release])
    applied = stale = 0
    counts: dict[RunOutcome, int] = {}
    for o, kind in zip(outcomes, kinds, strict=True):
        j = o.job
        fence = {"job_id": j.id, "run_count": j.run_count, "now": st.now}
        if o.release:
            n = yield Q("release", fence)
            if n:
                st.wake = True
        elif o.ok:
            n = j.id in succeeded
            succeeded.discard(j.id)  # a second outcome of the same run is stale
            if n:
                value = "null" if o.value_json is None else o.value_json
                yield from _terminal(st, j, f'{{"kind":"success","value":{value}}}')
        elif o.retryable and j.attempts + 1 < j.max_failures:
            delay = backoff_delay(j.id, j.attempts, j.initial_backoff, j.backoff_base)
            n = yield Q("finish_retry", {**fence, "next_ts": st.now + delay})
            if n:
                st.wake = True
                yield Q("set_error", {"job_id": j.id, "error": o.error})
        else:
            n = yield Q("finish_failed", fence)
            if n:
                yield Q("set_error", {"job_id": j.id, "error": o.error})
                yield from _terminal(st, j, _failed_json(o.error))
        if n:
            applied += 1
            counts[kind] = counts.get(kind, 0) + 1
            if j.concurrency_key is not None:
                st.wake = True  # its key's place is free: the key's next job may start
        else:
            stale += 1
    return CompletionReport(applied, stale, counts)


def _finish_successes(st: OpState, outcomes: list[Outcome]) -> Op[set[int]]:
    """Finish the jobs of succeeded runs and record their results, in two statements however
    many (each fenced as every finish); the ids of the jobs those runs still held."""
    if not outcomes:
        return set()
    ids = [o.job.id for o in outcomes]
    fence = {"job_ids": ids, "run_counts": [o.job.run_count for o in outcomes], "now": st.now}
    rows = yield Q("finish_successes", fence, "all")
    held = {int(r["id"]) for r in rows}
    if held:
        # The first outcome of a run is the one that finished it (a second is stale).
        first = {o.job.id: o.value_json for o in reversed(outcomes) if o.job.id in held}
        results = {"job_ids": list(first), "results": list(first.values())}
        yield Q("set_results", results)
    return held


def _failed_json(error: str | None) -> str:
    return '{"kind":"failed","error":' + _codec.dumps(error or "failed", "error") + "}"


def _terminal(st: OpState, j: ClaimedJob, result_json: str) -> Op[None]:
    st.end(j.id)
    if j.on_complete is not None:
        yield from fire_on_complete(st, j.id, j.on_complete, result_json)
    if j.schedule_name is not None:
        yield from release_held(st, j.schedule_name)


def extend_lease(st: OpState, job_id: int, run_count: int, until: float) -> Op[bool]:
    params = {"job_id": job_id, "run_count": run_count, "lease_until": st.on_lease_clock(until)}
    n = yield Q("extend_lease", params)
    return bool(n)


# --- the sweep -----------------------------------------------------------------------------

_LEASE_LOST = {
    # why the run was lost -> (requeued, failed: retry budget spent, failed: an action)
    "expired": (
        "lease expired while in progress (the process crashed or stalled); run again",
        "lease expired while in progress, and the retry budget is spent",
        "lease expired while in progress (the process crashed or stalled); the action may or "
        "may not have had its effect, so it is not run again",
    ),
    "gone": (
        "the process holding its lease is gone (it exited or its database session ended); "
        "run again",
        "the process holding its lease is gone, and the retry budget is spent",
        "the process holding its lease is gone (it exited or its database session ended); the "
        "action may or may not have had its effect, so it is not run again",
    ),
}


def _replayable(r: Row) -> bool:
    return r["kind"] == JobKind.MUTATION or bool(r["idempotent"])


def _requeued(r: Row) -> bool:
    return _replayable(r) and int(r["attempts"]) + 1 < int(r["max_failures"])


def _lease_lost_error(r: Row, why: str) -> str:
    requeued, budget, action = _LEASE_LOST[why]
    if _requeued(r):
        return requeued
    return budget if _replayable(r) else action


def reclaim_expired(st: OpState, limit: int, process: str | None = None) -> Op[ReclaimReport]:
    """Reclaim jobs whose lease expired: mutations (and idempotent actions) go back to pending
    now with the attempt counted, dead-lettering once the budget is spent; other actions fail
    with ``on_complete`` fired, since they may already have had their effect. Each lost run
    is recorded in the run history as ``lease_lost``, ran by the process that held the lease
    (the one its claim named; None if it named none), with the sweeping ``process`` named in
    its error."""
    rows = yield Q("expired_leases", {"now": st.lease_now, "limit": limit}, "all")
    return (yield from _reclaim(st, rows, process, "expired"))


def reclaim_gone(
    st: OpState, holder: str, process: str | None = None, batch: int = 1000
) -> Op[ReclaimReport]:
    """Reclaim every job whose lease ``holder`` holds, expired or not, as
    :func:`reclaim_expired` reclaims an expired one: ``holder`` is gone (see
    :mod:`scheduler._holders`), so its runs are lost now."""
    requeued = failed = 0
    while True:
        rows = yield Q("gone_holder_jobs", {"holder": holder, "limit": batch}, "all")
        report = yield from _reclaim(st, rows, process, "gone")
        requeued += report.requeued
        failed += report.failed
        if len(rows) < batch:
            return ReclaimReport(requeued, failed)


def _reclaim(st: OpState, rows: Sequence[Row], process: str | None, why: str) -> Op[ReclaimReport]:
    """Reclaim the jobs of ``rows`` (``expired_leases``' columns), their runs lost ``why``."""
    swept = "" if process is None else f"; reclaimed by {process}"
    lost: dict[str | None, list[list[Any]]] = {}
    for r in rows:
        error = _lease_lost_error(r, why) + swept
        entry = history.run_entry(int(r["id"]), int(r["run_count"]), RunOutcome.LEASE_LOST, error)
        lost.setdefault(r["lease_holder"], []).append(entry)
    for holder, entries in lost.items():  # one statement per process that lost leases
        yield from history.record_runs(st, entries, holder)
    requeued = failed = 0
    for r in rows:
        job_id = int(r["id"])
        fence = {"job_id": job_id, "run_count": r["run_count"], "now": st.now}
        if _requeued(r):
            n = yield Q("reclaim_pending", fence)
            if n:
                requeued += 1
                st.wake = True
            continue
        error = _lease_lost_error(r, why)
        n = yield Q("finish_failed", fence)
        if n:
            failed += 1
            st.end(job_id)
            if r["conc_key"] is not None:
                st.wake = True  # its key's place is free
            yield Q("set_error", {"job_id": job_id, "error": error})
            if r["on_complete"] is not None:
                yield from fire_on_complete(st, job_id, r["on_complete"], _failed_json(error))
            if r["schedule_name"] is not None:
                yield from release_held(st, r["schedule_name"])
    return ReclaimReport(requeued, failed)


def prune(st: OpState, before: float, limit: int) -> Op[int]:
    """Delete up to ``limit`` terminal jobs that finished before ``before``, and forget the
    pace slots that opened before it."""
    ids = [int(r["id"]) for r in (yield Q("prune_ids", {"before": before, "limit": limit}, "all"))]
    if ids:
        yield Q("delete_batch_items", {"job_ids": ids})
        yield Q("delete_args", {"job_ids": ids})
        yield Q("delete_jobs", {"job_ids": ids})
    yield from pacing.prune(st, before)
    return len(ids)
