"""Tests for bot.parsing.repeat: presets across DST, intervals, cron validation and descriptions."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.parsing import (
    MAX_INTERVAL,
    MIN_INTERVAL,
    InputError,
    RepeatRule,
    describe_cron,
    next_times,
    parse_repeat,
    parse_when,
    repeat_kind,
)
from scheduler.triggers import Cron, DateStep, Interval

UTC_Z = ZoneInfo("UTC")
LONDON = ZoneInfo("Europe/London")
NEW_YORK = ZoneInfo("America/New_York")
KOLKATA = ZoneInfo("Asia/Kolkata")

# Friday 2026-03-20 09:00 in London (GMT; BST starts on Sunday 2026-03-29).
FIRST = datetime(2026, 3, 20, 9, 0, tzinfo=LONDON)


def local(zone: ZoneInfo, *args: int) -> datetime:
    year, month, day, hour, minute = (*args, 0)[:5]
    return datetime(year, month, day, hour, minute, tzinfo=zone)


def error(text: str, first: datetime = FIRST, tz: ZoneInfo = LONDON) -> str:
    with pytest.raises(InputError) as info:
        parse_repeat(text, first, tz)
    return str(info.value)


def cron_fires(rule: RepeatRule | None, first: datetime, tz: ZoneInfo, n: int) -> list[datetime]:
    """The next ``n`` fire times after ``first``, computed by the engine's own trigger."""
    assert rule is not None
    assert rule.cron is not None
    trigger = Cron(rule.cron, tz)
    fires, t = [], first
    for _ in range(n):
        t = trigger.next_after(t)
        fires.append(t.astimezone(tz))
    return fires


# --------------------------------------------------------------------------- no repeat


@pytest.mark.parametrize("text", ["", "  ", "once", "ONCE", "none", "no", "never", "off"])
def test_no_repeat(text: str) -> None:
    assert parse_repeat(text, FIRST, LONDON) is None


# --------------------------------------------------------------------------- presets


