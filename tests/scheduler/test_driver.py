"""The driver's guarantees, on a FakeClock: nothing here sleeps on real time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import (
    InvalidArgument,
    JobState,
    NonRetryable,
    NotSerializable,
    Registry,
    Retry,
    Scheduler,
    SchedulerClosed,
    SchedulerError,
    UnknownFunction,
    _sweep,
)
from scheduler.abc import OperationsAt
from scheduler.models import JobKind
from scheduler.store_types import NewJob
from scheduler.testing import FakeClock
from tests.scheduler.helpers import Counter, settle
from tests.scheduler.seeded import attempt_random, expected_backoff
from tests.support.ops import enqueue_all

if TYPE_CHECKING:
    from tests.scheduler.stores import StoreFactory

START = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def registry() -> Registry:
    reg = Registry()

    @reg.mutation("log:add")
    async def add(ctx: Any, args: Any) -> Any:
        await ctx.db.execute("INSERT INTO log (item) VALUES (?)", (str(args),))
        return args

    @reg.mutation("noop")
    async def noop(ctx: Any, args: Any) -> None:
        return None

    return reg


Make = Callable[..., Scheduler]


@pytest.fixture
async def make(stores: StoreFactory, registry: Registry, clock: FakeClock) -> AsyncIterator[Make]:
    started: list[Scheduler] = []

    def make(**kwargs: Any) -> Scheduler:
        kwargs.setdefault("clock", clock)
        sched = Scheduler(stores.new(), registry, **kwargs)
        started.append(sched)
        return sched

    yield make
    for sched in started:
        await sched.stop(grace=0)


async def log_items(sched: Scheduler) -> list[str]:
    async with sched.reader() as db:
        rows = await (await db.execute("SELECT item FROM log ORDER BY id")).fetchall()
    return [r[0] for r in rows]


async def start(sched: Scheduler) -> Scheduler:
    await sched.start()
    # An id that numbers itself: INTEGER PRIMARY KEY on SQLite, BIGSERIAL on PostgreSQL.
    serial = "BIGSERIAL" if sched.store.dialect == "postgres" else "INTEGER"
    async with sched.transaction() as ctx:
        await ctx.db.execute(
            f"CREATE TABLE IF NOT EXISTS log (id {serial} PRIMARY KEY, item TEXT UNIQUE)"
        )
    return sched


# --- when jobs run ---------------------------------------------------------------------------


async def test_a_due_now_job_runs_without_the_clock_moving(make: Make, clock: FakeClock) -> None:
    sched = await start(make())
    job_id = await sched.run_after(0, "log:add", "now")
    await sched.wait_idle()
    job = await sched.get_job(job_id)
    assert job is not None
    assert job.state is JobState.SUCCESS
    assert clock.now() == START
    assert await log_items(sched) == ["now"]


async def test_timer_fires_at_the_exact_due_time_and_not_before(
    make: Make, clock: FakeClock
) -> None:
    sched = await start(make())
    job_id = await sched.run_at(START + timedelta(seconds=10), "log:add", "later")
    await sched.wait_idle()
    clock.advance(timedelta(seconds=10) - timedelta(microseconds=1))
    await sched.wait_idle()
    assert (await sched.get_job(job_id)).state is JobState.PENDING  # type: ignore[union-attr]
    clock.advance(timedelta(microseconds=1))
    await sched.wait_idle()
    assert (await sched.get_job(job_id)).state is JobState.SUCCESS  # type: ignore[union-attr]


async def test_negative_delay_means_now(make: Make) -> None:
    sched = await start(make())
    job_id = await sched.run_after(timedelta(minutes=-5), "log:add", "x")
    job = await sched.get_job(job_id)
    assert job is not None
    assert job.next_ts == START.timestamp()


async def test_a_pass_claims_at_most_a_batch(make: Make, monkeypatch: pytest.MonkeyPatch) -> None:
    sched = await start(make(batch_size=64))
    await sched.wait_idle()  # the start-up pass's claim is not one of the counted
    sizes: list[int] = []
    claim_due = OperationsAt.claim_due

    async def recording(ops: OperationsAt, *args: Any, **kwargs: Any) -> Any:
        claim = await claim_due(ops, *args, **kwargs)
        sizes.append(len(claim.jobs))
        return claim

    monkeypatch.setattr(OperationsAt, "claim_due", recording)
    async with sched.transaction() as ctx:
        for i in range(200):
            await ctx.scheduler.run_after(0, "log:add", i)
    await sched.wait_idle()
    assert len(await log_items(sched)) == 200
    assert max(sizes) == 64
    assert sum(sizes) == 200


async def test_wakes_during_a_pass_coalesce_into_one_more_pass(
    make: Make, registry: Registry
) -> None:
    holder: dict[str, Scheduler] = {}

    @registry.mutation("wake-a-lot")
    async def wake_a_lot(ctx: Any, args: Any) -> None:
        for _ in range(50):
            holder["s"].wake()
        await ctx.scheduler.run_after(0, "log:add", "follow-up")

    sched = holder["s"] = await start(make())
    await sched.wait_idle()
    driver = sched._driver
    assert driver is not None
    before = driver.passes
    await sched.run_after(0, "wake-a-lot")
    await sched.wait_idle()
    assert await log_items(sched) == ["follow-up"]
    # The enqueue's wake gives one pass; the 50 wakes and the follow-up's commit inside it
    # give exactly one more.
    assert driver.passes - before == 2


async def stalled_job(stores: StoreFactory, clock: FakeClock, item: str, process: str) -> int:
    """A ``log:add`` of ``item`` claimed now by another ``process`` under a 5 s lease that
    it never ends (it died or stalled): only a sweep can make it due again."""
    other = stores.again()
    await other.open()
    try:
        now = clock.time()
        new = NewJob(
            fn="log:add", kind=JobKind.MUTATION, next_ts=now, max_failures=4,
            initial_backoff=1.0, backoff_base=2.0, idempotent=False, args_json=f'"{item}"',
        )  # fmt: skip
        (job_id,) = await other.at(now).run(enqueue_all([new]))
        claim = await other.at(now).claim_due(
            now + 5, mutation_limit=1, action_limit=0, process=process
        )
        assert [j.id for j in claim.jobs] == [job_id]
    finally:
        await other.close()
    return job_id


async def test_wait_idle_waits_for_a_sweep_the_clock_made_due(
    make: Make, stores: StoreFactory, clock: FakeClock
) -> None:
    # A run of another process that died holding its lease (until START + 5): only the sweep
    # can make the job due again.
    job_id = await stalled_job(stores, clock, "reclaimed", "gone")
    sched = await start(make(lease=5, sweep_interval=60))
    await sched.wait_idle()  # the start-up sweep: the lease has not expired yet
    assert (await sched.get_job(job_id)).state is JobState.IN_PROGRESS  # type: ignore[union-attr]
    clock.advance(60)  # the lease expires and the next sweep comes due
    await sched.wait_idle()
    job = await sched.get_job(job_id)
    assert job is not None
    assert job.state is JobState.SUCCESS
    assert job.attempts == 1
    assert await log_items(sched) == ["reclaimed"]


async def test_future_work_does_not_keep_wait_idle_waiting(make: Make) -> None:
    sched = await start(make())
    await sched.run_after(timedelta(days=1), "noop")
    await asyncio.wait_for(sched.wait_idle(), 5)


# --- failures and retries --------------------------------------------------------------------


async def _fail_until_dead(make: Make, clock: FakeClock, registry: Registry) -> list[float]:
    @registry.mutation("flaky")
    async def flaky(ctx: Any, args: Any) -> None:
        raise ValueError("still broken")

    sched = await start(make())
    job_id = await sched.enqueue("flaky", retry=Retry(max_failures=4, initial_backoff=2, base=3))
    delays: list[float] = []
    while True:
        await sched.wait_idle()
        job = await sched.get_job(job_id)
        assert job is not None
        if job.state is JobState.FAILED:
            assert job.attempts == 4
            assert job.error == "ValueError: still broken"
            await sched.stop()
            return delays
        delays.append(job.next_ts - clock.time())
        clock.set(job.next_ts)


async def test_backoff_sequence_is_reproducible_from_the_seed(
    make: Make, clock: FakeClock, registry: Registry
) -> None:
    delays = await _fail_until_dead(make, clock, registry)
    expected = [expected_backoff(1, n, 2.0, 3.0) for n in range(3)]
    assert delays == pytest.approx(expected)
    for n, d in enumerate(delays):
        raw = 2.0 * 3.0 ** (n + 1)
        assert raw * 0.5 <= d < raw
        assert d == pytest.approx(raw * attempt_random(1, n).uniform(0.5, 1.0))


async def test_default_budgets_are_four_for_mutations_and_one_for_actions(
    make: Make, clock: FakeClock, registry: Registry
) -> None:
    @registry.mutation("bad-m")
    async def bad_m(ctx: Any, args: Any) -> None:
        raise RuntimeError("m")

    @registry.action("bad-a")
    async def bad_a(ctx: Any, args: Any) -> None:
        raise RuntimeError("a")

    sched = await start(make())
    m = await sched.run_after(0, "bad-m")
    a = await sched.run_after(0, "bad-a")
    for _ in range(6):
        await sched.wait_idle()
        clock.advance(timedelta(minutes=10))
    jm, ja = await sched.get_job(m), await sched.get_job(a)
    assert jm is not None
    assert (jm.state, jm.attempts, jm.max_failures) == (JobState.FAILED, 4, 4)
    assert ja is not None
    assert (ja.state, ja.attempts, ja.max_failures) == (JobState.FAILED, 1, 1)


async def test_non_retryable_and_constraint_errors_dead_letter_at_once(
    make: Make, registry: Registry
) -> None:
    @registry.mutation("refuse")
    async def refuse(ctx: Any, args: Any) -> None:
        raise NonRetryable("no point retrying")

    @registry.mutation("dup")
    async def dup(ctx: Any, args: Any) -> None:
        await ctx.db.execute("INSERT INTO log (item) VALUES ('same')")
        await ctx.db.execute("INSERT INTO log (item) VALUES ('same')")

    sched = await start(make())
    ids = [await sched.run_after(0, "refuse"), await sched.run_after(0, "dup")]
    await sched.wait_idle()
    for job_id in ids:
        job = await sched.get_job(job_id)
        assert job is not None
        assert (job.state, job.attempts) == (JobState.FAILED, 1)
    assert await log_items(sched) == []  # the dup's first insert was rolled back too


async def test_a_failing_mutation_is_rolled_back_alone(make: Make, registry: Registry) -> None:
    @registry.mutation("half")
    async def half(ctx: Any, args: Any) -> None:
        await ctx.db.execute("INSERT INTO log (item) VALUES ('half-written')")
        raise NonRetryable("stop")

    sched = await start(make())
    async with sched.transaction() as ctx:
        await ctx.scheduler.run_after(0, "log:add", "before")
        await ctx.scheduler.run_after(0, "half")
        await ctx.scheduler.run_after(0, "log:add", "after")
    await sched.wait_idle()
    assert sorted(await log_items(sched)) == ["after", "before"]


async def test_mutation_random_is_seeded_by_job_and_attempt(
    make: Make, clock: FakeClock, registry: Registry
) -> None:
    drawn: list[tuple[int, int, float]] = []

    @registry.mutation("draw")
    async def draw(ctx: Any, args: Any) -> None:
        drawn.append((ctx.job.id, ctx.job.attempt, ctx.random.random()))
        if ctx.job.attempt == 0:
            raise ValueError("once more")

    sched = await start(make())
    await sched.run_after(0, "draw")
    await sched.wait_idle()
    clock.advance(timedelta(minutes=1))
    await sched.wait_idle()
    assert [(j, a) for j, a, _ in drawn] == [(1, 0), (1, 1)]
    for job_id, attempt, value in drawn:
        assert value == attempt_random(job_id, attempt).random()


# --- on_complete -------------------------------------------------------------------------


async def test_on_complete_for_success_failure_and_cancel(make: Make, registry: Registry) -> None:
    results: list[dict[str, Any]] = []

    @registry.mutation("record")
    async def record(ctx: Any, args: Any) -> None:
        results.append(args)

    @registry.action("explode")
    async def explode(ctx: Any, args: Any) -> None:
        raise KeyError("gone")

    sched = await start(make())
    ok = await sched.run_after(0, "log:add", "v", on_complete="record", context={"n": 1})
    bad = await sched.run_after(0, "explode", on_complete="record", context=b"\x00\x01")
    later = await sched.run_after(3600, "noop", on_complete="record", context="c")
    assert await sched.cancel(later)
    await sched.wait_idle()
    by_job = {r["job_id"]: r for r in results}
    assert by_job[ok] == {
        "job_id": ok,
        "result": {"kind": "success", "value": "v"},
        "context": {"n": 1},
    }
    assert by_job[bad]["result"] == {"kind": "failed", "error": "KeyError: 'gone'"}
    assert by_job[bad]["context"] == b"\x00\x01"
    assert by_job[later] == {"job_id": later, "result": {"kind": "canceled"}, "context": "c"}


# --- actions -------------------------------------------------------------------------------


async def test_action_concurrency_is_bounded(make: Make, registry: Registry) -> None:
    running = 0
    peak = 0
    starts = Counter()
    release = asyncio.Event()

    @registry.action("slow")
    async def slow(ctx: Any, args: Any) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        starts.bump()
        await release.wait()
        running -= 1

    sched = await start(make(max_concurrency=3))
    async with sched.transaction() as ctx:
        for _ in range(10):
            await ctx.scheduler.run_after(0, "slow")
    await starts.reach(3)
    sched.wake()  # a pass with 7 jobs due and no free slot...
    await settle(sched)
    assert (running, peak) == (3, 3)  # ...starts none of them
    release.set()
    await sched.wait_idle()
    assert peak == 3
    assert (await sched.store.at(0).count_by_state())[JobState.SUCCESS] == 10


async def test_action_scheduler_and_run_mutation(make: Make, registry: Registry) -> None:
    @registry.action("spawn")
    async def spawn(ctx: Any, args: Any) -> int:
        await ctx.run_mutation("log:add", "via-run-mutation")
        return await ctx.scheduler.run_after(0, "log:add", "via-facade")

    sched = await start(make())
    job_id = await sched.run_after(0, "spawn")
    await sched.wait_idle()
    assert sorted(await log_items(sched)) == ["via-facade", "via-run-mutation"]
    job = await sched.get_job(job_id)
    assert job is not None
    assert isinstance(job.result, int)


async def test_heartbeat_keeps_a_long_action_s_lease(
    make: Make, clock: FakeClock, registry: Registry
) -> None:
    go = {"beating": asyncio.Event(), "silent": asyncio.Event()}
    started = {"beating": asyncio.Event(), "silent": asyncio.Event()}
    beats: list[bool] = []
    beat = asyncio.Event()

    @registry.action("long")
    async def long(ctx: Any, args: Any) -> str:
        started[args].set()
        while not go[args].is_set():
            try:
                await asyncio.wait_for(go[args].wait(), 0.01)
            except TimeoutError:
                if args == "beating":
                    beats.append(await ctx.heartbeat())
                    beat.set()
        return args

    sched = await start(make(lease=10, sweep_interval=4))
    beating = await sched.run_after(0, "long", "beating")
    silent = await sched.run_after(0, "long", "silent", on_complete="log:add")
    await started["beating"].wait()
    await started["silent"].wait()
    for _ in range(8):  # 32 s of fake time: three leases' worth
        beat.clear()
        await asyncio.wait_for(beat.wait(), 5)
        clock.advance(4)
    await sched.sweep()
    job = await sched.get_job(silent)
    assert job is not None
    assert job.state is JobState.FAILED
    assert (await sched.get_job(beating)).state is JobState.IN_PROGRESS  # type: ignore[union-attr]
    assert all(beats)
    go["beating"].set()
    go["silent"].set()
    await sched.wait_idle()
    assert (await sched.get_job(beating)).state is JobState.SUCCESS  # type: ignore[union-attr]
    job = await sched.get_job(silent)
    assert job is not None
    assert job.state is JobState.FAILED


# --- shutdown ------------------------------------------------------------------------------


async def test_shutdown_lets_in_flight_work_finish_then_records_the_rest(
    stores: StoreFactory, registry: Registry, clock: FakeClock
) -> None:
    finish_soon = asyncio.Event()
    started: list[str] = []
    starts = Counter()

    @registry.action("quick")
    async def quick(ctx: Any, args: Any) -> str:
        started.append("quick")
        starts.bump()
        await finish_soon.wait()
        return "done"

    @registry.action("stuck")
    async def stuck(ctx: Any, args: Any) -> None:
        started.append("stuck")
        starts.bump()
        await asyncio.Event().wait()

    @registry.action("stuck-idempotent", idempotent=True)
    async def stuck_idem(ctx: Any, args: Any) -> None:
        started.append("stuck-idempotent")
        starts.bump()
        await asyncio.Event().wait()

    sched = Scheduler(stores.new(), registry, clock=clock)
    await sched.start()
    ids = [await sched.run_after(0, n) for n in ("quick", "stuck", "stuck-idempotent")]
    await starts.reach(3)
    asyncio.get_running_loop().call_later(0.05, finish_soon.set)
    await sched.stop(grace=0.5)
    assert not sched.running

    store = stores.new()  # look with a bare store: a scheduler would claim the released job
    await store.open()
    try:
        jobs = [await store.at(0).get_job(i) for i in ids]
        assert [j.state for j in jobs if j] == [JobState.SUCCESS, JobState.FAILED, JobState.PENDING]
        assert "interrupted by shutdown" in (jobs[1].error or "")  # type: ignore[union-attr]
        assert jobs[2] is not None
        assert jobs[2].attempts == 0
    finally:
        await store.close()


async def test_a_closed_scheduler_refuses_work(make: Make) -> None:
    sched = make()
    with pytest.raises(SchedulerClosed):
        await sched.run_after(0, "noop")


# --- retention -----------------------------------------------------------------------------


async def test_terminal_jobs_are_pruned_after_the_retention_period(
    make: Make, clock: FakeClock
) -> None:
    sched = await start(make(retention=timedelta(hours=1), sweep_interval=timedelta(minutes=10)))
    done = await sched.run_after(0, "noop")
    waiting = await sched.run_after(timedelta(days=2), "noop")
    await sched.wait_idle()
    clock.advance(timedelta(minutes=50))
    await sched.wait_idle()
    assert await sched.get_job(done) is not None
    clock.advance(timedelta(minutes=20))
    await sched.sweep()
    assert await sched.get_job(done) is None
    assert await sched.get_job(waiting) is not None


async def test_one_sweep_prunes_every_expired_job_however_many_batches_they_take(
    make: Make, clock: FakeClock
) -> None:
    """The retention sweep deletes a batch per transaction until none is left: one batch
    per sweep would fall behind any completion rate above a batch per sweep interval."""
    n = _sweep.PRUNE_JOBS_BATCH * 2 + 5
    sched = await start(make(retention=timedelta(hours=1), sweep_interval=timedelta(days=1)))
    async with sched.transaction() as ctx:
        for _ in range(n):
            await ctx.scheduler.run_after(0, "noop")
    await sched.wait_idle()
    assert (await sched.store.at(clock.time()).count_by_state()).get(JobState.SUCCESS) == n
    clock.advance(timedelta(hours=2))
    await sched.sweep()
    assert (await sched.store.at(clock.time()).count_by_state()).get(JobState.SUCCESS, 0) == 0


# --- what an idle process costs the database ---------------------------------------------


class Transactions:
    """The transactions a store runs for the scheduler (its write and read operations),
    counted by wrapping the store object's own methods."""

    def __init__(self, store: Any) -> None:
        self.writes = self.reads = 0
        run, run_brief, read = store._run, store._run_brief, store._read

        async def counted_run(now: float, op: Any) -> Any:
            self.writes += 1
            return await run(now, op)

        async def counted_brief(now: float, op: Any) -> Any:
            self.writes += 1
            return await run_brief(now, op)

        async def counted_read(now: float, op: Any) -> Any:
            self.reads += 1
            return await read(now, op)

        store._run, store._run_brief, store._read = counted_run, counted_brief, counted_read


