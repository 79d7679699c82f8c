"""Tests for scheduler.triggers: DST-correct cron, exact intervals, validation, specs.

The cron oracle used throughout is independent of the implementation: a fire time is an
instant ``i`` whose local wall time matches the expression (checked by a plain Python
predicate per expression) and whose ``fold`` is 0 (first occurrence).  Walking UTC minute
by minute and applying that definition gives the exact expected fire times near every DST
transition.
"""

from __future__ import annotations

import functools
import itertools
import json
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.errors import InvalidSchedule, SchedulerError
from scheduler.triggers import (
    Cron,
    DateStep,
    Interval,
    Trigger,
    trigger_from_spec,
    validate_timezone,
)

if TYPE_CHECKING:
    from collections.abc import Callable

US = timedelta(microseconds=1)
MINUTE = timedelta(minutes=1)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


# --------------------------------------------------------------------------------------
# Oracle: naive wall-time predicates, one per expression (written independently of the
# parser, in Python's weekday numbering: Monday=0 ... Sunday=6).
# --------------------------------------------------------------------------------------


def _is_last_day(w: datetime) -> bool:
    return (w + timedelta(days=1)).day == 1


PREDICATES: dict[str, Callable[[datetime], bool]] = {
    "* * * * *": lambda w: True,
    "*/15 * * * *": lambda w: w.minute % 15 == 0,
    "*/30 * * * *": lambda w: w.minute in (0, 30),
    "30 1 * * *": lambda w: (w.hour, w.minute) == (1, 30),
    "30 2 * * *": lambda w: (w.hour, w.minute) == (2, 30),
    "45 1 * * *": lambda w: (w.hour, w.minute) == (1, 45),
    "0 0 * * *": lambda w: (w.hour, w.minute) == (0, 0),
    "30 23 * * *": lambda w: (w.hour, w.minute) == (23, 30),
    "0 9 * * 1-5": lambda w: (w.hour, w.minute) == (9, 0) and w.weekday() < 5,
    "0 0 1 * *": lambda w: (w.day, w.hour, w.minute) == (1, 0, 0),
    "0 12 L * *": lambda w: (w.hour, w.minute) == (12, 0) and _is_last_day(w),
    "@hourly": lambda w: w.minute == 0,
    "5,35 0-3 * * SUN": lambda w: w.minute in (5, 35) and w.hour <= 3 and w.weekday() == 6,
    "0 0 13 * 5": lambda w: (w.hour, w.minute) == (0, 0) and (w.day == 13 or w.weekday() == 4),
    "0 0,12 29 2 *": lambda w: w.minute == 0 and w.hour in (0, 12) and (w.month, w.day) == (2, 29),
}

ZONES = [
    "UTC",
    "America/New_York",
    "Europe/London",
    "Europe/Dublin",  # "negative DST" in the tz source
    "Australia/Lord_Howe",  # 30-minute DST shift
    "America/Santiago",  # transitions at local midnight
    "America/Havana",  # transitions at local midnight
    "Asia/Kathmandu",  # +05:45, no DST
    "Pacific/Apia",  # DST until 2021
    "Pacific/Chatham",  # +12:45 / +13:45
    "Antarctica/Casey",  # 3-hour jumps back and forth 2020-2022
]


def matches_at(expr: str, zone: ZoneInfo, instant: datetime) -> bool:
    """True iff ``instant`` is a fire time of ``expr`` in ``zone`` by the module's rules."""
    local = instant.astimezone(zone)
    return (
        local.fold == 0
        and local.second == 0
        and local.microsecond == 0
        and PREDICATES[expr](local.replace(tzinfo=None))
    )


@functools.cache
def transitions(zone_name: str) -> tuple[datetime, ...]:
    """UTC instants (to the second) where the zone's offset changes, 2020-2035."""
    zone = ZoneInfo(zone_name)
    found = []
    t = utc(2019, 12, 1)
    prev = t.astimezone(zone).utcoffset()
    while t < utc(2036, 1, 1):
        nxt = t + timedelta(days=1)
        off = nxt.astimezone(zone).utcoffset()
        if off != prev:
            lo, hi = t, nxt
            while hi - lo > timedelta(seconds=1):
                mid = lo + (hi - lo) / 2
                if mid.astimezone(zone).utcoffset() == prev:
                    lo = mid
                else:
                    hi = mid
            found.append(hi.replace(microsecond=0))
            prev = off
        t = nxt
    return tuple(found)


def expected_fires(expr: str, zone: ZoneInfo, lo: datetime, hi: datetime) -> list[datetime]:
    """Brute force: every fire time in (lo, hi], walking UTC minutes."""
    # Arithmetic on datetimes in a ZoneInfo is wall-clock arithmetic: work in UTC.
    lo, hi = lo.astimezone(UTC), hi.astimezone(UTC)
    i = lo.replace(second=0, microsecond=0) + MINUTE
    out = []
    while i <= hi:
        if matches_at(expr, zone, i):
            out.append(i)
        i += MINUTE
    return out


# --------------------------------------------------------------------------------------
# Property-based invariants for Cron
# --------------------------------------------------------------------------------------


@st.composite
def instant_near(draw: st.DrawFn, zone_name: str) -> datetime:
    """An aware instant in 2020-2035, often within hours of a DST transition, sometimes
    expressed in the zone itself (exercising fold=1 inputs)."""
    trans = transitions(zone_name)
    near_transition = draw(st.booleans())
    if trans and near_transition:
        base = draw(st.sampled_from(trans))
        if draw(st.booleans()):
            t = base + draw(st.integers(-300, 300)) * MINUTE
        else:
            t = base + draw(st.integers(-5 * 3600 * 10**6, 5 * 3600 * 10**6)) * US
    else:
        t = draw(
            st.datetimes(
                min_value=datetime(2020, 1, 1),  # noqa: DTZ001 (hypothesis takes naive bounds)
                max_value=datetime(2035, 12, 31),  # noqa: DTZ001 (hypothesis takes naive bounds)
                timezones=st.just(UTC),
            )
        )
    if draw(st.booleans()):
        t = t.astimezone(ZoneInfo(zone_name))
    return t


BRUTE_LIMIT = timedelta(hours=6)


