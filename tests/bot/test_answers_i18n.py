"""The bot's answers in the member's language (issue 24): /schedule, /list, /info, /edit,
/settings and refusals through discord.py against the fake, with the interaction's
``locale`` set; plural forms through /schedule's preview; English for a member whose client
is in English or in a language without a catalog."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from bot.app import Crier
    from tests.bot.conftest import World
    from tests.fakediscord import Member

EXPECTED = {
    "fr": {
        "timezone": "🌐 Vous n'avez pas choisi de fuseau horaire ; les heures que vous tapez "
        "sont lues en **UTC**. "
        "Choisissez le vôtre avec `/timezone zone:…`.",
        "manager": "Il vous faut la permission **Gérer le serveur** pour gérer les annonces.",
        "settings": "⚙️ **Paramètres** :",
        "log": "**Salon de logs des échecs :** aucun",
        "schedule": "✅ Annonce **#1** programmée dans {general}.",
        "first": "**Première :** <t:1898604000:F> (<t:1898604000:R>)",
        "pings": "**Mentions :** aucune mention de rôle ni @everyone",
        "list": "**Annonces** — page 1 sur 1 (1 au total)",
        "row": "🕒 **#1** dans {general} · programmée · par {admin}",
        "info": "ℹ️ Annonce **#1** dans {general} · 🕒 programmée · par {admin}",
        "history": "• <t:1898596800:f> créée par {admin}",
        "edit": "✏️ Annonce **#1** modifiée dans {general}.",
        "title": "**Titre de l'embed :** aucun → Réunion",
        "refusal": "Annonce #9 introuvable. Utilisez `/list` pour voir les annonces de ce serveur.",
        "chars": [
            "…et 1 caractère de plus",
            "…et 2 caractères de plus",
            "…et 5 caractères de plus",
        ],
    },
    "de": {
        "timezone": "🌐 Du hast keine Zeitzone festgelegt; eingegebene Zeiten werden in "
        "**UTC** gelesen. "
        "Lege deine mit `/timezone zone:…` fest.",
        "manager": "Du brauchst die Berechtigung **Server verwalten**, um Ankündigungen zu "
        "verwalten.",
        "settings": "⚙️ **Einstellungen**:",
        "log": "**Log-Kanal für Fehler:** nicht gesetzt",
        "schedule": "✅ Ankündigung **#1** in {general} geplant.",
        "first": "**Erstes Mal:** <t:1898604000:F> (<t:1898604000:R>)",
        "pings": "**Erwähnungen:** keine Rollen- oder @everyone-Erwähnungen",
        "list": "**Ankündigungen** — Seite 1 von 1 (1 insgesamt)",
        "row": "🕒 **#1** in {general} · geplant · von {admin}",
        "info": "ℹ️ Ankündigung **#1** in {general} · 🕒 geplant · von {admin}",
        "history": "• <t:1898596800:f> erstellt von {admin}",
        "edit": "✏️ Ankündigung **#1** in {general} bearbeitet.",
        "title": "**Embed-Titel:** nicht gesetzt → Réunion",
        "refusal": "Ankündigung #9 nicht gefunden. Mit `/list` siehst du die Ankündigungen "
        "dieses Servers.",
        "chars": ["…und 1 weiteres Zeichen", "…und 2 weitere Zeichen", "…und 5 weitere Zeichen"],
    },
    "es-ES": {
        "timezone": "🌐 No has elegido zona horaria; las horas que escribes se leen en **UTC**. "
        "Elige la tuya con `/timezone zone:…`.",
        "manager": "Necesitas el permiso **Gestionar servidor** para gestionar anuncios.",
        "settings": "⚙️ **Ajustes**:",
        "log": "**Canal de registro de fallos:** ninguno",
        "schedule": "✅ Anuncio **#1** programado en {general}.",
        "first": "**Primera vez:** <t:1898604000:F> (<t:1898604000:R>)",
        "pings": "**Menciones:** sin menciones de rol ni @everyone",
        "list": "**Anuncios** — página 1 de 1 (1 en total)",
        "row": "🕒 **#1** en {general} · programado · por {admin}",
        "info": "ℹ️ Anuncio **#1** en {general} · 🕒 programado · por {admin}",
        "history": "• <t:1898596800:f> creado por {admin}",
        "edit": "✏️ Anuncio **#1** editado en {general}.",
        "title": "**Título del embed:** ninguno → Réunion",
        "refusal": "No se encontró el anuncio #9. Usa `/list` para ver los anuncios de este "
        "servidor.",
        "chars": ["…y 1 carácter más", "…y 2 caracteres más", "…y 5 caracteres más"],
    },
    "pt-BR": {
        "timezone": "🌐 Você não definiu um fuso horário; os horários que você digita são "
        "lidos em **UTC**. "
        "Defina o seu com `/timezone zone:…`.",
        "manager": "Você precisa da permissão **Gerenciar servidor** para gerenciar anúncios.",
        "settings": "⚙️ **Configurações**:",
        "log": "**Canal de log de falhas:** nenhum",
        "schedule": "✅ Anúncio **#1** agendado em {general}.",
        "first": "**Primeira vez:** <t:1898604000:F> (<t:1898604000:R>)",
        "pings": "**Menções:** sem menções de cargo ou @everyone",
        "list": "**Anúncios** — página 1 de 1 (1 no total)",
        "row": "🕒 **#1** em {general} · agendado · por {admin}",
        "info": "ℹ️ Anúncio **#1** em {general} · 🕒 agendado · por {admin}",
        "history": "• <t:1898596800:f> criado por {admin}",
        "edit": "✏️ Anúncio **#1** editado em {general}.",
        "title": "**Título do embed:** nenhum → Réunion",
        "refusal": "Anúncio #9 não encontrado. Use `/list` para ver os anúncios deste servidor.",
        "chars": ["…e mais 1 caractere", "…e mais 2 caracteres", "…e mais 5 caracteres"],
    },
    "en-US": {
        "timezone": "🌐 You haven't set a time zone; times you type are read in **UTC**. "
        "Set yours with `/timezone zone:…`.",
        "manager": "You need the **Manage Server** permission to manage announcements.",
        "settings": "⚙️ **Settings**:",
        "log": "**Log channel for failures:** none",
        "schedule": "✅ Scheduled announcement **#1** in {general}.",
        "first": "**First:** <t:1898604000:F> (<t:1898604000:R>)",
        "pings": "**Pings:** no role or @everyone pings",
        "list": "**Announcements** — page 1 of 1 (1 in all)",
        "row": "🕒 **#1** in {general} · scheduled · by {admin}",
        "info": "ℹ️ Announcement **#1** in {general} · 🕒 scheduled · by {admin}",
        "history": "• <t:1898596800:f> created by {admin}",
        "edit": "✏️ Edited announcement **#1** in {general}.",
        "title": "**Embed title:** none → Réunion",
        "refusal": "announcement #9 not found. Use `/list` to see this server's announcements.",
        "chars": ["…and 1 more character", "…and 2 more characters", "…and 5 more characters"],
    },
}


@pytest.mark.parametrize("locale", sorted(EXPECTED))
async def test_the_answers_are_in_the_members_language(
    world: World, crier: Crier, locale: str
) -> None:
    names = {"general": f"<#{world.general.id}>", "admin": f"<@{world.admin.id}>"}
    expected = {
        k: v if isinstance(v, list) else v.format(**names) for k, v in EXPECTED[locale].items()
    }

    async def answer(name: str, *, by: Member | None = None, **options: Any) -> list[str]:
        handle = await world.fake.invoke_command(
            world.guild, world.general, by or world.admin, name, options, locale=locale
        )
        assert handle.payload["locale"] == locale
        callback = await handle.response(timeout=5)
        assert callback.ephemeral
        return (callback.content or "").split("\n")

    scheduled = await answer("schedule", when="in 2 hours", message="Bonjour")
    assert scheduled[:2] == [expected["schedule"], expected["first"]]
    assert expected["pings"] in scheduled
    listed = await answer("list")
    assert listed[:2] == [expected["list"], expected["row"]]
    info = await answer("info", id=1)
    assert info[0] == expected["info"]
    assert expected["history"] in info
    edited = await answer("edit", id=1, title="Réunion")
    assert edited[:2] == [expected["edit"], expected["title"]]
    assert await answer("cancel", id=9) == [expected["refusal"]]
    assert await answer("pause", id=1, by=world.member) == [expected["manager"]]
    assert await answer("timezone") == [expected["timezone"]]
    settings = await answer("settings")
    assert settings[0] == expected["settings"]
    assert expected["log"] in settings
    # Plural forms: the preview of a message cut at 1000 characters says how many are left.
    for more, said in zip((1, 2, 5), expected["chars"], strict=True):
        lines = await answer("schedule", when="in 2 hours", message="x" * (1000 + more))
        assert lines[-1] == f"*{said}*"


async def test_a_member_in_an_unshipped_language_is_answered_in_english(
    world: World, crier: Crier
) -> None:
    handle = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "cancel", {"id": 9}, locale="ja"
    )
    callback = await handle.response(timeout=5)
    assert callback.content == EXPECTED["en-US"]["refusal"]


async def test_the_id_autocomplete_says_its_times_in_the_members_language(
    world: World, crier: Crier
) -> None:
    """An autocomplete label is plain text (no Discord timestamp there): its UTC time is
    written with the month's name in the member's language."""
    handle = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "schedule",
        {"when": "in 2 hours", "message": "Bonjour"},
    )  # fmt: skip
    await handle.response(timeout=5)  # 2030-03-01 14:00 UTC
    said = {}
    for locale in ("en-US", "fr", "de", "es-ES", "pt-BR"):
        handle = await world.fake.invoke_autocomplete(
            world.guild, world.general, world.admin, "info", {"id": ""}, focused="id",
            locale=locale,
        )  # fmt: skip
        [choice] = (await handle.response(timeout=5)).choices
        said[locale] = choice["name"]
    assert said == {
        "en-US": "#1 · Mar 01 14:00 UTC · Bonjour",
        "fr": "#1 · 1 mars 14:00 UTC · Bonjour",
        "de": "#1 · 1 März 14:00 UTC · Bonjour",
        "es-ES": "#1 · 1 mar 14:00 UTC · Bonjour",
        "pt-BR": "#1 · 1 mar. 14:00 UTC · Bonjour",
    }


def test_the_exports_counts_take_each_languages_plural() -> None:
    from bot import i18n
    from bot.render import exported

    def head(locale: str, announcements: int, templates: int) -> str:
        with i18n.speaking(locale):
            return exported(announcements, templates, 2048).split(" (")[0]

    assert [head("fr", a, b) for a, b in ((0, 1), (1, 2), (5, 0))] == [
        "📦 0 annonce active de ce serveur et 1 modèle",
        "📦 1 annonce active de ce serveur et 2 modèles",
        "📦 5 annonces actives de ce serveur et 0 modèle",
    ]
    assert [head("de", a, b) for a, b in ((0, 1), (1, 2), (5, 0))] == [
        "📦 0 aktive Ankündigungen dieses Servers und 1 Vorlage",
        "📦 1 aktive Ankündigung dieses Servers und 2 Vorlagen",
        "📦 5 aktive Ankündigungen dieses Servers und 0 Vorlagen",
    ]
    assert head("pt-BR", 0, 1) == "📦 0 anúncio ativo deste servidor e 1 modelo"
    assert head("es-ES", 0, 1) == "📦 0 anuncios activos de este servidor y 1 plantilla"
    assert head("en-US", 1, 0) == "📦 This server's 1 live announcement and 0 templates"


async def ask(world: World, name: str, locale: str, **options: Any) -> list[str]:
    """The lines of the answer to ``/name options`` by the admin, whose client is in
    ``locale``."""
    handle = await world.fake.invoke_command(
        world.guild, world.general, world.admin, name, options, locale=locale
    )
    callback = await handle.response(timeout=5)
    return (callback.content or "").split("\n")


async def test_the_repeat_rule_is_said_in_the_readers_language(world: World, crier: Crier) -> None:
    """The rule is stored in English; a French member reads it in French in the
    confirmation, /list and /info, and a German one /edit's before → after in German."""
    friday = "every friday at 20:00"
    scheduled = await ask(world, "schedule", "fr", when="in 2 hours", message="Hi", repeat=friday)
    assert "**Répétition :** chaque vendredi à 20:00 (UTC)" in scheduled
    assert "  répétition : chaque vendredi à 20:00 (UTC)" in await ask(world, "list", "fr")
    assert "**Répétition :** chaque vendredi à 20:00 (UTC)" in await ask(world, "info", "fr", id=1)
    # Someone whose client is in English reads the words as they were stored.
    assert "**Repeats:** every Friday at 20:00 (UTC)" in await ask(world, "info", "en-US", id=1)
    edited = await ask(world, "edit", "de", id=1, repeat="every 2 hours")
    assert "**Wiederholung:** jeden Freitag um 20:00 (UTC) → alle 2 Stunden" in edited
    await ask(world, "schedule", "es-ES", when="in 2 hours", message="Hola",
              repeat="first and third monday of the month")  # fmt: skip
    info = await ask(world, "info", "es-ES", id=2)
    assert "**Se repite:** el primer y tercer lunes de cada mes, a las 14:00 (UTC)" in info
    await ask(world, "schedule", "pt-BR", when="in 2 hours", message="Oi", repeat="weekdays")
    info = await ask(world, "info", "pt-BR", id=3)
    assert "**Repete:** às 14:00, de segunda-feira a sexta-feira (UTC)" in info
