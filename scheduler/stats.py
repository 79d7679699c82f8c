"""What this process's driver has done, counted as it happens (``sched.stats``).

Plain counters, cheap enough for the claim and completion paths, with no dependency:
``scheduler.metrics`` exposes them (and the store's gauges) to Prometheus for applications
that install ``prometheus_client``.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .models import JobKind, RunOutcome

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

LATENESS_BUCKETS: tuple[float, ...] = (
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
)  # fmt: skip
"""Upper bounds (seconds) of the lateness histogram's buckets; a last one holds the rest."""


@dataclass(slots=True)
class Histogram:
    """Observations counted into buckets by upper bound (``counts[i]`` those at most
    ``bounds[i]`` and above the bound before; ``counts[-1]`` those above every bound)."""

    bounds: tuple[float, ...] = LATENESS_BUCKETS
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value
        self.count += 1

    def cumulative(self) -> list[tuple[float, int]]:
        """``(upper bound, observations at most it)`` for each bound and ``inf``."""
        out: list[tuple[float, int]] = []
        running = 0
        for bound, n in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out


@dataclass(slots=True)
class SchedulerStats:
    """Counters of this process's driver since the scheduler was built."""

    claims: dict[JobKind, int] = field(default_factory=lambda: dict.fromkeys(JobKind, 0))
    """Runs claimed, by job kind."""
    outcomes: dict[RunOutcome, int] = field(default_factory=lambda: dict.fromkeys(RunOutcome, 0))
    """Runs this process recorded, by outcome (``lease_lost``: runs its sweep reclaimed)."""
    stale_outcomes: int = 0
    """Outcomes fenced out because their job had moved on (the lease was lost)."""
    reclaims_requeued: int = 0
    """Expired leases this process's sweep put back to pending."""
    reclaims_failed: int = 0
    """Expired leases this process's sweep failed for good."""
    lateness: Histogram = field(default_factory=Histogram)
    """Seconds from due to claim, of every run claimed."""
    holder_checks: int = 0
    """Checks of the other lease holders' proofs of life this process ran (see
    ``scheduler._holders``)."""
    holders_gone: int = 0
    """Lease holders this process found gone (their leases taken over at once)."""
    loop_failures: dict[str, int] = field(default_factory=dict)
    """Failed passes of the scheduler's own loops (``dispatch``, ``sweep``, ``completions``:
    its store failing), by loop; logged once per outage (see ``scheduler._outage``)."""

    def claimed(self, kind: JobKind, lateness: float) -> None:
        """Count one claim of a ``kind`` job that started ``lateness`` seconds after it was
        due (the driver calls these as it works)."""
        self.claims[kind] += 1
        self.lateness.observe(max(0.0, lateness))

    def claimed_jobs(self, jobs: Iterable[tuple[JobKind, float]]) -> None:
        """:meth:`claimed` for each ``(kind, lateness)`` of a claim batch."""
        for kind, lateness in jobs:
            self.claimed(kind, lateness)

    def recorded(self, outcomes: Mapping[RunOutcome, int], stale: int = 0) -> None:
        """Count recorded run outcomes, and ``stale`` ones fenced out because their job had
        moved on."""
        for outcome, n in outcomes.items():
            self.outcomes[outcome] += n
        self.stale_outcomes += stale

    def reclaimed(self, requeued: int, failed: int) -> None:
        """Count a sweep's reclaims of expired leases: put back to run again, or failed."""
        self.reclaims_requeued += requeued
        self.reclaims_failed += failed
        self.outcomes[RunOutcome.LEASE_LOST] += requeued + failed
