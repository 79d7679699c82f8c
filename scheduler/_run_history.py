"""The run history, as sans-IO operations (see ``_ops``): one row per attempt, written in
the transaction that records how the attempt ended, read newest first, pruned after the
run retention.

A row is made from the job row it ran, while that run still holds the job (``record_runs``
is fenced like every finish, so an outcome that lost its lease records nothing: the sweep
that reclaimed the job recorded the run as ``lease_lost``). Its start is the claim's time,
which is the job row's ``updated_at`` for as long as the run holds it (nothing but the claim
writes ``updated_at`` of a job in progress).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ._codec import optional_float
from .models import Run, RunOutcome
from .store_types import Op, OpState, Outcome, Q, Row

RUN_LIST_LIMIT = 10_000
"""The most runs one read returns."""


def run_row(
    st: OpState,
    job_id: int,
    run_count: int,
    outcome: RunOutcome,
    error: str | None,
    process: str | None,
) -> dict[str, Any]:
    """The parameters of ``record_runs`` for one run."""
    return {
        "job_id": job_id,
        "run_count": run_count,
        "now": st.now,
        "outcome": outcome.value,
        "error": error,
        "process": process,
    }


def record_outcomes(st: OpState, outcomes: Sequence[Outcome], process: str | None) -> Op[None]:
    """Record the runs ``outcomes`` end, in one statement for the whole batch; run it before
    the outcomes change their jobs (a row is read from its job as the run left it)."""
    if outcomes:
        rows = [
            run_row(st, o.job.id, o.job.run_count, o.run_outcome, o.error, process)
            for o in outcomes
        ]
        yield Q("record_runs", rows, "many")


def record_rows(rows: Iterable[dict[str, Any]]) -> Op[None]:
    """Record runs from prepared :func:`run_row` parameters, in one statement."""
    batch = list(rows)
    if batch:
        yield Q("record_runs", batch, "many")


def list_runs(
    st: OpState,
    job_id: int | None,
    fn: str | None,
    since: float | None,
    limit: int,
) -> Op[list[Run]]:
    params: dict[str, Any] = {"fn": fn, "since": since, "limit": max(0, min(limit, RUN_LIST_LIMIT))}
    if job_id is None:
        rows = yield Q("list_runs", params, "all")
    else:
        rows = yield Q("job_runs", {**params, "job_id": job_id}, "all")
    return [run_from_row(r) for r in rows]


def prune_runs(st: OpState, before: float, limit: int) -> Op[int]:
    """Delete up to ``limit`` runs recorded before ``before``, oldest first."""
    n: int = yield Q("prune_runs", {"before": before, "limit": limit})
    return n


def run_from_row(r: Row) -> Run:
    """A :class:`Run` from a ``list_runs`` row."""
    return Run(
        id=int(r["id"]),
        job_id=int(r["job_id"]),
        fn=r["fn"],
        attempt=int(r["attempt"]),
        run_count=int(r["run_count"]),
        due_ts=float(r["due_ts"]),
        started_at=optional_float(r["started_at"]),
        finished_at=float(r["finished_at"]),
        outcome=RunOutcome(r["outcome"]),
        error=r["error"],
        process=r["process"],
    )
