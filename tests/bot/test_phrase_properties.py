"""Hypothesis over the repeat phrases: whatever rule a generated phrase is read as, its
trigger keeps the scheduler's invariants in the announcement's zone — each time later than
``t``, the same answer all over ``[t, result)``, never a local time that doesn't exist, an
ambiguous local time once — and posts at the time of day the phrase names."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.parsing import InputError, parse_repeat

if TYPE_CHECKING:
    from scheduler.triggers import Cron, Interval

US = timedelta(microseconds=1)
ZONES = ["Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Europe/London", "UTC"]
DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
ORDINALS = ["first", "2nd", "third", "4th", "5th", "last"]

times = st.tuples(st.sampled_from([0, 1, 2, 3, 9, 12, 18, 23]), st.sampled_from([0, 15, 30, 45]))


@st.composite
def phrases(draw: st.DrawFn) -> tuple[str, set[tuple[int, int]]]:
    """A repeat phrase with its time(s) of day, and the (hour, minute) pairs it names."""
    hour, minute = draw(times)
    extra = draw(st.sampled_from([None, 6, 17]))
    hours = [hour] if extra is None or extra == hour else [hour, extra]
    clock = " and ".join(f"{h}:{minute:02d}" for h in hours)
    days = draw(st.lists(st.sampled_from(DAYS), min_size=1, max_size=3, unique=True))
    day_list = " and ".join(days)
    n = draw(st.integers(2, 12))
    body = draw(
        st.sampled_from(
            [
                "every day",
                "weekdays",
                "weekends",
                f"every {day_list}",
                f"every {n} days",
                f"every {n} weeks on {day_list}",
                f"biweekly on {day_list}",
                f"every {n} months on the {draw(st.integers(1, 31))}th",
                f"monthly on the {draw(st.integers(1, 31))}th",
                "last day of the month",
                f"the {draw(st.sampled_from(ORDINALS))} {days[0]} of the month",
                f"every {draw(st.sampled_from(ORDINALS))} and last {days[0]}",
                f"every {n} months on the last {days[0]}",
                "quarterly",
                "every year on december 24",
            ]
        )
    )
    return f"{body} at {clock}", {(h, minute) for h in hours}


@st.composite
def instants(draw: st.DrawFn) -> datetime:
    return draw(st.datetimes(datetime(2026, 1, 1), datetime(2030, 12, 31), timezones=st.just(UTC)))  # noqa: DTZ001 (hypothesis takes naive bounds)


MIN_ACCEPTED = 0.9
"""The share of generated phrases the parser must accept (all of them, when this was
written): a refusal is no failure of the invariants, so a parser that refused every phrase
would otherwise pass."""


def test_every_accepted_phrase_keeps_the_trigger_invariants() -> None:
    seen = {"generated": 0, "accepted": 0}

    @settings(max_examples=300, deadline=None)
    @given(
        data=st.data(),
        phrase=phrases(),
        zone_name=st.sampled_from(ZONES),
        now=instants(),
    )
    def check(
        data: st.DataObject, phrase: tuple[str, set[tuple[int, int]]], zone_name: str, now: datetime
    ) -> None:
        text, clocks = phrase
        zone = ZoneInfo(zone_name)
        seen["generated"] += 1
        try:
            rule = parse_repeat(text, now, zone, need_time=True)
        except InputError:
            return  # a refusal is fine here; the corpus says which ones must be accepted
        assert rule is not None
        seen["accepted"] += 1
        keeps_the_invariants(data, rule.trigger(zone, now), clocks, zone, now)

    check()
    assert seen["accepted"] >= MIN_ACCEPTED * seen["generated"], seen


def keeps_the_invariants(
    data: st.DataObject,
    trigger: Cron | Interval,
    clocks: set[tuple[int, int]],
    zone: ZoneInfo,
    now: datetime,
) -> None:
    """Each time ``trigger`` gives after an instant later than ``now`` is later than it and
    the same all over the span up to it, exists in ``zone``, is the first pass of an
    ambiguous wall time and is at one of ``clocks`` (hour, minute)."""
    t = now + data.draw(st.integers(0, 400 * 86400 * 10**6), label="offset") * US
    r = trigger.next_after(t)
    assert r > t
    span = (r - t) // US
    for u in {t, r - US, t + data.draw(st.integers(0, span - 1), label="u") * US}:
        assert trigger.next_after(u) == r
    chain = [r]
    for _ in range(6):
        chain.append(trigger.next_after(chain[-1]))
    assert all(a < b for a, b in itertools.pairwise(chain))
    for fire in chain:
        local = fire.astimezone(zone)
        wall = local.replace(tzinfo=None)
        # It exists (reading the wall time back gives the same instant) and is the first
        # pass of an ambiguous wall time; it is at a time of day the phrase names.
        assert wall.replace(tzinfo=zone, fold=0).astimezone(UTC) == fire
        assert (local.hour, local.minute) in clocks
        assert local.second == 0
    walls = [c.astimezone(zone).replace(tzinfo=None) for c in chain]
    assert len(set(walls)) == len(walls)
    p = trigger.latest_at_or_before(t)
    if p is not None:
        assert p <= t
        assert trigger.next_after(p) == r