@pytest.mark.parametrize(
    ("text", "first", "cron", "words"),
    [
        ("daily", FIRST, "0 9 * * *", "every day at 09:00 (Europe/London)"),
        ("every day", FIRST, "0 9 * * *", "every day at 09:00 (Europe/London)"),
        ("Every 1 day", FIRST, "0 9 * * *", "every day at 09:00 (Europe/London)"),
        ("each day", FIRST, "0 9 * * *", "every day at 09:00 (Europe/London)"),
        (
            "daily",
            local(NEW_YORK, 2026, 10, 29, 18, 30),
            "30 18 * * *",
            "every day at 18:30 (America/New_York)",
        ),
        (
            "daily",
            local(KOLKATA, 2026, 3, 7, 17, 45),
            "45 17 * * *",
            "every day at 17:45 (Asia/Kolkata)",
        ),
        # `first` in another zone: the rule uses its wall time in the announcement's zone
        (
            "daily",
            datetime(2026, 7, 1, 8, 0, tzinfo=UTC),
            "0 9 * * *",
            "every day at 09:00 (Europe/London)",
        ),
        ("weekly", FIRST, "0 9 * * 5", "every Friday at 09:00 (Europe/London)"),
        ("every week", FIRST, "0 9 * * 5", "every Friday at 09:00 (Europe/London)"),
        (
            "weekly",
            local(NEW_YORK, 2026, 11, 1, 8),
            "0 8 * * 0",
            "every Sunday at 08:00 (America/New_York)",
        ),
        ("monthly", FIRST, "0 9 20 * *", "at 09:00 on day 20 of the month (Europe/London)"),
        (
            "every month",
            local(KOLKATA, 2026, 1, 15, 9),
            "0 9 15 * *",
            "at 09:00 on day 15 of the month (Asia/Kolkata)",
        ),
        (
            "monthly",
            local(LONDON, 2026, 1, 31, 9),
            "0 9 L * *",
            "at 09:00 on the last day of the month (Europe/London)",
        ),
        (
            "monthly",
            local(LONDON, 2026, 4, 30, 9),
            "0 9 30 * *",
            "at 09:00 on day 30 of the month, skipping months without a day 30 (Europe/London)",
        ),
        ("yearly", FIRST, "0 9 20 3 *", "every year on 20 March at 09:00 (Europe/London)"),
        ("annually", FIRST, "0 9 20 3 *", "every year on 20 March at 09:00 (Europe/London)"),
        ("every 12 months", FIRST, "0 9 20 3 *", "every year on 20 March at 09:00 (Europe/London)"),
        (
            "yearly",
            local(UTC_Z, 2028, 2, 29, 12),
            "0 12 29 2 *",
            "every year on 29 February at 12:00, only in leap years (UTC)",
        ),
        ("every weekday", FIRST, "0 9 * * 1-5", "at 09:00, Monday through Friday (Europe/London)"),
        ("weekdays", FIRST, "0 9 * * 1-5", "at 09:00, Monday through Friday (Europe/London)"),
        ("weekends", FIRST, "0 9 * * 0,6", "at 09:00 on Saturday and Sunday (Europe/London)"),
        ("every monday", FIRST, "0 9 * * 1", "every Monday at 09:00 (Europe/London)"),
        ("Mondays", FIRST, "0 9 * * 1", "every Monday at 09:00 (Europe/London)"),
        (
            "every mon, wed and fri",
            FIRST,
            "0 9 * * 1,3,5",
            "at 09:00 on Monday, Wednesday and Friday (Europe/London)",
        ),
        ("tues & thurs", FIRST, "0 9 * * 2,4", "at 09:00 on Tuesday and Thursday (Europe/London)"),
        ("every sunday", FIRST, "0 9 * * 0", "every Sunday at 09:00 (Europe/London)"),
        (
            "every 3 months",
            local(UTC_Z, 2026, 11, 5, 10, 15),
            "15 10 5 2,5,8,11 *",
            "at 10:15 on day 5 of February, May, August and November (UTC)",
        ),
        (
            "every other month",
            FIRST,
            "0 9 20 1,3,5,7,9,11 *",
            "at 09:00 on day 20 of January, March, May, July, September and November"
            " (Europe/London)",
        ),
        ("every 1 month", FIRST, "0 9 20 * *", "at 09:00 on day 20 of the month (Europe/London)"),
    ],
)
def test_presets(text: str, first: datetime, cron: str, words: str) -> None:
    zone = first.tzinfo if isinstance(first.tzinfo, ZoneInfo) else LONDON
    assert parse_repeat(text, first, zone) == RepeatRule("cron", cron, None, words)


def test_presets_drop_seconds() -> None:
    rule = parse_repeat("daily", datetime(2026, 3, 20, 9, 0, 42, tzinfo=LONDON), LONDON)
    assert rule is not None
    assert rule.cron == "0 9 * * *"


@pytest.mark.parametrize("text", ["hourly", "every hour", "every 1h", "each hour"])
def test_hourly_is_an_interval(text: str) -> None:
    assert parse_repeat(text, FIRST, LONDON) == RepeatRule(
        "interval", None, timedelta(hours=1), "every hour"
    )


# --------------------------------------------------------------------------- DST


def test_daily_keeps_local_time_across_spring_forward() -> None:
    rule = parse_repeat("daily", FIRST, LONDON)
    fires = cron_fires(rule, local(LONDON, 2026, 3, 26, 9), LONDON, 6)
    assert [(f.month, f.day, f.hour, f.minute) for f in fires] == [
        (3, 27, 9, 0),
        (3, 28, 9, 0),
        (3, 29, 9, 0),  # first day of BST
        (3, 30, 9, 0),
        (3, 31, 9, 0),
        (4, 1, 9, 0),
    ]
    assert [f.astimezone(UTC).hour for f in fires] == [9, 9, 8, 8, 8, 8]


