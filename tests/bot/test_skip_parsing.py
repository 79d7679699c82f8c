"""Skipped dates as read and kept (:mod:`bot.parsing.skips`, ``parse_day_or_time``): a span of
local wall time turned into the exact instants it holds across daylight-saving changes
(checked against the definition, instant by instant), spans merged and taken apart as sets
of wall time, and the days and times ``/skip`` reads."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.i18n import speaking
from bot.parsing import InputError
from bot.parsing.skips import Skip, decode_skips, encode_skips, merged, wall_spans, without
from bot.parsing.when import parse_day_or_time

ZONES = ["Europe/London", "America/New_York", "America/Santiago", "Australia/Lord_Howe", "UTC"]
NOW = datetime(2030, 3, 1, 12, 0, tzinfo=UTC)
LONDON = ZoneInfo("Europe/London")
US = timedelta(microseconds=1)


def wall(t: datetime, zone: ZoneInfo) -> datetime:
    return t.astimezone(zone).replace(tzinfo=None)


# Around the 2030 changes of each zone (March, April, September, October, November).
_DAYS = ((3, 10), (3, 31), (4, 7), (9, 8), (10, 6), (10, 27), (11, 3))
AROUND = [datetime.combine(date(2030, m, d), datetime.min.time()) for m, d in _DAYS]


@st.composite
def skips(draw: st.DrawFn) -> Skip:
    base = draw(st.sampled_from(AROUND)) + timedelta(minutes=15 * draw(st.integers(-96, 96)))
    kind = draw(st.sampled_from(["day", "minute", "span"]))
    if kind == "day":
        return Skip.day(base.date())
    if kind == "minute":
        return Skip.minute(base)
    return Skip(base, base + timedelta(minutes=draw(st.integers(0, 60 * 30))))


@settings(max_examples=200, deadline=None)
@given(zone_name=st.sampled_from(ZONES), skip=skips(), data=st.data())
def test_the_instants_held_are_exactly_those_whose_wall_time_is_in_the_span(
    zone_name: str, skip: Skip, data: st.DataObject
) -> None:
    zone = ZoneInfo(zone_name)
    spans = wall_spans(skip, zone)
    assert spans == sorted(spans)
    assert all(a <= b for a, b in spans)
    assert all(b + US < c for (_, b), (c, _) in pairwise(spans))
    # Instants around the span and its ends, to the minute and just beside each end.
    lo = (skip.start - timedelta(hours=16)).replace(tzinfo=UTC)
    for _ in range(40):
        t = lo + timedelta(minutes=data.draw(st.integers(0, 60 * 24 * 4)))
        held = any(a <= t <= b for a, b in spans)
        assert held == (skip.start <= wall(t, zone) <= skip.end), (t, wall(t, zone))
    for a, b in spans:
        for t in (a, b):
            assert skip.start <= wall(t, zone) <= skip.end
        for t in (a - US, b + US):
            assert not any(x <= t <= y for x, y in spans)
            assert not skip.start <= wall(t, zone) <= skip.end


def test_a_day_of_25_hours_and_one_of_23() -> None:
    fall = wall_spans(Skip.day(date(2030, 10, 27)), LONDON)
    assert fall == [
        (datetime(2030, 10, 26, 23, tzinfo=UTC), datetime(2030, 10, 28, tzinfo=UTC) - US)
    ]
    spring = wall_spans(Skip.day(date(2030, 3, 31)), LONDON)
    assert spring == [
        (datetime(2030, 3, 31, tzinfo=UTC), datetime(2030, 3, 31, 23, tzinfo=UTC) - US)
    ]
    # The repeated 01:30 (both passes) is held by a skip of that minute: two instants.
    twice = wall_spans(Skip.minute(datetime(2030, 10, 27, 1, 30)), LONDON)  # noqa: DTZ001 (wall time)
    assert [a for a, _ in twice] == [
        datetime(2030, 10, 27, 0, 30, tzinfo=UTC),
        datetime(2030, 10, 27, 1, 30, tzinfo=UTC),
    ]
    # A minute that doesn't exist holds nothing.
    assert wall_spans(Skip.minute(datetime(2030, 3, 31, 1, 30)), LONDON) == []  # noqa: DTZ001 (wall time)


MINUTES = [datetime(2030, 12, 20) + timedelta(minutes=30 * i) for i in range(48 * 5)]  # noqa: DTZ001 (wall time)


def members(spans: tuple[Skip, ...]) -> set[datetime]:
    return {m for m in MINUTES if any(s.start <= m <= s.end for s in spans)}


@st.composite
def span_on_the_grid(draw: st.DrawFn) -> Skip:
    i = draw(st.integers(0, len(MINUTES) - 1))
    j = draw(st.integers(i, min(len(MINUTES) - 1, i + 60)))
    return Skip(MINUTES[i], MINUTES[j])


@settings(max_examples=200, deadline=None)
@given(spans=st.lists(span_on_the_grid(), max_size=6), taken=span_on_the_grid())
def test_merged_and_without_are_union_and_difference_of_wall_time(
    spans: list[Skip], taken: Skip
) -> None:
    union = merged(spans)
    assert members(union) == members(tuple(spans))
    assert all(a.end + US < b.start for a, b in pairwise(union))
    rest = without(union, taken)
    assert members(rest) == members(union) - members((taken,))
    assert decode_skips(encode_skips(rest)) == rest


def test_a_skip_is_said_in_words_and_labelled_in_none() -> None:
    christmas = Skip.day(date(2030, 12, 25))
    assert christmas.words() == "Wednesday 25 December 2030"
    assert christmas.label() == "2030-12-25"
    evening = Skip.minute(datetime(2030, 12, 25, 18, 0, 30))  # noqa: DTZ001 (wall time)
    assert (evening.start, evening.label()) == (datetime(2030, 12, 25, 18, 0), "2030-12-25 18:00")  # noqa: DTZ001 (wall time)
    holidays = Skip.between(datetime(2030, 12, 24, 18, 0), date(2031, 1, 2))  # noqa: DTZ001 (wall time)
    assert holidays.label() == "2030-12-24 18:00 – 2031-01-02"
    assert holidays.words() == "Tuesday 24 December 2030 18:00 – Thursday 2 January 2031"
    with speaking("fr"):
        assert christmas.words() == "mercredi 25 décembre 2030"


@pytest.mark.parametrize(
    ("text", "locale", "read"),
    [
        ("2030-12-25", None, date(2030, 12, 25)),
        ("25 dec", None, date(2030, 12, 25)),
        ("dec 25 2030", None, date(2030, 12, 25)),
        ("today", None, date(2030, 3, 1)),
        ("friday", None, date(2030, 3, 1)),  # today is a Friday: today
        ("monday", None, date(2030, 3, 4)),
        ("1 mar", None, date(2030, 3, 1)),
        ("28 feb", None, date(2031, 2, 28)),  # passed this year: next year's
        ("24/12", "fr", date(2030, 12, 24)),
        ("25 décembre", "fr", date(2030, 12, 25)),
        ("2030-12-25 18:00", None, datetime(2030, 12, 25, 18, 0)),  # noqa: DTZ001 (wall time)
        ("2030-12-25 18:00 utc", None, datetime(2030, 12, 25, 18, 0)),  # noqa: DTZ001 (wall time)
        ("2030-07-01 18:00 utc", None, datetime(2030, 7, 1, 19, 0)),  # noqa: DTZ001 (read in London: BST)
        ("in 2h", None, datetime(2030, 3, 1, 14, 0)),  # noqa: DTZ001 (wall time)
    ],
)
def test_days_and_times_are_read_like_when(text: str, locale: str | None, read: object) -> None:
    assert parse_day_or_time(text, LONDON, NOW, locale=locale) == read


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("2030-02-28", "has already passed"),
        ("2030-03-01 11:00", "already passed"),
        ("2036-01-01", "too far"),
        ("31 feb", "isn't a real date"),
        ("whenever", "couldn't read"),
    ],
)
def test_what_cannot_be_skipped_is_refused_in_words(text: str, says: str) -> None:
    with pytest.raises(InputError) as refused:
        parse_day_or_time(text, LONDON, NOW)
    assert says in str(refused.value)
