"""Reminders by direct message (issue 35, item 1), end to end through the real discord.py
client against the fake Discord, on SQLite and PostgreSQL, on a FakeClock: ``/edit
reminder:`` turns them on, each post carries **Remind me**, a press (or ``/remindme``)
subscribes the member to every later occurrence, pressing again offers to stop; the members
Interested in the occurrence's Discord event are reminded too; each reminder goes ``before``
ahead, once per (occurrence, member), with its text, time and link; closed DMs, members who
left or can't see the channel are skipped and counted in /info; a skipped, paused or
canceled occurrence reminds nobody; the DMs keep to the shared pace."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.announcements import RemindArgs
from bot.announcements.reminders import REMIND_BUTTON, STOP_BUTTON
from bot.models import reminder_nonce
from scheduler import JobState
from tests.bot.conftest import NOW, CrierFactory, World, db_snapshot, run_command
from tests.bot.conftest import schedule_id as schedule
from tests.bot.test_delivery import advance, advance_to, posts
from tests.bot.test_export_import import export, import_file
from tests.fakediscord import Permissions as P
from tests.support.processes import until

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.fakediscord import InteractionHandle, Member
    from tests.fakediscord.state import Message

BASE = P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.EMBED_LINKS
DAY = timedelta(days=1)
NINE = datetime(2030, 3, 2, 9, 0, tzinfo=NOW.tzinfo)
"""The first post of the daily announcement these tests make (tomorrow 09:00 UTC)."""


@pytest.fixture
def crier(crier_on_each_db: Crier) -> Crier:
    return crier_on_each_db


def dms(world: World, who: Member) -> list[Message]:
    """The bot's direct messages to ``who``, oldest first."""
    return world.fake.bot_messages(world.fake.open_dm(who))


def all_dms(world: World) -> list[Message]:
    return [m for m in world.fake.message_log if m.author.id == world.fake.bot_user.id
            and m.guild_id is None]  # fmt: skip


async def daily(world: World, crier: Crier, clock: FakeClock, reminder: str = "15m") -> int:
    """A daily 09:00 announcement in #news with reminders ``reminder`` before; its number."""
    n = await schedule(world, repeat="daily at 09:00", message="Standup {date}")
    cb = await run_command(world, "edit", id=n, reminder=reminder)
    assert "Reminders" in (cb.content or ""), cb.content
    await advance(crier, clock, 1)
    return n


async def press(world: World, message: Message, who: Member, custom_id: str) -> InteractionHandle:
    h = await world.fake.click_button(message, custom_id, who)
    await h.response(timeout=5)
    return h


async def ann_id(crier: Crier, world: World, local_id: int) -> int:
    return (await crier.bot.announcements.get(world.guild.id, local_id)).id


# --- turning them on, the button, a press, the DM -------------------------------------------