def test_weekly_keeps_local_time_across_fall_back() -> None:
    first = local(NEW_YORK, 2026, 10, 22, 18, 30)  # Thursday, EDT
    rule = parse_repeat("weekly", first, NEW_YORK)
    fires = cron_fires(rule, first, NEW_YORK, 3)
    assert [f.isoformat() for f in fires] == [
        "2026-10-29T18:30:00-04:00",
        "2026-11-05T18:30:00-05:00",
        "2026-11-12T18:30:00-05:00",
    ]
    assert [f.astimezone(UTC).hour for f in fires] == [22, 23, 23]


def test_weekdays_skip_the_weekend_across_dst() -> None:
    first = local(LONDON, 2026, 3, 27, 8)  # Friday
    fires = cron_fires(parse_repeat("every weekday", first, LONDON), first, LONDON, 3)
    assert [(f.month, f.day, f.hour) for f in fires] == [(3, 30, 8), (3, 31, 8), (4, 1, 8)]


def test_monthly_on_the_31st_uses_the_last_day() -> None:
    first = local(KOLKATA, 2026, 1, 31, 9)
    fires = cron_fires(parse_repeat("monthly", first, KOLKATA), first, KOLKATA, 4)
    assert [(f.month, f.day, f.hour) for f in fires] == [
        (2, 28, 9),
        (3, 31, 9),
        (4, 30, 9),
        (5, 31, 9),
    ]


def test_monthly_on_the_30th_skips_february() -> None:
    first = local(NEW_YORK, 2026, 1, 30, 9)
    fires = cron_fires(parse_repeat("monthly", first, NEW_YORK), first, NEW_YORK, 2)
    assert [(f.month, f.day, f.hour) for f in fires] == [(3, 30, 9), (4, 30, 9)]


def test_hourly_interval_keeps_the_minute_across_fall_back() -> None:
    first = local(LONDON, 2026, 10, 24, 23, 15)
    rule = parse_repeat("hourly", first, LONDON)
    assert rule is not None
    assert rule.every is not None
    trigger = Interval(rule.every, first)
    t, fires = first, []
    for _ in range(4):
        t = trigger.next_after(t)
        fires.append(t.astimezone(LONDON))
    assert [(f.hour, f.minute) for f in fires] == [(0, 15), (1, 15), (1, 15), (2, 15)]
    assert fires[1].fold == 0
    assert fires[2].fold == 1


# --------------------------------------------------------------------------- intervals


@pytest.mark.parametrize(
    ("text", "every", "words"),
    [
        ("every 30 minutes", timedelta(minutes=30), "every 30 minutes"),
        ("every 2h", timedelta(hours=2), "every 2 hours"),
        ("every 2 hours", timedelta(hours=2), "every 2 hours"),
        ("every 1.5 hours", timedelta(minutes=90), "every 1 hour and 30 minutes"),
        ("every 2h30m", timedelta(minutes=150), "every 2 hours and 30 minutes"),
        ("90m", timedelta(minutes=90), "every 1 hour and 30 minutes"),
        ("45 mins", timedelta(minutes=45), "every 45 minutes"),
        ("every 90 seconds", timedelta(seconds=90), "every 1 minute and 30 seconds"),
        ("every minute", timedelta(minutes=1), "every minute"),
        ("every 1 minute", timedelta(minutes=1), "every minute"),
        ("every 60s", timedelta(minutes=1), "every minute"),
        ("every 36 hours", timedelta(hours=36), "every 1 day and 12 hours"),
        ("repeat every 3h", timedelta(hours=3), "every 3 hours"),
    ],
)
def test_intervals(text: str, every: timedelta, words: str) -> None:
    assert parse_repeat(text, FIRST, LONDON) == RepeatRule("interval", None, every, words)


@pytest.mark.parametrize(
    "text", ["every 59s", "every 30 seconds", "every 0 minutes", "0.5m", "every second"]
)
def test_too_frequent(text: str) -> None:
    message = error(text)
    assert "too often" in message
    assert "1 minute" in message
    assert "`every 5 minutes`" in message


