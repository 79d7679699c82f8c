"""The run history: every attempt recorded, with its outcome, in the transaction that
records the outcome, on every store; read with ``sched.runs(...)``; pruned after the run
retention. On a FakeClock: nothing here sleeps on real time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import (
    ActionContext,
    InvalidArgument,
    JobKind,
    JobState,
    NonRetryable,
    Registry,
    Retry,
    Run,
    RunOutcome,
    Scheduler,
)
from scheduler.store_types import Outcome
from scheduler.testing import FakeClock
from tests.scheduler.test_store_conformance import LEASE, T0, claim_all, new_job

if TYPE_CHECKING:
    from tests.scheduler.stores import StoreFactory

START = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
T_START = START.timestamp()

Make = Callable[..., Scheduler]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def registry() -> Registry:
    reg = Registry()
    failures: dict[int, int] = {}

    @reg.mutation("noop")
    async def noop(ctx: Any, args: Any) -> None:
        return None

    @reg.mutation("flaky", retry=Retry(max_failures=4, initial_backoff=1))
    async def flaky(ctx: Any, args: Any) -> str:
        seen = failures.get(ctx.job.id, 0)
        if seen < args["fail"]:
            failures[ctx.job.id] = seen + 1
            raise RuntimeError(f"boom {seen}")
        return "ok"

    @reg.mutation("broken")
    async def broken(ctx: Any, args: Any) -> None:
        raise NonRetryable("cannot ever work")

    return reg


@pytest.fixture
async def make(stores: StoreFactory, registry: Registry, clock: FakeClock) -> AsyncIterator[Make]:
    started: list[Scheduler] = []

    def make(reg: Registry | None = None, **kwargs: Any) -> Scheduler:
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("process_id", "proc-a")
        kwargs.setdefault("sweep_interval", 3600)
        sched = Scheduler(stores.new(), reg or registry, **kwargs)
        started.append(sched)
        return sched

    yield make
    for sched in started:
        await sched.stop(grace=0)


async def started(sched: Scheduler) -> Scheduler:
    await sched.start()
    return sched


def summary(runs: list[Run]) -> list[tuple[str, int, str | None]]:
    return [(r.outcome.value, r.attempt, r.error) for r in runs]


# --- what is recorded --------------------------------------------------------------------------


async def test_a_successful_run_is_recorded_with_its_due_time_start_lateness_and_process(
    make: Make, clock: FakeClock
) -> None:
    sched = await started(make())
    job_id = await sched.run_after(10, "noop")
    clock.advance(15)  # due at +10, found at +15: 5 s late
    await sched.wait_idle()
    (run,) = await sched.runs(job_id=job_id)
    assert run.job_id == job_id
    assert run.fn == "noop"
    assert run.outcome is RunOutcome.SUCCESS
    assert run.error is None
    assert (run.attempt, run.run_count) == (0, 1)
    assert run.due_ts == T_START + 10
    assert run.started_at == T_START + 15
    assert run.finished_at == T_START + 15
    assert run.lateness == 5.0
    assert run.duration == 0.0
    assert run.process == "proc-a"
    assert run.due == START + timedelta(seconds=10)


async def test_the_default_process_id_names_the_host_and_pid(make: Make) -> None:
    import os
    import socket

    sched = make(process_id=None)
    host, pid, suffix = sched.settings.process_id.rsplit(":", 2)
    assert host == socket.gethostname()
    assert pid == str(os.getpid())
    assert len(suffix) == 6
    assert (
        make(process_id=None).settings.process_id != sched.settings.process_id
    )  # the suffix tells them apart


async def test_every_attempt_of_a_retried_job_is_recorded_newest_first(
    make: Make, clock: FakeClock
) -> None:
    sched = await started(make())
    job_id = await sched.enqueue("flaky", {"fail": 2})
    for _ in range(3):
        await sched.wait_idle()
        clock.advance(60)  # past any backoff
    await sched.wait_idle()
    runs = await sched.runs(job_id=job_id)
    assert summary(runs) == [
        ("success", 2, None),
        ("retry", 1, "RuntimeError: boom 1"),
        ("retry", 0, "RuntimeError: boom 0"),
    ]
    assert [r.run_count for r in runs] == [3, 2, 1]
    # each retry was due after its backoff, and ran when the clock got there
    assert runs[0].due_ts > runs[1].started_at  # type: ignore[operator]


async def test_a_dead_lettered_job_records_a_failed_run(make: Make) -> None:
    sched = await started(make())
    job_id = await sched.enqueue("broken")
    await sched.wait_idle()
    assert summary(await sched.runs(job_id=job_id)) == [
        ("failed", 0, "NonRetryable: cannot ever work")
    ]


async def test_the_last_attempt_of_a_spent_budget_is_failed_not_retry(
    make: Make, clock: FakeClock
) -> None:
    sched = await started(make())
    job_id = await sched.enqueue("flaky", {"fail": 10}, retry=Retry(max_failures=2))
    for _ in range(2):
        await sched.wait_idle()
        clock.advance(60)
    await sched.wait_idle()
    assert [r.outcome for r in await sched.runs(job_id=job_id)] == [
        RunOutcome.FAILED,
        RunOutcome.RETRY,
    ]
    job = await sched.get_job(job_id)
    assert job is not None
    assert job.state is JobState.FAILED


async def test_an_action_released_at_shutdown_records_a_released_run(make: Make) -> None:
    reg = Registry()
    entered = asyncio.Event()

    @reg.action("wait", idempotent=True)
    async def wait(ctx: ActionContext, args: Any) -> None:
        entered.set()
        await asyncio.Event().wait()

    sched = await started(make(reg))
    job_id = await sched.enqueue("wait")
    await entered.wait()
    await sched.stop(grace=0)
    again = await started(make(reg, process_id="proc-b"))
    (run,) = await again.runs(job_id=job_id)
    assert (run.outcome, run.process) == (RunOutcome.RELEASED, "proc-a")


async def test_a_run_that_fears_its_lease_lost_records_a_discarded_run(
    make: Make, clock: FakeClock
) -> None:
    reg = Registry()

    @reg.action("careful")
    async def careful(ctx: ActionContext, args: Any) -> None:
        clock.advance(29)  # almost the whole 30 s lease gone
        ctx.ensure_lease(5.0)

    sched = await started(make(reg))
    job_id = await sched.enqueue("careful")
    await sched.wait_idle()
    (run,) = await sched.runs(job_id=job_id)
    assert run.outcome is RunOutcome.DISCARDED
    assert run.error is not None
    assert run.error.startswith("discarded: lease lost")


# --- lease lost: the history is written with the outcome, or not at all -------------------------


async def test_a_killed_process_in_flight_attempt_shows_as_lease_lost_after_the_reclaim(
    make: Make, stores: StoreFactory, clock: FakeClock
) -> None:
    sched = await started(make(process_id="survivor"))
    job_id = await sched.run_after(3600, "noop")  # not due for this scheduler yet
    # Another process claims it and dies holding the lease: nothing about its run is written.
    dead = stores.new()
    await dead.open()
    try:
        now = T_START + 3600
        claim = await dead.at(now).claim_due(
            now + LEASE, mutation_limit=8, action_limit=8, process="dead"
        )
        (claimed,) = claim.jobs
    finally:
        await dead.close()
    assert await sched.runs(job_id=job_id) == []
    clock.advance(3600 + sched.settings.lease_seconds + 1)
    await sched.sweep()  # reclaims the lease; the job runs again here and succeeds
    await sched.wait_idle()
    newest, lost = await sched.runs(job_id=job_id)
    assert lost.outcome is RunOutcome.LEASE_LOST
    assert lost.run_count == claimed.run_count
    assert lost.started_at == T_START + 3600  # the dead process's claim
    assert lost.process == "dead"  # the process that held the lease, as its claim named it
    assert lost.error is not None
    assert "reclaimed by survivor" in lost.error
    assert (newest.outcome, newest.attempt, newest.process) == (RunOutcome.SUCCESS, 1, "survivor")
    assert sched.stats.outcomes[RunOutcome.LEASE_LOST] == 1
    assert sched.stats.reclaims_requeued == 1


async def test_a_lost_lease_is_recorded_as_run_by_the_process_whose_driver_claimed_it(
    make: Make, stores: StoreFactory, clock: FakeClock
) -> None:
    """A scheduler's claim names its process on the job; a sweep elsewhere that reclaims the
    lease records the lost run as that process's, and itself in the error."""
    reg = Registry()
    running = asyncio.Event()
    gate = asyncio.Event()

    @reg.action("hang")
    async def hang(ctx: Any, args: Any) -> None:
        running.set()
        await gate.wait()

    holder = await started(make(reg, process_id="holder"))
    job_id = await holder.enqueue("hang")
    await asyncio.wait_for(running.wait(), 10)
    sweeper = stores.new()
    await sweeper.open()
    try:
        later = clock.time() + holder.settings.lease_seconds + 1
        report = await sweeper.at(later).reclaim_expired(process="sweeper")
        (lost,) = await sweeper.at(later).runs(job_id=job_id)
    finally:
        await sweeper.close()
        gate.set()
    assert (report.requeued, report.failed) == (0, 1)  # an action: not run again
    assert (lost.outcome, lost.process) == (RunOutcome.LEASE_LOST, "holder")
    assert lost.error is not None
    assert lost.error.endswith("; reclaimed by sweeper")


