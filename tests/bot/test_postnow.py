"""/postnow and /test (issue 35, item 4), end to end through the real discord.py client
against the fake Discord, on a FakeClock: /postnow posts the next occurrence's text now as
an extra post, once per use of the command (two sessions receiving it, a 502 after the post
was made), the schedule unchanged; /test sends the manager by DM exactly what the next post
will be (text, embed, files, buttons), and answers closed DMs clearly."""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING

import pytest

from bot.announcements import extra_nonce
from bot.commands.posting import preview_nonce
from tests.bot.conftest import NOW, World, run_command
from tests.bot.conftest import schedule_id as schedule
from tests.bot.test_delivery import advance, advance_to, advance_to_retry, posts
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.bot.conftest import CrierFactory
    from tests.fakediscord.state import Message

NINE = datetime(2030, 3, 2, 9, 0, tzinfo=NOW.tzinfo)
"""The first post of the daily announcement these tests make (tomorrow 09:00 UTC)."""
PNG = b"\x89PNG\r\n\x1a\n" + b"p" * 300


async def daily(world: World, **options: object) -> int:
    return await schedule(world, repeat="daily at 09:00", message="Standup {date}", **options)


async def extra_rows(crier: Crier) -> list[tuple[str, int | None]]:
    async with crier.sched.reader() as db:
        cur = await db.execute("SELECT state, message_id FROM bot_extra_posts ORDER BY id")
        return [(r["state"], r["message_id"]) for r in await cur.fetchall()]


async def postnow(world: World, n: int) -> tuple[str, int]:
    """/postnow id:n by the admin: its answer and the interaction's id."""
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "postnow", {"id": n}
    )
    return (await h.response(timeout=5)).content or "", h.id


async def test_postnow_posts_the_next_post_now_and_the_schedule_stays(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await daily(world)
    answer, interaction_id = await postnow(world, n)
    assert "is being posted in" in answer, answer
    assert f"<t:{int(NINE.timestamp())}:F>" in answer
    await advance(crier, clock, 1)
    [extra] = posts(world, world.news)
    assert extra.content == "Standup 2 March 2030"  # the next occurrence's text, now
    assert extra.nonce == extra_nonce(f"interaction:{interaction_id}")
    assert extra.enforce_nonce
    assert await extra_rows(crier) == [("sent", extra.id)]

    await advance_to(crier, clock, NINE)  # the occurrence itself still posts at its time
    assert [m.content for m in posts(world, world.news)] == ["Standup 2 March 2030"] * 2
    info = await run_command(world, "info", id=n)
    assert f"<t:{int(NINE.replace(day=3).timestamp())}:F>" in (info.content or "")


async def test_postnow_is_refused_for_a_paused_one_and_for_members(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await daily(world)
    cb = await run_command(world, "postnow", by=world.member, id=n)
    assert "Manage Server" in (cb.content or ""), cb.content
    await run_command(world, "pause", id=n)
    cb = await run_command(world, "postnow", id=n)
    assert "is paused, so it has no next post" in (cb.content or ""), cb.content
    await advance(crier, clock, 1)
    assert posts(world, world.news) == []
    assert await extra_rows(crier) == []


async def test_a_502_after_the_extra_post_was_made_posts_it_once(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Discord made the post and answered 502 (discord.py sends it again by itself, with the
    nonce), and that answer was lost too: the job's re-run sends the same nonce and gets the
    first message back."""
    n = await daily(world)
    path = re.escape(f"/channels/{world.news.id}/messages")
    world.fake.faults.add(method="POST", path_regex=path, status=502, after_effect=True)
    world.fake.faults.add(method="POST", path_regex=path, disconnect=True, after_effect=True)
    await postnow(world, n)
    await advance(crier, clock, 1)
    [made] = posts(world, world.news)
    assert await extra_rows(crier) == [("sending", None)]
    [job] = [j for j in await crier.sched.list_jobs() if j.fn == "announcements:postnow"]
    await advance_to_retry(crier, clock, job.id)
    assert posts(world, world.news) == [made]
    assert await extra_rows(crier) == [("sent", made.id)]


async def test_postnow_seen_by_two_sessions_posts_once(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    a = await crier_factory(shard_count=1, shard_ids=(0,))
    b = await crier_factory(shard_count=1, shard_ids=(0,))
    await world.fake.wait_until(
        lambda: len(world.fake.gateway.connected_sessions) == 2, what="both sessions up"
    )
    n = await daily(world)
    answer, _ = await postnow(world, n)
    assert "is being posted" in answer
    lost = lambda: sum(app.bot.stats.interactions_lost for app in (a, b))  # noqa: E731
    await world.fake.wait_until(lambda: lost() >= 2, what="the other session gave up twice")
    clock.advance(1)
    for app in (a, b):
        await app.sched.wait_idle()
    assert len(posts(world, world.news)) == 1
    assert [s for s, _ in await extra_rows(a)] == ["sent"]


# --- /test ------------------------------------------------------------------------------------


async def run_test(world: World, n: int) -> str:
    """/test id:n by the admin: its answer (after the deferral)."""
    h = await world.fake.invoke_command(world.guild, world.general, world.admin, "test", {"id": n})
    return (await h.final_message()).content


def shown(m: Message) -> tuple[object, ...]:
    """What a post shows: its text, embeds (an image by its file's name: each upload gets
    a URL of its own), files and buttons."""
    embeds = [
        {**e, "image": e["image"]["url"].split("?")[0].rsplit("/", 1)[-1]} if "image" in e else e
        for e in m.embeds
    ]
    return (m.content, embeds, m.files, m.components)


async def test_test_sends_the_manager_exactly_the_next_post_by_dm(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    world.guild.set_bot_permissions(
        P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.EMBED_LINKS
    )
    crew = world.guild.add_role("crew", mentionable=True)
    image = world.fake.make_attachment("cat.png", PNG)
    n = await daily(world, title="Standup", image=image, mention=crew)
    await run_command(world, "edit", id=n, reminder="15m")  # a Remind me button
    h = await world.fake.invoke_command(world.guild, world.general, world.admin, "test", {"id": n})
    answer = (await h.final_message()).content
    assert "exactly what announcement **#1** will post" in answer, answer
    [dm] = world.fake.bot_messages(world.fake.open_dm(world.admin))
    assert dm.nonce == preview_nonce(h.id)
    assert dm.allowed_mentions == {"parse": []}  # a DM pings nobody
    assert posts(world, world.news) == []  # nothing posted in the channel

    await advance_to(crier, clock, NINE)
    [post] = posts(world, world.news)
    assert shown(dm) == shown(post)
    assert post.embeds[0]["title"] == "Standup"
    assert post.files == {"cat.png": PNG}
    assert post.components  # the button


async def test_test_with_closed_dms_is_answered_clearly(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await daily(world)
    world.admin.user.accepts_dms = False
    answer = await run_test(world, n)
    assert "your DMs are closed" in answer, answer
    assert "/test id:1" in answer
    await run_command(world, "pause", id=n)
    answer = await run_test(world, n)
    assert "is paused" in answer, answer


@pytest.fixture
def crier_pg(crier_on_each_db: Crier) -> Crier:
    return crier_on_each_db


async def test_postnow_on_each_database(world: World, crier_pg: Crier, clock: FakeClock) -> None:
    n = await daily(world)
    await postnow(world, n)
    await advance(crier_pg, clock, 1)
    [extra] = posts(world, world.news)
    assert await extra_rows(crier_pg) == [("sent", extra.id)]