@pytest.mark.parametrize(
    "text", ["every 367 days", "every 53 weeks", "every 99999999999999999999h", "9" * 40 + "w"]
)
def test_too_long(text: str) -> None:
    message = error(text)
    assert "too long" in message
    assert "366 days" in message
    assert "`yearly`" in message


def test_interval_bounds() -> None:
    assert timedelta(minutes=1) == MIN_INTERVAL
    assert timedelta(days=366) == MAX_INTERVAL


@pytest.mark.parametrize(
    ("text", "cron", "step"),
    [
        # Whole days and weeks are local-time date steps from the first occurrence (Friday
        # 2026-03-20 09:00 in London), not 24-hour multiples: they keep 09:00 across DST.
        ("every 2 days", "0 9 * * *", DateStep(2, "day", date(2026, 3, 20))),
        ("every other day", "0 9 * * *", DateStep(2, "day", date(2026, 3, 20))),
        ("every 10 days", "0 9 * * *", DateStep(10, "day", date(2026, 3, 20))),
        ("every 366 days", "0 9 * * *", DateStep(366, "day", date(2026, 3, 20))),
        ("every 2 weeks", "0 9 * * 5", DateStep(2, "week", date(2026, 3, 20))),
        ("every other week", "0 9 * * 5", DateStep(2, "week", date(2026, 3, 20))),
        ("every 5 months", "0 9 20 * *", DateStep(5, "month", date(2026, 3, 20))),
    ],
)
def test_day_week_and_month_steps_are_local_date_steps(
    text: str, cron: str, step: DateStep
) -> None:
    rule = parse_repeat(text, FIRST, LONDON)
    assert rule is not None
    assert (rule.kind, rule.cron, rule.every, rule.step) == ("cron", cron, None, step)


def test_every_2_weeks_keeps_0900_across_spring_forward() -> None:
    rule = parse_repeat("every 2 weeks", FIRST, LONDON)
    assert rule is not None
    fires = next_times(rule, FIRST, LONDON, 3)
    # 2026-03-20 GMT, then 2026-04-03 and 2026-04-17 in BST (from 2026-03-29): 08:00 UTC.
    assert fires == [
        datetime(2026, 3, 20, 9, tzinfo=UTC),
        datetime(2026, 4, 3, 8, tzinfo=UTC),
        datetime(2026, 4, 17, 8, tzinfo=UTC),
    ]


@pytest.mark.parametrize(("text", "hint"), [("every 13 months", "`every 6 months`")])
def test_unsupported_month_steps(text: str, hint: str) -> None:
    message = error(text)
    assert "every 1 to 12 months" in message
    assert hint in message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("every year on feb 30", "February has no day 30."),
        ("yearly on 31 april", "April has no day 31."),
    ],
)
def test_a_yearly_date_no_year_has_is_refused(text: str, message: str) -> None:
    assert error(text) == message


def test_a_yearly_29_february_is_a_date() -> None:
    rule = parse_repeat("every year on feb 29", FIRST, LONDON)
    assert rule is not None
    assert rule.cron == "0 9 29 2 *"


@pytest.mark.parametrize("text", ["every 2 years", "3 years"])
def test_multi_year_steps(text: str) -> None:
    assert "`yearly`" in error(text)


# --------------------------------------------------------------------------- cron


@pytest.mark.parametrize(
    ("text", "cron", "words"),
    [
        ("0 9 * * 1-5", "0 9 * * 1-5", "at 09:00, Monday through Friday (America/New_York)"),
        (
            "0 9 * * mon-fri",
            "0 9 * * MON-FRI",
            "at 09:00, Monday through Friday (America/New_York)",
        ),
        (
            "  0  9 * *   MON-FRI ",
            "0 9 * * MON-FRI",
            "at 09:00, Monday through Friday (America/New_York)",
        ),
        ("*/15 * * * *", "*/15 * * * *", "every 15 minutes (America/New_York)"),
        ("* * * * *", "* * * * *", "every minute (America/New_York)"),
        ("0 12 L * *", "0 12 L * *", "at 12:00 on the last day of the month (America/New_York)"),
        ("@daily", "0 0 * * *", "every day at 00:00 (America/New_York)"),
        ("@weekly", "0 0 * * 0", "every Sunday at 00:00 (America/New_York)"),
        ("5 4 * * sun", "5 4 * * SUN", "every Sunday at 04:05 (America/New_York)"),
        ("0 0 1 1 *", "0 0 1 1 *", "every year on 1 January at 00:00 (America/New_York)"),
        ("0 0 1,15 * *", "0 0 1,15 * *", "cron `0 0 1,15 * *` (America/New_York)"),
    ],
)
def test_cron_expressions(text: str, cron: str, words: str) -> None:
    assert parse_repeat(text, FIRST, NEW_YORK) == RepeatRule("cron", cron, None, words)


