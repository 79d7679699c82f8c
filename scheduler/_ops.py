"""The scheduler's database logic, written once for every store.

Each operation is a generator that yields :class:`Q` (a named query with its parameters)
and receives the query's result; it never touches a connection. A store runs it with its
own executor: the SQLite store drives the whole generator inside its connection thread
(one thread hop per operation), the PostgreSQL store awaits each query. The SQL text lives
in ``scheduler/sql/<dialect>.sql``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any

from . import _codec, _pacing, _run_history
from ._codec import optional_float
from .errors import InvalidArgument, JobNotFound
from .models import JobKind, JobState, RunOutcome
from .store_types import (
    Claim,
    ClaimedJob,
    CompletionReport,
    NewJob,
    Op,
    OpState,
    Outcome,
    Q,
    ReclaimReport,
    Row,
)


def stable_seed(key: str) -> int:
    """A PRNG seed derived from ``key`` alone: the same in every process, on every replay
    and every time it is recomputed (unlike ``hash``, which is salted per process)."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def job_seed(job_id: int, attempt: int) -> int:
    """The PRNG seed for a job's attempt: the same in every process and on every replay."""
    return stable_seed(f"{job_id}:{attempt}")


def backoff_delay(job_id: int, attempts: int, initial: float, base: float) -> float:
    """Delay before the next attempt after ``attempts`` earlier failures (plus this one).

    ``raw = initial * base ** (attempts + 1)``, times a jitter in [0.5, 1.0) drawn from the
    job's seeded PRNG, so the whole sequence is reproducible from the job id.
    """
    raw = initial * base ** (attempts + 1)
    return raw * random.Random(job_seed(job_id, attempts)).uniform(0.5, 1.0)


# --- enqueue -------------------------------------------------------------------------------


def enqueue(st: OpState, job: NewJob, *, held: bool = False) -> Op[int]:
    """Insert ``job``; with a live idempotency key, return the existing job's id instead.
    A ``held`` job (a schedule occurrence behind a busy one) waits for :func:`release_held`."""
    if job.idempotency_key is not None:
        row = yield Q("job_by_key", {"idempotency_key": job.idempotency_key}, "one")
        if row is not None:
            return int(row["id"])
    state = JobState.HELD if held else JobState.PENDING
    if job.parent_id is not None:
        parent = yield Q("job_state", {"job_id": job.parent_id}, "one")
        if parent is None:
            raise InvalidArgument(f"parent job {job.parent_id} does not exist")
        if parent["state"] == JobState.CANCELED:
            state = JobState.CANCELED
    job_id = yield from _insert(st, job, state)
    if job_id is None:  # lost a race for the idempotency key
        row = yield Q("job_by_key", {"idempotency_key": job.idempotency_key}, "one")
        return int(row["id"])
    args = {"job_id": job_id, "args": job.args_json, "callback_of": None}
    yield Q("insert_args", {**args, "context_type": job.context_type, "context": job.context})
    if state is JobState.CANCELED and job.on_complete is not None:
        yield from _fire_on_complete(st, job_id, job.on_complete, '{"kind":"canceled"}')
    return job_id


def enqueue_many(st: OpState, jobs: Sequence[NewJob]) -> Op[list[int]]:
    """:func:`enqueue` for each of ``jobs`` in order, in one operation (so one round trip
    where the store drives a whole operation at once); their ids, in the same order."""
    ids: list[int] = []
    for job in jobs:
        ids.append((yield from enqueue(st, job)))
    return ids


