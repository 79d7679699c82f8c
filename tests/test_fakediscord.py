"""Tests of the fake Discord itself, driven through the real discord.py client (nothing mocked)."""

from __future__ import annotations

import asyncio
import base64
import html
import io
import re
import socket
import time
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
import discord
import pytest
from discord import app_commands

from tests.fakediscord import (
    CommandNotAvailable,
    FakeDiscord,
    Guild,
    Member,
    NetworkAccessBlocked,
    NetworkGuard,
    channel_permissions,
    overwrite,
    pointing_discord_py_at,
    run_client,
)
from tests.fakediscord import (
    Permissions as P,
)
from tests.fakediscord.apispec import api_spec, failing_on_violations
from tests.fakediscord.state import Channel
from tests.support.processes import until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.timeout(30)

SEND_PATH = r"/channels/\d+/messages"


@dataclass
class World:
    fake: FakeDiscord
    guild: Guild
    channel: Channel
    alice: Member
    mod: Member


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as f:
        yield f


@pytest.fixture
def world(fake: FakeDiscord) -> World:
    guild = fake.add_guild(name="Crier Test")
    mods = guild.add_role("mods", P.MANAGE_GUILD)
    channel = guild.add_channel("announcements")
    alice = guild.add_member(name="alice")
    mod = guild.add_member(name="mod", roles=[mods])
    return World(fake, guild, channel, alice, mod)


def make_client() -> tuple[discord.Client, app_commands.CommandTree[discord.Client]]:
    client = discord.Client(intents=discord.Intents.default(), guild_ready_timeout=0.05)
    return client, app_commands.CommandTree(client)


@pytest.fixture
async def bot(
    world: World,
) -> AsyncIterator[tuple[discord.Client, app_commands.CommandTree[discord.Client]]]:
    client, tree = make_client()
    async with run_client(world.fake, client):
        yield client, tree


def text_channel(client: discord.Client, channel: Channel) -> discord.TextChannel:
    ch = client.get_channel(channel.id)
    assert isinstance(ch, discord.TextChannel)
    return ch


# --- gateway: READY, GUILD_CREATE, RESUME --------------------------------------------------------


async def test_ready_and_guild_create_populate_the_cache(world: World, bot) -> None:
    client, _ = bot
    fake = world.fake
    assert client.user is not None
    assert client.user.id == fake.bot_user_id
    assert client.application_id == fake.application_id
    guild = client.get_guild(world.guild.id)
    assert guild is not None
    assert guild.name == "Crier Test"
    assert guild.owner_id == world.guild.owner_id
    assert {c.name for c in guild.text_channels} == {"announcements"}
    assert {r.name for r in guild.roles} >= {"@everyone", "mods", fake.bot_user.username}
    me = guild.me
    assert me is not None
    assert me.id == fake.bot_user_id
    assert any(r.id == world.guild.bot_role.id for r in me.roles)
    # discord.py computes the same permissions as the fake (it drops voice bits in text channels)
    perms = text_channel(client, world.channel).permissions_for(me)
    voice = discord.Permissions.voice().value
    assert perms.value == world.guild.bot_permissions_in(world.channel) & ~voice
    # the client asked for transport compression and the fake honoured it
    assert fake.gateway.compressions[0] in ("zlib-stream", "zstd-stream")
    assert fake.gateway.identify_count == 1
    assert fake.gateway.heartbeat_count >= 1  # discord.py heartbeats right after HELLO
    assert fake.unknown_routes == []


async def test_gateway_disconnect_resumes_and_replays_missed_events(world: World) -> None:
    fake = world.fake
    client, _ = make_client()
    resumed = asyncio.Event()

    @client.event
    async def on_resumed() -> None:
        resumed.set()

    async with run_client(fake, client):
        assert await fake.disconnect_gateway(code=4000) == 1
        # a channel appears while the client is away: its CHANNEL_CREATE is buffered for RESUME
        late = world.guild.add_channel("created-while-away")
        await asyncio.wait_for(resumed.wait(), 5)
        assert fake.gateway.resume_count == 1
        assert fake.gateway.identify_count == 1
        await fake.wait_until(lambda: client.get_channel(late.id) is not None, what="replay")

        # An invalidated session cannot be resumed: RESUME gets INVALID_SESSION and the client
        # opens a fresh connection (discord.py then sleeps 5 s before it IDENTIFYs again).
        await fake.disconnect_gateway(code=4009)
        await fake.wait_until(
            lambda: fake.gateway.invalid_session_count == 1 and fake.gateway.connect_count == 3,
            what="fresh connection after INVALID_SESSION",
        )
        assert fake.gateway.resume_count == 1


async def test_reconnect_opcode_makes_the_client_resume(world: World) -> None:
    fake = world.fake
    client = discord.Client(intents=discord.Intents.default(), guild_ready_timeout=0.05)
    seen: list[int] = []

    @client.event
    async def on_interaction(interaction: discord.Interaction) -> None:
        seen.append(interaction.id)

    async with run_client(fake, client):
        fake.gateway.send_reconnect()
        await fake.wait_until(lambda: fake.gateway.resume_count == 1, what="resume after op 7")
        await fake.wait_for_connection()
        assert fake.gateway.identify_count == 1
        # interactions keep flowing on the resumed session
        handle = await fake.invoke_command(world.guild, world.channel, world.alice, "ping")
        await fake.wait_until(lambda: seen == [handle.id], what="INTERACTION_CREATE")


async def test_wrong_token_is_a_login_failure(fake: FakeDiscord) -> None:
    client, _ = make_client()
    with pointing_discord_py_at(fake):
        try:
            with pytest.raises(discord.LoginFailure):
                await client.login("not-the-token")
        finally:
            await client.close()
    assert fake.requests[-1].status == 401
    assert fake.invalid_request_count == 1


async def test_privileged_intents_not_enabled_close_4014(world: World) -> None:
    intents = discord.Intents.default()
    intents.members = True
    client = discord.Client(intents=intents, guild_ready_timeout=0.05)
    with pointing_discord_py_at(world.fake):
        try:
            with pytest.raises(discord.PrivilegedIntentsRequired):
                await asyncio.wait_for(client.start(world.fake.token), 10)
        finally:
            await client.close()


# --- REST: messages, permissions, nonces ---------------------------------------------------------


async def test_send_message_appears_in_fake_state(world: World, bot) -> None:
    client, _ = bot
    fake = world.fake
    seen = asyncio.Event()

    @client.event
    async def on_message(message: discord.Message) -> None:
        if message.content == "hello":
            seen.set()

    sent = await text_channel(client, world.channel).send("hello")
    stored = fake.get_message(sent.id)
    assert stored is not None
    assert stored.content == "hello"
    assert stored.author.id == fake.bot_user_id
    assert fake.bot_messages(world.channel) == [stored]
    await asyncio.wait_for(seen.wait(), 5)  # MESSAGE_CREATE reached the client

    edited = await sent.edit(content="hello, edited")
    assert edited.edited_at is not None
    assert stored.content == "hello, edited"
    assert stored.edit_count == 1
    fetched = await text_channel(client, world.channel).fetch_message(sent.id)
    assert fetched.content == "hello, edited"
    await sent.delete()
    assert stored.deleted
    assert fake.bot_messages() == []
    with pytest.raises(discord.NotFound) as info:
        await text_channel(client, world.channel).fetch_message(sent.id)
    assert info.value.code == 10008


async def test_fetches_parse_in_discord_py(world: World, bot) -> None:
    client, _ = bot
    channel = await client.fetch_channel(world.channel.id)
    assert isinstance(channel, discord.TextChannel)
    assert channel.name == "announcements"
    guild = await client.fetch_guild(world.guild.id)
    assert guild.name == "Crier Test"
    member = await guild.fetch_member(world.alice.id)
    assert member.name == "alice"
    roles = await guild.fetch_roles()
    assert {r.name for r in roles} >= {"@everyone", "mods"}
    channels = await guild.fetch_channels()
    assert [c.id for c in channels] == [world.channel.id]
    user = await client.fetch_user(world.mod.id)
    assert user.name == "mod"
    with pytest.raises(discord.NotFound) as info:
        await guild.fetch_member(1234567890123456789)
    assert info.value.code == 10007
    info_app = await client.application_info()
    assert info_app.id == world.fake.application_id
    assert world.fake.unknown_routes == []


async def test_direct_messages(world: World, bot) -> None:
    client, _ = bot
    fake = world.fake
    user = await client.fetch_user(world.alice.id)
    msg = await user.send("psst")
    dm = fake.open_dm(world.alice)
    assert [m.content for m in fake.channel_messages(dm)] == ["psst"]
    assert msg.channel.id == dm.id
    world.alice.user.accepts_dms = False
    with pytest.raises(discord.Forbidden) as info:
        await user.send("again")
    assert info.value.code == 50007


async def test_user_messages_are_redacted_without_message_content_intent(world: World, bot) -> None:
    client, _ = bot
    received: list[discord.Message] = []

    @client.event
    async def on_message(message: discord.Message) -> None:
        received.append(message)

    world.fake.post_message(world.channel, world.alice, "secret plans")
    world.fake.post_message(world.channel, world.alice, f"hey {world.fake.bot_user.mention}")
    await world.fake.wait_until(lambda: len(received) == 2)
    assert received[0].author.id == world.alice.id
    assert received[0].content == ""
    assert received[1].content.startswith("hey")  # mentioning the bot reveals the content


async def test_bot_added_to_a_guild_gets_guild_create(world: World, bot) -> None:
    client, _ = bot
    joined: list[discord.Guild] = []

    @client.event
    async def on_guild_join(guild: discord.Guild) -> None:
        joined.append(guild)

    new = world.fake.add_guild(name="Second", channels=["general"])
    await world.fake.wait_until(lambda: joined)
    assert joined[0].id == new.id
    assert [c.name for c in joined[0].channels] == ["general"]
    world.fake.remove_guild(new)
    await world.fake.wait_until(lambda: client.get_guild(new.id) is None)