def test_cron_is_evaluated_in_the_zone() -> None:
    rule = parse_repeat("0 9 * * 1-5", FIRST, NEW_YORK)
    fires = cron_fires(rule, local(NEW_YORK, 2026, 3, 6, 10), NEW_YORK, 2)
    assert [f.astimezone(UTC) for f in fires] == [
        datetime(2026, 3, 9, 13, tzinfo=UTC),  # EDT from 2026-03-08
        datetime(2026, 3, 10, 13, tzinfo=UTC),
    ]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("0 9 * * 8", "day-of-week field '8': 8 is out of range 0-7"),
        ("0 25 * * *", "hour field '25': 25 is out of range 0-23"),
        ("60 9 * * *", "minute field '60'"),
        ("0 9 32 * *", "day-of-month field '32'"),
        ("0 9 * 13 *", "month field '13'"),
        ("0 9 * * blah", "day-of-week field 'BLAH'"),
        ("0 9 * *", "expected 5 fields"),
        ("0 9 * * 1-5 2026", "expected 5 fields"),
        ("0 9 *", "got 3"),
        ("0 0 30 2 *", "never fire"),
        ("0 9 ? * *", "'?' is not supported"),
        ("0 9 * * 5-1", "range start"),
    ],
)
def test_invalid_cron_is_explained(text: str, reason: str) -> None:
    message = error(text)
    assert "isn't a valid cron expression" in message
    assert reason in message
    assert "`0 9 * * 1-5`" in message
    assert "minute hour day month weekday" in message


def test_unknown_macro() -> None:
    assert "`@daily`" in error("@fortnightly")


@pytest.mark.parametrize("text", ["blah", "every blursday", "sometimes", "every", "in 5 minutes"])
def test_unreadable(text: str) -> None:
    message = error(text)
    assert message.startswith("I couldn't read that as a repeat rule.")
    for example in ("`daily`", "`weekly`", "`every 2 hours`", "`0 9 * * 1-5`"):
        assert example in message


def test_too_long_text() -> None:
    assert "too long" in error("every 1m " * 20)


def test_naive_first_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="aware") as info:
        parse_repeat("daily", datetime(2026, 1, 1), LONDON)  # noqa: DTZ001 (naive on purpose: the refusal under test)
    assert not isinstance(info.value, InputError)


def test_repeat_rule_invariants() -> None:
    with pytest.raises(ValueError, match="inconsistent"):
        RepeatRule("cron", None, timedelta(hours=1), "x")
    with pytest.raises(ValueError, match="inconsistent"):
        RepeatRule("interval", "0 9 * * *", None, "x")
    with pytest.raises(ValueError, match="inconsistent"):
        RepeatRule("cron", "0 9 * * *", timedelta(hours=1), "x")


def test_works_with_parse_when() -> None:
    now = datetime(2026, 3, 20, 12, tzinfo=UTC)
    first = parse_when("monday 09:00", NEW_YORK, now)
    assert parse_repeat("weekly", first, NEW_YORK) == RepeatRule(
        "cron", "0 9 * * 1", None, "every Monday at 09:00 (America/New_York)"
    )


# --------------------------------------------------------------------------- describe_cron


