"""Discord scheduled events beside an announcement's posts (``/schedule event: true``), end
to end through discord.py against the fake Discord, on SQLite and PostgreSQL: one event per
occurrence, made ahead of it, exactly once (a 502 after the create, a crash between the
create and its record), edited on /edit, canceled on /skip, /cancel and /pause, made again
on /resume; the server's limit of 100 events and the bot's permissions refused at
scheduling with nothing written."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from tests.bot.conftest import NOW, CrierFactory, World, run_command
from tests.bot.test_delivery import advance, posts
from tests.fakediscord import Permissions as P
from tests.web.test_dashboard_http import database_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.fakediscord.events import ScheduledEvent

BASE = P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.EMBED_LINKS


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    async with database_url(request.param, tmp_path) as url:
        yield url


@pytest.fixture
async def crier(world: World, crier_factory: CrierFactory, db_url: str) -> Crier:
    world.guild.set_bot_permissions(BASE | P.CREATE_EVENTS)
    return await crier_factory(database_url=db_url, event_lead=86400.0)


async def schedule(world: World, **options: Any) -> int:
    options.setdefault("channel", world.news)
    cb = await run_command(world, "schedule", **options)
    found = re.search(r"Scheduled announcement \*\*#(\d+)\*\*", cb.content or "")
    assert found is not None, cb.content
    return int(found[1])


def events(world: World) -> list[ScheduledEvent]:
    """The guild's scheduled or active events, oldest first."""
    return world.fake.scheduled_events.of(world.guild)


def creates(world: World) -> list[Any]:
    path = f"/guilds/{world.guild.id}/scheduled-events"
    return [r for r in world.fake.requests if r.method == "POST" and r.path == path]


async def event_rows(crier: Crier) -> list[dict[str, Any]]:
    async with crier.sched.reader() as db:
        cur = await db.execute(
            "SELECT fire_ts, state, event_id, name FROM bot_events ORDER BY fire_ts"
        )
        return [dict(r) for r in await cur.fetchall()]


def starts(world: World) -> list[float]:
    return [e.start_ts for e in events(world)]


AT_2H = (NOW + timedelta(hours=2)).timestamp()


async def test_a_one_off_gets_its_event_within_seconds_and_the_post_links_to_it(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await schedule(
        world, when="in 2h", message="Meetup! {event}", event=True,
        event_location="Town hall", event_minutes=90,
    )  # fmt: skip
    await advance(crier, clock, 1)
    [event] = events(world)
    assert (event.name, event.location, event.entity_type) == ("Meetup!", "Town hall", 3)
    assert event.start_ts == AT_2H
    assert event.creator_id == world.fake.bot_user.id
    end = event.end
    assert end is not None
    assert datetime.fromisoformat(end).timestamp() == event.start_ts + 90 * 60
    [row] = await event_rows(crier)
    assert (row["state"], row["event_id"]) == ("created", event.id)

    await advance(crier, clock, timedelta(hours=2))
    [post] = posts(world, world.news)
    assert post.content == f"Meetup! https://discord.com/events/{world.guild.id}/{event.id}"
    assert len(creates(world)) == 1