@settings(max_examples=400, deadline=None)
@given(data=st.data(), zone_name=st.sampled_from(ZONES), expr=st.sampled_from(list(PREDICATES)))
def test_cron_invariants(data: st.DataObject, zone_name: str, expr: str) -> None:
    zone = ZoneInfo(zone_name)
    cron = Cron(expr, zone_name)
    t = data.draw(instant_near(zone_name), label="t")
    t_utc = t.astimezone(UTC)  # for arithmetic (aware arithmetic in a ZoneInfo is wall time)

    r = cron.next_after(t)
    assert r.tzinfo is UTC
    assert r > t
    assert matches_at(expr, zone, r), r.astimezone(zone)

    # No fire time is skipped: every u in [t, r) leads to r ...
    span = (r - t) // US
    inner = data.draw(st.integers(0, span - 1), label="u offset")
    for u in {t, r - US, t_utc + inner * US}:
        assert cron.next_after(u) == r
    # ... and (brute force, when the gap is short) no fire time lies strictly between.
    if r - t <= BRUTE_LIMIT:
        assert expected_fires(expr, zone, t, r) == [r]

    # Strictly increasing chain; no wall time produced twice; every element valid.
    chain = [r]
    for _ in range(5):
        chain.append(cron.next_after(chain[-1]))
    assert all(a < b for a, b in itertools.pairwise(chain))
    walls = [c.astimezone(zone).replace(tzinfo=None) for c in chain]
    assert len(set(walls)) == len(walls)
    assert all(matches_at(expr, zone, c) for c in chain)

    # latest_at_or_before is the inverse of next_after.
    p = cron.latest_at_or_before(t)
    assert p is not None
    assert p.tzinfo is UTC
    assert p <= t
    assert matches_at(expr, zone, p)
    assert cron.next_after(p) == r
    assert cron.latest_at_or_before(r) == r
    assert cron.latest_at_or_before(r - US) == p
    if t - p <= BRUTE_LIMIT:
        assert expected_fires(expr, zone, p - US, t) == [p]


# Every transition in 2026 (plus the Casey and Apia ones inside the range), with a window
# wide enough for Casey's 3-hour jumps.
ORACLE_CASES = [
    (zone_name, tr)
    for zone_name in ZONES
    for tr in transitions(zone_name)
    if tr.year == 2026 or (zone_name in ("Antarctica/Casey", "Pacific/Apia") and tr.year <= 2021)
]


def test_oracle_cases_cover_the_interesting_zones() -> None:
    covered = {zone for zone, _ in ORACLE_CASES}
    assert covered >= {
        "America/New_York",
        "Europe/London",
        "Australia/Lord_Howe",
        "America/Santiago",
        "America/Havana",
        "Pacific/Apia",
        "Antarctica/Casey",
    }


@pytest.mark.parametrize(("zone_name", "transition"), ORACLE_CASES, ids=str)
def test_cron_matches_brute_force_oracle_around_transition(
    zone_name: str, transition: datetime
) -> None:
    zone = ZoneInfo(zone_name)
    lo, hi = transition - timedelta(hours=4), transition + timedelta(hours=4)
    for expr in PREDICATES:
        cron = Cron(expr, zone_name)
        expected = expected_fires(expr, zone, lo, hi)
        got = []
        f = cron.next_after(lo)
        while f <= hi:
            got.append(f)
            f = cron.next_after(f)
        assert got == expected, expr
        back = []
        p = cron.latest_at_or_before(hi)
        while p is not None and p > lo:
            back.append(p)
            p = cron.latest_at_or_before(p - US)
        assert back[::-1] == expected, expr


# --------------------------------------------------------------------------------------
# Named DST cases with exact instants
# --------------------------------------------------------------------------------------


def run(cron: Cron, start: datetime, n: int) -> list[datetime]:
    out = []
    t = start
    for _ in range(n):
        t = cron.next_after(t)
        out.append(t)
    return out


def test_transition_dates_used_below_are_right() -> None:
    def offsets(zone: str, at: datetime) -> tuple[timedelta | None, timedelta | None]:
        z = ZoneInfo(zone)
        return (at - US).astimezone(z).utcoffset(), at.astimezone(z).utcoffset()

    h = timedelta(hours=1)
    assert offsets("America/New_York", utc(2026, 3, 8, 7)) == (-5 * h, -4 * h)
    assert offsets("America/New_York", utc(2026, 11, 1, 6)) == (-4 * h, -5 * h)
    assert offsets("Europe/London", utc(2026, 3, 29, 1)) == (0 * h, h)
    assert offsets("Europe/London", utc(2026, 10, 25, 1)) == (h, 0 * h)
    assert offsets("Australia/Lord_Howe", utc(2026, 4, 4, 15)) == (11 * h, 10.5 * h)
    assert offsets("Australia/Lord_Howe", utc(2026, 10, 3, 15, 30)) == (10.5 * h, 11 * h)
    assert offsets("America/Santiago", utc(2026, 4, 5, 3)) == (-3 * h, -4 * h)
    assert offsets("America/Santiago", utc(2026, 9, 6, 4)) == (-4 * h, -3 * h)
    assert offsets("America/Havana", utc(2026, 3, 8, 5)) == (-5 * h, -4 * h)
    assert offsets("America/Havana", utc(2026, 11, 1, 5)) == (-4 * h, -5 * h)


class TestNewYork:
    tz = "America/New_York"

    def test_daily_0230_is_skipped_on_spring_forward_day(self) -> None:
        cron = Cron("30 2 * * *", self.tz)
        assert run(cron, utc(2026, 3, 7), 3) == [
            utc(2026, 3, 7, 7, 30),  # 02:30 EST
            utc(2026, 3, 9, 6, 30),  # 02:30 EDT; 2026-03-08 02:30 does not exist
            utc(2026, 3, 10, 6, 30),
        ]

    def test_daily_0130_fires_once_on_fall_back_day(self) -> None:
        cron = Cron("30 1 * * *", self.tz)
        assert run(cron, utc(2026, 10, 31), 3) == [
            utc(2026, 10, 31, 5, 30),
            utc(2026, 11, 1, 5, 30),  # 01:30 EDT only -- not again at 01:30 EST (06:30Z)
            utc(2026, 11, 2, 6, 30),
        ]
        # Asking from inside the repeated hour does not produce the second 01:30.
        assert cron.next_after(utc(2026, 11, 1, 5, 30)) == utc(2026, 11, 2, 6, 30)
        assert cron.next_after(utc(2026, 11, 1, 6, 29)) == utc(2026, 11, 2, 6, 30)

    def test_hourly_across_spring_forward(self) -> None:
        assert run(Cron("0 * * * *", self.tz), utc(2026, 3, 8, 4, 30), 4) == [
            utc(2026, 3, 8, 5),  # 00:00 EST
            utc(2026, 3, 8, 6),  # 01:00 EST
            utc(2026, 3, 8, 7),  # 03:00 EDT (02:00 does not exist)
            utc(2026, 3, 8, 8),  # 04:00 EDT
        ]

    def test_hourly_across_fall_back(self) -> None:
        assert run(Cron("@hourly", self.tz), utc(2026, 11, 1, 3, 30), 4) == [
            utc(2026, 11, 1, 4),  # 00:00 EDT
            utc(2026, 11, 1, 5),  # 01:00 EDT (01:00 EST at 06:00Z is the repeat: skipped)
            utc(2026, 11, 1, 7),  # 02:00 EST
            utc(2026, 11, 1, 8),
        ]

    def test_every_30_minutes_during_the_repeated_hour(self) -> None:
        cron = Cron("*/30 * * * *", self.tz)
        assert run(cron, utc(2026, 11, 1, 4, 45), 4) == [
            utc(2026, 11, 1, 5),  # 01:00 EDT
            utc(2026, 11, 1, 5, 30),  # 01:30 EDT
            utc(2026, 11, 1, 7),  # 02:00 EST -- nothing during the second pass
            utc(2026, 11, 1, 7, 30),
        ]
        # From the second pass (given as a fold=1 local time or as UTC):
        second_pass = datetime(2026, 11, 1, 1, 40, tzinfo=ZoneInfo(self.tz), fold=1)
        # (== between zones is always False for a fold=1 time, per PEP 495: compare in UTC)
        assert second_pass.astimezone(UTC) == utc(2026, 11, 1, 6, 40)
        assert cron.next_after(second_pass) == utc(2026, 11, 1, 7)
        assert cron.latest_at_or_before(second_pass) == utc(2026, 11, 1, 5, 30)

    def test_latest_in_second_pass_finds_first_pass_fire_later_on_the_wall(self) -> None:
        # 01:45 EDT (05:45Z) precedes 01:20 EST (06:20Z) although 01:45 > 01:20 on the wall.
        cron = Cron("45 1 * * *", self.tz)
        assert cron.latest_at_or_before(utc(2026, 11, 1, 6, 20)) == utc(2026, 11, 1, 5, 45)
        assert cron.next_after(utc(2026, 11, 1, 6, 20)) == utc(2026, 11, 2, 6, 45)

    def test_latest_at_or_before_skips_the_gap(self) -> None:
        cron = Cron("30 2 * * *", self.tz)
        assert cron.latest_at_or_before(utc(2026, 3, 9, 6)) == utc(2026, 3, 7, 7, 30)


