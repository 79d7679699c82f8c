"""A re-send shows exactly what the first attempt showed (issue 23), and a post says its
dates in the server's language (issue 24): end to end through discord.py against the fake
Discord, on SQLite and PostgreSQL.

The first attempt at an occurrence records, with it, the language it was said in and the
occurrence's Discord event it linked to (``bot_deliveries.shown_locale``/``shown_event_id``).
A re-send of an interrupted attempt (its answer lost: a 503 after the message was made)
uses those, never what is current: its request is byte-identical to the first, so Discord
dedups it by its nonce, even if the occurrence's event was created or canceled, or the
server's language changed, in between.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.limits import MAX_MESSAGE
from bot.parsing.placeholders import WIDEST, occurrence, render
from tests.bot.conftest import run_command
from tests.bot.test_delivery import advance, messages_regex, posts, send_requests
from tests.bot.test_events import BASE, event_rows, events, refuse_next_event, schedule
from tests.fakediscord import Permissions as P
from tests.web.test_dashboard_http import database_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.bot.conftest import CrierFactory, World

SHIPPED = ("fr", "de", "es-ES", "pt-BR")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    async with database_url(request.param, tmp_path) as url:
        yield url


@pytest.fixture
async def crier(world: World, crier_factory: CrierFactory, db_url: str) -> Crier:
    world.guild.set_bot_permissions(BASE | P.CREATE_EVENTS)
    return await crier_factory(event_lead=86400.0, database_url=db_url)


async def set_language(world: World, language: str) -> None:
    handle = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "settings", {"language": language}
    )
    await handle.response(timeout=5)


def lose_the_answer(world: World) -> None:
    """The next message posted in #news is made, but its answer is lost (a 503)."""
    world.fake.faults.add(
        method="POST", path_regex=messages_regex(world.news), status=503, after_effect=True
    )


async def write(crier: Crier, sql: str, *args: Any) -> None:
    async with crier.sched.transaction() as ctx:
        await ctx.db.execute(sql, args)


def link(world: World, event_id: int) -> str:
    return f"https://discord.com/events/{world.guild.id}/{event_id}"


def assert_resent_identically(world: World) -> dict[str, Any]:
    """One message in #news, made by the first request, whose lost answer was re-sent
    byte for byte (Discord dedup'd it by its nonce); returns the request's body."""
    first, again = send_requests(world, world.news)
    assert (first.status, again.status) == (503, 200)
    assert first.body == again.body
    assert json.dumps(first.body) == json.dumps(again.body)  # the same order too
    assert len(posts(world, world.news)) == 1
    assert world.fake.nonce_dedup_hits == 1
    return dict(first.body)


# --- (a) the occurrence's event changed between the attempts ----------------------------------


async def test_an_event_canceled_between_the_attempts_leaves_the_resend_identical(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, when="in 2h", message="Meetup: {event}", event=True,
                           event_location="Hall")  # fmt: skip
    await advance(crier, clock, 1)
    [event] = events(world)
    lose_the_answer(world)
    await advance(crier, clock, timedelta(hours=2))
    # The event goes (/edit turns it off, and its row is recorded canceled) before the retry.
    cb = await run_command(world, "edit", id=local, event=False)
    assert "Discord event" in (cb.content or ""), cb.content
    await write(crier, "UPDATE bot_events SET state = 'canceled'")
    await advance(crier, clock, timedelta(seconds=61))  # the retry, after its backoff
    body = assert_resent_identically(world)
    assert body["content"] == f"Meetup: {link(world, event.id)}"
    assert body["components"][0]["components"][0]["url"] == link(world, event.id)


