"""Tests for bot.parsing (when, zones, durations): every form, every refusal, fuzzing; fixed now."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from fractions import Fraction
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bot.parsing import (
    COMMON_ZONES,
    MAX_AHEAD,
    InputError,
    discord_timestamp,
    parse_duration,
    parse_when,
    resolve_timezone,
    timezone_choices,
)

# Saturday 2026-03-07 12:00 UTC: London 12:00 GMT, New York 07:00 EST (DST starts tomorrow,
# 2026-03-08), Kolkata 17:30 IST.
NOW = datetime(2026, 3, 7, 12, 0, tzinfo=UTC)
UTC_Z = ZoneInfo("UTC")
LONDON = ZoneInfo("Europe/London")
NEW_YORK = ZoneInfo("America/New_York")
KOLKATA = ZoneInfo("Asia/Kolkata")
ZONES = {"UTC": UTC_Z, "LDN": LONDON, "NY": NEW_YORK, "IN": KOLKATA}


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, us: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, us, tzinfo=UTC)


def error(text: str, tz: ZoneInfo = UTC_Z, now: datetime = NOW) -> str:
    with pytest.raises(InputError) as info:
        parse_when(text, tz, now)
    return str(info.value)


# --------------------------------------------------------------------------- accepted forms


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("in 90m", utc(2026, 3, 7, 13, 30)),
        ("in 2 hours", utc(2026, 3, 7, 14)),
        ("2h30m", utc(2026, 3, 7, 14, 30)),
        ("2h 30m", utc(2026, 3, 7, 14, 30)),
        ("90m", utc(2026, 3, 7, 13, 30)),
        ("90 min", utc(2026, 3, 7, 13, 30)),
        ("1d", utc(2026, 3, 8, 12)),
        ("in 1 day 3 hours", utc(2026, 3, 8, 15)),
        ("1 hour, 30 minutes", utc(2026, 3, 7, 13, 30)),
        ("in 1h and 30m", utc(2026, 3, 7, 13, 30)),
        ("45s", utc(2026, 3, 7, 12, 0, 45)),
        ("in 10 secs", utc(2026, 3, 7, 12, 0, 10)),
        ("in 2 weeks", utc(2026, 3, 21, 12)),
        ("1w", utc(2026, 3, 14, 12)),
        ("in an hour", utc(2026, 3, 7, 13)),
        ("a day", utc(2026, 3, 8, 12)),
        ("1.5h", utc(2026, 3, 7, 13, 30)),
        ("IN 2 HRS", utc(2026, 3, 7, 14)),
        ("  in   5   minutes  ", utc(2026, 3, 7, 12, 5)),
    ],
)
@pytest.mark.parametrize("zone", ZONES.values(), ids=ZONES.keys())
def test_relative_times_ignore_the_zone(text: str, expected: datetime, zone: ZoneInfo) -> None:
    assert parse_when(text, zone, NOW) == expected


def test_relative_keeps_sub_second_precision_of_now() -> None:
    now = NOW.replace(microsecond=250_000)
    assert parse_when("in 1m", UTC_Z, now) == now + timedelta(minutes=1)


def test_results_are_utc() -> None:
    result = parse_when("18:00", NEW_YORK, NOW)
    assert result.tzinfo is UTC


@pytest.mark.parametrize(
    ("text", "zone", "expected"),
    [
        # the next such local time: today if still ahead, else tomorrow
        ("18:00", "UTC", utc(2026, 3, 7, 18)),
        ("18:00", "LDN", utc(2026, 3, 7, 18)),
        ("18:00", "NY", utc(2026, 3, 7, 23)),
        ("18:00", "IN", utc(2026, 3, 7, 12, 30)),
        ("09:00", "UTC", utc(2026, 3, 8, 9)),
        ("09:00", "LDN", utc(2026, 3, 8, 9)),
        ("09:00", "NY", utc(2026, 3, 7, 14)),
        ("09:00", "IN", utc(2026, 3, 8, 3, 30)),
        ("9:05", "UTC", utc(2026, 3, 8, 9, 5)),
        ("6pm", "NY", utc(2026, 3, 7, 23)),
        ("6 PM", "NY", utc(2026, 3, 7, 23)),
        ("6:30 pm", "LDN", utc(2026, 3, 7, 18, 30)),
        ("6:30p.m.", "LDN", utc(2026, 3, 7, 18, 30)),
        ("12am", "UTC", utc(2026, 3, 8, 0)),
        ("12pm", "UTC", utc(2026, 3, 8, 12)),  # exactly now is not in the future
        ("12:00:01", "UTC", utc(2026, 3, 7, 12, 0, 1)),
        ("noon", "IN", utc(2026, 3, 8, 6, 30)),
        ("at 18:00", "UTC", utc(2026, 3, 7, 18)),
        # today / tomorrow
        ("today 18:00", "IN", utc(2026, 3, 7, 12, 30)),
        ("tomorrow 09:00", "UTC", utc(2026, 3, 8, 9)),
        ("tomorrow 09:00", "LDN", utc(2026, 3, 8, 9)),
        ("tomorrow 09:00", "NY", utc(2026, 3, 8, 13)),  # first day of EDT
        ("tomorrow 09:00", "IN", utc(2026, 3, 8, 3, 30)),
        ("tomorrow at 9am", "UTC", utc(2026, 3, 8, 9)),
        ("9am tomorrow", "UTC", utc(2026, 3, 8, 9)),
        ("  Tomorrow   9AM  ", "UTC", utc(2026, 3, 8, 9)),
        ("tmrw 17:30", "UTC", utc(2026, 3, 8, 17, 30)),
        # weekdays: the next occurrence, which may be today
        ("monday 09:00", "LDN", utc(2026, 3, 9, 9)),
        ("next monday 09:00", "NY", utc(2026, 3, 9, 13)),
        ("this mon 9am", "IN", utc(2026, 3, 9, 3, 30)),
        ("on friday at 17:00", "UTC", utc(2026, 3, 13, 17)),
        ("9am on fri", "UTC", utc(2026, 3, 13, 9)),
        ("sat 13:00", "UTC", utc(2026, 3, 7, 13)),
        ("saturday 11:00", "UTC", utc(2026, 3, 14, 11)),
        ("thurs 8pm", "UTC", utc(2026, 3, 12, 20)),
        # ISO dates
        ("2026-12-24 18:00", "UTC", utc(2026, 12, 24, 18)),
        ("2026-12-24 18:00", "LDN", utc(2026, 12, 24, 18)),
        ("2026-12-24 18:00", "NY", utc(2026, 12, 24, 23)),
        ("2026-12-24 18:00", "IN", utc(2026, 12, 24, 12, 30)),
        ("2026-12-24T18:00", "LDN", utc(2026, 12, 24, 18)),
        ("2026-12-24 18:00:30", "UTC", utc(2026, 12, 24, 18, 0, 30)),
        ("2026-07-01 09:00", "LDN", utc(2026, 7, 1, 8)),  # BST
        ("2026-7-1 9am", "NY", utc(2026, 7, 1, 13)),  # EDT
        ("2026/12/24 18:00", "UTC", utc(2026, 12, 24, 18)),
        ("on 2026-12-24 at 18:00", "UTC", utc(2026, 12, 24, 18)),
        ("18:00 on 2026-12-24", "UTC", utc(2026, 12, 24, 18)),
        # month names
        ("dec 24 18:00", "UTC", utc(2026, 12, 24, 18)),
        ("December 24th 6pm", "NY", utc(2026, 12, 24, 23)),
        ("24 Dec 2026 18:00", "IN", utc(2026, 12, 24, 12, 30)),
        ("24th of december, 2027 6pm", "UTC", utc(2027, 12, 24, 18)),
        ("dec 24, 2026 18:00", "UTC", utc(2026, 12, 24, 18)),
        ("march 1 09:00", "UTC", utc(2027, 3, 1, 9)),  # already passed this year
        ("mar 7 13:00", "UTC", utc(2026, 3, 7, 13)),  # later today
        ("feb 29 9am", "UTC", utc(2028, 2, 29, 9)),  # next leap year
        ("18:00 sept 1", "UTC", utc(2026, 9, 1, 18)),
    ],
)
def test_clock_and_date_forms(text: str, zone: str, expected: datetime) -> None:
    assert parse_when(text, ZONES[zone], NOW) == expected


@pytest.mark.parametrize(
    ("text", "zone", "expected"),
    [
        ("18:00 utc", "NY", utc(2026, 3, 7, 18)),
        ("18:00 UTC", "IN", utc(2026, 3, 7, 18)),
        ("18:00 gmt", "NY", utc(2026, 3, 7, 18)),
        ("2026-12-24T18:00Z", "NY", utc(2026, 12, 24, 18)),
        ("18:00 +05:30", "UTC", utc(2026, 3, 7, 12, 30)),
        ("18:00+0530", "UTC", utc(2026, 3, 7, 12, 30)),
        ("18:00 -04:00", "LDN", utc(2026, 3, 7, 22)),
        ("6pm -4", "LDN", utc(2026, 3, 7, 22)),
        ("18:00 utc+2", "NY", utc(2026, 3, 7, 16)),
        ("2026-12-24 18:00 GMT-5", "UTC", utc(2026, 12, 24, 23)),
        ("9am Europe/Paris", "NY", utc(2026, 3, 8, 8)),
        ("tomorrow 9am america/new_york", "IN", utc(2026, 3, 8, 13)),
    ],
)
def test_explicit_zone_or_offset_overrides_the_zone(
    text: str, zone: str, expected: datetime
) -> None:
    assert parse_when(text, ZONES[zone], NOW) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<t:1780000000>", utc(2026, 5, 28, 20, 26, 40)),
        ("<t:1780000000:F>", utc(2026, 5, 28, 20, 26, 40)),
        ("<t:1780000000:R>", utc(2026, 5, 28, 20, 26, 40)),
        ("<t:1780000000:t>", utc(2026, 5, 28, 20, 26, 40)),
        (" <t:1780000000:d> ", utc(2026, 5, 28, 20, 26, 40)),
        ("1780000000", utc(2026, 5, 28, 20, 26, 40)),
        ("1780000000123", utc(2026, 5, 28, 20, 26, 40).replace(microsecond=123_000)),
    ],
)
def test_discord_timestamps_and_epochs(text: str, expected: datetime) -> None:
    assert parse_when(text, NEW_YORK, NOW) == expected


# --------------------------------------------------------------------------- DST


def test_skipped_local_time_is_refused_with_the_next_valid_time() -> None:
    message = error("2026-03-08 02:30", NEW_YORK)
    assert "02:30 doesn't exist on Sunday 8 March 2026 in America/New_York" in message
    assert "jump from 02:00 straight to 03:00" in message
    assert "`2026-03-08 03:00`" in message


def test_skipped_local_time_in_london() -> None:
    message = error("2026-03-29 01:30", LONDON)
    assert "01:30 doesn't exist on Sunday 29 March 2026 in Europe/London" in message
    assert "from 01:00 straight to 02:00" in message
    assert "`2026-03-29 02:00`" in message


@pytest.mark.parametrize("text", ["02:30", "tomorrow 02:30", "sunday 2:30am"])
def test_next_occurrence_falling_in_the_gap_is_refused(text: str) -> None:
    assert "doesn't exist" in error(text, NEW_YORK)


def test_gap_already_behind_us_is_skipped_for_the_next_day() -> None:
    after_gap = utc(2026, 3, 8, 12)  # 08:00 EDT on the day of the change
    assert parse_when("02:30", NEW_YORK, after_gap) == utc(2026, 3, 9, 6, 30)


@pytest.mark.parametrize(
    ("text", "zone", "expected"),
    [
        ("2026-11-01 01:30", NEW_YORK, utc(2026, 11, 1, 5, 30)),  # EDT, the first 01:30
        ("2026-10-25 01:30", LONDON, utc(2026, 10, 25, 0, 30)),  # BST, the first 01:30
    ],
)
def test_repeated_local_time_means_the_first_occurrence(
    text: str, zone: ZoneInfo, expected: datetime
) -> None:
    assert parse_when(text, zone, NOW) == expected


def test_repeated_local_time_between_occurrences_means_the_second() -> None:
    between = utc(2026, 11, 1, 6, 10)  # 01:10 EST, after the first 01:30 (05:30 UTC)
    assert parse_when("01:30", NEW_YORK, between) == utc(2026, 11, 1, 6, 30)


def test_skipped_whole_day() -> None:
    message = error("2011-12-30 12:00", ZoneInfo("Pacific/Apia"), utc(2011, 12, 1))
    assert "12:00 doesn't exist on Friday 30 December 2011 in Pacific/Apia" in message
    assert "from 2011-12-30 00:00 straight to 2011-12-31 00:00" in message
    assert "`2011-12-31 00:00`" in message


def test_half_hour_gap() -> None:
    message = error("2026-10-04 02:15", ZoneInfo("Australia/Lord_Howe"), utc(2026, 9, 1))
    assert "from 02:00 straight to 02:30" in message
    assert "`2026-10-04 02:30`" in message


def test_zone_without_dst_has_no_gap() -> None:
    assert parse_when("2026-03-08 02:30", KOLKATA, NOW) == utc(2026, 3, 7, 21)


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("text", "zone", "understood"),
    [
        ("today 06:00", NEW_YORK, "<t:1772881200:F> (2026-03-07 06:00 America/New_York = "),
        ("today 06:00", NEW_YORK, "2026-03-07 11:00 UTC)"),
        ("today 11:59", UTC_Z, "<t:1772884740:F> (2026-03-07 11:59 UTC)"),
        ("2026-01-01 00:00", KOLKATA, "(2026-01-01 00:00 Asia/Kolkata = 2025-12-31 18:30 UTC)"),
        ("2026-03-07 12:00", LONDON, "(2026-03-07 12:00 Europe/London = 2026-03-07 12:00 UTC)"),
        ("<t:1700000000:R>", UTC_Z, "<t:1700000000:F> (2023-11-14 22:13:20 UTC)"),
        ("1700000000", UTC_Z, "<t:1700000000:F>"),
        ("in 0m", UTC_Z, "<t:1772884800:F> (2026-03-07 12:00 UTC)"),
        ("1999-12-31 23:59", UTC_Z, "(1999-12-31 23:59 UTC)"),
        ("0001-01-01 00:00", KOLKATA, "(0001-01-01 00:00 Asia/Kolkata)"),
        ("2025-03-09 02:30", NEW_YORK, "(2025-03-09 02:30 America/New_York = "),
    ],
)
def test_past_times_are_refused_with_the_time_understood(
    text: str, zone: ZoneInfo, understood: str
) -> None:
    message = error(text, zone)
    assert message.startswith("That time has already passed: I read it as <t:")
    assert understood in message
    assert "`tomorrow 09:00`" in message


@pytest.mark.parametrize(
    "text",
    [
        "2032-01-01 00:00",
        "9999-12-31 23:59",
        "in 6000 days",
        "99999999999999999999h",
        "9" * 30 + "w",
        "<t:99999999999>",
        "<t:" + "9" * 30 + ":F>",
        "9999999999",
    ],
)
def test_too_far_ahead(text: str) -> None:
    message = error(text)
    assert message.startswith("That's too far ahead.")
    assert "up to 5 years ahead (until <t:1930651200:D>)" in message


def test_just_inside_the_limit_is_accepted() -> None:
    assert parse_when(f"in {MAX_AHEAD.days}d", UTC_Z, NOW) == NOW + MAX_AHEAD


@pytest.mark.parametrize("text", ["tomorrow", "today", "monday", "next fri", "dec 24"])
def test_a_day_needs_a_time(text: str) -> None:
    message = error(text)
    assert f"`{text}` needs a time of day too, like `{text} 09:00`" in message


def test_a_date_needs_a_time() -> None:
    assert "`2026-12-24` needs a time of day too, like `2026-12-24 09:00`" in error("2026-12-24")


@pytest.mark.parametrize("text", ["24/12/2026 18:00", "12/24 6pm", "24.12.2026 9am", "1/2"])
def test_slash_dates_are_refused_as_ambiguous(text: str) -> None:
    message = error(text)
    assert "day/month or month/day" in message
    assert "`2026-12-24 18:00`" in message


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("90", "`in 90m`"),
        ("1800", "`18:00`"),
        ("12345678901", "10 digits"),
        ("in 90", "`in 90m`"),
    ],
)
def test_bare_numbers_need_a_unit(text: str, hint: str) -> None:
    message = error(text)
    assert "unit" in message
    assert hint in message


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("25:00", "hours go from `00` to `23`"),
        ("24:00", "hours go from `00` to `23`"),
        ("18:60", "up to 59"),
        ("18:00:75", "up to 59"),
        ("13pm", "`1`–`12` with am/pm"),
        ("0am", "`1`–`12` with am/pm"),
        ("tomorrow 25:00", "hours go from"),
    ],
)
def test_invalid_clock_times(text: str, hint: str) -> None:
    message = error(text)
    assert "isn't a valid time" in message
    assert hint in message


@pytest.mark.parametrize("text", ["2026-02-30 10:00", "feb 30 9am", "31 april 2027 9am"])
def test_impossible_dates(text: str) -> None:
    assert "isn't a real date" in error(text)


def test_unknown_zone_suffix_suggests_names() -> None:
    message = error("9am europe/pariss")
    assert "I don't know the time zone `europe/pariss`" in message
    assert "`Europe/Paris`" in message


def test_offset_out_of_range() -> None:
    assert "`-12:00` to `+14:00`" in error("18:00 +15:00")


@pytest.mark.parametrize(
    "text", ["garbage", "next blursday 9am", "in 2 fortnights", "yesterday 9am", "utc"]
)
def test_unreadable_text_shows_examples(text: str) -> None:
    message = error(text)
    assert message.startswith("I couldn't read that as a time.")
    for sample in ("`in 90m`", "`18:00`", "`tomorrow 09:00`", "`2026-12-24 18:00`"):
        assert sample in message
    assert "`<t:1735000000>`" in message


def test_examples_use_a_date_still_ahead() -> None:
    assert "`2027-12-24 18:00`" in error("garbage", now=utc(2026, 12, 24, 12))


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty(text: str) -> None:
    assert "Please say when" in error(text)


def test_now_is_refused() -> None:
    assert "`in 1m`" in error("now")


def test_too_long() -> None:
    assert "too long" in error("in 1m " * 30)


def test_naive_now_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="aware") as info:
        parse_when("in 1m", UTC_Z, datetime(2026, 1, 1))  # noqa: DTZ001 (naive on purpose: the refusal under test)
    assert not isinstance(info.value, InputError)


# --------------------------------------------------------------------------- properties

_NOW_TS = int(NOW.timestamp())
_LIMIT_TS = int((NOW + MAX_AHEAD).timestamp())


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120))
def test_arbitrary_text_only_ever_raises_input_error(text: str) -> None:
    _check_total(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789 :/-.+,apmtdhswkyinoxzuc<>TZFR", max_size=30))
def test_time_like_text_only_ever_raises_input_error(text: str) -> None:
    _check_total(text)


@settings(max_examples=100, deadline=None)
@given(
    st.integers(min_value=0, max_value=10**40),
    st.sampled_from(["s", "m", "h", "d", "w", "hours", " days"]),
    st.sampled_from(["", "in ", "<t:", "<t:-"]),
)
def test_huge_numbers_are_input_errors(number: int, unit: str, prefix: str) -> None:
    _check_total(f"{prefix}{number}{unit if prefix != '<t:' else '>'}")


def _check_total(text: str) -> None:
    for zone in (UTC_Z, NEW_YORK):
        try:
            result = parse_when(text, zone, NOW)
        except InputError as e:
            assert str(e)  # noqa: PT017 (refusing is one allowed outcome)
        else:
            assert result.tzinfo is UTC
            assert NOW < result <= NOW + MAX_AHEAD


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=_NOW_TS + 1, max_value=_LIMIT_TS), st.sampled_from("tTdDfFR"))
def test_discord_timestamp_round_trip(n: int, style: str) -> None:
    assert parse_when(f"<t:{n}>", KOLKATA, NOW).timestamp() == n
    assert parse_when(f"<t:{n}:{style}>", KOLKATA, NOW).timestamp() == n
    when = parse_when(f"<t:{n}>", KOLKATA, NOW)
    assert discord_timestamp(when) == f"<t:{n}:F>"


def _next_wall_time(now: datetime, hour: int, minute: int, zone: ZoneInfo) -> datetime:
    """The first instant after ``now`` at which the clocks in ``zone`` read hour:minute:00,
    found by walking whole UTC minutes (every offset here is a whole number of minutes)."""
    t = now.replace(second=0, microsecond=0) + timedelta(minutes=1)
    while True:
        local = t.astimezone(zone)
        if (local.hour, local.minute) == (hour, minute):
            return t
        t += timedelta(minutes=1)


def _skipped_on_the_next_day_it_was_due(
    now: datetime, hour: int, minute: int, zone: ZoneInfo
) -> bool:
    """Whether hour:minute does not exist on the first local day, from now's own, on which
    it would still be ahead of now (a DST gap swallowed it)."""
    day = now.astimezone(zone).date()
    for k in range(3):
        wall = datetime.combine(day + timedelta(days=k), time(hour, minute))
        aware = wall.replace(tzinfo=zone)
        exists = aware.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == wall
        if exists and (aware > now or aware.replace(fold=1) > now):
            return False
        if not exists and aware > now:  # the gap is still ahead
            return True
    return False


@settings(max_examples=200, deadline=None)
@given(
    st.datetimes(
        min_value=datetime(2026, 1, 1),  # noqa: DTZ001 (hypothesis takes naive bounds)
        max_value=datetime(2030, 12, 31),  # noqa: DTZ001 (hypothesis takes naive bounds)
        timezones=st.just(UTC),
    ),
    st.integers(0, 23),
    st.integers(0, 59),
    st.sampled_from(list(ZONES.values())),
)
# Pinned cases: today still ahead, just passed (tomorrow), and both DST nights.
@example(utc(2026, 3, 7, 12), 18, 0, NEW_YORK)  # today, 23:00 UTC
@example(utc(2026, 3, 7, 12), 6, 59, NEW_YORK)  # passed today: tomorrow, in EDT
@example(utc(2026, 3, 7, 11, 59, 59, 999_999), 12, 0, UTC_Z)  # a microsecond ahead
@example(utc(2026, 3, 7, 12), 12, 0, UTC_Z)  # exactly now: tomorrow
@example(utc(2026, 3, 28, 12), 1, 30, LONDON)  # tonight's 01:30 is skipped: refused
@example(utc(2026, 3, 29, 1, 0), 1, 59, LONDON)  # the gap is behind us: the 30th
@example(utc(2026, 10, 24, 23, 50), 1, 30, LONDON)  # happens twice: the first (BST)
@example(utc(2026, 10, 25, 0, 45), 1, 30, LONDON)  # between the two: the second (GMT)
@example(utc(2026, 10, 25, 1, 45), 1, 30, LONDON)  # both behind us: the 26th
def test_clock_time_is_the_next_matching_wall_time(
    now: datetime, hour: int, minute: int, zone: ZoneInfo
) -> None:
    expected = _next_wall_time(now, hour, minute, zone)
    try:
        result = parse_when(f"{hour:02d}:{minute:02d}", zone, now)
    except InputError as e:
        assert "doesn't exist" in str(e)  # noqa: PT017 (refusing is one allowed outcome)
        assert _skipped_on_the_next_day_it_was_due(now, hour, minute, zone), (now, expected)
        return
    assert not _skipped_on_the_next_day_it_was_due(now, hour, minute, zone)
    assert result == expected
    assert result.tzinfo is UTC


def test_the_next_matching_wall_time_is_today_or_tomorrow_exactly() -> None:
    now = utc(2026, 3, 7, 12)  # 07:00 EST, 12:00 GMT, 17:30 IST
    assert parse_when("07:01", NEW_YORK, now) == utc(2026, 3, 7, 12, 1)  # today
    assert parse_when("07:00", NEW_YORK, now) == utc(2026, 3, 8, 11)  # tomorrow, EDT
    assert parse_when("17:29", KOLKATA, now) == utc(2026, 3, 8, 11, 59)  # tomorrow
    assert parse_when("17:31", KOLKATA, now) == utc(2026, 3, 7, 12, 1)  # today
    assert parse_when("01:30", LONDON, utc(2026, 10, 25, 0, 45)) == utc(2026, 10, 25, 1, 30)


# --------------------------------------------------------------------------- time zones


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Europe/London", "Europe/London"),
        ("europe/london", "Europe/London"),
        ("  EUROPE/LONDON ", "Europe/London"),
        ("UTC", "UTC"),
        ("utc", "UTC"),
        ("america/new york", "America/New_York"),
        ("asia/kolkata", "Asia/Kolkata"),
        ("america/argentina/buenos_aires", "America/Argentina/Buenos_Aires"),
    ],
)
def test_resolve_timezone(name: str, key: str) -> None:
    assert resolve_timezone(name) == ZoneInfo(key)
    assert resolve_timezone(name).key == key


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("Europe/Lodnon", "`Europe/London`"),
        ("london", "`Europe/London`"),
        ("new york", "`America/New_York`"),
        ("Asia/Calcutta ", "`Asia/Calcutta`"),
        ("America/NewYork", "`America/New_York`"),
        ("kolkatta", "`Asia/Kolkata`"),
    ],
)
def test_resolve_timezone_suggests_close_names(name: str, suggestion: str) -> None:
    try:
        resolve_timezone(name)
    except InputError as e:
        assert "Did you mean" in str(e)  # noqa: PT017 (refusing is one allowed outcome)
        assert suggestion in str(e)  # noqa: PT017 (refusing is one allowed outcome)
    else:
        assert suggestion.strip("`") == resolve_timezone(name).key


def test_resolve_timezone_without_suggestions() -> None:
    with pytest.raises(InputError) as info:
        resolve_timezone("qqqqqqqqq")
    assert "I don't know the time zone `qqqqqqqqq`" in str(info.value)
    assert "`Europe/London`" in str(info.value)


@pytest.mark.parametrize("name", ["", "   ", "``"])
def test_resolve_timezone_empty(name: str) -> None:
    with pytest.raises(InputError, match="Please give a time zone"):
        resolve_timezone(name)


@pytest.mark.parametrize("name", ["localtime", "Factory", "posixrules", "../etc/passwd"])
def test_resolve_timezone_refuses_non_zones(name: str) -> None:
    with pytest.raises(InputError):
        resolve_timezone(name)


def test_resolve_timezone_echo_is_sanitised() -> None:
    with pytest.raises(InputError) as info:
        resolve_timezone("`evil`\x00" + "x" * 100)
    message = str(info.value)
    assert "\x00" not in message
    assert "`evilxxxx" in message
    assert "…`" in message


def test_timezone_choices_empty_prefix_gives_common_zones() -> None:
    assert timezone_choices("") == list(COMMON_ZONES[:25])
    assert timezone_choices("", limit=3) == ["UTC", "Europe/London", "America/New_York"]
    assert len(timezone_choices("", limit=100)) == 100


@pytest.mark.parametrize(
    ("prefix", "first"),
    [
        ("lon", "Europe/London"),
        ("LONDON", "Europe/London"),
        ("utc", "UTC"),
        ("york", "America/New_York"),
        ("new y", "America/New_York"),
        ("america/", "America/New_York"),
        ("europe/l", "Europe/London"),
        ("kolk", "Asia/Kolkata"),
        ("asia", "Asia/Dubai"),
    ],
)
def test_timezone_choices_best_first(prefix: str, first: str) -> None:
    assert timezone_choices(prefix)[0] == first


def test_timezone_choices_prefix_before_substring() -> None:
    choices = timezone_choices("an", limit=1000)
    assert all("an" in c.lower() for c in choices)
    starts = [c.lower().startswith("an") for c in choices]
    assert starts == sorted(starts, reverse=True)
    assert choices[0].startswith("Antarctica/")


@pytest.mark.parametrize("limit", [0, 1, 5, 25])
def test_timezone_choices_limit(limit: int) -> None:
    assert len(timezone_choices("a", limit)) == limit
    assert timezone_choices("a", -1) == []


def test_timezone_choices_no_match() -> None:
    assert timezone_choices("xyz123") == []


def test_timezone_choices_resolve() -> None:
    for name in timezone_choices("e", limit=1000):
        assert resolve_timezone(name).key == name


# --------------------------------------------------------------------------- helpers


def test_discord_timestamp() -> None:
    assert discord_timestamp(utc(2024, 8, 30, 6, 40)) == "<t:1725000000:F>"
    assert discord_timestamp(utc(2024, 8, 30, 6, 40), "R") == "<t:1725000000:R>"
    aware = datetime(2024, 8, 30, 7, 40, 0, 999_999, tzinfo=LONDON)
    assert discord_timestamp(aware, "t") == "<t:1725000000:t>"
    assert discord_timestamp(utc(1969, 12, 31, 23, 59, 59, 500_000)) == "<t:-1:F>"


def test_discord_timestamp_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="style"):
        discord_timestamp(NOW, "x")
    with pytest.raises(ValueError, match="aware"):
        discord_timestamp(datetime(2026, 1, 1))  # noqa: DTZ001 (naive on purpose: the refusal under test)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90m", 5400),
        ("1 day, 3 hours", 97200),
        ("an hour and 30 secs", 3630),
        ("1.5h", 5400),
        ("0.25 min", 15),
        ("1w2d", 777600),
    ],
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == Fraction(seconds)


@pytest.mark.parametrize(
    "text", ["", "90", "5 months", "and 5m", ", 5m", "1h 30", "ad", "h", "1" * 5000 + "s"]
)
def test_parse_duration_rejects(text: str) -> None:
    assert parse_duration(text) is None


def test_discord_timestamp_of_a_stored_time() -> None:
    """Epoch seconds (how times are stored) render like the instant they stand for."""
    assert discord_timestamp(1725000000.75, "f") == "<t:1725000000:f>"
    assert discord_timestamp(-0.5) == discord_timestamp(utc(1969, 12, 31, 23, 59, 59, 500_000))
    with pytest.raises(ValueError, match="style"):
        discord_timestamp(1725000000.0, "x")
