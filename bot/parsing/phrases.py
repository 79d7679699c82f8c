"""Repeat rules as people type them: ``every friday at 8pm``, ``at 9:00 and 17:00 every
day``, ``biweekly``, ``every 2nd and 4th thursday``, ``last day of the month``,
``monthly on the 15th``, ``every year on december 24 at 18:00``…

:func:`read_phrase` finds the time(s) of day in the text (``at 9`` is 09:00: after ``at`` a
bare hour is that hour; elsewhere a time needs a colon, ``h`` or am/pm), then reads the rest
as a calendar rule. Without a time the occurrences keep the first occurrence's local time.
Local-time steps (every 2 weeks, every 3 days, every 5 months) and nth weekdays are
:class:`scheduler.triggers.Cron` date rules evaluated in the announcement's zone, so they keep
their local time across daylight-saving changes; the step counts from the first occurrence
(its day, week or month).

Decisions: ``every 2nd friday`` is the 2nd Friday of each month (like ``every 2nd and 4th
thursday``), ``every other friday`` is every two weeks; the 31st of the month is the last day
in shorter months, the 29th and 30th skip the months without them (the words say so); times
in one rule share their minutes (``at 9:00 and 17:00``), since one cron rule is the product
of its hours and minutes.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING, Final, Literal

from scheduler.errors import InvalidSchedule
from scheduler.triggers import Cron, DateStep

from ..i18n import t
from .clock import CLOCK_TEXT, clock_words, parse_clock
from .cron_words import describe_cron
from .errors import InputError
from .rule import RepeatRule
from .spoken import month_name
from .words import MONTH_NAMES, MONTH_WORDS, WEEKDAY_NAMES, WEEKDAY_WORDS, cron_day, join_words

if TYPE_CHECKING:
    from collections.abc import Callable
    from zoneinfo import ZoneInfo

_A = re.ASCII
_US: Final = timedelta(microseconds=1)
_SEP: Final = r"(?:, ?| and | ?& ?|,? and )"
_TIMES: Final = re.compile(
    rf"(?:^| )(?P<at>at |@ ?)?(?P<list>{CLOCK_TEXT}(?:{_SEP}{CLOCK_TEXT})*)(?= |$)", _A
)
_ORDINALS: Final = {
    **dict.fromkeys(("first", "1st"), 1),
    **dict.fromkeys(("second", "2nd"), 2),
    **dict.fromkeys(("third", "3rd"), 3),
    **dict.fromkeys(("fourth", "4th"), 4),
    **dict.fromkeys(("fifth", "5th"), 5),
    "last": -1,
}
_ORDINAL_WORDS: Final = {1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 5: "5th", -1: "last"}
_DAY_NAMES: Final = {
    **WEEKDAY_WORDS,
    **{name.lower() + "s": day for day, name in enumerate(WEEKDAY_NAMES)},
}
_SMALL: Final = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_N: Final = r"(?P<n>[0-9]{1,3}|one|two|three|four|five|six)"
_WORD: Final = r"[a-z]+"
_WORDS: Final = rf"{_WORD}(?:{_SEP}{_WORD})*"
_ORDS: Final = r"(?P<ords>[a-z0-9]+(?:" + _SEP + r"[a-z0-9]+)*)"
_MONTH_END: Final = r"(?: (?:of|in) (?:the|every|each|a) month| monthly| every month)?"
_DOM: Final = r"(?:the )?(?:day )?(?P<dom>[0-9]{1,2})(?:st|nd|rd|th)?"
_DATE: Final = (
    r"(?:(?P<mon1>[a-z]+)\.? (?P<day1>[0-9]{1,2})(?:st|nd|rd|th)?"
    r"|(?:the )?(?P<day2>[0-9]{1,2})(?:st|nd|rd|th)?(?: of)? (?P<mon2>[a-z]+)\.?)"
)
_EVERY: Final = r"(?:every|each)"
_MONTHLY: Final = rf"(?:monthly|{_EVERY} month|once a month)"
_N_MONTHS: Final = rf"(?:{_EVERY} {_N} months|quarterly|{_EVERY} quarter)"


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, _A)


_DAILY: Final = _rx(rf"|daily|everyday|{_EVERY} (?:single )?day|a day|per day|once a day")
_WEEKDAYS: Final = _rx(
    rf"(?:{_EVERY} |on )?(?:weekdays?|workdays?|working days?|business days?)"
    r"|monday (?:to|through|-) friday|mon ?- ?fri"
)
_WEEKENDS: Final = _rx(rf"(?:{_EVERY} |on )?(?:weekends?|weekend days?)")
_DAY_LIST: Final = _rx(
    rf"(?:(?:{_EVERY}|on|weekly on|{_EVERY} week on) )?(?P<days>{_WORDS})"
    rf"(?: (?:every week|weekly|each week))?"
)
_WEEKLY: Final = _rx(rf"weekly|{_EVERY} week|once a week")
_FORTNIGHT: Final = rf"(?:biweekly|bi-weekly|fortnightly|{_EVERY} fortnight|{_EVERY} 2 weeks)"
_WEEK_STEPS: Final = (
    _rx(rf"(?:{_EVERY} {_N} weeks?|{_FORTNIGHT})(?: on (?P<days>{_WORDS}))?"),
    _rx(rf"(?:on )?(?P<days>{_WORDS}),? (?:{_EVERY} {_N} weeks|{_FORTNIGHT})"),
)
_EVERY_N_DAYNAMES: Final = _rx(rf"{_EVERY} {_N} (?P<days>{_WORDS})")
_DAY_STEP: Final = _rx(rf"{_EVERY} {_N} days?")
_NTH: Final = _rx(
    rf"(?:(?:{_EVERY}|on|{_MONTHLY} on|{_N_MONTHS} on) )?(?:the )?{_ORDS} (?P<day>{_WORD})"
    rf"{_MONTH_END}"
)
_LAST_DAY: Final = _rx(
    rf"(?:(?:on|{_EVERY}|{_MONTHLY} on|{_N_MONTHS} on) )?"
    r"(?:the )?last day(?: of (?:the|every|each) month)?"
    r"|(?:at )?(?:the )?end of (?:the |every |each )?month"
)
_MONTH_DAYS: Final = (
    _rx(rf"(?:{_MONTHLY}|{_N_MONTHS}) on {_DOM}"),
    _rx(rf"(?:on |{_EVERY} )?{_DOM} (?:of |in )?(?:the|every|each) month"),
    _rx(rf"(?:on )?{_DOM} (?:monthly|{_EVERY} month)"),
)
_MONTHLY_RX: Final = _rx(_MONTHLY)
_MONTH_STEP: Final = _rx(_N_MONTHS)
_YEARLY_ON: Final = (
    _rx(rf"(?:yearly|annually|{_EVERY} year|once a year) on {_DATE}"),
    _rx(rf"{_EVERY} {_DATE}(?: every year)?"),
    _rx(rf"(?:on )?{_DATE} (?:every year|yearly|annually|each year)"),
)
_YEARLY: Final = _rx(rf"yearly|annually|{_EVERY} year|once a year")
_INTERVAL_WORDS: Final = _rx(
    r"hourly|(?:every|each) (?:[0-9.]+ ?|an? |half an? )?(?:minutes?|mins?|hours?|hrs?|seconds?)"
)


_StepUnit = Literal["day", "week", "month"]
"""The units of a date step (:class:`scheduler.triggers.DateStep`)."""


class _Rule:
    """What a phrase says, before it is anchored: cron fields, nth, an unanchored step."""

    def __init__(
        self,
        dom: str = "*",
        month: str = "*",
        dow: str = "*",
        nth: tuple[int, ...] = (),
        step: tuple[int, _StepUnit] | None = None,
        words: Callable[[str], str] | None = None,
    ) -> None:
        self.dom, self.month, self.dow, self.nth, self.step = dom, month, dow, nth, step
        self.words = words


def read_phrase(
    s: str, first: datetime, tz: ZoneInfo, *, need_time: bool = False
) -> RepeatRule | None:
    """Read normalized text ``s`` as a calendar rule, or ``None`` if it isn't one.

    ``first`` is the first occurrence, aware (its local time is the time of day when the
    phrase names none; steps count from it). With ``need_time`` (``when`` was left out) a
    phrase without a time of day is refused. Raises :class:`InputError` for a phrase that
    is one of these forms but can't be used.
    """
    times, rest = _take_times(s)
    if times and _INTERVAL_WORDS.fullmatch(rest):
        raise InputError(
            t(
                "`{text}` mixes an interval with a time of day. Use one of them: `every 2 hours` "
                "(from the first time) or `at 9:00 and 17:00 every day`.",
                text=s,
            )
        )
    local = first.astimezone(tz)
    rule = _calendar(rest, local, bool(times))
    if rule is None:
        return None
    if not times:
        if need_time:
            raise InputError(
                t(
                    "`{text}` doesn't say at what time. Add one, like `{text} at 9:00`, or give "
                    "`when`.",
                    text=s,
                ),
                reason="repeat_needs_time",
            )
        times = [time(local.hour, local.minute)]
    return _finish(rule, times, first, tz)


def _take_times(s: str) -> tuple[list[time], str]:
    """The times of day in ``s`` and the text without them."""
    for match in _TIMES.finditer(s):
        bare = match["at"] is not None
        items = re.split(_SEP, match["list"])
        parsed = [parse_clock(item, bare_hour=bare) for item in items]
        if all(p is not None for p in parsed) and parsed:
            rest = (s[: match.start()] + " " + s[match.end() :]).strip()
            rest = re.sub(r"^(?:and |, ?)|(?: and|,)$", "", " ".join(rest.split())).strip()
            return sorted({p for p in parsed if p is not None}), rest
    return [], s


def _calendar(rest: str, local: datetime, timed: bool) -> _Rule | None:
    """The rule the words after the times say, or None; the patterns are tried in one order
    (the weeks', the months', then the years' and the named days')."""
    weekday = cron_day(local.weekday())
    if timed and _DAILY.fullmatch(rest):
        return _Rule()
    if not rest:
        return None
    rule = _week_rule(rest, weekday)
    if rule is None:
        rule = _month_rule(rest, local, timed)
    if rule is None:
        rule = _year_or_day_rule(rest, local, timed, weekday)
    return rule


def _week_rule(rest: str, weekday: int) -> _Rule | None:
    """Weekdays, weekends, every N weeks (on some days), every N days."""
    if _WEEKDAYS.fullmatch(rest):
        return _Rule(dow="1-5")
    if _WEEKENDS.fullmatch(rest):
        return _Rule(dow="0,6")
    for pattern in _WEEK_STEPS:
        if (match := pattern.fullmatch(rest)) is not None:
            days = [weekday] if match["days"] is None else _days(match["days"])
            if days is not None:
                return _weeks(2 if match["n"] is None else _count(match["n"]), days)
    if (match := _EVERY_N_DAYNAMES.fullmatch(rest)) is not None:
        days = _days(match["days"])
        if days is not None:
            return _weeks(_count(match["n"]), days)
    if (match := _DAY_STEP.fullmatch(rest)) is not None:
        count = _count(match["n"])
        if count > 366:
            raise InputError(
                t(
                    "That interval is too long: the longest is 366 days. For once a year use "
                    "`yearly`."
                )
            )
        return _Rule() if count == 1 else _Rule(step=(count, "day"))
    return None


def _month_rule(rest: str, local: datetime, timed: bool) -> _Rule | None:
    """The nth weekday, the last day, a day of the month, monthly, every N months."""
    if (match := _NTH.fullmatch(rest)) is not None and match["day"] in _DAY_NAMES:
        ordinals = _ordinals(match["ords"])
        if ordinals is not None:
            return _Rule(
                dow=str(cron_day(_DAY_NAMES[match["day"]])), nth=ordinals, step=_month_step(match)
            )
    if (match := _LAST_DAY.fullmatch(rest)) is not None:
        return _Rule(dom="L", step=_month_step(match))
    for pattern in _MONTH_DAYS:
        if (match := pattern.fullmatch(rest)) is not None:
            return _month_day(int(match["dom"]), _month_step(match))
    if _MONTHLY_RX.fullmatch(rest) and timed:
        return _month_day(local.day, None)
    if (match := _MONTH_STEP.fullmatch(rest)) is not None:
        return _month_day(local.day, _month_step(match))
    return None


def _year_or_day_rule(rest: str, local: datetime, timed: bool, weekday: int) -> _Rule | None:
    """Yearly (on a date), weekly, a list of day names."""
    for pattern in _YEARLY_ON:
        if (match := pattern.fullmatch(rest)) is not None and _is_month(match):
            return _yearly(match)
    if timed and _YEARLY.fullmatch(rest):
        return _Rule(dom=str(local.day), month=str(local.month))
    if timed and _WEEKLY.fullmatch(rest):
        return _Rule(dow=str(weekday))
    if (match := _DAY_LIST.fullmatch(rest)) is not None:
        days = _days(match["days"])
        if days is not None:
            return _Rule(dow=",".join(map(str, days)))
    return None


def _count(text: str) -> int:
    return _SMALL[text] if text in _SMALL else int(text)


def _days(text: str) -> list[int] | None:
    words = re.split(_SEP, text)
    if not all(word in _DAY_NAMES for word in words):
        return None
    return sorted({cron_day(_DAY_NAMES[word]) for word in words})


def _ordinals(text: str) -> tuple[int, ...] | None:
    words = re.split(_SEP, text)
    if not all(word in _ORDINALS for word in words):
        return None
    return tuple(sorted({_ORDINALS[word] for word in words}, key=lambda n: (n < 0, n)))


def _weeks(count: int, days: list[int]) -> _Rule:
    if count > 52:
        raise InputError(
            t("That interval is too long: the longest is 366 days. For once a year use `yearly`.")
        )
    dow = ",".join(map(str, days))
    return _Rule(dow=dow) if count == 1 else _Rule(dow=dow, step=(count, "week"))


def _month_step(match: re.Match[str]) -> tuple[int, _StepUnit] | None:
    text = match.group(0)
    if "quarter" in text:
        return (3, "month")
    n = match.groupdict().get("n")
    if n is None:
        return None
    count = _count(n)
    if count > 12:
        raise InputError(
            t(
                "I can repeat every 1 to 12 months, not every {count}. Try `every 6 months` "
                "or `yearly`.",
                count=count,
            )
        )
    return None if count == 1 else (count, "month")


def _month_day(day: int, step: tuple[int, _StepUnit] | None) -> _Rule:
    if not 1 <= day <= 31:
        raise InputError(
            t("A month has days 1 to 31, not {day}. Try `monthly on the 15th`.", day=day)
        )
    return _Rule(dom="L" if day == 31 else str(day), step=step, words=_month_day_words(day, step))


def _month_day_words(day: int, step: tuple[int, _StepUnit] | None) -> Callable[[str], str]:
    every = "every month" if step is None else f"every {step[0]} months"
    if day == 31:
        where = "on the 31st, or the last day of shorter months"
    elif day > 28:
        where = f"on day {day}, skipping months without a day {day}"
    else:
        where = f"on day {day}"
    return lambda times: f"{every} {where}, at {times}"


def _is_month(match: re.Match[str]) -> bool:
    return (match["mon1"] or match["mon2"]) in MONTH_WORDS


def _yearly(match: re.Match[str]) -> _Rule:
    month_word = match["mon1"] or match["mon2"]
    day = int(match["day1"] or match["day2"])
    month = MONTH_WORDS[month_word]
    try:
        date(2000, month, day)  # a leap year: only days no year has are refused
    except ValueError:
        raise InputError(t("{month} has no day {day}.", month=month_name(month), day=day)) from None
    return _Rule(dom=str(day), month=str(month))


def _finish(rule: _Rule, times: list[time], first: datetime, tz: ZoneInfo) -> RepeatRule:
    minutes = {t.minute for t in times}
    if len(minutes) > 1 or any(t.second for t in times):
        shown = clock_words(times)
        raise InputError(
            t(
                "Times in one rule must share their minutes ({times} don't): like "
                "`at 9:00 and 17:00 every day`. For other times, schedule a second "
                "announcement.",
                times=shown,
            )
        )
    hours = ",".join(str(t.hour) for t in times)
    expr = f"{times[0].minute} {hours} {rule.dom} {rule.month} {rule.dow}"
    zone = tz.key or str(tz)
    nth = rule.nth
    try:
        base = Cron(expr, tz, nth=nth or None)
        step = None
        if rule.step is not None:
            count, unit = rule.step
            anchor = base.next_after(first - _US).astimezone(tz).date()
            step = DateStep(count, unit, anchor)
            Cron(expr, tz, nth=nth or None, step=step)
    except InvalidSchedule as exc:
        raise InputError(t("That rule can't be used: {error}.", error=exc)) from None
    words = _words(rule, times, step, expr, zone)
    return RepeatRule("cron", expr, None, words, nth, step)


def _words(rule: _Rule, times: list[time], step: DateStep | None, expr: str, zone: str) -> str:
    shown = clock_words(times)
    if rule.words is not None:
        return f"{rule.words(shown)} ({zone})"
    if rule.nth:
        day = WEEKDAY_NAMES[(int(rule.dow) - 1) % 7]
        ordinals = join_words([_ORDINAL_WORDS[n] for n in rule.nth])
        months = "month" if step is None else f"{step.count} months"
        return f"on the {ordinals} {day} of every {months}, at {shown} ({zone})"
    if step is None:
        return describe_cron(expr, zone)
    if step.unit == "day":
        return f"every {step.count} days at {shown}, from {_day(step)} ({zone})"
    if step.unit == "week":
        days = join_words([WEEKDAY_NAMES[(int(d) - 1) % 7] for d in rule.dow.split(",")])
        return (
            f"every {step.count} weeks on {days} at {shown}, from the week of {_day(step)} ({zone})"
        )
    where = "on the last day" if rule.dom == "L" else f"on day {rule.dom}"
    return f"every {step.count} months {where}, at {shown} ({zone})"


def _day(step: DateStep) -> str:
    d = step.since
    return f"{WEEKDAY_NAMES[d.weekday()]} {d.day} {MONTH_NAMES[d.month - 1]} {d.year}"