async def test_an_event_created_between_the_attempts_leaves_the_resend_identical(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Discord refused the event ahead of the occurrence; it is recorded created (as the
    event job would, had it tried again) between the first attempt and its retry."""
    refuse_next_event(world)
    await schedule(world, when="in 2h", message="Meetup: {event}", event=True,
                   event_location="Hall")  # fmt: skip
    await advance(crier, clock, 1)
    assert events(world) == []
    lose_the_answer(world)
    await advance(crier, clock, timedelta(hours=2))
    await write(crier, "UPDATE bot_events SET state = 'created', event_id = 4242")
    assert [r["event_id"] for r in await event_rows(crier)] == [4242]
    await advance(crier, clock, timedelta(seconds=61))
    body = assert_resent_identically(world)
    assert body["content"] == "Meetup: "
    assert not body.get("components")


# --- (b) the server's language changed between the attempts ------------------------------------


async def test_a_language_changed_between_the_attempts_leaves_the_resend_identical(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await set_language(world, "de")
    await schedule(world, when="in 2h", message="{weekday}, {date}", event=True,
                   event_location="Saal")  # fmt: skip
    await advance(crier, clock, 1)
    lose_the_answer(world)
    # Found late (after a 10-minute stop): the late note is in German too.
    await advance(crier, clock, timedelta(hours=2, minutes=10))
    await set_language(world, "fr")
    await advance(crier, clock, timedelta(seconds=61))
    body = assert_resent_identically(world)
    [post] = posts(world, world.news)
    assert body["content"].startswith("Freitag, 1. März 2030\n-# Verspätet gepostet"), body
    assert body["components"][0]["components"][0]["label"] == "Discord-Event"
    assert post.content == body["content"]


# --- (c) dates in the server's language ---------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        (None, "Friday, 1 March 2030 / 12:01"),
        ("de", "Freitag, 1. März 2030 / 12:01"),
        ("fr", "vendredi, 1 mars 2030 / 12:01"),
        ("es-ES", "viernes, 1 de marzo de 2030 / 12:01"),
        ("pt-BR", "sexta-feira, 1 de março de 2030 / 12:01"),
    ],
)
async def test_a_post_says_its_date_in_the_servers_language(
    world: World, crier: Crier, clock: FakeClock, language: str | None, expected: str
) -> None:
    if language is not None:
        await set_language(world, language)
    await schedule(world, when="in 1m", message="{weekday}, {date} / {time}")
    await advance(crier, clock, timedelta(minutes=1))
    [post] = posts(world, world.news)
    assert post.content == expected


async def test_the_servers_own_locale_is_used_without_a_chosen_language(
    world: World, crier_factory: CrierFactory, clock: FakeClock, db_url: str
) -> None:
    world.guild.preferred_locale = "fr"  # its guild_locale, as the bot connects
    crier = await crier_factory(database_url=db_url)
    await schedule(world, when="in 1m", message="{weekday}, {date}")
    await advance(crier, clock, timedelta(minutes=1))
    [post] = posts(world, world.news)
    assert post.content == "vendredi, 1 mars 2030"


def test_the_reserved_lengths_cover_the_longest_names_of_every_shipped_language() -> None:
    """A text accepted at scheduling (counted with each placeholder at its WIDEST) never
    posts longer than Discord allows, in any language: every month and day of the week on
    a two-digit day, in each shipped locale."""
    days = [date(2030, month, 28) for month in range(1, 13)]
    days += [date(2030, 9, day) for day in range(22, 29)]
    longest: dict[str, int] = {}
    for language in (None, *SHIPPED):
        for day in days:
            occ = occurrence(None, 0.0, "UTC", _ts(day), None)
            for name in ("date", "weekday", "time"):
                shown = render(f"{{{name}}}", occ, language)
                assert len(shown) <= WIDEST[name], (language, name, shown)
                longest[name] = max(longest.get(name, 0), len(shown))
            typed = "x" * (MAX_MESSAGE - WIDEST["date"] - WIDEST["weekday"]) + "{date}{weekday}"
            assert len(render(typed, occ, language)) <= MAX_MESSAGE
    # The table is no looser than it must be either (Spanish September, Portuguese days).
    assert longest == {"date": WIDEST["date"], "weekday": WIDEST["weekday"], "time": 5}
    assert WIDEST["date"] == len("28 de septiembre de 2030")
    assert WIDEST["weekday"] == len("segunda-feira")


def _ts(day: date) -> float:
    return datetime.combine(day, time(12), UTC).timestamp()


# --- a forum post made again ----------------------------------------------------------------------


async def test_a_forum_post_made_again_shows_the_first_attempts_language(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """A forum post has no nonce: an interrupted attempt is looked for, and made again only
    when it was not made. Refused the first time (a 503 before anything was made), then the
    server's language changes: the post made on the retry is the first attempt's request."""
    world.guild.set_bot_permissions(BASE | P.CREATE_PUBLIC_THREADS | P.READ_MESSAGE_HISTORY)
    forum = world.guild.add_forum("board", tags=["news"])
    await set_language(world, "de")
    await schedule(world, channel=forum, title="Treffen {date}", tags="news", when="in 1m",
                   message="{weekday}")  # fmt: skip
    path = f"/channels/{forum.id}/threads"
    world.fake.faults.add(method="POST", path_regex=path, status=503, times=1)
    await advance(crier, clock, timedelta(minutes=1))
    assert world.fake.forum_posts(forum) == []
    await set_language(world, "fr")
    await advance(crier, clock, timedelta(seconds=61))
    first, again = [r for r in world.fake.requests if r.method == "POST" and r.path == path]
    assert (first.status, again.status) == (503, 200)
    assert first.body == again.body
    [post] = world.fake.forum_posts(forum)
    assert post.name == "Treffen 1. März 2030"
    starter = world.fake.get_message(post.id)
    assert starter is not None
    assert [e["description"] for e in starter.embeds] == ["Freitag"]
