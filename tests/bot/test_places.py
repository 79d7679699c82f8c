"""Several places (issue 36, item 4), end to end through discord.py against the fake Discord:
``/edit id: also_in: #a #b`` posts each occurrence once in each place, paced per channel;
each place's failure is reported and retried apart, and neither stops nor repeats the others;
``/info`` shows each place's delivery; an edit updates each place's post in place.

Due times follow a FakeClock; what was posted is read back from the fake."""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from bot.announcements.places import PLACE_SEND_FN
from scheduler import JobState
from tests.bot.conftest import CrierFactory, World, db_snapshot, run_command, schedule_id
from tests.bot.test_delivery import advance, set_log_channel
from tests.bot.test_pause_points import discarded, stopped_bot, take_over
from tests.fakediscord import Permissions as P
from tests.fakediscord.interactions import CB_CHANNEL_MESSAGE

if TYPE_CHECKING:
    import pytest

    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.fakediscord.state import Channel, Message


async def edit(world: World, **options: Any) -> str:
    cb = await run_command(world, "edit", **options)
    assert cb.type == CB_CHANNEL_MESSAGE
    return cb.content or ""


def texts(world: World, channel: Channel) -> list[str]:
    return [m.content for m in world.fake.bot_messages(channel)]


async def info(world: World, local: int) -> str:
    return (await run_command(world, "info", id=local)).content or ""


