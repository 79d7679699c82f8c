"""Discord scheduled events beside an announcement's posts (``/schedule event: true``), end
to end through discord.py against the fake Discord, on SQLite and PostgreSQL: one event per
occurrence, made ahead of it, exactly once (a 502 after the create, a crash between the
create and its record), edited on /edit, canceled on /skip, /cancel and /pause, made again
on /resume; the server's limit of 100 events and the bot's permissions refused at
scheduling with nothing written."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bot.requests.export_doc import VERSION as EXPORT_VERSION
from scheduler import JobState
from tests.bot.conftest import NOW, CrierFactory, World, db_snapshot, run_command
from tests.bot.conftest import schedule_id as schedule
from tests.bot.test_crash_bot import DEADLINE, HOLD, Harness
from tests.bot.test_delivery import advance, advance_to_retry, posts
from tests.fakediscord import Permissions as P
from tests.scheduler.helpers import settle
from tests.support.processes import Process, procs, until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.fakediscord.events import ScheduledEvent

ROOT = Path(__file__).resolve().parents[2]
BASE = P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.EMBED_LINKS


@pytest.fixture
async def crier(world: World, crier_factory: CrierFactory, db_url: str) -> Crier:
    world.guild.set_bot_permissions(BASE | P.CREATE_EVENTS)
    return await crier_factory(database_url=db_url, event_lead=86400.0)


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


def refuse_next_event(world: World) -> None:
    """Discord refuses the next event the bot creates in the world's server (400, 50035)."""
    world.fake.faults.add(
        method="POST",
        path_regex=f"/guilds/{world.guild.id}/scheduled-events",
        status=400,
        code=50035,
        times=1,
    )


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


async def event_jobs(crier: Crier) -> list[int]:
    """The pending events jobs."""
    async with crier.sched.reader() as db:
        cur = await db.execute(
            "SELECT id FROM scheduler_jobs WHERE fn = 'announcements:events' AND state = 'pending' "
            "ORDER BY next_ts"
        )
        return [int(r["id"]) for r in await cur.fetchall()]


# --- recurring: each occurrence's event made before it, within the lead time ----------------


async def test_each_occurrence_gets_its_event_within_the_lead_time(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Daily at 09:00 UTC from 12:00 with a lead of one day: tomorrow's event at once, the
    day after's once it is within a day (when tomorrow's post goes), never twice."""
    await schedule(
        world, repeat="daily at 09:00", timezone="UTC", message="Standup",
        event=True, event_location="Room 4",
    )  # fmt: skip
    await advance(crier, clock, 1)
    day1 = (NOW + timedelta(hours=21)).timestamp()
    assert starts(world) == [day1]
    await advance(crier, clock, timedelta(hours=21))  # the first post; the next event is due
    assert starts(world) == [day1, day1 + 86400]
    await advance(crier, clock, timedelta(days=1))
    assert starts(world) == [day1, day1 + 86400, day1 + 2 * 86400]
    assert len(creates(world)) == 3
    assert [r["state"] for r in await event_rows(crier)] == ["created"] * 3


async def test_a_frequent_announcement_keeps_at_most_events_ahead_future_events(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Issue 35: a per-minute announcement with `event: true` made an event for every
    minute of the lead time until Discord's 100 stopped it. At most EVENTS_AHEAD (3) future
    events: the next three minutes'; as each minute passes, the next one's is made."""
    await schedule(
        world, when="in 1m", repeat="every 1m", message="Tick", event=True,
        event_location="Here",
    )  # fmt: skip
    await advance(crier, clock, 1)
    minute = [(NOW + timedelta(minutes=m)).timestamp() for m in range(1, 9)]
    assert starts(world) == minute[:3]
    for m in range(1, 5):
        await advance(crier, clock, timedelta(minutes=1))
        now = clock.now().timestamp()
        assert [t for t in starts(world) if t > now] == minute[m : m + 3]
    assert len(creates(world)) == 3 + 4


# --- exactly once ----------------------------------------------------------------------------


