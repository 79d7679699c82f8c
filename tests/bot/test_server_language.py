"""What the bot posts for everyone is said in the server's language (issue 24): the log
channel's failure reports and the note under a post sent late follow the server's
``guild_locale`` (here German), unless ``/settings language`` chose another one; the member
who set things up reads their own answers in their own language (English here)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

from tests.bot.conftest import add_world
from tests.bot.test_delivery import (
    advance,
    break_channel,
    idle,
    posts,
    schedule,
    set_log_channel,
)

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.bot.conftest import CrierFactory, World
    from tests.fakediscord import FakeDiscord


@pytest.fixture
def world(fake: FakeDiscord) -> World:
    """The usual world, in a server whose language (``guild_locale``) is German."""
    made = add_world(fake, "Crier Test", admin="alice", member="bob")
    made.guild.preferred_locale = "de"
    return made


async def down_when_due(
    world: World, crier: Crier, crier_factory: CrierFactory, clock: FakeClock, text: str
) -> tuple[Crier, int]:
    """``text`` scheduled in #news 10 minutes ahead and due while the bot is down (closed,
    the clock moved 40 minutes): the bot started again and idle, and when it was due."""
    await schedule(world, world.news, "in 10m", text)
    due = int((clock.now() + timedelta(minutes=10)).timestamp())
    await crier.close()
    clock.advance(timedelta(minutes=40))
    crier = await crier_factory()
    await idle(crier)
    return crier, due


async def test_the_log_channels_report_is_in_the_servers_language(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await set_log_channel(world, world.general)  # answered in alice's English
    local = await schedule(world, world.news, "in 1m", "Never seen")
    break_channel(world, 50013)
    await advance(crier, clock, timedelta(minutes=1))

    [report] = posts(world, world.general)
    # Discord's refusal too is said in German (it is recorded in English).
    assert report.content == (
        f"⚠️ Ankündigung #{local} für <#{world.news.id}> konnte nicht gepostet werden: "
        "Fehlende Berechtigungen: Der Bot darf in dem Kanal nicht posten (50013)."
    )
    # /info says it in the reader's language: a French member reads it in French.
    handle = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "info", {"id": local}, locale="fr"
    )
    info = ((await handle.response(timeout=5)).content or "").split("\n")
    assert (
        "⚠️ Permissions manquantes : le bot n'a pas le droit de publier dans le salon "
        "(50013)" in info
    )


async def test_the_late_note_is_in_the_servers_language_by_default(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    """No ``/settings language``: the note under a late post follows the server's
    ``guild_locale`` (German), not the English of the admin who scheduled it."""
    crier = await crier_factory()
    assert (await crier.bot.announcements.settings(world.guild.id)).language is None
    crier, due = await down_when_due(world, crier, crier_factory, clock, "Türen offen")
    [msg] = posts(world, world.news)
    assert msg.content == f"Türen offen\n-# Verspätet gepostet: Das war für <t:{due}:F> geplant."


async def test_a_report_at_start_is_in_the_servers_language(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    """An occurrence caught up at start that Discord refuses: its report to the log channel
    is in the server's language too, even before the gateway has told the bot about it."""
    crier = await crier_factory()
    await set_log_channel(world, world.general)
    local = await schedule(world, world.news, "in 10m", "Nie gesehen")
    await crier.close()
    break_channel(world, 50013)

    clock.advance(timedelta(minutes=40))
    crier = await crier_factory()
    await idle(crier)

    [report] = posts(world, world.general)
    assert report.content == (
        f"⚠️ Ankündigung #{local} für <#{world.news.id}> konnte nicht gepostet werden: "
        "Fehlende Berechtigungen: Der Bot darf in dem Kanal nicht posten (50013)."
    )