class TestLondon:
    tz = "Europe/London"

    def test_spring_forward(self) -> None:
        assert run(Cron("30 1 * * *", self.tz), utc(2026, 3, 28), 2) == [
            utc(2026, 3, 28, 1, 30),  # GMT
            utc(2026, 3, 30, 0, 30),  # BST; 2026-03-29 01:30 does not exist
        ]
        assert run(Cron("0 * * * *", self.tz), utc(2026, 3, 28, 23, 30), 3) == [
            utc(2026, 3, 29, 0),  # 00:00 GMT
            utc(2026, 3, 29, 1),  # 02:00 BST
            utc(2026, 3, 29, 2),  # 03:00 BST
        ]

    def test_fall_back(self) -> None:
        assert run(Cron("30 1 * * *", self.tz), utc(2026, 10, 24), 3) == [
            utc(2026, 10, 24, 0, 30),
            utc(2026, 10, 25, 0, 30),  # 01:30 BST only
            utc(2026, 10, 26, 1, 30),  # 01:30 GMT
        ]
        assert run(Cron("0 * * * *", self.tz), utc(2026, 10, 24, 22, 30), 4) == [
            utc(2026, 10, 24, 23),  # 00:00 BST
            utc(2026, 10, 25, 0),  # 01:00 BST
            utc(2026, 10, 25, 2),  # 02:00 GMT (01:00 GMT is the repeat)
            utc(2026, 10, 25, 3),
        ]


class TestLordHowe:
    """Lord Howe shifts by 30 minutes: 02:00 (+11) -> 01:30 (+10:30) on 2026-04-05 and
    02:00 (+10:30) -> 02:30 (+11) on 2026-10-04."""

    tz = "Australia/Lord_Howe"

    def test_fall_back_half_hour(self) -> None:
        assert run(Cron("45 1 * * *", self.tz), utc(2026, 4, 3), 3) == [
            utc(2026, 4, 3, 14, 45),
            utc(2026, 4, 4, 14, 45),  # 01:45 +11 only; not again at 15:15Z (+10:30)
            utc(2026, 4, 5, 15, 15),
        ]
        assert run(Cron("*/15 * * * *", self.tz), utc(2026, 4, 4, 14, 20), 5) == [
            utc(2026, 4, 4, 14, 30),  # 01:30 +11
            utc(2026, 4, 4, 14, 45),  # 01:45 +11
            utc(2026, 4, 4, 15, 30),  # 02:00 +10:30 (01:30, 01:45 again are skipped)
            utc(2026, 4, 4, 15, 45),
            utc(2026, 4, 4, 16, 0),
        ]

    def test_spring_forward_half_hour(self) -> None:
        assert run(Cron("15 2 * * *", self.tz), utc(2026, 10, 2), 2) == [
            utc(2026, 10, 2, 15, 45),  # 02:15 +10:30
            utc(2026, 10, 4, 15, 15),  # 02:15 +11; 2026-10-04 02:15 does not exist
        ]
        assert run(Cron("0,30 * * * *", self.tz), utc(2026, 10, 3, 14, 45), 3) == [
            utc(2026, 10, 3, 15, 0),  # 01:30 +10:30
            utc(2026, 10, 3, 15, 30),  # 02:30 +11 (02:00 does not exist)
            utc(2026, 10, 3, 16, 0),  # 03:00 +11
        ]


class TestMidnightTransitions:
    def test_santiago_midnight_does_not_exist_on_spring_forward_day(self) -> None:
        cron = Cron("0 0 * * *", "America/Santiago")
        assert run(cron, utc(2026, 9, 5), 2) == [
            utc(2026, 9, 5, 4),  # 2026-09-05 00:00 -04
            utc(2026, 9, 7, 3),  # 2026-09-07 00:00 -03; 09-06 00:00 does not exist
        ]

    def test_santiago_repeated_2330_on_fall_back(self) -> None:
        cron = Cron("30 23 * * *", "America/Santiago")
        assert run(cron, utc(2026, 4, 4, 12), 2) == [
            utc(2026, 4, 5, 2, 30),  # 2026-04-04 23:30 -03 (first pass)
            utc(2026, 4, 6, 3, 30),  # 2026-04-05 23:30 -04; the repeat at 03:30Z is skipped
        ]
        assert run(Cron("0 0 * * *", "America/Santiago"), utc(2026, 4, 3, 12), 2) == [
            utc(2026, 4, 4, 3),
            utc(2026, 4, 5, 4),
        ]

    def test_havana(self) -> None:
        daily = Cron("0 0 * * *", "America/Havana")
        assert run(daily, utc(2026, 3, 6, 12), 2) == [
            utc(2026, 3, 7, 5),  # 00:00 CST
            utc(2026, 3, 9, 4),  # 00:00 CDT; 2026-03-08 00:00 does not exist
        ]
        assert run(daily, utc(2026, 10, 31, 12), 2) == [
            utc(2026, 11, 1, 4),  # 00:00 CDT, first pass only (not 05:00Z)
            utc(2026, 11, 2, 5),
        ]


