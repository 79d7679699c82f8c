"""Excluded spans of time on triggers (``exclude=``): the fire times are the trigger's own
ones minus those a span holds, checked against a brute-force oracle (the plain trigger's
times filtered by the spans), in both directions and in counts; the spec round trip; and a
schedule of each kind that steps over an excluded time on a FakeClock."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler import Registry, Scheduler
from scheduler.errors import InvalidSchedule
from scheduler.testing import FakeClock
from scheduler.triggers import Cron, Interval, trigger_from_spec

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.scheduler.stores import StoreFactory

US = timedelta(microseconds=1)
HOUR = timedelta(hours=1)
START = datetime(2030, 3, 28, 0, 0, tzinfo=UTC)
LONDON = ZoneInfo("Europe/London")


def plain_times(trigger: Cron | Interval, start: datetime, end: datetime) -> list[datetime]:
    """Every fire time of ``trigger`` in ``(start, end]``, walked one by one."""
    out = []
    t = trigger.next_after(start)
    while t <= end:
        out.append(t)
        t = trigger.next_after(t)
    return out


def held(spans: list[tuple[datetime, datetime]], t: datetime) -> bool:
    return any(a <= t <= b for a, b in spans)


def excluded_copy(
    trigger: Cron | Interval, spans: list[tuple[datetime, datetime]]
) -> Cron | Interval:
    if isinstance(trigger, Interval):
        return Interval(trigger.every, trigger.anchor, exclude=spans)
    return Cron(
        trigger.expr, trigger.tz_name, nth=trigger.nth or None, step=trigger.step, exclude=spans
    )


BASES = [
    Cron("0 9 * * *", "Europe/London"),
    Cron("*/30 * * * *", "America/New_York"),
    Cron("30 1 * * 0", "Europe/London"),  # the repeated hour of the fall-back Sunday
    Interval(timedelta(minutes=45), datetime(2030, 1, 1, 0, 7, tzinfo=UTC)),
    Interval(timedelta(days=1), datetime(2030, 1, 1, 17, 0, tzinfo=UTC)),
]
WINDOW_START = datetime(2030, 3, 25, tzinfo=UTC)  # around both 2030 spring changes
WINDOW = timedelta(days=10)


@st.composite
def spans(draw: st.DrawFn) -> list[tuple[datetime, datetime]]:
    out = []
    for _ in range(draw(st.integers(0, 6))):
        start = WINDOW_START + timedelta(
            minutes=draw(st.integers(0, WINDOW // timedelta(minutes=1)))
        )
        width = draw(st.sampled_from([0, 1, 30, 60 * 24 - 1, 60 * 30, 60 * 24 * 3]))
        start += draw(st.sampled_from([timedelta(0), timedelta(seconds=7), -US]))
        out.append((start, start + timedelta(minutes=width)))
    return out


@settings(max_examples=60, deadline=None)
@given(base=st.sampled_from(BASES), excluded=spans(), data=st.data())
def test_the_fire_times_are_the_plain_ones_no_span_holds(
    base: Cron | Interval, excluded: list[tuple[datetime, datetime]], data: st.DataObject
) -> None:
    trigger = excluded_copy(base, excluded)
    end = WINDOW_START + WINDOW
    expected = [t for t in plain_times(base, WINDOW_START, end) if not held(excluded, t)]
    assert plain_times(trigger, WINDOW_START, end) == expected
    # latest_at_or_before is the inverse, from any point, inside a span or not.
    minute = data.draw(st.integers(0, WINDOW // timedelta(minutes=1)))
    t = WINDOW_START + timedelta(minutes=minute)
    before = [f for f in expected if f <= t]
    p = trigger.latest_at_or_before(t)
    if before:
        assert p == before[-1]
        assert trigger.next_after(p) > t
    else:
        assert p is None or p <= WINDOW_START
    if isinstance(trigger, Interval):
        u = min(end, t + timedelta(hours=data.draw(st.integers(0, 24 * 12))))
        assert trigger.count_between(t, u) == sum(1 for f in expected if t < f <= u)


def test_spans_are_kept_in_utc_sorted_and_merged() -> None:
    a = datetime(2030, 12, 25, 0, 0, tzinfo=LONDON)
    b = datetime(2030, 12, 25, 23, 59, 59, 999_999, tzinfo=LONDON)
    c = datetime(2030, 12, 26, 0, 0, tzinfo=LONDON)  # touches the first: merged
    d = datetime(2031, 1, 1, 0, 0, tzinfo=LONDON)
    trigger = Cron("0 18 * * *", LONDON, exclude=[(d, d), (c, c + HOUR), (a, b)])
    assert trigger.exclude == (
        (a.astimezone(UTC), (c + HOUR).astimezone(UTC)),
        (d.astimezone(UTC), d.astimezone(UTC)),
    )
    assert trigger.describe() == "cron '0 18 * * *' (Europe/London) except 2 spans"
    assert Interval(HOUR, a, exclude=[(a, a)]).describe() == "every hour except 1 span"
    # Equality counts the spans.
    assert trigger != Cron("0 18 * * *", LONDON)
    assert trigger == Cron("0 18 * * *", "Europe/London", exclude=[(a, c + HOUR), (d, d)])


def test_a_skipped_christmas_and_a_skipped_week() -> None:
    daily = Cron("0 18 * * *", LONDON, exclude=[
        (datetime(2030, 12, 25, tzinfo=LONDON), datetime(2030, 12, 25, 23, 59, tzinfo=LONDON)),
        (datetime(2030, 12, 29, tzinfo=LONDON), datetime(2031, 1, 4, 23, 59, tzinfo=LONDON)),
    ])  # fmt: skip
    t = datetime(2030, 12, 23, 19, 0, tzinfo=LONDON)
    days = []
    for _ in range(4):
        t = daily.next_after(t)
        days.append(t.astimezone(LONDON).day)
    assert days == [24, 26, 27, 28]
    assert daily.next_after(datetime(2030, 12, 28, 19, tzinfo=LONDON)) == datetime(
        2031, 1, 5, 18, tzinfo=LONDON
    )
    assert daily.latest_at_or_before(datetime(2031, 1, 4, 20, tzinfo=LONDON)) == datetime(
        2030, 12, 28, 18, tzinfo=LONDON
    )


def test_every_fire_time_excluded_before_the_range_ends_is_none_back() -> None:
    t = datetime(2030, 1, 1, tzinfo=UTC)
    every = Interval(HOUR, t, exclude=[(datetime.min.replace(tzinfo=UTC), t)])
    assert every.latest_at_or_before(t) is None
    assert every.next_after(t - HOUR) == t + HOUR


@pytest.mark.parametrize(
    "trigger",
    [
        Cron("0 9 * * *", "Europe/London", exclude=[(START, START + HOUR)]),
        Cron("0 9 * * 4", "Europe/Paris", nth=(2, 4), exclude=[(START, START)]),
        Interval(
            timedelta(minutes=15), START, exclude=[(START, START), (START + HOUR, START + 2 * HOUR)]
        ),
    ],
    ids=repr,
)
def test_the_spec_keeps_the_spans(trigger: Cron | Interval) -> None:
    spec = trigger.to_spec()
    assert spec["exclude"] == [[a.isoformat(), b.isoformat()] for a, b in trigger.exclude]
    again = trigger_from_spec(json.loads(json.dumps(spec)))
    assert again == trigger
    assert again.to_spec() == spec
    assert "exclude" not in Cron("0 9 * * *").to_spec()


@pytest.mark.parametrize(
    ("exclude", "fragment"),
    [
        ([(START, START - US)], "ends before it starts"),
        ([(START.replace(tzinfo=None), START)], "naive"),
        ([(START,)], "(start, end) pairs"),
        ("2030-01-01", "pairs of (start, end)"),
        (5, "pairs of (start, end)"),
    ],
)
def test_bad_spans_are_refused(exclude: Any, fragment: str) -> None:
    with pytest.raises(InvalidSchedule) as info:
        Cron("0 9 * * *", exclude=exclude)
    assert fragment in str(info.value)
    with pytest.raises(InvalidSchedule):
        Interval(HOUR, START, exclude=exclude)


@pytest.mark.parametrize(
    ("exclude", "fragment"),
    [
        ("x", "must be a list"),
        ([["2030-01-01T00:00:00+00:00"]], "[start, end] pairs"),
        ([["2030-01-01T00:00:00+00:00", "soon"]], "not ISO 8601"),
        ([["2030-01-01T00:00:00", "2030-01-01T00:00:00"]], "naive"),
    ],
)
def test_bad_span_specs_are_refused(exclude: object, fragment: str) -> None:
    with pytest.raises(InvalidSchedule) as info:
        trigger_from_spec({"kind": "cron", "expr": "0 9 * * *", "exclude": exclude})
    assert fragment in str(info.value)


# --- a schedule fires around its excluded spans ---------------------------------------------


@pytest.fixture
async def sched(stores: StoreFactory) -> AsyncIterator[tuple[Scheduler, FakeClock, list[float]]]:
    runs: list[float] = []
    reg = Registry()

    @reg.mutation("tick")
    async def tick(ctx: Any, args: Any) -> None:
        runs.append(ctx.job.fire_ts)

    clock = FakeClock(START)
    s = Scheduler(stores.new(), reg, clock=clock)
    await s.start()
    yield s, clock, runs
    await s.stop(grace=0)


@pytest.mark.parametrize("kind", ["cron", "interval"])
async def test_a_schedule_never_fires_an_excluded_time(
    sched: tuple[Scheduler, FakeClock, list[float]], kind: str
) -> None:
    s, clock, runs = sched
    skipped = (START + 2 * HOUR, START + 3 * HOUR)  # both ends included
    if kind == "cron":
        trigger: Cron | Interval = Cron("0 * * * *", exclude=[skipped])
    else:
        trigger = Interval(HOUR, START, exclude=[skipped])
    info = await s.schedules.create("s", trigger, "tick", start=START + US)
    assert info.trigger == trigger
    assert info.next_fire == START + HOUR
    for h in range(1, 7):
        clock.set(START + h * HOUR)
        await s.wait_idle()
    assert runs == [(START + h * HOUR).timestamp() for h in (1, 4, 5, 6)]
    assert (await s.schedules.get("s")).next_fire == START + 7 * HOUR


@pytest.mark.parametrize("kind", ["cron", "interval"])
async def test_a_backlog_fired_whole_leaves_the_excluded_times_out(
    sched: tuple[Scheduler, FakeClock, list[float]], kind: str
) -> None:
    s, clock, runs = sched
    skipped = (START + 2 * HOUR, START + 3 * HOUR)
    if kind == "cron":
        trigger: Cron | Interval = Cron("0 * * * *", exclude=[skipped])
    else:
        trigger = Interval(HOUR, START, exclude=[skipped])
    await s.schedules.create("s", trigger, "tick", start=START + US, catch_up="fire_all")
    clock.set(START + 6 * HOUR)  # all six due at once
    await s.wait_idle()
    assert runs == [(START + h * HOUR).timestamp() for h in (1, 4, 5, 6)]