async def test_raw_http_shapes(fake: FakeDiscord) -> None:
    """What discord.py relies on: exact JSON content type, rate-limit headers, 429 with Via."""
    headers = {"Authorization": f"Bot {fake.token}"}
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{fake.api_base}/users/@me", headers=headers) as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"] == "application/json"
            for name in ("Limit", "Remaining", "Reset", "Reset-After", "Bucket"):
                assert f"X-RateLimit-{name}" in resp.headers
        async with session.get(
            f"{fake.api_base}/users/@me", headers={"Authorization": "Bot x"}
        ) as resp:
            assert resp.status == 401
            assert await resp.json() == {"message": "401: Unauthorized", "code": 0}
        fake.ratelimits.inject_429(times=1, retry_after=0.25)
        async with session.get(f"{fake.api_base}/users/@me", headers=headers) as resp:
            assert resp.status == 429
            assert resp.headers["Via"] == "1.1 google"
            assert resp.headers["X-RateLimit-Scope"] == "user"
            assert "Retry-After" in resp.headers
            body = await resp.json()
            assert body["retry_after"] == 0.25
            assert body["global"] is False
        fake.ratelimits.inject_429(times=1, is_global=True)
        async with session.get(f"{fake.api_base}/users/@me", headers=headers) as resp:
            assert resp.status == 429
            assert resp.headers["X-RateLimit-Global"] == "true"
            assert (await resp.json())["global"] is True
    assert fake.count_429 == 2


async def test_nonce_enforced_dedups_a_repeated_send(world: World, bot) -> None:
    client, _ = bot
    fake = world.fake
    channel = text_channel(client, world.channel)
    first = await channel.send("once only", nonce="job-42-run-1")
    second = await channel.send("once only", nonce="job-42-run-1")
    assert first.id == second.id
    assert len(fake.bot_messages(world.channel)) == 1
    assert fake.nonce_dedup_hits == 1
    posts = [r for r in fake.requests if r.method == "POST" and "/messages" in r.path]
    assert posts[0].body["enforce_nonce"] is True  # discord.py sets it whenever a nonce is given
    # a different nonce is a different message
    third = await channel.send("once only", nonce="job-42-run-2")
    assert third.id != first.id


async def test_nonce_longer_than_25_chars_is_rejected(world: World, bot) -> None:
    client, _ = bot
    with (
        world.fake.spec.allow_violations() as refused,
        pytest.raises(discord.HTTPException) as info,
    ):
        await text_channel(client, world.channel).send("x", nonce="n" * 26)
    assert info.value.status == 400
    assert info.value.code == 50035
    assert [v.where for v in refused] == ["body/nonce"]  # the spec bounds it at 25 too


async def test_missing_permissions_and_missing_access(world: World, bot) -> None:
    client, _ = bot
    bot_role = world.guild.bot_role
    world.channel.set_overwrite(bot_role, deny=P.SEND_MESSAGES)
    await world.fake.gateway.drain()
    with pytest.raises(discord.Forbidden) as info:
        await text_channel(client, world.channel).send("denied")
    assert info.value.code == 50013

    world.channel.set_overwrite(bot_role, deny=P.VIEW_CHANNEL)
    with pytest.raises(discord.Forbidden) as info:
        await client.http.send_message(world.channel.id, params=_params("invisible"))
    assert info.value.code == 50001

    # no EMBED_LINKS (neither from @everyone nor from the bot's role) -> embeds are refused
    world.channel.set_overwrites([overwrite(world.guild.everyone_role, deny=P.EMBED_LINKS)])
    world.guild.set_bot_permissions(P.VIEW_CHANNEL | P.SEND_MESSAGES)
    with pytest.raises(discord.Forbidden) as info:
        await client.http.send_message(
            world.channel.id, params=_params(None, embed=discord.Embed(title="t"))
        )
    assert info.value.code == 50013
    assert world.fake.bot_messages() == []


def _params(content: str | None, **kwargs):  # type: ignore[no-untyped-def]
    from discord.http import handle_message_parameters

    return handle_message_parameters(content=content, **kwargs)


async def test_deleted_channel_is_unknown_channel(world: World, bot) -> None:
    client, _ = bot
    world.fake.delete_channel(world.channel)
    await world.fake.wait_until(lambda: client.get_channel(world.channel.id) is None)
    with pytest.raises(discord.NotFound) as info:
        await client.get_partial_messageable(world.channel.id).send("into the void")
    assert info.value.code == 10003


async def test_mentions_ping_only_with_permission_and_allowed_mentions(world: World, bot) -> None:
    client, _ = bot
    fake = world.fake
    channel = text_channel(client, world.channel)
    msg = await channel.send("@everyone release!")
    stored = fake.get_message(msg.id)
    assert stored is not None
    assert not stored.pings.everyone
    assert "MENTION_EVERYONE" in stored.pings.suppressed[0]

    world.guild.set_bot_permissions(P.DEFAULT_BOT | P.MENTION_EVERYONE)
    msg = await channel.send("@everyone release!")
    stored = fake.get_message(msg.id)
    assert stored is not None
    assert stored.pings.everyone
    assert msg.mention_everyone

    msg = await channel.send(
        f"@everyone {world.alice.mention}", allowed_mentions=discord.AllowedMentions.none()
    )
    stored = fake.get_message(msg.id)
    assert stored is not None
    assert not stored.pings.anything
    assert stored.allowed_mentions == {"parse": []}
    assert len(stored.pings.suppressed) == 2


# --- rate limits and faults ----------------------------------------------------------------------


async def test_route_429_is_retried_and_the_message_created_once(world: World, bot) -> None:
    client, _ = bot
    fake = world.fake
    fake.ratelimits.inject_429(times=1, method="POST", path_regex=SEND_PATH, retry_after=0.05)
    await text_channel(client, world.channel).send("after a 429")
    assert fake.count_429 == 1
    assert len(fake.bot_messages(world.channel)) == 1
    statuses = [r.status for r in fake.requests if r.method == "POST"]
    assert statuses == [429, 200]


async def test_global_429_is_retried(world: World, bot) -> None:
    client, _ = bot
    fake = world.fake
    fake.ratelimits.inject_429(times=1, is_global=True, retry_after=0.05)
    await text_channel(client, world.channel).send("after a global 429")
    assert fake.count_429 == 1
    assert len(fake.bot_messages(world.channel)) == 1


async def test_bucket_headers_make_discord_py_wait_instead_of_429(world: World, bot) -> None:
    client, _ = bot
    fake = world.fake
    fake.ratelimits.set_message_limit(2, 0.4)
    channel = text_channel(client, world.channel)
    started = time.monotonic()
    for i in range(3):
        await channel.send(f"burst {i}")
    assert time.monotonic() - started >= 0.3  # discord.py slept on Remaining: 0
    assert fake.count_429 == 0
    last = [r for r in fake.requests if r.method == "POST"][-1]
    assert last.status == 200


async def test_exceeding_the_limit_concurrently_yields_429s_but_one_message_each(
    world: World,
) -> None:
    fake = world.fake
    fake.ratelimits.set_message_limit(2, 0.3)
    client, _ = make_client()
    async with run_client(fake, client):
        # Two separate HTTP clients (as two processes would) don't share bucket state.
        channel = text_channel(client, world.channel)
        other, _ = make_client()
        try:
            with pointing_discord_py_at(fake):
                await other.login(fake.token)
                await asyncio.gather(
                    *(channel.send(f"a{i}") for i in range(2)),
                    *(
                        other.http.send_message(world.channel.id, params=_params(f"b{i}"))
                        for i in range(2)
                    ),
                )
        finally:
            await other.close()
    assert fake.count_429 >= 1
    assert len(fake.bot_messages(world.channel)) == 4


async def test_after_effect_502_is_deduped_by_the_nonce_discord_py_adds(world: World, bot) -> None:
    client, _ = bot
    fake = world.fake
    fake.faults.add(method="POST", path_regex=SEND_PATH, times=2, status=502, after_effect=True)
    # Both first attempts DO create a message, then answer 502; discord.py retries 5xx after 1 s.
    # Messageable.send always adds a random nonce with enforce_nonce, so its retry is deduped;
    # a raw HTTP call without a nonce is not, and the message is duplicated.
    # (Two channels: requests to one channel share a bucket and discord.py serialises them.)
    raw_channel = world.guild.add_channel("raw")
    await asyncio.gather(
        text_channel(client, world.channel).send("via send()"),
        client.http.send_message(raw_channel.id, params=_params("raw, no nonce")),
    )
    assert [m.content for m in fake.bot_messages(world.channel)] == ["via send()"]
    assert [m.content for m in fake.bot_messages(raw_channel)] == ["raw, no nonce"] * 2
    assert fake.nonce_dedup_hits == 1
    assert [r.status for r in fake.requests if r.method == "POST"].count(502) == 2


async def test_fault_with_discord_error_code(world: World, bot) -> None:
    client, _ = bot
    fake = world.fake
    fake.faults.add(method="POST", path_regex=SEND_PATH, status=403, code=50013)
    with pytest.raises(discord.Forbidden) as info:
        await text_channel(client, world.channel).send("nope")
    assert info.value.code == 50013
    await text_channel(client, world.channel).send("fine now")  # the fault was consumed
    assert len(fake.bot_messages()) == 1


async def test_slow_response_then_late_effect(world: World, bot) -> None:
    client, _ = bot
    fake = world.fake
    fake.faults.add(method="POST", path_regex=SEND_PATH, delay=0.3)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(text_channel(client, world.channel).send("slow"), 0.1)
    # the request had reached Discord: the message shows up anyway
    msg = await fake.wait_for_message(lambda m: m.content == "slow", timeout=2)
    assert msg.channel_id == world.channel.id


async def test_dropped_connection_after_effect(world: World, bot) -> None:
    client, _ = bot
    fake = world.fake
    fake.faults.add(method="POST", path_regex=SEND_PATH, disconnect=True, after_effect=True)
    with pytest.raises(aiohttp.ClientError):
        await text_channel(client, world.channel).send("lost response")
    assert [m.content for m in fake.bot_messages()] == ["lost response"]


async def test_unknown_route_is_a_logged_404(world: World, bot) -> None:
    client, _ = bot
    with pytest.raises(discord.NotFound) as info:
        await client.http.request(discord.http.Route("GET", "/voice/regions"))
    assert info.value.code == 0
    assert world.fake.unknown_routes == [("GET", "/voice/regions")]


# --- hold gates --------------------------------------------------------------------------------


