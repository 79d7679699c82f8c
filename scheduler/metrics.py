"""A Prometheus collector for a :class:`~scheduler.Scheduler` (needs ``prometheus_client``:
``pip install 'crier-scheduler[metrics]'``; nothing else in the scheduler imports this module).

::

    from prometheus_client import CollectorRegistry, generate_latest
    from scheduler.metrics import SchedulerCollector

    registry = CollectorRegistry()
    collector = SchedulerCollector(sched, registry=registry)
    ...
    await collector.refresh()          # in the /metrics handler, before rendering
    body = generate_latest(registry)

Two kinds of figures:

- this process's counters (:class:`~scheduler.stats.SchedulerStats`, kept by the driver as
  it works): claims, completions, retries, failures, releases, discards, stale outcomes,
  lease reclaims, and the lateness histogram. Across processes, add them up (``sum``).
- the store's gauges, read by :meth:`SchedulerCollector.refresh` (a scrape cannot await):
  jobs by active state, the due backlog (work that could start now) and how long its
  oldest job has waited, the paced jobs waiting for their key's slot (not backlog: they
  are kept to their spacing), the jobs waiting for a place under their concurrency key's
  limit, and the schedules' missed and skipped fire times. Every
  count stops at ``cap`` rows, so a scrape costs the same however large the store grows;
  these are the same from every process sharing the store (``max`` them, don't add them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

try:
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
        Metric,
    )
    from prometheus_client.registry import REGISTRY, Collector, CollectorRegistry
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "scheduler.metrics needs prometheus_client: pip install 'crier-scheduler[metrics]' "
        "(or pip install prometheus-client)"
    ) from exc

from ._outage import LOOPS
from .models import JobKind, RunOutcome

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ._scheduler import Scheduler
    from .store_types import StoreGauges

__all__ = ["COUNT_CAP", "SchedulerCollector"]

COUNT_CAP = 100_000
"""Where the store's counts stop by default (a gauge at the cap means at least that many)."""

_OUTCOME_COUNTERS: tuple[tuple[str, RunOutcome, str], ...] = (
    ("completions", RunOutcome.SUCCESS, "Runs that succeeded."),
    ("retries", RunOutcome.RETRY, "Failed attempts put back to run again after a backoff."),
    ("failures", RunOutcome.FAILED, "Runs that failed for good (the job dead-lettered)."),
    ("releases", RunOutcome.RELEASED, "Runs handed back uncounted (rolled back, or shutdown)."),
    ("discards", RunOutcome.DISCARDED, "Runs that gave up their lease before finishing."),
)