async def test_an_idle_sweep_is_one_transaction_and_on_postgresql_no_pass(
    make: Make, clock: FakeClock
) -> None:
    """With nothing to reclaim or prune, the sweep's parts (the expired leases, retention,
    once keys, lease groups' members, forgotten holders) are one transaction. On PostgreSQL,
    which hears other processes' commits, a lone process also skips the holders' check (its
    watch waits for a new holder's commit) and the pass after the sweep: an idle scheduler
    costs the database one transaction per sweep interval. SQLite checks the holders and
    passes as the backstop for commits it cannot hear."""
    sched = await start(
        make(retention=timedelta(hours=1), run_retention=timedelta(days=1), sweep_interval=3600)
    )
    await sched.run_after(timedelta(days=2), "noop")
    await sched.wait_idle()
    await sched.sweep()  # the first marks this holder's row seen (once a day)
    await sched.wait_idle()
    driver = sched._driver
    assert driver is not None
    counted = Transactions(sched.store)
    passes = driver.passes
    await sched.sweep()
    swept = (counted.writes, counted.reads)
    await sched.wait_idle()  # (which reads when the next work is due: not counted)
    if sched.store.dialect == "postgres":
        assert (*swept, driver.passes - passes) == (1, 0, 0)
    else:  # the holders' check (a read), the sweep, and the pass after it
        assert (*swept, driver.passes - passes) == (1, 1, 1)


