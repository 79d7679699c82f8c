"""A forum post is made once however its create is interrupted (issue 21), end to end through
discord.py against the fake Discord.

A forum post has no nonce. discord.py must not retry its create after a 5xx
(``bot.posting.once``): Discord may have made the post, and only the bot's own re-run, which
looks up what the interrupted attempt made over REST (the guild's active threads and the
forum's archived ones, never this process's gateway cache), may decide to create again. The
re-run adopts a thread only when the bot started it, under the announcement's title, and no
occurrence recorded it: each rule has a test that fails without it.
"""

from __future__ import annotations

import re
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from tests.bot.test_crash_bot import DEADLINE, HOLD, Harness
from tests.bot.test_delivery import advance, advance_to_retry, deliveries
from tests.bot.test_destinations import schedule
from tests.fakediscord import FakeDiscord
from tests.fakediscord import Permissions as P
from tests.support.processes import Process, procs, until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.bot.conftest import World
    from tests.fakediscord.state import Channel

TITLE = "Nightly build"


def forum_world(world: World) -> Channel:
    world.guild.set_bot_permissions(
        P.VIEW_CHANNEL
        | P.SEND_MESSAGES
        | P.READ_MESSAGE_HISTORY
        | P.MENTION_EVERYONE
        | P.CREATE_PUBLIC_THREADS
    )
    return world.guild.add_forum("releases", tags=["news", "beta"])


def threads_path(forum: Channel) -> str:
    return f"/channels/{forum.id}/threads"


def creates(fake: FakeDiscord, forum: Channel) -> list[Any]:
    """Every forum post create the fake received for ``forum``."""
    return [r for r in fake.requests if r.method == "POST" and r.path == threads_path(forum)]


def bot_posts(fake: FakeDiscord, forum: Channel) -> list[Channel]:
    return [t for t in fake.forum_posts(forum) if t.owner_id == fake.bot_user.id]


def lookups(fake: FakeDiscord) -> list[str]:
    """The thread listings the bot asked for, in order."""
    return [r.path for r in fake.requests if r.method == "GET" and "/threads" in r.path]