async def test_one_sweep_records_each_lost_run_as_its_own_holders(stores: StoreFactory) -> None:
    store = stores.new()
    await store.open()
    try:
        ids = [await store.at(T0).enqueue(new_job(f"m{i}")) for i in range(3)]
        held = {}
        for i, process in enumerate(["a", "b", None]):
            claim = await store.at(T0 + i).claim_due(
                T0 + i + LEASE, mutation_limit=1, action_limit=0, process=process
            )
            (job,) = claim.jobs
            held[job.id] = process
        report = await store.at(T0 + 10 + LEASE).reclaim_expired(process="sweeper")
        runs = await store.at(T0 + 10 + LEASE).runs()
    finally:
        await store.close()
    assert report.requeued == 3
    assert sorted(held) == sorted(ids)
    assert {r.job_id: r.process for r in runs} == held
    assert all(r.outcome is RunOutcome.LEASE_LOST for r in runs)
    assert all(r.error is not None and r.error.endswith("reclaimed by sweeper") for r in runs)


async def test_a_late_outcome_after_a_reclaim_records_nothing(stores: StoreFactory) -> None:
    store = stores.new()
    await store.open()
    try:
        await store.at(T0).enqueue(new_job("a", JobKind.ACTION, max_failures=1))
        (job,) = await claim_all(store, T0)
        await store.at(T0 + LEASE + 1).reclaim_expired(process="sweeper")
        report = await store.at(T0 + LEASE + 2).complete([Outcome(job, ok=True)], "late")
        assert (report.applied, report.stale) == (0, 1)
        (run,) = await store.at(T0 + LEASE + 3).runs(job_id=job.id)
        assert run.outcome is RunOutcome.LEASE_LOST
        assert run.error is not None
        assert "not run again" in run.error
    finally:
        await store.close()


