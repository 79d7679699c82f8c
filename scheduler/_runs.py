"""A claimed run, seen from its job: what its handler is told, and what each way the run
can end means for the job (the :class:`~scheduler.store_types.Outcome` the driver records).

Pure decisions, no I/O and no logging: the driver runs the handlers and says what happened.
"""

from __future__ import annotations

from typing import Any

from . import _codec
from .models import JobInfo
from .store_types import ClaimedJob, Outcome

ERROR_LIMIT = 4000
"""The longest error text recorded for a job, in characters."""


def describe_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= ERROR_LIMIT else text[: ERROR_LIMIT - 1] + "…"


def job_info(job: ClaimedJob) -> JobInfo:
    """What the handler of ``job``'s run is told about it (``ctx.job``)."""
    return JobInfo(
        id=job.id,
        fn=job.fn,
        kind=job.kind,
        attempt=job.attempts,
        run_count=job.run_count,
        name=job.name,
        schedule_name=job.schedule_name,
        fire_ts=job.fire_ts,
        max_failures=job.max_failures,
        priority=job.priority,
    )


def succeeded(job: ClaimedJob, value: Any) -> Outcome:
    """The handler returned ``value`` (:class:`~scheduler.errors.NotSerializable` if it
    cannot be stored: the run then fails)."""
    return Outcome(job, ok=True, value_json=_codec.dumps(value, f"the result of {job.fn!r}"))


def failed(job: ClaimedJob, exc: BaseException, *, retryable: bool) -> Outcome:
    """The handler raised ``exc``: an attempt counted, retried by the job's policy unless
    the error would fail the same way again, or the job is not registered as it was."""
    return Outcome(job, ok=False, error=describe_error(exc), retryable=retryable)


def released(job: ClaimedJob) -> Outcome:
    """Nothing the run did can have happened (rolled back, or an idempotent action
    stopped): the job goes back to pending without an attempt counted."""
    return Outcome(job, ok=False, release=True)


def commit_failed(job: ClaimedJob, exc: BaseException) -> Outcome:
    """The mutation batch the job ran in could not commit: an attempt counted."""
    error = f"the transaction failed to commit: {describe_error(exc)}"
    return Outcome(job, ok=False, error=error)


def interrupted(job: ClaimedJob) -> Outcome:
    """An action cancelled by shutdown: an idempotent one is released, any other fails
    for good, since it may or may not have had its effect."""
    if job.idempotent:
        return released(job)
    return Outcome(
        job,
        ok=False,
        error="interrupted by shutdown before it finished; it may or may not have had its effect",
        retryable=False,
    )


def lease_lost(job: ClaimedJob, *, found_lost: bool, why: str) -> Outcome | None:
    """An action stopped because it may no longer hold its lease. Found lost (a heartbeat
    saw the job held elsewhere): nothing to record, any write would be fenced out. Only
    feared lost (``ensure_lease`` ran out of time): the job is handed back, fenced by its
    run count, so it is retried now if nobody reclaimed it meanwhile; an idempotent action
    is released, any other counts a failed attempt."""
    if found_lost:
        return None
    if job.idempotent:
        return released(job)
    return Outcome(
        job, ok=False, error=f"discarded: lease lost ({why})", retryable=True, discarded=True
    )
