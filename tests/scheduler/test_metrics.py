"""The Prometheus collector: this process's counters and the store's gauges, after a known
sequence of jobs, on every store and a FakeClock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from scheduler import NonRetryable, Registry, Retry, Scheduler
from scheduler.metrics import SchedulerCollector
from scheduler.testing import FakeClock
from tests.scheduler.test_store_conformance import claim_all

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.scheduler.stores import StoreFactory

START = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
async def sched(stores: StoreFactory) -> AsyncIterator[Scheduler]:
    reg = Registry()
    tries: dict[int, int] = {}

    @reg.mutation("ok")
    async def ok(ctx: Any, args: Any) -> None:
        return None

    @reg.mutation("once_more", retry=Retry(max_failures=3, initial_backoff=1))
    async def once_more(ctx: Any, args: Any) -> None:
        tries[ctx.job.id] = tries.get(ctx.job.id, 0) + 1
        if tries[ctx.job.id] == 1:
            raise RuntimeError("first try fails")

    @reg.mutation("never")
    async def never(ctx: Any, args: Any) -> None:
        raise NonRetryable("no")

    @reg.action("act")
    async def act(ctx: Any, args: Any) -> None:
        return None

    s = Scheduler(stores.new(), reg, clock=FakeClock(START), sweep_interval=3600)
    await s.start()
    try:
        yield s
    finally:
        await s.stop(grace=0)


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


async def test_the_collector_counts_a_known_sequence_of_jobs(
    sched: Scheduler, stores: StoreFactory
) -> None:
    clock = sched.clock
    assert isinstance(clock, FakeClock)
    registry = CollectorRegistry()
    collector = SchedulerCollector(sched, registry=registry)

    await sched.run_after(0, "ok")
    await sched.run_after(-3, "ok")  # clamped to now: not late
    await sched.run_at(START + timedelta(seconds=2), "act")  # claimed when the clock moves
    await sched.enqueue("once_more")
    await sched.enqueue("never")
    await sched.wait_idle()
    clock.advance(7)  # straight to +7: the action (due at +2) and the retry run now
    await sched.wait_idle()

    # a run lost by a crashed process: claimed elsewhere, its lease left to expire
    await sched.run_after(100, "ok")
    await sched.run_after(3600, "ok")  # stays pending
    other = stores.new()
    await other.open()
    try:
        await claim_all(other, clock.time() + 100)
    finally:
        await other.close()
    clock.advance(100 + sched.settings.lease_seconds + 1)
    await sched.sweep()
    await sched.wait_idle()

    await collector.refresh()
    assert value(registry, "scheduler_running") == 1
    assert value(registry, "scheduler_claims_total", kind="mutation") == 6  # once_more twice
    assert value(registry, "scheduler_claims_total", kind="action") == 1
    assert value(registry, "scheduler_completions_total") == 5  # 2 ok, act, once_more, requeued
    assert value(registry, "scheduler_retries_total") == 1
    assert value(registry, "scheduler_failures_total") == 1
    assert value(registry, "scheduler_releases_total") == 0
    assert value(registry, "scheduler_lease_reclaims_total", result="requeued") == 1
    assert value(registry, "scheduler_lease_reclaims_total", result="failed") == 0
    assert value(registry, "scheduler_lateness_seconds_count") == 7
    # on time: both "ok", the first "once_more", "never", and the reclaimed run (due again
    # at the sweep); the action, due at +2, was claimed at +7; the retry, due 1-2 s in, too
    assert value(registry, "scheduler_lateness_seconds_bucket", le="0.01") == 5
    assert value(registry, "scheduler_lateness_seconds_bucket", le="5.0") == 6
    assert value(registry, "scheduler_lateness_seconds_bucket", le="10.0") == 7
    assert value(registry, "scheduler_lateness_seconds_bucket", le="+Inf") == 7
    late = value(registry, "scheduler_lateness_seconds_sum")
    assert late is not None
    assert 10 < late <= 11
    assert value(registry, "scheduler_jobs", state="pending") == 1
    assert value(registry, "scheduler_jobs", state="in_progress") == 0
    assert value(registry, "scheduler_due_backlog") == 0
    assert value(registry, "scheduler_due_backlog_age_seconds") == 0
    assert value(registry, "scheduler_schedule_misses_total") == 0

    # the backlog: due jobs nobody has claimed yet (written behind the driver's back)
    async with sched.store.transaction(clock.time()) as tx:
        for _ in range(3):
            await tx.execute(
                "INSERT INTO scheduler_jobs (fn, kind, state, next_ts, max_failures, "
                "initial_backoff, backoff_base, created_at, updated_at) "
                "VALUES ('ok', 'mutation', 'pending', ?, 1, 1, 2, ?, ?)",
                (clock.time() - 30, clock.time(), clock.time()),
            )
    await collector.refresh()
    assert value(registry, "scheduler_due_backlog") == 3
    assert value(registry, "scheduler_due_backlog_age_seconds") == pytest.approx(30)
    assert value(registry, "scheduler_jobs", state="pending") == 4
    capped = SchedulerCollector(sched, registry=None, cap=2)
    await capped.refresh()
    assert capped.gauges is not None
    assert capped.gauges.due == 2
    assert capped.gauges.active["pending"] == 2

    text = generate_latest(registry).decode()
    assert "# HELP scheduler_due_backlog " in text
    assert "scheduler_claims_total{" in text


async def test_schedule_misses_come_from_the_store(sched: Scheduler) -> None:
    clock = sched.clock
    assert isinstance(clock, FakeClock)
    registry = CollectorRegistry()
    collector = SchedulerCollector(sched, registry=registry)
    await sched.schedules.create("tick", timedelta(minutes=1), "ok", catch_up="skip")
    await sched.stop(grace=0)
    clock.advance(timedelta(minutes=10, seconds=30))  # down for ten fire times
    await sched.start()
    await sched.wait_idle()
    await collector.refresh()
    assert value(registry, "scheduler_schedules") == 1
    missed = value(registry, "scheduler_schedule_misses_total")
    assert missed is not None
    assert missed >= 9
    await sched.stop(grace=0)
    await collector.refresh()
    assert value(registry, "scheduler_running") == 0
    assert value(registry, "scheduler_due_backlog") is None  # not read while stopped
