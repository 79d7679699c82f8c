"""The previous post (issue 35, item 2): ``/edit pin: replace: delete_after:``, end to end
through the real discord.py client against the fake Discord, on a FakeClock.

pin: each post pinned, the one before unpinned (the new one first: never none), once across
a 502 after the pin and across two instances; replace: the post before deleted once the new
one is up, never the new one; a post a moderator deleted first is no error; Pin Messages
missing is refused at /edit, and taken away later is reported; Discord's pin limit is
reported (and what this announcement had pinned is unpinned first to make room)."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from bot.models import Tidy
from tests.bot.conftest import NOW, World, db_snapshot, run_command
from tests.bot.conftest import schedule_id as schedule
from tests.bot.test_delivery import advance, advance_to, idle, posts
from tests.bot.test_export_import import export, import_file
from tests.bot.test_pause_points import Stop, until
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.bot.conftest import CrierFactory
    from tests.fakediscord.state import Channel, Message

DAY = timedelta(days=1)
NINE = datetime(2030, 3, 2, 9, 0, tzinfo=NOW.tzinfo)
"""The first post of the daily announcement these tests make (tomorrow 09:00 UTC)."""
PINS = P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.PIN_MESSAGES


@pytest.fixture
def pinning(world: World) -> World:
    """The bot may pin (Pin Messages) besides viewing, sending and pinging."""
    world.guild.set_bot_permissions(PINS)
    return world


async def daily(world: World, crier: Crier, clock: FakeClock, **edit: object) -> int:
    """A daily 09:00 announcement in #news, edited with ``edit``; its number."""
    n = await schedule(world, repeat="daily at 09:00", message="Standup {date}")
    cb = await run_command(world, "edit", id=n, **edit)
    assert "Edited announcement" in (cb.content or ""), cb.content
    await advance(crier, clock, 1)
    return n


def pinned(world: World, channel: Channel) -> list[Message]:
    return world.fake.pins.pins(channel)


def pin_requests(world: World) -> list[tuple[str, str]]:
    """The pin and unpin requests the fake received: (method, message id)."""
    found = []
    for r in world.fake.requests:
        m = re.fullmatch(r"/channels/\d+/messages/pins/(\d+)", r.path)
        if m is not None and r.method in ("PUT", "DELETE"):
            found.append((r.method, m[1]))
    return found


async def post_rows(crier: Crier) -> list[tuple[int, str | None, str | None]]:
    async with crier.sched.reader() as db:
        cur = await db.execute(
            "SELECT message_id, pin_state, remove_state FROM bot_posts ORDER BY posted_at"
        )
        return [
            (int(r["message_id"]), r["pin_state"], r["remove_state"]) for r in await cur.fetchall()
        ]


# --- pin ----------------------------------------------------------------------------------------


async def test_pin_pins_each_post_and_unpins_the_one_before(
    pinning: World, crier: Crier, clock: FakeClock
) -> None:
    world = pinning
    await daily(world, crier, clock, pin=True)
    await advance_to(crier, clock, NINE)
    [first] = posts(world, world.news)
    assert pinned(world, world.news) == [first]
    await advance_to(crier, clock, NINE + DAY)
    first, second = posts(world, world.news)
    assert pinned(world, world.news) == [second]
    # The new post pinned before the old one unpinned: never none.
    assert pin_requests(world) == [
        ("PUT", str(first.id)),
        ("PUT", str(second.id)),
        ("DELETE", str(first.id)),
    ]
    await advance_to(crier, clock, NINE + 2 * DAY)
    assert pinned(world, world.news) == [posts(world, world.news)[-1]]
    assert [r[1] for r in await post_rows(crier)] == ["pinned"]  # the settled ones forgotten


