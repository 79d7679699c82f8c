"""Placeholders in an announcement's text and titles: ``{date}`` and the like, rendered per
occurrence.

Pure: a text is checked (:func:`check_placeholders`, at scheduling and on /edit) and
rendered (:func:`render`) from one :class:`Occurrence`, which is computed from the
announcement's rule, first time, zone and ``until`` and the occurrence's own time only
(:func:`occurrence`), never from the time of the attempt (``{occurrence}``'s number is
counted by the caller from the occurrences recorded before it, which a re-send finds the
same). So a re-send of an interrupted
attempt renders the same bytes as the first try (its nonce re-send is byte-identical).

- ``{occurrence}``: 1, 2, 3…: the how-manieth time the announcement comes due (one plus its
  occurrences recorded before this one: posted, failed, missed, or skipped while paused; a
  date skipped with ``/skip`` is not an occurrence of its rule and is not counted; a one-off
  is 1);
- ``{date}``, ``{time}``, ``{weekday}``: the occurrence's local date (``24 December 2026``),
  time (``18:00``) and day (``Thursday``) in the announcement's zone, the date and day in the
  server's language (``24. Dezember 2026``, ``Donnerstag``: Babel's long date and wide day
  name for a shipped locale; English otherwise);
- ``{next}``: the occurrence after this one as a Discord timestamp (``<t:N:F>``), ``none``
  after the last one (and for a one-off);
- ``{until}``: the announcement's ``until`` as a Discord timestamp, ``never`` without one;
- ``{event}``: the link to the occurrence's Discord scheduled event (``/schedule event:
  true``), empty when it has none (yet);
- ``{{`` and ``}}`` write ``{`` and ``}``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Final
from zoneinfo import ZoneInfo

from babel.dates import format_date, get_day_names

from ..i18n import locales, t
from ..limits import clip
from .display import discord_timestamp
from .errors import InputError
from .words import MONTH_NAMES, WEEKDAY_NAMES

if TYPE_CHECKING:
    from collections.abc import Callable

    from .rule import RepeatRule

__all__ = [
    "EVENT_LINK",
    "KNOWN_PLACEHOLDERS",
    "WIDEST",
    "Occurrence",
    "check_placeholders",
    "has_placeholders",
    "occurrence",
    "render",
    "widest",
]

KNOWN_PLACEHOLDERS: Final = (
    "occurrence",
    "date",
    "time",
    "weekday",
    "next",
    "until",
    "event",
)
"""The names a text may use, in the order the refusal lists them."""

EVENT_LINK: Final = "https://discord.com/events/{guild_id}/{event_id}"
"""Where a Discord scheduled event is shown."""


def _babel(locale: str | None) -> str | None:
    """``locale`` as Babel names it when crier ships it, else None (English)."""
    return locale.replace("-", "_") if locale in locales() else None


def _date(at: date, locale: str | None) -> str:
    """``at`` in words, in ``locale`` (English: ``24 December 2026``)."""
    babel = _babel(locale)
    if babel is None:
        return f"{at.day} {MONTH_NAMES[at.month - 1]} {at.year}"
    return str(format_date(at, "long", locale=babel))


def _weekday(at: date, locale: str | None) -> str:
    """``at``'s day of the week, in ``locale`` (English: ``Thursday``)."""
    babel = _babel(locale)
    if babel is None:
        return WEEKDAY_NAMES[at.weekday()]
    return str(get_day_names("wide", "format", babel)[at.weekday()])


def _widest_words(shows: Callable[[date, str | None], str]) -> int:
    """The most characters ``shows`` renders a day to, in any language crier speaks: every
    month and day of the week, on a two-digit day of a four-digit year."""
    days = [date(2030, month, 28) for month in range(1, 13)]
    days += [date(2030, 9, day) for day in range(22, 29)]  # each day of the week
    return max(len(shows(d, loc)) for loc in (None, *locales()) for d in days)


WIDEST: Final = {
    "occurrence": 7,
    "date": _widest_words(_date),
    "time": len("23:59"),
    "weekday": _widest_words(_weekday),
    "next": len("<t:99999999999:F>"),
    "until": len("<t:99999999999:F>"),
    "event": len(EVENT_LINK.format(guild_id=2**64, event_id=2**64)),
}
"""The most characters each placeholder renders to (the length checks count these)."""

_TOKEN: Final = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_NONE_NEXT: Final = "none"
_NO_UNTIL: Final = "never"


