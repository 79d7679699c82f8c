"""Every destination and file end to end through discord.py against the fake Discord:
images kept as bytes, threads, forum posts, announcement channels and their publish step.

Due times follow a FakeClock; each outcome is read back from the fake (messages, posts,
crossposts, requests) and from the bot's own tables.
"""

from __future__ import annotations

import re
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.announcements import PUBLISH_FN
from tests.bot.conftest import CrierFactory, World, db_snapshot, run_command
from tests.bot.test_commands import any_db_crier  # noqa: F401  (a fixture used here)
from tests.bot.test_crash_bot import DEADLINE, HOLD, Harness
from tests.bot.test_delivery import advance, idle
from tests.fakediscord import Permissions as P
from tests.fakediscord.interactions import CB_AUTOCOMPLETE_RESULT, CB_CHANNEL_MESSAGE
from tests.support.processes import Process, procs, until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from bot.app import Crier
    from scheduler import Job
    from scheduler.testing import FakeClock
    from tests.fakediscord.state import Channel

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


async def schedule(world: World, channel: Channel, **options: Any) -> int:
    cb = await run_command(world, "schedule", channel=channel, **options)
    found = re.search(r"Scheduled announcement \*\*#(\d+)\*\*", cb.content or "")
    assert found is not None, cb.content
    return int(found[1])


async def refused(world: World, crier: Crier, says: str, **options: Any) -> str:
    """``/schedule`` that must be refused: ephemeral, says ``says``, nothing written."""
    before = await db_snapshot(crier)
    cb = await run_command(world, "schedule", **options)
    assert cb.type == CB_CHANNEL_MESSAGE
    assert cb.ephemeral
    assert says in (cb.content or ""), cb.content
    assert await db_snapshot(crier) == before
    return cb.content or ""


async def rows(crier: Crier, sql: str, *params: Any) -> list[dict[str, Any]]:
    async with crier.sched.reader() as db:
        cur = await db.execute(sql, params)
        return [dict(r) for r in await cur.fetchall()]


# --- images and files ---------------------------------------------------------------------------


