"""Times and repeats typed in French, German and Spanish, read by the English parser.

One engine, language tables: a phrase typed by a member whose Discord locale is ``fr``,
``de``, ``es-ES`` or ``es-419`` is folded (lower case, accents dropped, ``ß`` → ``ss``) and
rewritten by its language's table (:mod:`.fr`, :mod:`.de`, :mod:`.es`: ordered regular
expressions) into the English the parsers of :mod:`bot.parsing` read (``demain 9h`` →
``tomorrow 9:00``, ``jeden Freitag um 20 Uhr`` → ``every friday at 20:00``). The English
parser then gives its guarantees (DST gaps refused with the next valid time, a repeated
time taken once, day/month dates by the locale) in every language.

English is always accepted too: when the rewritten phrase can't be read, the phrase is read
as typed. When neither can, the refusal is said in the member's language by the table's
``REFUSALS`` (one place per language), pointing to the closest form accepted in it.

Adding a language: a module here with ``LANGUAGE = Language(...)`` (its rewrites, its day
and month names, its refusals) and its locales in :data:`_LANGUAGES`; then a corpus
``tests/bot/phrases_<code>.toml`` (see the README).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, TypeVar, cast

from ...i18n import t
from ..display import zone_label
from ..errors import InputError

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import date, datetime, tzinfo

T = TypeVar("T")
Kind = Literal["when", "repeat"]
Replacement: TypeAlias = "str | Callable[[re.Match[str]], str]"

EN_DAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
"""The English weekday names the rewrites produce (each language's ``_DAYS`` in this order)."""
EN_MONTHS: Final = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
"""The English month names the rewrites produce (each language's ``_MONTHS`` in this order)."""
EN_DAY: Final = "|".join(EN_DAYS)
"""A pattern matching one English weekday, for rules that apply after the days are rewritten."""
"""What a rewrite puts instead of its match: a :func:`re.sub` template, or a function of
the match (``halb 9`` → ``8:30``)."""


@dataclass(frozen=True, slots=True)
class Language:
    """One language's table: how its phrases become English, and its refusals.

    ``rewrites`` are ``(pattern, replacement)`` pairs applied in order to the folded text;
    a pattern matches whole words only (it is wrapped in word boundaries). ``refusals``
    are :meth:`str.format` templates by refusal reason (see :func:`refusal`).
    """

    code: str
    rewrites: tuple[tuple[str, Replacement], ...]
    weekdays: tuple[str, ...]
    months: tuple[str, ...]
    refusals: Mapping[str, str]
    day_format: str
    """How a day is written in a message: ``{weekday}``, ``{day}``, ``{month}``, ``{year}``."""
    date_time_format: str
    """A date and time as the language types it (the suggestion after a DST gap)."""
    at_nine: str
    """A time to add to a phrase that lacks one (``9h``, ``9 Uhr``, ``a las 9``)."""
    repeat_at_nine: str
    """The same for a repeat (``à 9h``, ``um 9 Uhr``, ``a las 9``)."""


def fold(text: str) -> str:
    """Lower case, accents off, ``ß`` → ``ss``, one space between words."""
    text = text.lower().replace("ß", "ss").replace("’", "'")
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(plain.split())


@dataclass(frozen=True, slots=True)
class _Compiled:
    language: Language
    rules: tuple[tuple[re.Pattern[str], Replacement], ...]

    def translate(self, text: str) -> str:
        s = fold(text)
        for pattern, replacement in self.rules:
            s = pattern.sub(replacement, s)
        return " ".join(s.split())


def _compile(language: Language) -> _Compiled:
    rules = tuple(
        (re.compile(rf"(?<![\w])(?:{pattern})(?![\w])"), replacement)
        for pattern, replacement in language.rewrites
    )
    return _Compiled(language, rules)


def _load() -> dict[str, _Compiled]:
    from . import de, es, fr

    by_locale: dict[str, _Compiled] = {}
    for module, locales in ((fr, ("fr",)), (de, ("de",)), (es, ("es-es", "es-419"))):
        compiled = _compile(module.LANGUAGE)
        for locale in locales:
            by_locale[locale] = compiled
    return by_locale


_LANGUAGES: Final = _load()
"""The languages by Discord locale key (lower case)."""


def _key(locale: str) -> str:
    """The table key of a locale: Discord's (``fr``, ``es-419``) as they are; a browser's
    (``fr-FR``, ``es-MX``, from the dashboard's ``Accept-Language``) by its language."""
    key = locale.replace("_", "-").lower()
    if key in _LANGUAGES:
        return key
    primary = key.partition("-")[0]
    return {"es": "es-es"}.get(primary, primary)


def language_for(locale: str | None) -> Language | None:
    """The language phrases are read in for a member's Discord ``locale`` (``fr``, ``de``,
    ``es-ES``, ``es-419``; a browser's ``fr-FR``, ``de-AT``, ``es-MX`` too), or ``None``
    for English only."""
    compiled = _compiled(locale)
    return None if compiled is None else compiled.language


def _compiled(locale: str | None) -> _Compiled | None:
    return None if locale is None else _LANGUAGES.get(_key(locale))


def translate(text: str, locale: str | None) -> str | None:
    """``text`` rewritten into the English the parsers read, or ``None`` when ``locale``
    has no language here or the rewriting changed nothing but case and accents."""
    if locale is None:
        return None
    return _translate(text, _key(locale))


@functools.lru_cache(maxsize=1024)
def _translate(text: str, key: str) -> str | None:
    """The rewriting, kept: a phrase is read, then its ``when`` said back in the notes."""
    compiled = _LANGUAGES.get(key)
    if compiled is None:
        return None
    translated = compiled.translate(text)
    return None if translated == " ".join(text.lower().split()) else translated


def read_localized(
    text: str,
    locale: str | None,
    kind: Kind,
    read: Callable[[str], T],
    notes: list[str] | None = None,
) -> T:
    """``read`` (an English parser) applied to ``text`` in the member's language: the
    translation first, then the text as typed (English is always accepted). When neither
    reads, the refusal is said in the member's language. When the translation is what was
    read, :func:`read_as_note` is appended to ``notes``."""
    compiled = _compiled(locale)
    if compiled is None:
        return read(text)
    translated = translate(text, locale)
    first: InputError | None = None
    if translated is not None:
        try:
            result = read(translated)
        except InputError as error:
            first = error
        else:
            if notes is not None:
                notes.append(_read_as(text, translated))
            return result
    try:
        return read(text)
    except InputError as error:
        if first is None or (not first.reason and error.reason):
            first = error
    raise InputError(refusal(compiled.language, first, text, kind)) from None


def read_as_note(text: str, locale: str | None) -> str | None:
    """What to say about a phrase read in the member's language: ``I read `demain 9h` as
    `tomorrow 9:00`.``; ``None`` when it was not translated."""
    translated = translate(text, locale)
    if translated is None:
        return None
    return _read_as(text, translated)


def _read_as(text: str, translated: str) -> str:
    """The note that ``text`` was read as the English ``translated``, in the reader's
    language."""
    return t("I read `{typed}` as `{read}`.", typed=" ".join(text.split()), read=translated)


def refusal(language: Language, error: InputError, text: str, kind: Kind) -> str:
    """``error``'s refusal of ``text`` said in ``language``, from its ``REFUSALS``."""
    templates = language.refusals
    shown = " ".join(text.split())
    details = error.details
    if error.reason == "gap":
        naive, end = cast("datetime", details["naive"]), cast("datetime", details["end"])
        start, zone = cast("datetime", details["start"]), cast("tzinfo", details["zone"])
        return templates["gap"].format(
            time=f"{naive:%H:%M}",
            day=day_words(language, naive.date()),
            zone=zone_label(zone, naive),
            start=f"{start:%H:%M}",
            end=f"{end:%H:%M}",
            suggestion=language.date_time_format.format(d=end),
        )
    if error.reason == "past":
        return templates["past"].format(understood=details["understood"])
    if error.reason == "too_far":
        return templates["too_far"]
    if error.reason == "needs_time" and kind == "when":
        return templates["needs_time"].format(
            text=shown, example=f"{shown.lower()} {language.at_nine}"
        )
    if error.reason == "repeat_needs_time":
        example = f"{shown.lower()} {language.repeat_at_nine}"
        return templates["repeat_needs_time"].format(text=shown, example=example)
    return templates[kind].format(text=shown)


def day_words(language: Language, day: date) -> str:
    """``day`` written in ``language`` (``dimanche 28 mars 2027``)."""
    return language.day_format.format(
        weekday=language.weekdays[day.weekday()],
        day=day.day,
        month=language.months[day.month - 1],
        year=day.year,
    )


__all__ = [
    "Language",
    "Replacement",
    "day_words",
    "fold",
    "language_for",
    "read_as_note",
    "read_localized",
    "refusal",
    "translate",
]