async def test_hold_before_parks_a_send_with_no_message_until_released(world: World, bot) -> None:
    client, _ = bot
    fake, channel = world.fake, text_channel(client, world.channel)
    hold = fake.hold_messages(world.channel, stage="before", skip=1)
    await channel.send("one", nonce="n-one")  # skipped: goes through
    held = asyncio.create_task(channel.send("two", nonce="n-two"))
    await fake.wait_until(lambda: hold.parked == 1, what="the second send to be parked")
    assert [m.content for m in fake.bot_messages(world.channel)] == ["one"]
    assert not fake.remembers_nonce(world.channel, "n-two")
    assert [(s.nonce, s.message_id, s.released) for s in hold.sends] == [("n-two", None, False)]
    assert not held.done()

    hold.release()
    two = await asyncio.wait_for(held, 5)
    assert [m.content for m in fake.bot_messages(world.channel)] == ["one", "two"]
    assert fake.remembers_nonce(world.channel, "n-two")
    assert (hold.parked, hold.sends[0].released, two.content) == (0, True, "two")
    await asyncio.wait_for(channel.send("three"), 5)  # released: nothing more is parked
    assert hold.seen == 3
    assert len(hold.sends) == 1


async def test_hold_after_creates_the_message_and_holds_back_the_response(
    world: World, bot
) -> None:
    client, _ = bot
    fake, channel = world.fake, text_channel(client, world.channel)
    hold = fake.hold_messages(world.channel, stage="after")
    held = asyncio.create_task(channel.send("made, unanswered", nonce="n-made"))
    await fake.wait_until(lambda: hold.parked == 1, what="the response to be held")
    [made] = fake.bot_messages(world.channel)
    assert (made.content, made.nonce) == ("made, unanswered", "n-made")
    assert fake.remembers_nonce(world.channel, "n-made")
    assert hold.sends[0].message_id == made.id
    assert not held.done()

    hold.release()
    answer = await asyncio.wait_for(held, 5)
    assert answer.id == made.id
    assert len(fake.bot_messages(world.channel)) == 1


async def test_hold_parks_only_count_sends_and_only_in_its_channel(world: World, bot) -> None:
    client, _ = bot
    fake = world.fake
    other = world.guild.add_channel("other")
    hold = fake.hold_messages(world.channel, count=1)
    held = asyncio.create_task(text_channel(client, world.channel).send("parked"))
    await fake.wait_until(lambda: hold.parked == 1, what="the send to be parked")
    # Another channel is not held; the raw route skips discord.py's per-channel queue.
    await asyncio.wait_for(text_channel(client, other).send("elsewhere"), 5)
    await asyncio.wait_for(
        client.http.send_message(world.channel.id, params=_params("after the count")), 5
    )
    assert [m.content for m in fake.bot_messages()] == ["elsewhere", "after the count"]
    hold.release()
    await asyncio.wait_for(held, 5)
    assert hold.seen == 2
    assert len(hold.sends) == 1


async def test_remembers_nonce_until_the_nonce_window_has_passed(world: World, bot) -> None:
    client, _ = bot
    fake, channel = world.fake, text_channel(client, world.channel)
    fake.nonce_window = 0.3
    first = await channel.send("remembered", nonce="n-window")
    assert fake.remembers_nonce(world.channel, "n-window")
    assert not fake.remembers_nonce(world.guild.add_channel("elsewhere"), "n-window")
    await until(
        lambda: not fake.remembers_nonce(world.channel, "n-window"), 5, "the nonce forgotten"
    )
    again = await channel.send("remembered", nonce="n-window")
    assert again.id != first.id
    assert fake.nonce_dedup_hits == 0


# --- application commands and interactions -------------------------------------------------------


async def test_slash_command_sync_and_invocation(world: World, bot) -> None:
    _, tree = bot
    fake = world.fake
    got: dict[str, object] = {}

    @tree.command(description="Schedule an announcement")
    @app_commands.describe(message="what to say", where="channel", who="role", minutes="delay")
    async def schedule(
        interaction: discord.Interaction,
        message: str,
        where: discord.TextChannel,
        who: discord.Role,
        minutes: app_commands.Range[int, 1, 60] = 5,
    ) -> None:
        got.update(message=message, where=where, who=who, minutes=minutes, user=interaction.user)
        resp = await interaction.response.send_message(f"scheduled: {message}", ephemeral=True)
        got["callback_message_id"] = resp.message_id if resp else None

    guild_obj = discord.Object(world.guild.id)
    tree.copy_global_to(guild=guild_obj)
    synced = await tree.sync(guild=guild_obj)
    assert [c.name for c in synced] == ["schedule"]
    assert fake.command_sync_calls[world.guild.id] == 1
    assert fake.command_sync_calls["global"] == 0
    registered = fake.get_command("schedule", world.guild)
    assert registered is not None
    assert registered.id == synced[0].id

    mods = world.guild.role_named("mods")
    handle = await fake.invoke_command(
        world.guild,
        world.channel,
        world.alice,
        "schedule",
        {"message": "ship it", "where": world.channel, "who": mods, "minutes": 10},
    )
    cb = await handle.response()
    assert cb.type == 4
    assert cb.ephemeral
    assert cb.content == "scheduled: ship it"
    assert got["message"] == "ship it"
    assert got["minutes"] == 10
    assert isinstance(got["where"], discord.TextChannel)
    assert got["where"].id == world.channel.id
    assert isinstance(got["who"], discord.Role)
    assert got["who"].id == mods.id
    assert isinstance(got["user"], discord.Member)
    assert got["user"].id == world.alice.id
    assert handle.original is not None
    assert handle.original.ephemeral
    await handle.wait_for(lambda h: "callback_message_id" in got)
    assert got["callback_message_id"] == handle.original.id  # with_response=1 parsed
    assert fake.channel_messages(world.channel) == []  # ephemeral: not in the channel

    with pytest.raises(ValueError, match="max_value"):
        await fake.invoke_command(
            world.guild, world.channel, world.alice, "schedule",
            {"message": "x", "where": world.channel, "who": mods, "minutes": 99},
        )  # fmt: skip