class SchedulerCollector(Collector):
    """The scheduler's metrics, registered in ``registry`` (the default registry unless
    given; None: not registered). Names start with ``namespace`` (``scheduler_``)."""

    def __init__(
        self,
        sched: Scheduler,
        *,
        registry: CollectorRegistry | None = REGISTRY,
        namespace: str = "scheduler",
        cap: int = COUNT_CAP,
    ) -> None:
        self.sched = sched
        self.namespace = namespace
        self.cap = cap
        self.gauges: StoreGauges | None = None
        """The store's gauges as :meth:`refresh` last read them (None: not read, or the
        scheduler is not running)."""
        self.read_at: float | None = None
        if registry is not None:
            registry.register(self)

    async def refresh(self) -> None:
        """Read the store's gauges now (a few bounded queries against a snapshot, never
        waiting for the writer). Call it before each scrape."""
        sched = self.sched
        if not sched.running:
            self.gauges = None
            return
        now = sched.clock.time()
        self.gauges = await sched.store.at(now).gauges(self.cap)
        self.read_at = now

    def describe(self) -> Iterator[Metric]:
        """No metric up front: they are described as they are collected."""
        return iter(())

    def collect(self) -> Iterator[Metric]:
        ns = self.namespace
        stats = self.sched.stats
        yield GaugeMetricFamily(
            f"{ns}_running", "1 while the scheduler runs here.", value=int(self.sched.running)
        )
        claims = CounterMetricFamily(f"{ns}_claims", "Runs claimed, by job kind.", labels=["kind"])
        for kind in JobKind:
            claims.add_metric([kind.value], stats.claims[kind])
        yield claims
        for name, outcome, doc in _OUTCOME_COUNTERS:
            yield CounterMetricFamily(f"{ns}_{name}", doc, value=stats.outcomes[outcome])
        yield CounterMetricFamily(
            f"{ns}_stale_outcomes",
            "Outcomes fenced out because their job had moved on (the lease was lost).",
            value=stats.stale_outcomes,
        )
        reclaims = CounterMetricFamily(
            f"{ns}_lease_reclaims",
            "Expired leases (a crashed or stalled run) this process's sweep reclaimed, by "
            "what became of the job.",
            labels=["result"],
        )
        reclaims.add_metric(["requeued"], stats.reclaims_requeued)
        reclaims.add_metric(["failed"], stats.reclaims_failed)
        yield reclaims
        yield CounterMetricFamily(
            f"{ns}_holder_checks",
            "Checks of the other lease holders' proofs of life this process ran.",
            value=stats.holder_checks,
        )
        yield CounterMetricFamily(
            f"{ns}_holders_gone",
            "Lease holders this process found gone: their leases were taken over at once.",
            value=stats.holders_gone,
        )
        failures = CounterMetricFamily(
            f"{ns}_loop_failures",
            "Failed passes of the scheduler's own loops (its store failing), by loop; an "
            "outage is logged once, when it starts, and once when it ends.",
            labels=["loop"],
        )
        for loop in LOOPS:
            failures.add_metric([loop], stats.loop_failures.get(loop, 0))
        yield failures
        lateness = stats.lateness
        yield HistogramMetricFamily(
            f"{ns}_lateness_seconds",
            "Seconds from when a job was due to when a run of it was claimed.",
            buckets=[(_le(bound), n) for bound, n in lateness.cumulative()],
            sum_value=lateness.total,
        )
        yield from self._store_gauges()

    def _store_gauges(self) -> Iterator[Metric]:
        g = self.gauges
        if g is None:
            return
        ns = self.namespace
        jobs = GaugeMetricFamily(
            f"{ns}_jobs",
            f"Jobs by active state in the store (counted up to {self.cap}).",
            labels=["state"],
        )
        for state, n in sorted(g.active.items()):
            jobs.add_metric([state], n)
        yield jobs
        yield GaugeMetricFamily(
            f"{ns}_due_backlog",
            "Pending jobs that could start now and are not yet claimed: due jobs, paced ones "
            f"only once their key's slot is open (counted up to {self.cap}).",
            value=g.due,
        )
        waited = 0.0
        if g.oldest_due is not None and self.read_at is not None:
            waited = max(0.0, self.read_at - g.oldest_due)
        yield GaugeMetricFamily(
            f"{ns}_due_backlog_age_seconds",
            "How long the longest-waiting job of the backlog could have started (0 when the "
            "backlog is empty).",
            value=waited,
        )
        yield GaugeMetricFamily(
            f"{ns}_paced_waiting",
            "Due paced jobs waiting for their pace key's next slot (kept to their spacing, "
            f"not late; counted up to {self.cap}).",
            value=g.paced_waiting,
        )
        yield GaugeMetricFamily(
            f"{ns}_concurrency_waiting",
            "Due jobs waiting for a place under their concurrency key's limit (their key's "
            f"runs are in progress; counted up to {self.cap}).",
            value=g.limited_waiting,
        )
        yield GaugeMetricFamily(f"{ns}_schedules", "Recurring schedules.", value=g.schedules)
        yield CounterMetricFamily(
            f"{ns}_schedule_misses",
            "Fire times dropped by the schedules' catch-up policy (after downtime), all "
            "schedules added up.",
            value=g.schedule_missed,
        )
        yield CounterMetricFamily(
            f"{ns}_schedule_skips",
            "Fire times skipped by the schedules' overlap policy (the previous run was still "
            "going), all schedules added up.",
            value=g.schedule_skipped,
        )


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)
