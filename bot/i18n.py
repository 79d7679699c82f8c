"""The bot's languages: gettext catalogs in ``bot/locales/<locale>.po``, read once.

English is the source language: every message is written in English in the code (it is the
gettext ``msgid``), and a catalog maps it, within a context (``msgctxt``), to its translation.
The locales are Discord's locale keys (``fr``, ``de``, ``es-ES``, ``pt-BR``): what an
interaction's ``locale`` and ``guild_locale`` carry, and what ``name_localizations`` takes.

The slash commands read their names and descriptions from here through discord.py's
translator (:mod:`bot.commands.translator`). The bot's answers mark their text with :func:`t`
(a message) and :func:`tn` (a message with plural forms, ``msgid_plural``/``msgstr[n]``, the
form chosen by the catalog's ``Plural-Forms`` rule), in the context ``answer``; they are said
in the locale in effect (:func:`speaking`: the member's for an answer, the server's for what
the bot posts for everyone), English when none is or it has no catalog. The marked strings are
found in the code by ``tests/bot/test_i18n.py`` (through ``ast``), which fails when one has no
translation in a shipped locale.
Placeholders are ``str.format`` fields (``{count}``); :func:`problems` tells what is wrong with
a catalog (a message without translation, a placeholder dropped or added).
"""

from __future__ import annotations

import contextlib
import functools
import gettext
import string
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from babel.dates import format_datetime
from babel.messages.pofile import PoFileError, read_po

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

LOCALES_DIR = Path(__file__).parent / "locales"
"""Where the shipped catalogs are: one ``<locale>.po`` per language."""

SOURCE_LOCALE = "en-US"
"""The language the messages are written in (and what a locale without a catalog gets)."""


LANGUAGES = {
    "en-US": "English",
    "fr": "Français",
    "de": "Deutsch",
    "es-ES": "Español",
    "pt-BR": "Português (Brasil)",
}
"""The languages crier speaks (Discord locale keys: English and the shipped catalogs), each
by its own name: what ``/settings language`` and the dashboard's picker offer."""


def best_locale(tags: Iterable[str]) -> str | None:
    """The first of ``tags`` (Discord locale keys or HTTP language tags, ``de-AT``, ``pt``,
    ``en``, in order of preference) that crier speaks, as its locale key; None when none is
    (English then)."""
    for tag in tags:
        wanted = tag.strip().lower()
        if not wanted or wanted == "*":
            continue
        for key in LANGUAGES:
            if wanted == key.lower():
                return key
        language = wanted.split("-")[0]
        for key in LANGUAGES:
            if key.lower().split("-")[0] == language:
                return key
    return None