async def test_default_member_permissions_hide_the_command(world: World, bot) -> None:
    _, tree = bot

    @tree.command(description="Settings")
    @app_commands.default_permissions(manage_guild=True)
    async def settings(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("ok", ephemeral=True)

    await tree.sync()
    assert world.fake.command_sync_calls["global"] == 1
    with pytest.raises(CommandNotAvailable):
        await world.fake.invoke_command(world.guild, world.channel, world.alice, "settings")
    handle = await world.fake.invoke_command(world.guild, world.channel, world.mod, "settings")
    assert (await handle.response()).content == "ok"


async def test_defer_then_followup_edits_the_thinking_message(world: World, bot) -> None:
    _, tree = bot

    @tree.command(description="Slow")
    async def slow(interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        await interaction.followup.send("done", ephemeral=False)  # ephemeral comes from defer
        extra = await interaction.followup.send("extra", wait=True)
        await interaction.edit_original_response(content="done (edited)")
        original = await interaction.original_response()
        assert original.content == "done (edited)"
        await extra.edit(content="extra (edited)")

    await tree.sync()
    handle = await world.fake.invoke_command(world.guild, world.channel, world.alice, "slow")
    cb = await handle.response()
    assert cb.type == 5
    assert cb.ephemeral
    await handle.followup(1)
    await handle.wait_for(lambda h: h.original is not None and h.original.edit_count == 1)
    assert await handle.final_content() == "done (edited)"
    assert handle.original is not None
    assert handle.original.ephemeral
    assert handle.followups[0] is handle.original
    await handle.wait_for(lambda h: h.followups[1].edit_count == 1)
    assert handle.followups[1].content == "extra (edited)"
    assert not handle.followups[1].ephemeral
    assert [m.content for m in world.fake.channel_messages(world.channel)] == ["extra (edited)"]


async def test_late_ack_is_unknown_interaction(world: World, bot) -> None:
    _, tree = bot
    world.fake.interaction_ack_timeout = 0.1
    errors: list[BaseException] = []

    @tree.command(description="Too slow")
    async def sluggish(interaction: discord.Interaction) -> None:
        await asyncio.sleep(0.3)
        try:
            await interaction.response.send_message("late")
        except discord.NotFound as exc:
            errors.append(exc)

    await tree.sync()
    handle = await world.fake.invoke_command(world.guild, world.channel, world.alice, "sluggish")
    await handle.wait_for(lambda h: bool(h.callbacks))
    assert not handle.acknowledged
    assert handle.callbacks[0].error_code == 10062
    await world.fake.wait_until(lambda: errors)
    assert isinstance(errors[0], discord.NotFound)
    assert errors[0].code == 10062


async def test_autocomplete_round_trip(world: World, bot) -> None:
    _, tree = bot
    zones = ["Europe/Berlin", "Europe/London", "America/New_York"]

    async def tz_complete(interaction: discord.Interaction, current: str):  # type: ignore[no-untyped-def]
        return [app_commands.Choice(name=z, value=z) for z in zones if current.lower() in z.lower()]

    @tree.command(description="Set the time zone")
    @app_commands.autocomplete(zone=tz_complete)
    async def timezone(interaction: discord.Interaction, zone: str) -> None:
        await interaction.response.send_message(zone, ephemeral=True)

    await tree.sync()
    handle = await world.fake.invoke_autocomplete(
        world.guild, world.channel, world.alice, "timezone", {"zone": "euro"}, focused="zone"
    )
    cb = await handle.response()
    assert cb.type == 8
    assert [c["value"] for c in cb.choices] == ["Europe/Berlin", "Europe/London"]
    focused = handle.payload["data"]["options"][0]
    assert focused == {"name": "zone", "type": 3, "value": "euro", "focused": True}


async def test_button_click_updates_the_message(world: World, bot) -> None:
    _, tree = bot
    clicked_by: list[int] = []

    class Confirm(discord.ui.View):
        @discord.ui.button(
            label="Cancel it", custom_id="confirm-cancel", style=discord.ButtonStyle.danger
        )
        async def confirm(
            self, interaction: discord.Interaction, button: discord.ui.Button
        ) -> None:
            clicked_by.append(interaction.user.id)
            await interaction.response.edit_message(content="cancelled", view=None)

    @tree.command(description="Cancel")
    async def cancel(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("Really cancel?", view=Confirm(), ephemeral=True)

    await tree.sync()
    handle = await world.fake.invoke_command(world.guild, world.channel, world.alice, "cancel")
    assert (await handle.response()).components  # the button was sent
    assert handle.original is not None
    # Discord's client would not let another user press a button on an ephemeral message
    with pytest.raises(ValueError, match="only the user who got an ephemeral message"):
        await world.fake.click_button(handle.original, "confirm-cancel", world.mod)
    click = await handle.click("confirm-cancel")
    cb = await click.response()
    assert cb.type == 7
    assert cb.content == "cancelled"
    assert clicked_by == [world.alice.id]
    assert handle.original.content == "cancelled"
    assert handle.original.components == []
    # ... nor anyone press a button the edit took away.
    with pytest.raises(ValueError, match="has no component 'confirm-cancel'"):
        await world.fake.click_button(handle.original, "confirm-cancel", world.alice)


async def test_modal_submit(world: World, bot) -> None:
    _, tree = bot
    submitted: list[str] = []

    class Note(discord.ui.Modal, title="Announcement"):
        text = discord.ui.TextInput(label="Text", custom_id="note-text", max_length=50)

        async def on_submit(self, interaction: discord.Interaction) -> None:
            submitted.append(self.text.value)
            await interaction.response.send_message(f"saved: {self.text.value}", ephemeral=True)

    @tree.command(description="Write a note")
    async def note(interaction: discord.Interaction) -> None:
        await interaction.response.send_modal(Note(custom_id="note-modal"))

    await tree.sync()
    handle = await world.fake.invoke_command(world.guild, world.channel, world.alice, "note")
    cb = await handle.response()
    assert cb.type == 9
    assert cb.custom_id == "note-modal"
    assert cb.title == "Announcement"
    with pytest.raises(ValueError, match="longer"):
        await handle.submit_modal({"note-text": "x" * 51})
    submit = await handle.submit_modal({"note-text": "hello modal"})
    assert (await submit.response()).content == "saved: hello modal"
    assert submitted == ["hello modal"]


async def test_message_command_brings_the_whole_message_and_a_modal_select_its_channel(
    world: World, bot
) -> None:
    """A message command (type 3) is synced with a name of any case and spaces, and no
    description; right-clicking a message sends its full text, embeds, files, stickers and
    poll in ``resolved.messages`` (whatever the intents); a channel select in a modal is
    submitted with what the client showed picked, and resolved."""
    _, tree = bot
    fake = world.fake
    seen: list[discord.Message] = []
    picked: list[list[int]] = []

    class Picked(discord.SelectDefaultValue):
        def to_dict(self) -> Any:  # the string snowflake of Discord's spec (not an integer)
            return {"id": str(self.id), "type": "channel"}

    class Where(discord.ui.Modal, title="Where"):
        def __init__(self, channel_id: int) -> None:
            super().__init__()
            self.where = discord.ui.ChannelSelect(
                custom_id="where",
                channel_types=[discord.ChannelType.text],
                default_values=[Picked(id=channel_id, type=discord.SelectDefaultValueType.channel)],
            )
            self.add_item(discord.ui.Label(text="Channel", component=self.where))

        async def on_submit(self, interaction: discord.Interaction) -> None:
            picked.append([c.id for c in self.where.values])
            await interaction.response.send_message("ok", ephemeral=True)

    async def copy(interaction: discord.Interaction, message: discord.Message) -> None:
        seen.append(message)
        await interaction.response.send_modal(Where(message.channel.id))

    tree.add_command(app_commands.ContextMenu(name="Copy this", callback=copy))
    await tree.sync()
    registered = fake.get_command("Copy this", type=3)
    assert registered is not None
    assert (registered.description, registered.options) == ("", [])
    assert fake.get_command("Copy this") is None  # not a slash command of that name
    app = fake.add_user("Other App", bot=True)
    world.guild.add_member(app.id)
    button = {"type": 1, "components": [{"type": 2, "style": 1, "label": "Go", "custom_id": "g"}]}
    message = fake.post_message(
        world.channel, app, "vote {now}", embeds=[{"title": "T"}], files=[("a.txt", b"abc")],
        components=[button], stickers=["wave"], poll=("Pizza?", ["yes", "no"]),
    )  # fmt: skip
    with pytest.raises(ValueError, match="components"):
        fake.post_message(world.channel, world.alice, "no buttons", components=[button])
    handle = await fake.invoke_message_command(
        world.guild, world.channel, world.alice, "Copy this", message
    )
    assert (await handle.response()).type == 9
    [got] = seen
    assert (got.id, got.content, got.author.id) == (message.id, "vote {now}", app.id)
    assert [(e.type, e.title) for e in got.embeds] == [("rich", "T")]
    [attachment] = got.attachments
    assert (attachment.filename, attachment.size) == ("a.txt", 3)
    assert await attachment.read() == b"abc"  # served by the fake, on 127.0.0.1
    assert [s.name for s in got.stickers] == ["wave"]
    assert got.poll is not None
    assert [a.text for a in got.poll.answers] == ["yes", "no"]
    assert got.components
    other = world.guild.add_channel("other")
    await (await handle.submit_modal({})).response()  # as shown: the message's channel
    again = await fake.invoke_message_command(
        world.guild, world.channel, world.alice, "Copy this", message
    )
    voice = world.guild.add_channel("voice", type=2)
    with pytest.raises(ValueError, match="channel type"):
        await again.submit_modal({"where": [voice]})
    await (await again.submit_modal({"where": [other]})).response()
    assert picked == [[world.channel.id], [other.id]]
    with pytest.raises(ValueError, match="can't be picked"):
        await fake.invoke_message_command(world.guild, other, world.alice, "Copy this", message)


# --- pure parts: permissions ---------------------------------------------------------------------


async def test_permission_algorithm(fake: FakeDiscord) -> None:
    guild = fake.add_guild(name="Perms", everyone_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES)
    helper = guild.add_role("helper", P.MENTION_EVERYONE)
    admin_role = guild.add_role("admin", P.ADMINISTRATOR)
    bob = guild.add_member(name="bob", roles=[helper])
    boss = guild.add_member(name="boss", roles=[admin_role])
    owner = guild.owner
    assert owner is not None
    quiet = guild.add_channel(
        "quiet",
        overwrites=[
            overwrite(guild.everyone_role, deny=P.SEND_MESSAGES),
            overwrite(helper, allow=P.SEND_MESSAGES | P.EMBED_LINKS),
            overwrite(bob, deny=P.EMBED_LINKS),
        ],
    )
    hidden = guild.add_channel(
        "hidden", overwrites=[overwrite(guild.everyone_role, deny=P.VIEW_CHANNEL)]
    )
    bob_quiet = channel_permissions(guild, quiet, bob)
    assert bob_quiet & P.SEND_MESSAGES
    assert bob_quiet & P.MENTION_EVERYONE
    assert not bob_quiet & P.EMBED_LINKS  # member overwrite wins over role overwrite
    assert channel_permissions(guild, hidden, bob) == 0  # no VIEW_CHANNEL -> nothing
    alice = guild.add_member(name="alice")
    alice_quiet = channel_permissions(guild, quiet, alice)
    assert not alice_quiet & P.SEND_MESSAGES
    assert channel_permissions(guild, hidden, boss) == P.ALL  # administrator
    assert channel_permissions(guild, hidden, owner) == P.ALL  # owner
    # without SEND_MESSAGES, MENTION_EVERYONE is implicitly gone
    guild.everyone_role.permissions |= P.MENTION_EVERYONE
    assert not channel_permissions(guild, quiet, alice) & P.MENTION_EVERYONE


# --- the network guard ---------------------------------------------------------------------------


async def test_network_guard_blocks_the_internet(network_guard: NetworkGuard) -> None:
    assert network_guard.installed
    with (
        socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s,
        pytest.raises(NetworkAccessBlocked),
    ):
        s.connect(("93.184.216.34", 80))
    with pytest.raises(NetworkAccessBlocked):
        socket.getaddrinfo("discord.com", 443)
    with pytest.raises(NetworkAccessBlocked):
        await asyncio.get_running_loop().getaddrinfo("gateway.discord.gg", 443)
    async with aiohttp.ClientSession() as session:
        with pytest.raises(NetworkAccessBlocked):
            await session.get("https://discord.com/api/v10/gateway")
        with pytest.raises(NetworkAccessBlocked):
            await session.get("http://93.184.216.34/")
    # loopback stays reachable
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=2):
            pass
    blocked = network_guard.take_violations()  # expected ones; don't fail the test at teardown
    assert len(blocked) == 5, blocked
    assert any("discord.com" in b for b in blocked)


# --- issue 11's surface: uploads, flags, embeds, threads, forums, crossposts ---------------------

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


async def test_multipart_upload_keeps_bytes_flags_and_embed_attachment_urls(
    world: World, bot
) -> None:
    client, _ = bot
    fake = world.fake
    world.guild.set_bot_permissions(P.DEFAULT_BOT | P.ATTACH_FILES)
    ch = text_channel(client, world.channel)
    embed = discord.Embed(title="Launch", description="today").set_image(url="attachment://a.png")
    sent = await ch.send(
        "with a picture",
        embed=embed,
        file=discord.File(io.BytesIO(PNG), filename="a.png", description="the logo"),
        silent=True,
    )
    msg = fake.get_message(sent.id)
    assert msg is not None
    assert msg.silent
    assert not msg.suppress_embeds
    assert [(a.filename, a.data, a.description) for a in msg.attachments] == [
        ("a.png", PNG, "the logo")
    ]
    assert msg.attachments[0].content_type == "image/png"
    assert msg.embeds[0]["image"]["url"] == msg.attachments[0].url  # attachment:// resolved
    assert sent.flags.suppress_notifications
    assert sent.attachments[0].filename == "a.png"
    assert await sent.attachments[0].read() == PNG  # served by the fake's CDN

    # An edit listing no attachments removes them; a new file replaces them.
    other = b"GIF89a" + b"\x00" * 50
    edited = await sent.edit(attachments=[discord.File(io.BytesIO(other), filename="b.gif")])
    assert msg.files == {"b.gif": other}
    assert [a.filename for a in edited.attachments] == ["b.gif"]
    assert msg.history[-1]["attachments"][0].data == PNG
    await sent.edit(content="kept")  # no attachments field: kept
    assert msg.files == {"b.gif": other}
    assert msg.content == "kept"
    await sent.edit(attachments=[])
    assert msg.attachments == []


async def test_upload_needs_attach_files(world: World, bot) -> None:
    client, _ = bot
    world.channel.set_overwrite(world.guild.bot_role, deny=P.ATTACH_FILES)
    ch = text_channel(client, world.channel)
    with pytest.raises(discord.Forbidden) as info:
        await ch.send(file=discord.File(io.BytesIO(b"x"), filename="x.txt"))
    assert info.value.code == 50013
    assert world.fake.bot_messages(world.channel) == []


async def test_upload_over_the_limit_is_413_40005(world: World) -> None:
    fake = world.fake
    fake.attachments.upload_limit = 10
    world.guild.set_bot_permissions(P.DEFAULT_BOT | P.ATTACH_FILES)
    client, _ = make_client()
    async with run_client(fake, client):
        ch = text_channel(client, world.channel)
        with pytest.raises(discord.HTTPException) as info:
            await ch.send(file=discord.File(io.BytesIO(b"x" * 11), filename="big.bin"))
    assert info.value.status == 413
    assert info.value.code == 40005
    assert fake.bot_messages(world.channel) == []


async def test_embed_limits_are_refused_with_discords_error_body(world: World, bot) -> None:
    fake = world.fake
    headers = {"Authorization": f"Bot {fake.token}"}
    url = f"{fake.api_base}/channels/{world.channel.id}/messages"
    cases = [
        ({"embeds": [{"title": "t" * 257}]}, {"embeds": {"0": {"title": {"_errors": [
            {"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 256 or fewer in length."}]}}}}),
        ({"embeds": [{"description": "d" * 4097}]}, {"embeds": {"0": {"description": {
            "_errors": [{"code": "BASE_TYPE_MAX_LENGTH",
                         "message": "Must be 4096 or fewer in length."}]}}}}),
        ({"embeds": [{"description": "d" * 4000}, {"description": "d" * 2001}]}, {"embeds": {
            "_errors": [{"code": "MAX_EMBED_SIZE_EXCEEDED",
                         "message": "Embed size exceeds maximum size of 6000"}]}}),
        ({"embeds": [{"title": "x"}] * 11}, {"embeds": {"_errors": [
            {"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 10 or fewer in length."}]}}),
    ]  # fmt: skip
    with fake.spec.allow_violations() as refused:  # the spec bounds the lengths, not the sum
        async with aiohttp.ClientSession() as session:
            for payload, errors in cases:
                async with session.post(url, json=payload, headers=headers) as resp:
                    assert resp.status == 400
                    assert await resp.json() == {
                        "message": "Invalid Form Body",
                        "code": 50035,
                        "errors": errors,
                    }
    assert [v.where for v in refused] == [
        "body/embeds/0/title",
        "body/embeds/0/description",
        "body/embeds",
    ]
    assert fake.bot_messages(world.channel) == []


async def test_thread_send_unarchives_and_a_locked_thread_refuses(world: World) -> None:
    fake, guild = world.fake, world.guild
    open_thread = guild.add_thread(world.channel, "open")
    archived = guild.add_thread(world.channel, "archived", archived=True)
    locked = guild.add_thread(world.channel, "locked", locked=True)
    locked_archived = guild.add_thread(world.channel, "frozen", archived=True, locked=True)
    client, _ = make_client()
    async with run_client(fake, client):
        got = client.get_channel(open_thread.id)
        assert isinstance(got, discord.Thread)
        assert got.parent_id == world.channel.id
        assert client.get_channel(archived.id) is None  # Discord only sends active threads
        await got.send("in the thread")
        assert [m.content for m in fake.channel_messages(open_thread)] == ["in the thread"]

        thread = await client.fetch_channel(archived.id)
        assert isinstance(thread, discord.Thread)
        assert thread.archived
        await thread.send("wakes it")
        assert not archived.archived
        await fake.wait_until(lambda: client.get_channel(archived.id) is not None, what="cache")

        for target, code in ((locked, 160005), (locked_archived, 50083)):
            th = await client.fetch_channel(target.id)
            assert isinstance(th, discord.Thread)
            assert th.locked
            with pytest.raises(discord.HTTPException) as info:
                await th.send("refused")
            assert info.value.code == code
            assert fake.channel_messages(target) == []
        assert locked_archived.archived

        # Without SEND_MESSAGES_IN_THREADS on the parent, a thread refuses the send.
        world.channel.set_overwrite(guild.everyone_role, deny=P.SEND_MESSAGES_IN_THREADS)
        await fake.gateway.drain()
        with pytest.raises(discord.Forbidden):
            await got.send("no")


async def test_forum_post_with_tags_files_and_flags(world: World) -> None:
    fake, guild = world.fake, world.guild
    guild.set_bot_permissions(P.DEFAULT_BOT | P.ATTACH_FILES)
    staff = guild.new_tag("staff", moderated=True)
    forum = guild.add_forum("releases", tags=["news", "ops", staff], require_tag=True)
    client, _ = make_client()
    async with run_client(fake, client):
        f = client.get_channel(forum.id)
        assert isinstance(f, discord.ForumChannel)
        assert [t.name for t in f.available_tags] == ["news", "ops", "staff"]
        assert f.flags.require_tag
        news = f.get_tag(forum.tag_named("news").id)
        assert news is not None

        with pytest.raises(discord.HTTPException) as info:
            await f.create_thread(name="untagged", content="x")
        assert info.value.status == 400
        assert info.value.code == 40067
        with pytest.raises(discord.Forbidden):  # a moderated tag needs MANAGE_THREADS
            await f.create_thread(name="staff", content="x", applied_tags=[f.get_tag(staff.id)])
        assert fake.forum_posts(forum) == []

        created = await f.create_thread(
            name="v1.0",
            content="released",
            embed=discord.Embed(title="v1.0"),
            file=discord.File(io.BytesIO(PNG), filename="shot.png"),
            applied_tags=[news],
            silent=True,
        )
        assert created.thread.id == created.message.id
        [post] = fake.forum_posts(forum)
        assert post.id == created.thread.id
        assert post.name == "v1.0"
        assert post.applied_tags == [news.id]
        starter = fake.get_message(post.id)
        assert starter is not None
        assert starter.channel_id == post.id
        assert starter.content == "released"
        assert starter.silent
        assert starter.nonce is None
        assert starter.files == {"shot.png": PNG}
        assert starter.embeds[0]["title"] == "v1.0"
        await fake.wait_until(lambda: client.get_channel(post.id) is not None, what="THREAD_CREATE")
        assert created.thread.applied_tags[0].id == news.id

        with pytest.raises(discord.HTTPException) as info:  # the forum itself takes no messages
            await fake_send(fake, forum.id, {"content": "x"})
        assert info.value.code == 40058


async def fake_send(fake: FakeDiscord, channel_id: int, payload: dict[str, object]) -> None:
    """A raw POST /channels/{id}/messages through discord.py's HTTP client."""
    http = discord.http.HTTPClient(asyncio.get_running_loop())
    with pointing_discord_py_at(fake):
        await http.static_login(fake.token)
        try:
            route = discord.http.Route("POST", "/channels/{c}/messages", c=channel_id)
            await http.request(route, json=payload)
        finally:
            await http.close()


async def test_forum_post_hold_after_leaves_exactly_one_post(world: World) -> None:
    fake, guild = world.fake, world.guild
    forum = guild.add_forum("posts")
    hold = fake.hold_messages(forum, stage="after")
    client, _ = make_client()
    async with run_client(fake, client):
        f = client.get_channel(forum.id)
        assert isinstance(f, discord.ForumChannel)
        task = asyncio.create_task(f.create_thread(name="p", content="held"))
        await fake.wait_until(lambda: hold.parked == 1, what="parked forum post")
        [post] = fake.forum_posts(forum)
        assert hold.sends[0].message_id == post.id
        assert hold.sends[0].nonce is None
        hold.release()
        created = await task
        assert created.thread.id == post.id
        assert len(fake.forum_posts(forum)) == 1


async def test_crosspost_flag_40033_and_its_rate_limit(world: World) -> None:
    fake = world.fake
    fake.ratelimits.set_bucket("crosspost", 2, 120.0)
    news = world.guild.add_announcement_channel("news")
    client, _ = make_client()
    async with run_client(fake, client):
        ch = client.get_channel(news.id)
        assert isinstance(ch, discord.TextChannel)
        assert ch.is_news()
        first = await ch.send("one")
        assert await first.publish() is None
        msg = fake.get_message(first.id)
        assert msg is not None
        assert msg.crossposted
        assert fake.crossposts.crossposted == [first.id]
        await fake.wait_until(
            lambda: (
                (m := client._connection._get_message(first.id)) is not None and m.flags.crossposted
            ),
            what="MESSAGE_UPDATE with the flag",
        )
        # discord.py sleeps out a bucket it sees exhausted (here: 120 s) before returning, so
        # the rest goes through raw HTTP: a second publish is 40033 and spends the bucket.
        second = await ch.send("two")
        headers = {"Authorization": f"Bot {fake.token}"}
        base = f"{fake.api_base}/channels/{news.id}/messages"
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{base}/{first.id}/crosspost", headers=headers) as resp,
        ):
            assert resp.status == 400
            assert await resp.json() == {
                "message": "This message has already been crossposted",
                "code": 40033,
            }
        # A client new to the bucket gets the 429; discord.py raises as the wait is long.
        http = discord.http.HTTPClient(asyncio.get_running_loop(), max_ratelimit_timeout=30.0)
        with pointing_discord_py_at(fake):
            await http.static_login(fake.token)
            try:
                with pytest.raises(discord.RateLimited) as limited:
                    await http.publish_message(news.id, second.id)
            finally:
                await http.close()
        assert 100 < limited.value.retry_after <= 120
        assert not fake.get_message(second.id).crossposted  # type: ignore[union-attr]
        await ch.send("sending is not limited by it")

        plain = await text_channel(client, world.channel).send("plain")
        with pytest.raises(discord.HTTPException) as info:
            await plain.publish()
        assert info.value.code == 50024
    limited_request = next(r for r in fake.requests if r.ratelimited)
    assert limited_request.path.endswith(f"/messages/{second.id}/crosspost")


async def test_crosspost_429_headers(world: World) -> None:
    fake = world.fake
    fake.ratelimits.set_bucket("crosspost", 1, 3600.0)
    news = world.guild.add_announcement_channel("news")
    msgs = [fake.post_message(news, world.guild.bot_member, f"m{i}") for i in range(2)]
    headers = {"Authorization": f"Bot {fake.token}"}
    async with aiohttp.ClientSession() as session:
        for i, m in enumerate(msgs):
            url = f"{fake.api_base}/channels/{news.id}/messages/{m.id}/crosspost"
            async with session.post(url, headers=headers) as resp:
                if i == 0:
                    assert resp.status == 200
                    assert (await resp.json())["flags"] & 1
                    continue
                assert resp.status == 429
                body = await resp.json()
                assert 3590 < body["retry_after"] <= 3600
                assert body["global"] is False
                assert resp.headers["Via"] == "1.1 google"
                assert resp.headers["X-RateLimit-Remaining"] == "0"
                assert resp.headers["X-RateLimit-Scope"] == "user"
                assert int(resp.headers["Retry-After"]) >= 3590


async def test_attachment_option_url_is_served_until_it_expires(world: World, bot) -> None:
    _, tree = bot
    fake = world.fake
    upload = fake.make_attachment("cat.png", PNG)
    got: dict[str, object] = {}

    @tree.command(description="Post an image")
    async def image(interaction: discord.Interaction, picture: discord.Attachment) -> None:
        got["name"] = picture.filename
        got["bytes"] = await picture.read()
        upload.stop_serving()  # the signed URL expires
        try:
            await picture.read()
        except discord.HTTPException as exc:
            got["second_status"] = exc.status
        await interaction.response.send_message("ok", ephemeral=True)

    guild_obj = discord.Object(world.guild.id)
    tree.copy_global_to(guild=guild_obj)
    await tree.sync(guild=guild_obj)
    handle = await fake.invoke_command(
        world.guild, world.channel, world.alice, "image", {"picture": upload}
    )
    cb = await handle.response()
    assert cb.content == "ok"
    assert got == {"name": "cat.png", "bytes": PNG, "second_status": 404}
    assert upload.fetch_count == 1
    resolved = handle.payload["data"]["resolved"]["attachments"][str(upload.id)]
    assert resolved["url"] == upload.url
    assert resolved["ephemeral"] is True
    async with aiohttp.ClientSession() as session:
        async with session.get(upload.url) as resp:
            assert resp.status == 404
            assert await resp.text() == "This content is no longer available."
        upload.stop_serving(status=403)
        async with session.get(upload.url) as resp:
            assert resp.status == 403
        upload.resume_serving()
        async with session.get(upload.url) as resp:
            assert resp.status == 200
            assert await resp.read() == PNG


# --- issue 13's OAuth2 (a dashboard logging users in with Discord) --------------------------------

REDIRECT = "http://127.0.0.1:1/callback"


def query_of(location: str) -> dict[str, str]:
    parsed = urllib.parse.urlsplit(location)
    assert f"{parsed.scheme}://{parsed.netloc}{parsed.path}" == REDIRECT
    return dict(urllib.parse.parse_qsl(parsed.query))


async def authorize(
    session: aiohttp.ClientSession, fake: FakeDiscord, **overrides: str
) -> aiohttp.ClientResponse:
    params = {
        "response_type": "code",
        "client_id": fake.oauth2.client_id,
        "redirect_uri": REDIRECT,
        "scope": "identify guilds",
        "state": "s-123",
    } | overrides
    return await session.get(fake.oauth2.authorize_url, params=params, allow_redirects=False)


async def exchange(
    session: aiohttp.ClientSession, fake: FakeDiscord, form: dict[str, str], *, basic: bool = False
) -> tuple[int, dict[str, object]]:
    headers: dict[str, str] = {}
    if basic:  # RFC 6749 2.3.1: each part form-encoded, then "id:secret" in base64
        quote = urllib.parse.quote
        pair = f"{quote(fake.oauth2.client_id)}:{quote(fake.oauth2.client_secret)}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    else:
        form = form | {
            "client_id": fake.oauth2.client_id,
            "client_secret": fake.oauth2.client_secret,
        }
    async with session.post(fake.oauth2.token_url, data=form, headers=headers) as resp:
        return resp.status, await resp.json()


async def bearer_get(
    session: aiohttp.ClientSession, fake: FakeDiscord, path: str, token: str
) -> tuple[int, object]:
    headers = {"Authorization": f"Bearer {token}"}
    async with session.get(f"{fake.api_base}{path}", headers=headers) as resp:
        return resp.status, await resp.json()


async def test_oauth2_code_flow_lists_the_users_guilds(world: World) -> None:
    fake, guild = world.fake, world.guild
    fake.add_guild(name="Alice's", owner_id=world.alice.user)
    fake.add_guild(name="Elsewhere")
    fake.oauth2.add_redirect_uri(REDIRECT)
    fake.oauth_login_as(world.mod)
    async with aiohttp.ClientSession() as session:
        async with await authorize(session, fake) as resp:
            assert resp.status == 302
            got = query_of(resp.headers["Location"])
        assert got["state"] == "s-123"
        status, tokens = await exchange(
            session, fake, {"grant_type": "authorization_code", "code": got["code"],
                            "redirect_uri": REDIRECT},
        )  # fmt: skip
        assert status == 200
        assert tokens["token_type"] == "Bearer"
        assert tokens["scope"] == "identify guilds"
        assert tokens["expires_in"] == 604800
        assert tokens["refresh_token"]
        access = str(tokens["access_token"])

        status, me = await bearer_get(session, fake, "/users/@me", access)
        assert status == 200
        assert isinstance(me, dict)
        assert me["id"] == str(world.mod.id)
        assert me["username"] == "mod"
        assert "email" not in me
        status, guilds = await bearer_get(session, fake, "/users/@me/guilds", access)
        assert status == 200
        assert guilds == [
            {"id": str(guild.id), "name": guild.name, "icon": None, "banner": None,
             "owner": False, "permissions": str(P.DEFAULT_EVERYONE | P.MANAGE_GUILD),
             "features": []},
        ]  # fmt: skip

        # The same code twice is refused; so is the bot token's world for a Bearer token.
        status, err = await exchange(
            session, fake, {"grant_type": "authorization_code", "code": got["code"],
                            "redirect_uri": REDIRECT},
        )  # fmt: skip
        assert (status, err["error"]) == (400, "invalid_grant")

        fake.oauth_login_as(world.alice)
        async with await authorize(session, fake, scope="guilds") as resp:
            code = query_of(resp.headers["Location"])["code"]
        status, tokens = await exchange(
            session, fake, {"grant_type": "authorization_code", "code": code,
                            "redirect_uri": REDIRECT}, basic=True,
        )  # fmt: skip
        assert status == 200
        status, guilds = await bearer_get(
            session, fake, "/users/@me/guilds", str(tokens["access_token"])
        )
        assert isinstance(guilds, list)
        assert [(g["name"], g["owner"], g["permissions"]) for g in guilds] == [
            (guild.name, False, str(P.DEFAULT_EVERYONE)),
            ("Alice's", True, str(P.ALL)),
        ]
        status, err = await bearer_get(session, fake, "/users/@me", str(tokens["access_token"]))
        assert (status, err) == (403, {"message": "Missing Access", "code": 50001})


async def test_oauth2_refresh_and_expiry(world: World) -> None:
    fake = world.fake
    now = [1_000_000.0]
    fake.oauth2.clock = lambda: now[0]
    fake.oauth2.add_redirect_uri(REDIRECT)
    fake.oauth_login_as(world.alice)
    async with aiohttp.ClientSession() as session:
        async with await authorize(session, fake) as resp:
            code = query_of(resp.headers["Location"])["code"]
        _, first = await exchange(
            session, fake, {"grant_type": "authorization_code", "code": code,
                            "redirect_uri": REDIRECT},
        )  # fmt: skip
        now[0] += 604800  # a week later the access token has expired
        status, err = await bearer_get(session, fake, "/users/@me", str(first["access_token"]))
        assert (status, err) == (401, {"message": "401: Unauthorized", "code": 0})

        status, second = await exchange(
            session, fake, {"grant_type": "refresh_token",
                            "refresh_token": str(first["refresh_token"])}, basic=True,
        )  # fmt: skip
        assert status == 200
        assert second["access_token"] != first["access_token"]
        status, me = await bearer_get(session, fake, "/users/@me", str(second["access_token"]))
        assert status == 200
        assert isinstance(me, dict)
        assert me["id"] == str(world.alice.id)
        status, err = await exchange(
            session, fake, {"grant_type": "refresh_token",
                            "refresh_token": str(first["refresh_token"])},
        )  # fmt: skip
        assert (status, err["error"]) == (400, "invalid_grant")  # a refresh token works once

        fake.oauth2.expire_tokens()
        status, _ = await bearer_get(session, fake, "/users/@me", str(second["access_token"]))
        assert status == 401

        # A code is good for 10 minutes.
        async with await authorize(session, fake) as resp:
            code = query_of(resp.headers["Location"])["code"]
        now[0] += 601
        status, err = await exchange(
            session, fake, {"grant_type": "authorization_code", "code": code,
                            "redirect_uri": REDIRECT},
        )  # fmt: skip
        assert (status, err["error"]) == (400, "invalid_grant")


async def test_oauth2_refusals(world: World) -> None:
    fake = world.fake
    fake.oauth2.add_redirect_uri(REDIRECT)
    async with aiohttp.ClientSession() as session:
        async with await authorize(session, fake) as resp:
            assert resp.status == 401  # nobody logged in: Discord's login page
        fake.oauth_login_as(world.alice, approve=False)
        async with await authorize(session, fake) as resp:
            got = query_of(resp.headers["Location"])
        assert got["error"] == "access_denied"
        assert got["state"] == "s-123"
        assert "code" not in got
        fake.oauth_login_as(world.alice)
        async with await authorize(session, fake, client_id="42") as resp:
            assert resp.status == 400
            assert "Location" not in resp.headers
        async with await authorize(session, fake, redirect_uri="http://127.0.0.1:1/evil") as resp:
            assert resp.status == 400
            assert "Location" not in resp.headers
        async with await authorize(session, fake, scope="identify nonsense") as resp:
            assert query_of(resp.headers["Location"])["error"] == "invalid_scope"
        async with await authorize(session, fake, response_type="token") as resp:
            assert query_of(resp.headers["Location"])["error"] == "unsupported_response_type"

        async with await authorize(session, fake) as resp:
            code = query_of(resp.headers["Location"])["code"]
        bad_secret = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                      "client_id": fake.oauth2.client_id, "client_secret": "wrong"}  # fmt: skip
        async with session.post(fake.oauth2.token_url, data=bad_secret) as resp:
            assert resp.status == 401
            assert (await resp.json())["error"] == "invalid_client"
        status, err = await exchange(
            session, fake, {"grant_type": "authorization_code", "code": code,
                            "redirect_uri": "http://127.0.0.1:1/other"},
        )  # fmt: skip
        assert (status, err["error"]) == (400, "invalid_grant")
        status, err = await exchange(session, fake, {"grant_type": "password"})
        assert (status, err["error"]) == (400, "unsupported_grant_type")
        status, _ = await bearer_get(session, fake, "/users/@me", "not-a-token")
        assert status == 401