@pytest.fixture
def held_thread_creates(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> Callable[[], list[tuple[str, Any]]]:
    """Hold back every THREAD_CREATE the fake's gateway would send (as if the event were
    still on its way): the bot's gateway cache does not know the new posts. Returns what is
    held (the test may let it go with ``release``)."""
    gateway = world.fake.gateway
    real = gateway.dispatch
    held: list[tuple[str, Any]] = []

    def dispatch(event: str, data: Any, *args: Any, **kwargs: Any) -> Any:
        if event == "THREAD_CREATE":
            held.append((event, data))
            return None
        return real(event, data, *args, **kwargs)

    monkeypatch.setattr(gateway, "dispatch", dispatch)
    return lambda: held


async def interrupted_once(
    world: World, crier: Crier, clock: FakeClock, forum: Channel, **fault: Any
) -> int:
    """Schedule a one-off forum post in a minute whose create Discord performs and then
    answers as ``fault`` says; the first attempt ends failed, its row ``sending``. Returns
    the job's id."""
    world.fake.faults.add(
        method="POST", path_regex=re.escape(threads_path(forum)), after_effect=True, **fault
    )
    await schedule(world, forum, when="in 1m", title=TITLE, message="fresh", tags="beta")
    await advance(crier, clock, timedelta(minutes=1))
    [row] = await deliveries(crier)
    assert row["state"] == "sending", row
    return int(row["job"])


async def assert_one_post_recorded(crier: Crier, fake: FakeDiscord, forum: Channel) -> Channel:
    [post] = bot_posts(fake, forum)
    [row] = await deliveries(crier)
    assert (row["state"], row["message_id"], row["attempts"]) == ("sent", post.id, 2), row
    return post


# --- the create is not retried by discord.py; the re-run finds the post over REST --------------


async def test_a_502_after_the_post_was_made_yields_one_post(
    world: World,
    crier: Crier,
    clock: FakeClock,
    held_thread_creates: Callable[[], list[tuple[str, Any]]],
) -> None:
    """Discord made the post and answered 502. discord.py hands the 502 back at once (one
    create, not its own retry), and the job's re-run finds the post among the guild's active
    threads asked of Discord: this process's cache never heard of it (its THREAD_CREATE is
    held back)."""
    forum = forum_world(world)
    fake = world.fake
    job = await interrupted_once(world, crier, clock, forum, status=502)
    assert [r.status for r in creates(fake, forum)] == [502]  # not retried by discord.py
    assert len(bot_posts(fake, forum)) == 1
    [row] = await deliveries(crier)
    assert row["error"] is not None, row
    assert "502" in row["error"], row

    await advance_to_retry(crier, clock, job)

    post = await assert_one_post_recorded(crier, fake, forum)
    assert len(creates(fake, forum)) == 1  # the post found is never made again
    assert f"/guilds/{world.guild.id}/threads/active" in lookups(fake)
    assert [e for e, d in held_thread_creates() if d["id"] == str(post.id)] == ["THREAD_CREATE"]


async def test_a_lost_answer_yields_one_post(
    world: World,
    crier: Crier,
    clock: FakeClock,
    held_thread_creates: Callable[[], list[tuple[str, Any]]],
) -> None:
    """Discord made the post and the connection dropped before its answer."""
    forum = forum_world(world)
    fake = world.fake
    job = await interrupted_once(world, crier, clock, forum, disconnect=True)
    assert len(creates(fake, forum)) == 1

    await advance_to_retry(crier, clock, job)

    await assert_one_post_recorded(crier, fake, forum)
    assert len(creates(fake, forum)) == 1


async def test_a_post_archived_before_the_rerun_is_found_among_the_archived(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """A moderator archived the post between the 502 and the re-run: it is no longer an
    active thread (nor in the gateway cache, which drops archived threads), and the re-run
    finds it among the forum's archived posts."""
    forum = forum_world(world)
    fake = world.fake
    job = await interrupted_once(world, crier, clock, forum, status=502)
    [made] = bot_posts(fake, forum)
    made.archive()

    await advance_to_retry(crier, clock, job)

    assert await assert_one_post_recorded(crier, fake, forum) is made
    assert len(creates(fake, forum)) == 1
    assert f"/channels/{forum.id}/threads/archived/public" in lookups(fake)


async def test_without_read_message_history_the_archived_are_not_listed_and_it_says_so(
    world: World, crier: Crier, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Discord refuses to list a forum's archived posts to a bot without Read Message
    History: the re-run says so and looks among the active ones (where the post is)."""
    forum = forum_world(world)
    forum.set_overwrite(world.guild.bot_member, deny=P.READ_MESSAGE_HISTORY)
    fake = world.fake
    job = await interrupted_once(world, crier, clock, forum, status=502)

    await advance_to_retry(crier, clock, job)

    await assert_one_post_recorded(crier, fake, forum)
    assert len(creates(fake, forum)) == 1
    archived = [
        r.status for r in fake.requests if r.path.endswith(f"{forum.id}/threads/archived/public")
    ]
    assert archived == [403]
    assert "needs Read Message History" in caplog.text


# --- the three rules, with two occurrences -------------------------------------------------------


async def recurring_with_second_interrupted(
    world: World, crier: Crier, clock: FakeClock, forum: Channel
) -> tuple[Channel, int]:
    """A daily forum announcement: the first occurrence posted and recorded, the second's
    create refused with a 502 before Discord made anything (so its re-run must create).
    Returns the first post and the second's job."""
    fake = world.fake
    await schedule(
        world, forum, when="in 1d", repeat="daily", title=TITLE, message="fresh", tags="beta"
    )
    await advance(crier, clock, timedelta(days=1))
    [first] = bot_posts(fake, forum)
    fake.faults.add(method="POST", path_regex=re.escape(threads_path(forum)), status=502)
    await advance(crier, clock, timedelta(days=1))
    rows = await deliveries(crier)
    assert [r["state"] for r in rows] == ["sent", "sending"], rows
    assert bot_posts(fake, forum) == [first]
    return first, int(rows[1]["job"])


async def assert_second_made_its_own_post(
    crier: Crier, fake: FakeDiscord, forum: Channel, first: Channel, decoy: Channel | None
) -> None:
    posts = [t for t in bot_posts(fake, forum) if t is not decoy]
    assert len(posts) == 2, posts
    assert posts[0] is first, posts
    second = posts[1]
    rows = await deliveries(crier)
    assert [(r["state"], r["message_id"]) for r in rows] == [
        ("sent", first.id),
        ("sent", second.id),
    ]


async def test_the_second_occurrence_does_not_adopt_the_first_ones_post(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The first occurrence's post is the bot's, under the same title, and active: only the
    record of the first occurrence keeps the second from taking it as its own."""
    forum = forum_world(world)
    first, job = await recurring_with_second_interrupted(world, crier, clock, forum)

    await advance_to_retry(crier, clock, job)

    await assert_second_made_its_own_post(crier, world.fake, forum, first, None)
    assert len(creates(world.fake, forum)) == 3  # the first, the refused one, the re-run's


async def test_a_thread_someone_else_started_under_the_title_is_not_adopted(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    forum = forum_world(world)
    first, job = await recurring_with_second_interrupted(world, crier, clock, forum)
    decoy = world.guild.add_thread(forum, TITLE, owner=world.admin)

    await advance_to_retry(crier, clock, job)

    await assert_second_made_its_own_post(crier, world.fake, forum, first, decoy)


async def test_a_thread_the_bot_started_under_another_title_is_not_adopted(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    forum = forum_world(world)
    first, job = await recurring_with_second_interrupted(world, crier, clock, forum)
    decoy = world.guild.add_thread(forum, "Weekly digest", owner=world.fake.bot_user)

    await advance_to_retry(crier, clock, job)

    await assert_second_made_its_own_post(crier, world.fake, forum, first, decoy)


# --- a real process killed while the answer is on its way ---------------------------------------


@pytest.fixture
async def bots() -> AsyncIterator[list[Process]]:
    async with procs() as started:
        yield started


async def test_answer_lost_to_a_sigkill_then_the_post_archived_makes_one_post(
    world: World, tmp_path: Path, bots: list[Process]
) -> None:
    """Discord made the post; its answer is held back (then the connection is dropped) and
    the bot process is killed with SIGKILL meanwhile. A moderator archives the post before
    the bot is back: the restarted bot's gateway cache (the guild's active threads) does not
    have it, and its re-run finds it among the forum's archived posts over REST."""
    forum = forum_world(world)
    h = Harness(world, tmp_path, bots)
    fake = h.fake
    fake.faults.add(
        method="POST",
        path_regex=re.escape(threads_path(forum)),
        after_effect=True,
        delay=HOLD,
        disconnect=True,
    )
    first = await h.start_bot()
    text = await h.command(
        "schedule", when=str(int(time.time()) + 2), message="Once", title="Launch",
        channel=forum, tags="news",
    )  # fmt: skip
    assert "Scheduled announcement" in text, text
    await until(lambda: bool(bot_posts(fake, forum)), DEADLINE, "the forum post to be made")
    [row] = h.deliveries()
    assert (row["state"], row["thread_id"]) == ("sending", None)
    await h.kill(first)
    [made] = bot_posts(fake, forum)
    made.archive()

    await h.start_bot()
    rows = await h.until_delivery(
        lambda r: r[0]["state"] == "sent" and r[0]["job_state"] == "success", "the re-run"
    )
    assert bot_posts(fake, forum) == [made]
    [row] = rows
    assert (row["thread_id"], row["message_id"], row["attempts"]) == (made.id, made.id, 2)
    assert len(creates(fake, forum)) == 1
