"""Recurring schedules on a FakeClock: registration, reconciliation, catch-up, overlap,
pause/resume/trigger/backfill/delete, time zones, jitter, and racing schedulers."""

from __future__ import annotations

import asyncio
import calendar
import dataclasses
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pytest

from scheduler import (
    Concurrency,
    CronJobs,
    DuplicateName,
    InvalidSchedule,
    JobKind,
    JobRequest,
    JobState,
    Pace,
    Registry,
    Retry,
    ScheduleNotFound,
    Scheduler,
    ScheduleRequest,
    UnknownFunction,
    cron_jobs,
)
from scheduler._ops.schedules import occurrence_key
from scheduler.testing import FakeClock
from tests.scheduler.helpers import settle
from tests.scheduler.seeded import expected_jitter
from tests.support.processes import until

if TYPE_CHECKING:
    from tests.scheduler.stores import StoreFactory

START = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


class Recorder:
    def __init__(self) -> None:
        self.runs: list[tuple[str, float | None]] = []
        self.gates: dict[str, asyncio.Event] = {}
        self.started = asyncio.Event()
        self.steps: list[tuple[str, float]] = []
        """("start" | "end", fire_ts) of every run of "step", in order."""
        self.step_gates: dict[float, asyncio.Event] = {}


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


@pytest.fixture
def registry(rec: Recorder) -> Registry:
    reg = Registry()

    @reg.mutation("tick")
    async def tick(ctx: Any, args: Any) -> None:
        rec.runs.append((str(args), ctx.job.fire_ts))

    @reg.action("slow")
    async def slow(ctx: Any, args: Any) -> None:
        rec.runs.append((str(args), ctx.job.fire_ts))
        rec.started.set()
        gate = rec.gates.setdefault(str(args), asyncio.Event())
        await gate.wait()

    @reg.action("step")
    async def step(ctx: Any, args: Any) -> None:
        fire_ts = ctx.job.fire_ts
        rec.steps.append(("start", fire_ts))
        await rec.step_gates.setdefault(fire_ts, asyncio.Event()).wait()
        rec.steps.append(("end", fire_ts))

    return reg


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


Make = Callable[..., Scheduler]


@pytest.fixture
async def make(stores: StoreFactory, registry: Registry, clock: FakeClock) -> AsyncIterator[Make]:
    made: list[Scheduler] = []

    def make(crons: CronJobs | None = None, **kw: Any) -> Scheduler:
        kw.setdefault("clock", clock)
        s = Scheduler(stores.new(), registry, crons=crons, **kw)
        made.append(s)
        return s

    yield make
    for s in made:
        await s.stop(grace=0)


async def occurrences(sched: Scheduler, name: str) -> list[Any]:
    jobs = await sched.list_jobs(limit=10_000)
    return sorted((j for j in jobs if j.schedule_name == name), key=lambda j: (j.fire_ts, j.id))


async def step_to(sched: Scheduler, clock: FakeClock, t: datetime) -> None:
    clock.set(t)
    await sched.wait_idle()


# --- registration --------------------------------------------------------------------------


def test_the_six_registration_methods_and_duplicates() -> None:
    crons = cron_jobs()
    crons.interval("i", timedelta(minutes=5), "tick")
    crons.cron("c", "0 3 * * *", "tick", tz="America/New_York")
    crons.daily("d", 8, 0, "tick")
    crons.hourly("h", 15, "tick")
    crons.weekly("w", "friday", 17, 0, "tick")
    crons.monthly("m", 1, 6, 0, "tick")
    assert len(crons) == 6
    with pytest.raises(DuplicateName, match="'d'"):
        crons.daily("d", 9, 0, "tick")
    with pytest.raises(InvalidSchedule, match="tz"):
        crons.daily("x", 9, 0, "tick", tz="Europe/London")  # UTC by construction
    with pytest.raises(InvalidSchedule, match="hour_utc"):
        crons.daily("y", 24, 0, "tick")
    with pytest.raises(InvalidSchedule, match="day_of_week"):
        crons.weekly("z", "someday", 1, 0, "tick")
    with pytest.raises(InvalidSchedule, match="minute field"):
        crons.cron("bad", "61 * * * *", "tick")


async def test_a_static_cron_with_an_unknown_function_fails_at_start(make: Make) -> None:
    crons = cron_jobs()
    crons.hourly("h", 0, "nope")
    with pytest.raises(UnknownFunction, match="nope"):
        await make(crons).start()


# --- the convenience builders' fire times --------------------------------------------------


async def _walk_static(
    make: Make,
    clock: FakeClock,
    rec: Recorder,
    start: datetime,
    crons: CronJobs,
    fires: dict[str, list[datetime]],
) -> None:
    """Boot at ``start`` and step the clock to every fire time in ``fires`` but each list's
    last: after each step every schedule's next fire is the next one of its list, and at the
    end each ran at exactly the listed times (so nothing fired in between). Each cron's args
    are its name."""
    clock.set(start)
    sched = make(crons)
    await sched.start()

    async def next_fires() -> dict[str, datetime | None]:
        return {s.name: s.next_fire for s in await sched.schedules.list()}

    assert await next_fires() == {name: ts[0] for name, ts in fires.items()}
    for t in sorted({t for ts in fires.values() for t in ts[:-1]}):
        await step_to(sched, clock, t)
        assert await next_fires() == {
            name: next(u for u in ts if u > t) for name, ts in fires.items()
        }, t
    for name, ts in fires.items():  # (finished jobs are pruned after a week: count runs)
        ran = [datetime.fromtimestamp(f, UTC) for n, f in rec.runs if n == name and f]
        assert ran == ts[:-1], name


