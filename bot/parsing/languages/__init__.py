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

import re
import unicodedata
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, TypeVar, cast

from ...i18n import t
from ...limits import clip
from ..display import zone_label
from ..errors import MAX_INPUT_LENGTH, InputError

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
    has no language here, the rewriting changed nothing but case and accents, or the text is
    longer than any phrase read (:data:`~bot.parsing.errors.MAX_INPUT_LENGTH`, spaces
    collapsed): the English parser refuses that as too long without it."""
    if locale is None:
        return None
    return _translate(" ".join(text.split()), _key(locale))


class BoundedCache:
    """The last ``entries`` results of a function of one text, kept while their texts and
    results together hold at most ``chars`` characters; a text longer than ``longest`` is
    never kept. What a member types can't make it grow past that, whatever they type."""

    def __init__(self, entries: int, chars: int, longest: int) -> None:
        self.entries, self.chars, self.longest = entries, chars, longest
        self._kept: OrderedDict[tuple[str, str], str | None] = OrderedDict()
        self._size = 0

    @staticmethod
    def _weight(key: tuple[str, str], value: str | None) -> int:
        return len(key[0]) + len(key[1]) + len(value or "")

    def get(self, key: tuple[str, str]) -> tuple[bool, str | None]:
        """Whether ``key`` is kept, and its value (moved to the newest end)."""
        if key not in self._kept:
            return False, None
        self._kept.move_to_end(key)
        return True, self._kept[key]

    def put(self, key: tuple[str, str], value: str | None) -> None:
        if len(key[0]) > self.longest or key in self._kept:
            return
        self._kept[key] = value
        self._size += self._weight(key, value)
        while len(self._kept) > self.entries or self._size > self.chars:
            old, gone = self._kept.popitem(last=False)
            self._size -= self._weight(old, gone)

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def size(self) -> int:
        """The characters kept, texts and results together."""
        return self._size

    def cache_clear(self) -> None:
        self._kept.clear()
        self._size = 0


_TRANSLATED: Final = BoundedCache(entries=1024, chars=256 * 1024, longest=MAX_INPUT_LENGTH)
"""The rewritings kept (a phrase is read, then its ``when`` said back in the notes)."""


def _translate(text: str, key: str) -> str | None:
    """The rewriting of ``text`` (its spaces collapsed) for the table ``key``, kept in
    :data:`_TRANSLATED`; none for a text longer than any phrase read."""
    if len(text) > MAX_INPUT_LENGTH:
        return None
    found, value = _TRANSLATED.get((text, key))
    if found:
        return value
    compiled = _LANGUAGES.get(key)
    if compiled is None:
        return None
    translated = compiled.translate(text)
    value = None if translated == text.lower() else translated
    _TRANSLATED.put((text, key), value)
    return value


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
    if compiled is None or len(" ".join(text.split())) > MAX_INPUT_LENGTH:
        return read(text)  # a text too long to read is refused by the parser, as it says
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
    shown = clip(text)
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