async def test_a_sweep_that_reclaims_wakes_the_driver_for_the_job_on_every_store(
    make: Make, stores: StoreFactory, clock: FakeClock
) -> None:
    """The sweep's own commit wakes the driver for what it reclaimed: no backstop pass is
    needed for it (PostgreSQL has none while it hears)."""
    job_id = await stalled_job(stores, clock, "again", "stalled")
    sched = await start(make(lease=5, sweep_interval=3600))
    await sched.wait_idle()
    clock.advance(10)  # the lease expired; the sweeper's next sweep is an hour away
    await sched.sweep()
    await sched.wait_idle()
    job = await sched.get_job(job_id)
    assert job is not None
    assert (job.state, job.attempts) == (JobState.SUCCESS, 1)
    assert await log_items(sched) == ["again"]


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda s: s.run_after(0, "nope"), UnknownFunction, "nope"),
        (lambda s: s.run_after(0, "noop", {"when": datetime.now(UTC)}), NotSerializable, "args"),
        (lambda s: s.run_after(0, "noop", {1, 2}), NotSerializable, "args"),
        (lambda s: s.run_after(0, "noop", float("nan")), NotSerializable, "args"),
        (lambda s: s.run_at(datetime(2030, 1, 1), "noop"), InvalidArgument, "naive"),  # noqa: DTZ001 (naive on purpose: the refusal under test)
        (
            lambda s: s.enqueue("noop", retry=Retry(max_failures=-1)),
            InvalidArgument,
            "max_failures",
        ),
        (lambda s: s.enqueue("noop", on_complete="missing"), UnknownFunction, "missing"),
        (lambda s: s.enqueue("noop", context=(1, 2)), NotSerializable, "context"),
        (lambda s: s.enqueue("noop", idempotency_key=""), InvalidArgument, "idempotency_key"),
        (lambda s: s.run_after("soon", "noop"), InvalidArgument, "delay"),
    ],
)
async def test_bad_input_is_refused_at_enqueue_and_nothing_is_written(
    make: Make, call: Callable[[Scheduler], Any], error: type[Exception], words: str
) -> None:
    sched = await start(make())
    with pytest.raises(error, match=words):
        await call(sched)
    assert await sched.list_jobs() == []


