"""Typed job arguments and function aliases, on every store: a registration's ``args`` type is
checked and encoded at enqueue and decoded before its handler runs; older stored jobs (plain
dicts, old names) still run."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

import pytest

from scheduler import (
    DuplicateName,
    InvalidArgument,
    JobState,
    Registry,
    Scheduler,
    cron_jobs,
)
from scheduler.testing import FakeClock
from tests.scheduler.helpers import scheduler_maker

if TYPE_CHECKING:
    from tests.scheduler.stores import StoreFactory

START = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)


class Tone(StrEnum):
    LOUD = "loud"
    QUIET = "quiet"


@dataclass(frozen=True, slots=True)
class Where:
    channel: int
    thread: int | None = None


@dataclass(frozen=True, slots=True)
class Ping:
    """Every kind of field a typed argument may have."""

    who: int
    at: float
    where: Where
    tone: Tone = Tone.QUIET
    tags: tuple[str, ...] = ()
    extra: dict[str, int] = field(default_factory=dict)
    mode: Literal["once", "always"] = "once"
    note: str | None = None
    anything: Any = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an ``on_complete`` callback receives, as a type."""

    job_id: int
    context: Any
    result: dict[str, Any]


Make = Callable[..., Scheduler]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
async def make(stores: StoreFactory, clock: FakeClock) -> AsyncIterator[Make]:
    async with scheduler_maker(stores, clock=clock) as make:
        yield make


def typed_registry(seen: list[Any]) -> Registry:
    """``ping`` (an action) and ``note`` (a mutation), both taking a :class:`Ping`."""
    registry = Registry()

    @registry.action("ping", args=Ping)
    async def ping(ctx: Any, args: Ping) -> int:
        seen.append(args)
        return args.who

    @registry.mutation("note", args=Ping, aliases=("notes:old",))
    async def note(ctx: Any, args: Ping) -> None:
        seen.append(args)

    return registry


PING = Ping(7, 1.5, Where(3), Tone.LOUD, ("a", "b"), {"n": 1}, "always", "hi", [1, {"x": None}])
PING_STORED = {
    "who": 7,
    "at": 1.5,
    "where": {"channel": 3, "thread": None},
    "tone": "loud",
    "tags": ["a", "b"],
    "extra": {"n": 1},
    "mode": "always",
    "note": "hi",
    "anything": [1, {"x": None}],
}


async def stored_args(sched: Scheduler, job_id: int) -> Any:
    async with sched.reader() as db:
        cur = await db.execute("SELECT args FROM scheduler_job_args WHERE job_id = ?", (job_id,))
        row = await cur.fetchone()
    assert row is not None
    return json.loads(row[0])


async def test_a_typed_handler_gets_an_instance_and_the_job_stores_plain_fields(
    make: Make,
) -> None:
    seen: list[Any] = []
    async with make(typed_registry(seen)) as sched:
        action = await sched.enqueue("ping", PING)
        mutation = await sched.enqueue("note", PING)
        assert await stored_args(sched, action) == PING_STORED
        assert await stored_args(sched, mutation) == PING_STORED
        await sched.wait_idle()
        job = await sched.get_job(action)
    assert seen == [PING, PING]
    assert all(type(s) is Ping and type(s.where) is Where for s in seen)
    assert type(seen[0].tone) is Tone
    assert seen[0].tags == ("a", "b")
    assert job is not None
    assert job.state == JobState.SUCCESS
    assert job.result == 7


async def test_a_mapping_of_the_fields_is_checked_and_stored_like_an_instance(
    make: Make,
) -> None:
    seen: list[Any] = []
    async with make(typed_registry(seen)) as sched:
        given = {**PING_STORED, "at": 1}  # an int where a float goes is taken
        job_id = await sched.enqueue("ping", given)
        assert await stored_args(sched, job_id) == {**PING_STORED, "at": 1.0}
        await sched.wait_idle()
    assert seen == [
        Ping(7, 1.0, Where(3), Tone.LOUD, ("a", "b"), {"n": 1}, "always", "hi", [1, {"x": None}])
    ]