async def test_a_rolled_back_completion_leaves_no_run_behind(stores: StoreFactory) -> None:
    store = stores.new()
    await store.open()
    try:
        await store.at(T0).enqueue(new_job("m"))
        (job,) = await claim_all(store, T0)
        with pytest.raises(RuntimeError):  # noqa: PT012 (the body rolls back)
            async with store.transaction(T0 + 1) as tx:
                await tx.complete([Outcome(job, ok=True, value_json="1")], "p")
                raise RuntimeError("the batch failed to commit")
        assert await store.at(T0 + 2).runs() == []
        stored = await store.at(T0 + 2).get_job(job.id)
        assert stored is not None
        assert stored.state is JobState.IN_PROGRESS
        report = await store.at(T0 + 3).complete([Outcome(job, ok=True, value_json="1")], "p")
        assert report.outcomes == {RunOutcome.SUCCESS: 1}
        (run,) = await store.at(T0 + 4).runs()
        assert (run.outcome, run.started_at, run.finished_at) == (RunOutcome.SUCCESS, T0, T0 + 3)
    finally:
        await store.close()


async def test_an_error_with_nul_is_recorded(stores: StoreFactory) -> None:
    store = stores.new()
    await store.open()
    try:
        await store.at(T0).enqueue(new_job("m", max_failures=1))
        (job,) = await claim_all(store, T0)
        await store.at(T0 + 1).complete([Outcome(job, ok=False, error="bad\x00byte")], "p")
        (run,) = await store.at(T0 + 2).runs()
        assert run.outcome is RunOutcome.FAILED
        assert run.error is not None
        assert run.error.startswith("bad")
        assert run.error.endswith("byte")
    finally:
        await store.close()