@pytest.mark.parametrize(
    ("expr", "words"),
    [
        ("0 9 * * *", "every day at 09:00"),
        ("0 9 * * 1-5", "at 09:00, Monday through Friday"),
        ("0 9 * * MON-FRI", "at 09:00, Monday through Friday"),
        ("0 9 * * mon-fri", "at 09:00, Monday through Friday"),
        ("30 17 * * 1-3", "at 17:30, Monday through Wednesday"),
        ("0 10 * * 5-7", "at 10:00, Friday through Sunday"),
        ("0 10 * * FRI-SUN", "at 10:00, Friday through Sunday"),
        ("0 9 * * 0-6", "every day at 09:00"),
        ("0 9 * * 0,6", "at 09:00 on Saturday and Sunday"),
        ("0 9 * * 7", "every Sunday at 09:00"),
        ("0 9 * * 1,3,5", "at 09:00 on Monday, Wednesday and Friday"),
        ("*/15 * * * *", "every 15 minutes"),
        ("*/1 * * * *", "every minute"),
        ("* * * * *", "every minute"),
        ("5 * * * *", "every hour at :05"),
        ("0 */2 * * *", "every 2 hours at :00"),
        ("30 */1 * * *", "every hour at :30"),
        ("0 9,17 * * *", "every day at 09:00 and 17:00"),
        ("0 9,12,17 * * 1-5", "at 09:00, 12:00 and 17:00, Monday through Friday"),
        ("0 0 1 * *", "at 00:00 on day 1 of the month"),
        ("0 12 L * *", "at 12:00 on the last day of the month"),
        ("0 12 31 * *", "at 12:00 on day 31 of the month, skipping months without a day 31"),
        ("0 18 24 12 *", "every year on 24 December at 18:00"),
        ("0 18 24 DEC *", "every year on 24 December at 18:00"),
        ("0 0 L 2 *", "at 00:00 on the last day of February"),
        ("0 0 1 1,7 *", "at 00:00 on day 1 of January and July"),
        ("@daily", "every day at 00:00"),
        ("@hourly", "every hour at :00"),
    ],
)
def test_describe_cron(expr: str, words: str) -> None:
    assert describe_cron(expr, "Europe/London") == f"{words} (Europe/London)"


@pytest.mark.parametrize(
    "expr",
    [
        "*/7 * * * *",
        "0-30/10 * * * *",
        "0 */5 * * *",
        "0 9 1 * 1",
        "0 9 * 1 *",
        "0 9 * * */2",
        "0 9 * * 5-1",
        "0 9 * JAN-MAR *",
        "0 9-17 * * *",
        "0 9 * *",
        "",
    ],
)
def test_describe_cron_falls_back_to_the_expression(expr: str) -> None:
    assert describe_cron(expr, "UTC") == f"cron `{expr}` (UTC)"


# --------------------------------------------------------------------------- properties


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_arbitrary_text_only_ever_raises_input_error(text: str) -> None:
    _check_total(text)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["*", "*/5", "0", "9", "1-5", "MON", "L", "31", "2", ",", "every", "2h"]),
        max_size=7,
    )
)
def test_cron_like_text_only_ever_raises_input_error(parts: list[str]) -> None:
    _check_total(" ".join(parts))


def _check_total(text: str) -> None:
    try:
        rule = parse_repeat(text, FIRST, NEW_YORK)
    except InputError as e:
        assert str(e)  # noqa: PT017 (refusing is one allowed outcome)
        return
    if rule is None:
        return
    assert rule.words
    if rule.kind == "cron":
        assert rule.cron is not None
        Cron(rule.cron, NEW_YORK)
    else:
        assert rule.every is not None
        assert MIN_INTERVAL <= rule.every <= MAX_INTERVAL


def test_a_stored_repeat_kind_is_read_back_and_an_unknown_one_refused() -> None:
    assert repeat_kind("cron") == "cron"
    assert repeat_kind("interval") == "interval"
    with pytest.raises(ValueError, match="unknown repeat kind 'weekly'"):
        repeat_kind("weekly")
