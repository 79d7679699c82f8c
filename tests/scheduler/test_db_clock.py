"""On PostgreSQL, leases and the other coordination stamps follow the database's clock, so
two machines whose clocks disagree by two minutes neither steal work from each other nor
hold it twice.

The "machines" are two schedulers on one database, on one FakeClock: ``ahead`` reads it
60 s fast and ``behind`` 60 s slow (:class:`~scheduler.testing.SkewedClock`, whose
machine clock is off by the same skew, so each store's measurement of the database's clock
sees it). The database runs on this host, so its clock is the FakeClock's unskewed frame:
an unskewed store measures an offset of exactly 0 (checked below), and "what the database
says" is the stamp read from the database compared with the FakeClock's own time. Every
test moves the FakeClock and runs the sweeps itself; no verdict waits on a timer.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest

from scheduler import (
    ActionContext,
    AlreadyDone,
    JobState,
    LeaseLost,
    Pace,
    Registry,
    Scheduler,
    SystemClock,
    once,
)
from scheduler.models import RunOutcome
from scheduler.stores._pg_clock import DatabaseClock
from scheduler.stores.postgres import PostgresStore
from scheduler.testing import FakeClock, SkewedClock
from tests.scheduler.pg import fresh_test_database

START = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
SKEW = 60.0
LEASE = 30.0
MARGIN = 5.0


@pytest.fixture
async def dsn() -> AsyncIterator[str]:
    async with fresh_test_database("the database clock's tests need PostgreSQL") as dsn:
        yield dsn


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@dataclass
class Gate:
    """An action whose runs (by run count) the test releases one at a time; each run records
    which machine ran it and, once released, checks its lease right before its side effect
    (or finds it lost)."""

    started: dict[int, asyncio.Event] = field(default_factory=lambda: defaultdict(asyncio.Event))
    release: dict[int, asyncio.Event] = field(default_factory=lambda: defaultdict(asyncio.Event))
    ctx: dict[int, ActionContext] = field(default_factory=dict)
    runs: list[tuple[str, int]] = field(default_factory=list)
    effects: list[tuple[str, int]] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)

    def registry(self, name: str) -> Registry:
        registry = Registry()

        async def work(ctx: ActionContext, args: Any) -> str:
            run = ctx.job.run_count
            self.runs.append((name, run))
            self.ctx[run] = ctx
            self.started[run].set()
            await self.release[run].wait()
            try:
                ctx.ensure_lease()  # right before the side effect
            except LeaseLost:
                self.lost.append(run)
                raise
            self.effects.append((name, run))
            return name

        registry.action("work", idempotent=True)(work)
        # The same, claimed in its pace key's slot (a claim of its own: claim_paced).
        registry.action("paced work", idempotent=True, pace=Pace("gate", 1))(work)
        return registry

    async def wait_started(self, run: int) -> ActionContext:
        await asyncio.wait_for(self.started[run].wait(), 10)
        return self.ctx[run]


Make = Callable[..., Scheduler]


@pytest.fixture
async def machines(dsn: str, clock: FakeClock) -> AsyncIterator[Make]:
    """``make(name, skew, registry)``: a scheduler named ``name`` on the test database whose
    clock is ``skew`` seconds off the FakeClock (not started); all are stopped at the end."""
    async with AsyncExitStack() as stack:

        def make(name: str, skew: float, registry: Registry | None = None) -> Scheduler:
            sched = Scheduler(
                PostgresStore(dsn),
                registry or Registry(),
                clock=SkewedClock(clock, skew),
                process_id=name,
                lease=LEASE,
                lease_margin=MARGIN,
                sweep_interval=3600,
            )
            stack.push_async_callback(sched.stop, 0)
            return sched

        yield make


async def lease_expiry(dsn: str, job_id: int) -> float | None:
    """The job's lease expiry as the database holds it."""
    conn = await asyncpg.connect(dsn)
    try:
        value = await conn.fetchval(
            "SELECT lease_expires_at FROM scheduler_jobs WHERE id = $1", job_id
        )
    finally:
        await conn.close()
    return None if value is None else float(value)