async def test_oauth2_consent_page_posts_the_decision(world: World) -> None:
    fake = world.fake
    fake.oauth2.add_redirect_uri(REDIRECT)
    fake.oauth2.consent_page = True
    fake.oauth_login_as(world.alice)
    async with aiohttp.ClientSession() as session:
        async with await authorize(session, fake) as resp:
            assert resp.status == 200
            page = await resp.text()
        assert "Authorize" in page
        assert "alice" in page
        fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', page))
        for decision, expect in (("cancel", "error"), ("authorize", "code")):
            form = {k: html.unescape(v) for k, v in fields.items()} | {"decision": decision}
            async with session.post(
                fake.oauth2.authorize_url, data=form, allow_redirects=False
            ) as resp:
                assert resp.status == 302
                assert expect in query_of(resp.headers["Location"])


# --- shards (issue 25) ---------------------------------------------------------------------------


class Answering:
    """A client mixin: answers every interaction with the shard it came in on (its guild's,
    0 for a DM) and keeps what it answered and what Discord refused; IDENTIFYs without
    discord.py's 5 s pause between shards (the fake's identify_window is 0 unless a test
    sets one)."""

    def setup_answers(self) -> None:
        self.answered: list[int] = []
        self.refused: list[discord.HTTPException] = []

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        return None

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        self.answered.append(interaction.id)
        shard = interaction.guild.shard_id if interaction.guild is not None else 0
        try:
            await interaction.response.send_message(f"shard {shard}")
        except discord.HTTPException as exc:
            self.refused.append(exc)