def accepted_languages(header: str) -> list[str]:
    """The language tags of an ``Accept-Language`` header, most wanted first (by ``q``;
    ``q=0`` is refused)."""
    weighted: list[tuple[float, int, str]] = []
    for index, part in enumerate(header.split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                quality = 0.0
        if tag and quality > 0:
            weighted.append((-quality, index, tag))
    return [tag for _, _, tag in sorted(weighted)]


ANSWER = "answer"
"""The catalog context of the bot's answers and posts (what :func:`t` and :func:`tn` mark)."""

Message = str | tuple[str, str]
"""A message as the code writes it: its English text, or its singular and plural forms."""


def english_plural(n: int) -> int:
    """English's rule, the source language's: the singular for 1 only."""
    return 0 if n == 1 else 1


class CatalogError(Exception):
    """A catalog that can't be read; the message names the file and what is wrong."""


@dataclass(frozen=True, slots=True)
class Catalog:
    """One language's translations: ``(context, message)`` → translation. Entries marked
    fuzzy (a translation not yet checked) or left empty are not translations."""

    locale: str
    entries: dict[tuple[str | None, str], str]
    plurals: dict[tuple[str | None, tuple[str, str]], tuple[str, ...]] = field(default_factory=dict)
    """Messages with plural forms: ``(context, (singular, plural))`` → the forms."""
    plural: Callable[[int], int] = english_plural
    """Which form ``n`` takes (the file's ``Plural-Forms`` rule)."""
    nplurals: int = 2

    def get(self, message: str, context: str | None = None) -> str | None:
        """The translation of ``message`` in ``context``, or None if there is none."""
        return self.entries.get((context, message))

    def get_plural(self, singular: str, plural: str, n: int, context: str | None) -> str | None:
        """The form of the translation of ``singular``/``plural`` that ``n`` takes."""
        forms = self.plurals.get((context, (singular, plural)))
        if forms is None:
            return None
        index = self.plural(n)
        return forms[index] if 0 <= index < len(forms) else None


def read_catalog(path: Path, locale: str | None = None) -> Catalog:
    """The catalog in the ``.po`` file at ``path`` (its locale: the file's name, unless
    ``locale`` is given). Raises :class:`CatalogError` for a file that isn't a catalog."""
    try:
        with path.open("rb") as f:
            po = read_po(f, abort_invalid=True)
    except (OSError, PoFileError, ValueError) as exc:
        raise CatalogError(f"cannot read the catalog {path}: {exc}") from None
    entries: dict[tuple[str | None, str], str] = {}
    plurals: dict[tuple[str | None, tuple[str, str]], tuple[str, ...]] = {}
    try:
        rule = gettext.c2py(po.plural_expr)
    except ValueError as exc:
        raise CatalogError(f"{path}: the Plural-Forms rule can't be read: {exc}") from None
    for msg in po:
        if not msg.id or msg.fuzzy:
            continue  # the header, or a translation not yet checked
        if isinstance(msg.id, str) != isinstance(msg.string, str):
            raise CatalogError(f"{path}: {msg.id!r} has plural forms in part only")
        if isinstance(msg.id, str) and isinstance(msg.string, str):
            if msg.string:
                entries[(msg.context, msg.id)] = msg.string
            continue
        singular, plural = msg.id[0], msg.id[1]
        forms = tuple(str(form or "") for form in msg.string or ())
        if len(forms) != po.num_plurals:
            raise CatalogError(
                f"{path}: {singular!r} has {len(forms)} forms, Plural-Forms says {po.num_plurals}"
            )
        if all(forms):
            plurals[(msg.context, (singular, plural))] = forms
    return Catalog(locale or path.stem, entries, plurals, rule, po.num_plurals)


def load_catalogs(directory: Path) -> dict[str, Catalog]:
    """Every catalog in ``directory``, by locale."""
    return {path.stem: read_catalog(path) for path in sorted(directory.glob("*.po"))}


@functools.cache
def catalogs() -> Mapping[str, Catalog]:
    """The shipped catalogs by locale, read on first use and kept."""
    return load_catalogs(LOCALES_DIR)


def locales() -> tuple[str, ...]:
    """The shipped locales besides English, in a stable order."""
    return tuple(sorted(catalogs()))


def lookup(message: str, locale: str, context: str | None = None) -> str | None:
    """The translation of ``message`` for ``locale`` (a Discord locale key), or None when
    that locale has no catalog or its catalog no translation (English is the message)."""
    catalog = catalogs().get(locale)
    return None if catalog is None else catalog.get(message, context)


def translate(
    message: str, locale: str | None, *, context: str | None = None, **values: Any
) -> str:
    """``message`` in ``locale`` (English when there is no translation for it), with its
    placeholders filled from ``values``."""
    text = (None if locale is None else lookup(message, locale, context)) or message
    return text.format(**values) if values else text


CURRENT: ContextVar[str | None] = ContextVar("crier_locale", default=None)
"""The locale answers are said in now (None: English)."""


@contextlib.contextmanager
def speaking(locale: str | None) -> Iterator[None]:
    """Say the answers marked with :func:`t` and :func:`tn` in ``locale`` within the block."""
    token = CURRENT.set(locale)
    try:
        yield
    finally:
        CURRENT.reset(token)


def current_locale() -> str | None:
    """The locale answers are said in now."""
    return CURRENT.get()


def t(message: str, /, **values: Any) -> str:
    """An answer's ``message`` in the locale in effect (:func:`speaking`), placeholders
    filled from ``values``. The message must be a literal string: the tests find it."""
    return translate(message, CURRENT.get(), context=ANSWER, **values)


def marked(message: str, /) -> str:
    """``message`` as it is, marked as an answer's message to be said later in some locale
    (with :func:`t` on the same text): the tests find it like :func:`t`'s."""
    return message


def tn(singular: str, plural: str, n: int, /, **values: Any) -> str:
    """The form of an answer's message for the count ``n`` in the locale in effect
    (``{n}`` is filled with ``n``): the language's plural rule picks the form."""
    locale = CURRENT.get()
    catalog = None if locale is None else catalogs().get(locale)
    text = None if catalog is None else catalog.get_plural(singular, plural, n, ANSWER)
    if text is None:
        text = singular if english_plural(n) == 0 else plural
    return text.format(n=n, **values)


def short_time(dt: datetime) -> str:
    """``dt`` in UTC as an autocomplete label shows it (plain text: no Discord timestamp
    there), in the language in effect: ``Mar 01 14:00 UTC``, ``1 mars 14:00 UTC``."""
    utc = dt.astimezone(UTC)
    locale = CURRENT.get()
    if locale is None or locale not in catalogs():
        return utc.strftime("%b %d %H:%M UTC")
    return format_datetime(utc, "d MMM HH:mm", tzinfo=UTC, locale=locale.replace("-", "_")) + " UTC"


def placeholders(text: str) -> list[str]:
    """The ``str.format`` fields of ``text``, in order (``{0}`` and ``{}`` included as
    written); raises ValueError for a malformed one (an unmatched brace)."""
    return sorted(
        field if spec is None or not spec else f"{field}:{spec}"
        for _, field, spec, _ in string.Formatter().parse(text)
        if field is not None
    )


def _order(m: tuple[str | None, Message]) -> tuple[str, str]:
    return (m[0] or "", m[1] if isinstance(m[1], str) else m[1][0])


def problems(catalog: Catalog, messages: Iterable[tuple[str | None, Message]]) -> list[str]:
    """What is wrong with ``catalog`` for the ``(context, message)`` pairs the code uses
    (a message with plural forms is its ``(singular, plural)``): a message without
    translation, a translation whose placeholders differ from the message's (one dropped,
    added or renamed; every plural form has those of the English plural), one that isn't a
    valid format string, and an entry the code no longer uses. Empty when the catalog is
    complete."""
    found: list[str] = []
    used = set(messages)
    for context, message in sorted(used, key=_order):
        where = f"{catalog.locale}: {message!r}" + (f" ({context})" if context else "")
        if isinstance(message, str):
            translation = catalog.get(message, context)
            translations: tuple[str, ...] | None = None if translation is None else (translation,)
            english = message
        else:
            translations = catalog.plurals.get((context, message))
            english = message[1]
        if translations is None:
            found.append(f"{where} has no translation")
            continue
        for translation in translations:
            try:
                expected, got = placeholders(english), placeholders(translation)
            except ValueError as exc:
                found.append(f"{where}: {translation!r} is not a valid format string ({exc})")
                continue
            if expected != got:
                found.append(
                    f"{where}: the translation {translation!r} has the placeholders {got}, "
                    f"the message {expected}"
                )
    have: set[tuple[str | None, Message]] = set(catalog.entries) | set(catalog.plurals)
    for context, message in sorted(have - used, key=_order):
        found.append(
            f"{catalog.locale}: {message!r}"
            + (f" ({context})" if context else "")
            + " is translated but no longer used"
        )
    return found
