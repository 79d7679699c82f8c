"""What the lease sweep does each time it runs (the driver runs it every ``sweep_interval``,
and ``sched.sweep()`` at once): take the leases of the holders found gone (see
:mod:`scheduler._holders`; the holders' own watch does it every ``liveness_interval`` too),
reclaim the leases that expired (a crashed or stalled run), then delete what retention lets
go: terminal jobs, the run history, once keys, the members of lease groups that stopped
renewing and the holders not seen for a week.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from . import _once
from ._holders import FORGET_AFTER as FORGET_HOLDERS_AFTER
from ._ops import dispatch, history
from ._ops import holders as holder_ops
from ._ops import leases as lease_ops
from .store_types import ReclaimReport

if TYPE_CHECKING:
    from ._engine import Engine
    from .abc import OperationsAt
    from .store_types import Op, OpState

# The name these warnings have always had (the driver logged them).
log = logging.getLogger("scheduler.driver")

RECLAIM_BATCH = 1000
"""Expired leases reclaimed per sweep (the rest at the next; the holders' check takes a gone
holder's leases however many)."""

PRUNE_JOBS_BATCH = 1000
"""Terminal jobs deleted per transaction by the retention sweep."""

PRUNE_RUNS_BATCH = 5000
"""Runs deleted per transaction by the retention sweep."""

FORGET_MEMBERS_AFTER = 86400.0
"""A lease group's member that stopped renewing a day ago is forgotten by the sweep."""


@dataclass(frozen=True)
class _Swept:
    """What one transaction of the sweep did."""

    reclaimed: ReclaimReport
    jobs: int
    runs: int


async def sweep(engine: Engine) -> None:
    """Take the gone holders' leases, reclaim the expired leases (counted in the engine's
    stats), then prune the terminal jobs and the runs older than their retention, the once
    keys whose time is over, the lease groups' members that stopped renewing
    :data:`FORGET_MEMBERS_AFTER` ago and the holders not seen for a week.

    All of it is one transaction, unless retention has more than a batch to delete (then
    each further batch is a transaction of its own): an idle process's sweep costs the
    database one transaction per interval, not one per kind of row. The holders are checked
    first, unless the check would find nothing new (see
    :meth:`~scheduler._holders.Holders.sweep_needs_check`)."""
    settings = engine.settings
    holders = engine.holders
    if holders.sweep_needs_check():
        await holders.check()
    ops = engine.store.at(engine.clock.time())
    now = ops.now
    jobs_before = None if settings.retention_seconds is None else now - settings.retention_seconds
    runs_before = (
        None if settings.run_retention_seconds is None else now - settings.run_retention_seconds
    )
    holders_before = None if holders.liveness is None else now - FORGET_HOLDERS_AFTER
    swept = await ops.run(
        partial(
            _step,
            process=settings.process_id,
            jobs_before=jobs_before,
            runs_before=runs_before,
            members_before=now - FORGET_MEMBERS_AFTER,
            holders_before=holders_before,
        )
    )
    report = swept.reclaimed
    engine.stats.reclaimed(report.requeued, report.failed)
    if report.requeued or report.failed:
        log.warning(
            "lease sweep: %d job(s) back to pending, %d failed (their run was lost)",
            report.requeued,
            report.failed,
        )
    if jobs_before is not None and swept.jobs == PRUNE_JOBS_BATCH:
        await _prune_jobs(ops, jobs_before)
    if runs_before is not None and swept.runs == PRUNE_RUNS_BATCH:
        await _prune_runs(ops, runs_before)


def _step(
    st: OpState,
    process: str | None,
    jobs_before: float | None,
    runs_before: float | None,
    members_before: float,
    holders_before: float | None,
) -> Op[_Swept]:
    """The sweep's transaction: the expired leases reclaimed, a batch of each retention's
    rows deleted, the once keys, lease group members and holders let go."""
    reclaimed = yield from dispatch.reclaim_expired(st, RECLAIM_BATCH, process)
    jobs = runs = 0
    if jobs_before is not None:
        jobs = yield from dispatch.prune(st, jobs_before, PRUNE_JOBS_BATCH)
    if runs_before is not None:
        runs = yield from history.prune_runs(st, runs_before, PRUNE_RUNS_BATCH)
    yield from _once.prune(st)
    yield from lease_ops.prune_members(st, members_before)
    if holders_before is not None:
        yield from holder_ops.prune(st, holders_before)
    return _Swept(reclaimed, jobs, runs)


async def _prune_jobs(ops: OperationsAt, before: float) -> None:
    """Delete the terminal jobs finished before ``before``, a batch per transaction, until
    none is left (one batch per sweep would fall behind any rate above a batch per sweep
    interval, and the table would grow without bound)."""
    while await ops.prune(before, PRUNE_JOBS_BATCH) == PRUNE_JOBS_BATCH:
        pass


async def _prune_runs(ops: OperationsAt, before: float) -> None:
    """Delete the runs recorded before ``before``, a batch per transaction (so the writer
    is never held long), until none is left."""
    while await ops.prune_runs(before, PRUNE_RUNS_BATCH) == PRUNE_RUNS_BATCH:
        pass