async def test_a_press_of_remind_me_gets_a_dm_before_every_later_post(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await daily(world, crier, clock)
    aid = await ann_id(crier, world, n)
    await advance_to(crier, clock, NINE)
    [post] = posts(world, world.news)
    button = REMIND_BUTTON.format(aid)
    [comp] = [c for row in post.components for c in row["components"]]
    assert (comp["custom_id"], comp["label"], comp["style"]) == (button, "Remind me", 2)

    h = await press(world, post, world.member, button)
    answer = (await h.response()).content or ""
    assert h.callbacks[0].ephemeral
    assert "You will be reminded of announcement **#1**" in answer
    assert "15 minutes before each post" in answer
    assert f"<t:{int((NINE + DAY).timestamp())}:F>" in answer
    await advance(crier, clock, 1)

    await advance_to(crier, clock, NINE + DAY - timedelta(minutes=15, seconds=1))
    assert dms(world, world.member) == []
    await advance(crier, clock, 1)
    [dm] = dms(world, world.member)
    fire = int((NINE + DAY).timestamp())
    assert f"<t:{fire}:F>" in dm.content
    assert f"<t:{fire}:R>" in dm.content
    assert f"https://discord.com/channels/{world.guild.id}/{world.news.id}" in dm.content
    assert "> Standup 3 March 2030" in dm.content  # the occurrence's text, rendered
    assert dm.nonce == reminder_nonce(aid, float(fire), world.member.id)
    assert dm.enforce_nonce
    assert dm.allowed_mentions == {"parse": []}

    await advance_to(crier, clock, NINE + 2 * DAY - timedelta(minutes=15))
    assert len(dms(world, world.member)) == 2
    assert all_dms(world) == dms(world, world.member)  # nobody else asked


async def test_pressing_again_offers_to_stop_and_stop_stops(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await daily(world, crier, clock)
    aid = await ann_id(crier, world, n)
    await advance_to(crier, clock, NINE)
    [post] = posts(world, world.news)
    await press(world, post, world.member, REMIND_BUTTON.format(aid))
    again = await press(world, post, world.member, REMIND_BUTTON.format(aid))
    offer = await again.response()
    assert "already reminded" in (offer.content or "")
    stop = await again.click(STOP_BUTTON.format(aid))
    stopped = await stop.response()
    assert "won't be reminded of announcement **#1** any more" in (stopped.content or "")
    await advance_to(crier, clock, NINE + DAY)
    assert dms(world, world.member) == []
    assert len(posts(world, world.news)) == 2


async def test_remindme_with_its_own_lead_and_stop(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await daily(world, crier, clock)
    cb = await run_command(world, "remindme", by=world.member, id=n, before="1h")
    assert "1 hour before each post" in (cb.content or ""), cb.content
    await advance_to(crier, clock, NINE - timedelta(hours=1, seconds=1))
    assert dms(world, world.member) == []
    await advance(crier, clock, 1)
    assert len(dms(world, world.member)) == 1
    cb = await run_command(world, "remindme", by=world.member, id=n, stop=True)
    assert "won't be reminded" in (cb.content or "")
    await advance_to(crier, clock, NINE + DAY)
    assert len(dms(world, world.member)) == 1


async def test_reminders_off_refuses_a_member_and_writes_nothing(
    world: World, crier: Crier
) -> None:
    n = await schedule(world, repeat="daily at 09:00", message="No reminders")
    before = await db_snapshot(crier)
    cb = await run_command(world, "remindme", by=world.member, id=n)
    assert "doesn't send reminders" in (cb.content or "")
    assert "/edit id: 1 reminder: 15m" in (cb.content or "")
    assert await db_snapshot(crier) == before


async def test_a_bad_lead_is_refused_with_an_example(world: World, crier: Crier) -> None:
    n = await schedule(world, repeat="daily at 09:00", message="x")
    cb = await run_command(world, "edit", id=n, reminder="soonish")
    assert "isn't a length of time I can read" in (cb.content or "")
    cb = await run_command(world, "edit", id=n, reminder="30s")
    assert "between 1 minute and 1 week" in (cb.content or ""), cb.content
    cb = await run_command(world, "edit", id=n, reminder="15m")
    cb = await run_command(world, "remindme", by=world.member, id=n, before="none")
    assert "isn't a length of time I can read" in (cb.content or "")


# --- who is reminded, who is skipped ---------------------------------------------------------


async def test_interested_members_are_reminded_and_the_skipped_are_counted_in_info(
    world: World, crier_factory: CrierFactory, db_url: str, clock: FakeClock
) -> None:
    world.guild.set_bot_permissions(BASE | P.CREATE_EVENTS)
    crier = await crier_factory(database_url=db_url, event_lead=3600.0)
    n = await schedule(
        world, repeat="daily at 09:00", message="Raid night", event=True,
        event_location="Dungeon", event_minutes=60,
    )  # fmt: skip
    await run_command(world, "edit", id=n, reminder="30m")
    await advance(crier, clock, 1)
    [event] = world.fake.scheduled_events.of(world.guild)
    fake, guild = world.fake, world.guild
    keen = guild.add_member(name="keen")
    closed = guild.add_member(name="closed")
    closed.user.accepts_dms = False
    gone = guild.add_member(name="gone")
    hidden = guild.add_member(name="hidden")
    world.news.set_overwrite(hidden, deny=P.VIEW_CHANNEL)
    fake.scheduled_events.mark_interested(event, keen, closed, gone, hidden)
    guild.remove_member(gone)

    await advance_to(crier, clock, NINE - timedelta(minutes=30))
    assert [m.content.splitlines()[0] for m in dms(world, keen)] == [
        f"⏰ Reminder: <t:{int(NINE.timestamp())}:F> (<t:{int(NINE.timestamp())}:R>) in "
        f"<#{world.news.id}>"
    ]
    assert "Interested in this announcement's Discord event" in dms(world, keen)[0].content
    assert all_dms(world) == dms(world, keen)
    info = (await run_command(world, "info", id=n)).content or ""
    assert "**Reminders:** 30 minutes before each post, by DM" in info
    assert "and those Interested in its Discord event" in info
    assert (
        "1 sent · 3 skipped (1 with DMs closed, 1 left the server, 1 can't see the channel)" in info
    ), info


async def test_a_member_who_lost_sight_of_the_channel_is_skipped(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await daily(world, crier, clock)
    await run_command(world, "remindme", by=world.member, id=n)
    world.news.set_overwrite(world.member, deny=P.VIEW_CHANNEL)
    await advance_to(crier, clock, NINE - timedelta(minutes=15))
    assert dms(world, world.member) == []
    info = (await run_command(world, "info", id=n)).content or ""
    assert "0 sent · 1 skipped (1 can't see the channel)" in info, info


# --- occurrences that remind nobody -----------------------------------------------------------


async def test_a_skipped_paused_or_canceled_occurrence_reminds_nobody(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await daily(world, crier, clock)
    await run_command(world, "remindme", by=world.member, id=n)
    await run_command(world, "skip", id=n)  # tomorrow's
    await advance_to(crier, clock, NINE)
    assert dms(world, world.member) == []
    await advance_to(crier, clock, NINE + DAY - timedelta(minutes=15))
    assert len(dms(world, world.member)) == 1  # the day after's, as usual

    await run_command(world, "pause", id=n)
    await advance_to(crier, clock, NINE + 2 * DAY)
    assert len(dms(world, world.member)) == 1
    await run_command(world, "resume", id=n)
    await advance_to(crier, clock, NINE + 3 * DAY - timedelta(minutes=15))
    assert len(dms(world, world.member)) == 2

    await run_command(world, "cancel", id=n)
    await advance_to(crier, clock, NINE + 5 * DAY)
    assert len(dms(world, world.member)) == 2


async def test_an_occurrence_moved_by_an_edit_reminds_at_its_new_time(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await daily(world, crier, clock)
    await run_command(world, "remindme", by=world.member, id=n)
    await run_command(world, "edit", id=n, repeat="daily at 10:00")
    await advance(crier, clock, 1)
    await advance_to(crier, clock, NINE)
    assert dms(world, world.member) == []
    ten = NINE + timedelta(hours=1)
    await advance_to(crier, clock, ten - timedelta(minutes=15))
    [dm] = dms(world, world.member)
    assert f"<t:{int(ten.timestamp())}:F>" in dm.content


async def test_one_job_at_a_time_works_through_an_announcement_s_reminders(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """30 members ask within a second: their burst is planned by one job (debounced), and
    one job is pending for the occurrence's reminders, not one per member."""
    n = await daily(world, crier, clock)
    for i in range(30):
        member = world.guild.add_member(name=f"m{i}")
        await run_command(world, "remindme", by=member, id=n)
    await advance(crier, clock, 1)
    async with crier.sched.reader() as db:
        cur = await db.execute(
            "SELECT state, COUNT(*) AS n FROM scheduler_jobs WHERE fn = 'announcements:remind' "
            "GROUP BY state"
        )
        jobs = {r["state"]: r["n"] for r in await cur.fetchall()}
    # The plan after /edit, the plan after the burst, and the occurrence's job.
    assert jobs == {JobState.SUCCESS: 2, JobState.PENDING: 1}, jobs
    await advance_to(crier, clock, NINE - timedelta(minutes=15))
    assert len(all_dms(world)) == 30


# --- failures: retried with the same nonce, never two ----------------------------------------


async def dm_fault(world: World, who: Member, **fault: object) -> None:
    """The next DM to ``who`` fails as ``fault`` says (``fake.faults.add``)."""
    dm = world.fake.open_dm(who)
    world.fake.faults.add(method="POST", path_regex=f"/channels/{dm.id}/messages", **fault)


async def retried_job(crier: Crier) -> Any:
    """The reminder job a failure sent back to pending, for its retry."""
    [job] = [
        j for j in await crier.sched.list_jobs(limit=100)
        if j.fn == "announcements:remind" and j.state == JobState.PENDING and j.attempts
    ]  # fmt: skip
    return job


async def test_a_5xx_after_the_dm_was_made_is_sent_again_with_its_nonce_once(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await daily(world, crier, clock)
    await run_command(world, "remindme", by=world.member, id=n)
    await dm_fault(world, world.member, status=503, after_effect=True)
    await advance_to(crier, clock, NINE - timedelta(minutes=15))
    [made] = dms(world, world.member)  # Discord made it; the bot heard a 503
    job = await retried_job(crier)  # the run is retried, after its backoff
    assert job.attempts == 1
    await advance_to(crier, clock, job.next_at + timedelta(milliseconds=1))
    assert dms(world, world.member) == [made]
    assert world.fake.nonce_dedup_hits == 1
    info = (await run_command(world, "info", id=n)).content or ""
    [line] = [x for x in info.splitlines() if x.startswith("• ") and " sent" in x]
    assert line.endswith(": 1 sent"), info


async def test_one_interrupted_longer_than_discord_keeps_nonces_is_not_sent_again(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await daily(world, crier, clock)
    await run_command(world, "remindme", by=world.member, id=n)
    await dm_fault(world, world.member, status=503, after_effect=True)
    await advance_to(crier, clock, NINE - timedelta(minutes=15))
    job = await retried_job(crier)
    # Its retry comes too late for the nonce (the bot was down, say, past the backoff).
    await advance(crier, clock, crier.settings.nonce_window + 1)
    assert (await crier.sched.get_job(job.id)).state == JobState.SUCCESS
    assert len(dms(world, world.member)) == 1  # the one Discord made, never a second
    assert world.fake.nonce_dedup_hits == 0
    info = (await run_command(world, "info", id=n)).content or ""
    assert "0 sent · 1 skipped (1 may not have been delivered)" in info, info


async def test_closed_dms_are_skipped_once_and_never_retried(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await daily(world, crier, clock)
    await run_command(world, "remindme", by=world.member, id=n)
    world.member.user.accepts_dms = False
    await advance_to(crier, clock, NINE - timedelta(minutes=15))
    sends = [r for r in world.fake.requests if r.code == 50007]
    assert len(sends) == 1
    await advance_to(crier, clock, NINE + timedelta(hours=2))
    assert len([r for r in world.fake.requests if r.code == 50007]) == 1
    info = (await run_command(world, "info", id=n)).content or ""
    assert "0 sent · 1 skipped (1 with DMs closed)" in info, info


async def test_reminders_missed_while_the_bot_was_down_are_counted_late(
    world: World, crier_factory: CrierFactory, db_url: str, clock: FakeClock
) -> None:
    crier = await crier_factory(database_url=db_url)
    n = await daily(world, crier, clock)
    for name in ("a", "b"):
        await run_command(world, "remindme", by=world.guild.add_member(name=name), id=n)
    await advance(crier, clock, 1)
    await crier.close()
    clock.set(NINE + timedelta(minutes=5))  # down from before 08:45 until after 09:00
    crier = await crier_factory(database_url=db_url)
    await crier.sched.wait_idle()
    assert all_dms(world) == []
    info = (await run_command(world, "info", id=n)).content or ""
    assert "0 sent · 2 skipped (2 too late)" in info, info
    await advance_to(crier, clock, NINE + DAY - timedelta(minutes=15))
    assert len(all_dms(world)) == 2  # the next ones as usual


# --- the pace ------------------------------------------------------------------------------


async def test_dms_keep_the_shared_spacing_in_every_job(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    """Two announcements' jobs due at once, two members each: four DMs, 2 s apart on the
    one pace key, not a millisecond early (each job sleeps until its reserved turns)."""
    spacing = 2.0
    crier = await crier_factory(reminder_spacing=spacing)
    first = await daily(world, crier, clock)
    second = await schedule(world, repeat="daily at 09:00", message="Other", channel=world.general)
    await run_command(world, "edit", id=second, reminder="15m")
    for i in range(2):
        for n in (first, second):
            await run_command(world, "remindme", by=world.guild.add_member(name=f"{n}-{i}"), id=n)
    await advance(crier, clock, 1)
    due = NINE - timedelta(minutes=15)
    clock.set(due)  # both announcements' jobs due at once
    await until(lambda: len(all_dms(world)) == 1, 10, "the first DM")
    for k in range(1, 4):
        turn = due + timedelta(seconds=k * spacing)
        clock.set(turn - timedelta(milliseconds=1))
        await until(
            lambda: any(0 < s < 0.01 for s in clock.sleeping), 10, "a job a ms from its turn"
        )
        assert len(all_dms(world)) == k  # not a millisecond early
        clock.set(turn)
        await until(lambda k=k: len(all_dms(world)) == k + 1, 10, f"DM {k + 1}")
    await advance(crier, clock, 1)
    assert len(all_dms(world)) == 4


# --- two sessions, two instances, two languages ------------------------------------------------


async def test_two_instances_remind_each_member_once_and_a_press_takes_effect_once(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    a = await crier_factory(shard_count=1, shard_ids=(0,))
    b = await crier_factory(shard_count=1, shard_ids=(0,))
    await world.fake.wait_until(
        lambda: len(world.fake.gateway.connected_sessions) == 2, what="both sessions up"
    )
    n = await schedule(world, repeat="daily at 09:00", message="Twice?")
    await world.fake.wait_until(lambda: lost(a, b) >= 1, what="the other session gave up")
    await run_command(world, "edit", id=n, reminder="15m")
    await world.fake.wait_until(lambda: lost(a, b) >= 2, what="the other session gave up")
    members = [world.guild.add_member(name=f"m{i}") for i in range(40)]
    for i, m in enumerate(members):
        await run_command(world, "remindme", by=m, id=n)
        await world.fake.wait_until(lambda i=i: lost(a, b) >= 3 + i, what="one answer")
    clock.set(NINE)
    for app in (a, b):
        await app.sched.wait_idle()
    [post] = posts(world, world.news)
    aid = await ann_id(a, world, n)
    h = await world.fake.click_button(post, REMIND_BUTTON.format(aid), world.member)
    await h.response()
    await world.fake.wait_until(lambda: lost(a, b) >= 43, what="the press handled once")
    assert [cb.accepted for cb in h.callbacks].count(True) == 1
    clock.set(NINE + DAY - timedelta(minutes=15))
    for _ in range(2):
        for app in (a, b):
            await app.sched.wait_idle()
    got = sorted(m.channel_id for m in all_dms(world))
    assert len(got) == 41 == len(set(got))  # one each, the presser's too
    assert world.fake.nonce_dedup_hits == 0
    async with a.sched.reader() as db:
        cur = await db.execute("SELECT COUNT(*) AS n FROM bot_reminder_subscribers")
        assert (await cur.fetchone())["n"] == 41


def lost(*apps: Crier) -> int:
    return sum(app.bot.stats.interactions_lost for app in apps)


async def test_a_french_member_is_answered_and_reminded_in_french(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await daily(world, crier, clock)
    h = await world.fake.invoke_command(
        world.guild, world.general, world.member, "remindme", {"id": n}, locale="fr"
    )
    answer = (await h.response()).content or ""
    assert "Vous recevrez un rappel de l'annonce **#1**" in answer, answer
    assert "15 minutes avant chaque publication" in answer
    await advance_to(crier, clock, NINE - timedelta(minutes=15))
    [dm] = dms(world, world.member)
    assert dm.content.startswith("⏰ Rappel : ")
    assert "> Standup 2 mars 2030" in dm.content  # its {date} in French too
    assert "Vous avez demandé un rappel pour l'annonce #1" in dm.content


async def test_a_second_job_for_the_same_occurrence_reminds_nobody_twice(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Two jobs due together for one announcement (a plan after a press racing the planned
    run, or a job made twice): each member is recorded by one of them, DMed once, and no
    second send even reaches Discord (its nonce is not what keeps it single)."""
    n = await daily(world, crier, clock)
    members = [world.guild.add_member(name=f"m{i}") for i in range(3)]
    for m in members:
        await run_command(world, "remindme", by=m, id=n)
    aid = await ann_id(crier, world, n)
    due = (NINE - timedelta(minutes=15)).timestamp()
    async with crier.sched.transaction() as ctx:
        for key in ("a", "b"):
            await ctx.scheduler.enqueue(
                "announcements:remind", RemindArgs(aid), run_at=due, idempotency_key=key
            )
    await advance_to(crier, clock, NINE - timedelta(minutes=15))
    assert [len(dms(world, m)) for m in members] == [1, 1, 1]
    sends = [r for r in world.fake.requests if r.method == "POST" and "/messages" in r.path
             and world.fake.channels[int(r.path.split("/")[2])].guild is None]  # fmt: skip
    assert len(sends) == 3
    assert world.fake.nonce_dedup_hits == 0


async def test_a_member_who_asked_and_is_interested_is_reminded_once_at_their_lead(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    """Interested in the event (reminded 15 minutes before) and asked with a lead of their
    own (5 minutes): one DM, at their own lead."""
    world.guild.set_bot_permissions(BASE | P.CREATE_EVENTS)
    crier = await crier_factory(event_lead=3600.0)
    n = await schedule(
        world, repeat="daily at 09:00", message="Both", event=True, event_location="Here"
    )
    await run_command(world, "edit", id=n, reminder="15m")
    await run_command(world, "remindme", by=world.member, id=n, before="5m")
    await advance(crier, clock, 1)
    [event] = world.fake.scheduled_events.of(world.guild)
    world.fake.scheduled_events.mark_interested(event, world.member)
    await advance_to(crier, clock, NINE - timedelta(minutes=15))
    assert dms(world, world.member) == []
    await advance_to(crier, clock, NINE - timedelta(minutes=5))
    assert len(dms(world, world.member)) == 1
    await advance_to(crier, clock, NINE)
    [dm] = dms(world, world.member)
    assert "You asked to be reminded" in dm.content


async def test_a_lead_reached_while_a_group_goes_is_reminded_right_after_it(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    """Three members at 15 minutes, 2 s apart, and one at 14 min 59 s, whose lead comes
    while the three are being sent: the next run, planned for right after, reminds them."""
    spacing = 2.0
    crier = await crier_factory(reminder_spacing=spacing)
    n = await daily(world, crier, clock)
    for i in range(3):
        await run_command(world, "remindme", by=world.guild.add_member(name=f"m{i}"), id=n)
    await run_command(world, "remindme", by=world.member, id=n, before="899s")
    await advance(crier, clock, 1)
    clock.set(NINE - timedelta(minutes=15))
    await until(lambda: len(all_dms(world)) == 1 and bool(clock.sleeping), 10, "the first DM")
    await run_turns(crier, clock, spacing, 3)
    assert len(all_dms(world)) == 4
    assert len(dms(world, world.member)) == 1


async def test_an_occurrence_s_rows_are_folded_into_counts_once_it_is_past(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The rows of each (occurrence, member) are once-keys only while the occurrence is to
    come: an hour after it they are counted and deleted, and the counts of the last five
    occurrences are kept."""
    n = await daily(world, crier, clock)
    for i in range(3):
        await run_command(world, "remindme", by=world.guild.add_member(name=f"m{i}"), id=n)
    for day in range(8):
        await advance_to(crier, clock, NINE + day * DAY - timedelta(minutes=15))
    aid = await ann_id(crier, world, n)
    async with crier.sched.reader() as db:
        cur = await db.execute(
            "SELECT DISTINCT fire_ts FROM bot_reminders WHERE announcement_id = ?", (aid,)
        )
        live = [r["fire_ts"] for r in await cur.fetchall()]
        cur = await db.execute(
            "SELECT fire_ts, sent FROM bot_reminder_counts WHERE announcement_id = ? "
            "ORDER BY fire_ts",
            (aid,),
        )
        counted = [(r["fire_ts"], r["sent"]) for r in await cur.fetchall()]
    assert live == [(NINE + 7 * DAY).timestamp()]  # the one to come only
    assert counted == [((NINE + d * DAY).timestamp(), 3) for d in range(2, 7)]
    assert len(all_dms(world)) == 24


async def test_a_run_discord_keeps_failing_gives_up_counted(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await daily(world, crier, clock)
    await run_command(world, "remindme", by=world.member, id=n)
    await dm_fault(world, world.member, status=503, times=5)
    await advance_to(crier, clock, NINE - timedelta(minutes=15))
    for _ in range(4):  # (a time with microseconds rounds down: a millisecond past it)
        job = await retried_job(crier)
        await advance_to(crier, clock, job.next_at + timedelta(milliseconds=1))
    assert dms(world, world.member) == []
    info = (await run_command(world, "info", id=n)).content or ""
    assert "0 sent · 1 skipped (1 may not have been delivered)" in info, info
    await advance_to(crier, clock, NINE + DAY - timedelta(minutes=15))
    assert len(dms(world, world.member)) == 1  # the next occurrence's, as usual


async def test_a_pause_in_the_middle_of_a_group_stops_the_dms_not_sent_yet(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    """The check is made at send time: a pause that commits while a group is on its way
    takes back the reminders not sent yet, and none of them goes."""
    spacing = 2.0
    crier = await crier_factory(reminder_spacing=spacing)
    n = await daily(world, crier, clock)
    for i in range(3):
        await run_command(world, "remindme", by=world.guild.add_member(name=f"m{i}"), id=n)
    await advance(crier, clock, 1)
    due = NINE - timedelta(minutes=15)
    clock.set(due)
    await until(lambda: len(all_dms(world)) == 1 and bool(clock.sleeping), 10, "the first DM")
    await run_command(world, "pause", id=n)
    await run_turns(crier, clock, spacing, 3)
    assert len(all_dms(world)) == 1
    await run_command(world, "resume", id=n)  # before its time: the others are reminded now
    clock.advance(1)  # (the plan after the resume)
    await until(lambda: len(all_dms(world)) == 2, 10, "the second DM")
    clock.advance(spacing)
    await until(lambda: len(all_dms(world)) == 3, 10, "the third DM")


async def test_a_skip_while_a_run_goes_through_its_groups_stops_the_next_group(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    """27 members (two groups, half a second apart): the occurrence skipped after the
    first DM reminds nobody more, neither the rest of the first group nor the second. (The
    run's whole course stays within its lease on the fake clock, which its heartbeats,
    on real time, don't follow.)"""
    spacing = 0.5
    crier = await crier_factory(reminder_spacing=spacing)
    n = await daily(world, crier, clock)
    for i in range(27):
        await run_command(world, "remindme", by=world.guild.add_member(name=f"m{i}"), id=n)
    await advance(crier, clock, 1)
    due = NINE - timedelta(minutes=15)
    clock.set(due)
    await until(lambda: len(all_dms(world)) == 1 and bool(clock.sleeping), 10, "the first DM")
    await run_command(world, "skip", id=n)
    await run_turns(crier, clock, spacing, 40)  # past every turn either group could take
    for r in await crier.sched.runs(fn="announcements:remind"):
        print("RUN", r.outcome, r.error, r.started_at - due.timestamp())
    async with crier.sched.reader() as db:
        cur = await db.execute("SELECT state, count(*) AS n FROM bot_reminders GROUP BY state")
        print([dict(r) for r in await cur.fetchall()])
    assert len(all_dms(world)) == 1


async def run_turns(crier: Crier, clock: FakeClock, spacing: float, turns: int) -> None:
    """Move the clock ``turns`` turns of ``spacing`` on, one at a time (a jump past the
    lease would be a stalled run), letting the reminder job take each turn."""

    async def settled() -> bool:
        running = [
            j for j in await crier.sched.list_jobs(limit=100)
            if j.fn == "announcements:remind" and j.state == JobState.IN_PROGRESS
        ]  # fmt: skip
        return not running or bool(clock.sleeping)

    for _ in range(turns):
        clock.advance(spacing)
        await until(settled, 10, "the reminder job to take its turn")
    await crier.sched.wait_idle()


# --- templates, export and import ----------------------------------------------------------------


async def test_a_template_keeps_the_lead_and_an_export_carries_it_to_another_server(
    world: World, crier: Crier, other: World
) -> None:
    """/template save keeps the reminder lead and /schedule template: applies it; /export
    writes it (``reminder_seconds``, not who asked), /import makes it again."""
    n = await schedule(world, repeat="daily at 09:00", message="Kept")
    await run_command(world, "edit", id=n, reminder="30m")
    await run_command(world, "remindme", by=world.member, id=n)
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "template save", {"name": "t", "from": n}
    )
    saved = (await h.response()).content or ""
    assert "reminders 30 minutes before" in saved, saved
    made = await schedule(world, template="t", when="in 2h")
    info = (await run_command(world, "info", id=made)).content or ""
    assert "**Reminders:** 30 minutes before each post, by DM · 0 members asked" in info

    _, data = await export(world)
    doc = json.loads(data)
    assert [a["reminder_seconds"] for a in doc["announcements"]] == [1800, 1800]
    assert [t["reminder_seconds"] for t in doc["templates"]] == [1800]
    done, _ = await import_file(other, data, confirm=True)
    assert "Imported" in done.content, done.content
    service = crier.bot.announcements
    imported = (await service.listing(other.guild.id, 0, 10)).items
    assert [await service.reminder_lead(a.id) for a in imported] == [1800.0, 1800.0]
    assert (await service.template(other.guild.id, "t")).reminder == 1800.0
    async with crier.sched.reader() as db:
        cur = await db.execute(
            "SELECT COUNT(*) AS n FROM bot_reminder_subscribers WHERE guild_id = ?",
            (other.guild.id,),
        )
        assert (await cur.fetchone())["n"] == 0  # who asked stays in the first server
