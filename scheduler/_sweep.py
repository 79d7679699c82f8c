"""What the lease sweep does each time it runs (the driver runs it every ``sweep_interval``,
and ``sched.sweep()`` at once): take the leases of the holders found gone (see
:mod:`scheduler._holders`; the holders' own watch does it every ``liveness_interval`` too),
reclaim the leases that expired (a crashed or stalled run), then delete what retention lets
go: terminal jobs, the run history, once keys, the members of lease groups that stopped
renewing and the holders not seen for a week.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

from . import _once
from ._ops import leases as lease_ops

if TYPE_CHECKING:
    from ._engine import Engine
    from .abc import OperationsAt

# The name these warnings have always had (the driver logged them).
log = logging.getLogger("scheduler.driver")

PRUNE_JOBS_BATCH = 1000
"""Terminal jobs deleted per transaction by the retention sweep."""

PRUNE_RUNS_BATCH = 5000
"""Runs deleted per transaction by the retention sweep."""

FORGET_MEMBERS_AFTER = 86400.0
"""A lease group's member that stopped renewing a day ago is forgotten by the sweep."""


async def sweep(engine: Engine) -> None:
    """Take the gone holders' leases, reclaim the expired leases (counted in the engine's
    stats), then prune the terminal jobs and the runs older than their retention, the once
    keys whose time is over, the lease groups' members that stopped renewing
    :data:`FORGET_MEMBERS_AFTER` ago and the holders not seen for a week."""
    settings = engine.settings
    await engine.holders.check()
    ops = engine.store.at(engine.clock.time())
    report = await ops.reclaim_expired(process=settings.process_id)
    engine.stats.reclaimed(report.requeued, report.failed)
    if report.requeued or report.failed:
        log.warning(
            "lease sweep: %d job(s) back to pending, %d failed (their run was lost)",
            report.requeued,
            report.failed,
        )
    if settings.retention_seconds is not None:
        await _prune_jobs(ops, ops.now - settings.retention_seconds)
    if settings.run_retention_seconds is not None:
        await _prune_runs(ops, ops.now - settings.run_retention_seconds)
    await ops.run(_once.prune)
    await ops.run(partial(lease_ops.prune_members, before=ops.now - FORGET_MEMBERS_AFTER))
    await engine.holders.prune()


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