# --------------------------------------------------------------------------------------
# Cron semantics and syntax
# --------------------------------------------------------------------------------------


def test_vixie_either_day_matches_when_both_restricted() -> None:
    got = run(Cron("0 0 13 * 5"), utc(2026, 4, 1), 5)
    # Fridays 3, 10, 17, 24 April and Monday 13 April.
    assert got == [utc(2026, 4, d) for d in (3, 10, 13, 17, 24)]


def test_only_restricted_day_field_applies() -> None:
    assert run(Cron("0 0 13 * *"), utc(2026, 4, 1), 2) == [utc(2026, 4, 13), utc(2026, 5, 13)]
    assert run(Cron("0 0 * * 5"), utc(2026, 4, 1), 2) == [utc(2026, 4, 3), utc(2026, 4, 10)]
    # Restriction is by the set of values, not the spelling: 1-31 means every day, so
    # only the day-of-week applies (Mondays).
    assert run(Cron("0 0 1-31 * 1"), utc(2026, 4, 1), 2) == [utc(2026, 4, 6), utc(2026, 4, 13)]


def test_last_day_of_month() -> None:
    got = run(Cron("0 12 L * *"), utc(2027, 12, 31, 13), 4)
    assert got == [
        utc(2028, 1, 31, 12),
        utc(2028, 2, 29, 12),
        utc(2028, 3, 31, 12),
        utc(2028, 4, 30, 12),
    ]
    assert run(Cron("0 0 15,L 2 *"), utc(2026, 1, 1), 3) == [
        utc(2026, 2, 15),
        utc(2026, 2, 28),
        utc(2027, 2, 15),
    ]


def test_day_of_week_names_and_seven() -> None:
    mondays = run(Cron("0 0 * * MON"), utc(2026, 4, 1), 2)
    assert mondays == run(Cron("0 0 * * 1"), utc(2026, 4, 1), 2)
    sundays = run(Cron("0 0 * * 0"), utc(2026, 4, 1), 3)
    assert sundays == run(Cron("0 0 * * 7"), utc(2026, 4, 1), 3)
    assert sundays == run(Cron("0 0 * * sun"), utc(2026, 4, 1), 3)
    weekend = run(Cron("0 0 * * FRI-SUN"), utc(2026, 4, 1), 3)
    assert weekend == [utc(2026, 4, 3), utc(2026, 4, 4), utc(2026, 4, 5)]
    assert weekend == run(Cron("0 0 * * 5-7"), utc(2026, 4, 1), 3)