@dataclass(frozen=True, slots=True)
class Occurrence:
    """What an occurrence's placeholders show, all known from the occurrence alone."""

    number: int
    at: datetime
    """Its time, in the announcement's zone."""
    next: datetime | None
    until: datetime | None
    event: str = ""
    """The link to the occurrence's Discord event (empty: none)."""


def _known_list() -> str:
    return ", ".join(f"`{{{name}}}`" for name in KNOWN_PLACEHOLDERS)


def check_placeholders(text: str | None, where: str) -> None:
    """Refuse ``text`` (``where`` says what it is: ``the message``, ``the title``) if it
    names a placeholder that doesn't exist or has a lone brace, with the known names."""
    if not text:
        return
    for match in _TOKEN.finditer(text):
        token = match[0]
        if token in ("{{", "}}"):
            continue
        name = match[1]
        if name is None:
            raise InputError(
                t("{what} has a lone `{token}`. Write `{{{{` or `}}}}` for a brace; "
                  "placeholders are {known}.", what=_subject(where), token=token,
                  known=_known_list())
            )  # fmt: skip
        if name.strip().lower() not in KNOWN_PLACEHOLDERS:
            shown = clip(name, 30)
            raise InputError(
                t("{what} uses `{{{name}}}`, which is not a placeholder. The known ones are "
                  "{known}; write `{{{{` and `}}}}` for braces.", what=_subject(where),
                  name=shown, known=_known_list())
            )  # fmt: skip


def _subject(where: str) -> str:
    """What a refusal names (``the message``, ``the title``, ``the text``), in the reader's
    language, at the start of a sentence."""
    return {
        "the message": t("The message"),
        "the title": t("The title"),
        "the text": t("The text"),
        "the footer": t("The footer"),
        "a field": t("An embed field"),
    }.get(where) or where.capitalize()


def has_placeholders(text: str | None) -> bool:
    """Whether ``text`` has anything :func:`render` changes (a placeholder or ``{{``)."""
    return bool(text) and ("{" in text or "}" in text)  # type: ignore[operator]


def _valid(text: str) -> bool:
    try:
        check_placeholders(text, "text")
    except InputError:
        return False
    return True


def render(text: str, occ: Occurrence, locale: str | None = None) -> str:
    """``text`` with its placeholders filled in for ``occ``, its date and day in ``locale``
    (None: English). A text that doesn't check (scheduled before placeholders existed, with
    braces of its own) is returned as typed."""
    if not has_placeholders(text) or not _valid(text):
        return text
    values = _values(occ, locale)

    def one(match: re.Match[str]) -> str:
        brace = match[0]
        if brace == "{{":
            return "{"
        if brace == "}}":
            return "}"
        return values[match[1].strip().lower()]

    return _TOKEN.sub(one, text)


def widest(text: str | None) -> str | None:
    """``text`` with each placeholder as long as it may ever render (``x`` repeated), for
    the length checks; None stays None."""
    if text is None or not has_placeholders(text) or not _valid(text):
        return text

    def one(match: re.Match[str]) -> str:
        if match[0] in ("{{", "}}"):
            return match[0][0]
        return "x" * WIDEST[match[1].strip().lower()]

    return _TOKEN.sub(one, text)


def _values(occ: Occurrence, locale: str | None) -> dict[str, str]:
    at = occ.at
    return {
        "occurrence": str(occ.number),
        "date": _date(at.date(), locale),
        "time": f"{at.hour:02d}:{at.minute:02d}",
        "weekday": _weekday(at.date(), locale),
        "next": _NONE_NEXT if occ.next is None else discord_timestamp(occ.next, "F"),
        "until": _NO_UNTIL if occ.until is None else discord_timestamp(occ.until, "F"),
        "event": occ.event,
    }


def occurrence(
    rule: RepeatRule | None,
    first_ts: float,
    zone_name: str,
    fire_ts: float,
    until_ts: float | None,
    number: int = 1,
    event: str = "",
) -> Occurrence:
    """The occurrence at ``fire_ts`` of an announcement (its rule, first time, zone and
    ``until``), the ``number``-th time it comes due: its local time and the next one (none
    past ``until``, none for a one-off)."""
    zone = ZoneInfo(zone_name)
    fire = datetime.fromtimestamp(fire_ts, UTC)
    until = None if until_ts is None else datetime.fromtimestamp(until_ts, UTC)
    nxt: datetime | None = None
    if rule is not None:
        nxt = rule.trigger(zone, datetime.fromtimestamp(first_ts, UTC)).next_after(fire)
        if until is not None and nxt > until:
            nxt = None
    return Occurrence(number, fire.astimezone(zone), nxt, until, event)