async def test_each_occurrence_is_posted_once_in_each_place_and_info_says_how(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    events = world.guild.add_channel("events")
    thread = world.guild.add_thread(world.general, "weekly")
    local = await schedule_id(world, when="in 1h", repeat="daily", message="Standup!")
    answer = await edit(world, id=local, also_in=f"<#{events.id}> #weekly")
    assert f"**Also in:** none → <#{events.id}> <#{thread.id}>" in answer, answer
    await advance(crier, clock, timedelta(hours=1))
    await advance(crier, clock, timedelta(days=1))
    for channel in (world.news, events, thread):
        assert texts(world, channel) == ["Standup!", "Standup!"], channel.name
    # Each place's post is its own message, with a nonce of its own.
    firsts = [world.fake.bot_messages(c)[0] for c in (world.news, events, thread)]
    assert len({m.nonce for m in firsts}) == 3
    shown = await info(world, local)
    assert f"**Also in:** <#{events.id}> <#{thread.id}>" in shown
    for message in [*world.fake.bot_messages(events), *world.fake.bot_messages(thread)]:
        link = f"/{message.channel_id}/{message.id}"
        assert re.search(rf"↳ <#{message.channel_id}> — ✅ posted \S+{link}", shown), shown
    # `none` takes the places away: the next occurrence posts in its channel only.
    answer = await edit(world, id=local, also_in="none")
    assert f"**Also in:** <#{events.id}> <#{thread.id}> → none" in answer
    await advance(crier, clock, timedelta(days=1))
    assert (len(texts(world, world.news)), len(texts(world, events))) == (3, 2)


async def test_posts_in_one_place_are_paced_without_holding_up_the_others(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    crier = await crier_factory(send_spacing=30.0)
    events = world.guild.add_channel("events")
    first = await schedule_id(world, when="in 1h", message="one", channel=world.news)
    second = await schedule_id(world, when="in 1h", message="two", channel=world.general)
    for local in (first, second):
        await edit(world, id=local, also_in=f"<#{events.id}>")
    await advance(crier, clock, timedelta(hours=1))
    # Both own channels at once; the shared place one now, the other in its next turn.
    assert (texts(world, world.news), texts(world, world.general)) == (["one"], ["two"])
    assert len(texts(world, events)) == 1
    await advance(crier, clock, timedelta(seconds=29))
    assert len(texts(world, events)) == 1
    await advance(crier, clock, timedelta(seconds=1))
    assert sorted(texts(world, events)) == ["one", "two"]


async def test_a_403_in_one_place_is_reported_and_neither_stops_nor_repeats_the_others(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await set_log_channel(world, world.general)
    events = world.guild.add_channel("events")
    closed = world.guild.add_channel("closed")
    local = await schedule_id(world, when="in 1h", repeat="daily", message="Hi")
    await edit(world, id=local, also_in=f"<#{closed.id}> <#{events.id}>")
    closed.set_overwrite(world.guild.bot_role, deny=P.SEND_MESSAGES)  # after the edit's check
    await advance(crier, clock, timedelta(hours=1))
    assert (texts(world, world.news), texts(world, events), texts(world, closed)) == (
        ["Hi"], ["Hi"], []
    )  # fmt: skip
    [report] = [m for m in world.fake.bot_messages(world.general) if "⚠️" in m.content]
    assert f"could not be posted in <#{closed.id}>" in report.content
    assert "Missing Permissions" in report.content
    a = await crier.bot.announcements.get(world.guild.id, local)
    assert a.state == "scheduled"  # not paused: the other places go on
    shown = await info(world, local)
    assert f"↳ <#{closed.id}> — ❌ failed: Missing Permissions" in shown
    # The next occurrence: posted again everywhere it can be, once; the closed place fails
    # again, reported again.
    await advance(crier, clock, timedelta(days=1))
    assert (texts(world, world.news), texts(world, events)) == (["Hi"] * 2, ["Hi"] * 2)
    assert len([m for m in world.fake.bot_messages(world.general) if "⚠️" in m.content]) == 2


async def test_a_403_in_its_own_channel_pauses_it_but_this_occurrence_posts_elsewhere(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    events = world.guild.add_channel("events")
    local = await schedule_id(world, when="in 1h", repeat="daily", message="Hi")
    await edit(world, id=local, also_in=f"<#{events.id}>")
    world.news.set_overwrite(world.guild.bot_role, deny=P.SEND_MESSAGES)
    await advance(crier, clock, timedelta(hours=1))
    assert (texts(world, world.news), texts(world, events)) == ([], ["Hi"])
    a = await crier.bot.announcements.get(world.guild.id, local)
    assert a.state == "paused"
    await advance(crier, clock, timedelta(days=1))
    assert texts(world, events) == ["Hi"]  # paused: nothing more anywhere


async def test_a_5xx_in_one_place_is_retried_apart_with_its_nonce(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    events = world.guild.add_channel("events")
    local = await schedule_id(world, when="in 1h", message="Once each")
    await edit(world, id=local, also_in=f"<#{events.id}>")
    path = re.escape(f"/channels/{events.id}/messages")
    # Discord made the message, then answered 503 (discord.py raises it at once), twice.
    world.fake.faults.add(method="POST", path_regex=path, status=503, after_effect=True, times=2)
    await advance(crier, clock, timedelta(hours=1))
    assert texts(world, world.news) == ["Once each"]
    for _ in range(3):  # the place's job, retried on its own backoff
        await advance(crier, clock, timedelta(minutes=1))
    assert texts(world, events) == ["Once each"]
    sends = [r for r in world.fake.requests if r.method == "POST" and r.path.endswith(
        f"/channels/{events.id}/messages")]  # fmt: skip
    assert len({r.body["nonce"] for r in sends}) == 1
    assert [r.status for r in sends] == [503, 503, 200]
    assert world.fake.nonce_dedup_hits == 2
    assert texts(world, world.news) == ["Once each"]


async def test_an_edit_updates_each_places_post_in_place(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    events = world.guild.add_channel("events")
    local = await schedule_id(world, when="in 1h", message="v1")
    await edit(world, id=local, also_in=f"<#{events.id}>")
    await advance(crier, clock, timedelta(hours=1))
    posts: list[Message] = [*world.fake.bot_messages(world.news), *world.fake.bot_messages(events)]
    answer = await edit(world, id=local, message="v2")
    assert "edited in place" in answer
    await crier.sched.wait_idle()
    assert [m.content for m in posts] == ["v2", "v2"]
    assert (len(texts(world, world.news)), len(texts(world, events))) == (1, 1)


async def test_also_in_is_checked_and_a_refusal_writes_nothing(world: World, crier: Crier) -> None:
    forum = world.guild.add_forum("board")
    hidden = world.guild.add_channel("hidden")
    hidden.set_overwrite(world.guild.bot_role, deny=P.VIEW_CHANNEL)
    local = await schedule_id(world, when="in 1h", message="m")
    before = await db_snapshot(crier)
    for typed, says in [
        ("#nowhere", "I can't find the channel `#nowhere`"),
        (f"<#{world.news.id}>", f"already posts in <#{world.news.id}>"),
        (f"<#{forum.id}>", "is a forum"),
        (f"<#{hidden.id}>", "I need **View Channel**"),
        (" ".join(f"<#{world.guild.add_channel(f'c{i}').id}>" for i in range(11)),
         "at most 10 other places"),
    ]:  # fmt: skip
        answer = await edit(world, id=local, also_in=typed)
        assert says in answer, (typed, answer)
    assert await db_snapshot(crier) == before


# --- a run stopped before a place's send (a paused process), and taken over ------------------


async def test_a_place_run_stopped_before_its_send_sends_nothing_after_a_takeover(
    world: World, crier_factory: CrierFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Bot A's run of a place's post stops right before its send (where a process could be
    paused); bot B takes the job over once A's lease ran out and posts it; A's run going on
    posts nothing: one request, one post in the place."""
    caplog.set_level(logging.WARNING, logger="scheduler")
    events = world.guild.add_channel("events")
    a, stop = await stopped_bot(crier_factory, "send", fn=PLACE_SEND_FN)
    local = await schedule_id(world, when="in 1m", message="Once there")
    await edit(world, id=local, also_in=f"<#{events.id}>")
    clock.advance(timedelta(minutes=1))
    await take_over(crier_factory, a, stop, clock)
    assert len(sends_to(world, events)) == 1
    assert texts(world, events) == texts(world, world.news) == ["Once there"]
    assert len(discarded(caplog)) == 1


async def test_a_place_attempt_older_than_the_nonce_window_is_reported_not_sent_again(
    world: World, crier_factory: CrierFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The same, with Discord's nonce memory shorter than A's lease: B finds the attempt A
    began too old to send again safely (Discord would no longer drop a duplicate), so the
    post in the place fails "may not have been delivered" and is reported; nothing is
    sent in the place, and the announcement's own channel is not touched."""
    caplog.set_level(logging.WARNING, logger="scheduler")
    events = world.guild.add_channel("events")
    a, stop = await stopped_bot(crier_factory, "send", fn=PLACE_SEND_FN, nonce_window=20.0)
    await set_log_channel(world, world.general)
    local = await schedule_id(world, when="in 1m", message="Not twice")
    await edit(world, id=local, also_in=f"<#{events.id}>")
    clock.advance(timedelta(minutes=1))
    b = await take_over(crier_factory, a, stop, clock, ends=JobState.FAILED, nonce_window=20.0)
    assert sends_to(world, events) == []
    ann = await b.bot.announcements.get(world.guild.id, local)
    [row] = await b.bot.announcements.place_deliveries(ann.id, [ann.first_ts])
    assert (row.state, row.message_id) == ("failed", None)
    assert (row.error or "").startswith("may not have been delivered")
    [report] = [m for m in world.fake.bot_messages(world.general) if "⚠️" in m.content]
    assert f"could not be posted in <#{events.id}>" in report.content
    assert texts(world, world.news) == ["Not twice"]
    assert len(discarded(caplog)) == 1


def sends_to(world: World, channel: Channel) -> list[Any]:
    path = f"/channels/{channel.id}/messages"
    return [r for r in world.fake.requests if r.method == "POST" and r.path == path]


async def test_a_template_keeps_the_places_and_schedule_template_checks_them_again(
    world: World, crier: Crier
) -> None:
    events = world.guild.add_channel("events")
    local = await schedule_id(world, when="in 1h", message="m")
    await edit(world, id=local, also_in=f"<#{events.id}> <#{world.general.id}>")
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "template save", {"name": "weekly", "from": local}
    )
    saved = (await h.response()).content or ""
    assert "Saved" in saved, saved
    listed = (await run_command(world, "template list")).content or ""
    assert f"also in <#{events.id}> <#{world.general.id}>" in listed, listed
    # In the template's channel (#news): both places; picked in #general, that one is the
    # announcement's own channel and #events the other place.
    news_one = await schedule_id(world, template="weekly", when="in 2h")
    general_one = await schedule_id(world, template="weekly", when="in 2h", channel=world.general)
    announcements = crier.bot.announcements
    for number, places in ((news_one, [events.id, world.general.id]), (general_one, [events.id])):
        a = await announcements.get(world.guild.id, number)
        assert [p.channel_id for p in await announcements.places(a.id)] == places
    # A place the bot can no longer post in refuses the template's use, saying where.
    events.set_overwrite(world.guild.bot_role, deny=P.SEND_MESSAGES)
    refused = await run_command(world, "schedule", template="weekly", when="in 2h")
    assert f"in <#{events.id}>" in (refused.content or ""), refused.content
    assert "Scheduled" not in (refused.content or "")
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "template delete", {"name": "weekly"}
    )
    assert "weekly" in ((await h.response()).content or "")
    async with crier.sched.reader() as db:
        cur = await db.execute("SELECT count(*) AS n FROM bot_template_places")
        assert (await cur.fetchone())["n"] == 0


async def test_a_place_deleted_since_fails_there_and_an_edit_says_which_one(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """A place deleted after it was given: each post there fails (reported, the others
    posted); any later edit is refused naming that place until also_in names others, and
    ``also_in: none`` takes it away."""
    events = world.guild.add_channel("events")
    doomed = world.guild.add_channel("doomed")
    local = await schedule_id(world, when="in 1h", repeat="daily", message="m")
    await edit(world, id=local, also_in=f"<#{events.id}> <#{doomed.id}>")
    world.fake.delete_channel(doomed)
    await advance(crier, clock, timedelta(hours=1))
    assert (texts(world, world.news), texts(world, events)) == (["m"], ["m"])
    shown = await info(world, local)
    assert f"↳ <#{doomed.id}> — ❌ failed: Unknown Channel" in shown, shown
    answer = await edit(world, id=local, message="m2")
    assert f"<#{doomed.id}>, one of its other places, is no longer a channel" in answer
    answer = await edit(world, id=local, message="m2", also_in=f"<#{events.id}>")
    assert "**Also in:**" in answer, answer