def store_of(sched: Scheduler) -> PostgresStore:
    store = sched.store
    assert isinstance(store, PostgresStore)
    return store


def measurement_error(sched: Scheduler) -> float:
    """How far off the store's offset may be: half the round trip it was measured in (and a
    microsecond for the arithmetic)."""
    round_trip = store_of(sched)._db_clock.round_trip
    assert round_trip is not None
    return round_trip / 2 + 1e-6


# --- the measurement ------------------------------------------------------------------------


async def test_each_store_measures_its_machines_skew_and_one_on_the_databases_host_none(
    machines: Make, clock: FakeClock
) -> None:
    ahead, behind, plain = machines("ahead", SKEW), machines("behind", -SKEW), machines("p", 0)
    for sched in (ahead, behind, plain):
        await sched.start()
    for sched, skew in ((ahead, SKEW), (behind, -SKEW)):
        # Off by at most half the round trip the offset was measured in.
        assert abs(store_of(sched).clock_offset + skew) <= measurement_error(sched)
    # The database's clock is this machine's: read inside the round trip, it counts as none,
    # so a store on this host stamps exactly what its clock says (as SQLite does).
    assert store_of(plain).clock_offset == 0.0


async def test_a_lease_is_stamped_by_the_databases_clock_on_a_real_clock_60s_fast(
    machines: Make, dsn: str
) -> None:
    """No fake time at all: a process whose real clock is a minute fast claims a job; its
    lease ends a lease after the database's own clock_timestamp() of the claim."""
    gate = Gate()
    registry = gate.registry("fast")
    sched = Scheduler(
        PostgresStore(dsn),
        registry,
        clock=SkewedClock(SystemClock(), SKEW),
        process_id="fast",
        lease=LEASE,
        lease_margin=MARGIN,
        sweep_interval=3600,
    )
    conn = await asyncpg.connect(dsn)
    try:
        async with sched:
            read_db_clock = "SELECT extract(epoch FROM clock_timestamp())::float8"
            before = float(await conn.fetchval(read_db_clock))
            job_id = await sched.run_after(0, "work")
            await gate.wait_started(1)
            after = float(await conn.fetchval(read_db_clock))
            expiry = await lease_expiry(dsn, job_id)
            gate.release[1].set()
            await sched.wait_idle()
            error = measurement_error(sched) + 1e-3  # and the float8 of a text epoch
    finally:
        await conn.close()
    assert expiry is not None
    # Stamped between the two readings of the database's clock, plus the lease (by the
    # process's own clock it would be a minute later).
    assert before + LEASE - error <= expiry <= after + LEASE + error


class FakeConn:
    """A connection whose clock_timestamp() the test sets, read between two system_time()
    readings that a FakeClock moves by ``round_trip``."""

    def __init__(self, machine: FakeClock, round_trip: float, db_ahead: float) -> None:
        self.machine = machine
        self.round_trip = round_trip
        self.db_ahead = db_ahead
        self.read_at = 0.5
        """How far into the round trip the database reads its clock (0.5: halfway)."""

    async def fetchval(self, sql: str) -> float:
        assert "clock_timestamp()" in sql
        self.machine.advance(self.round_trip * self.read_at)
        db = self.machine.time() + self.db_ahead
        self.machine.advance(self.round_trip * (1 - self.read_at))
        return db


async def test_the_offset_is_the_database_reading_against_the_round_trips_midpoint() -> None:
    machine = FakeClock(START)
    db_clock = DatabaseClock(monotonic=machine.monotonic)
    assert db_clock.due(machine.time)
    offset = await db_clock.measure(FakeConn(machine, 0.004, -60.0), machine.time)
    assert offset == pytest.approx(-60.0, abs=1e-6)
    assert db_clock.round_trip == pytest.approx(0.004, abs=1e-6)
    # Inside the round trip's window the clocks agree as closely as can be measured: none.
    assert await db_clock.measure(FakeConn(machine, 0.004, 0.0015), machine.time) == 0.0
    # Of several round trips, the shortest one's reading is kept: the long ones read the
    # database's clock early or late in theirs (off by 0.25 s and 0.15 s from the midpoint).
    conn = FakeConn(machine, 0.5, 12.0)
    samples = [(0.5, 0.0), (0.002, 0.9), (0.3, 1.0)]

    async def varying(sql: str) -> float:
        conn.round_trip, conn.read_at = samples.pop(0)
        return await FakeConn.fetchval(conn, sql)

    conn.fetchval = varying  # type: ignore[method-assign]
    offset = await db_clock.measure(conn, machine.time, samples=3)
    assert offset == pytest.approx(12.0, abs=0.001)  # off by at most half of 2 ms
    assert db_clock.round_trip == pytest.approx(0.002, abs=1e-6)


