"""Turn the `when` text of ``/schedule`` into an instant, and time zone names into zones.

Everything here is pure: no Discord, no I/O and no clock. The caller passes "now" in, so the
same text always gives the same answer in tests. Bad input raises :class:`InputError`, whose
message is shown verbatim to the server admin: it says what was wrong and shows valid input.

Accepted ``when`` forms (case-insensitive, extra whitespace ignored), read in the given zone:

* relative: ``in 90m``, ``2h30m``, ``in 1 day 3 hours``, ``45s``, ``in an hour``, ``1.5h``
  (``in`` optional; units s/sec/second, m/min/minute, h/hr/hour, d/day, w/wk/week);
* a clock time: ``18:00``, ``6pm``, ``6:30 pm``, ``6.30pm``, ``18h30``, ``noon``, the next
  time that local time comes; ``midnight``, the coming one;
* part of a day: ``tonight 9pm``, ``tonight at 21:00``, ``this evening at 7`` (a bare hour
  in the afternoon, evening or night is after noon: 19:00), ``tomorrow morning 8:30``;
* days ahead at a time: ``in 2 days at 10:00``, ``in a week 9am``;
* a day plus a time: ``today 18:00``, ``tomorrow 9am``, ``monday 09:00``, ``next fri 17:30``,
  ``2026-12-24 18:00``, ``2026-12-24T18:00:30``, ``dec 24 18:00``, ``24 dec 2026 6pm``;
  the time may also come first (``9am tomorrow``) and ``at`` / ``on`` may be put in;
* a trailing zone or offset overrides the given zone: ``18:00 utc``, ``2026-12-24T18:00Z``,
  ``18:00 +05:30``, ``9am europe/paris``;
* a Discord timestamp ``<t:1735000000>`` / ``<t:1735000000:F>`` (any style letter), or a bare
  epoch in seconds (10 digits) or milliseconds (13 digits).

Decisions on ambiguous input:

* A day without a time (``tomorrow``, ``2026-12-24``) is refused with a request for a time,
  rather than silently meaning midnight.
* ``monday 09:00``, ``next monday 09:00`` and ``this monday 09:00`` all mean the next Monday
  09:00 that is still ahead (today, if today is Monday and 09:00 has not passed yet).
* Slash or dot dates (``24/12/2026``, ``12.24``) are read by the member's Discord locale
  (month/day for ``en-US``, day/month otherwise; see :mod:`.dates`, and :func:`date_notes`
  for what to say back); without a locale they are refused as ambiguous with the ISO form
  as the suggestion. ``2026/12/24`` (year first) is always accepted.
* Zone abbreviations (``18:00 EST``) are refused, naming the IANA zones they may mean.
* ``midnight`` with a day (``friday midnight``) is refused: the start or the end of it?
* A bare number of any other length than 10 or 13 digits is refused: it needs a unit.
* A local time that does not exist (skipped when clocks spring forward) is refused with the
  first valid time after the gap as the suggestion. A local time that happens twice (clocks
  falling back) means its first occurrence (``fold=0``).
* The result must be after "now" and at most :data:`MAX_AHEAD` (about 5 years) later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from fractions import Fraction
from typing import TYPE_CHECKING, Final

from ..i18n import t
from .clock import CLOCK_TEXT, parse_clock
from .dates import NUMERIC_DATE, read_numeric_date
from .display import (
    EPOCH,
    discord_timestamp,
    epoch_seconds,
    example_date,
    examples,
    past_message,
    too_far_message,
    understood_as,
)
from .durations import parse_duration
from .errors import MAX_AHEAD, MAX_INPUT_LENGTH, InputError
from .languages import read_as_note, read_localized, translate
from .spoken import long_date
from .wall import days_in_month, exact_wall, first_future
from .words import MONTH_WORDS, WEEKDAY_WORDS
from .zones import ZONE_ABBREVIATIONS, abbreviation_refusal, resolve_timezone

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

_A = re.ASCII
_DISCORD_TS: Final = re.compile(r"<t:(-?[0-9]+)(?::[a-z])?>", _A)
_ISO_DATE: Final = re.compile(r"([0-9]{4})([-/])([0-9]{1,2})\2([0-9]{1,2})", _A)
_ISO_T: Final = re.compile(r"^([0-9]{4}-[0-9]{1,2}-[0-9]{1,2})t(?=[0-9])", _A)
_SMALL_NUMBERS: Final = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}
_IN_DAYS: Final = re.compile(
    r"in (?P<n>[0-9]{1,4}|an?|one|two|three) (?P<unit>days?|weeks?),? "
    rf"(?P<at>at )?(?P<clock>{CLOCK_TEXT})",
    _A,
)
_PARTS_OF_DAY: Final = {
    "tonight": (0, True),
    "this evening": (0, True),
    "this afternoon": (0, True),
    "this morning": (0, False),
    "tomorrow morning": (1, False),
    "tomorrow afternoon": (1, True),
    "tomorrow evening": (1, True),
    "tomorrow night": (1, True),
}
"""Words for part of a day → (days from today, whether a bare hour is after noon)."""
_DAY_MONTH: Final = re.compile(
    r"([0-9]{1,2})(?:st|nd|rd|th)?(?: of)? ([a-z]+)\.?(?:,? ([0-9]{4}))?", _A
)
_MONTH_DAY: Final = re.compile(r"([a-z]+)\.? ([0-9]{1,2})(?:st|nd|rd|th)?(?:,? ([0-9]{4}))?", _A)
_WEEKDAY: Final = re.compile(r"(?:(?:next|this) )?([a-z]+)", _A)
_ZONE_WORD: Final = re.compile(
    r" ?(?<![a-z])(utc|gmt|z)(?: ?([+-])([0-9]{1,2})(?::?([0-9]{2}))?)?$", _A
)
_ZONE_OFFSET: Final = re.compile(
    r" ?(?:(?<= )|(?<=:[0-9]{2})|(?<=[ap]m))([+-])([0-9]{1,2})(?::?([0-9]{2}))?$", _A
)


# --------------------------------------------------------------------------- public API


def parse_when(text: str, tz: ZoneInfo, now: datetime, *, locale: str | None = None) -> datetime:
    """Read the user's ``when`` text as an aware UTC datetime strictly after ``now``.

    Local times are read in ``tz`` unless the text names its own zone or offset. See the
    module docstring for the accepted forms and the decisions taken on ambiguous input.
    Raises :class:`InputError` (with a user-facing message) for anything unusable: unknown
    form, a time already passed (the message shows the time understood), a time more than
    :data:`MAX_AHEAD` away, or a local time skipped by a daylight-saving change.
    ``locale`` (the member's Discord locale, e.g. ``en-US``) decides how ``24/12``-style
    dates are read (:mod:`.dates`); without one they are refused as ambiguous. In a
    locale with a language of :mod:`.languages` (``fr``, ``de``, ``es-ES``, ``es-419``) the
    text is read in that language first, then in English.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("parse_when needs an aware 'now'")
    return read_localized(
        text, locale, "when", lambda typed: _parse_when_english(typed, tz, now, locale)
    )


def _parse_when_english(text: str, tz: ZoneInfo, now: datetime, locale: str | None) -> datetime:
    s = _normalize(text)
    if len(s) > MAX_INPUT_LENGTH:
        raise InputError(t("That's too long for a time. Try {examples}.", examples=examples(now)))
    if not s:
        raise InputError(t("Please say when to post it, like {examples}.", examples=examples(now)))
    for parse in (_parse_discord_timestamp, _parse_epoch, _parse_relative):
        result = parse(s, now)
        if result is not None:
            return _checked(result, tz, now)
    return _parse_absolute(s, tz, now, locale)


def parse_until(
    text: str, tz: ZoneInfo, now: datetime, first: datetime, *, locale: str | None = None
) -> datetime:
    """Read an ``until`` text like ``when`` (same forms, same zone, same locale), as a time
    after the announcement's ``first`` post."""
    until = parse_when(text, tz, now, locale=locale)
    if until <= first:
        raise InputError(
            t("`until` ({until}) must be after the first time ({first}): it is when the "
              "repeats stop. Try a later date, like `until: 2030-12-31 18:00`.",
              until=discord_timestamp(until, "F"), first=discord_timestamp(first, "F"))
        )  # fmt: skip
    return until


def parse_day_or_time(
    text: str, tz: ZoneInfo, now: datetime, *, locale: str | None = None
) -> date | datetime:
    """Read a day or a time of one, as ``/skip date:`` names occurrences: a date alone
    (``2026-12-25``, ``25 dec``, ``friday``, ``tomorrow``, ``24/12`` by the locale) is that
    local date (a weekday or a day without a year: the next one, today included); anything
    else is read like ``when`` and is its local wall time in ``tz`` (naive, to the
    minute). Refused: a day or time already past, or more than :data:`MAX_AHEAD` away."""
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("parse_day_or_time needs an aware 'now'")
    return read_localized(
        text, locale, "when", lambda typed: _day_or_time_english(typed, tz, now, locale)
    )


def _day_or_time_english(
    text: str, tz: ZoneInfo, now: datetime, locale: str | None
) -> date | datetime:
    s = _normalize(text).removeprefix("on ")
    today = now.astimezone(tz).date()
    if s and len(s) <= MAX_INPUT_LENGTH:
        spec = _parse_day(s, today, locale)
        if spec is not None:
            return _coming_day(spec, today, now)
    instant = _parse_when_english(text, tz, now, locale)
    return instant.astimezone(tz).replace(tzinfo=None, second=0, microsecond=0)


def _coming_day(spec: _DaySpec, today: date, now: datetime) -> date:
    """The date a day named alone means: the next one, today included."""
    if isinstance(spec, _OnDate):
        day = spec.day
        if day < today:
            raise InputError(
                t("{day} has already passed. Name a day still to come, like `{example}`.",
                  day=long_date(day), example=example_date(today)[:-6]),
                reason="past",
            )  # fmt: skip
    elif isinstance(spec, _OnWeekday):
        day = today + timedelta(days=(spec.weekday - today.weekday()) % 7)
    else:
        day = next(
            date(year, spec.month, spec.day)
            for year in range(today.year, today.year + 9)
            if spec.day <= days_in_month(year, spec.month)
            and date(year, spec.month, spec.day) >= today
        )
    if day - today > MAX_AHEAD:
        raise InputError(too_far_message(long_date(day), now), reason="too_far")
    return day


# --------------------------------------------------------------------------- instants


def _normalize(text: str) -> str:
    return " ".join(text.lower().split())


def _from_epoch(seconds: Fraction, now: datetime) -> datetime:
    """``EPOCH + seconds``, refusing values far outside the allowed window first."""
    now_s = epoch_seconds(now)
    if seconds > now_s + MAX_AHEAD.total_seconds() + 86400:
        raise InputError(too_far_message(None, now))
    if seconds < now_s - 100 * 366 * 86400:
        raise InputError(t("That timestamp is long past. Try {examples}.", examples=examples(now)))
    return EPOCH + timedelta(microseconds=round(seconds * 1_000_000))


def _parse_discord_timestamp(s: str, now: datetime) -> datetime | None:
    match = _DISCORD_TS.fullmatch(s)
    return None if match is None else _from_epoch(Fraction(match.group(1)), now)


def _parse_epoch(s: str, now: datetime) -> datetime | None:
    if not (s.isascii() and s.isdigit()):
        return None
    if len(s) == 10:
        return _from_epoch(Fraction(s), now)
    if len(s) == 13:
        return _from_epoch(Fraction(s) / 1000, now)
    raise InputError(
        t(
            "A number on its own needs a unit: `in {number}m` means in {number} minutes. "
            "For a clock time write `18:00`; a Unix timestamp has 10 digits (`1735000000`).",
            number=s[:6],
        )
    )


def _parse_relative(s: str, now: datetime) -> datetime | None:
    rest = s.removeprefix("in ")
    if rest.isascii() and rest.isdigit() and rest != s:
        raise InputError(
            t("Please add a unit, like `in {number}m` or `in {number}h`.", number=rest)
        )
    seconds = parse_duration(rest)
    if seconds is None:
        return None
    if seconds > MAX_AHEAD.total_seconds():
        raise InputError(too_far_message(None, now))
    return now.astimezone(UTC) + timedelta(microseconds=round(seconds * 1_000_000))


def _checked(result: datetime, zone: tzinfo, now: datetime) -> datetime:
    """Return ``result`` in UTC if it is inside the allowed window, else explain why not."""
    if result <= now:
        understood = understood_as(result, zone)
        raise InputError(past_message(understood), reason="past", understood=understood)
    if result - now > MAX_AHEAD:
        understood = understood_as(result, zone)
        raise InputError(too_far_message(understood, now), reason="too_far")
    return result.astimezone(UTC)


# --------------------------------------------------------------------------- absolute times


@dataclass(frozen=True, slots=True)
class _OnDate:
    day: date


@dataclass(frozen=True, slots=True)
class _OnWeekday:
    weekday: int


@dataclass(frozen=True, slots=True)
class _OnMonthDay:
    month: int
    day: int


_DaySpec = _OnDate | _OnWeekday | _OnMonthDay


def _parse_absolute(s: str, tz: ZoneInfo, now: datetime, locale: str | None) -> datetime:
    s, zone = _split_zone(s, tz)
    today = now.astimezone(zone).date()
    s = _ISO_T.sub(r"\1 ", s)
    s = s.removeprefix("at ").removeprefix("on ")
    if s == "midnight":
        return _checked(first_future(_following(today, 1, 3), time(0), zone, now), zone, now)
    clock = parse_clock(s)
    if clock is not None:
        return _checked(first_future(_following(today, 0, 3), clock, zone, now), zone, now)
    for read in (_in_days_at, _part_of_day):
        found = read(s, today)
        if found is not None:
            return _checked(exact_wall(found, zone, now), zone, now)
    parsed = _split_day_and_clock(s, today, locale)
    if parsed is not None:
        spec, clock = parsed
        return _at(spec, clock, zone, today, now)
    _refuse_day_without_time(s, today, locale)
    if s == "now":
        raise InputError(t("Please give a time in the future; for right away use `in 1m`."))
    raise InputError(t("I couldn't read that as a time. Try {examples}.", examples=examples(now)))


def _following(today: date, start: int, count: int) -> list[date]:
    return [today + timedelta(days=k) for k in range(start, start + count)]


def _refuse_day_without_time(s: str, today: date, locale: str | None) -> None:
    words = s.split(" ")
    if "midnight" in words and len(words) > 1:
        raise InputError(
            t(
                "`midnight` with a day could be the start or the end of that day: write the date "
                "and `00:00`, like `{day}00:00`, or `23:59`.",
                day=example_date(today)[:-5],
            )
        )
    if s in _PARTS_OF_DAY:
        raise InputError(
            t("`{text}` needs a time too, like `{text} at 9` or `{text} 21:30`.", text=s),
            reason="needs_time",
        )
    if _parse_day(s, today, locale) is not None:
        raise InputError(
            t("`{text}` needs a time of day too, like `{text} 09:00` or `{text} 6pm`.", text=s),
            reason="needs_time",
        )


def _split_zone(s: str, tz: ZoneInfo) -> tuple[str, tzinfo]:
    """Take a trailing zone (``utc``, ``+05:30``, ``europe/paris``) off ``s``."""
    if (match := _ZONE_WORD.search(s)) is not None:
        offset = _offset(*match.group(2, 3, 4)) if match.group(2) else timedelta(0)
        return s[: match.start()], timezone(offset) if offset else UTC
    if (match := _ZONE_OFFSET.search(s)) is not None:
        return s[: match.start()], timezone(_offset(*match.group(1, 2, 3)))
    head, _, last = s.rpartition(" ")
    if head and last in ZONE_ABBREVIATIONS:
        raise InputError(abbreviation_refusal(last, head))
    if head and "/" in last and not last[0].isdigit():
        return head, resolve_timezone(last)
    return s, tz


def _offset(sign: str, hours: str, minutes: str | None) -> timedelta:
    offset = timedelta(hours=int(hours), minutes=int(minutes or 0))
    if offset > timedelta(hours=14) or int(minutes or 0) > 59:
        raise InputError(t("UTC offsets go from `-12:00` to `+14:00`, like `18:00 +05:30`."))
    return -offset if sign == "-" else offset


def _in_days_at(s: str, today: date) -> datetime | None:
    """``in 2 days at 10:00``, ``in a week 9am``: that many local days ahead, at that time."""
    match = _IN_DAYS.fullmatch(s)
    if match is None:
        return None
    clock = parse_clock(match["clock"], bare_hour=match["at"] is not None)
    if clock is None:
        return None
    count = _SMALL_NUMBERS.get(match["n"]) or int(match["n"])
    days = count * (7 if match["unit"].startswith("w") else 1)
    if days > MAX_AHEAD.days:
        return None
    return datetime.combine(today + timedelta(days=days), clock)


def _part_of_day(s: str, today: date) -> datetime | None:
    """``tonight 9pm``, ``this evening at 7`` (19:00), ``tomorrow morning 8:30``, either
    order; an hour without am/pm in the afternoon or evening is after noon."""
    for part, (offset, afternoon) in _PARTS_OF_DAY.items():
        for clock_text in (s.removeprefix(part + " "), s.removesuffix(" " + part)):
            if clock_text == s:
                continue
            clock = parse_clock(clock_text.removeprefix("at "), bare_hour=True)
            if clock is None:
                continue
            day = today + timedelta(days=offset)
            if clock == time(0):
                return datetime.combine(day + timedelta(days=1), clock)  # "tonight at midnight"
            if afternoon and 1 <= clock.hour <= 11 and not re.search(r"[ap]\.?m", clock_text):
                clock = clock.replace(hour=clock.hour + 12)
            return datetime.combine(day, clock)
    return None


def _split_day_and_clock(s: str, today: date, locale: str | None) -> tuple[_DaySpec, time] | None:
    """Find a day and a clock time in ``s``, in either order (``tomorrow 9am``, ``9am fri``)."""
    words = s.split(" ")
    for i in range(1, len(words)):
        left, right = " ".join(words[:i]), " ".join(words[i:])
        for day_text, clock_text in ((left, right.removeprefix("at ")), (right, left)):
            day_text = day_text.removeprefix("on ")
            clock = parse_clock(clock_text)
            spec = _parse_day(day_text, today, locale) if clock is not None else None
            if spec is not None and clock is not None:
                return spec, clock
    return None


def _parse_day(s: str, today: date, locale: str | None) -> _DaySpec | None:
    """``today``, ``tomorrow``, a weekday, or a date; ``None`` if ``s`` is not a day."""
    if s == "today":
        return _OnDate(today)
    if s in ("tomorrow", "tmrw", "tmr"):
        return _OnDate(today + timedelta(days=1))
    if s in ("day after tomorrow", "the day after tomorrow"):
        return _OnDate(today + timedelta(days=2))
    if (match := _ISO_DATE.fullmatch(s)) is not None:
        return _OnDate(_make_date(int(match[1]), int(match[3]), int(match[4]), s))
    numeric = read_numeric_date(s, today, locale)
    if numeric is not None:
        if numeric.year is not None:
            return _OnDate(_make_date(numeric.year, numeric.month, numeric.day, s))
        return _OnMonthDay(numeric.month, numeric.day)
    return _parse_named_day(s)


def _parse_named_day(s: str) -> _DaySpec | None:
    if (match := _WEEKDAY.fullmatch(s)) is not None and match[1] in WEEKDAY_WORDS:
        return _OnWeekday(WEEKDAY_WORDS[match[1]])
    for pattern, day_group, month_group in ((_DAY_MONTH, 1, 2), (_MONTH_DAY, 2, 1)):
        match = pattern.fullmatch(s)
        if match is not None and match[month_group] in MONTH_WORDS:
            month, day = MONTH_WORDS[match[month_group]], int(match[day_group])
            if match[3]:
                return _OnDate(_make_date(int(match[3]), month, day, s))
            _make_date(2000, month, day, s)  # a leap year: only checks the day exists
            return _OnMonthDay(month, day)
    return None


def _make_date(year: int, month: int, day: int, s: str) -> date:
    try:
        return date(year, month, day)
    except ValueError:
        raise InputError(
            t("`{text}` isn't a real date. Check the month and day.", text=s)
        ) from None


def _at(spec: _DaySpec, clock: time, zone: tzinfo, today: date, now: datetime) -> datetime:
    if isinstance(spec, _OnDate):
        return _checked(exact_wall(datetime.combine(spec.day, clock), zone, now), zone, now)
    if isinstance(spec, _OnWeekday):
        dates = [today + timedelta(days=k) for k in range(15)]
        dates = [d for d in dates if d.weekday() == spec.weekday]
    else:
        dates = [
            date(year, spec.month, spec.day)
            for year in range(today.year, today.year + 9)
            if spec.day <= days_in_month(year, spec.month)
        ]
    return _checked(first_future(dates, clock, zone, now), zone, now)


def date_notes(text: str, tz: ZoneInfo, now: datetime, locale: str | None) -> list[str]:
    """How the numeric dates in ``text`` (already accepted by :func:`parse_when`) were read,
    e.g. ``I read `24/12` as 24 December (day/month, as dates are written in …)``."""
    today = now.astimezone(tz).date()
    notes = []
    translated = translate(text, locale)
    if translated is not None:
        try:
            _parse_when_english(translated, tz, now, locale)
        except InputError:
            translated = None  # read as typed, in English
        else:
            notes.append(read_as_note(text, locale) or "")
            text = translated
    for word in _normalize(text).split(" "):
        if NUMERIC_DATE.fullmatch(word):
            try:
                numeric = read_numeric_date(word, today, locale)
            except InputError:
                continue
            if numeric is not None:
                notes.append(numeric.note)
    return notes
