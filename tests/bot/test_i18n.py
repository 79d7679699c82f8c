"""The localized command surface (issue 24): every name, description and choice of the slash
commands has a translation in each shipped language, with the placeholders of its English
message, and the localized names follow Discord's rules; the synced commands carry them,
and a member whose client is in French runs the commands as everyone does."""

from __future__ import annotations

import ast
import re
import unicodedata
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from discord import Locale, app_commands

from bot import i18n
from bot.commands.translator import CatalogTranslator, message_context
from tests.bot.conftest import NOW, World, run_command

if TYPE_CHECKING:
    from bot.app import Crier

SHIPPED = ("de", "es-ES", "fr", "pt-BR")
BOT = Path(__file__).resolve().parents[2] / "bot"
MARKERS = {"t": 1, "marked": 1, "tn": 2}
"""The functions that mark an answer's text, and how many of their first arguments are it."""


def marked_messages(root: Path = BOT) -> set[tuple[str | None, i18n.Message]]:
    """Every answer's text marked in the code under ``root`` (``t("…")``, ``marked("…")``,
    ``tn("…", "…", n)``, called by name or as ``i18n.t``), found with ``ast``; a marker
    called with anything but literal strings fails the test: its text could not be found."""
    found: set[tuple[str | None, i18n.Message]] = set()
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name not in MARKERS or path.name == "i18n.py":
                continue
            texts = node.args[: MARKERS[name]]
            literal = all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in texts)
            where = f"{path.relative_to(root.parent)}:{node.lineno}"
            assert literal, f"{where}: {name}() takes literal text"
            assert len(texts) == MARKERS[name], f"{where}: {name}() takes literal text"
            values = [a.value for a in texts if isinstance(a, ast.Constant)]
            found.add((i18n.ANSWER, values[0] if len(values) == 1 else (values[0], values[1])))
    for path in sorted(root.rglob("*.html")):  # the dashboard's templates: {{ t("…") }}
        found |= {(i18n.ANSWER, text) for text in TEMPLATE_MARK.findall(path.read_text("utf-8"))}
    return found


TEMPLATE_MARK = re.compile(r'\bt\("([^"\\]*)"')
"""A marked text in a dashboard template (no ``"`` or backslash in it)."""


class Recording(CatalogTranslator):
    """The bot's translator, noting every ``(context, message)`` discord.py asks it for."""

    def __init__(self) -> None:
        self.asked: set[tuple[str | None, str]] = set()

    async def translate(
        self,
        string: app_commands.locale_str,
        locale: Locale,
        context: app_commands.TranslationContextTypes,
    ) -> str | None:
        self.asked.add((message_context(context), string.message))
        return await super().translate(string, locale, context)


async def payloads(crier: Crier, translator: CatalogTranslator | None = None) -> list[Any]:
    """The command list as sync sends it (every localization included)."""
    tree = crier.bot.tree
    use = translator or CatalogTranslator()
    return [await c.get_translated_payload(tree, use) for c in tree.get_commands()]


async def test_the_shipped_locales_are_the_issues() -> None:
    assert i18n.locales() == SHIPPED
    # Every one is one of Discord's locale keys (what name_localizations accepts).
    assert set(SHIPPED) <= {locale.value for locale in Locale}


async def test_every_command_string_is_translated_in_every_shipped_locale(crier: Crier) -> None:
    recording = Recording()
    await payloads(crier, recording)
    asked = recording.asked
    # What discord.py asked for is the whole surface: names, descriptions, options, choices.
    assert ("command", "schedule") in asked
    assert ("option", "when") in asked
    assert ("choice", "log channel") in asked
    assert ("option", "The announcement's number (see /list)") in asked
    assert ("command", "Schedule a copy") in asked  # the message command's name
    assert len(asked) == 169
    answers = marked_messages()
    # The answers are found too: one of each kind of marker, and the log channel's report.
    assert (i18n.ANSWER, "✅ Scheduled announcement **#{id}** in {channel}.") in answers
    assert (i18n.ANSWER, ("…and {n} more character", "…and {n} more characters")) in answers
    assert (
        i18n.ANSWER,
        "⚠️ Announcement #{id} for {channel} could not be posted: {reason}.",
    ) in answers
    assert (i18n.ANSWER, "Page {page} of {pages} · {total} announcements") in answers  # html
    assert len(answers) > 130
    for locale in SHIPPED:
        assert i18n.problems(i18n.catalogs()[locale], asked | answers) == [], locale