# --- reading and pruning -----------------------------------------------------------------------


async def test_runs_filter_by_function_time_and_job_and_honour_the_limit(
    make: Make, clock: FakeClock
) -> None:
    sched = await started(make())
    first = await sched.enqueue("noop")
    await sched.wait_idle()
    clock.advance(100)
    second = await sched.enqueue("noop")
    broken = await sched.enqueue("broken")
    await sched.wait_idle()
    assert [r.job_id for r in await sched.runs()] == [broken, second, first]
    assert [r.job_id for r in await sched.runs(fn="noop")] == [second, first]
    assert [r.job_id for r in await sched.runs(since=START + timedelta(seconds=50))] == [
        broken,
        second,
    ]
    assert [r.job_id for r in await sched.runs(since=T_START + 50, fn="noop")] == [second]
    assert [r.job_id for r in await sched.runs(job_id=first)] == [first]
    assert [r.job_id for r in await sched.runs(limit=1)] == [broken]
    assert await sched.runs(job_id=first, since=T_START + 50) == []
    with pytest.raises(InvalidArgument):
        await sched.runs(limit=-1)


async def test_runs_are_pruned_after_the_run_retention_and_outlive_their_jobs(
    make: Make, clock: FakeClock
) -> None:
    sched = await started(make(retention=timedelta(minutes=10), run_retention=timedelta(hours=1)))
    old = await sched.enqueue("noop")
    await sched.wait_idle()
    clock.advance(timedelta(minutes=30))
    await sched.sweep()  # the job is past its retention, its run is not
    assert await sched.get_job(old) is None
    assert [r.job_id for r in await sched.runs()] == [old]
    recent = await sched.enqueue("noop")
    await sched.wait_idle()
    clock.advance(timedelta(minutes=45))  # the first run is 75 minutes old, the second 45
    await sched.sweep()
    assert [r.job_id for r in await sched.runs()] == [recent]


async def test_pruning_runs_takes_batches_until_none_is_left(stores: StoreFactory) -> None:
    store = stores.new()
    await store.open()
    try:
        for _ in range(5):
            await store.at(T0).enqueue(new_job("m"))
        jobs = await claim_all(store, T0)
        await store.at(T0 + 1).complete([Outcome(j, ok=True) for j in jobs], "p")
        ops = store.at(T0 + 10)
        assert await ops.prune_runs(T0 + 2, limit=2) == 2
        assert await ops.prune_runs(T0 + 1, limit=10) == 0  # finished at T0 + 1: not before
        assert await ops.prune_runs(T0 + 2, limit=10) == 3
        assert await ops.runs() == []
    finally:
        await store.close()


async def test_run_retention_none_keeps_the_history(make: Make, clock: FakeClock) -> None:
    sched = await started(make(run_retention=None))
    await sched.enqueue("noop")
    await sched.wait_idle()
    clock.advance(timedelta(days=30))
    await sched.sweep()
    assert len(await sched.runs()) == 1
    with pytest.raises(InvalidArgument):
        make(run_retention=0)
    with pytest.raises(InvalidArgument):
        make(process_id="")