def test_macros() -> None:
    start = utc(2026, 4, 1, 0, 30)
    for macro, plain in [
        ("@hourly", "0 * * * *"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@weekly", "0 0 * * 0"),
        ("@monthly", "0 0 1 * *"),
        ("@yearly", "0 0 1 1 *"),
        ("@ANNUALLY", "0 0 1 1 *"),
    ]:
        assert run(Cron(macro), start, 3) == run(Cron(plain), start, 3), macro


@pytest.mark.parametrize(
    "expr",
    [
        "* * * * *",
        "*/7 * * * *",
        "5/20 */3 * * *",
        "1-59/13 2-20/5 * * *",
        "0,7,59 0,23 * * *",
        "0 9 * * 1-5",
        "15 10 * JAN-MAR,oct *",
        "0 0 1,15 * *",
        "0 0 31 * *",
        "0 6 * * mon,wed,FRI",
        "30 4 1-7 * *",
        "0 0 29 2 *",
        "0 12 L * *",
        "0 0 13 * 5",
        "0 0 * * 0-6/2",
        "@weekly",
    ],
)
def test_parsing_agrees_with_croniter_in_utc(expr: str) -> None:
    cron = Cron(expr)
    reference = croniter(expr, utc(2026, 1, 1, 0, 0), ret_type=datetime)
    assert run(cron, utc(2026, 1, 1), 40) == [reference.get_next(datetime) for _ in range(40)]


def test_leap_day_cron_far_back_and_forward_is_bounded_work() -> None:
    cron = Cron("0 0 29 2 *", "Europe/London")
    # 2100 is not a leap year: eight years between fire times.
    assert cron.latest_at_or_before(utc(2103, 6, 1)) == utc(2096, 2, 29)
    assert cron.next_after(utc(2096, 3, 1)) == utc(2104, 2, 29)


@pytest.mark.parametrize(
    ("expr", "field", "reason"),
    [
        ("61 * * * *", "minute field '61'", "61 is out of range 0-59"),
        ("* 24 * * *", "hour field '24'", "24 is out of range 0-23"),
        ("* * 0 * *", "day-of-month field '0'", "0 is out of range 1-31"),
        ("* * * 13 *", "month field '13'", "13 is out of range 1-12"),
        ("* * * * 8", "day-of-week field '8'", "8 is out of range 0-7"),
        ("*/0 * * * *", "minute field '*/0'", "step must be at least 1"),
        ("5-1 * * * *", "minute field '5-1'", "range start 5 is after range end 1"),
        ("* * * * SAT-MON", "day-of-week field 'SAT-MON'", "range start SAT is after"),
        ("* * * FOO *", "month field 'FOO'", "unknown value 'FOO'"),
        ("* * * * MON-FUNDAY", "day-of-week field", "unknown value 'FUNDAY'"),
        ("* * * * JAN", "day-of-week field", "unknown value 'JAN'"),
        ("abc * * * *", "minute field 'abc'", "'abc' is not a number"),
        ("1,,2 * * * *", "minute field '1,,2'", "empty list item"),
        ("-5 * * * *", "minute field '-5'", "malformed range"),
        ("*/x * * * *", "minute field '*/x'", "step 'x' is not a number"),
        ("* * * * L", "day-of-week field 'L'", "only allowed in the day-of-month field"),
        ("* * L-2 * *", "day-of-month field 'L-2'", "'L' must stand alone"),
        ("* * L/2 * *", "day-of-month field 'L/2'", "cannot take a step"),
        ("* * ? * *", "day-of-month field '?'", "'?' is not supported"),
        ("* * * * 1#2", "day-of-week field '1#2'", "'#'"),
    ],
)
def test_invalid_field_messages(expr: str, field: str, reason: str) -> None:
    with pytest.raises(InvalidSchedule) as info:
        Cron(expr)
    message = str(info.value)
    assert message.startswith(f"invalid cron expression {expr!r}: ")
    assert field in message
    assert reason in message


def test_exact_message_for_out_of_range_minute() -> None:
    with pytest.raises(InvalidSchedule) as info:
        Cron("61 * * * *")
    assert str(info.value) == (
        "invalid cron expression '61 * * * *': minute field '61': 61 is out of range 0-59"
    )


@pytest.mark.parametrize(("expr", "count"), [("* * *", 3), ("* * * * * *", 6), ("0", 1)])
def test_wrong_field_count(expr: str, count: int) -> None:
    with pytest.raises(InvalidSchedule, match="expected 5 fields") as info:
        Cron(expr)
    assert "(minute hour day-of-month month day-of-week)" in str(info.value)
    assert str(info.value).endswith(f"got {count}")


@pytest.mark.parametrize("expr", ["", "   "])
def test_empty_expression(expr: str) -> None:
    with pytest.raises(InvalidSchedule, match="expression is empty"):
        Cron(expr)


def test_unknown_macro_and_reboot() -> None:
    with pytest.raises(InvalidSchedule, match="unknown macro '@reboot'"):
        Cron("@reboot")
    with pytest.raises(InvalidSchedule, match="unknown macro '@often'"):
        Cron("@often")


@pytest.mark.parametrize("expr", ["0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 30,31 FEB *"])
def test_never_firing_expressions_are_rejected(expr: str) -> None:
    with pytest.raises(InvalidSchedule, match="can never fire") as info:
        Cron(expr)
    assert "day-of-month" in str(info.value)
    assert "month" in str(info.value)


def test_impossible_day_of_month_with_weekday_uses_weekday_alone() -> None:
    # Either-matches: Feb 30 never matches, so this is "Mondays in February".
    got = run(Cron("0 0 30 2 1"), utc(2026, 3, 1), 2)
    assert got == [utc(2027, 2, 1), utc(2027, 2, 8)]


def test_cron_rejects_non_string_expression() -> None:
    with pytest.raises(InvalidSchedule, match="must be a string"):
        Cron(5)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# Time zones, inputs, equality, describe
# --------------------------------------------------------------------------------------


def test_validate_timezone() -> None:
    assert validate_timezone("UTC") is ZoneInfo("UTC")
    assert validate_timezone("Europe/London").key == "Europe/London"
    for bad in ["Mars/Base", "", "America", "../etc/passwd", "/etc/localtime", "utc "]:
        with pytest.raises(InvalidSchedule) as info:
            validate_timezone(bad)
        assert f"unknown time zone {bad!r}" in str(info.value)
    with pytest.raises(InvalidSchedule):
        validate_timezone(None)  # type: ignore[arg-type]


def test_cron_time_zone_forms() -> None:
    assert Cron("0 9 * * *").tz_name == "UTC"
    assert Cron("0 9 * * *").tz is ZoneInfo("UTC")
    assert Cron("0 9 * * *", ZoneInfo("Asia/Kathmandu")).tz_name == "Asia/Kathmandu"
    assert Cron("0 9 * * *", "Asia/Kathmandu") == Cron("0 9 * * *", ZoneInfo("Asia/Kathmandu"))
    with pytest.raises(InvalidSchedule, match="Mars/Base"):
        Cron("0 9 * * *", "Mars/Base")
    with pytest.raises(InvalidSchedule, match="IANA"):
        Cron("0 9 * * *", UTC)  # type: ignore[arg-type]
    # Kathmandu is +05:45 all year.
    assert Cron("0 9 * * *", "Asia/Kathmandu").next_after(utc(2026, 6, 1)) == utc(2026, 6, 1, 3, 15)


def test_naive_and_non_datetime_inputs_are_rejected() -> None:
    cron = Cron("* * * * *")
    interval = Interval(timedelta(minutes=1), utc(2026, 1, 1))
    for trig in (cron, interval):
        with pytest.raises(InvalidSchedule, match="naive"):
            trig.next_after(datetime(2026, 1, 1))  # noqa: DTZ001 (naive on purpose: the refusal under test)
        with pytest.raises(InvalidSchedule, match="naive"):
            trig.latest_at_or_before(datetime(2026, 1, 1))  # noqa: DTZ001 (naive on purpose: the refusal under test)
        with pytest.raises(InvalidSchedule, match="aware datetime"):
            trig.next_after(1_700_000_000.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidSchedule, match="naive"):
        interval.count_between(datetime(2026, 1, 1), utc(2026, 1, 2))  # noqa: DTZ001 (naive on purpose: the refusal under test)


def test_results_are_utc_for_any_input_zone() -> None:
    cron = Cron("0 9 * * *", "Europe/London")
    t = datetime(2026, 6, 1, 12, tzinfo=ZoneInfo("Asia/Tokyo"))
    r = cron.next_after(t)
    assert r.tzinfo is UTC
    assert r == utc(2026, 6, 1, 8)


def test_cron_equality_describe_and_protocol() -> None:
    a = Cron("0  9 * *   1-5", "Europe/London")
    assert a.expr == "0 9 * * 1-5"
    assert a == Cron("0 9 * * 1-5", "Europe/London")
    assert hash(a) == hash(Cron("0 9 * * 1-5", "Europe/London"))
    assert a != Cron("0 9 * * 1-5", "UTC")
    assert a.describe() == "cron '0 9 * * 1-5' (Europe/London)"
    assert repr(a) == "Cron('0 9 * * 1-5', tz='Europe/London')"
    assert isinstance(a, Trigger)
    assert isinstance(Interval(timedelta(hours=1), utc(2026, 1, 1)), Trigger)
    with pytest.raises(AttributeError):
        a.expr = "* * * * *"  # type: ignore[misc]


def test_cron_at_the_ends_of_the_datetime_range() -> None:
    cron = Cron("0 0 1 1 *", "America/New_York")
    with pytest.raises(OverflowError):
        cron.next_after(utc(9999, 12, 31, 23, 59))
    assert cron.latest_at_or_before(utc(1, 1, 1, 0, 0)) is None


# --------------------------------------------------------------------------------------
# Interval
# --------------------------------------------------------------------------------------


def test_interval_lattice() -> None:
    iv = Interval(timedelta(minutes=15), utc(2026, 1, 1, 0, 7))
    assert iv.next_after(utc(2026, 1, 1, 0, 7)) == utc(2026, 1, 1, 0, 22)
    assert iv.next_after(utc(2026, 1, 1, 0, 22) - US) == utc(2026, 1, 1, 0, 22)
    assert iv.next_after(utc(2026, 1, 1)) == utc(2026, 1, 1, 0, 7)
    assert iv.latest_at_or_before(utc(2026, 1, 1, 0, 22)) == utc(2026, 1, 1, 0, 22)
    assert iv.latest_at_or_before(utc(2026, 1, 1, 0, 22) - US) == utc(2026, 1, 1, 0, 7)
    assert iv.latest_at_or_before(utc(2026, 1, 1)) == utc(2025, 12, 31, 23, 52)
    assert iv.describe() == "every 15 minutes"


def test_interval_anchor_in_the_future_extends_backwards() -> None:
    iv = Interval(timedelta(hours=1), utc(2030, 1, 1, 0, 30))
    assert iv.next_after(utc(2026, 5, 5, 10, 0)) == utc(2026, 5, 5, 10, 30)
    assert iv.latest_at_or_before(utc(2026, 5, 5, 10, 0)) == utc(2026, 5, 5, 9, 30)


def test_interval_is_absolute_time_across_dst() -> None:
    ny = ZoneInfo("America/New_York")
    iv = Interval(timedelta(days=1), datetime(2026, 3, 7, 9, 0, tzinfo=ny))
    assert iv.anchor == utc(2026, 3, 7, 14)
    assert iv.anchor.tzinfo is UTC
    nxt = iv.next_after(iv.anchor)
    assert nxt == utc(2026, 3, 8, 14)
    assert nxt.astimezone(ny).hour == 10  # 24 hours later is 10:00 EDT


def test_interval_count_between_one_second_over_a_year() -> None:
    iv = Interval(timedelta(seconds=1), utc(2026, 1, 1))
    assert iv.count_between(utc(2026, 1, 1), utc(2027, 1, 1)) == 31_536_000
    assert iv.count_between(utc(2026, 1, 1) - US, utc(2027, 1, 1)) == 31_536_001
    assert iv.count_between(utc(2026, 1, 1), utc(2027, 1, 1) - US) == 31_535_999
    assert iv.count_between(utc(2027, 1, 1), utc(2026, 1, 1)) == 0
    assert iv.count_between(utc(2026, 1, 1), utc(2026, 1, 1)) == 0


def test_interval_no_drift_after_ten_years() -> None:
    anchor = utc(2026, 1, 1)
    ten_years = utc(2036, 1, 1) - anchor
    iv = Interval(timedelta(seconds=1), anchor)
    assert iv.next_after(anchor + ten_years + timedelta(milliseconds=500)) == (
        anchor + ten_years + timedelta(seconds=1)
    )
    odd = Interval(timedelta(microseconds=333_333), anchor)
    k = (ten_years // US) // 333_333
    exact = anchor + timedelta(microseconds=333_333 * k)
    assert odd.latest_at_or_before(anchor + ten_years) == exact
    assert odd.next_after(exact) == exact + timedelta(microseconds=333_333)
    assert odd.count_between(anchor, anchor + ten_years) == k


@settings(max_examples=300, deadline=None)
@given(
    every_us=st.integers(1, 10 * 86_400 * 10**6),
    anchor=st.datetimes(datetime(2000, 1, 1), datetime(2040, 1, 1), timezones=st.just(UTC)),  # noqa: DTZ001 (hypothesis takes naive bounds)
    t=st.datetimes(datetime(2020, 1, 1), datetime(2035, 12, 31), timezones=st.just(UTC)),  # noqa: DTZ001 (hypothesis takes naive bounds)
    width_us=st.integers(0, 3 * 86_400 * 10**6),
)
def test_interval_properties(every_us: int, anchor: datetime, t: datetime, width_us: int) -> None:
    every = timedelta(microseconds=every_us)
    iv = Interval(every, anchor)
    r = iv.next_after(t)
    assert r.tzinfo is UTC
    assert r - every <= t < r
    assert ((r - anchor) // US) % every_us == 0
    assert iv.next_after(r - US) == r
    p = iv.latest_at_or_before(t)
    assert p is not None
    assert p <= t
    assert iv.next_after(p) == r
    assert iv.latest_at_or_before(r) == r
    end = t + timedelta(microseconds=width_us)
    n = iv.count_between(t, end)
    if n:
        assert iv.latest_at_or_before(end) == r + (n - 1) * every
    else:
        assert r > end


@pytest.mark.parametrize(
    ("every", "shown"),
    [
        (timedelta(0), "0 seconds"),
        (timedelta(seconds=-5), "-5 seconds"),
        (timedelta(minutes=-1), "-1 minute"),
    ],
)
def test_interval_must_be_positive(every: timedelta, shown: str) -> None:
    with pytest.raises(InvalidSchedule) as info:
        Interval(every, utc(2026, 1, 1))
    assert str(info.value) == f"interval must be positive, got {shown}"


def test_interval_bad_arguments() -> None:
    with pytest.raises(InvalidSchedule, match="naive"):
        Interval(timedelta(minutes=1), datetime(2026, 1, 1))  # noqa: DTZ001 (naive on purpose: the refusal under test)
    with pytest.raises(InvalidSchedule, match="timedelta"):
        Interval(60, utc(2026, 1, 1))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("every", "text"),
    [
        (timedelta(hours=1), "every hour"),
        (timedelta(minutes=90), "every 90 minutes"),
        (timedelta(days=2), "every 2 days"),
        (timedelta(weeks=1), "every week"),
        (timedelta(seconds=1.5), "every 1500 milliseconds"),
        (timedelta(microseconds=1), "every microsecond"),
    ],
)
def test_interval_describe(every: timedelta, text: str) -> None:
    assert Interval(every, utc(2026, 1, 1)).describe() == text


# --------------------------------------------------------------------------------------
# Specs
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "trigger",
    [
        Cron("0 9 * * 1-5", "Europe/London"),
        Cron("@hourly"),
        Cron("0 12 L * *", "Australia/Lord_Howe"),
        Interval(timedelta(minutes=15), utc(2026, 1, 1, 0, 7)),
        Interval(
            timedelta(microseconds=333_333),
            datetime(2026, 3, 8, 1, 59, tzinfo=ZoneInfo("America/New_York")),
        ),
    ],
    ids=repr,
)
def test_spec_round_trip(trigger: Cron | Interval) -> None:
    spec = trigger.to_spec()
    again = trigger_from_spec(json.loads(json.dumps(spec)))
    assert again == trigger
    assert type(again) is type(trigger)
    assert again.to_spec() == spec
    start = utc(2026, 3, 1)
    assert run(again, start, 5) == run(trigger, start, 5)  # type: ignore[arg-type]


def test_cron_spec_tz_defaults_to_utc() -> None:
    assert trigger_from_spec({"kind": "cron", "expr": "* * * * *"}) == Cron("* * * * *")


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ({"kind": "weekly"}, "unknown trigger kind 'weekly'"),
        ({}, "unknown trigger kind None"),
        ({"kind": "cron"}, "missing expr"),
        ({"kind": "cron", "expr": "* * * * *", "zone": "UTC"}, "unknown keys zone"),
        ({"kind": "cron", "expr": 5}, "'expr' must be a string"),
        ({"kind": "cron", "expr": "* * * * *", "tz": 1}, "'tz' must be a string"),
        ({"kind": "cron", "expr": "61 * * * *"}, "minute field"),
        ({"kind": "cron", "expr": "* * * * *", "tz": "Mars/Base"}, "unknown time zone"),
        ({"kind": "interval", "every_us": 5}, "missing anchor"),
        ({"kind": "interval", "every_us": 1.5, "anchor": "2026-01-01T00:00:00+00:00"}, "integer"),
        ({"kind": "interval", "every_us": True, "anchor": "2026-01-01T00:00:00+00:00"}, "integer"),
        ({"kind": "interval", "every_us": 0, "anchor": "2026-01-01T00:00:00+00:00"}, "positive"),
        ({"kind": "interval", "every_us": 5, "anchor": "2026-01-01T00:00:00"}, "naive"),
        ({"kind": "interval", "every_us": 5, "anchor": "yesterday"}, "invalid interval spec"),
        ({"kind": "interval", "every_us": 5, "anchor": 0}, "ISO 8601"),
    ],
)
def test_bad_specs(spec: dict[str, object], fragment: str) -> None:
    with pytest.raises(InvalidSchedule, match=None) as info:
        trigger_from_spec(spec)
    assert fragment in str(info.value)


