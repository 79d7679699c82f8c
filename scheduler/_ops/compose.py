"""Composed work: debounce (the latest of a burst of calls, after a quiet period) and batch
(items gathered into one run), as operations (see :mod:`scheduler._ops.jobs` for how an
operation runs).

Both keep one *open* job per function and key: a pending job that has never started,
carrying the key (``debounce_key``, ``batch_key``). A call finds the open job of its key and
joins it; without one it inserts a new job, and the database's unique index on the open
jobs' (function, key) decides between two processes inserting at the same moment, as it
does for idempotency keys: the loser's insert comes back empty, and it joins the winner's
job instead. Joining is a conditional update of the job's row that succeeds only while the
job is still open (pending and never started), so a claim racing with it either takes the
job first (the call then begins a new burst or batch) or waits for the call's commit. Once a
job has started (its run count moved) it is closed for good: a retry, a re-run after a lost
lease or an operator's retry runs it with what it had.

A batch's items are rows of ``scheduler_batch_items`` numbered in the order they were added
(one short insert per item, whatever the batch's size); its arguments row holds
``{"key": key, "items": []}`` and is marked ``batch``, and the claim (and ``get_job``) reads
its items back into ``items``. A batch closes when ``max_items`` are in it (its key is
cleared and it is due at once) or when it starts; items added later open the next one.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import StoreError
from ..models import JobState
from ..store_types import Q
from .jobs import _insert

if TYPE_CHECKING:
    from ..store_types import NewJob, Op, OpState

RACE_TRIES = 8
"""How many times a call tries again when the open job it found started, or another
process's insert won, before it gives up (each try needs another process to commit in
between: more than a few means something else is wrong)."""

BATCH_ITEMS_LIMIT = 10_000
"""The largest ``max_items`` of a batch."""


def debounce(st: OpState, job: NewJob, key: str, quiet: float, max_wait: float | None) -> Op[int]:
    """Join the open debounce of ``(job.fn, key)``: it runs ``quiet`` seconds from now with
    ``job``'s arguments, or when ``max_wait`` from its first call is up if that is sooner.
    Without an open one, ``job`` starts a burst, due ``quiet`` from now (``max_wait`` if
    shorter). Returns the burst's job id."""
    for _ in range(RACE_TRIES):
        row = yield Q("open_debounce", {"fn": job.fn, "debounce_key": key}, "one")
        if row is not None:
            job_id = int(row["id"])
            due = st.now + quiet
            if max_wait is not None:
                due = min(due, float(row["created_at"]) + max_wait)
            pushed = yield Q("push_debounce", {"job_id": job_id, "next_ts": due, "now": st.now})
            if pushed:
                yield Q("set_args", {"job_id": job_id, "args": job.args_json})
                if due < float(row["next_ts"]):
                    st.wake = True  # sooner than the driver's timer knows
                return job_id
            continue  # it started meanwhile: this call begins a new burst
        delay = quiet if max_wait is None else min(quiet, max_wait)
        first = replace(job, next_ts=st.now + delay)
        keys = {"debounce_key": key, "batch_key": None, "batch_items": None}
        new_id = yield from _insert(st, first, JobState.PENDING, keys)
        if new_id is not None:
            args = {"job_id": new_id, "args": job.args_json, "callback_of": None}
            yield Q("insert_args", {**args, "context_type": None, "context": None})
            return new_id
        # another transaction opened this key's burst first: join it
    raise StoreError(f"debounce of {job.fn!r} key {key!r}: the open job kept changing hands")


def batch(
    st: OpState, job: NewJob, key: str, item_json: str, max_items: int, max_wait: float
) -> Op[int]:
    """Add ``item_json`` to the open batch of ``(job.fn, key)`` (``job`` carries the batch's
    arguments row, ``{"key": key, "items": []}``). A batch is due ``max_wait`` after its
    first item, or at once when ``max_items`` are in it, which closes it. Returns the
    batch's job id."""
    for _ in range(RACE_TRIES):
        row = yield Q("open_batch", {"fn": job.fn, "batch_key": key}, "one")
        if row is not None:
            job_id = int(row["id"])
            params = {"job_id": job_id, "max_items": max_items, "max_wait": max_wait, "now": st.now}
            added = yield Q("add_to_batch", params, "one")
            if added is not None:
                item = {"job_id": job_id, "seq": int(added["batch_items"]), "item": item_json}
                yield Q("insert_batch_item", item)
                if float(added["next_ts"]) < float(row["next_ts"]):
                    st.wake = True  # full now, or due sooner than the driver's timer knows
                return job_id
            continue  # it started meanwhile: the item goes to a new batch
        full = max_items <= 1
        first = replace(job, next_ts=st.now if full else st.now + max_wait)
        keys = {"debounce_key": None, "batch_key": None if full else key, "batch_items": 1}
        new_id = yield from _insert(st, first, JobState.PENDING, keys)
        if new_id is not None:
            yield Q("insert_batch_args", {"job_id": new_id, "args": job.args_json})
            yield Q("insert_batch_item", {"job_id": new_id, "seq": 1, "item": item_json})
            return new_id
        # another transaction opened this key's batch first: join it
    raise StoreError(f"batch of {job.fn!r} key {key!r}: the open job kept changing hands")
