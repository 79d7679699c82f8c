"""The fake Discord's guild scheduled events, driven through the real discord.py client
(nothing mocked), against Discord's documented behaviour: create, get, list, modify and
delete; at most 100 scheduled or active events a server (the 101st is 400 30038); the
bot's permissions (CREATE_EVENTS for its own events, MANAGE_EVENTS for anyone's: else
403 50013); a 5xx answered after the create made the event."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import discord
import pytest

from tests.fakediscord import FakeDiscord, Guild, run_client
from tests.fakediscord import Permissions as P
from tests.fakediscord.events import CANCELED, EVENT_LIMIT, EXTERNAL, SCHEDULED

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.timeout(30)

BASE = P.VIEW_CHANNEL | P.SEND_MESSAGES


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as f:
        yield f


@pytest.fixture
def guild(fake: FakeDiscord) -> Guild:
    made = fake.add_guild(name="Events", bot_permissions=BASE | P.CREATE_EVENTS)
    made.add_channel("general")
    return made


@pytest.fixture
async def client(fake: FakeDiscord, guild: Guild) -> AsyncIterator[discord.Client]:
    made = discord.Client(intents=discord.Intents.default(), guild_ready_timeout=0.05)
    async with run_client(fake, made):
        yield made


def cached(client: discord.Client, guild: Guild) -> discord.Guild:
    found = client.get_guild(guild.id)
    assert found is not None
    return found


def soon(hours: float = 24) -> datetime:
    """A start in the future by the wall clock (the fake, as Discord, refuses a past one)."""
    return datetime.now(UTC).replace(microsecond=0) + timedelta(hours=hours)


async def external(g: discord.Guild, name: str, start: datetime) -> discord.ScheduledEvent:
    return await g.create_scheduled_event(
        name=name,
        start_time=start,
        end_time=start + timedelta(hours=1),
        entity_type=discord.EntityType.external,
        location="The park",
        privacy_level=discord.PrivacyLevel.guild_only,
    )


async def test_create_get_list_modify_and_delete(
    fake: FakeDiscord, guild: Guild, client: discord.Client
) -> None:
    g = cached(client, guild)
    start = soon()
    made = await external(g, "Picnic", start)
    other = await external(g, "Quiz", soon(48))
    assert made.creator_id == fake.bot_user.id
    assert made.status is discord.EventStatus.scheduled
    assert made.entity_type is discord.EntityType.external

    got = await g.fetch_scheduled_event(made.id)
    assert (got.id, got.name, got.location, got.start_time) == (
        made.id, "Picnic", "The park", start,
    )  # fmt: skip
    assert got.end_time == start + timedelta(hours=1)
    assert [e.name for e in await g.fetch_scheduled_events()] == ["Picnic", "Quiz"]

    later = start + timedelta(hours=3)
    edited = await got.edit(name="Picnic (moved)", start_time=later,
                            end_time=later + timedelta(hours=2), location="The beach")  # fmt: skip
    assert (edited.name, edited.start_time, edited.location) == (
        "Picnic (moved)", later, "The beach",
    )  # fmt: skip
    again = await g.fetch_scheduled_event(made.id)
    assert (again.name, again.start_time) == ("Picnic (moved)", later)

    await other.delete()
    with pytest.raises(discord.NotFound) as gone:
        await g.fetch_scheduled_event(other.id)
    assert (gone.value.status, gone.value.code) == (404, 10070)
    with pytest.raises(discord.NotFound) as gone:
        await other.delete()
    assert gone.value.code == 10070
    assert [e.id for e in await g.fetch_scheduled_events()] == [made.id]

    # A canceled event leaves the list, and can't change any more (as Discord deletes it).
    await again.cancel()
    assert await g.fetch_scheduled_events() == []
    assert [e.status for e in fake.scheduled_events.of(guild, live_only=False)] == [CANCELED]
    with pytest.raises(discord.NotFound):
        await g.fetch_scheduled_event(made.id)


async def test_a_start_in_the_past_is_refused(guild: Guild, client: discord.Client) -> None:
    g = cached(client, guild)
    with pytest.raises(discord.HTTPException) as refused:
        await external(g, "Yesterday", soon(-24))
    assert (refused.value.status, refused.value.code) == (400, 50035)
    assert await g.fetch_scheduled_events() == []


async def test_a_server_keeps_at_most_100_scheduled_or_active_events(
    fake: FakeDiscord, guild: Guild, client: discord.Client
) -> None:
    g = cached(client, guild)
    for n in range(EVENT_LIMIT - 1):
        fake.scheduled_events.add(guild, f"theirs {n}", soon(24 + n).timestamp())
    last = await external(g, "the 100th", soon(200))
    assert len(await g.fetch_scheduled_events()) == EVENT_LIMIT
    with pytest.raises(discord.HTTPException) as refused:
        await external(g, "the 101st", soon(201))
    assert (refused.value.status, refused.value.code) == (400, 30038)
    assert len(fake.scheduled_events.of(guild)) == EVENT_LIMIT

    # A canceled one (or a deleted one) no longer counts: room for one more each.
    await last.cancel()
    await external(g, "in its place", soon(202))
    with pytest.raises(discord.HTTPException) as refused:
        await external(g, "still too many", soon(203))
    assert refused.value.code == 30038
    theirs = fake.scheduled_events.of(guild)[0]
    guild.set_bot_permissions(BASE | P.MANAGE_EVENTS | P.CREATE_EVENTS)
    await (await g.fetch_scheduled_event(theirs.id)).delete()
    await external(g, "after a delete", soon(204))
    assert len(fake.scheduled_events.of(guild)) == EVENT_LIMIT


async def test_without_the_permission_create_modify_and_delete_are_refused(
    fake: FakeDiscord, guild: Guild, client: discord.Client
) -> None:
    g = cached(client, guild)
    own = await external(g, "Ours", soon())
    theirs_made = fake.scheduled_events.add(guild, "Theirs", soon(30).timestamp())
    theirs = await g.fetch_scheduled_event(theirs_made.id)
    assert theirs.creator_id == guild.owner_id

    # CREATE_EVENTS: the bot's own events, not anyone else's.
    with pytest.raises(discord.Forbidden) as refused:
        await theirs.edit(name="Renamed")
    assert (refused.value.status, refused.value.code) == (403, 50013)
    with pytest.raises(discord.Forbidden) as refused:
        await theirs.delete()
    assert refused.value.code == 50013

    # Neither: no create, no change to its own event either.
    guild.set_bot_permissions(BASE)
    with pytest.raises(discord.Forbidden) as refused:
        await external(g, "Another", soon(40))
    assert (refused.value.status, refused.value.code) == (403, 50013)
    with pytest.raises(discord.Forbidden) as refused:
        await own.edit(name="Renamed")
    assert refused.value.code == 50013
    with pytest.raises(discord.Forbidden) as refused:
        await own.delete()
    assert refused.value.code == 50013
    assert [(e.name, e.status) for e in fake.scheduled_events.of(guild)] == [
        ("Ours", SCHEDULED),
        ("Theirs", SCHEDULED),
    ]
    # Reading needs neither.
    assert [e.name for e in await g.fetch_scheduled_events()] == ["Ours", "Theirs"]

    # MANAGE_EVENTS: anyone's.
    guild.set_bot_permissions(BASE | P.MANAGE_EVENTS)
    assert (await theirs.edit(name="Renamed")).name == "Renamed"
    await theirs.delete()
    assert [e.name for e in fake.scheduled_events.of(guild)] == ["Ours"]


async def test_a_5xx_after_the_create_made_it_and_a_retry_makes_another(
    fake: FakeDiscord, guild: Guild, client: discord.Client
) -> None:
    """Creating has no nonce: Discord answering 502 after making the event leaves it
    made, and discord.py's own retry of a 502 makes a second one."""
    g = cached(client, guild)
    fake.faults.add(
        method="POST",
        path_regex=rf"/guilds/{guild.id}/scheduled-events$",
        status=502,
        after_effect=True,
    )
    made = await external(g, "Twice", soon())
    creates = [
        r.status
        for r in fake.requests
        if r.method == "POST" and r.path == f"/guilds/{guild.id}/scheduled-events"
    ]
    assert creates == [502, 200]
    assert [e.name for e in fake.scheduled_events.of(guild)] == ["Twice", "Twice"]
    assert made.id == fake.scheduled_events.of(guild)[1].id
    assert all(e.entity_type == EXTERNAL for e in fake.scheduled_events.of(guild))