async def test_the_offset_is_measured_again_after_its_interval_or_a_step_of_the_machine_clock() -> (
    None
):
    machine = FakeClock(START)
    db_clock = DatabaseClock(interval=30.0, step_tolerance=0.25, monotonic=machine.monotonic)
    await db_clock.measure(FakeConn(machine, 0.002, 5.0), machine.time)
    machine.advance(29)
    assert not db_clock.due(machine.time)
    machine.step(0.2)  # within the tolerance: drift, not a step
    assert not db_clock.due(machine.time)
    machine.step(0.2)
    assert db_clock.due(machine.time)  # the wall clock moved 0.4 s more than time passed
    await db_clock.measure(FakeConn(machine, 0.002, 5.0 - 0.4), machine.time)
    assert not db_clock.due(machine.time)
    machine.advance(30)
    assert db_clock.due(machine.time)


async def test_a_machine_clock_stepped_by_a_minute_is_corrected_at_the_next_operation(
    machines: Make, clock: FakeClock, dsn: str
) -> None:
    """The machine's clock (wall time and system time alike) jumps a minute ahead while the
    scheduler runs: the next lease it takes is still stamped by the database's clock."""
    sched = machines("stepped", 0.0)
    await sched.start()
    assert store_of(sched).clock_offset == 0.0
    skewed = sched.clock
    assert isinstance(skewed, SkewedClock)
    skewed.skew = SKEW  # an NTP step, or an operator setting the time
    assert await sched.leases.take("k", ttl=LEASE)
    assert store_of(sched).clock_offset == pytest.approx(-SKEW, abs=measurement_error(sched))
    conn = await asyncpg.connect(dsn)
    try:
        expiry = float(
            await conn.fetchval("SELECT expires_at FROM scheduler_leases WHERE lease_key = 'k'")
        )
    finally:
        await conn.close()
    assert expiry == pytest.approx(clock.time() + LEASE, abs=measurement_error(sched))


# --- job leases -----------------------------------------------------------------------------


@pytest.mark.parametrize("fn", ["work", "paced work"])
async def test_the_ahead_one_does_not_take_a_job_the_behind_one_holds_under_a_live_lease(
    machines: Make, clock: FakeClock, fn: str
) -> None:
    """Behind claims, and 20 s in renews its lease with a heartbeat; ahead sweeps every 5 s
    (its clock says each lease ran out 90 s earlier, had behind stamped it by its own) and
    must not reclaim the job while the database says the lease is live; so the job runs
    once, behind's run making the one side effect."""
    gate = Gate()
    behind = machines("behind", -SKEW, gate.registry("behind"))
    ahead = machines("ahead", SKEW, gate.registry("ahead"))
    await behind.start()
    job_id = await behind.run_after(0, fn)
    run = await gate.wait_started(1)
    await ahead.start()
    error = measurement_error(behind) + measurement_error(ahead)

    async def lease_reads_30s_from_now_on_both() -> None:
        for sched in (behind, ahead):  # each reads the lease back on its own clock
            job = await sched.get_job(job_id)
            assert job is not None
            assert job.lease_expires_at is not None
            assert job.lease_expires_at == pytest.approx(sched.clock.time() + LEASE, abs=error)

    async def ahead_sweeps(times: int) -> None:
        for _ in range(times):
            await ahead.sweep()
            job = await ahead.get_job(job_id)
            passed = clock.time() - START.timestamp()
            took = f"ahead took the job {passed:.0f}s after behind claimed it"
            assert job is not None, took
            assert job.state is JobState.IN_PROGRESS, took
            clock.advance(5)

    await lease_reads_30s_from_now_on_both()
    await ahead_sweeps(4)  # 0 to 15 s into the 30 s lease
    assert await run.heartbeat()  # 20 s in: the lease now ends at 50 s
    await lease_reads_30s_from_now_on_both()
    await ahead_sweeps(3)  # 20 to 30 s: past the claim's lease, within the heartbeat's
    await ahead.wait_idle()
    assert gate.runs == [("behind", 1)]
    gate.release[1].set()  # 35 s in: 10 s of the lease surely left after the 5 s margin
    await behind.wait_idle()
    job = await behind.get_job(job_id)
    assert job is not None
    assert job.state is JobState.SUCCESS
    assert job.result == "behind"
    assert gate.effects == [("behind", 1)]
    assert [r.outcome for r in await behind.runs(job_id=job_id)] == [RunOutcome.SUCCESS]


