"""The operations on jobs that application code asks for (enqueue, cancel, retry), and what a
job's end sets off in the same transaction: its ``on_complete`` callback and the release of
its schedule's held occurrence.

Each operation is a generator that yields :class:`~scheduler.store_types.Q` (a named query
with its parameters) and receives the query's result; it never touches a connection. A
store runs it with its own executor: the SQLite store drives the whole generator inside its
connection thread (one thread hop per operation), the PostgreSQL store awaits each query.
The SQL text lives in ``scheduler/sql/<dialect>.sql``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument, JobNotFound
from ..models import JobKind, JobState
from ..store_types import NewJob, Op, OpState, Q

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

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
    if state is JobState.CANCELED:
        st.end(job_id)
        if job.on_complete is not None:
            yield from fire_on_complete(st, job_id, job.on_complete, '{"kind":"canceled"}')
    return job_id


def enqueue_many(st: OpState, jobs: Sequence[NewJob]) -> Op[list[int]]:
    """:func:`enqueue` for each of ``jobs`` in order, in one operation (so one round trip
    where the store drives a whole operation at once); their ids, in the same order.

    Plain jobs (no idempotency key, no parent: nothing to look up first) go in three
    statements whatever their number: their ids drawn in order, then every row and every
    payload in one batch each (a store that awaits each statement pays three round trips,
    not two per job). A batch with any other job goes one job at a time."""
    if len(jobs) > 1 and all(j.idempotency_key is None and j.parent_id is None for j in jobs):
        return (yield from _insert_plain(st, jobs))
    ids: list[int] = []
    for job in jobs:
        ids.append((yield from enqueue(st, job)))
    return ids


def _insert_plain(st: OpState, jobs: Sequence[NewJob]) -> Op[list[int]]:
    """Pending rows for ``jobs`` (each without a key or a parent), as :func:`_insert` would
    write them one by one."""
    rows = yield Q("next_job_ids", {"n": len(jobs)}, "all")
    ids = [int(r["id"]) for r in rows]
    if len(ids) != len(jobs):
        raise RuntimeError(f"asked for {len(jobs)} job ids, got {len(ids)}")
    job_rows = [
        {
            "id": job_id,
            "fn": j.fn,
            "kind": j.kind.value,
            "next_ts": j.next_ts,
            "max_failures": j.max_failures,
            "initial_backoff": j.initial_backoff,
            "backoff_base": j.backoff_base,
            "idempotent": int(j.idempotent),
            "on_complete": j.on_complete,
            "name": j.name,
            "schedule_name": j.schedule_name,
            "fire_ts": j.fire_ts,
            "jitter": j.jitter,
            "pace_key": j.pace_key,
            "pace_spacing": j.pace_spacing,
            "priority": j.priority,
            "run_timeout": j.timeout,
            "conc_key": j.concurrency_key,
            "conc_limit": j.concurrency_limit,
            "now": st.now,
        }
        for job_id, j in zip(ids, jobs, strict=True)
    ]
    arg_rows = [
        {
            "job_id": job_id,
            "args": j.args_json,
            "context_type": j.context_type,
            "context": j.context,
            "callback_of": None,
        }
        for job_id, j in zip(ids, jobs, strict=True)
    ]
    yield Q("insert_job_with_id", job_rows, "many")
    yield Q("insert_args", arg_rows, "many")
    st.wake = True
    return ids


def _insert(
    st: OpState, job: NewJob, state: JobState, keys: Mapping[str, Any] | None = None
) -> Op[int | None]:
    """Insert ``job``'s row in ``state``; its id, or None when a unique key is taken. With
    ``keys`` (``debounce_key``, ``batch_key``, ``batch_items``: see :mod:`.compose`) the
    row is a debounce's or a batch's, open to the calls that share its key."""
    finished = st.now if state is JobState.CANCELED else None
    params = {
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
        "priority": job.priority,
        "run_timeout": job.timeout,
        "conc_key": job.concurrency_key,
        "conc_limit": job.concurrency_limit,
        "now": st.now,
        "finished_at": finished,
    }
    if keys is None:
        row = yield Q("insert_job", params, "one")
    else:
        row = yield Q("insert_keyed_job", {**params, **keys}, "one")
    if row is None:
        return None
    if state is JobState.PENDING:
        st.wake = True
    return int(row["id"])


def fire_on_complete(st: OpState, job_id: int, callback: str, result_json: str) -> Op[int]:
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
    if new_id is None:
        raise RuntimeError("a callback job has no idempotency key, so no conflict")
    args = {"job_id": new_id, "args": args_json, "callback_of": job_id}
    copied = yield Q("insert_callback_args", args)
    if not copied:
        yield Q("insert_args", {**args, "context_type": None, "context": None})
    return new_id


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
        st.end(int(r["id"]))
        if r["on_complete"] is not None:
            yield from fire_on_complete(st, int(r["id"]), r["on_complete"], '{"kind":"canceled"}')
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