async def test_an_image_is_downloaded_once_and_posted_after_its_url_expired(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    upload = world.fake.make_attachment("cat.png", PNG)
    await schedule(world, world.news, when="in 1h", repeat="hourly", message="cats", image=upload)
    assert upload.fetch_count == 1
    upload.stop_serving(status=404)  # Discord's signed URL expired
    await advance(crier, clock, timedelta(hours=1))
    await advance(crier, clock, timedelta(hours=1))
    posts = world.fake.bot_messages(world.news)
    assert [(p.content, p.files) for p in posts] == [("cats", {"cat.png": PNG})] * 2
    assert upload.fetch_count == 1
    [kept] = await rows(crier, "SELECT filename, size FROM bot_attachments")
    assert kept == {"filename": "cat.png", "size": len(PNG)}


async def test_the_bytes_and_the_rich_options_are_kept_on_every_database(
    world: World,
    any_db_crier: Crier,  # noqa: F811  (the fixture imported above)
    clock: FakeClock,
) -> None:
    crier = any_db_crier
    news = announcement_channel(world)
    upload = world.fake.make_attachment("cat.png", PNG)
    local = await schedule(
        world, news, when="in 1m", title="T", message="m", image=upload, silent=True
    )
    a = await crier.bot.announcements.get(world.guild.id, local)
    assert (a.rich.title, a.rich.silent, a.rich.destination, a.rich.publish) == (
        "T", True, "announcement", True,
    )  # fmt: skip
    await advance(crier, clock, timedelta(minutes=1))
    [post] = world.fake.bot_messages(news)
    assert post.files == {"cat.png": PNG}
    assert post.silent
    assert post.crossposted
    [row] = await rows(crier, "SELECT publish_state, message_id FROM bot_deliveries")
    assert row == {"publish_state": "published", "message_id": post.id}


async def test_an_image_under_a_title_is_shown_in_the_embed(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    upload = world.fake.make_attachment("chart.png", PNG)
    await schedule(world, world.news, when="in 1m", title="Chart", message="up", image=upload)
    await advance(crier, clock, timedelta(minutes=1))
    [post] = world.fake.bot_messages(world.news)
    [attachment] = post.attachments
    [embed] = post.embeds
    assert embed["image"]["url"] == attachment.url
    assert attachment.data == PNG


async def test_a_file_over_the_limits_is_refused_and_nothing_is_written(
    world: World, crier_factory: CrierFactory
) -> None:
    crier = await crier_factory(file_max_bytes=2000.0, guild_files_max_bytes=3000.0)
    big = world.fake.make_attachment("big.png", b"x" * 2001)
    await refused(
        world,
        crier,
        "That file is 0.0 MiB; an announcement's file may be at most 0.0 MiB.",
        when="in 1h",
        message="m",
        image=big,
        channel=world.news,
    )
    assert big.fetch_count == 0  # refused by its announced size, before any download
    await schedule(
        world,
        world.news,
        when="in 1h",
        message="m",
        image=world.fake.make_attachment("a.png", b"a" * 2000),
    )
    text = await refused(
        world,
        crier,
        "This server's announcements and templates already keep",
        when="in 1h",
        message="m",
        image=world.fake.make_attachment("b.png", b"b" * 1500),
        channel=world.news,
    )
    assert "the server's limit of 0.0 MiB" in text


async def test_an_image_needs_attach_files(world: World, crier: Crier) -> None:
    world.news.set_overwrite(world.guild.bot_role, deny=P.ATTACH_FILES)
    await refused(
        world,
        crier,
        f"I need **Attach Files** in <#{world.news.id}> to post there.",
        when="in 1h",
        message="m",
        image=world.fake.make_attachment("a.png", PNG),
        channel=world.news,
    )


async def test_an_edit_replaces_the_posted_file(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(
        world,
        world.news,
        when="in 1m",
        message="v1",
        image=world.fake.make_attachment("one.png", PNG),
    )
    await advance(crier, clock, timedelta(minutes=1))
    [post] = world.fake.bot_messages(world.news)
    cb = await run_command(
        world, "edit", id=local, image=world.fake.make_attachment("two.png", b"2" * 10)
    )
    assert "**File:** now two.png" in (cb.content or ""), cb.content
    await idle(crier)
    assert world.fake.bot_messages(world.news) == [post]
    assert post.files == {"two.png": b"2" * 10}


async def test_an_edit_of_the_text_keeps_the_file(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """/edit without ``image`` keeps the file: the posted message is edited with it still
    attached, and the next post carries it."""
    local = await schedule(
        world,
        world.news,
        when="in 1m",
        repeat="hourly",
        message="v1",
        image=world.fake.make_attachment("one.png", PNG),
    )
    await advance(crier, clock, timedelta(minutes=1))
    [post] = world.fake.bot_messages(world.news)
    cb = await run_command(world, "edit", id=local, message="v2")
    assert "File" not in (cb.content or ""), cb.content
    await idle(crier)
    assert (post.content, post.files) == ("v2", {"one.png": PNG})
    await advance(crier, clock, timedelta(hours=1))
    assert [(m.content, m.files) for m in world.fake.bot_messages(world.news)][-1] == (
        "v2",
        {"one.png": PNG},
    )


# --- threads ------------------------------------------------------------------------------------


async def test_a_thread_gets_the_post_and_an_archived_one_is_reopened(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    thread = world.guild.add_thread(world.news, "weekly")
    await schedule(world, thread, when="in 1h", repeat="hourly", message="in the thread")
    await advance(crier, clock, timedelta(hours=1))
    thread.archive()
    await advance(crier, clock, timedelta(hours=1))
    assert [m.content for m in world.fake.bot_messages(thread)] == ["in the thread"] * 2
    assert not thread.archived
    assert world.fake.bot_messages(world.news) == []


async def test_an_archived_thread_can_be_picked(world: World, crier: Crier) -> None:
    thread = world.guild.add_thread(world.news, "old", archived=True)
    await schedule(world, thread, when="in 1h", message="m")


async def test_a_locked_thread_is_refused_and_a_thread_locked_later_fails_reported(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    locked = world.guild.add_thread(world.news, "locked", locked=True)
    await refused(
        world,
        crier,
        f"<#{locked.id}> is locked: nothing new can be posted in it.",
        when="in 1h",
        message="m",
        channel=locked,
    )
    later = world.guild.add_thread(world.news, "later")
    local = await schedule(world, later, when="in 1h", message="m")
    later.lock(True)
    await advance(crier, clock, timedelta(hours=1))
    assert world.fake.bot_messages(later) == []
    a = await crier.bot.announcements.get(world.guild.id, local)
    assert (a.state, a.failure) == ("failed", "Thread locked: nothing can be posted in it (160005)")


async def test_a_thread_needs_send_messages_in_threads(world: World, crier: Crier) -> None:
    thread = world.guild.add_thread(world.news, "t")
    world.news.set_overwrite(world.guild.bot_role, deny=P.SEND_MESSAGES_IN_THREADS)
    await refused(
        world,
        crier,
        f"I need **Send Messages in Threads** in <#{thread.id}>",
        when="in 1h",
        message="m",
        channel=thread,
    )


# --- forums -------------------------------------------------------------------------------------


def forum_world(world: World, *, require_tag: bool = False) -> Channel:
    world.guild.set_bot_permissions(
        P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.CREATE_PUBLIC_THREADS
    )
    return world.guild.add_forum("releases", tags=["news", "beta"], require_tag=require_tag)


async def test_each_occurrence_is_a_new_forum_post_with_its_title_and_tags(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    forum = forum_world(world)
    await schedule(
        world,
        forum,
        when="in 1d",
        repeat="daily",
        title="Nightly build",
        message="fresh",
        tags="beta",
    )
    await advance(crier, clock, timedelta(days=1))
    await advance(crier, clock, timedelta(days=1))
    posts = world.fake.forum_posts(forum)
    assert [(t.name, t.applied_tags) for t in posts] == [
        ("Nightly build", [forum.tag_named("beta").id])
    ] * 2
    starters = [world.fake.get_message(t.id) for t in posts]
    assert [(m.content, [e["title"] for e in m.embeds]) for m in starters if m] == [
        ("", ["Nightly build"])
    ] * 2
    recorded = await rows(crier, "SELECT thread_id, message_id FROM bot_deliveries")
    assert recorded == [{"thread_id": t.id, "message_id": t.id} for t in posts]


async def test_an_edit_of_a_forum_post_updates_its_first_message(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    forum = forum_world(world)
    local = await schedule(world, forum, when="in 1m", title="Draft", message="v1")
    await advance(crier, clock, timedelta(minutes=1))
    [thread] = world.fake.forum_posts(forum)
    cb = await run_command(world, "edit", id=local, title="Final", message="v2")
    assert "is being edited in place" in (cb.content or ""), cb.content
    await idle(crier)
    assert world.fake.forum_posts(forum) == [thread]  # never a second post
    starter = world.fake.get_message(thread.id)
    assert starter is not None
    assert [(e["title"], e["description"]) for e in starter.embeds] == [("Final", "v2")]
    assert thread.name == "Draft"  # the post keeps the name it was made with


async def test_a_forum_post_needs_a_title_and_a_required_tag(world: World, crier: Crier) -> None:
    forum = forum_world(world, require_tag=True)
    await refused(
        world, crier, "each post needs a `title`", when="in 1h", message="m", channel=forum
    )
    await refused(
        world,
        crier,
        "requires a tag on every post",
        when="in 1h",
        message="m",
        title="T",
        channel=forum,
    )
    await refused(
        world, crier, "has no tag `gamma`", when="in 1h", message="m", title="T", channel=forum,
        tags="gamma",
    )  # fmt: skip
    await refused(
        world, crier, "a forum post's name may have at most 100", when="in 1h", message="m",
        title="t" * 101, channel=forum, tags="news",
    )  # fmt: skip
    await schedule(world, forum, when="in 1h", message="m", title="T", tags="News, beta")


@pytest.fixture
async def bots() -> AsyncIterator[list[Process]]:
    async with procs() as started:
        yield started


@pytest.mark.parametrize("created", [False, True], ids=["before-the-post", "after-the-post"])
async def test_kill_mid_forum_post_makes_one_post(
    world: World, tmp_path: Path, bots: list[Process], created: bool
) -> None:
    """SIGKILL while Discord holds the forum post's request, before it made the post (the
    request reached its edge only) or after (the response is what is held back): the
    restarted bot's re-run finds the post it made, or makes it, and there is one post."""
    forum = forum_world(world)
    h = Harness(world, tmp_path, bots)
    fake = h.fake
    path = re.escape(f"/channels/{forum.id}/threads")
    if created:
        fake.faults.add(method="POST", path_regex=path, after_effect=True, delay=HOLD)
    else:
        fake.faults.add(method="POST", path_regex=path, delay=HOLD, disconnect=True)
    first = await h.start_bot()
    text = await h.command(
        "schedule", when=str(int(time.time()) + 2), message="Once", title="Launch",
        channel=forum, tags="news",
    )  # fmt: skip
    assert "Scheduled announcement" in text, text

    def posts() -> list[Any]:
        return [r for r in fake.requests if r.method == "POST" and r.path.endswith(path[-8:])]

    await until(lambda: bool(posts()), DEADLINE, "the forum post's request to arrive")
    assert len(fake.forum_posts(forum)) == (1 if created else 0)
    [row] = h.deliveries()
    assert (row["state"], row["thread_id"]) == ("sending", None)  # the intent, recorded first
    await h.kill(first)

    await h.start_bot()
    rows = await h.until_delivery(
        lambda r: r[0]["state"] == "sent" and r[0]["job_state"] == "success", "the re-run"
    )
    [thread] = fake.forum_posts(forum)
    assert (thread.name, thread.applied_tags) == ("Launch", [forum.tag_named("news").id])
    [row] = rows
    assert (row["thread_id"], row["message_id"], row["attempts"]) == (thread.id, thread.id, 2)
    assert len(posts()) == (1 if created else 2)  # a post found is never made again


async def test_tags_are_autocompleted_from_the_forum(world: World, crier: Crier) -> None:
    forum = forum_world(world)
    h = await world.fake.invoke_autocomplete(
        world.guild, world.general, world.admin, "schedule",
        {"channel": forum, "when": "in 1h", "tags": "news, b"}, focused="tags",
    )  # fmt: skip
    cb = await h.response(timeout=5)
    assert cb.type == CB_AUTOCOMPLETE_RESULT
    assert [c["value"] for c in cb.choices] == ["news, beta"]


async def test_tags_are_for_forums_only(world: World, crier: Crier) -> None:
    await refused(
        world, crier, "only forum posts have tags", when="in 1h", message="m", tags="x",
        channel=world.news,
    )  # fmt: skip


# --- announcement channels and publishing -------------------------------------------------------


def announcement_channel(world: World, *, publishes: int = 10, per: float = 1.0) -> Channel:
    """An announcement channel whose publish bucket allows ``publishes`` per ``per`` seconds.

    Tests not about the hourly limit use a short window: once discord.py (with
    ``max_ratelimit_timeout``) has seen a bucket that resets further away than that timeout,
    it refuses every call on it locally until then, and the fake's windows run in real time
    while the test's clock is a FakeClock."""
    world.fake.ratelimits.set_bucket("crosspost", publishes, per)
    return world.guild.add_announcement_channel("updates")


async def test_a_post_in_an_announcement_channel_is_published(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    news = announcement_channel(world)
    await schedule(world, news, when="in 1h", repeat="hourly", message="to followers")
    await schedule(world, news, when="in 1h", message="just here", publish=False)
    await advance(crier, clock, timedelta(hours=1))
    await advance(crier, clock, timedelta(hours=1))
    published = [m for m in world.fake.bot_messages(news) if m.crossposted]
    assert [m.content for m in published] == ["to followers"] * 2
    assert world.fake.crossposts.crossposted == [m.id for m in published]
    states = await rows(
        crier,
        "SELECT publish_state FROM bot_deliveries ORDER BY fire_ts, announcement_id",
    )
    assert [r["publish_state"] for r in states] == ["published", None, "published"]
    cb = await run_command(world, "list")
    assert "published" in (cb.content or "")


async def test_publish_is_refused_outside_announcement_channels(world: World, crier: Crier) -> None:
    await refused(
        world, crier, "is not an announcement channel", when="in 1h", message="m",
        publish=True, channel=world.news,
    )  # fmt: skip


async def test_already_crossposted_counts_as_published(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    news = announcement_channel(world)
    world.fake.faults.add(method="POST", path_regex=r".*/crosspost", status=400, code=40033)
    await schedule(world, news, when="in 1m", message="m")
    await advance(crier, clock, timedelta(minutes=1))
    [row] = await rows(crier, "SELECT publish_state, publish_error FROM bot_deliveries")
    assert row == {"publish_state": "published", "publish_error": None}


async def publish_held_back(world: World, crier: Crier, clock: FakeClock) -> tuple[Channel, Job]:
    """A post in an announcement channel whose publish met a 429 asking for 120 s: the
    channel, and the publish job waiting for the limit to lift."""
    news = announcement_channel(world)
    world.fake.faults.add(method="POST", path_regex=r".*/crosspost", status=429, retry_after=120)
    await schedule(world, news, when="in 1m", message="m")
    await advance(crier, clock, timedelta(minutes=1))
    [waiting] = await crier.sched.list_jobs(state="pending", fn=PUBLISH_FN)
    return news, waiting


async def test_a_publish_rate_limited_waits_as_a_job_and_is_published_late(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    news, waiting = await publish_held_back(world, crier, clock)
    [row] = await rows(crier, "SELECT publish_state FROM bot_deliveries")
    assert row["publish_state"] == "pending"
    assert waiting.next_at >= clock.now() + timedelta(seconds=119)
    await advance(crier, clock, timedelta(minutes=3))
    [row] = await rows(crier, "SELECT publish_state FROM bot_deliveries")
    assert row["publish_state"] == "published_late"
    [post] = world.fake.bot_messages(news)
    assert post.crossposted
    cb = await run_command(world, "info", id=1)
    assert "published late" in (cb.content or ""), cb.content


async def test_the_publish_limit_exhausted_never_holds_up_deliveries(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Two publishes an hour in #updates: the posts after that wait for their publish as
    scheduled jobs of their own, while every post (there and in #general) goes out on time."""
    news = announcement_channel(world, publishes=2, per=3600)
    await schedule(world, news, when="in 1m", repeat="every 1 minute", message="tick")
    await schedule(world, world.general, when="in 1m", repeat="every 1 minute", message="tock")
    for _ in range(4):
        await advance(crier, clock, timedelta(minutes=1))
    posted = world.fake.bot_messages(news)
    assert [m.content for m in posted] == ["tick"] * 4
    assert [m.content for m in world.fake.bot_messages(world.general)] == ["tock"] * 4
    published = world.fake.crossposts.crossposted
    assert 1 <= len(published) <= 2
    assert published == [m.id for m in posted[: len(published)]]
    states = await rows(
        crier,
        "SELECT d.publish_state, d.late_by FROM bot_deliveries d "
        "JOIN bot_announcements a ON a.id = d.announcement_id WHERE a.channel_id = ? "
        "ORDER BY d.fire_ts",
        news.id,
    )
    assert [r["publish_state"] for r in states] == ["published"] * len(published) + ["pending"] * (
        4 - len(published)
    )
    assert all(r["late_by"] < 1 for r in states)  # every post went out on time
    waiting = await crier.sched.list_jobs(state="pending", fn=PUBLISH_FN)
    assert len(waiting) == 4 - len(published)
    assert all(j.next_at > clock.now() for j in waiting)
    cb = await run_command(world, "list")
    assert "publishing (waiting for the channel's publish limit)" in (cb.content or "")


async def test_a_queue_of_publishes_goes_out_one_per_slot_and_waits_unclaimed(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    """Discord allows about 10 publishes an hour per channel (the fake's hourly crosspost
    bucket). Three posts due at once in #updates all go out on time; their publish jobs
    carry the channel's publish pace, so the scheduler starts one per 360 s slot, each
    waiting pending and never claimed until then, and each is published in its slot: no
    429, and no refusal by discord.py's limiter (which, with ``max_ratelimit_timeout``,
    refuses any call on a bucket that resets more than 30 s away, as this one does)."""
    crier = await crier_factory(publish_spacing=360.0)
    news = announcement_channel(world, publishes=10, per=3600)
    for i in range(3):
        await schedule(world, news, when="in 1m", message=f"post {i}")
    await advance(crier, clock, timedelta(minutes=1))
    posted = world.fake.bot_messages(news)
    assert [m.content for m in posted] == ["post 0", "post 1", "post 2"]
    ids = [m.id for m in posted]

    async def started() -> list[int]:
        """Each publish job's run count, in due order (a rate-limited one would add more)."""
        jobs = sorted(await crier.sched.list_jobs(fn=PUBLISH_FN), key=lambda j: j.id)
        return [j.run_count for j in jobs]

    assert await started() == [1, 0, 0]
    assert world.fake.crossposts.crossposted == ids[:1]
    await advance(crier, clock, 359)  # the channel's next slot opens 360 s after the first
    assert await started() == [1, 0, 0]
    await advance(crier, clock, 1)
    assert await started() == [1, 1, 0]
    assert world.fake.crossposts.crossposted == ids[:2]
    await advance(crier, clock, 359)
    assert await started() == [1, 1, 0]
    await advance(crier, clock, 1)
    assert await started() == [1, 1, 1]
    assert world.fake.crossposts.crossposted == ids

    crossposts = [r for r in world.fake.requests if r.path.endswith("/crosspost")]
    assert [r.status for r in crossposts] == [200, 200, 200]
    assert world.fake.count_429 == 0
    states = await rows(crier, "SELECT publish_state FROM bot_deliveries ORDER BY announcement_id")
    assert [r["publish_state"] for r in states] == ["published"] + ["published_late"] * 2


async def test_a_bot_that_cannot_see_the_channel_anymore_does_not_publish(
    world: World, crier: Crier, clock: FakeClock, tmp_path: Path
) -> None:
    news = announcement_channel(world)
    world.fake.faults.add(method="POST", path_regex=r".*/crosspost", status=403, code=50001)
    await schedule(world, news, when="in 1m", message="m")
    await advance(crier, clock, timedelta(minutes=1))
    [row] = await rows(crier, "SELECT publish_state, publish_error FROM bot_deliveries")
    assert row["publish_state"] == "failed"
    assert row["publish_error"] == "Missing Access: the bot cannot see the channel (50001)"
    cb = await run_command(world, "list")
    assert "not published: Missing Access" in (cb.content or "")


@pytest.mark.parametrize("destination", ["text", "announcement", "thread", "forum"])
async def test_the_mention_guard_holds_everywhere(
    world: World, crier: Crier, clock: FakeClock, destination: str
) -> None:
    """@everyone typed by a member who may not ping it shows but pings no one."""
    forum = forum_world(world)
    where = {
        "text": world.news,
        "announcement": announcement_channel(world),
        "thread": world.guild.add_thread(world.news, "t"),
        "forum": forum,
    }[destination]
    world.guild.everyone_role.edit(
        permissions=world.guild.everyone_role.permissions & ~P.MENTION_EVERYONE
    )
    extra = {"title": "T"} if destination == "forum" else {}
    await schedule(world, where, when="in 1m", message="@everyone hi", **extra)
    await advance(crier, clock, timedelta(minutes=1))
    if destination == "forum":
        [thread] = world.fake.forum_posts(forum)
        post = world.fake.get_message(thread.id)
    else:
        [post] = world.fake.bot_messages(where)
    assert post is not None
    assert not post.pings.anything


async def test_another_servers_channel_or_thread_is_not_found(
    world: World, other: World, crier: Crier
) -> None:
    thread = other.guild.add_thread(other.news, "theirs", archived=True)
    for where in (other.news, thread):
        await refused(
            world, crier, "I can't find that channel in this server.", when="in 1h",
            message="m", channel=where,
        )  # fmt: skip
