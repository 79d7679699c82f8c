"""The store contract, checked the same way against every store (the ``stores`` fixture).

These tests talk to the store's domain methods directly, with explicit times, so they pin
down what each method means independently of the driver.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import JobKind, JobNotFound, JobState, Store
from scheduler._ops.jobs import enqueue
from scheduler.store_types import ClaimedJob, NewJob, Op, OpState, Outcome
from tests.scheduler.helpers import until_waiting_for_a_lock
from tests.scheduler.seeded import attempt_random, expected_backoff

if TYPE_CHECKING:
    from tests.scheduler.stores import StoreFactory

T0 = 1_900_000_000.0
LEASE = 30.0


def new_job(
    fn: str = "m",
    kind: JobKind = JobKind.MUTATION,
    next_ts: float = T0,
    *,
    max_failures: int = 4,
    args: object = None,
    idempotent: bool = False,
    **extra: object,
) -> NewJob:
    return NewJob(
        fn=fn,
        kind=kind,
        next_ts=next_ts,
        max_failures=max_failures,
        initial_backoff=1.0,
        backoff_base=2.0,
        idempotent=idempotent,
        args_json=json.dumps(args),
        **extra,  # type: ignore[arg-type]
    )


@pytest.fixture
async def store(stores: StoreFactory):
    s = stores.new()
    await s.open()
    try:
        yield s
    finally:
        await s.close()


async def claim_all(store: Store, now: float, limit: int = 64) -> list[ClaimedJob]:
    claim = await store.at(now).claim_due(now + LEASE, mutation_limit=limit, action_limit=limit)
    return claim.jobs


# --- enqueue -------------------------------------------------------------------------------


async def test_enqueue_stores_a_pending_job_with_its_args(store: Store) -> None:
    job_id = await store.at(T0).enqueue(new_job(args={"n": 1, "s": "é"}, name="bump"))
    job = await store.at(T0).get_job(job_id)
    assert job is not None
    assert (job.state, job.fn, job.kind, job.attempts, job.run_count) == (
        JobState.PENDING,
        "m",
        JobKind.MUTATION,
        0,
        0,
    )
    assert job.args == {"n": 1, "s": "é"}
    assert job.name == "bump"
    assert job.next_ts == T0
    assert job.created_at == T0


async def test_live_idempotency_key_returns_the_first_job(store: Store) -> None:
    first = await store.at(T0).enqueue(new_job(idempotency_key="k1", args=1))
    second = await store.at(T0).enqueue(new_job(idempotency_key="k1", args=2))
    other = await store.at(T0).enqueue(new_job(idempotency_key="k2"))
    assert first == second != other
    assert len(await store.at(T0).list_jobs()) == 2
    job = await store.at(T0).get_job(first)
    assert job is not None
    assert job.args == 1


async def test_key_stays_taken_after_the_job_finished(store: Store) -> None:
    first = await store.at(T0).enqueue(new_job(idempotency_key="once"))
    [claimed] = await claim_all(store, T0)
    await store.at(T0).complete([Outcome(claimed, ok=True, value_json="1")])
    assert await store.at(T0 + 5).enqueue(new_job(idempotency_key="once")) == first


async def test_unknown_job_is_none_or_not_found(store: Store) -> None:
    assert await store.at(T0).get_job(12345) is None
    with pytest.raises(JobNotFound):
        await store.at(T0).cancel(12345)
    with pytest.raises(JobNotFound):
        await store.at(T0).retry(12345)


# --- claim -----------------------------------------------------------------------------------


async def test_claim_takes_only_due_jobs_in_due_order(store: Store) -> None:
    late = await store.at(T0).enqueue(new_job(next_ts=T0 + 2))
    early = await store.at(T0).enqueue(new_job(next_ts=T0 + 1))
    future = await store.at(T0).enqueue(new_job(next_ts=T0 + 100))
    assert await claim_all(store, T0) == []
    claim = await store.at(T0 + 2).claim_due(T0 + 2 + LEASE, mutation_limit=10, action_limit=10)
    assert [j.id for j in claim.jobs] == [early, late]
    assert claim.next_due == T0 + 100
    job = await store.at(T0).get_job(early)
    assert job is not None
    assert job.state is JobState.IN_PROGRESS
    assert job.run_count == 1
    assert job.lease_expires_at == T0 + 2 + LEASE
    assert (await store.at(T0).get_job(future)).state is JobState.PENDING  # type: ignore[union-attr]


async def test_claim_respects_limits_per_kind(store: Store) -> None:
    for _ in range(5):
        await store.at(T0).enqueue(new_job(kind=JobKind.MUTATION))
        await store.at(T0).enqueue(new_job(fn="a", kind=JobKind.ACTION))
    claim = await store.at(T0).claim_due(T0 + LEASE, mutation_limit=2, action_limit=3)
    kinds = [j.kind for j in claim.jobs]
    assert kinds.count(JobKind.MUTATION) == 2
    assert kinds.count(JobKind.ACTION) == 3
    assert claim.next_due == T0  # more is due now
    claim = await store.at(T0).claim_due(T0 + LEASE, mutation_limit=10, action_limit=0)
    assert [j.kind for j in claim.jobs] == [JobKind.MUTATION] * 3
    # With no action slots, pending actions do not count for the timer.
    assert claim.next_due is None


async def test_a_claimed_job_is_not_claimed_again(store: Store) -> None:
    await store.at(T0).enqueue(new_job())
    assert len(await claim_all(store, T0)) == 1
    assert await claim_all(store, T0 + 1) == []


async def test_two_stores_on_one_database_never_claim_the_same_job(stores: StoreFactory) -> None:
    a, b = stores.new(), stores.again()
    await a.open()
    await b.open()
    try:
        ids = [await a.at(T0).enqueue(new_job()) for _ in range(300)]

        async def drain(s: Store) -> list[int]:
            got: list[int] = []
            while True:
                jobs = await claim_all(s, T0, limit=7)
                if not jobs:
                    return got
                got.extend(j.id for j in jobs)

        got_a, got_b = await asyncio.gather(drain(a), drain(b))
        assert sorted(got_a + got_b) == sorted(ids)
        assert not set(got_a) & set(got_b)
    finally:
        await a.close()
        await b.close()


async def test_claim_returns_args_and_next_due(store: Store) -> None:
    await store.at(T0).enqueue(new_job(args={"x": [1, 2]}))
    claim = await store.at(T0).claim_due(T0 + LEASE, mutation_limit=5, action_limit=5)
    assert claim.jobs[0].args == {"x": [1, 2]}
    assert claim.next_due is None


# --- complete ------------------------------------------------------------------------------


async def test_success_records_the_result(store: Store) -> None:
    job_id = await store.at(T0).enqueue(new_job())
    [j] = await claim_all(store, T0)
    report = await store.at(T0 + 1).complete([Outcome(j, ok=True, value_json='{"v":1}')])
    assert (report.applied, report.stale) == (1, 0)
    job = await store.at(T0).get_job(job_id)
    assert job is not None
    assert (job.state, job.result, job.finished_at, job.lease_expires_at) == (
        JobState.SUCCESS,
        {"v": 1},
        T0 + 1,
        None,
    )


async def test_failure_with_budget_left_retries_after_seeded_backoff(store: Store) -> None:
    job_id = await store.at(T0).enqueue(new_job(max_failures=3))
    now = T0
    for attempt in range(2):
        [j] = await claim_all(store, now)
        await store.at(now).complete([Outcome(j, ok=False, error="boom")])
        job = await store.at(now).get_job(job_id)
        assert job is not None
        expected = now + expected_backoff(job_id, attempt, 1.0, 2.0)
        assert (job.state, job.attempts, job.error) == (JobState.PENDING, attempt + 1, "boom")
        assert job.next_ts == pytest.approx(expected)
        # The delay is initial * base**(attempts+1) times a jitter in [0.5, 1) from the seed.
        raw = 1.0 * 2.0 ** (attempt + 1)
        jitter = attempt_random(job_id, attempt).uniform(0.5, 1.0)
        assert job.next_ts - now == pytest.approx(raw * jitter)
        assert await claim_all(store, job.next_ts - 0.001) == []
        now = job.next_ts
    [j] = await claim_all(store, now)
    await store.at(now).complete([Outcome(j, ok=False, error="last")])
    job = await store.at(now).get_job(job_id)
    assert job is not None
    assert (job.state, job.attempts, job.error) == (JobState.FAILED, 3, "last")


async def test_non_retryable_failure_dead_letters_at_once(store: Store) -> None:
    job_id = await store.at(T0).enqueue(new_job(max_failures=4))
    [j] = await claim_all(store, T0)
    await store.at(T0).complete([Outcome(j, ok=False, error="bad", retryable=False)])
    job = await store.at(T0).get_job(job_id)
    assert job is not None
    assert (job.state, job.attempts) == (JobState.FAILED, 1)


async def test_a_stale_outcome_changes_nothing(store: Store) -> None:
    """Fenced by run count: a worker whose lease was lost cannot overwrite a newer run."""
    job_id = await store.at(T0).enqueue(new_job())
    [old_run] = await claim_all(store, T0)
    await store.at(T0 + LEASE + 1).reclaim_expired()  # the old run's lease expired: back to pending
    [new_run] = await claim_all(store, T0 + LEASE + 1)
    assert new_run.run_count == old_run.run_count + 1
    report = await store.at(T0 + LEASE + 2).complete([Outcome(old_run, ok=True, value_json="1")])
    assert (report.applied, report.stale) == (0, 1)
    job = await store.at(T0).get_job(job_id)
    assert job is not None
    assert job.state is JobState.IN_PROGRESS
    await store.at(T0 + LEASE + 3).complete([Outcome(new_run, ok=True, value_json="2")])
    job = await store.at(T0).get_job(job_id)
    assert job is not None
    assert (job.state, job.result) == (JobState.SUCCESS, 2)


async def test_one_batch_of_outcomes_finishes_each_job_as_its_own_outcome_says(
    store: Store,
) -> None:
    """Successes are finished together: each keeps its own result (a null one clears an
    earlier error), a stale one and a second outcome of the same run change nothing, and
    the other outcomes of the batch apply as they would alone."""
    ids = [await store.at(T0).enqueue(new_job(max_failures=3)) for _ in range(5)]
    runs = {j.id: j for j in await claim_all(store, T0)}
    # ids[4] fails once first, so its success must clear the error left behind.
    await store.at(T0).complete([Outcome(runs[ids[4]], ok=False, error="flaky")])
    retry_at = (await store.at(T0).get_job(ids[4])).next_ts  # type: ignore[union-attr]
    [again] = await claim_all(store, retry_at)
    await store.at(T0 + LEASE + 1).reclaim_expired()  # ids[0..3]'s runs lose their lease
    fresh = {j.id: j for j in await claim_all(store, T0 + LEASE + 1)}
    stale = runs[ids[3]]  # lease lost, the job claimed again: the old run's outcome is stale
    now = T0 + LEASE + 2
    report = await store.at(now).complete(
        [
            Outcome(fresh[ids[0]], ok=True, value_json='{"n": 0}'),
            Outcome(fresh[ids[1]], ok=True, value_json="[1]"),
            Outcome(fresh[ids[1]], ok=True, value_json='"twice"'),  # the same run again
            Outcome(fresh[ids[2]], ok=False, error="boom"),
            Outcome(stale, ok=True, value_json="3"),
            Outcome(again, ok=True, value_json=None),
        ]
    )
    assert (report.applied, report.stale) == (4, 2)
    jobs = {i: await store.at(now).get_job(i) for i in ids}
    got = {i: (j.state, j.result, j.error) for i, j in jobs.items() if j is not None}
    assert got == {
        ids[0]: (JobState.SUCCESS, {"n": 0}, None),
        ids[1]: (JobState.SUCCESS, [1], None),
        ids[2]: (JobState.PENDING, None, "boom"),
        ids[3]: (JobState.IN_PROGRESS, None, None),
        ids[4]: (JobState.SUCCESS, None, None),
    }
    assert all(jobs[i].finished_at == now for i in (ids[0], ids[1], ids[4]))  # type: ignore[union-attr]


async def test_release_returns_a_job_without_counting_an_attempt(store: Store) -> None:
    job_id = await store.at(T0).enqueue(new_job())
    [j] = await claim_all(store, T0)
    await store.at(T0 + 1).complete([Outcome(j, ok=False, release=True)])
    job = await store.at(T0).get_job(job_id)
    assert job is not None
    assert (job.state, job.attempts) == (JobState.PENDING, 0)


# --- leases and the sweep --------------------------------------------------------------------


async def test_extend_lease_only_for_the_holder(store: Store) -> None:
    await store.at(T0).enqueue(new_job())
    [j] = await claim_all(store, T0)
    assert await store.at(T0).extend_lease(j.id, j.run_count, T0 + 100)
    assert not await store.at(T0).extend_lease(j.id, j.run_count + 1, T0 + 200)
    assert (await store.at(T0 + 99).reclaim_expired()).requeued == 0
    assert (await store.at(T0 + 101).reclaim_expired()).requeued == 1


async def test_reclaim_puts_a_mutation_back_with_the_attempt_counted(store: Store) -> None:
    job_id = await store.at(T0).enqueue(new_job(max_failures=2))
    [_] = await claim_all(store, T0)
    assert (await store.at(T0 + LEASE - 1).reclaim_expired()).requeued == 0
    report = await store.at(T0 + LEASE + 1).reclaim_expired()
    assert (report.requeued, report.failed) == (1, 0)
    job = await store.at(T0).get_job(job_id)
    assert job is not None
    assert (job.state, job.attempts, job.next_ts) == (JobState.PENDING, 1, T0 + LEASE + 1)
    # The second lost run spends the budget: dead-lettered.
    await claim_all(store, T0 + LEASE + 1)
    report = await store.at(T0 + 2 * LEASE + 2).reclaim_expired()
    assert (report.requeued, report.failed) == (0, 1)
    job = await store.at(T0).get_job(job_id)
    assert job is not None
    assert (job.state, job.attempts) == (JobState.FAILED, 2)
    assert "retry budget is spent" in (job.error or "")


async def test_reclaim_fails_an_action_and_fires_on_complete(store: Store) -> None:
    job_id = await store.at(T0).enqueue(
        new_job(
            fn="send",
            kind=JobKind.ACTION,
            max_failures=3,
            on_complete="done",
            context_type="json",
            context=b'{"k":1}',
        )
    )
    await claim_all(store, T0)
    report = await store.at(T0 + LEASE + 1).reclaim_expired()
    assert (report.requeued, report.failed) == (0, 1)
    job = await store.at(T0).get_job(job_id)
    assert job is not None
    assert job.state is JobState.FAILED
    assert "may or may not have had its effect" in (job.error or "")
    [cb] = [j for j in await store.at(T0).list_jobs() if j.fn == "done"]
    cb_full = await store.at(T0).get_job(cb.id)
    assert cb_full is not None
    assert cb_full.args["job_id"] == job_id
    assert cb_full.args["result"]["kind"] == "failed"
    assert cb_full.args["context"] == {"k": 1}


async def test_reclaim_redispatches_an_idempotent_action(store: Store) -> None:
    job_id = await store.at(T0).enqueue(
        new_job(fn="a", kind=JobKind.ACTION, idempotent=True, max_failures=2)
    )
    await claim_all(store, T0)
    report = await store.at(T0 + LEASE + 1).reclaim_expired()
    assert (report.requeued, report.failed) == (1, 0)
    job = await store.at(T0).get_job(job_id)
    assert job is not None
    assert (job.state, job.attempts) == (JobState.PENDING, 1)


# --- on_complete -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("context_type", "context", "expected"),
    [
        ("bytes", bytes(range(256)), bytes(range(256))),
        ("json", '{"a":[1,2.5,"é\\u0000"],"b":null}'.encode(), {"a": [1, 2.5, "é\x00"], "b": None}),
    ],
)
async def test_on_complete_gets_the_context_back_exactly(
    store: Store, context_type: str, context: bytes, expected: object
) -> None:
    job_id = await store.at(T0).enqueue(
        new_job(on_complete="cb", context_type=context_type, context=context)
    )
    [j] = await claim_all(store, T0)
    await store.at(T0).complete([Outcome(j, ok=True, value_json='"v"')])
    [cb] = await claim_all(store, T0)
    assert cb.fn == "cb"
    assert cb.kind is JobKind.MUTATION
    assert cb.args == {
        "job_id": job_id,
        "result": {"kind": "success", "value": "v"},
        "context": expected,
    }
    if context_type == "bytes":
        assert type(cb.args["context"]) is bytes


async def test_on_complete_fires_for_failure_and_cancel(store: Store) -> None:
    failing = await store.at(T0).enqueue(new_job(max_failures=1, on_complete="cb"))
    canceled = await store.at(T0).enqueue(new_job(next_ts=T0 + 50, on_complete="cb"))
    [j] = await claim_all(store, T0)
    await store.at(T0).complete([Outcome(j, ok=False, error="ValueError: no")])
    assert await store.at(T0).cancel(canceled)
    cbs = sorted(await claim_all(store, T0), key=lambda c: c.args["job_id"])
    assert [c.args["job_id"] for c in cbs] == [failing, canceled]
    assert cbs[0].args["result"] == {"kind": "failed", "error": "ValueError: no"}
    assert cbs[1].args["result"] == {"kind": "canceled"}
    assert cbs[0].args["context"] is None


async def test_no_on_complete_for_a_retry(store: Store) -> None:
    await store.at(T0).enqueue(new_job(max_failures=2, on_complete="cb"))
    [j] = await claim_all(store, T0)
    await store.at(T0).complete([Outcome(j, ok=False, error="x")])
    assert [x.fn for x in await store.at(T0).list_jobs()] == ["m"]


# --- cancel --------------------------------------------------------------------------------


async def test_cancel_moves_only_pending_jobs(store: Store) -> None:
    pending = await store.at(T0).enqueue(new_job(next_ts=T0 + 9))
    running = await store.at(T0).enqueue(new_job())
    await claim_all(store, T0)
    assert await store.at(T0).cancel(pending)
    assert not await store.at(T0).cancel(running)
    assert not await store.at(T0).cancel(pending)  # already canceled
    states = {j.id: j.state for j in await store.at(T0).list_jobs()}
    assert states == {pending: JobState.CANCELED, running: JobState.IN_PROGRESS}


async def test_cancel_cascades_breadth_first_even_from_a_running_parent(store: Store) -> None:
    root = await store.at(T0).enqueue(new_job())
    await claim_all(store, T0)  # root is running
    kids = [await store.at(T0).enqueue(new_job(next_ts=T0 + 9, parent_id=root)) for _ in range(3)]
    grandkid = await store.at(T0).enqueue(
        new_job(next_ts=T0 + 9, parent_id=kids[0], on_complete="cb")
    )
    assert not await store.at(T0).cancel(root)
    states = {j.id: j.state for j in await store.at(T0).list_jobs(limit=100)}
    assert states[root] is JobState.IN_PROGRESS
    assert all(states[k] is JobState.CANCELED for k in [*kids, grandkid])
    [cb] = [j for j in await store.at(T0).list_jobs() if j.fn == "cb"]
    full = await store.at(T0).get_job(cb.id)
    assert full is not None
    assert full.args["job_id"] == grandkid


async def test_cancel_walks_descendants_level_by_level(store: Store) -> None:
    """Breadth first: every job of one level is canceled before any of the next. The walk
    order shows in the order of the on_complete callbacks (each one is enqueued the moment
    its job is canceled, so callback ids follow the walk). The tree is created depth first,
    so an order by id (or a depth-first walk) would interleave the levels."""
    depth_of: dict[int, int] = {}
    running: list[int] = []

    async def grow(parent: int | None, depth: int) -> int:
        # One child of the root is running; the walk must go on through it to its children.
        due = T0 if depth == 1 and not running else T0 + 9
        job_id = await store.at(T0).enqueue(
            new_job(next_ts=due, parent_id=parent, on_complete="cb", args=depth)
        )
        if due == T0:
            running.append(job_id)
        depth_of[job_id] = depth
        if depth < 3:
            for _ in range(3 if depth == 0 else 2):
                await grow(job_id, depth + 1)
        return job_id

    root = await grow(None, 0)
    [claimed] = await claim_all(store, T0)
    assert claimed.id == running[0]
    assert sorted(depth_of) != sorted(depth_of, key=lambda j: (depth_of[j], j))  # not BFS by id
    assert await store.at(T0).cancel(root)

    callbacks = sorted(
        (j for j in await store.at(T0).list_jobs(limit=100) if j.fn == "cb"), key=lambda j: j.id
    )
    walked = []
    for cb in callbacks:
        full = await store.at(T0).get_job(cb.id)
        assert full is not None
        assert full.args["result"] == {"kind": "canceled"}
        walked.append(full.args["job_id"])
    expected = set(depth_of) - set(running)
    assert sorted(walked) == sorted(expected)  # every pending descendant, once
    levels = [depth_of[j] for j in walked]
    assert levels == sorted(levels), levels  # level by level: 0, 1, 1, 2, 2, 2, 2, 2, 2, 3, ...
    assert levels.count(3) == 12
    assert levels.count(2) == 6
    assert levels.count(1) == 2
    states = {j.id: j.state for j in await store.at(T0).list_jobs(limit=100) if j.fn == "m"}
    assert states == {
        j: JobState.IN_PROGRESS if j in running else JobState.CANCELED for j in depth_of
    }


@pytest.mark.timeout(900)  # only a hang: 10,000 levels take minutes on a loaded machine
async def test_cancel_cascade_over_a_10000_level_chain(store: Store) -> None:
    # The chain is written in one transaction (10,000 commits, then the walk, took over the
    # suite's 120 s per-test limit on a loaded machine; the cascade is the subject).
    def chain(st: OpState) -> Op[list[int]]:
        ids: list[int] = []
        for _ in range(10_000):
            parent = ids[-1] if ids else None
            ids.append((yield from enqueue(st, new_job(next_ts=T0 + 9, parent_id=parent))))
        return ids

    ids = await store.at(T0).run(chain)
    assert len(set(ids)) == 10_000
    assert await store.at(T0).cancel(ids[0])
    counts = await store.at(T0).count_by_state()
    assert counts[JobState.CANCELED] == 10_000
    assert counts[JobState.PENDING] == 0


async def test_a_child_of_a_canceled_parent_is_born_canceled(store: Store) -> None:
    parent = await store.at(T0).enqueue(new_job(next_ts=T0 + 9))
    await store.at(T0).cancel(parent)
    child = await store.at(T0).enqueue(new_job(parent_id=parent, on_complete="cb"))
    job = await store.at(T0).get_job(child)
    assert job is not None
    assert job.state is JobState.CANCELED
    [cb] = await claim_all(store, T0)
    assert cb.args["result"] == {"kind": "canceled"}
    assert cb.args["job_id"] == child


# --- time, pruning, retry ------------------------------------------------------------------


async def test_next_due_time_is_the_earliest_pending(store: Store) -> None:
    assert await store.at(T0).next_due_time() is None
    await store.at(T0).enqueue(new_job(next_ts=T0 + 7))
    await store.at(T0).enqueue(new_job(fn="a", kind=JobKind.ACTION, next_ts=T0 + 3))
    assert await store.at(T0).next_due_time() == T0 + 3


async def test_prune_deletes_only_old_terminal_jobs(store: Store) -> None:
    old = await store.at(T0).enqueue(new_job())
    await store.at(T0).enqueue(new_job(next_ts=T0 + 1000))  # pending: kept
    [j] = await claim_all(store, T0)
    await store.at(T0).complete([Outcome(j, ok=True, value_json="1")])
    assert await store.at(T0).prune(T0 - 1) == 0
    assert await store.at(T0).prune(T0 + 1) == 1
    assert await store.at(T0).get_job(old) is None
    assert len(await store.at(T0).list_jobs()) == 1


async def test_retry_puts_a_failed_job_back_with_a_fresh_budget(store: Store) -> None:
    job_id = await store.at(T0).enqueue(new_job(max_failures=1))
    [j] = await claim_all(store, T0)
    await store.at(T0).complete([Outcome(j, ok=False, error="x")])
    assert await store.at(T0 + 5).retry(job_id)
    job = await store.at(T0).get_job(job_id)
    assert job is not None
    assert (job.state, job.attempts, job.next_ts, job.finished_at) == (
        JobState.PENDING,
        0,
        T0 + 5,
        None,
    )
    assert not await store.at(T0 + 6).retry(job_id)  # pending: nothing to retry


async def test_list_jobs_filters_and_pages(store: Store) -> None:
    ids = [await store.at(T0).enqueue(new_job(fn="a" if i % 2 else "b")) for i in range(7)]
    page = await store.at(T0).list_jobs(limit=3)
    assert [j.id for j in page] == ids[::-1][:3]
    page2 = await store.at(T0).list_jobs(limit=3, before_id=page[-1].id)
    assert [j.id for j in page2] == ids[::-1][3:6]
    assert {j.fn for j in await store.at(T0).list_jobs(fn="a")} == {"a"}
    assert len(await store.at(T0).list_jobs(state=JobState.PENDING)) == 7


async def test_commit_listeners_hear_about_new_pending_work(store: Store) -> None:
    heard: list[int] = []
    store.add_commit_listener(lambda: heard.append(1))
    await store.at(T0).enqueue(new_job(next_ts=T0 + 5))
    assert heard == [1]
    await store.at(T0).get_job(1)
    await store.at(T0).next_due_time()
    assert heard == [1]  # reads are silent


# --- debounce and batch ----------------------------------------------------------------------


def batch_job(fn: str = "m", key: str = "g") -> NewJob:
    return new_job(fn=fn, args={"key": key, "items": []})


async def test_debounce_keeps_one_open_job_per_function_and_key(store: Store) -> None:
    first = await store.at(T0).debounce(new_job(args=1), "k", 10.0, None)
    assert await store.at(T0 + 3).debounce(new_job(args=2), "k", 10.0, None) == first
    job = await store.at(T0).get_job(first)
    assert job is not None
    assert (job.state, job.next_ts, job.args, job.created_at) == (JobState.PENDING, T0 + 13, 2, T0)
    # max_wait bounds the burst from its first call (T0)
    assert await store.at(T0 + 9).debounce(new_job(args=3), "k", 10.0, 12.0) == first
    job = await store.at(T0).get_job(first)
    assert job is not None
    assert (job.next_ts, job.args) == (T0 + 12, 3)
    other_key = await store.at(T0).debounce(new_job(args=4), "k2", 10.0, None)
    other_fn = await store.at(T0).debounce(new_job(fn="m2", args=5), "k", 10.0, None)
    assert len({first, other_key, other_fn}) == 3


async def test_a_debounce_that_started_is_closed_to_later_calls(store: Store) -> None:
    first = await store.at(T0).debounce(new_job(args=1), "k", 0.0, None)
    [claimed] = await claim_all(store, T0)
    second = await store.at(T0).debounce(new_job(args=2), "k", 5.0, None)
    assert second != first
    # the first fails and waits for its retry, pending again: still closed
    await store.at(T0).complete([Outcome(claimed, ok=False, error="boom")])
    assert await store.at(T0 + 1).debounce(new_job(args=3), "k", 5.0, None) == second
    retried = await store.at(T0).get_job(first)
    assert retried is not None
    assert (retried.state, retried.args) == (JobState.PENDING, 1)


async def test_an_operators_retry_of_a_canceled_burst_does_not_reopen_it(store: Store) -> None:
    first = await store.at(T0).debounce(new_job(args=1), "k", 5.0, None)
    assert await store.at(T0).cancel(first)
    second = await store.at(T0).debounce(new_job(args=2), "k", 5.0, None)
    assert await store.at(T0).retry(first)  # never started, pending again: not open
    assert await store.at(T0).debounce(new_job(args=3), "k", 5.0, None) == second
    first_batch = await store.at(T0).batch(batch_job(), "g", '"a"', 5, 60.0)
    assert await store.at(T0).cancel(first_batch)
    second_batch = await store.at(T0).batch(batch_job(), "g", '"b"', 5, 60.0)
    assert await store.at(T0).retry(first_batch)
    assert await store.at(T0).batch(batch_job(), "g", '"c"', 5, 60.0) == second_batch


async def test_a_batch_gathers_items_in_order_and_closes_when_full(store: Store) -> None:
    ids = [
        await store.at(T0 + n).batch(batch_job(), "g", json.dumps({"n": n}), 3, 60.0)
        for n in range(4)
    ]
    assert ids[0] == ids[1] == ids[2] != ids[3]
    full = await store.at(T0).get_job(ids[0])
    assert full is not None
    assert full.next_ts == T0 + 2  # due when it filled
    assert full.args == {"key": "g", "items": [{"n": 0}, {"n": 1}, {"n": 2}]}
    open_one = await store.at(T0).get_job(ids[3])
    assert open_one is not None
    assert open_one.next_ts == T0 + 3 + 60  # max_wait after its first item
    [claimed] = await claim_all(store, T0 + 2)
    assert (claimed.id, claimed.args) == (ids[0], full.args)
    # a retry runs the same items; new items went to the next batch
    await store.at(T0 + 2).complete([Outcome(claimed, ok=False, error="boom")])
    assert await store.at(T0 + 4).batch(batch_job(), "g", "5", 3, 60.0) == ids[3]
    claim = await store.at(T0 + 100).claim_due(T0 + 100 + LEASE, mutation_limit=9, action_limit=9)
    by_id = {j.id: j.args for j in claim.jobs}
    assert by_id == {ids[0]: full.args, ids[3]: {"key": "g", "items": [{"n": 3}, 5]}}


async def test_a_batch_that_started_takes_no_more_items(store: Store) -> None:
    first = await store.at(T0).batch(batch_job(), "g", "1", 10, 0.0)
    [claimed] = await claim_all(store, T0)
    assert claimed.args == {"key": "g", "items": [1]}
    second = await store.at(T0).batch(batch_job(), "g", "2", 10, 0.0)
    assert second != first
    other_fn = await store.at(T0).batch(batch_job(fn="m2"), "g", "3", 10, 0.0)
    assert other_fn not in (first, second)


async def test_pruning_a_batch_deletes_its_items(store: Store) -> None:
    job = await store.at(T0).batch(batch_job(), "g", "1", 1, 0.0)
    [claimed] = await claim_all(store, T0)
    await store.at(T0).complete([Outcome(claimed, ok=True)])
    assert await store.at(T0 + 10).prune(T0 + 5) == 1
    assert await store.at(T0).get_job(job) is None
    # SQLite hands a deleted job's id out again: the new batch must not find old items
    later = await store.at(T0).batch(batch_job(), "g", "2", 1, 0.0)
    again = await store.at(T0).get_job(later)
    assert again is not None
    assert again.args == {"key": "g", "items": [2]}


async def _open_at_once(stores: StoreFactory, call: Any) -> tuple[int, int]:
    """Two stores on one database (two processes): A's transaction makes the call and stays
    open while B's makes it too (on PostgreSQL B then waits for A's unique index entry,
    both having looked before either committed); A commits. Both calls' job ids."""
    a, b, watcher = stores.new(), stores.again(), stores.again()
    for s in (a, b, watcher):
        await s.open()
    called, let_go = asyncio.Event(), asyncio.Event()

    async def in_a() -> int:
        async with a.transaction(T0) as tx:
            job = int(await call(tx, "a"))
            called.set()
            await let_go.wait()
        return job

    async def in_b() -> int:
        await called.wait()
        async with b.transaction(T0 + 1) as tx:
            return int(await call(tx, "b"))

    try:
        task_a, task_b = asyncio.create_task(in_a()), asyncio.create_task(in_b())
        async with asyncio.timeout(10):
            await called.wait()
            await until_waiting_for_a_lock(watcher.snapshot, watcher.dialect, task_b)
            let_go.set()
            return await task_a, await task_b
    finally:
        for s in (a, b, watcher):
            await s.close()


async def test_two_processes_opening_one_burst_at_once_make_one_job(
    stores: StoreFactory,
) -> None:
    ids = await _open_at_once(
        stores, lambda tx, who: tx.debounce(new_job(args=who), "k", 10.0, None)
    )
    assert ids[0] == ids[1]
    store = stores.again()
    await store.open()
    try:
        [job] = await store.at(T0).list_jobs()
        full = await store.at(T0).get_job(job.id)
        assert full is not None
        assert (full.args, full.next_ts) == ("b", T0 + 11)  # B's call was the last
    finally:
        await store.close()


async def test_two_processes_opening_one_batch_at_once_share_it(stores: StoreFactory) -> None:
    ids = await _open_at_once(
        stores, lambda tx, who: tx.batch(batch_job(), "g", json.dumps(who), 5, 60.0)
    )
    assert ids[0] == ids[1]
    store = stores.again()
    await store.open()
    try:
        job = await store.at(T0).get_job(ids[0])
        assert job is not None
        assert job.args == {"key": "g", "items": ["a", "b"]}
    finally:
        await store.close()