async def test_pin_true_on_an_announcement_that_posted_pins_its_latest_post_and_false_unpins(
    pinning: World, crier: Crier, clock: FakeClock
) -> None:
    world = pinning
    n = await schedule(world, repeat="daily at 09:00", message="Standup {date}")
    await advance_to(crier, clock, NINE)
    [post] = posts(world, world.news)
    cb = await run_command(world, "edit", id=n, pin=True)
    assert "**Pin each post:** no → yes" in (cb.content or ""), cb.content
    await advance(crier, clock, 1)
    assert pinned(world, world.news) == [post]
    cb = await run_command(world, "edit", id=n, pin=False)
    await advance(crier, clock, 1)
    assert pinned(world, world.news) == []
    info = await run_command(world, "info", id=n)
    assert "Its posts:" not in (info.content or "")


async def test_a_502_after_the_pin_leaves_one_pinned_post(
    pinning: World, crier: Crier, clock: FakeClock
) -> None:
    """Discord pinned the new post and answered 502: pinned again (discord.py's own retry;
    nothing changes at Discord), then the one before unpinned: one pinned post. (A run
    killed between the pin and the unpin: tests/bot/test_previous_post_processes.py.)"""
    world = pinning
    await run_command(world, "settings", log_channel=world.general)
    await daily(world, crier, clock, pin=True)
    await advance_to(crier, clock, NINE)
    pins = r"/channels/\d+/messages/pins/\d+"
    world.fake.faults.add(method="PUT", path_regex=pins, status=502, after_effect=True)
    await advance_to(crier, clock, NINE + DAY)
    first, second = posts(world, world.news)
    assert pinned(world, world.news) == [second]
    assert pin_requests(world)[1:] == [
        ("PUT", str(second.id)),
        ("PUT", str(second.id)),
        ("DELETE", str(first.id)),
    ]
    assert world.fake.bot_messages(world.general) == []  # nothing reported


