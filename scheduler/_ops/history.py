"""The run history, as sans-IO operations (see :mod:`scheduler._ops.jobs`): one row per
attempt, written in the transaction that records how the attempt ended, read newest first,
pruned after the run retention.

A row is made from the job row it ran, while that run still holds the job (``record_runs``
is fenced like every finish, so an outcome that lost its lease records nothing: the sweep
that reclaimed the job recorded the run as ``lease_lost``). Its start is the claim's time,
which is the job row's ``updated_at`` for as long as the run holds it (nothing but the claim
writes ``updated_at`` of a job in progress).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._codec import optional_float
from ..models import Run, RunOutcome
from ..store_types import Op, OpState, Outcome, Q, Row

if TYPE_CHECKING:
    from collections.abc import Sequence

RUN_LIST_LIMIT = 10_000
"""The most runs one read returns."""


def run_entry(job_id: int, run_count: int, outcome: RunOutcome, error: str | None) -> list[Any]:
    """One run of a ``record_runs`` batch: ``[job id, run count, outcome, error]``. NUL in
    the error text (which PostgreSQL text cannot hold) is replaced, so that a handler's
    exception message cannot make its own history unrecordable."""
    if error is not None and "\x00" in error:
        error = error.replace("\x00", "\ufffd")
    return [job_id, run_count, outcome.value, error]


def record_runs(st: OpState, runs: list[list[Any]], process: str | None) -> Op[None]:
    """Record a batch of runs (:func:`run_entry` each) ran by ``process``, in one statement,
    each read from its job as the run left it: run it before the outcomes change their
    jobs. A run that no longer holds its job (the lease was lost) records nothing."""
    if runs:
        yield Q("record_runs", {"runs": runs, "now": st.now, "process": process})


def record_outcomes(
    st: OpState, outcomes: Sequence[Outcome], kinds: Sequence[RunOutcome], process: str | None
) -> Op[None]:
    """Record the runs ``outcomes`` end, as ``kinds`` (their ``run_outcome``s, which the
    caller counts too; see :func:`record_runs`)."""
    runs = [
        run_entry(o.job.id, o.job.run_count, kind, o.error)
        for o, kind in zip(outcomes, kinds, strict=True)
    ]
    yield from record_runs(st, runs, process)


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
