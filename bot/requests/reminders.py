"""A reminder's lead as typed (``/edit reminder: 15m``, ``/remindme before: 1h``, the
dashboard's field), read into seconds and checked: between a minute and a week, ``none``
for off where that is allowed."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from ..announcements.reminders import MAX_REMINDER, MIN_REMINDER
from ..i18n import t
from ..limits import clip
from ..parsing import InputError, parse_duration
from ..parsing.languages import translate
from ..parsing.spoken import duration

if TYPE_CHECKING:
    from .request import AnnouncementOptions

OFF_WORDS = frozenset(
    {"none", "off", "no", "never", "0", "aucun", "aucune", "non", "keine", "kein", "nein",
     "aus", "ninguno", "ninguna", "nada", "nenhum", "nenhuma", "nao", "não"}
)  # fmt: skip
"""What ``reminder`` takes to mean "remind nobody" (in the shipped languages too)."""


def parse_lead(text: str, locale: str | None = None, *, off: bool = True) -> float | None:
    """The lead ``text`` gives, in seconds (``15m``, ``2h``, ``1 day``, ``half an hour``;
    in the member's language too), or None for ``none`` when ``off`` allows it. Refused
    (:class:`InputError`) outside a minute to a week, or when it is no duration."""
    typed = " ".join(text.lower().split())
    if off and typed in OFF_WORDS:
        return None
    seconds = parse_duration(typed)
    if seconds is None:
        english = translate(typed, locale)
        seconds = None if english is None else parse_duration(english)
    if seconds is None:
        example = t("`15m`, `1h`, `1 day`")
        if off:
            raise InputError(
                t("`{text}` isn't a length of time I can read. Try {example}, or `none` to "
                  "turn reminders off.", text=clip(text), example=example)
            )  # fmt: skip
        raise InputError(
            t("`{text}` isn't a length of time I can read. Try {example}.", text=clip(text),
              example=example)
        )  # fmt: skip
    if not MIN_REMINDER <= seconds <= MAX_REMINDER:
        raise InputError(
            t("A reminder comes between {least} and {most} before: `{text}` is outside that.",
              least=duration(timedelta(seconds=MIN_REMINDER)),
              most=duration(timedelta(seconds=MAX_REMINDER)), text=clip(text))
        )  # fmt: skip
    return float(round(seconds))


def check_reminder(options: AnnouncementOptions, locale: str | None) -> float | None:
    """The reminder lead the request asks for (typed, else the one kept on /edit; None:
    off)."""
    if options.reminder is None:
        return options.kept_reminder
    return parse_lead(options.reminder, locale)


def lead_text(lead: float | None) -> str:
    """A lead as a form shows it, read back by :func:`parse_lead`: ``15m``, ``1h30m``,
    ``1d``, ``899s``; empty for None (no reminders)."""
    if lead is None:
        return ""
    seconds = round(lead)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(parts)