def test_bad_spec_type() -> None:
    with pytest.raises(InvalidSchedule, match="must be a dict"):
        trigger_from_spec([("kind", "cron")])  # type: ignore[arg-type]


def test_errors_are_scheduler_and_value_errors() -> None:
    with pytest.raises(ValueError, match="out of range"):
        Cron("61 * * * *")
    with pytest.raises(SchedulerError):
        Interval(timedelta(0), utc(2026, 1, 1))


# --------------------------------------------------------------------------------------
# Calendar rules beyond five fields: nth weekday of the month and date steps
# --------------------------------------------------------------------------------------
# Each case: a trigger and an independent predicate on the naive local wall time (Python's
# weekday numbering, Monday=0), written from the calendar, not from the implementation.

SINCE = date(2026, 12, 1)  # a Tuesday


def _nth_weekday(w: datetime) -> int:
    return (w.day - 1) // 7 + 1


def _last_weekday_of_month(w: datetime) -> bool:
    return (w + timedelta(days=7)).month != w.month


def _weeks_from_since(w: datetime) -> int:
    monday = w.date() - timedelta(days=w.weekday())
    return (monday - (SINCE - timedelta(days=SINCE.weekday()))).days // 7


def _months_from_since(w: datetime) -> int:
    return (w.year - SINCE.year) * 12 + w.month - SINCE.month


