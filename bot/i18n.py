"""The bot's languages: gettext catalogs in ``bot/locales/<locale>.po``, read once.

English is the source language: every message is written in English in the code (it is the
gettext ``msgid``), and a catalog maps it, within a context (``msgctxt``), to its translation.
The locales are Discord's locale keys (``fr``, ``de``, ``es-ES``, ``pt-BR``): what an
interaction's ``locale`` and ``guild_locale`` carry, and what ``name_localizations`` takes.

The slash commands read their names and descriptions from here through discord.py's
translator (:mod:`bot.commands.translator`); answers are to use :func:`translate` next.
Placeholders are ``str.format`` fields (``{count}``); :func:`problems` tells what is wrong with
a catalog (a message without translation, a placeholder dropped or added).
"""

from __future__ import annotations

import functools
import string
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from babel.messages.pofile import PoFileError, read_po

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

LOCALES_DIR = Path(__file__).parent / "locales"
"""Where the shipped catalogs are: one ``<locale>.po`` per language."""

SOURCE_LOCALE = "en-US"
"""The language the messages are written in (and what a locale without a catalog gets)."""


class CatalogError(Exception):
    """A catalog that can't be read; the message names the file and what is wrong."""


@dataclass(frozen=True, slots=True)
class Catalog:
    """One language's translations: ``(context, message)`` → translation. Entries marked
    fuzzy (a translation not yet checked) or left empty are not translations."""

    locale: str
    entries: dict[tuple[str | None, str], str]

    def get(self, message: str, context: str | None = None) -> str | None:
        """The translation of ``message`` in ``context``, or None if there is none."""
        return self.entries.get((context, message))


def read_catalog(path: Path, locale: str | None = None) -> Catalog:
    """The catalog in the ``.po`` file at ``path`` (its locale: the file's name, unless
    ``locale`` is given). Raises :class:`CatalogError` for a file that isn't a catalog."""
    try:
        with path.open("rb") as f:
            po = read_po(f, abort_invalid=True)
    except (OSError, PoFileError, ValueError) as exc:
        raise CatalogError(f"cannot read the catalog {path}: {exc}") from None
    entries: dict[tuple[str | None, str], str] = {}
    for msg in po:
        if not msg.id or msg.fuzzy:
            continue  # the header, or a translation not yet checked
        if not isinstance(msg.id, str) or not isinstance(msg.string, str):
            raise CatalogError(
                f"{path}: {msg.id!r} has plural forms, which no message of crier has yet"
            )
        if msg.string:
            entries[(msg.context, msg.id)] = msg.string
    return Catalog(locale or path.stem, entries)


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


def placeholders(text: str) -> list[str]:
    """The ``str.format`` fields of ``text``, in order (``{0}`` and ``{}`` included as
    written); raises ValueError for a malformed one (an unmatched brace)."""
    return sorted(
        field if spec is None or not spec else f"{field}:{spec}"
        for _, field, spec, _ in string.Formatter().parse(text)
        if field is not None
    )


def problems(catalog: Catalog, messages: Iterable[tuple[str | None, str]]) -> list[str]:
    """What is wrong with ``catalog`` for the ``(context, message)`` pairs the code uses:
    a message without translation, a translation whose placeholders differ from the
    message's (one dropped, added or renamed), one that isn't a valid format string, and an
    entry the code no longer uses. Empty when the catalog is complete."""
    found: list[str] = []
    used = set(messages)
    for context, message in sorted(used, key=lambda m: (m[0] or "", m[1])):
        where = f"{catalog.locale}: {message!r}" + (f" ({context})" if context else "")
        translation = catalog.get(message, context)
        if translation is None:
            found.append(f"{where} has no translation")
            continue
        try:
            expected, got = placeholders(message), placeholders(translation)
        except ValueError as exc:
            found.append(f"{where}: {translation!r} is not a valid format string ({exc})")
            continue
        if expected != got:
            found.append(
                f"{where}: the translation {translation!r} has the placeholders {got}, "
                f"the message {expected}"
            )
    for context, message in sorted(set(catalog.entries) - used, key=lambda m: (m[0] or "", m[1])):
        found.append(
            f"{catalog.locale}: {message!r}"
            + (f" ({context})" if context else "")
            + " is translated but no longer used"
        )
    return found