def test_the_marker_finder_refuses_text_it_cannot_read(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text(
        'from bot.i18n import t, tn\nt("Hello {who}", who=x)\ntn("a day", "{n} days", 3)\n'
    )
    assert marked_messages(tmp_path) == {
        ("answer", "Hello {who}"),
        ("answer", ("a day", "{n} days")),
    }
    (tmp_path / "bad.py").write_text('from bot.i18n import t\nt(f"Hello {who}")\n')
    with pytest.raises(AssertionError, match=r"bad\.py:2: t\(\) takes literal text"):
        marked_messages(tmp_path)


def write_po(path: Path, entries: list[tuple[str, str, str]], fuzzy: set[str] = set()) -> Path:  # noqa: B006
    lines = ['msgid ""', 'msgstr ""', '"Content-Type: text/plain; charset=UTF-8\\n"', ""]
    for context, message, translation in entries:
        if message in fuzzy:
            lines.append("#, fuzzy")
        lines += [f'msgctxt "{context}"', f'msgid "{message}"', f'msgstr "{translation}"', ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def test_problems_names_what_is_missing_dropped_added_or_unused(tmp_path: Path) -> None:
    catalog = i18n.read_catalog(
        write_po(
            tmp_path / "fr.po",
            [
                ("answer", "{count} announcements", "{count} annonces"),
                ("answer", "Posted in {channel}", "Publié"),  # dropped
                ("answer", "Paused by {who}", "Mis en pause par {who} le {when}"),  # added
                ("answer", "Next: {when}", "Prochaine : {quand}"),  # renamed
                ("answer", "At {time}", "À {time"),  # not a format string
                ("answer", "Unchecked", "Pas vérifié"),  # fuzzy: not a translation
                ("answer", "Gone", "Parti"),  # no longer in the code
            ],
            fuzzy={"Unchecked"},
        )
    )
    used = [
        ("answer", m)
        for m in (
            "{count} announcements", "Posted in {channel}", "Paused by {who}", "Next: {when}",
            "At {time}", "Unchecked", "Missing",
        )
    ]  # fmt: skip
    found = i18n.problems(catalog, used)
    assert len(found) == 7, found
    assert [p for p in found if "has no translation" in p] == [
        "fr: 'Missing' (answer) has no translation",
        "fr: 'Unchecked' (answer) has no translation",
    ]
    assert any("'Posted in {channel}'" in p and "placeholders []" in p for p in found)
    assert any("'Paused by {who}'" in p and "['when', 'who']" in p for p in found)
    assert any("'Next: {when}'" in p and "['quand']" in p for p in found)
    assert any("'At {time}'" in p and "not a valid format string" in p for p in found)
    assert found[-1] == "fr: 'Gone' (answer) is translated but no longer used"
    # The same message in another context is another message.
    assert i18n.problems(catalog, [("other", "{count} announcements")])[0].endswith(
        "has no translation"
    )


def test_a_broken_catalog_is_refused_with_its_name(tmp_path: Path) -> None:
    path = tmp_path / "de.po"
    for broken in (b"not a catalog\n", b'msgid "a"\n', b'msgid "a"\nmsgstr "\xff"\n'):
        path.write_bytes(broken)  # a stray line, a msgid without msgstr, not UTF-8
        with pytest.raises(i18n.CatalogError, match=r"cannot read the catalog .*de\.po"):
            i18n.read_catalog(path)
    header = b'msgid ""\nmsgstr ""\n"Plural-Forms: nplurals=2; plural=(n > 1);\\n"\n\n'
    plural = b'msgid "a day"\nmsgid_plural "{n} days"\nmsgstr[0] "un jour"\n'
    path.write_bytes(header + plural + b'msgstr[1] "{n} jours"\nmsgstr[2] "x"\n')  # too many
    with pytest.raises(i18n.CatalogError, match=r"cannot read the catalog .*de\.po"):
        i18n.read_catalog(path)
    path.write_bytes(header + plural)  # a form missing: not a translation
    assert i18n.read_catalog(path).plurals == {}
    path.write_bytes(header + plural + b'msgstr[1] "{n} jours"\n')
    assert i18n.read_catalog(path).plurals == {
        (None, ("a day", "{n} days")): ("un jour", "{n} jours")
    }
    path.write_bytes(b'msgid ""\nmsgstr ""\n"Plural-Forms: nplurals=2; plural=(n >>> 1);\\n"\n')
    with pytest.raises(i18n.CatalogError, match=r"Plural-Forms rule can't be read"):
        i18n.read_catalog(path)


def test_translate_falls_back_to_english_and_fills_placeholders(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert i18n.translate("list", "fr", context="command") == "liste"
    assert i18n.translate("list", "en-US", context="command") == "list"
    assert i18n.translate("list", None, context="command") == "list"
    assert i18n.translate("list", "ja", context="command") == "list"  # no Japanese catalog
    assert i18n.translate("list", "fr") == "list"  # not in that context
    entries = i18n.catalogs()["fr"].entries
    monkeypatch.setitem(entries, ("answer", "{n} left"), "il en reste {n}")
    assert i18n.translate("{n} left", "fr", context="answer", n=3) == "il en reste 3"
    assert i18n.translate("{n} left", "de", context="answer", n=3) == "3 left"


# --- Discord's rules for the localized surface ----------------------------------------------


def discord_name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid command or option name, or None: 1–32 characters, each a
    letter, a digit, ``-`` or ``_`` (``^[-_\\p{L}\\p{N}\\p{sc=Deva}\\p{sc=Thai}]{1,32}$``), in
    lowercase where the letter has a lowercase form."""
    if not 1 <= len(name) <= 32:
        return f"{name!r} has {len(name)} characters (1–32)"
    for ch in name:
        allowed = (
            ch in "-_"
            or unicodedata.category(ch)[0] in "LN"
            or "\u0900" <= ch <= "\u097f"  # Devanagari
            or "\u0e00" <= ch <= "\u0e7f"  # Thai
        )
        if not allowed:
            return f"{name!r} has the character {ch!r}"
    if name.lower() != name:
        return f"{name!r} is not lowercase"
    return None


MENUS = (2, 3)
"""The command types of a user's and a message's context menu (Apps → …)."""


def menu_name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid name of a user or message command, or None: 1–32
    characters, any case, spaces inside allowed."""
    if not 1 <= len(name) <= 32 or name != name.strip():
        return f"{name!r} has {len(name)} characters (1–32, not blank at either end)"
    return None


def surface_problems(commands: list[dict[str, Any]]) -> list[str]:
    """Every breach of Discord's rules in the localized command list: names (see above),
    names unique among siblings in every locale (a locale without a translation shows the
    English one), descriptions and choice names of 1–100 characters."""
    found: list[str] = []

    def names(items: list[dict[str, Any]], where: str, *, top: bool = False) -> None:
        for locale in SHIPPED:
            shown = [i.get("name_localizations", {}).get(locale, i["name"]) for i in items]
            for name, count in Counter(shown).items():
                if count > 1:
                    found.append(f"{where} [{locale}]: {name!r} {count} times")
        for item in items:
            menu = top and item.get("type") in MENUS  # (an option's type means another thing)
            rule = menu_name_problem if menu else discord_name_problem
            for locale, name in (item.get("name_localizations") or {}).items():
                if (why := rule(name)) is not None:
                    found.append(f"{where} {item['name']} [{locale}]: {why}")
            for locale, text in (item.get("description_localizations") or {}).items():
                if not 1 <= len(text) <= 100:
                    found.append(f"{where} {item['name']} [{locale}]: description {len(text)}")

    names(commands, "/", top=True)
    for command in commands:
        options = command.get("options", [])
        names(options, f"/{command['name']}")
        for option in options:
            for choice in option.get("choices", []):
                for locale, text in (choice.get("name_localizations") or {}).items():
                    if not 1 <= len(text) <= 100:
                        found.append(f"choice {choice['value']} [{locale}]: {len(text)}")
    return found


async def test_the_localized_surface_follows_discords_rules(crier: Crier) -> None:
    commands = await payloads(crier)
    assert surface_problems(commands) == []
    # Every shipped locale, and only those, on every name and description.
    for command in commands:
        assert set(command["name_localizations"]) == set(SHIPPED), command["name"]
        if command["type"] in MENUS:  # a context menu's command has a name only
            assert "options" not in command
            continue
        assert set(command["description_localizations"]) == set(SHIPPED)
        for option in command["options"]:
            assert set(option["name_localizations"]) == set(SHIPPED), option["name"]
            assert set(option["description_localizations"]) == set(SHIPPED)


async def test_a_translation_that_breaks_the_rules_is_caught(
    crier: Crier, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = i18n.catalogs()
    bad = {
        ("fr", "command", "schedule"): "Programmer",  # not lowercase
        ("de", "option", "when"): "wann genau",  # a space
        ("es-ES", "option", "tags"): "e" * 33,  # too long
        ("pt-BR", "command", "pause"): "lista",  # the same as /list's
        ("fr", "option", "Remove one setting"): "R" * 101,  # a description too long
        ("de", "command", "Schedule a copy"): "K" * 33,  # a context menu's name too long
    }
    for (locale, context, message), text in bad.items():
        monkeypatch.setitem(entries[locale].entries, (context, message), text)
    found = sorted(surface_problems(await payloads(crier)))
    assert found == [
        f"/ Schedule a copy [de]: {'K' * 33!r} has 33 characters (1–32, not blank at either end)",
        "/ [pt-BR]: 'lista' 2 times",
        "/ schedule [fr]: 'Programmer' is not lowercase",
        "/edit when [de]: 'wann genau' has the character ' '",
        f"/schedule tags [es-ES]: {'e' * 33!r} has 33 characters (1–32)",
        "/schedule when [de]: 'wann genau' has the character ' '",
        "/settings clear [fr]: description 101",
    ], found


def test_discords_name_rule() -> None:
    for good in ("programmer", "fuseau_horaire", "überspringen", "zona-horaria", "x", "a1",
                 "e" * 32, "सूची", "รายการ", "一覧"):  # fmt: skip
        assert discord_name_problem(good) is None, good
    for bad in ("", "e" * 33, "Liste", "two words", "a.b", "ça?", "É"):
        assert discord_name_problem(bad) is not None, bad


# --- through discord.py against the fake ------------------------------------------------------


async def test_the_synced_commands_carry_the_localizations(world: World, crier: Crier) -> None:
    synced = {name: c.raw for (name, _), c in world.fake.global_commands.items()}
    schedule = synced["schedule"]
    assert schedule["name"] == "schedule"  # the English name stays the base name
    assert schedule["name_localizations"] == {
        "fr": "programmer", "de": "planen", "es-ES": "programar", "pt-BR": "agendar",
    }  # fmt: skip
    assert schedule["description_localizations"]["de"] == (
        "Eine Ankündigung planen (ohne Nachricht tippst du sie in einem Formular)"
    )
    when = schedule["options"][0]
    assert when["name"] == "when"
    assert when["name_localizations"] == {
        "fr": "quand", "de": "wann", "es-ES": "cuándo", "pt-BR": "quando",
    }  # fmt: skip
    clear = next(o for o in synced["settings"]["options"] if o["name"] == "clear")
    log_choice = next(c for c in clear["choices"] if c["value"] == "log_channel")
    assert log_choice["name"] == "log channel"
    assert log_choice["name_localizations"]["fr"] == "salon de logs"
    assert synced["timezone"]["name_localizations"]["pt-BR"] == "fuso_horário"
    # The request discord.py sent passed Discord's spec (localizations included).
    (sync,) = [r for r in world.fake.requests if r.method == "PUT" and "/commands" in r.path]
    assert sync.status == 200
    assert sync.spec_violations == []
    assert sync.body[0]["name_localizations"]


async def test_a_member_in_french_runs_the_commands_with_the_base_option_names(
    world: World, crier: Crier
) -> None:
    """Discord sends the English command and option names whatever the member's language:
    the commands work the same for a member whose client is in French."""
    handle = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "schedule",
        {"when": "in 2 hours", "message": "Bonjour à tous"}, locale="fr",
    )  # fmt: skip
    assert handle.payload["locale"] == "fr"
    cb = await handle.response(timeout=5)
    assert cb.ephemeral
    assert cb.content
    assert cb.content.startswith("✅ Annonce **#1** programmée dans")  # answered in French
    (a,) = (await crier.bot.announcements.listing_page(world.guild.id, 0, 10)).listing.items
    assert a.content == "Bonjour à tous"
    assert a.first_ts == NOW.timestamp() + 7200
    handle = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "settings",
        {"timezone": "Europe/Paris", "clear": "log_channel"}, locale="fr",
    )  # fmt: skip
    cb = await handle.response(timeout=5)
    assert "Europe/Paris" in (cb.content or "")
    assert (await crier.bot.announcements.settings(world.guild.id)).timezone == "Europe/Paris"
    listed = await run_command(world, "list")
    assert "Bonjour à tous" in (listed.content or "")


# --- plural forms -----------------------------------------------------------------------------


def test_each_catalogs_plural_rule_is_the_languages() -> None:
    """The ``Plural-Forms`` rule of each catalog picks the form CLDR (Babel's data) gives
    the language for every count: French and Brazilian Portuguese say 0 and 1 in the
    singular, German and Spanish 1 only."""
    from babel import Locale as BabelLocale

    for locale, catalog in i18n.catalogs().items():
        cldr = BabelLocale.parse(locale, sep="-")
        assert catalog.nplurals == 2, locale
        for n in range(0, 2001):
            expected = 0 if cldr.plural_form(n) == "one" else 1
            assert catalog.plural(n) == expected, (locale, n)


def test_plural_forms_are_chosen_by_the_languages_rule() -> None:
    def said(locale: str | None, n: int) -> str:
        with i18n.speaking(locale):
            return i18n.tn("…and {n} more character", "…and {n} more characters", n)

    expected = {
        None: ["…and 0 more characters", "…and 1 more character", "…and 2 more characters",
               "…and 5 more characters"],
        "en-US": ["…and 0 more characters", "…and 1 more character", "…and 2 more characters",
                  "…and 5 more characters"],
        "fr": ["…et 0 caractère de plus", "…et 1 caractère de plus", "…et 2 caractères de plus",
               "…et 5 caractères de plus"],
        "de": ["…und 0 weitere Zeichen", "…und 1 weiteres Zeichen", "…und 2 weitere Zeichen",
               "…und 5 weitere Zeichen"],
        "es-ES": ["…y 0 caracteres más", "…y 1 carácter más", "…y 2 caracteres más",
                  "…y 5 caracteres más"],
        "pt-BR": ["…e mais 0 caractere", "…e mais 1 caractere", "…e mais 2 caracteres",
                  "…e mais 5 caracteres"],
    }  # fmt: skip
    for locale, texts in expected.items():
        assert [said(locale, n) for n in (0, 1, 2, 5)] == texts, locale


def test_speaking_holds_only_within_its_block() -> None:
    assert i18n.current_locale() is None
    with i18n.speaking("de"):
        assert i18n.t("Nothing was changed.") == "Es wurde nichts geändert."
        with i18n.speaking("es-ES"):
            assert i18n.t("Nothing was changed.") == "No se ha cambiado nada."
        assert i18n.current_locale() == "de"
    assert i18n.t("Nothing was changed.") == "Nothing was changed."


ANSWER_ERRORS = {
    "Refusal",
    "InputError",
    "OverLimit",
    "TooMuchStored",
    "TooManyCommands",
    "NotEditable",
    "TemplateRefused",
    "ImportConflict",
    "DocumentRefused",
    "RowRefused",
}
"""The errors whose message is an answer (:func:`bot.render.expected_answer` shows it as it
is), and ``reply``: what they are given is said to a member."""


def _has_words(node: ast.AST) -> bool:
    """Whether ``node`` is text written in the code (a literal or f-string with a letter in
    its literal parts, or a sum with one), not a marked message or a value."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and any(c.isalpha() for c in node.value)
    if isinstance(node, ast.JoinedStr):
        return any(_has_words(part) for part in node.values if isinstance(part, ast.Constant))
    if isinstance(node, ast.BinOp):
        return _has_words(node.left) or _has_words(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):  # "…".format()
        return node.func.attr == "format" and _has_words(node.func.value)
    return False


def unmarked_answers(root: Path = BOT) -> list[str]:
    """Where the code under ``root`` (the dashboard's pages aside: they have their own
    templates) gives an answer text that isn't marked (``t``, ``tn``, ``marked``)."""
    found: list[tuple[str, int, str]] = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root.parent).as_posix()
        if "web" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            said = node.args[0] if name in ANSWER_ERRORS and node.args else None
            if name == "reply" and len(node.args) > 1:
                said = node.args[1]
            if said is not None and _has_words(said):
                found.append((where, node.lineno, f"{name}() is given unmarked text"))
    return [f"{where}:{line}: {what}" for where, line, what in sorted(found)]


def test_every_answer_text_is_marked() -> None:
    assert unmarked_answers() == []


def test_the_answer_scan_finds_unmarked_text(tmp_path: Path) -> None:
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "a.py").write_text(
        "raise Refusal(t('Marked {x}', x=1))\n"
        "raise Refusal(f'Not marked {x}')\n"
        "await reply(interaction, text + ' ' + t('Marked'))\n"
        "await reply(interaction, 'Not marked either')\n"
        "raise InputError(f'{error} ' + t('Marked'))\n"
        "raise NotEditable('Not marked #{id}'.format(id=1))\n"
        "raise NotEditable(t('Marked #{id}').format(id=1))\n"
    )
    assert unmarked_answers(tmp_path / "bot") == [
        "bot/a.py:2: Refusal() is given unmarked text",
        "bot/a.py:4: reply() is given unmarked text",
        "bot/a.py:6: NotEditable() is given unmarked text",
    ]
