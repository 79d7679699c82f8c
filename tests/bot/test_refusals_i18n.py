"""The refusals and reports that were still English (issue 24): the limits, the placeholders
and templates, forum and thread destinations, the import's report, the notes of what a
phrase was read as, and the log channel's failure reports, each through discord.py against
the fake with the interaction's ``locale`` (or the server's ``guild_locale``) set."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from tests.bot.conftest import run_command
from tests.bot.test_leaving import make_crier  # noqa: F401 (a fixture)
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from bot.app import Crier
    from tests.bot.conftest import World
    from tests.bot.test_leaving import MakeCrier
    from tests.fakediscord import Channel

# ruff: noqa: F811 (make_crier: the fixture, as each test's argument)


async def ask(
    world: World, command: str, locale: str, *, where: Channel | None = None, **options: Any
) -> str:
    """The answer to ``/command options`` by the admin, whose client is in ``locale``."""
    handle = await world.fake.invoke_command(
        world.guild, where or world.general, world.admin, command, options, locale=locale
    )
    callback = await handle.response(timeout=5)
    return callback.content or ""


async def test_the_limits_refuse_in_the_members_language(
    world: World, make_crier: MakeCrier
) -> None:
    await make_crier(max_announcements=1, min_repeat=600.0)
    said = await ask(world, "schedule", "es-ES", when="in 10m", message="hola",
                     repeat="every 5 minutes")  # fmt: skip
    assert said == (
        "Eso se repite demasiado a menudo para este servidor: las publicaciones estarían a "
        "5 minutos de distancia, y la repetición más corta aquí es de 10 minutos "
        "(MIN_REPEAT_MINUTES). Elige una repetición más larga, p. ej. `every 10 minutes`."
    )
    assert "Anuncio **#1** programado" in await ask(
        world, "schedule", "es-ES", when="in 10m", message="hola"
    )
    said = await ask(world, "schedule", "es-ES", when="in 10m", message="hola")
    assert said.startswith(
        "Este servidor ya tiene 1 anuncio activo (programado o en pausa): una más superaría su "
        "límite de 1 (MAX_ANNOUNCEMENTS_PER_GUILD)."
    ), said
    said = await ask(world, "schedule", "de", when="in 10m", message="hallo")
    assert said.startswith("Dieser Server hat schon 1 aktive (geplante oder pausierte) "), said


KNOWN = "`{occurrence}`, `{date}`, `{time}`, `{weekday}`, `{next}`, `{until}`, `{event}`"


async def test_placeholder_and_template_refusals_in_the_members_language(
    world: World, crier: Crier
) -> None:
    said = await ask(world, "schedule", "de", when="in 10m", message="Hallo {name}")
    assert said == (
        "Die Nachricht verwendet `{name}`, das ist kein Platzhalter. Die bekannten sind "
        f"{KNOWN}; schreibe `{{{{` und `}}}}` für Klammern."
    )
    said = await ask(world, "schedule", "de", when="in 10m", message="Hallo", title="a } b")
    assert said.startswith("Der Titel enthält eine einzelne `}`. Schreibe `{{` oder `}}`"), said
    said = await ask(world, "template delete", "fr", name="hebdo")
    assert said == (
        "Ce serveur n'a pas de modèle nommé `hebdo` ; rien n'a été supprimé. Voir `/template list`."
    )
    await ask(world, "schedule", "fr", when="in 10m", message="Bonjour")
    said = await ask(world, "template save", "pt-BR", name="semanal", **{"from": 1})
    assert said.startswith("💾 "), said
    said = await ask(world, "template save", "pt-BR", name="semanal", **{"from": 1})
    assert said == (
        "Este servidor já tem um modelo chamado `semanal`. Escolha outro nome ou use antes "
        "`/template delete name:semanal`."
    )
    assert await ask(world, "template delete", "es-ES", name="semanal") == (
        "🗑️ Plantilla `semanal` borrada."
    )


async def test_forum_and_thread_refusals_in_the_members_language(
    world: World, crier: Crier
) -> None:
    world.guild.set_bot_permissions(P.VIEW_CHANNEL | P.SEND_MESSAGES | P.CREATE_PUBLIC_THREADS)
    forum = world.guild.add_forum("releases", tags=["news", "beta"], require_tag=True)
    said = await ask(world, "schedule", "fr", when="in 1h", message="m", channel=forum)
    assert said == (
        f"<#{forum.id}> est un forum : chaque publication a besoin d'un `title` (il nomme la "
        "publication), par ex. `title: Point hebdo`."
    )
    said = await ask(world, "schedule", "de", when="in 1h", message="m", title="T",
                     channel=forum, tags="gamma")  # fmt: skip
    assert said == f"<#{forum.id}> hat keinen Tag `gamma`. Seine Tags: `news`, `beta`."
    said = await ask(world, "schedule", "es-ES", when="in 1h", message="m", title="T",
                     channel=forum)  # fmt: skip
    assert said == (
        f"<#{forum.id}> exige una etiqueta en cada publicación: añade `tags` (una de `news`, "
        "`beta`)."
    )
    # A thread the bot can't post in: the permission by the name Discord's client shows.
    thread = world.guild.add_thread(world.news, "t")
    world.news.set_overwrite(world.guild.bot_role, deny=P.SEND_MESSAGES_IN_THREADS)
    said = await ask(world, "schedule", "fr", when="in 1h", message="m", channel=thread)
    assert said == (
        f"Il me faut **Envoyer des messages dans les fils** dans <#{thread.id}> pour y publier. "
        "Demandez à un admin de me l'accorder, puis réessayez."
    )


async def test_an_import_dry_run_and_its_result_in_the_members_language(
    world: World, other: World, crier: Crier
) -> None:
    """/import in pt-BR: the dry run's head, its rows (a rule said in Portuguese), a refused
    row's reason and the button; the applied import's answer; /export's in German."""
    await run_command(world, "schedule", channel=world.news, when="in 1h", message="a",
                      repeat="every friday at 20:00")  # fmt: skip
    h = await world.fake.invoke_command(world.guild, world.general, world.admin, "export",
                                        locale="de")  # fmt: skip
    exported = await h.final_message(timeout=20)
    assert exported.content.startswith("📦 1 aktive Ankündigung dieses Servers und 0 Vorlagen")
    data = exported.attachments[0].data

    upload = {"file": ("export.json", data)}
    h = await other.fake.invoke_command(
        other.guild, other.general, other.admin, "import", upload, locale="pt-BR"
    )
    dry = await h.final_message(timeout=30)
    lines = dry.content.split("\n")
    assert lines[0] == (
        "🔎 Simulação: 1 a criar. Nada é gravado até você confirmar (o botão abaixo ou "
        "`/import` de novo com `confirm: true`)."
    )
    assert lines[1].startswith(
        f"✅ linha 1 (#1): em <#{other.news.id}>, a cada sexta-feira às 20:00 (UTC), primeiro "
        "em <t:"
    ), lines[1]
    [button] = [c for row in dry.components for c in row["components"]]
    assert button["label"] == "Importar tudo"
    clicked = await other.fake.invoke_component(dry, button["custom_id"], other.admin,
                                                locale="pt-BR")  # fmt: skip
    done = await clicked.final_message(timeout=30)
    assert done.content.startswith("📥 1 anúncio importado e 0 modelo.\n✅ linha 1 (#1): ")

    # A row this server can't take: refused with its reason in the member's language.
    events = world.guild.add_channel("events")
    await run_command(world, "schedule", channel=events, when="in 1h", message="b")
    h = await world.fake.invoke_command(world.guild, world.general, world.admin, "export")
    data = (await h.final_message(timeout=20)).attachments[0].data
    upload = {"file": ("export.json", data)}
    h = await other.fake.invoke_command(
        other.guild, other.general, other.admin, "import", upload, locale="fr"
    )
    lines = (await h.final_message(timeout=30)).content.split("\n")
    assert lines[0].startswith("🚫 Rien ne peut être importé : 1 des 2 lignes seraient refusées")
    assert "❌ ligne 2 (#2) : ce serveur n'a pas de salon nommé `#events`" in lines