async def test_the_behind_one_does_not_keep_running_a_job_whose_lease_the_database_ended(
    machines: Make, clock: FakeClock, dsn: str
) -> None:
    """Behind claims. What it believes it holds (``lease_remaining``) never exceeds what the
    database grants; once the database's lease is over, ahead's sweep reclaims the job and
    it runs again, and behind's first run learns it lost the job (``ensure_lease`` raises,
    its heartbeat finds the job gone and cancels it) before any side effect."""
    gate = Gate()
    behind = machines("behind", -SKEW, gate.registry("behind"))
    ahead = machines("ahead", SKEW, gate.registry("ahead"))
    await behind.start()
    job_id = await behind.run_after(0, "work")
    first = await gate.wait_started(1)
    await ahead.start()
    expiry = await lease_expiry(dsn, job_id)
    assert expiry is not None
    granted = expiry - clock.time()  # what the database says is left (its clock: unskewed)
    believed = first.lease_remaining()
    assert believed > 0
    assert granted >= believed + MARGIN - measurement_error(behind), (
        f"behind believes it holds the job {believed:.1f}s more; the database says {granted:.1f}s"
    )
    clock.advance(LEASE + 1)  # behind stalls past its lease
    await ahead.sweep()
    await gate.wait_started(2)  # run again, by whichever machine claimed it first
    with pytest.raises(LeaseLost):
        first.ensure_lease()
    assert await first.heartbeat() is False  # the job is gone: run 1 is cancelled
    gate.release[2].set()
    await ahead.wait_idle()
    await behind.wait_idle()
    assert [run for _, run in gate.effects] == [2]
    job = await ahead.get_job(job_id)
    assert job is not None
    assert job.state is JobState.SUCCESS
    outcomes = sorted((r.run_count, r.outcome) for r in await ahead.runs(job_id=job_id))
    assert outcomes == [(1, RunOutcome.LEASE_LOST), (2, RunOutcome.SUCCESS)]


async def test_a_job_the_ahead_one_holds_is_reclaimed_by_the_behind_one_once_its_lease_ends(
    machines: Make, clock: FakeClock
) -> None:
    """Ahead claims, then stalls. Behind's sweep leaves the job alone while the lease is
    live, and reclaims it as soon as the database says it ended (had ahead stamped the lease
    by its own clock, behind would wait two more minutes)."""
    gate = Gate()
    ahead = machines("ahead", SKEW, gate.registry("ahead"))
    behind = machines("behind", -SKEW, gate.registry("behind"))
    await ahead.start()
    job_id = await ahead.run_after(0, "work")
    await gate.wait_started(1)
    await behind.start()
    clock.advance(LEASE - 2)
    await behind.sweep()
    job = await behind.get_job(job_id)
    assert job is not None
    assert job.state is JobState.IN_PROGRESS
    clock.advance(3)  # the lease ended 1 s ago
    await behind.sweep()
    assert [r.outcome for r in await behind.runs(job_id=job_id)] == [RunOutcome.LEASE_LOST]
    await gate.wait_started(2)
    gate.release[2].set()
    gate.release[1].set()  # ahead wakes: its lease is over by its own count too
    await behind.wait_idle()
    await ahead.wait_idle()
    assert gate.runs[0] == ("ahead", 1)
    assert [run for _, run in gate.effects] == [2]
    assert gate.lost == [1]
    job = await behind.get_job(job_id)
    assert job is not None
    assert job.state is JobState.SUCCESS


