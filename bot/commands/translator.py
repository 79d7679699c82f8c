"""The slash commands in every shipped language: discord.py's translator over the catalogs.

discord.py hands every name, description and choice of the command tree to
:meth:`CatalogTranslator.translate` as a ``locale_str`` once per Discord locale when it builds
the sync payload (commands declared with plain strings get theirs automatically); the answer
becomes the payload's ``name_localizations`` / ``description_localizations``. The English text
is the catalog's ``msgid``; the context says what kind of string it is, so that an option and
a command of the same English name can be translated apart:

- ``command``: a command's (or group's) name and description;
- ``option``: an option's name and description (one translation for the same option of every
  command, so ``id`` and ``timezone`` read the same everywhere);
- ``choice``: a choice's name.

Interactions carry the English (base) command and option names whatever the member's language,
so nothing else changes for the handlers.
"""

from __future__ import annotations

from discord import Locale, app_commands
from discord.app_commands import TranslationContextLocation as Where

from .. import i18n

CONTEXTS = {
    Where.command_name: "command",
    Where.command_description: "command",
    Where.group_name: "command",
    Where.group_description: "command",
    Where.parameter_name: "option",
    Where.parameter_description: "option",
    Where.choice_name: "choice",
}
"""The catalog context (``msgctxt``) of each kind of string in the command tree."""


def message_context(context: app_commands.TranslationContextTypes) -> str | None:
    """The catalog context for a string of the command tree at ``context``."""
    return CONTEXTS.get(context.location)


class CatalogTranslator(app_commands.Translator):
    """Names, descriptions and choices from the shipped catalogs (:mod:`bot.i18n`)."""

    async def load(self) -> None:
        i18n.catalogs()  # read every catalog now, once: a broken one fails the start

    async def translate(
        self,
        string: app_commands.locale_str,
        locale: Locale,
        context: app_commands.TranslationContextTypes,
    ) -> str | None:
        return i18n.lookup(string.message, locale.value, message_context(context))