CALENDAR_CASES: dict[str, tuple[Callable[[str], Cron], Callable[[datetime], bool]]] = {
    "2nd and 4th thursday 09:00": (
        lambda z: Cron("0 9 * * 4", z, nth=(2, 4)),
        lambda w: (w.hour, w.minute) == (9, 0) and w.weekday() == 3 and _nth_weekday(w) in (2, 4),
    ),
    "first monday 02:30": (
        lambda z: Cron("30 2 * * 1", z, nth=(1,)),
        lambda w: (w.hour, w.minute) == (2, 30) and w.weekday() == 0 and w.day <= 7,
    ),
    "last sunday 01:30 and 02:30": (
        lambda z: Cron("30 1,2 * * 0", z, nth=(-1,)),
        lambda w: (
            w.minute == 30 and w.hour in (1, 2) and w.weekday() == 6 and _last_weekday_of_month(w)
        ),
    ),
    "every 2 weeks on tue and sun 02:15": (
        lambda z: Cron("15 2 * * 2,0", z, step=DateStep(2, "week", SINCE)),
        lambda w: (
            (w.hour, w.minute) == (2, 15)
            and w.weekday() in (1, 6)
            and _weeks_from_since(w) % 2 == 0
        ),
    ),
    "every 3 days 00:00": (
        lambda z: Cron("0 0 * * *", z, step=DateStep(3, "day", SINCE)),
        lambda w: (w.hour, w.minute) == (0, 0) and (w.date() - SINCE).days % 3 == 0,
    ),
    "every 5 months on the 31st or last day 01:45": (
        lambda z: Cron("45 1 L * *", z, step=DateStep(5, "month", SINCE)),
        lambda w: (
            (w.hour, w.minute) == (1, 45)
            and (w + timedelta(days=1)).day == 1
            and _months_from_since(w) % 5 == 0
        ),
    ),
    "every 2 months on the last friday 23:30": (
        lambda z: Cron("30 23 * * 5", z, nth=(-1,), step=DateStep(2, "month", SINCE)),
        lambda w: (
            (w.hour, w.minute) == (23, 30)
            and w.weekday() == 4
            and _last_weekday_of_month(w)
            and _months_from_since(w) % 2 == 0
        ),
    ),
    "every 2 weeks every 30 minutes": (
        lambda z: Cron("*/30 * * * *", z, step=DateStep(2, "week", SINCE)),
        lambda w: w.minute in (0, 30) and _weeks_from_since(w) % 2 == 0,
    ),
}

CALENDAR_ZONES = ["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe"]


def calendar_fires(
    predicate: Callable[[datetime], bool], zone: ZoneInfo, lo: datetime, hi: datetime
) -> list[datetime]:
    """Brute force: every instant in (lo, hi] on a whole minute, first occurrence of its
    wall time, whose wall time the predicate accepts."""
    lo, hi = lo.astimezone(UTC), hi.astimezone(UTC)
    i = lo.replace(second=0, microsecond=0) + MINUTE
    out = []
    while i <= hi:
        local = i.astimezone(zone)
        if local.fold == 0 and predicate(local.replace(tzinfo=None)):
            out.append(i)
        i += MINUTE
    return out


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    zone_name=st.sampled_from(CALENDAR_ZONES),
    case=st.sampled_from(sorted(CALENDAR_CASES)),
)
def test_calendar_rule_invariants(data: st.DataObject, zone_name: str, case: str) -> None:
    make, predicate = CALENDAR_CASES[case]
    zone = ZoneInfo(zone_name)
    trigger = make(zone_name)
    t = data.draw(instant_near(zone_name), label="t")
    t_utc = t.astimezone(UTC)

    def fires_at(instant: datetime) -> bool:
        local = instant.astimezone(zone)
        return local.fold == 0 and local.second == 0 and predicate(local.replace(tzinfo=None))

    r = trigger.next_after(t)
    assert r.tzinfo is UTC
    assert r > t
    assert fires_at(r), r.astimezone(zone)
    span = (r - t) // US
    inner = data.draw(st.integers(0, span - 1), label="u offset")
    for u in {t, r - US, t_utc + inner * US}:
        assert trigger.next_after(u) == r
    if r - t <= BRUTE_LIMIT:
        assert calendar_fires(predicate, zone, t, r) == [r]
    chain = [r]
    for _ in range(4):
        chain.append(trigger.next_after(chain[-1]))
    assert all(a < b for a, b in itertools.pairwise(chain))
    walls = [c.astimezone(zone).replace(tzinfo=None) for c in chain]
    assert len(set(walls)) == len(walls)  # an ambiguous wall time fires once
    assert all(fires_at(c) for c in chain)  # none in a gap: fires_at needs the wall to exist
    p = trigger.latest_at_or_before(t)
    assert p is not None
    assert p <= t
    assert fires_at(p)
    assert trigger.next_after(p) == r
    assert trigger.latest_at_or_before(r) == r
    assert trigger.latest_at_or_before(r - US) == p