# --- named leases ---------------------------------------------------------------------------


async def test_a_named_lease_is_not_stolen_early_nor_held_past_its_expiry(
    machines: Make, clock: FakeClock
) -> None:
    ahead, behind = machines("ahead", SKEW), machines("behind", -SKEW)
    await ahead.start()
    await behind.start()
    # Behind takes "early": ahead may not take it until the database says it ran out.
    assert await behind.leases.take("early", ttl=LEASE)
    # Ahead takes "late" and then stops renewing it: behind may take it once it ran out.
    assert await ahead.leases.take("late", ttl=LEASE)
    clock.advance(LEASE - 1)
    assert not await ahead.leases.take("early", ttl=LEASE)
    assert await ahead.leases.holders(["early", "late"]) == {"early": "behind", "late": "ahead"}
    assert not await behind.leases.take("late", ttl=LEASE)
    assert await behind.leases.holders(["early", "late"]) == {"early": "behind", "late": "ahead"}
    clock.advance(2)  # both ran out a second ago
    assert await ahead.leases.holders(["early", "late"]) == {}
    assert await behind.leases.holders(["early", "late"]) == {}
    assert await behind.leases.take("late", ttl=LEASE)
    assert await ahead.leases.take("early", ttl=LEASE)
    assert await behind.leases.holders(["early", "late"]) == {"early": "ahead", "late": "behind"}
    # Renewed by behind, "late" lasts a lease from the renewal, by the database's clock.
    clock.advance(LEASE / 2)
    assert await behind.leases.renew(["late"], ttl=LEASE) == {"late"}
    clock.advance(LEASE - 1)
    assert not await ahead.leases.take("late", ttl=LEASE)
    assert await ahead.leases.holders(["late"]) == {"late": "behind"}
    clock.advance(2)
    assert await ahead.leases.take("late", ttl=LEASE)


async def test_lease_group_members_live_and_lapse_by_the_databases_clock(
    machines: Make, clock: FakeClock
) -> None:
    """A fair share counts the members whose membership the database says is live: behind's
    is neither dropped early by ahead nor kept past its time by behind."""
    ahead, behind = machines("ahead", SKEW), machines("behind", -SKEW)
    await ahead.start()
    await behind.start()
    started: list[tuple[str, str]] = []

    async def noop(key: str) -> None:
        return None

    def share(sched: Scheduler) -> Any:
        async def start(key: str) -> None:
            started.append((sched.leases.holder, key))

        return sched.leases.share("g", ["k0", "k1"], start=start, stop=noop, ttl=LEASE)

    share_b, share_a = share(behind), share(ahead)
    await share_b.round()  # behind joins and takes both keys
    assert share_b.running == {"k0", "k1"}
    await share_a.round()  # ahead joins, sees two live members: asks for one key
    await share_b.round()  # behind hands it over
    await share_a.round()  # ahead starts it
    await share_b.round()
    assert (share_a.running, share_b.running) == ({"k0"}, {"k1"}) or (
        share_a.running,
        share_b.running,
    ) == ({"k1"}, {"k0"})
    clock.advance(LEASE - 1)  # behind's membership and lease (renewed in its last round) live
    await share_a.round()
    assert len(share_a.running) == 1
    holders = await ahead.leases.holders(["k0", "k1"])
    assert sorted(holders.values()) == ["ahead", "behind"], holders
    clock.advance(2)  # both of behind's have run out (it stopped renewing)
    await share_a.round()
    assert share_a.running == {"k0", "k1"}


# --- pace slots and once keys ---------------------------------------------------------------