BAD_ARGS = [
    (None, "is missing 'who', 'at', 'where'"),
    ({"who": 7, "at": 1.0}, "is missing 'where'"),
    ({**PING_STORED, "whom": 8}, "has no field 'whom'"),
    ({**PING_STORED, "who": "7"}, "Ping.who must be an int, got '7'"),
    ({**PING_STORED, "who": True}, "Ping.who must be an int"),
    ({**PING_STORED, "at": float("nan")}, "Ping.at must be a finite number"),
    ({**PING_STORED, "where": {"channel": 3, "thread": "x"}}, r"Ping.where.thread must be"),
    ({**PING_STORED, "where": 3}, "Ping.where must be a Where"),
    ({**PING_STORED, "tone": "shout"}, "Ping.tone must be a Tone"),
    ({**PING_STORED, "tags": "ab"}, r"Ping.tags must be a tuple of a str"),
    ({**PING_STORED, "tags": ["a", 2]}, r"Ping.tags\[1\] must be a str"),
    ({**PING_STORED, "extra": {"n": "1"}}, r"Ping.extra\['n'\] must be an int"),
    ({**PING_STORED, "mode": "twice"}, "Ping.mode must be one of 'once', 'always'"),
    (Where(3), "must be a Ping or a mapping of its fields"),
    (Ping(7, 1.0, Where("3")), "Ping.where.channel must be an int"),  # type: ignore[arg-type]
    ("ping", "must be a Ping or a mapping of its fields"),
]


@pytest.mark.parametrize(("args", "words"), BAD_ARGS)
async def test_arguments_that_do_not_fit_the_type_are_refused_at_enqueue(
    make: Make, args: Any, words: str
) -> None:
    async with make(typed_registry([])) as sched:
        for enqueue in (
            lambda: sched.enqueue("ping", args),
            lambda: sched.schedules.create("every-hour", timedelta(hours=1), "ping", args),
        ):
            with pytest.raises(InvalidArgument, match=words):
                await enqueue()
        async with sched.transaction() as ctx:  # and in a transaction, which stays usable
            with pytest.raises(InvalidArgument, match="args for 'note'"):
                await ctx.scheduler.run_after(0, "note", args)
        assert await sched.list_jobs() == []
        assert await sched.schedules.list() == []


async def test_jobs_stored_before_the_type_existed_still_decode(
    stores: StoreFactory, clock: FakeClock
) -> None:
    """Jobs written by a release whose function took a plain dict (with a key since dropped,
    and without a field since added with a default) run with the typed handler."""
    untyped = Registry()

    @untyped.action("ping")
    async def old_ping(ctx: Any, args: Any) -> None:
        raise AssertionError("the old release does not run here")

    later = START + timedelta(hours=1)
    old = {"who": 7, "at": 2, "where": {"channel": 3}, "dropped_since": "x"}
    async with scheduler_maker(stores, clock=clock) as make:
        async with make(untyped) as sched:
            job_id = await sched.run_at(later, "ping", old)
            assert await stored_args(sched, job_id) == old
        seen: list[Any] = []
        async with make(typed_registry(seen)) as sched:
            clock.set(later)
            await sched.wait_idle()
            job = await sched.get_job(job_id)
    assert seen == [Ping(7, 2.0, Where(3))]
    assert job is not None
    assert job.state == JobState.SUCCESS


async def test_a_stored_value_that_does_not_decode_fails_its_job_at_once(
    stores: StoreFactory, clock: FakeClock
) -> None:
    untyped = Registry()

    @untyped.mutation("note")
    async def old_note(ctx: Any, args: Any) -> None: ...

    later = START + timedelta(hours=1)
    async with scheduler_maker(stores, clock=clock) as make:
        async with make(untyped) as sched:
            job_id = await sched.run_at(later, "note", {"who": "seven"})
        seen: list[Any] = []
        async with make(typed_registry(seen)) as sched:
            clock.set(later)
            await sched.wait_idle()
            job = await sched.get_job(job_id)
    assert seen == []
    # A mutation gets four attempts for a passing error; stored data does not pass.
    assert job is not None
    assert job.state == JobState.FAILED
    assert job.attempts == 1
    assert "the stored arguments of 'note'" in (job.error or "")


async def test_run_mutation_by_name_checks_and_decodes_like_a_job(make: Make) -> None:
    seen: list[Any] = []
    registry = typed_registry(seen)
    errors: list[str] = []

    @registry.action("call-note")
    async def call_note(ctx: Any, args: Any) -> None:
        await ctx.run_mutation("note", PING_STORED)
        try:
            await ctx.run_mutation("note", {"who": 1})
        except InvalidArgument as exc:
            errors.append(str(exc))

    async with make(registry) as sched:
        await sched.enqueue("call-note")
        await sched.wait_idle()
    assert seen == [PING]
    assert errors == ["args for 'note': Ping is missing 'at', 'where'"]


async def test_schedules_and_crons_of_a_typed_function_store_fields_and_decode(
    make: Make, clock: FakeClock
) -> None:
    seen: list[Any] = []
    crons = cron_jobs()
    crons.interval("static", timedelta(minutes=30), "ping", Ping(1, 0.0, Where(1)))
    async with make(typed_registry(seen), crons=crons) as sched:
        await sched.schedules.create("runtime", timedelta(hours=1), "ping", PING)
        assert (await sched.schedules.get("runtime")).args == PING_STORED
        for _ in range(2):
            clock.advance(timedelta(minutes=30))
            await sched.wait_idle()
    assert sorted(seen, key=lambda p: p.who) == [Ping(1, 0.0, Where(1))] * 2 + [PING]