async def test_an_unknown_time_zone_is_refused_in_the_members_language(
    world: World, crier: Crier
) -> None:
    said = await ask(world, "timezone", "pt-BR", zone="Europe/Pariss")
    assert said.startswith("Não conheço o fuso horário `Europe/Pariss`. Você quis dizer "), said


async def test_an_import_files_row_refusals_in_the_members_language(
    world: World, crier: Crier
) -> None:
    doc = {"version": 2, "announcements": [{}, {"key": "a"}]}
    upload = {"file": ("export.json", json.dumps(doc).encode())}
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "import", upload, locale="es-ES"
    )
    lines = (await h.final_message(timeout=30)).content.split("\n")
    assert lines[0].startswith("🚫 No se puede importar nada: 2 de las 2 filas se rechazarían")
    assert "❌ fila 1: falta `key`" in lines
    assert "❌ fila 2: falta `first`" in lines


async def test_the_parsers_refusals_in_portuguese(world: World, crier: Crier) -> None:
    """Portuguese has no phrase table: a member is refused by the English parser, in
    Portuguese, with the examples it reads."""
    said = await ask(world, "schedule", "pt-BR", when="25:00", message="Oi")
    assert said == ("`25:00` não é um horário válido: as horas vão de `00` a `23` (`00:00`)."), said
    said = await ask(world, "schedule", "pt-BR", when="in 2h", message="Oi", repeat="sometimes")
    assert said.startswith("Não consegui ler isso como uma regra de repetição. Tente `daily`, ")
    assert said.endswith("ou uma expressão cron como `0 9 * * 1-5` (09:00 em dias úteis).")
