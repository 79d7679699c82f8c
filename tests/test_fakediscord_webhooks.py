"""The fake Discord's channel webhooks, driven through the real discord.py client (nothing
mocked), against Discord's documented behaviour: create (with an avatar), list, execute with
``wait`` (in a thread, as a new forum post), edit and delete the message; a deleted webhook
is 404 10015; the 16th webhook of a channel is 400 30007; without Manage Webhooks 403 50013;
a 502 answered after the execute made the message. Every request is checked against
Discord's OpenAPI spec (the suite's conftest)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import aiohttp
import discord
import pytest

from tests.fakediscord import FakeDiscord, Guild, run_client
from tests.fakediscord import Permissions as P
from tests.fakediscord.webhooks import MAX_WEBHOOKS_PER_CHANNEL

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.fakediscord.state import Channel

pytestmark = pytest.mark.timeout(30)

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as f:
        yield f


@pytest.fixture
def guild(fake: FakeDiscord) -> Guild:
    made = fake.add_guild(
        name="Hooks", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MANAGE_WEBHOOKS
    )
    for name in ("news", "text", "full", "closed"):
        made.add_channel(name)
    made.add_thread(made.channel_named("text"), "ongoing", archived=True)
    made.add_forum("releases", tags=["news"])
    return made


@pytest.fixture
async def client(fake: FakeDiscord, guild: Guild) -> AsyncIterator[discord.Client]:
    made = discord.Client(intents=discord.Intents.default(), guild_ready_timeout=0.05)
    async with run_client(fake, made):
        yield made


def text_channel(client: discord.Client, channel: Channel) -> discord.TextChannel:
    found = client.get_channel(channel.id)
    assert isinstance(found, discord.TextChannel)
    return found


async def test_a_webhook_posts_under_its_name_and_edits_its_own_message(
    fake: FakeDiscord, guild: Guild, client: discord.Client
) -> None:
    news = guild.channel_named("news")
    channel = text_channel(client, news)
    made = await channel.create_webhook(name="Town hall", avatar=PNG)
    [hook] = fake.webhooks.of(news)
    assert (made.id, made.token, hook.avatar_data) == (hook.id, hook.token, PNG)
    assert [w.id for w in await channel.webhooks()] == [hook.id]

    sent = await made.send("Doors open at six", username="The Club", wait=True)
    [msg] = fake.webhooks.messages_by(hook)
    assert (sent.id, msg.content, msg.author.username) == (msg.id, "Doors open at six", "The Club")
    assert (msg.author.id, msg.webhook_id, msg.nonce) == (hook.id, hook.id, None)
    assert msg.application_id == fake.application_id

    await made.edit_message(msg.id, content="Doors open at seven")
    assert (msg.content, msg.edit_count) == ("Doors open at seven", 1)
    # The bot's own message route may not edit it: it is the webhook's.
    with pytest.raises(discord.Forbidden) as refused:
        await channel.get_partial_message(msg.id).edit(content="no")
    assert refused.value.code == 50005


async def test_threads_and_forum_posts(
    fake: FakeDiscord, guild: Guild, client: discord.Client
) -> None:
    text = guild.channel_named("text")
    thread = guild.thread_named("ongoing")
    forum = guild.channel_named("releases")
    to_text = await text_channel(client, text).create_webhook(name="Hook")
    found = client.get_channel(forum.id) or await client.fetch_channel(forum.id)
    assert isinstance(found, discord.ForumChannel)
    to_forum = await found.create_webhook(name="Hook")

    in_thread = await to_text.send("in the thread", thread=discord.Object(thread.id), wait=True)
    assert (in_thread.channel.id, thread.archived) == (thread.id, False)  # unarchived
    with pytest.raises(discord.HTTPException) as refused:
        await to_forum.send("no thread name", wait=True)
    assert refused.value.code == 220001
    tag = found.available_tags[0]
    post = await to_forum.send("v2 is out", thread_name="Release", applied_tags=[tag], wait=True)
    [made] = fake.forum_posts(forum)
    assert (made.name, made.owner_id, made.applied_tags) == ("Release", to_forum.id, [tag.id])
    assert post.id == made.id == post.channel.id
    await to_forum.edit_message(post.id, content="v2.1 is out", thread=discord.Object(made.id))
    assert fake.get_message(made.id).content == "v2.1 is out"


async def test_a_deleted_webhook_is_unknown(
    fake: FakeDiscord, guild: Guild, client: discord.Client
) -> None:
    news = guild.channel_named("news")
    made = await text_channel(client, news).create_webhook(name="Hook")
    [hook] = fake.webhooks.of(news)
    fake.webhooks.delete(hook)
    with pytest.raises(discord.NotFound) as gone:
        await made.send("anyone?", wait=True)
    assert gone.value.code == 10015
    assert fake.webhooks.of(news) == []


async def test_fifteen_per_channel_and_manage_webhooks(
    fake: FakeDiscord, guild: Guild, client: discord.Client
) -> None:
    full = guild.channel_named("full")
    for i in range(MAX_WEBHOOKS_PER_CHANNEL):
        fake.webhooks.add(full, f"theirs {i}", owner=guild.owner)
    with pytest.raises(discord.HTTPException) as refused:
        await text_channel(client, full).create_webhook(name="Hook")
    assert (refused.value.status, refused.value.code) == (400, 30007)

    closed = guild.channel_named("closed")
    closed.set_overwrite(guild.bot_member, deny=P.MANAGE_WEBHOOKS)
    with pytest.raises(discord.Forbidden) as forbidden:
        await text_channel(client, closed).create_webhook(name="Hook")
    assert forbidden.value.code == 50013
    with pytest.raises(discord.Forbidden):
        await text_channel(client, closed).webhooks()


async def test_a_502_after_the_execute_made_the_message(
    fake: FakeDiscord, guild: Guild, client: discord.Client
) -> None:
    """Discord made the message, then answered 502: one message, and the answer a 502."""
    news = guild.channel_named("news")
    made = await text_channel(client, news).create_webhook(name="Hook")
    fake.faults.add(method="POST", path_regex=r"/webhooks/\d+/[^/]+", after_effect=True, status=502)
    url = f"{fake.api_base}/webhooks/{made.id}/{made.token}?wait=true"
    async with aiohttp.ClientSession() as session, session.post(url, json={"content": "x"}) as r:
        assert r.status == 502
    [hook] = fake.webhooks.of(news)
    assert [m.content for m in fake.webhooks.messages_by(hook)] == ["x"]
    assert re.fullmatch(r"/webhooks/\d+/[^/]+", fake.requests[-1].path)


async def test_components_need_with_components(
    fake: FakeDiscord, guild: Guild, client: discord.Client
) -> None:
    news = guild.channel_named("news")
    made = await text_channel(client, news).create_webhook(name="Hook")
    [hook] = fake.webhooks.of(news)
    row = {"type": 1, "components": [{"type": 2, "style": 2, "label": "Hi", "custom_id": "x"}]}
    base = f"{fake.api_base}/webhooks/{made.id}/{made.token}?wait=true"
    async with aiohttp.ClientSession() as session:
        for query in ("", "&with_components=true"):
            body = {"content": "x", "components": [row]}
            async with session.post(base + query, json=body) as r:
                assert r.status == 200
    assert [len(m.components) for m in fake.webhooks.messages_by(hook)] == [0, 1]