async def test_on_complete_must_be_a_mutation(make: Make, registry: Registry) -> None:
    @registry.action("an-action")
    async def an_action(ctx: Any, args: Any) -> None: ...

    sched = await start(make())
    with pytest.raises(UnknownFunction, match="action"):
        await sched.enqueue("noop", on_complete="an-action")


async def test_a_refused_enqueue_leaves_the_transaction_usable(make: Make) -> None:
    sched = await start(make())
    async with sched.transaction() as ctx:
        kept = await ctx.scheduler.run_after(0, "noop")
        with pytest.raises(UnknownFunction):
            await ctx.scheduler.run_after(0, "nope")
    assert [j.id for j in await sched.list_jobs()] == [kept]


async def test_a_job_exists_and_runs_only_if_its_transaction_commits(make: Make) -> None:
    sched = await start(make())
    with pytest.raises(RuntimeError):  # noqa: PT012 (the body rolls back)
        async with sched.transaction() as ctx:
            await ctx.db.execute("INSERT INTO log (item) VALUES ('rolled back')")
            await ctx.scheduler.run_after(0, "log:add", "from the rolled back one")
            raise RuntimeError("changed my mind")
    async with sched.transaction() as ctx:
        await ctx.db.execute("INSERT INTO log (item) VALUES ('committed')")
        kept = await ctx.scheduler.run_after(0, "log:add", "from the committed one")
    await sched.wait_idle()
    assert [j.id for j in await sched.list_jobs()] == [kept]
    assert await log_items(sched) == ["committed", "from the committed one"]


async def test_a_nested_transaction_is_a_clear_error(make: Make) -> None:
    sched = await start(make())
    async with sched.transaction():
        with pytest.raises(SchedulerError, match="already open"):
            async with sched.transaction():
                pass