@pytest.mark.parametrize("case", sorted(CALENDAR_CASES))
@pytest.mark.parametrize("zone_name", ["Europe/Paris", "America/New_York", "Australia/Lord_Howe"])
def test_calendar_rules_match_brute_force_across_2027(case: str, zone_name: str) -> None:
    """Around each of the zone's 2027 transitions, every fire time in a 3-day window."""
    make, predicate = CALENDAR_CASES[case]
    zone = ZoneInfo(zone_name)
    trigger = make(zone_name)
    for tr in (tr for tr in transitions(zone_name) if tr.year == 2027):
        lo, hi = tr - timedelta(days=1), tr + timedelta(days=2)
        got, t = [], lo
        while (t := trigger.next_after(t)) <= hi:
            got.append(t)
        assert got == calendar_fires(predicate, zone, lo, hi)


def test_fifth_weekday_rule_steps_over_months_without_one() -> None:
    """February (28 days) has no 5th-weekday window at all; the walk steps over it both ways
    (found by hypothesis: it raised IndexError)."""
    paris = "Europe/Paris"
    fifth_wednesday = Cron("0 0 * * 3", paris, nth=(5,))
    assert run(fifth_wednesday, utc(2026, 4, 1), 4) == [
        utc(2026, 4, 28, 22),  # Wednesday 29 April, midnight in Paris (CEST)
        utc(2026, 7, 28, 22),
        utc(2026, 9, 29, 22),
        utc(2026, 12, 29, 23),  # Wednesday 30 December (CET)
    ]
    # From January 2027: no 5th Wednesday in January or February; next is 31 March (CEST).
    assert run(fifth_wednesday, utc(2027, 1, 1), 1) == [utc(2027, 3, 30, 22)]
    # Walking down from April 2026 crosses March (no 5th Wednesday) and February (no window).
    assert fifth_wednesday.latest_at_or_before(utc(2026, 4, 1)) == utc(2025, 12, 30, 23)


def test_calendar_rules_by_hand_in_paris() -> None:
    after = datetime(2026, 12, 1, 12, tzinfo=UTC)  # Tuesday 13:00 in Paris
    paris = "Europe/Paris"
    assert run(Cron("0 9 * * 4", paris, nth=(2, 4)), after, 4) == [
        utc(2026, 12, 10, 8),
        utc(2026, 12, 24, 8),
        utc(2027, 1, 14, 8),
        utc(2027, 1, 28, 8),
    ]
    assert run(Cron("0 20 * * 5", paris, nth=(-1,)), after, 3) == [
        utc(2026, 12, 25, 19),
        utc(2027, 1, 29, 19),
        utc(2027, 2, 26, 19),
    ]
    # Every 2 weeks on Tuesday 09:00 across the spring-forward of 2027-03-28: still 09:00.
    biweekly = Cron("0 9 * * 2", paris, step=DateStep(2, "week", SINCE))
    assert run(biweekly, utc(2027, 3, 1), 3) == [
        utc(2027, 3, 9, 8),
        utc(2027, 3, 23, 8),
        utc(2027, 4, 6, 7),
    ]


def test_calendar_rule_validation() -> None:
    with pytest.raises(InvalidSchedule, match="nth"):
        Cron("0 9 * * *", nth=(1,))  # no weekday to count
    with pytest.raises(InvalidSchedule, match="nth"):
        Cron("0 9 1 * 4", nth=(1,))  # day-of-month restricted
    with pytest.raises(InvalidSchedule, match="nth"):
        Cron("0 9 * * 4", nth=(6,))
    with pytest.raises(InvalidSchedule, match="month field"):
        Cron("0 9 * 1 4", step=DateStep(2, "week", SINCE))
    with pytest.raises(InvalidSchedule, match="step of days"):
        Cron("0 9 * * 4", step=DateStep(2, "day", SINCE))
    with pytest.raises(InvalidSchedule, match="months only"):
        Cron("0 9 * * 4", nth=(1,), step=DateStep(2, "week", SINCE))
    with pytest.raises(InvalidSchedule, match="never"):
        Cron("0 9 31 * *", step=DateStep(12, "month", date(2026, 4, 1)))  # April only
    with pytest.raises(InvalidSchedule, match="count"):
        DateStep(0, "week", SINCE)
    with pytest.raises(InvalidSchedule, match="unit"):
        DateStep(1, "fortnight", SINCE)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "trigger",
    [
        Cron("0 9 * * 4", "Europe/Paris", nth=(2, 4)),
        Cron("0 9 * * 5", "Europe/Paris", nth=(-1,), step=DateStep(3, "month", SINCE)),
        Cron("0 9 * * 2", "America/New_York", step=DateStep(2, "week", SINCE)),
    ],
    ids=repr,
)
def test_calendar_spec_round_trip(trigger: Cron) -> None:
    spec = trigger.to_spec()
    again = trigger_from_spec(json.loads(json.dumps(spec)))
    assert again == trigger
    assert again != Cron(trigger.expr, trigger.tz_name)
    assert run(again, utc(2026, 12, 1), 5) == run(trigger, utc(2026, 12, 1), 5)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ({"kind": "cron", "expr": "0 9 * * 4", "nth": "2"}, "'nth' must be a list"),
        ({"kind": "cron", "expr": "0 9 * * 4", "step": {"count": 2}}, "'step' must be a dict"),
        (
            {"kind": "cron", "expr": "0 9 * * 4", "step": {"count": 2, "unit": "week", "since": 1}},
            "ISO date",
        ),
    ],
)
def test_bad_calendar_specs(spec: dict[str, object], fragment: str) -> None:
    with pytest.raises(InvalidSchedule) as info:
        trigger_from_spec(spec)
    assert fragment in str(info.value)


def test_the_compiled_cron_cache_keeps_no_long_expression() -> None:
    """An expression longer than 256 characters (a minute list repeated: valid, and as long
    as its writer likes) is compiled each time, never kept; a short one is kept."""
    from scheduler.triggers import _expr

    kept = _expr._compile_cron_kept
    kept.cache_clear()
    long = ",".join(["5"] * 200) + " * * * *"
    assert _expr.compile_cron(long) == _expr.compile_cron(long)
    assert kept.cache_info().currsize == 0
    assert _expr.compile_cron("5 * * * *") == _expr.compile_cron(long)
    assert kept.cache_info().currsize == 1