def at(y: int, mo: int, d: int, h: int = 0, mi: int = 0) -> datetime:
    return datetime(y, mo, d, h, mi, tzinfo=UTC)


async def test_weekly_fires_on_its_weekday_at_its_utc_time(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    # START is Saturday 2030-06-01 12:00 UTC.
    crons = cron_jobs()
    crons.weekly("fri", "friday", 17, 0, "tick", "fri")
    crons.weekly("sun", 0, 0, 0, "tick", "sun")  # 0 is Sunday
    crons.weekly("sat-passed", "Sat", 11, 59, "tick", "sat-passed")  # a minute ago: next week
    crons.weekly("sat-ahead", 6, 12, 1, "tick", "sat-ahead")  # a minute from now today
    crons.weekly("wed", "wed", 23, 59, "tick", "wed")
    await _walk_static(
        make,
        clock,
        rec,
        START,
        crons,
        {
            "fri": [at(2030, 6, d, 17) for d in (7, 14, 21, 28)],
            "sun": [at(2030, 6, d) for d in (2, 9, 16, 23, 30)],
            "sat-passed": [at(2030, 6, d, 11, 59) for d in (8, 15, 22, 29)],
            "sat-ahead": [at(2030, 6, d, 12, 1) for d in (1, 8, 15, 22, 29)],
            "wed": [at(2030, 6, d, 23, 59) for d in (5, 12, 19, 26)],
        },
    )


def _monthly_oracle(day: int, hour: int, minute: int, after: datetime, n: int) -> list[datetime]:
    """The first ``n`` times after ``after`` on ``day`` of a month long enough (by calendar)."""
    out: list[datetime] = []
    year, month = after.year, after.month
    while len(out) < n:
        if day <= calendar.monthrange(year, month)[1]:
            t = at(year, month, day, hour, minute)
            if t > after:
                out.append(t)
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return out


async def test_monthly_fires_on_its_day_and_skips_months_without_it(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    start = at(2031, 1, 15, 12)  # 2031 is not a leap year, 2032 is
    crons = cron_jobs()
    crons.monthly("m31", 31, 6, 0, "tick", "m31")
    crons.monthly("m30", 30, 0, 0, "tick", "m30")
    crons.monthly("m29", 29, 23, 30, "tick", "m29")
    crons.monthly("m15", 15, 12, 0, "tick", "m15")  # exactly now: next month
    crons.monthly("m1", 1, 0, 5, "tick", "m1")
    m31 = [at(2031, m, 31, 6) for m in (1, 3, 5, 7, 8, 10, 12)] + [
        at(2032, m, 31, 6) for m in (1, 3)
    ]
    m29 = [at(2031, m, 29, 23, 30) for m in (1, *range(3, 13))] + [
        at(2032, m, 29, 23, 30) for m in (1, 2, 3)
    ]
    assert m31 == _monthly_oracle(31, 6, 0, start, 9)
    assert m29 == _monthly_oracle(29, 23, 30, start, 14)
    # Stop after 2032-02-29 23:30: each list runs to its first time past that.
    await _walk_static(
        make,
        clock,
        rec,
        start,
        crons,
        {
            "m31": m31,
            "m30": _monthly_oracle(30, 0, 0, start, 13),  # no 30 February: 2032-03-30 is 13th
            "m29": m29,
            "m15": _monthly_oracle(15, 12, 0, start, 14),
            "m1": _monthly_oracle(1, 0, 5, start, 15),
        },
    )


# --- reconciliation ------------------------------------------------------------------------


async def test_restarting_with_an_unchanged_registry_keeps_phase_and_fires_nothing_extra(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    crons = cron_jobs()
    crons.interval("every-10m", timedelta(minutes=10), "tick", "i")
    crons.daily("daily", 13, 0, "tick", "d")
    a = make(crons)
    await a.start()
    first = {s.name: s.next_fire for s in await a.schedules.list()}
    assert first["every-10m"] == START + timedelta(minutes=10)
    assert first["daily"] == START + HOUR
    await step_to(a, clock, START + timedelta(minutes=10))
    await a.stop()

    clock.set(START + timedelta(minutes=13))
    b = make(crons)
    await b.start()
    await b.wait_idle()
    after = {s.name: s.next_fire for s in await b.schedules.list()}
    assert after == {"every-10m": START + timedelta(minutes=20), "daily": START + HOUR}
    assert rec.runs == [("i", (START + timedelta(minutes=10)).timestamp())]


async def test_an_edited_entry_converges_and_a_removed_one_goes(
    make: Make, clock: FakeClock
) -> None:
    crons = cron_jobs()
    crons.hourly("keep", 0, "tick")
    crons.hourly("edit", 0, "tick")
    crons.hourly("drop", 0, "tick", jitter=timedelta(minutes=59))
    a = make(crons)
    await a.start()
    await step_to(a, clock, START + HOUR)
    [planted] = await occurrences(a, "drop")
    assert planted.state is JobState.PENDING  # its jitter holds it back
    assert planted.jitter == expected_jitter("drop", (START + HOUR).timestamp(), 59 * 60.0)
    await a.stop()

    edited = cron_jobs()
    edited.hourly("keep", 0, "tick")
    edited.hourly("edit", 30, "tick")
    b = make(edited)
    await b.start()
    names = {s.name: s for s in await b.schedules.list()}
    assert set(names) == {"keep", "edit"}
    assert names["edit"].next_fire == START + HOUR + timedelta(minutes=30)
    assert names["keep"].next_fire == START + 2 * HOUR
    job = await b.get_job(planted.id)
    assert job is not None
    assert job.state is JobState.CANCELED


async def test_a_static_name_may_not_clash_with_a_runtime_schedule(make: Make) -> None:
    a = make()
    await a.start()
    await a.schedules.create("shared", "0 * * * *", "tick")
    await a.stop()
    crons = cron_jobs()
    crons.hourly("shared", 0, "tick")
    with pytest.raises(DuplicateName, match="runtime"):
        await make(crons).start()


async def test_create_many_writes_what_create_writes_in_one_transaction(make: Make) -> None:
    sched = make()
    specs: list[tuple[str, Any, dict[str, Any]]] = [
        ("c", "0 9 * * *", {"tz": "Europe/London", "catch_up": "fire_once"}),
        ("i", timedelta(minutes=10), {"start": START + timedelta(hours=2), "overlap": "allow_all"}),
        ("j", timedelta(hours=1), {"jitter": timedelta(seconds=30)}),
    ]
    await sched.start()
    singly = [await sched.schedules.create(n, spec, "tick", {"n": n}, **o) for n, spec, o in specs]
    async with sched.transaction() as ctx:
        firsts = await ctx.scheduler.schedules.create_many(
            ScheduleRequest(f"many-{n}", spec, "tick", {"n": n}, **o) for n, spec, o in specs
        )
    assert firsts == [s.next_fire for s in singly]
    assert firsts[1] == START + timedelta(hours=2)
    listed = {s.name: s for s in await sched.schedules.list()}
    assert [dataclasses.replace(listed[f"many-{s.name}"], name=s.name) for s in singly] == singly
    with pytest.raises(DuplicateName):  # a name taken earlier in the same batch
        await sched.schedules.create_many(
            [ScheduleRequest("x", "0 * * * *", "tick"), ScheduleRequest("x", "5 * * * *", "tick")]
        )
    with pytest.raises(UnknownFunction):  # validated before anything is written
        await sched.schedules.create_many(
            [ScheduleRequest("y", "0 * * * *", "tick"), ScheduleRequest("z", "0 * * * *", "no")]
        )
    assert len(await sched.schedules.list()) == 6


async def test_get_many_reads_the_named_schedules_as_get_does(make: Make) -> None:
    sched = make()
    await sched.start()
    for name, spec in (("a", "0 9 * * *"), ("b", timedelta(hours=1)), ("c", "*/5 * * * *")):
        await sched.schedules.create(name, spec, "tick", {"n": name})
    await sched.schedules.pause("c")
    got = await sched.schedules.get_many(["c", "a", "missing", "a"])
    assert got == {"a": await sched.schedules.get("a"), "c": await sched.schedules.get("c")}
    assert got["c"].paused
    async with sched.transaction() as ctx:
        assert await ctx.scheduler.schedules.get_many(["b"]) == {
            "b": await sched.schedules.get("b")
        }
    assert await sched.schedules.get_many([]) == {}


async def test_enqueue_many_enqueues_each_as_enqueue_would(make: Make) -> None:
    sched = make()
    await sched.start()
    later = START + timedelta(hours=1)
    taken = await sched.enqueue("tick", 0, idempotency_key="k0", run_at=later)
    ids = await sched.enqueue_many(
        [
            JobRequest("tick", 1, run_at=later, name="first"),
            JobRequest("tick", 2, idempotency_key="k0"),  # live key: the existing job
            JobRequest("tick", 3, idempotency_key="k3", run_at=later),
            JobRequest("tick", 4, idempotency_key="k3"),  # taken earlier in the batch
        ]
    )
    assert ids[1] == taken
    assert ids[3] == ids[2]
    assert len({ids[0], taken, ids[2]}) == 3
    assert len(await sched.list_jobs()) == 3
    first, third = await sched.get_job(ids[0]), await sched.get_job(ids[2])
    assert first is not None
    assert third is not None
    assert (first.args, first.name, first.next_ts, first.state) == (
        1, "first", later.timestamp(), JobState.PENDING,
    )  # fmt: skip
    assert (third.args, third.idempotency_key) == (3, "k3")
    assert await sched.enqueue_many([]) == []
    with pytest.raises(UnknownFunction):
        await sched.enqueue_many([JobRequest("tick", 5), JobRequest("missing", 6)])
    assert len(await sched.list_jobs()) == 3


async def _written(sched: Scheduler, ids: list[int]) -> list[dict[str, Any]]:
    """Every column of the jobs ``ids`` and of their payloads but the ids, in that order."""
    async with sched.reader() as db:
        cur = await db.execute(
            "SELECT j.*, a.args, a.context_type, a.context, a.callback_of "
            "FROM scheduler_jobs j JOIN scheduler_job_args a ON a.job_id = j.id"
        )
        rows = {int(r["id"]): dict(zip(r.keys(), r, strict=True)) for r in await cur.fetchall()}
    return [{k: v for k, v in rows[i].items() if k != "id"} for i in ids]


async def test_a_batch_of_plain_jobs_is_written_as_one_enqueue_at_a_time_writes_it(
    make: Make, rec: Recorder
) -> None:
    """enqueue_many writes plain jobs (no key, no parent) in one batch: the same rows, ids
    in order, and the driver woken, as one enqueue at a time."""
    sched = make()
    await sched.start()
    later = START + timedelta(hours=1)
    requests = [
        JobRequest("tick", {"n": 1}, run_at=later, name="a", priority=2, retry=Retry(3)),
        JobRequest("slow", [2], run_at=later + timedelta(seconds=5), timeout=7.5),
        JobRequest("tick", None, run_at=later, pace=Pace("p", timedelta(seconds=2))),
        JobRequest("tick", "x", run_at=later, on_complete="tick", context={"c": 1}),
        JobRequest("slow", 5, run_at=later, concurrency=Concurrency("c", 2)),
    ]
    alone = [await sched.enqueue(r.fn, r.args, **r.options) for r in requests]
    batched = await sched.enqueue_many(requests)
    assert batched == sorted(batched)
    assert len(set(batched)) == len(requests)
    assert min(batched) > max(alone)
    assert await _written(sched, batched) == await _written(sched, alone)
    after = await sched.enqueue("tick", 9, run_at=later)  # the ids go on from the batch's
    assert after > max(batched)
    await sched.wait_idle()
    # due now: the batch's commit wakes the driver (the clock stays; its next timer is an
    # hour out), which runs them
    await sched.enqueue_many([JobRequest("tick", "now1"), JobRequest("tick", "now2")])
    await until(lambda: {"now1", "now2"} <= {r for r, _ in rec.runs}, 10, "the batch to run")


def test_a_batch_of_plain_jobs_costs_three_statements_whatever_its_size() -> None:
    """A store that awaits each statement (PostgreSQL) pays a round trip per statement: a
    batch of plain jobs is three, not two per job; a batch with a keyed job goes one by
    one (its key is looked up first)."""
    from scheduler._ops.jobs import enqueue_many
    from scheduler._resolver import Resolver
    from scheduler.store_types import NewJob, OpState

    def job(key: str | None = None) -> NewJob:
        return NewJob(
            fn="tick", kind=JobKind.MUTATION, next_ts=0.0, max_failures=1,
            initial_backoff=1.0, backoff_base=2.0, idempotent=False, args_json="null",
            idempotency_key=key,
        )  # fmt: skip

    def statements(jobs: list[NewJob]) -> tuple[list[str], list[int]]:
        names: list[str] = []
        gen = enqueue_many(OpState(0.0, Resolver()), jobs)
        answer: Any = None
        try:
            while True:
                q = gen.send(answer)
                names.append(q.name)
                if q.name == "next_job_ids":
                    answer = [{"id": 10 + i} for i in range(q.params["n"])]
                elif q.fetch == "one":
                    answer = None if q.name == "job_by_key" else {"id": 99}
                else:
                    answer = len(q.params) if q.fetch == "many" else 1
        except StopIteration as stop:
            return names, stop.value

    names, ids = statements([job() for _ in range(100)])
    assert names == ["next_job_ids", "insert_job_with_id", "insert_args"]
    assert ids == list(range(10, 110))
    names, _ = statements([job(), job("k")])
    assert names.count("insert_job") == 2


# --- anchoring, idempotency ----------------------------------------------------------------


async def test_a_late_tick_does_not_shift_later_ones(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    sched = make()
    await sched.start()
    await sched.schedules.create("ten", timedelta(minutes=10), "tick")
    await step_to(sched, clock, START + timedelta(minutes=10, seconds=40))  # 40 s late
    info = await sched.schedules.get("ten")
    assert rec.runs == [("None", (START + timedelta(minutes=10)).timestamp())]
    assert info.next_fire == START + timedelta(minutes=20)
    assert info.last_fire == START + timedelta(minutes=10)


async def test_each_occurrence_has_the_name_and_time_as_its_key(
    make: Make, clock: FakeClock
) -> None:
    sched = make()
    await sched.start()
    await sched.schedules.create("k", "*/5 * * * *", "tick")
    await step_to(sched, clock, START + timedelta(minutes=5))
    [job] = await occurrences(sched, "k")
    fire = (START + timedelta(minutes=5)).timestamp()
    assert job.idempotency_key == f"k:{fire}" == occurrence_key("k", fire)
    assert (job.fire_ts, job.state) == (fire, JobState.SUCCESS)


async def test_two_schedulers_racing_the_same_tick_produce_one_job(
    make: Make, clock: FakeClock
) -> None:
    a, b = make(), make()
    await a.start()
    await b.start()
    await a.schedules.create("race", timedelta(minutes=1), "tick")
    for minute in range(1, 6):
        clock.set(START + timedelta(minutes=minute))
        await asyncio.gather(a.wait_idle(), b.wait_idle())
    jobs = await occurrences(a, "race")
    assert [j.fire_ts for j in jobs] == [
        (START + timedelta(minutes=m)).timestamp() for m in range(1, 6)
    ]


# --- catch-up ------------------------------------------------------------------------------


async def _downtime(
    make: Make,
    clock: FakeClock,
    policy: str,
    down: timedelta,
    every: timedelta = HOUR,
    *,
    fn: str = "tick",
    lease: timedelta | None = None,
    idle: bool = True,
    **kw: Any,
) -> Scheduler:
    """Create schedule "s", stop, stay down for ``down``, start again (and, with ``idle``,
    wait until nothing is due or running)."""
    a = make()
    await a.start()
    await a.schedules.create("s", every, fn, catch_up=policy, **kw)
    await a.stop()
    clock.set(START + down)
    b = make() if lease is None else make(lease=lease)
    await b.start()
    if idle:
        await b.wait_idle()
    return b


async def test_catch_up_skip_drops_the_backlog(make: Make, clock: FakeClock, rec: Recorder) -> None:
    b = await _downtime(make, clock, "skip", timedelta(hours=5, minutes=30))
    info = await b.schedules.get("s")
    assert rec.runs == []
    assert info.next_fire == START + 6 * HOUR
    assert info.missed == 5


async def test_catch_up_skip_still_fires_a_time_reached_just_late(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    await _downtime(make, clock, "skip", timedelta(hours=5, seconds=20))
    assert rec.runs == [("None", (START + 5 * HOUR).timestamp())]


async def test_catch_up_fire_once_runs_once_for_the_whole_backlog(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    b = await _downtime(make, clock, "fire_once", timedelta(hours=5, minutes=30))
    assert rec.runs == [("None", (START + 5 * HOUR).timestamp())]
    info = await b.schedules.get("s")
    assert (info.next_fire, info.missed) == (START + 6 * HOUR, 4)


async def test_catch_up_fire_all_runs_every_missed_time_oldest_first(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    await _downtime(make, clock, "fire_all", timedelta(hours=5, minutes=30))
    assert rec.runs == [("None", (START + h * HOUR).timestamp()) for h in range(1, 6)]


@pytest.mark.parametrize("overlap", ["skip", "buffer_one"])
async def test_catch_up_fire_all_starts_each_missed_time_only_after_the_previous_ended(
    make: Make, clock: FakeClock, rec: Recorder, overlap: str
) -> None:
    """The backlog is materialized at once, but only the oldest occurrence is runnable; the
    others are held and released one by one, each when the one before it ends. An action
    that waits on a gate per fire time shows the order of starts and ends."""
    sched = await _downtime(
        make, clock, "fire_all", timedelta(hours=3, minutes=30), overlap=overlap,
        lease=timedelta(hours=1), fn="step", idle=False,
    )  # fmt: skip
    times = [(START + h * HOUR).timestamp() for h in (1, 2, 3)]
    expected: list[tuple[str, float]] = []
    for i, t in enumerate(times):
        expected.append(("start", t))
        await until(lambda: len(rec.steps) == len(expected), 5, f"run {i + 1} to start")
        await settle(sched)
        assert rec.steps == expected  # started only now, after the previous one ended
        jobs = await occurrences(sched, "s")
        assert [j.fire_ts for j in jobs] == times
        assert [j.state for j in jobs] == (
            [JobState.SUCCESS] * i + [JobState.IN_PROGRESS] + [JobState.HELD] * (2 - i)
        )  # held, not merely not due
        rec.step_gates[t].set()
        expected.append(("end", t))
    await sched.wait_idle()
    assert rec.steps == expected
    assert [j.state for j in await occurrences(sched, "s")] == [JobState.SUCCESS] * 3


async def test_catch_up_fire_all_stays_within_the_window(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    await _downtime(
        make, clock, "fire_all", timedelta(hours=5, minutes=30), catchup_window=timedelta(hours=2)
    )
    assert [f for _, f in rec.runs] == [(START + h * HOUR).timestamp() for h in (4, 5)]


async def test_catch_up_fire_all_is_capped_at_1000(make: Make, clock: FakeClock) -> None:
    b = await _downtime(
        make, clock, "fire_all", timedelta(hours=1), every=timedelta(seconds=1), overlap="allow_all"
    )
    jobs = await occurrences(b, "s")
    assert len(jobs) == 1000
    assert jobs[-1].fire_ts == (START + HOUR).timestamp()
    info = await b.schedules.get("s")
    assert (info.missed, info.next_fire) == (3600 - 1000, START + HOUR + timedelta(seconds=1))


# --- catch-up across a DST night (a cron in Europe/London) ----------------------------------

# "30 0-3 * * *" fires at 00:30, 01:30, 02:30 and 03:30 London time. On 2026-03-29 the clocks
# jump from 01:00 GMT to 02:00 BST (01:30 never happens); on 2026-10-25 they go back from
# 02:00 BST to 01:00 GMT (01:30 happens twice and fires once, the first time, in BST).
DST_CRON = "30 0-3 * * *"
LONDON = "Europe/London"


def utc(month: int, day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, month, day, hour, minute, second, tzinfo=UTC)


SPRING_CREATED = utc(3, 28, 22)
"""Created the evening before; down over the night."""
SPRING = [utc(3, 29, 0, 30), utc(3, 29, 1, 30), utc(3, 29, 2, 30)]
"""00:30 GMT, 02:30 BST, 03:30 BST: in UTC 00:30, 01:30, 02:30 (no 01:30 local, and no run
at the jump to 02:00 BST)."""
SPRING_NEXT = utc(3, 29, 23, 30)  # 00:30 BST on the 30th
AUTUMN_CREATED = utc(10, 24, 22)
AUTUMN = [utc(10, 24, 23, 30), utc(10, 25, 0, 30), utc(10, 25, 2, 30), utc(10, 25, 3, 30)]
"""00:30 BST, 01:30 BST, 02:30 GMT, 03:30 GMT: the second 01:30 (01:30 UTC) is no fire time."""
AUTUMN_NEXT = utc(10, 26, 0, 30)  # 00:30 GMT on the 26th


@pytest.mark.parametrize(
    ("created", "policy", "down_until", "fired", "next_fire"),
    [
        # Spring forward.
        (SPRING_CREATED, "fire_all", utc(3, 29, 3), SPRING, SPRING_NEXT),
        (SPRING_CREATED, "fire_once", utc(3, 29, 3), SPRING[-1:], SPRING_NEXT),
        (SPRING_CREATED, "skip", utc(3, 29, 3), [], SPRING_NEXT),
        # Back just after 03:30 BST: skip still runs the latest time, only that one.
        (SPRING_CREATED, "skip", utc(3, 29, 2, 30, 20), SPRING[-1:], SPRING_NEXT),
        # Back just after the jump (02:00:20 BST): the jump is no fire time, nothing is
        # within the grace, and the next time is 02:30 BST.
        (SPRING_CREATED, "skip", utc(3, 29, 1, 0, 20), [], utc(3, 29, 1, 30)),
        (SPRING_CREATED, "fire_once", utc(3, 29, 1, 0, 20), SPRING[:1], utc(3, 29, 1, 30)),
        # Fall back.
        (AUTUMN_CREATED, "fire_all", utc(10, 25, 4), AUTUMN, AUTUMN_NEXT),
        (AUTUMN_CREATED, "fire_once", utc(10, 25, 4), AUTUMN[-1:], AUTUMN_NEXT),
        (AUTUMN_CREATED, "skip", utc(10, 25, 4), [], AUTUMN_NEXT),
        (AUTUMN_CREATED, "skip", utc(10, 25, 3, 30, 20), AUTUMN[-1:], AUTUMN_NEXT),
        # Back during the second 01:00-02:00 (GMT), after its 01:30: the latest fire time is
        # still the first 01:30 (BST), and the repeated one does not fire.
        (AUTUMN_CREATED, "fire_once", utc(10, 25, 1, 45), AUTUMN[1:2], utc(10, 25, 2, 30)),
        # 01:10 GMT, before the repeated 01:30 comes round on the wall clock: the latest fire
        # time is still the first 01:30 (00:30 UTC), not 00:30 BST.
        (AUTUMN_CREATED, "fire_once", utc(10, 25, 1, 10), AUTUMN[1:2], utc(10, 25, 2, 30)),
        (AUTUMN_CREATED, "skip", utc(10, 25, 1, 30, 20), [], utc(10, 25, 2, 30)),
        (AUTUMN_CREATED, "fire_all", utc(10, 25, 1, 45), AUTUMN[:2], utc(10, 25, 2, 30)),
    ],
)
async def test_catch_up_of_a_london_cron_over_a_dst_night(
    make: Make,
    clock: FakeClock,
    rec: Recorder,
    created: datetime,
    policy: str,
    down_until: datetime,
    fired: list[datetime],
    next_fire: datetime,
) -> None:
    clock.set(created)
    a = make()
    await a.start()
    info = await a.schedules.create("dst", DST_CRON, "tick", tz=LONDON, catch_up=policy)
    assert info.next_fire == (SPRING if created == SPRING_CREATED else AUTUMN)[0]
    await a.stop()
    clock.set(down_until)  # the scheduler was down over the backlog
    b = make()
    await b.start()
    await b.wait_idle()
    jobs = await occurrences(b, "dst")
    assert [datetime.fromtimestamp(j.fire_ts, UTC) for j in jobs] == fired
    assert [j.state for j in jobs] == [JobState.SUCCESS] * len(fired)
    # They ran in that order (oldest first), each once.
    assert [datetime.fromtimestamp(f, UTC) for _, f in rec.runs if f is not None] == fired
    assert (await b.schedules.get("dst")).next_fire == next_fire


# --- overlap -------------------------------------------------------------------------------


async def _overlapping(make: Make, clock: FakeClock, rec: Recorder, overlap: str) -> Scheduler:
    sched = make(lease=timedelta(hours=1))  # the first run holds its lease throughout
    await sched.start()
    await sched.schedules.create("o", timedelta(minutes=1), "slow", "x", overlap=overlap)
    clock.set(START + timedelta(minutes=1))
    await asyncio.wait_for(rec.started.wait(), 5)
    for m in (2, 3):
        clock.set(START + timedelta(minutes=m))
        await asyncio.sleep(0)
        await settle(sched)
    return sched


async def test_overlap_skip_counts_skipped_times(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    sched = await _overlapping(make, clock, rec, "skip")
    assert len(await occurrences(sched, "o")) == 1
    assert (await sched.schedules.get("o")).skipped == 2


async def test_overlap_buffer_one_keeps_one_waiting(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    sched = await _overlapping(make, clock, rec, "buffer_one")
    jobs = await occurrences(sched, "o")
    assert [j.state for j in jobs] == [JobState.IN_PROGRESS, JobState.HELD]
    assert (await sched.schedules.get("o")).skipped == 1
    rec.gates["x"].set()
    await sched.wait_idle()
    jobs = await occurrences(sched, "o")
    assert [j.state for j in jobs] == [JobState.SUCCESS, JobState.SUCCESS]
    assert [f for _, f in rec.runs] == [(START + timedelta(minutes=m)).timestamp() for m in (1, 2)]


async def test_overlap_allow_all_runs_them_together(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    sched = await _overlapping(make, clock, rec, "allow_all")
    jobs = await occurrences(sched, "o")
    assert [j.state for j in jobs] == [JobState.IN_PROGRESS] * 3


async def test_overlap_cancel_other_cancels_the_pending_previous(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    sched = make(max_concurrency=1, lease=timedelta(hours=1))
    await sched.start()
    await sched.run_after(0, "slow", "hog")  # takes the only action slot
    await asyncio.wait_for(rec.started.wait(), 5)
    await sched.schedules.create("o", timedelta(minutes=1), "slow", "x", overlap="cancel_other")
    for m in (1, 2):
        clock.set(START + timedelta(minutes=m))
        await settle(sched)
    jobs = await occurrences(sched, "o")
    assert [j.state for j in jobs] == [JobState.CANCELED, JobState.PENDING]


# --- pause, resume, trigger, backfill, delete ----------------------------------------------


async def test_pause_then_resume_does_not_replay_paused_time(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    sched = make()
    await sched.start()
    await sched.schedules.create("p", timedelta(minutes=10), "tick", catch_up="fire_all")
    assert await sched.schedules.pause("p")
    assert not await sched.schedules.pause("p")
    await step_to(sched, clock, START + timedelta(minutes=35))
    assert rec.runs == []
    assert await sched.schedules.resume("p")
    info = await sched.schedules.get("p")
    assert (info.paused, info.next_fire) == (False, START + timedelta(minutes=40))
    await step_to(sched, clock, START + timedelta(minutes=40))
    assert [f for _, f in rec.runs] == [(START + timedelta(minutes=40)).timestamp()]


async def test_trigger_runs_now_once(make: Make, clock: FakeClock, rec: Recorder) -> None:
    sched = make()
    await sched.start()
    await sched.schedules.create("t", "0 0 1 1 *", "tick", "manual")
    job_id = await sched.schedules.trigger("t")
    await sched.wait_idle()
    assert rec.runs == [("manual", START.timestamp())]
    job = await sched.get_job(job_id)
    assert job is not None
    assert job.state is JobState.SUCCESS


async def test_backfill_runs_missing_times_and_never_repeats_one(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    sched = make()
    await sched.start()
    await sched.schedules.create("b", timedelta(minutes=10), "tick")
    await step_to(sched, clock, START + timedelta(minutes=10))
    await step_to(sched, clock, START + timedelta(minutes=20))
    created = await sched.schedules.backfill(
        "b", START - timedelta(minutes=30), START + timedelta(minutes=20)
    )
    await sched.wait_idle()
    assert len(created) == 4  # -30, -20, -10, 0; +10 and +20 already ran
    fired = sorted(f for _, f in rec.runs if f is not None)
    assert fired == [(START + timedelta(minutes=m)).timestamp() for m in range(-30, 30, 10)]
    again = await sched.schedules.backfill(
        "b", START - timedelta(minutes=30), START + timedelta(minutes=20)
    )
    assert again == []


async def test_delete_cancels_pending_occurrences(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    sched = make()
    await sched.start()
    await sched.schedules.create("d", "0 * * * *", "tick", "d", jitter=timedelta(minutes=30))
    first, second = (START + HOUR).timestamp(), (START + 2 * HOUR).timestamp()
    # The jitter is a pure function of (name, time): these two are known in advance.
    first_delay, second_delay = (
        expected_jitter("d", first, 1800.0),
        expected_jitter("d", second, 1800.0),
    )
    assert 0 < first_delay < 1800
    assert 0 < second_delay < 1800
    # The first occurrence is materialized at its fire time and runs once its jitter passed.
    clock.set(first)
    await sched.wait_idle()
    assert rec.runs == []
    clock.set(first + first_delay)
    await sched.wait_idle()
    # The second is materialized at its fire time and held back by its jitter.
    clock.set(second)
    await sched.wait_idle()
    ran, held = await occurrences(sched, "d")
    assert (ran.fire_ts, ran.state) == (first, JobState.SUCCESS)
    assert (held.fire_ts, held.state, held.next_ts) == (
        second,
        JobState.PENDING,
        second + second_delay,
    )
    assert rec.runs == [("d", first)]
    # Delete cancels the pending one (and only that one), so it never runs.
    assert await sched.schedules.delete("d") == 1
    states = {j.id: j.state for j in await occurrences(sched, "d")}
    assert states == {ran.id: JobState.SUCCESS, held.id: JobState.CANCELED}
    with pytest.raises(ScheduleNotFound):
        await sched.schedules.get("d")
    clock.set(second + 3600)
    await sched.wait_idle()
    assert rec.runs == [("d", first)]
    assert [(j.id, j.state) for j in await occurrences(sched, "d")] == [
        (ran.id, JobState.SUCCESS),
        (held.id, JobState.CANCELED),
    ]


# --- time zones and jitter -----------------------------------------------------------------


async def _daily_fires(
    make: Make, clock: FakeClock, rec: Recorder, expr: str, tz: str, start: datetime, days: int
) -> list[datetime]:
    clock.set(start)
    sched = make()
    await sched.start()
    await sched.schedules.create("z", expr, "tick", tz=tz)
    for _ in range(days * 24 * 4):  # step 15 minutes at a time
        clock.advance(timedelta(minutes=15))
        await sched.wait_idle()
    return [datetime.fromtimestamp(f, ZoneInfo(tz)) for _, f in rec.runs if f is not None]


async def test_a_local_time_that_happens_twice_fires_once(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    start = datetime(2026, 10, 31, 12, 0, tzinfo=UTC)
    fires = await _daily_fires(make, clock, rec, "30 1 * * *", "America/New_York", start, 3)
    assert [f.isoformat() for f in fires] == [
        "2026-11-01T01:30:00-04:00",  # the first 01:30 (EDT) only
        "2026-11-02T01:30:00-05:00",
        "2026-11-03T01:30:00-05:00",
    ]


async def test_a_local_time_that_does_not_exist_is_skipped(
    make: Make, clock: FakeClock, rec: Recorder
) -> None:
    start = datetime(2026, 3, 7, 12, 0, tzinfo=UTC)
    fires = await _daily_fires(make, clock, rec, "30 2 * * *", "America/New_York", start, 3)
    assert [f.isoformat() for f in fires] == [
        "2026-03-09T02:30:00-04:00",  # 2026-03-08 02:30 never happened in New York
        "2026-03-10T02:30:00-04:00",
    ]


async def test_jitter_is_seeded_by_name_and_time_and_recorded(make: Make, clock: FakeClock) -> None:
    sched = make()
    await sched.start()
    await sched.schedules.create("j", timedelta(minutes=10), "tick", jitter=timedelta(minutes=5))
    for m in (10, 20):
        clock.set(START + timedelta(minutes=m))
        await sched.wait_idle()
    jobs = await occurrences(sched, "j")
    assert len(jobs) == 2
    for job in jobs:
        assert job.fire_ts is not None
        assert job.jitter is not None
        expected = expected_jitter("j", job.fire_ts, 300.0)
        assert job.jitter == pytest.approx(expected)
        assert 0 <= job.jitter < 300
        assert job.next_ts == pytest.approx(job.fire_ts + expected)
    assert jobs[0].jitter != jobs[1].jitter


# --- bad input and transactions ------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "words"),
    [
        (("x", "0 25 * * *", "tick"), {}, InvalidSchedule, "hour field"),
        (("x", "0 9 * * *", "tick"), {"tz": "Mars/Olympus"}, InvalidSchedule, "Mars/Olympus"),
        (("x", timedelta(0), "tick"), {}, InvalidSchedule, "positive"),
        (("x", timedelta(minutes=-5), "tick"), {}, InvalidSchedule, "positive"),
        (("x", "0 9 * * *", "nope"), {}, UnknownFunction, "nope"),
        (("x", "0 9 * * *", "tick"), {"overlap": "sometimes"}, InvalidSchedule, "overlap"),
        (("x", "0 9 * * *", "tick"), {"catch_up": "always"}, InvalidSchedule, "catch_up"),
        (("", "0 9 * * *", "tick"), {}, InvalidSchedule, "name"),
        (("x", 42, "tick"), {}, InvalidSchedule, "spec"),
    ],
)
async def test_bad_schedules_are_refused_and_nothing_is_written(
    make: Make, args: tuple[Any, ...], kwargs: dict[str, Any], error: type[Exception], words: str
) -> None:
    sched = make()
    await sched.start()
    with pytest.raises(error, match=words):
        await sched.schedules.create(*args, **kwargs)
    assert await sched.schedules.list() == []


async def test_unknown_names_and_reversed_backfill_are_clear_errors(make: Make) -> None:
    sched = make()
    await sched.start()
    for call in (
        sched.schedules.pause("ghost"),
        sched.schedules.resume("ghost"),
        sched.schedules.trigger("ghost"),
        sched.schedules.delete("ghost"),
        sched.schedules.get("ghost"),
    ):
        with pytest.raises(ScheduleNotFound, match="ghost"):
            await call
    await sched.schedules.create("b", HOUR, "tick")
    with pytest.raises(InvalidSchedule, match="before its start"):
        await sched.schedules.backfill("b", START, START - HOUR)
    with pytest.raises(DuplicateName):
        await sched.schedules.create("b", HOUR, "tick")


async def test_a_row_and_its_schedule_commit_or_roll_back_together(make: Make) -> None:
    sched = make()
    await sched.start()
    async with sched.transaction() as ctx:
        await ctx.db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    with pytest.raises(RuntimeError):  # noqa: PT012 (the body rolls back)
        async with sched.transaction() as ctx:
            await ctx.db.execute("INSERT INTO notes (id, body) VALUES (1, 'hi')")
            await ctx.scheduler.schedules.create("n", HOUR, "tick")
            raise RuntimeError("changed my mind")
    assert await sched.schedules.list() == []
    async with sched.reader() as db:
        row = await (await db.execute("SELECT count(*) FROM notes")).fetchone()
    assert row[0] == 0


async def test_start_delays_the_first_fire_and_anchors_an_interval(
    make: Make, clock: FakeClock
) -> None:
    sched = make()
    await sched.start()
    begin = START + timedelta(hours=5, minutes=7)
    every = await sched.schedules.create("i", timedelta(hours=2), "tick", start=begin)
    assert every.next_fire == begin  # not START + 1h07 from the same lattice
    cron = await sched.schedules.create("c", "0 9 * * *", "tick", start=START + timedelta(hours=12))
    assert cron.next_fire == datetime(2030, 6, 2, 9, 0, tzinfo=UTC)  # not 2030-06-01 09:00
    past = await sched.schedules.create("p", "0 * * * *", "tick", start=START - HOUR)
    assert past.next_fire == START + HOUR