async def test_a_502_after_the_create_yields_one_event(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Discord made the event and answered 502: discord.py hands the 502 back at once (one
    create, not its own retry); the intent is recorded, so the job's re-run looks the event
    up among the server's events and records it instead of creating a second one."""
    path = f"/guilds/{world.guild.id}/scheduled-events"
    world.fake.faults.add(method="POST", path_regex=re.escape(path) + "$", status=502,
                          after_effect=True)  # fmt: skip
    await schedule(world, when="in 2h", message="Meetup", event=True, event_location="Hall")
    await advance(crier, clock, 1)
    assert [r.status for r in creates(world)] == [502]  # not retried by discord.py
    [made] = events(world)
    [row] = await event_rows(crier)
    assert (row["state"], row["event_id"]) == ("creating", None)
    [job] = await event_jobs(crier)

    await advance_to_retry(crier, clock, job)

    assert len(creates(world)) == 1
    assert events(world) == [made]
    [row] = await event_rows(crier)
    assert (row["state"], row["event_id"]) == ("created", made.id)
    lists = [r for r in world.fake.requests if r.method == "GET" and r.path == path]
    assert lists, "the re-run asked Discord for the server's events"


async def test_the_look_up_takes_only_the_bots_unrecorded_event_with_that_name_and_start(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """After a 502 that made nothing, the re-run finds no event of its own (a member's event
    with the same name and start is not taken) and creates it: one event of the bot's."""
    path = f"/guilds/{world.guild.id}/scheduled-events"
    world.fake.faults.add(method="POST", path_regex=re.escape(path) + "$", status=502)
    world.fake.scheduled_events.add(world.guild, "Meetup", AT_2H)  # a member's
    await schedule(world, when="in 2h", message="Meetup", event=True, event_location="Hall")
    await advance(crier, clock, 1)
    [job] = await event_jobs(crier)
    await advance_to_retry(crier, clock, job)
    [row] = await event_rows(crier)
    mine = [e for e in events(world) if e.creator_id == world.fake.bot_user.id]
    assert [e.id for e in mine] == [row["event_id"]]
    assert [r.status for r in creates(world)] == [502, 200]


# --- edit, skip, cancel, pause, resume -------------------------------------------------------


async def test_an_edit_updates_the_same_event(world: World, crier: Crier, clock: FakeClock) -> None:
    n = await schedule(world, when="in 2h", message="Meetup", event=True, event_location="Hall")
    await advance(crier, clock, 1)
    [before] = events(world)
    moved_to = (clock.now() + timedelta(hours=3)).timestamp()
    cb = await run_command(world, "edit", id=n, message="Meetup, moved", when="in 3h",
                           event_location="Garden")  # fmt: skip
    assert "Edited" in (cb.content or "") or "edited" in (cb.content or ""), cb.content
    await advance(crier, clock, 1)
    [after] = events(world)
    assert after.id == before.id
    assert (after.name, after.location) == ("Meetup, moved", "Garden")
    assert after.start_ts == moved_to
    assert len(creates(world)) == 1
    patches = [
        r for r in world.fake.requests if r.method == "PATCH" and "scheduled-events" in r.path
    ]
    assert [r.status for r in patches] == [200]


async def test_skip_cancels_the_skipped_occurrences_event(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await schedule(world, repeat="every 6 hours", when="in 1h", message="Check",
                       event=True, event_location="Desk")  # fmt: skip
    await advance(crier, clock, 1)
    first = (NOW + timedelta(hours=1)).timestamp()
    assert starts(world)[:2] == [first, first + 6 * 3600]
    cb = await run_command(world, "skip", id=n)
    assert "kip" in (cb.content or ""), cb.content
    await advance(crier, clock, 1)
    assert first not in starts(world)
    assert starts(world)[0] == first + 6 * 3600
    gone = world.fake.scheduled_events.of(world.guild, live_only=False)
    assert [e.status for e in gone if e.start_ts == first] == [4]


async def test_cancel_cancels_its_events(world: World, crier: Crier, clock: FakeClock) -> None:
    n = await schedule(world, repeat="every 6 hours", when="in 1h", message="Check",
                       event=True, event_location="Desk")  # fmt: skip
    await advance(crier, clock, 1)
    assert len(events(world)) >= 2
    await run_command(world, "cancel", id=n)
    await advance(crier, clock, 1)
    assert events(world) == []
    assert {r["state"] for r in await event_rows(crier)} == {"canceled"}


async def test_pause_cancels_the_coming_events_and_resume_makes_them_again(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await schedule(world, repeat="every 6 hours", when="in 1h", message="Check",
                       event=True, event_location="Desk")  # fmt: skip
    await advance(crier, clock, 1)
    made = [e.id for e in events(world)]
    assert len(made) >= 2
    await run_command(world, "pause", id=n)
    await advance(crier, clock, 1)
    assert events(world) == []
    await run_command(world, "resume", id=n)
    await advance(crier, clock, 1)
    again = events(world)
    assert len(again) == len(made)
    assert not {e.id for e in again} & set(made)  # new events, the canceled ones stay so
    assert {r["state"] for r in await event_rows(crier)} == {"created"}


# --- refused at scheduling, nothing written ---------------------------------------------------


async def refused(world: World, crier: Crier, says: str, **options: Any) -> None:
    before = await db_snapshot(crier)
    cb = await run_command(world, "schedule", channel=world.news, **options)
    assert cb.ephemeral
    assert says in (cb.content or ""), cb.content
    assert await db_snapshot(crier) == before


async def test_a_server_at_discords_limit_of_100_events_is_refused_naming_it(
    world: World, crier: Crier
) -> None:
    for i in range(100):
        world.fake.scheduled_events.add(world.guild, f"Other {i}", AT_2H + i)
    await refused(world, crier, "the most Discord allows (100)", when="in 2h", message="x",
                  event=True, event_location="Hall")  # fmt: skip
    assert len(creates(world)) == 0


async def test_without_create_events_it_is_refused_asking_for_it(
    world: World, crier: Crier
) -> None:
    world.guild.set_bot_permissions(BASE)
    await refused(world, crier, "**Create Events**", when="in 2h", message="x", event=True,
                  event_location="Hall")  # fmt: skip
    # Without `event`, nothing is asked of events.
    await schedule(world, when="in 2h", message="no event")


async def test_an_event_in_a_voice_channel_needs_connect_there(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    voice = world.guild.add_channel("Lounge", type=2)
    voice.set_overwrite(world.guild.bot_member, deny=P.CONNECT)
    await refused(world, crier, "**Connect**", when="in 2h", message="x", event=True,
                  event_channel=voice)  # fmt: skip
    voice.set_overwrite(world.guild.bot_member, allow=P.CONNECT)
    await schedule(world, when="in 2h", message="Voice meetup", event=True, event_channel=voice)
    await advance(crier, clock, 1)
    [event] = events(world)
    assert (event.entity_type, event.channel_id, event.location) == (2, voice.id, None)


async def test_event_options_without_a_place_are_refused(world: World, crier: Crier) -> None:
    await refused(world, crier, "needs a place", when="in 2h", message="x", event=True)
    await refused(world, crier, "add `event: true`", when="in 2h", message="x",
                  event_location="Hall")  # fmt: skip


# --- a real bot SIGKILLed between Discord's create and the bot's record -----------------------


@pytest.fixture
async def bots() -> AsyncIterator[list[Process]]:
    async with procs() as started:
        yield started


async def test_a_bot_killed_between_discords_create_and_its_record_makes_one_event(
    world: World, tmp_path: Path, bots: list[Process]
) -> None:
    """``python -m bot`` asks Discord to create the event; the fake creates it and holds the
    answer; the bot is SIGKILLed (its intent recorded, no id). A new bot takes the job over
    once its lease runs out, finds the event among the server's and records it: one create,
    one event."""
    world.guild.set_bot_permissions(BASE | P.CREATE_EVENTS)
    h = Harness(world, tmp_path, bots)
    fake = world.fake
    path = f"/guilds/{world.guild.id}/scheduled-events"
    fake.faults.add(method="POST", path_regex=re.escape(path) + "$", after_effect=True, delay=HOLD)
    first = await h.start_bot()
    at = int(time.time()) + 3600
    text = await h.command("schedule", when=str(at), message="Crash meetup", channel=world.news,
                           event=True, event_location="Hall")  # fmt: skip
    assert "Scheduled announcement" in text, text
    await fake.wait_until(lambda: len(events(world)) == 1, timeout=DEADLINE, what="the create")
    [made] = events(world)
    rows = h.query("SELECT state, event_id FROM bot_events")
    assert rows == [{"state": "creating", "event_id": None}], rows

    await h.kill(first)
    await h.start_bot()

    def recorded() -> bool:
        return h.query("SELECT state, event_id FROM bot_events") == [
            {"state": "created", "event_id": made.id}
        ]

    try:
        await until(recorded, DEADLINE, "the new bot to record the event")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{h.logs()}") from None
    assert events(world) == [made]
    assert len(creates(world)) == 1


# --- /info, export and import -----------------------------------------------------------------


async def test_info_shows_the_event_and_its_link(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await schedule(world, when="in 2h", message="Meetup", event=True,
                       event_location="Town hall", event_minutes=45)  # fmt: skip
    await advance(crier, clock, 1)
    [event] = events(world)
    text = (await run_command(world, "info", id=n)).content or ""
    assert "**Discord event:** Town hall, 45 min" in text, text
    assert f"https://discord.com/events/{world.guild.id}/{event.id}" in text, text


async def test_an_export_carries_the_event_and_an_import_makes_it_again(
    world: World, other: World, crier: Crier, clock: FakeClock
) -> None:
    import jsonschema

    other.guild.set_bot_permissions(BASE | P.CREATE_EVENTS)
    voice = world.guild.add_channel("Stage door", type=2)
    other_voice = other.guild.add_channel("Stage door", type=2)
    await schedule(world, when="in 2h", message="Outside", event=True, event_location="Park")
    await schedule(world, when="in 3h", message="Inside", event=True, event_channel=voice,
                   event_minutes=30)  # fmt: skip
    await schedule(world, when="in 4h", message="No event")
    h = await world.fake.invoke_command(world.guild, world.general, world.admin, "export")
    [file] = (await h.final_message(timeout=20)).attachments
    doc = json.loads(file.data)
    assert doc["version"] == EXPORT_VERSION
    schema = json.loads((Path(__file__).parents[2] / "docs" / "export.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert [a["event"] for a in doc["announcements"]] == [
        {"minutes": 60, "location": "Park", "channel": None},
        {"minutes": 30, "location": None,
         "channel": {"id": str(voice.id), "name": "Stage door"}},
        None,
    ]  # fmt: skip

    h = await other.fake.invoke_command(
        other.guild, other.general, other.admin, "import",
        {"file": ("export.json", file.data), "confirm": True},
    )  # fmt: skip
    msg = await h.final_message(timeout=30)
    assert "Imported" in msg.content or "imported" in msg.content, msg.content
    await advance(crier, clock, 1)
    made = events(other)
    assert sorted((e.name, e.location, e.channel_id) for e in made) == [
        ("Inside", None, other_voice.id),
        ("Outside", "Park", None),
    ]


async def test_an_event_discord_refuses_later_is_recorded_and_reported_and_the_post_goes_out(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The server reached Discord's 100 events after scheduling: the next occurrence's event
    is refused (30038), recorded failed with why, reported in the log channel; the posts go
    on."""
    log_channel = world.guild.add_channel("crier-log")
    await run_command(world, "settings", log_channel=log_channel)
    await schedule(world, repeat="daily at 09:00", timezone="UTC", message="Standup",
                   event=True, event_location="Room 4")  # fmt: skip
    await advance(crier, clock, 1)
    assert len(events(world)) == 1
    for i in range(99):
        world.fake.scheduled_events.add(world.guild, f"Other {i}", AT_2H + i)

    await advance(crier, clock, timedelta(hours=21))

    assert len(posts(world, world.news)) == 1
    rows = await event_rows(crier)
    assert [r["state"] for r in rows] == ["created", "failed"]
    [report] = posts(world, log_channel)
    assert "could not be created" in report.content
    assert "100 scheduled events" in report.content
    assert [r.status for r in creates(world)] == [200, 400]


async def test_one_job_at_a_time_makes_an_announcements_events(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """An edit while the first events job is inside its create (parked at the fake before
    Discord made anything): the edit's job waits its turn (the scheduler's per-key
    concurrency), pending without a lease or an attempt spent, and never looks for the
    event the other one is still making (it would find none and create a second); it starts
    as soon as the first ends, woken by that commit (the clock stands still)."""
    gate = world.fake.scheduled_events.hold_creates()
    n = await schedule(world, when="in 2h", message="Meetup", event=True, event_location="Hall")
    await world.fake.wait_until(
        lambda: world.fake.scheduled_events.parked == 1, timeout=DEADLINE, what="the create"
    )
    path = f"/guilds/{world.guild.id}/scheduled-events"

    def lookups() -> int:
        return len([r for r in world.fake.requests if r.method == "GET" and r.path == path])

    counted = lookups()  # the room check of /schedule
    await run_command(world, "edit", id=n, message="Meetup, renamed")
    await settle(crier.sched)  # the driver has looked at the edit's job (due now)
    [second] = await event_jobs(crier)
    job = await crier.sched.get_job(second)
    assert job is not None
    assert (job.state, job.lease_expires_at, job.attempts) == (JobState.PENDING, None, 0)
    assert job.concurrency_key is not None
    assert lookups() == counted, "the edit's job looked for the event the other one is making"
    gate.set()
    await crier.sched.wait_idle()

    [event] = events(world)
    assert event.name == "Meetup, renamed"  # the second job edited the one event
    assert len(creates(world)) == 1
    job = await crier.sched.get_job(second)
    assert job is not None
    assert (job.state, job.attempts) == (JobState.SUCCESS, 0)


async def test_an_events_job_stored_before_takes_its_turn_after_the_upgrade(
    world: World, crier: Crier
) -> None:
    """Bot migration 0023 gives the events jobs an earlier release stored (no concurrency
    key: the claims table kept them apart) the key the new ones carry."""
    from bot.announcements import EVENTS_FN, EventsArgs

    async with crier.sched.transaction() as ctx:
        old = await ctx.scheduler.enqueue(EVENTS_FN, EventsArgs(7), run_at=AT_2H)
        done = await ctx.scheduler.enqueue(EVENTS_FN, EventsArgs(8), run_at=AT_2H)
        await ctx.db.execute("UPDATE scheduler_jobs SET state = 'success' WHERE id = ?", (done,))
    dialect = crier.sched.store.dialect
    path = ROOT / "migrations" / "bot" / dialect / "0023_events_one_at_a_time.sql"
    sql = "\n".join(line for line in path.read_text().splitlines() if not line.startswith("--"))
    [update] = [part for part in sql.split(";") if "UPDATE scheduler_jobs" in part]
    async with crier.sched.transaction() as ctx:
        await ctx.db.execute(update)
    for job_id, key in ((old, "events:7"), (done, None)):
        job = await crier.sched.get_job(job_id)
        assert job is not None
        assert (job.concurrency_key, job.concurrency_limit) == (key, key and 1)


async def test_paused_by_a_failed_post_its_coming_events_are_canceled(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await schedule(world, repeat="every 6 hours", when="in 1h", message="Check",
                   event=True, event_location="Desk")  # fmt: skip
    await advance(crier, clock, 1)
    assert len(events(world)) >= 2
    world.news.set_overwrite(world.guild.bot_member, deny=P.SEND_MESSAGES)
    await advance(crier, clock, timedelta(hours=1))
    async with crier.sched.reader() as db:
        cur = await db.execute("SELECT state FROM bot_announcements")
        assert [r["state"] for r in await cur.fetchall()] == ["paused"]
    await advance(crier, clock, 60)  # its job waited its turn behind the one the post started
    # The event of the occurrence that failed (its time has come) stays; the coming ones go.
    assert starts(world) == [(NOW + timedelta(hours=1)).timestamp()]


async def test_an_edit_of_the_event_alone_says_what_it_changed_and_keeps_the_history(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """/edit with event options only: each answer names the event's change (before →
    after), not "Nothing to change"; the history records it; Discord's event follows."""
    n = await schedule(world, when="in 2h", message="Meetup")
    await advance(crier, clock, 1)
    assert events(world) == []

    cb = await run_command(world, "edit", id=n, event=True, event_location="Hall")
    assert "**Discord event:** none → Hall, 60 min" in (cb.content or "").split("\n"), cb.content
    await advance(crier, clock, 1)
    [made] = events(world)
    assert made.location == "Hall"

    cb = await run_command(world, "edit", id=n, event_location="Garden", event_minutes=30)
    assert "**Discord event:** Hall, 60 min → Garden, 30 min" in (cb.content or "").split("\n")
    await advance(crier, clock, 1)
    [moved] = events(world)
    assert (moved.id, moved.location) == (made.id, "Garden")

    cb = await run_command(world, "edit", id=n, event=False)
    assert "**Discord event:** Garden, 30 min → none" in (cb.content or "").split("\n")
    await advance(crier, clock, 1)
    assert events(world) == []

    cb = await run_command(world, "edit", id=n, event=False)
    assert "Nothing to change" in (cb.content or ""), cb.content
    async with crier.sched.reader() as db:
        cur = await db.execute("SELECT detail FROM bot_history WHERE action = 'edited' ORDER BY id")
        details = [r["detail"] for r in await cur.fetchall()]
    assert details == [
        "event: none → Hall, 60 min",
        "event: Hall, 60 min → Garden, 30 min",
        "event: Garden, 30 min → none",
    ]


async def test_an_event_edit_in_german_is_said_in_german(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    n = await schedule(world, when="in 2h", message="Treffen", event=True, event_location="Saal")
    handle = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "edit",
        {"id": n, "event_minutes": 90}, locale="de",
    )  # fmt: skip
    answer = ((await handle.response(timeout=5)).content or "").split("\n")
    assert "**Discord-Event:** Saal, 60 Min. → Saal, 90 Min." in answer, answer