def on_base(start: datetime, skew: float) -> float:
    """A time one of the machines gave, on the FakeClock's own (unskewed) frame."""
    return start.timestamp() - skew


async def test_pace_slots_reserved_by_both_are_not_double_booked(
    machines: Make, clock: FakeClock
) -> None:
    ahead, behind = machines("ahead", SKEW), machines("behind", -SKEW)
    await ahead.start()
    await behind.start()
    pace = Pace("gateway", 10)
    first = on_base(await behind.reserve_slot(pace), -SKEW)
    second = on_base(await ahead.reserve_slot(pace), SKEW)
    third = on_base(await behind.reserve_slot(pace), -SKEW)
    assert first == pytest.approx(clock.time(), abs=0.01)
    assert second - first >= 10 - 0.01, (first, second, third)
    assert third - second >= 10 - 0.01, (first, second, third)


async def test_paced_jobs_of_both_start_their_spacing_apart(
    machines: Make, clock: FakeClock
) -> None:
    """Paced jobs of one key, each run by one machine alone (so who runs it is known): behind
    starts the first; ahead's job waits for the slot the database's clock gives it and
    starts when the FakeClock reaches it, not before; then a behind machine's job waits for
    the slot after that the same way, and is not held up past it."""
    starts: list[tuple[str, float]] = []

    def registry(name: str) -> Registry:
        reg = Registry()

        @reg.action("paced", pace=Pace("channel", 10))
        async def paced(ctx: ActionContext, args: Any) -> None:
            starts.append((name, clock.time()))

        return reg

    first = machines("behind", -SKEW, registry("behind"))
    await first.start()
    await first.run_after(0, "paced")
    await first.wait_idle()
    assert starts == [("behind", START.timestamp())]
    running = first
    for name, skew in (("ahead", SKEW), ("behind again", -SKEW)):
        sched = machines(name, skew, registry(name))
        await sched.start()
        # The slot opens 10 s after the last start, to within both stores' measurements of
        # the database's clock (each off by at most half the round trip it was measured in).
        error = measurement_error(running) + measurement_error(sched)
        await running.stop()
        running = sched
        last = starts[-1][1]
        job_id = await sched.run_after(0, "paced")
        await sched.wait_idle()  # nothing may start now: the slot is 10 s on
        job = await sched.get_job(job_id)
        assert job is not None, starts
        assert job.state is JobState.PENDING, starts
        clock.advance(last + 10 - error - clock.time())
        await sched.wait_idle()
        assert len(starts) == 1 + (name == "behind again"), starts
        clock.advance(2 * error)
        await sched.wait_idle()
        assert starts[-1][0] == name
        assert starts[-1][1] == pytest.approx(last + 10 + error, abs=1e-6)


async def test_a_once_key_taken_by_the_behind_one_is_kept_by_the_ahead_ones_sweep(
    machines: Make, clock: FakeClock
) -> None:
    """A once key lives its ttl by the database's clock: ahead's sweep does not prune the
    key behind took (by behind's clock it would have expired already), so the duplicate
    that reaches ahead still finds it taken and writes nothing."""
    ahead, behind = machines("ahead", SKEW), machines("behind", -SKEW)
    await ahead.start()
    await behind.start()
    async with behind.transaction() as ctx:
        await ctx.db.execute("CREATE TABLE notes (text TEXT NOT NULL)")

    async def note(sched: Scheduler) -> None:
        with once("interaction:1", ttl=100):
            async with sched.transaction() as ctx:
                await ctx.db.execute("INSERT INTO notes (text) VALUES ($1)", [sched.leases.holder])

    await note(behind)
    clock.advance(50)  # half the key's ttl, as a duplicate may arrive that late
    await ahead.sweep()
    with pytest.raises(AlreadyDone):
        await note(ahead)
    async with ahead.reader() as db:
        notes = await (await db.execute("SELECT text FROM notes")).fetchall()
        keys = await (await db.execute("SELECT once_key FROM scheduler_once")).fetchall()
    assert [r[0] for r in notes] == ["behind"]
    assert [r[0] for r in keys] == ["interaction:1"]