class AnsweringClient(Answering, discord.Client):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(intents=discord.Intents.default(), guild_ready_timeout=0.05, **kwargs)
        self.setup_answers()


class AnsweringShards(Answering, discord.AutoShardedClient):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(intents=discord.Intents.default(), guild_ready_timeout=0.05, **kwargs)
        self.setup_answers()


class ManualClock:
    """The fake gateway's clock, moved only by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def sharded_world(fake: FakeDiscord, count: int, shards: int) -> tuple[list[Guild], Member]:
    """``count`` guilds, guild i on shard i % shards, each with #general and alice."""
    guilds = fake.add_guilds(count, shards=shards, channels=["general"])
    alice = fake.add_user("alice")
    for guild in guilds:
        guild.add_member(alice)
    return guilds, alice


async def ping(fake: FakeDiscord, guild: Guild, alice: object) -> object:
    chan = guild.channel_named("general")
    assert chan is not None
    member = guild.get_member(alice)  # type: ignore[arg-type]
    assert member is not None
    return await fake.invoke_command(guild, chan, member, "ping")


async def test_autosharded_client_gets_each_guild_on_its_shard_and_dms_on_shard_0() -> None:
    async with FakeDiscord() as fake:
        guilds, alice = sharded_world(fake, 9, shards=3)
        client = AnsweringShards(shard_count=3)
        async with run_client(fake, client):
            assert fake.gateway.connected_shards() == [(0, 3), (1, 3), (2, 3)]
            by_shard = {s.shard[0]: s for s in fake.gateway.connected_sessions}
            for k, session in by_shard.items():  # READY and GUILD_CREATE: its guilds only
                assert session.guild_ids == {g.id for g in guilds[k::3]}
                assert all((gid >> 22) % 3 == k for gid in session.guild_ids)
            assert fake.gateway.guild_counts() == {s.id: 3 for s in by_shard.values()}
            assert {g.id: client.get_guild(g.id).shard_id for g in guilds} == {  # type: ignore[union-attr]
                g.id: i % 3 for i, g in enumerate(guilds)
            }
            for i, guild in enumerate(guilds):
                handle = await ping(fake, guild, alice)
                cb = await handle.response()  # type: ignore[attr-defined]
                assert handle.delivered_to == [by_shard[i % 3].id]  # type: ignore[attr-defined]
                assert cb.content == f"shard {i % 3}"
            assert {k: len(s.interactions) for k, s in by_shard.items()} == {0: 3, 1: 3, 2: 3}

            seen = len(fake.gateway.dispatched)
            chan = guilds[4].channel_named("general")
            assert chan is not None
            fake.post_message(chan, alice, "in a guild on shard 1")
            fake.post_message(fake.open_dm(alice), alice, "a DM")
            got = [(sid, event) for sid, _, event in fake.gateway.dispatched[seen:]]
            assert got == [(by_shard[1].id, "MESSAGE_CREATE"), (by_shard[0].id, "MESSAGE_CREATE")]