def _insert(st: OpState, job: NewJob, state: JobState) -> Op[int | None]:
    finished = st.now if state is JobState.CANCELED else None
    row = yield Q(
        "insert_job",
        {
            "fn": job.fn,
            "kind": job.kind.value,
            "state": state.value,
            "next_ts": job.next_ts,
            "max_failures": job.max_failures,
            "initial_backoff": job.initial_backoff,
            "backoff_base": job.backoff_base,
            "idempotent": int(job.idempotent),
            "parent_id": job.parent_id,
            "idempotency_key": job.idempotency_key,
            "on_complete": job.on_complete,
            "name": job.name,
            "schedule_name": job.schedule_name,
            "fire_ts": job.fire_ts,
            "jitter": job.jitter,
            "pace_key": job.pace_key,
            "pace_spacing": job.pace_spacing,
            "now": st.now,
            "finished_at": finished,
        },
        "one",
    )
    if row is None:
        return None
    if state is JobState.PENDING:
        st.wake = True
    return int(row["id"])


def _fire_on_complete(st: OpState, job_id: int, callback: str, result_json: str) -> Op[int]:
    """Enqueue ``callback`` (a mutation) with ``{"job_id", "context", "result"}``.

    The context is copied row to row in SQL, so it comes back byte for byte.
    """
    args_json = f'{{"job_id":{job_id},"result":{result_json}}}'
    cb = NewJob(
        fn=callback,
        kind=JobKind.MUTATION,
        next_ts=st.now,
        max_failures=4,
        initial_backoff=1.0,
        backoff_base=2.0,
        idempotent=False,
        args_json=args_json,
        name=f"on_complete of job {job_id}",
    )
    new_id = yield from _insert(st, cb, JobState.PENDING)
    assert new_id is not None  # no idempotency key, so no conflict
    args = {"job_id": new_id, "args": args_json, "callback_of": job_id}
    copied = yield Q("insert_callback_args", args)
    if not copied:
        yield Q("insert_args", {**args, "context_type": None, "context": None})
    return new_id


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

    Each claim is conditional on the job still being exactly ``pending``; a paced job is
    claimed only in its key's open slot, which the claim takes (see ``_pacing``).
    """
    rows: list[Any] = []
    room = {JobKind.MUTATION: mutation_limit, JobKind.ACTION: action_limit}
    for kind, limit in room.items():
        if limit > 0:
            params = {
                "kind": kind.value,
                "now": st.now,
                "limit": limit,
                "lease_until": lease_until,
                "process": process,
            }
            got = yield Q("claim_due", params, "all")
            rows.extend(got)
            room[kind] = limit - len(got)
    include_actions = action_limit > 0
    # The next paced start and schedule fire, in one query: no paced job may start now (none
    # pending, or every key waiting) costs the claim nothing more.
    paced_start, next_tick = yield from _pacing.next_start(st, include_actions)
    if paced_start is not None and paced_start <= st.now:
        mutations, actions = room[JobKind.MUTATION], room[JobKind.ACTION]
        paced = _pacing.claim_paced(st, lease_until, mutations, actions, process)
        rows.extend((yield from paced))
        paced_start, next_tick = yield from _pacing.next_start(st, include_actions)
    jobs: list[ClaimedJob] = []
    if rows:
        ids = [int(r["id"]) for r in rows]
        got = yield Q("claimed_args", {"job_ids": ids}, "all")
        payloads = {int(p["job_id"]): p for p in got}
        for r in sorted(rows, key=lambda r: (r["next_ts"], r["id"])):
            jobs.append(_claimed(r, payloads.get(int(r["id"]))))
    unpaced = yield from _next_unpaced(include_actions)
    next_due = min((t for t in (paced_start, unpaced) if t is not None), default=None)
    return Claim(jobs, next_due, next_tick)


def decode_payload(p: Row) -> tuple[Any, Any]:
    """A payload row's arguments and context as a handler sees them: an ``on_complete``
    callback gets the context of the job it reports on inside its arguments."""
    args = _codec.loads(p["args"])
    context = _codec.decode_context(p["context_type"], p["context"])
    if p["callback_of"] is not None and isinstance(args, dict):
        return {**args, "context": context}, None
    return args, context


def _claimed(r: Row, payload: Row | None) -> ClaimedJob:
    # claimed_args reads the context of callbacks only: other handlers get theirs separately.
    args = None if payload is None else decode_payload(payload)[0]
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
    )


def next_due_time(st: OpState, include_actions: bool = True) -> Op[float | None]:
    """When the next pending job may start: the earliest due unpaced job, or the earliest
    time a paced one's key's slot lets it start (None if nothing is pending)."""
    paced, _ = yield from _pacing.next_start(st, include_actions)
    unpaced = yield from _next_unpaced(include_actions)
    return min((t for t in (paced, unpaced) if t is not None), default=None)


def _next_unpaced(include_actions: bool) -> Op[float | None]:
    best: float | None = None
    kinds = (JobKind.MUTATION, JobKind.ACTION) if include_actions else (JobKind.MUTATION,)
    for kind in kinds:
        row = yield Q("next_due", {"kind": kind.value}, "one")
        if row is None:
            continue
        due = float(row["next_ts"])
        if best is None or due < best:
            best = due
    return best


def complete(
    st: OpState, outcomes: Sequence[Outcome], process: str | None = None
) -> Op[CompletionReport]:
    """Record how runs ended, each fenced by (id, run count, in_progress), with the run
    history's rows for them (ran by ``process``).

    A stale outcome (the lease was lost and the job moved on) changes nothing.
    Terminal transitions fire ``on_complete`` in the same transaction.
    """
    kinds = [o.run_outcome for o in outcomes]
    yield from _run_history.record_outcomes(st, outcomes, kinds, process)
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
    if j.on_complete is not None:
        yield from _fire_on_complete(st, j.id, j.on_complete, result_json)
    if j.schedule_name is not None:
        yield from release_held(st, j.schedule_name)


def release_held(st: OpState, schedule_name: str) -> Op[None]:
    """An occurrence of ``schedule_name`` ended: if none of its occurrences is pending or
    running any more, let the oldest held one (overlap ``buffer_one``, or a ``fire_all``
    backlog) run."""
    st.finished_schedules.add(schedule_name)
    row = yield Q("count_unheld_active", {"schedule_name": schedule_name}, "one")
    if row is not None and int(row["n"]) == 0:
        n = yield Q("release_held", {"schedule_name": schedule_name, "now": st.now})
        if n:
            st.wake = True


def extend_lease(st: OpState, job_id: int, run_count: int, until: float) -> Op[bool]:
    n = yield Q("extend_lease", {"job_id": job_id, "run_count": run_count, "lease_until": until})
    return bool(n)


# --- the sweep -----------------------------------------------------------------------------

_LEASE_LOST_ACTION = (
    "lease expired while in progress (the process crashed or stalled); the action may or may "
    "not have had its effect, so it is not run again"
)
_LEASE_LOST_BUDGET = "lease expired while in progress, and the retry budget is spent"
_LEASE_LOST_REQUEUED = "lease expired while in progress (the process crashed or stalled); run again"


def _replayable(r: Row) -> bool:
    return r["kind"] == JobKind.MUTATION or bool(r["idempotent"])


def _requeued(r: Row) -> bool:
    return _replayable(r) and int(r["attempts"]) + 1 < int(r["max_failures"])


def _lease_lost_error(r: Row) -> str:
    if _requeued(r):
        return _LEASE_LOST_REQUEUED
    return _LEASE_LOST_BUDGET if _replayable(r) else _LEASE_LOST_ACTION


def reclaim_expired(st: OpState, limit: int, process: str | None = None) -> Op[ReclaimReport]:
    """Reclaim jobs whose lease expired: mutations (and idempotent actions) go back to pending
    now with the attempt counted, dead-lettering once the budget is spent; other actions fail
    with ``on_complete`` fired, since they may already have had their effect. Each lost run
    is recorded in the run history as ``lease_lost``, ran by the process that held the lease
    (the one its claim named; None if it named none), with the sweeping ``process`` named in
    its error."""
    rows = yield Q("expired_leases", {"now": st.now, "limit": limit}, "all")
    swept = "" if process is None else f"; reclaimed by {process}"
    lost: dict[str | None, list[list[Any]]] = {}
    for r in rows:
        entry = _run_history.run_entry(
            int(r["id"]), int(r["run_count"]), RunOutcome.LEASE_LOST, _lease_lost_error(r) + swept
        )
        lost.setdefault(r["lease_holder"], []).append(entry)
    for holder, entries in lost.items():  # one statement per process that lost leases
        yield from _run_history.record_runs(st, entries, holder)
    requeued = failed = 0
    for r in rows:
        job_id = int(r["id"])
        fence = {"job_id": job_id, "run_count": r["run_count"], "now": st.now}
        replayable = _replayable(r)
        if _requeued(r):
            n = yield Q("reclaim_pending", fence)
            if n:
                requeued += 1
                st.wake = True
            continue
        error = _LEASE_LOST_BUDGET if replayable else _LEASE_LOST_ACTION
        n = yield Q("finish_failed", fence)
        if n:
            failed += 1
            yield Q("set_error", {"job_id": job_id, "error": error})
            if r["on_complete"] is not None:
                yield from _fire_on_complete(st, job_id, r["on_complete"], _failed_json(error))
            if r["schedule_name"] is not None:
                yield from release_held(st, r["schedule_name"])
    return ReclaimReport(requeued, failed)


def prune(st: OpState, before: float, limit: int) -> Op[int]:
    """Delete up to ``limit`` terminal jobs that finished before ``before``, and forget the
    pace slots that opened before it."""
    ids = [int(r["id"]) for r in (yield Q("prune_ids", {"before": before, "limit": limit}, "all"))]
    if ids:
        yield Q("delete_args", {"job_ids": ids})
        yield Q("delete_jobs", {"job_ids": ids})
    yield from _pacing.prune(st, before)
    return len(ids)


# --- cancel --------------------------------------------------------------------------------


def cancel(st: OpState, job_id: int) -> Op[bool]:
    """Cancel ``job_id`` if pending (or held), then every pending descendant, breadth first.

    Returns whether the job itself moved to ``canceled``. The walk runs even when the job
    was already running or finished. Iterative, one query per level: no recursion limit.
    """
    row = yield Q("job_state", {"job_id": job_id}, "one")
    if row is None:
        raise JobNotFound(f"no job with id {job_id}")
    canceled_self = False
    if row["state"] in (JobState.PENDING, JobState.HELD):
        got = yield Q("cancel_many", {"job_ids": [job_id], "now": st.now}, "all")
        yield from _after_cancel(st, got)
        canceled_self = bool(got)
    frontier = [job_id]
    while frontier:
        got = yield Q("children_of", {"job_ids": frontier}, "all")
        children = [int(r["id"]) for r in got]
        if children:
            got = yield Q("cancel_many", {"job_ids": children, "now": st.now}, "all")
            yield from _after_cancel(st, got)
        frontier = children
    return canceled_self


def _after_cancel(st: OpState, rows: Sequence[Any]) -> Op[None]:
    for r in rows:
        st.wake = True
        if r["on_complete"] is not None:
            yield from _fire_on_complete(st, int(r["id"]), r["on_complete"], '{"kind":"canceled"}')
        if r["schedule_name"] is not None:
            yield from release_held(st, r["schedule_name"])


def retry(st: OpState, job_id: int) -> Op[bool]:
    """Put a failed or canceled job back to pending now, with a fresh retry budget."""
    row = yield Q("job_state", {"job_id": job_id}, "one")
    if row is None:
        raise JobNotFound(f"no job with id {job_id}")
    n = yield Q("retry_job", {"job_id": job_id, "now": st.now})
    if n:
        st.wake = True
    return bool(n)