async def test_settings_language_overrides_the_servers_for_the_late_note(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    crier = await crier_factory()
    handle = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "settings", {"language": "pt-BR"}
    )
    answer = (await handle.response(timeout=5)).content or ""
    assert "**Language of posts for everyone:** Português (Brasil)" in answer.split("\n")
    assert (await crier.bot.announcements.settings(world.guild.id)).language == "pt-BR"
    crier, due = await down_when_due(world, crier, crier_factory, clock, "Portas abertas")
    [msg] = posts(world, world.news)
    assert msg.content == (
        f"Portas abertas\n-# Publicado com atraso: isto estava agendado para <t:{due}:F>."
    )

    # Cleared: the server's own language again (German).
    handle = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "settings", {"clear": "language"}
    )
    answer = (await handle.response(timeout=5)).content or ""
    assert "**Language of posts for everyone:** the server's own" in answer.split("\n")
    assert (await crier.bot.announcements.settings(world.guild.id)).language is None
    # Down again: late again, in German now.
    crier, due = await down_when_due(world, crier, crier_factory, clock, "Wieder Deutsch")
    assert posts(world, world.news)[-1].content == (
        f"Wieder Deutsch\n-# Verspätet gepostet: Das war für <t:{due}:F> geplant."
    )


async def test_a_discord_event_refused_is_reported_in_the_servers_language(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    """The next occurrence's Discord event refused (the server reached Discord's 100 events
    since it was scheduled): the log channel's report, and Discord's reason in it, in German."""
    from tests.bot.test_events import AT_2H, BASE, event_rows
    from tests.bot.test_events import schedule as schedule_event
    from tests.fakediscord import Permissions as P

    world.guild.set_bot_permissions(BASE | P.CREATE_EVENTS)
    crier = await crier_factory(event_lead=86400.0)
    await set_log_channel(world, world.general)
    local = await schedule_event(
        world, repeat="daily at 09:00", timezone="UTC", message="Standup", event=True,
        event_location="Raum 4",
    )  # fmt: skip
    await advance(crier, clock, 1)
    for i in range(99):
        world.fake.scheduled_events.add(world.guild, f"Other {i}", AT_2H + i)
    await advance(crier, clock, timedelta(hours=21))

    [report] = posts(world, world.general)
    failed = [r for r in await event_rows(crier) if r["state"] == "failed"]
    second = round(failed[0]["fire_ts"])
    assert report.content == (
        f"⚠️ Das Discord-Event von Ankündigung #{local} für <t:{second}:F> konnte nicht "
        "erstellt werden: der Server hat 100 geplante Events, mehr erlaubt Discord nicht."
    )


async def test_info_shows_the_next_post_with_its_dates_in_the_servers_language(
    world: World, crier: Crier
) -> None:
    """/info's preview of the next post renders {weekday} and {date} as the post will: in
    the server's language (German), whatever the reader's (English here)."""
    local = await schedule(world, world.news, "in 1h", "Am {weekday}, {date}")
    handle = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "info", {"id": local}
    )
    info = (await handle.response(timeout=5)).content or ""
    assert "Am Freitag, 1. März 2030" in info, info
    assert "Friday" not in info, info


async def test_a_discord_events_name_says_its_dates_as_the_post_does(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    """The event of an occurrence is named from its text with the placeholders rendered as
    its post renders them: in the server's language (German), the post and the event say
    the same words."""
    from tests.bot.test_events import BASE, events
    from tests.bot.test_events import schedule as schedule_event
    from tests.fakediscord import Permissions as P

    world.guild.set_bot_permissions(BASE | P.CREATE_EVENTS)
    crier = await crier_factory(event_lead=86400.0)
    await schedule_event(
        world, when="in 2h", timezone="UTC", message="Treffen am {weekday}, {date}",
        event=True, event_location="Saal",
    )  # fmt: skip
    await advance(crier, clock, 1)
    [event] = events(world)
    assert event.name == "Treffen am Freitag, 1. März 2030"

    await advance(crier, clock, timedelta(hours=2))
    [post] = posts(world, world.news)
    assert post.content.startswith(event.name)