async def test_clients_with_shard_id_split_the_guilds_and_each_interaction_goes_once() -> None:
    async with FakeDiscord() as fake:
        guilds, alice = sharded_world(fake, 6, shards=2)
        first, second = (
            AnsweringClient(shard_id=0, shard_count=2),
            AnsweringClient(shard_id=1, shard_count=2),
        )
        async with run_client(fake, first), run_client(fake, second):
            assert fake.gateway.connected_shards() == [(0, 2), (1, 2)]
            assert {g.id for g in first.guilds} == {g.id for g in guilds[0::2]}
            assert {g.id for g in second.guilds} == {g.id for g in guilds[1::2]}
            handles = [await ping(fake, g, alice) for g in guilds]
            for handle in handles:
                await handle.response()  # type: ignore[attr-defined]
            assert all(len(h.delivered_to) == 1 for h in handles)  # type: ignore[attr-defined]
            assert sorted(first.answered) == sorted(h.id for h in handles[0::2])  # type: ignore[attr-defined]
            assert sorted(second.answered) == sorted(h.id for h in handles[1::2])  # type: ignore[attr-defined]
            assert first.refused == second.refused == []


async def test_two_sessions_on_one_shard_both_get_its_events_and_the_second_answer_is_40060(
    world: World,
) -> None:
    fake = world.fake
    first, second = AnsweringClient(), AnsweringClient()  # no shard: both [0, 1]
    async with run_client(fake, first), run_client(fake, second):
        assert [s.shard for s in fake.gateway.connected_sessions] == [(0, 1), (0, 1)]
        handle = await fake.invoke_command(world.guild, world.channel, world.alice, "ping")
        assert len(handle.delivered_to) == 2
        await handle.wait_for(lambda h: len(h.callbacks) == 2)
        assert [(c.accepted, c.error_code) for c in handle.callbacks] == [
            (True, None),
            (False, 40060),
        ]
        await fake.wait_until(lambda: first.refused or second.refused)
        (refused,) = first.refused + second.refused
        assert refused.status == 400
        assert refused.code == 40060
        assert sorted([first.answered, second.answered]) == [[handle.id], [handle.id]]


async def test_a_shard_over_the_guild_limit_is_closed_4011_sharding_required() -> None:
    async with FakeDiscord(max_guilds_per_shard=2) as fake:
        fake.add_guilds(4, shards=2)
        unsharded = AnsweringClient()
        with pytest.raises(discord.ConnectionClosed) as info:
            async with run_client(fake, unsharded):
                pass
        assert info.value.code == 4011
        assert [(a.shard, a.outcome) for a in fake.identify_log] == [((0, 1), "sharding required")]
        assert fake.gateway.live_sessions == []

        async with run_client(fake, AnsweringShards(shard_count=2)):
            assert sorted(fake.gateway.guild_counts().values()) == [2, 2]


async def test_gateway_bot_recommends_shards_and_counts_down_session_starts() -> None:
    clock = ManualClock()
    limits = {"session_start_total": 3, "session_start_reset_after": 60.0}
    async with FakeDiscord(gateway_clock=clock, **limits) as fake:  # type: ignore[arg-type]
        fake.add_guilds(1001)
        client = AnsweringShards()  # no shard_count: discord.py asks GET /gateway/bot
        async with run_client(fake, client):
            assert client.shard_count == 2  # ceil(1001 / 1000)
            assert fake.gateway.connected_shards() == [(0, 2), (1, 2)]
            assert sum(fake.gateway.guild_counts().values()) == 1001
            shards, url, limit = await client.http.get_bot_gateway()
            assert (shards, url) == (2, fake.gateway_url.rstrip("/"))
            assert limit == {
                "total": 3,
                "remaining": 1,
                "reset_after": 60_000,
                "max_concurrency": 1,
            }
            clock.now += 59.5
            assert (await client.http.get_bot_gateway())[2]["reset_after"] == 500
            clock.now += 0.5
            limit = (await client.http.get_bot_gateway())[2]
            assert (limit["remaining"], limit["reset_after"]) == (3, 60_000)
    async with FakeDiscord(recommended_shards=7) as fake, aiohttp.ClientSession() as http:
        headers = {"Authorization": f"Bot {fake.token}"}
        async with http.get(f"{fake.api_base}/gateway/bot", headers=headers) as resp:
            assert (await resp.json())["shards"] == 7