async def test_two_instances_leave_one_pinned_post(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    world.guild.set_bot_permissions(PINS)
    pair = [await crier_factory(shard_count=1, shard_ids=(0,)) for _ in range(2)]
    await world.fake.wait_until(
        lambda: len(world.fake.gateway.connected_sessions) == 2, what="both sessions up"
    )
    n = await schedule(world, repeat="daily at 09:00", message="Standup {date}")
    await run_command(world, "edit", id=n, pin=True)
    for day in range(4):
        clock.set(NINE + day * DAY)
        for app in pair:
            await app.sched.wait_idle()
        assert pinned(world, world.news) == [posts(world, world.news)[-1]], day
    assert len(posts(world, world.news)) == 4


async def test_pin_is_refused_at_edit_without_pin_messages(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await schedule(world, repeat="daily at 09:00", message="Standup")
    before = await db_snapshot(crier)
    cb = await run_command(world, "edit", id=n, pin=True)
    assert "I need **Pin Messages** in" in (cb.content or ""), cb.content
    assert await db_snapshot(crier) == before


async def test_pin_messages_taken_away_later_is_reported_once_and_shown_in_info(
    pinning: World, crier: Crier, clock: FakeClock
) -> None:
    world = pinning
    await run_command(world, "settings", log_channel=world.general)
    n = await daily(world, crier, clock, pin=True)
    world.guild.set_bot_permissions(PINS & ~P.PIN_MESSAGES)
    await advance_to(crier, clock, NINE)
    assert len(posts(world, world.news)) == 1  # the post itself goes out
    assert pinned(world, world.news) == []
    [report] = world.fake.bot_messages(world.general)
    assert "could not be pinned" in report.content
    assert "needs Pin Messages" in report.content
    info = await run_command(world, "info", id=n)
    assert "Last refused: Missing Permissions: the bot needs Pin Messages" in (info.content or "")


async def test_the_pin_limit_is_reported_and_room_is_made_from_this_announcements_own_pin(
    pinning: World, crier: Crier, clock: FakeClock
) -> None:
    world = pinning
    world.fake.pins.limit = 2
    await run_command(world, "settings", log_channel=world.general)
    n = await daily(world, crier, clock, pin=True)
    rules = world.fake.post_message(world.news, world.admin, "Rules")
    rules.pinned = True
    await advance_to(crier, clock, NINE)  # one pin left: taken
    first = posts(world, world.news)[0]
    assert pinned(world, world.news) == [rules, first]
    await advance_to(crier, clock, NINE + DAY)  # full: its own pin goes first, then the new one
    second = posts(world, world.news)[1]
    assert {m.id for m in pinned(world, world.news)} == {rules.id, second.id}
    assert world.fake.bot_messages(world.general) == []  # nothing to report

    world.fake.pins.limit = 1  # the channel full of others' pins: reported
    await advance_to(crier, clock, NINE + 2 * DAY)
    third = posts(world, world.news)[2]
    assert third not in pinned(world, world.news)
    [report] = world.fake.bot_messages(world.general)
    assert "could not be pinned" in report.content
    assert "Maximum pins reached" in report.content
    info = await run_command(world, "info", id=n)
    assert "Last refused: Maximum pins reached" in (info.content or "")


# --- replace ------------------------------------------------------------------------------------


async def test_replace_deletes_the_post_before_once_the_new_one_is_up(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await daily(world, crier, clock, replace=True)
    await advance_to(crier, clock, NINE)
    [first] = posts(world, world.news)
    # Deleted, but answered 502: deleted again (10008: done), never the new one.
    world.fake.faults.add(
        method="DELETE", path_regex=rf"/channels/{world.news.id}/messages/\d+", status=502,
        after_effect=True,
    )  # fmt: skip
    await advance_to(crier, clock, NINE + DAY)
    [second] = posts(world, world.news)
    assert first.deleted
    assert not second.deleted
    assert [r[2] for r in await post_rows(crier)] == [None]  # the old row settled, forgotten
    deletes = [r.path for r in world.fake.requests if r.method == "DELETE"]
    assert all(p.endswith(f"/{first.id}") for p in deletes), deletes


async def test_a_post_a_moderator_deleted_first_is_no_error(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await run_command(world, "settings", log_channel=world.general)
    n = await daily(world, crier, clock, replace=True)
    await advance_to(crier, clock, NINE)
    [first] = posts(world, world.news)
    world.fake._delete(first)  # a moderator deletes it
    await advance_to(crier, clock, NINE + DAY)
    assert len(posts(world, world.news)) == 1
    assert world.fake.bot_messages(world.general) == []  # no report
    info = await run_command(world, "info", id=n)
    assert "Last refused" not in (info.content or "")
    assert "the previous one deleted once the new one is up" in (info.content or "")


async def test_pin_and_replace_are_refused_on_a_forum(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    world.guild.set_bot_permissions(PINS | P.CREATE_PUBLIC_THREADS | P.SEND_MESSAGES_IN_THREADS)
    forum = world.guild.add_channel("ideas", type=15)
    n = await schedule(world, channel=forum, when="in 1h", message="Hi", title="Weekly")
    cb = await run_command(world, "edit", id=n, replace=True)
    assert "each post in a forum is a thread of its own" in (cb.content or ""), cb.content


async def test_one_job_at_a_time_works_on_an_announcements_posts(
    pinning: World, crier: Crier, clock: FakeClock
) -> None:
    """A run stopped right before it pins the first post while the second post goes up:
    the second post's job waits for it (it does not start: one of an announcement's tidying
    jobs at a time) instead of pinning the second and unpinning the first before the first
    is even pinned (two pinned posts in the end), and starts once it ends."""
    world = pinning
    n = await daily(world, crier, clock, pin=True)
    stop = Stop("pin")
    crier.poster.pause_point = stop
    await run_command(world, "postnow", id=n)
    clock.advance(1)
    await asyncio.wait_for(stop.reached.wait(), 10)
    [first] = posts(world, world.news)
    await run_command(world, "postnow", id=n)
    clock.advance(1)

    async def second_job_waits() -> bool:
        jobs = await crier.sched.list_jobs(fn="announcements:tidy", state="pending")
        return len(posts(world, world.news)) == 2 and any(j.id != stop.job_id for j in jobs)

    await until(second_job_waits, "the second post's job to be due")
    driver = crier.sched._driver
    assert driver is not None

    async def between_passes() -> bool:
        return not driver._passing

    await until(between_passes, "the dispatch loop between passes")
    passes = driver.passes
    clock.advance(10)  # due, and past any retry: it still does not start
    driver.wake()

    async def passed() -> bool:
        return driver.passes > passes  # a pass that started after the clock moved, ended

    await until(passed, "a dispatch pass after the clock moved")
    waiting = await crier.sched.list_jobs(fn="announcements:tidy", state="pending")
    [second_job] = [j for j in waiting if j.id != stop.job_id]
    assert second_job.run_count == 0
    assert pinned(world, world.news) == []  # nothing pinned while the first run is stopped
    stop.go_on.set()
    await idle(crier)
    [_, second] = posts(world, world.news)
    assert pinned(world, world.news) == [second]
    assert first.id != second.id


# --- delete_after -------------------------------------------------------------------------------


async def test_delete_after_deletes_each_post_that_long_after_it_went_up(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await daily(world, crier, clock, delete_after="2h")
    await advance_to(crier, clock, NINE)
    [first] = posts(world, world.news)
    await advance_to(crier, clock, NINE + timedelta(hours=2) - timedelta(seconds=1))
    assert posts(world, world.news) == [first]
    await advance(crier, clock, 1)
    assert posts(world, world.news) == []
    assert first.deleted

    # A longer delay moves the deletion of a post already up; none keeps the posts.
    await advance_to(crier, clock, NINE + DAY)
    [second] = posts(world, world.news)
    cb = await run_command(world, "edit", id=n, delete_after="5h")
    assert "**Delete each post after:** 2 hours → 5 hours" in (cb.content or ""), cb.content
    await advance_to(crier, clock, NINE + DAY + timedelta(hours=3))
    assert posts(world, world.news) == [second]
    await advance_to(crier, clock, NINE + DAY + timedelta(hours=5))
    assert posts(world, world.news) == []
    await run_command(world, "edit", id=n, delete_after="none")
    await advance_to(crier, clock, NINE + 2 * DAY)
    await advance_to(crier, clock, NINE + 3 * DAY)
    assert len(posts(world, world.news)) == 2  # kept


async def test_pin_replace_and_delete_after_act_in_each_place_as_in_its_own_channel(
    pinning: World, crier: Crier, clock: FakeClock
) -> None:
    """``also_in``: each place's post is tidied as the post in the announcement's own channel
    is: the latest post pinned in each (a new one unpins only the one before it in its own
    place), the one before deleted in each, and each post deleted that long after it went
    up; an edit turning the pin off unpins them all."""
    world = pinning
    events = world.guild.add_channel("events")

    async def at(when: datetime) -> None:
        """The clock at ``when``, then past the retry of a tidying job that found the other
        place's job working on the announcement's posts (one at a time: it retries 2 s
        later, or a little more)."""
        await advance_to(crier, clock, when)
        await advance(crier, clock, 10)

    n = await daily(world, crier, clock, pin=True, replace=True, also_in=f"<#{events.id}>")
    await at(NINE)
    [news_1], [events_1] = posts(world, world.news), posts(world, events)
    assert (pinned(world, world.news), pinned(world, events)) == ([news_1], [events_1])
    await at(NINE + DAY)
    [news_2], [events_2] = posts(world, world.news), posts(world, events)
    assert news_1.deleted
    assert events_1.deleted
    assert (pinned(world, world.news), pinned(world, events)) == ([news_2], [events_2])
    cb = await run_command(world, "edit", id=n, pin=False, replace=False, delete_after="2h")
    assert "Edited announcement" in (cb.content or ""), cb.content
    await advance(crier, clock, 1)
    assert (pinned(world, world.news), pinned(world, events)) == ([], [])
    await at(NINE + DAY + timedelta(hours=2))
    assert news_2.deleted
    assert events_2.deleted
    await at(NINE + 2 * DAY)
    [news_3], [events_3] = posts(world, world.news), posts(world, events)
    await at(NINE + 2 * DAY + timedelta(hours=2))
    assert news_3.deleted
    assert events_3.deleted
    # Nothing else was deleted or unpinned: each request is for a post of its own place.
    deletes = [
        r.path for r in world.fake.requests if r.method == "DELETE" and "/pins/" not in r.path
    ]
    assert sorted(deletes) == sorted(
        f"/channels/{m.channel_id}/messages/{m.id}"
        for m in (news_1, events_1, news_2, events_2, news_3, events_3)
    )


async def test_delete_after_is_checked(world: World, crier: Crier, clock: FakeClock) -> None:
    n = await schedule(world, repeat="daily at 09:00", message="Standup")
    cb = await run_command(world, "edit", id=n, delete_after="soon")
    assert "isn't a length of time I can read" in (cb.content or ""), cb.content
    cb = await run_command(world, "edit", id=n, delete_after="90 days")
    assert "`delete_after` is between 1 minute and 30 days" in (cb.content or ""), cb.content


# --- templates, export and import ---------------------------------------------------------------


async def test_a_template_keeps_them_and_an_export_carries_them_to_another_server(
    pinning: World, crier: Crier, clock: FakeClock, other: World
) -> None:
    world = pinning
    other.guild.set_bot_permissions(PINS)
    n = await daily(world, crier, clock, pin=True, replace=True, delete_after="2d")
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "template save", {"name": "t", "from": n}
    )
    saved = (await h.response()).content or ""
    assert "its posts: each pinned" in saved, saved
    made = await schedule(world, template="t", when="in 2h")
    info = (await run_command(world, "info", id=made)).content or ""
    assert (
        "**Its posts:** each pinned (the previous one unpinned), the previous one deleted "
        "once the new one is up, each deleted 2 days after it went up" in info
    ), info

    _, data = await export(world)
    doc = json.loads(data)
    wanted = {"pin": True, "replace": True, "delete_after_seconds": 172800}
    for row in (*doc["announcements"], *doc["templates"]):
        assert {k: row[k] for k in wanted} == wanted, row
    done, _ = await import_file(other, data, confirm=True)
    assert "Imported" in done.content, done.content
    service = crier.bot.announcements
    imported = (await service.listing(other.guild.id, 0, 10)).items
    tidy = Tidy(pin=True, replace=True, delete_after=172800.0)
    assert [await service.tidy(a.id) for a in imported] == [tidy, tidy]
    assert (await service.template(other.guild.id, "t")).tidy == tidy


async def test_an_edit_after_delete_after_took_the_post_down_reports_nothing(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The post delete_after took down is not 'a message a moderator deleted': an edit of
    the text afterwards neither reports it nor posts it again, in its own channel or in
    another place (``also_in``)."""
    events = world.guild.add_channel("events")
    await run_command(world, "settings", log_channel=world.general)
    n = await daily(world, crier, clock, delete_after="1h", also_in=f"<#{events.id}>")
    await advance_to(crier, clock, NINE)
    assert (len(posts(world, world.news)), len(posts(world, events))) == (1, 1)
    await advance_to(crier, clock, NINE + timedelta(hours=1))
    await advance(crier, clock, 10)  # past the retry of the place's job (one at a time)
    assert (posts(world, world.news), posts(world, events)) == ([], [])
    cb = await run_command(world, "edit", id=n, message="Standup, edited {date}")
    assert "Edited announcement" in (cb.content or ""), cb.content
    await advance(crier, clock, 5)
    assert (posts(world, world.news), posts(world, events)) == ([], [])
    assert [r.path for r in world.fake.requests if r.method == "PATCH"] == []
    assert world.fake.bot_messages(world.general) == []  # no report