async def test_a_cron_whose_arguments_do_not_fit_is_refused_at_boot(make: Make) -> None:
    crons = cron_jobs()
    crons.interval("static", timedelta(minutes=30), "ping", Where(1))
    with pytest.raises(InvalidArgument, match="must be a Ping"):
        async with make(typed_registry([]), crons=crons):
            pass


async def test_an_on_complete_callback_may_take_a_type(make: Make) -> None:
    registry = typed_registry([])
    outcomes: list[Outcome] = []

    @registry.mutation("done", args=Outcome)
    async def done(ctx: Any, args: Outcome) -> None:
        outcomes.append(args)

    async with make(registry) as sched:
        job_id = await sched.enqueue("ping", PING, on_complete="done", context={"c": 1})
        await sched.wait_idle()
    assert outcomes == [Outcome(job_id, {"c": 1}, {"kind": "success", "value": 7})]


# --- aliases ---------------------------------------------------------------------------------


async def test_jobs_and_schedules_stored_under_an_old_name_run_under_the_new_one(
    stores: StoreFactory, clock: FakeClock
) -> None:
    old = Registry()

    @old.mutation("notes:old")
    async def old_note(ctx: Any, args: Any) -> None:
        raise AssertionError("the old release does not run here")

    later = START + timedelta(hours=1)
    async with scheduler_maker(stores, clock=clock) as make:
        async with make(old) as sched:
            job_id = await sched.run_at(later, "notes:old", PING_STORED)
            await sched.schedules.create("hourly", timedelta(hours=1), "notes:old", PING_STORED)
        seen: list[Any] = []
        async with make(typed_registry(seen)) as sched:
            clock.set(later)
            await sched.wait_idle()
            job = await sched.get_job(job_id)
            occurrences = [j for j in await sched.list_jobs() if j.id != job_id]
            again = await sched.enqueue("notes:old", PING)  # an enqueue under the old name
            await sched.wait_idle()
            renamed = await sched.get_job(again)
    assert seen == [PING, PING, PING]  # the stored job, the schedule's occurrence, the new one
    assert job is not None
    assert (job.fn, job.state) == ("notes:old", JobState.SUCCESS)
    assert [(j.fn, j.state) for j in occurrences] == [("note", JobState.SUCCESS)]
    assert renamed is not None
    assert (renamed.fn, renamed.state) == ("note", JobState.SUCCESS)


def test_an_alias_is_a_name_like_any_other() -> None:
    registry = typed_registry([])
    assert "notes:old" in registry
    assert registry.get("notes:old").name == "note"
    assert [r.name for r in registry] == ["ping", "note"]  # once each, not once per alias

    async def handler(ctx: Any, args: Any) -> None: ...

    with pytest.raises(DuplicateName, match="notes:old"):
        registry.mutation("other", aliases=["notes:old"])(handler)
    with pytest.raises(DuplicateName, match="'ping'"):
        registry.mutation("other", aliases=["ping"])(handler)
    with pytest.raises(DuplicateName, match="notes:old"):
        registry.mutation("notes:old")(handler)
    with pytest.raises(InvalidArgument, match="alias of itself"):
        registry.mutation("self", aliases=["self"])(handler)
    with pytest.raises(InvalidArgument, match="collection of names"):
        registry.mutation("other", aliases="notes:older")(handler)
    clash = Registry()
    clash.mutation("x", aliases=["ping"])(handler)
    with pytest.raises(DuplicateName, match="'ping'"):
        registry.merge(clash)


# --- what may be a type ----------------------------------------------------------------------


@dataclass(slots=True)
class Mutable:
    n: int


@dataclass(frozen=True, slots=True)
class WithASet:
    ids: set[int]


@dataclass(frozen=True, slots=True)
class WithATime:
    when: datetime


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (Mutable, "must be a frozen dataclass"),
        (dict, "must be a frozen dataclass type"),
        (WithASet, r"WithASet.ids: set\[int\] can't be stored"),
        (WithATime, "WithATime.when: .*datetime.* can't be stored"),
    ],
)
def test_a_type_that_cannot_round_trip_is_refused_at_registration(
    args: type[Any], words: str
) -> None:
    registry = Registry()

    async def handler(ctx: Any, args: Any) -> None: ...

    with pytest.raises(InvalidArgument, match=words):
        registry.action("x", args=args)(handler)
    assert "x" not in registry