async def test_identify_past_the_session_start_limit_ends_every_session_and_resets_the_token(
    world: World,
) -> None:
    fake = world.fake
    fake.gateway.sharding.session_start_total = 1
    async with run_client(fake, AnsweringClient()):
        old_token = fake.token
        with pytest.raises(discord.ConnectionClosed) as info:
            async with run_client(fake, AnsweringClient()):
                pass
        assert info.value.code == 4004
        await fake.wait_until(lambda: not fake.gateway.connected_sessions, what="all closed")
        assert [a.outcome for a in fake.identify_log] == ["accepted", "session start limit"]
        assert fake.token != old_token
        async with aiohttp.ClientSession() as http:
            headers = {"Authorization": f"Bot {old_token}"}
            async with http.get(f"{fake.api_base}/users/@me", headers=headers) as resp:
                assert resp.status == 401


class GatedShards(AnsweringShards):
    """Shard k's first IDENTIFY waits until the fake has judged k earlier ones (so the order
    is fixed); every later IDENTIFY (after an op 9) waits for a token of ``tokens``, which the
    test hands out once it has moved the fake's clock (discord.py re-identifies one shard at a
    time)."""

    def __init__(self, fake: FakeDiscord, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.fake = fake
        self.calls: dict[int, int] = {}
        self.tokens = asyncio.Semaphore(0)

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        assert shard_id is not None
        self.calls[shard_id] = self.calls.get(shard_id, 0) + 1
        if self.calls[shard_id] == 1:
            await self.fake.wait_until(lambda: len(self.fake.identify_log) >= shard_id)
        else:
            await self.tokens.acquire()


async def test_identify_rate_is_one_per_bucket_per_window_and_over_it_is_op_9() -> None:
    clock = ManualClock()
    async with FakeDiscord(identify_window=5.0, max_concurrency=2, gateway_clock=clock) as fake:
        fake.add_guilds(8, shards=4)
        client = GatedShards(fake, shard_count=4)
        with pointing_discord_py_at(fake):
            task = asyncio.create_task(client.start(fake.token))
            try:
                await fake.wait_until(lambda: len(fake.identify_log) == 4, what="4 identifies")
                log = [(a.shard[0], a.bucket, a.outcome, a.at) for a in fake.identify_log]
                assert log == [
                    (0, 0, "accepted", 1000.0),
                    (1, 1, "accepted", 1000.0),
                    (2, 0, "rate limited", 1000.0),  # bucket 0 already identified at 1000
                    (3, 1, "rate limited", 1000.0),
                ]
                assert fake.gateway.invalid_session_count == 2
                await fake.wait_until(lambda: client.calls.get(2) == 2, what="shard 2 again")
                clock.now = 1004.9  # still inside bucket 0's window: refused again
                client.tokens.release()
                await fake.wait_until(lambda: len(fake.identify_log) == 5, what="a 5th identify")
                again = fake.identify_log[4]
                assert (again.shard[0], again.outcome, again.at) == (2, "rate limited", 1004.9)
                clock.now = 1005.0  # 5 s after each bucket's identify: both pass
                client.tokens.release()
                client.tokens.release()
                await asyncio.wait_for(client.wait_until_ready(), 10)
                accepted = [(a.shard[0], a.at) for a in fake.identify_log if a.accepted]
                assert sorted(accepted) == [(0, 1000.0), (1, 1000.0), (2, 1005.0), (3, 1005.0)]
                assert fake.gateway.connected_shards() == [(k, 4) for k in range(4)]
            finally:
                await client.close()
                await asyncio.wait({task}, timeout=5)


# --- Discord's API spec as a check on every request (issue 21) ----------------------------------


async def test_a_request_the_spec_refuses_is_flagged_and_fails_the_test(world: World, bot) -> None:
    client, _ = bot
    fake = world.fake
    messages = f"/channels/{world.channel.id}/messages"
    with pytest.raises(pytest.fail.Exception) as failed, failing_on_violations():  # noqa: PT012 (fails as the check closes)
        async with aiohttp.ClientSession() as http:  # raw: a query the spec bounds at 100
            headers = {"Authorization": f"Bot {fake.token}"}
            async with http.get(f"{fake.api_base}{messages}?limit=500", headers=headers):
                pass
        with pytest.raises(discord.HTTPException):  # through discord.py: a 300-char title
            await text_channel(client, world.channel).send(embed=discord.Embed(title="t" * 300))
    report = str(failed.value)
    assert "2 request(s) the Discord API spec refuses" in report
    assert (
        f"GET {messages} (GET /channels/{{channel_id}}/messages): query/limit: "
        "500 is greater than the maximum of 100" in report
    )
    assert (
        f"POST {messages} (POST /channels/{{channel_id}}/messages): body/embeds/0/title:" in report
    )
    assert "[schema: properties/embeds/items/properties/title/maxLength]" in report
    flagged = [(r.method, [v.where for v in r.spec_violations]) for r in fake.requests]
    assert flagged[-2:] == [("GET", ["query/limit"]), ("POST", ["body/embeds/0/title"])]


async def test_requests_the_spec_accepts_pass_the_check(world: World, bot) -> None:
    client, tree = bot
    fake = world.fake
    checked = fake.spec.checked
    with failing_on_violations():
        channel = text_channel(client, world.channel)
        message = await channel.send("hi", embed=discord.Embed(title="t" * 256))
        await message.edit(content="hi again")
        assert [m.id async for m in channel.history(limit=100)] == [message.id]
        await tree.sync()
    assert fake.spec.checked == checked + 4 == len(fake.requests)
    assert all(r.spec_violations == [] for r in fake.requests)


def test_spec_lookup_boolean_queries_and_the_exceptions_are_narrow() -> None:
    spec = api_spec()
    original = spec.operation("PATCH", "/webhooks/1/tok/messages/@original")
    assert original is not None
    assert original.key == "PATCH /webhooks/{webhook_id}/{webhook_token}/messages/@original"
    assert spec.operation("GET", "/no/such/route") is None
    assert [v.where for v in spec.check("GET", "/no/such/route", {}, None, body_read=True)] == [
        "route"
    ]

    def check(query: dict[str, str], body: object) -> list[str]:
        found = spec.check("POST", "/interactions/1/tok/callback", query, body, body_read=True)
        return [v.where for v in found]

    assert check({"with_response": "1"}, {"type": 1}) == []  # True/true/1 as Discord reads them
    assert check({"with_response": "yes"}, {"type": 1}) == ["query/with_response"]
    assert check({"color": "red"}, {"type": 1}) == ["query/color"]

    def channel_option(types: list[int]) -> list[str]:
        option = {"type": 7, "name": "where", "description": "d", "channel_types": types}
        body = [{"name": "post", "description": "d", "options": [option]}]
        found = spec.check("PUT", "/applications/1/commands", {}, body, body_read=True)
        return [v.where for v in found]

    assert channel_option([0, 15, 16]) == []  # GUILD_MEDIA: one of SPEC_EXCEPTIONS
    assert channel_option([0, 99]) == ["body/0/options/0/channel_types/1"]

    def mentions(roles: list[object]) -> list[str]:
        body = {"content": "x", "allowed_mentions": {"roles": roles}}
        return [
            v.where for v in spec.check("POST", "/channels/1/messages", {}, body, body_read=True)
        ]

    assert mentions([123, "456"]) == []  # an integer snowflake: one of SPEC_EXCEPTIONS
    assert mentions(["abc"]) == ["body/allowed_mentions/roles/0"]


async def test_ten_thousand_guilds_over_four_shards_each_arrive_once_on_their_shard() -> None:
    async with FakeDiscord() as fake:
        guilds = fake.add_guilds(10_000, shards=4)
        with pytest.raises(discord.ConnectionClosed) as info:  # 10,000 on one shard: > 2,500
            async with run_client(fake, AnsweringClient()):
                pass
        assert info.value.code == 4011
        client = AnsweringShards(shard_count=4)
        async with run_client(fake, client, ready_timeout=25):
            assert len(client.guilds) == 10_000
            assert sorted(fake.gateway.guild_counts().values()) == [2500] * 4  # the limit: ok
            shard_of = {g.id: g.shard_id for g in client.guilds}
            assert shard_of == {g.id: i % 4 for i, g in enumerate(guilds)}


async def test_buttons_that_break_discords_rules_are_refused(world: World, bot) -> None:
    """A link button (style 5) needs a url and no custom_id, another button a custom_id and
    no url; a label is at most 80 characters; at most 5 action rows. A good link button is
    kept on the message."""
    fake = world.fake
    headers = {"Authorization": f"Bot {fake.token}"}
    url = f"{fake.api_base}/channels/{world.channel.id}/messages"
    link = {"type": 2, "style": 5, "url": "https://discord.com/events/1/2", "label": "Event"}

    def row(button: dict[str, object]) -> dict[str, object]:
        return {"content": "x", "components": [{"type": 1, "components": [button]}]}

    bad = [
        (link | {"custom_id": "c"}, "custom_id"),
        ({k: v for k, v in link.items() if k != "url"}, "url"),
        (link | {"label": "l" * 81}, "label"),
        ({"type": 2, "style": 1, "label": "Go", "url": "https://x.test"}, "custom_id"),
    ]
    with fake.spec.allow_violations():  # the fake's own rules are what is tested here
        async with aiohttp.ClientSession() as session:
            for button, field in bad:
                async with session.post(url, json=row(button), headers=headers) as resp:
                    assert resp.status == 400, button
                    body = await resp.json()
                    assert body["code"] == 50035
                    assert field in body["errors"]["components"]["0"]["components"]["0"]
            six_rows = {"content": "x", "components": [{"type": 1, "components": [link]}] * 6}
            other = world.guild.add_channel("other")  # its own rate limit bucket
            other_url = f"{fake.api_base}/channels/{other.id}/messages"
            async with session.post(other_url, json=six_rows, headers=headers) as resp:
                assert resp.status == 400  # at most 5 action rows
                assert "components" in (await resp.json())["errors"]
            assert fake.bot_messages(world.channel) == []
            async with session.post(url, json=row(link), headers=headers) as resp:
                assert resp.status == 200
    [kept] = fake.bot_messages(world.channel)
    assert kept.components == [{"type": 1, "components": [link]}]
