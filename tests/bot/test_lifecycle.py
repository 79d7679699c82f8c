"""An announcement's course after it is scheduled: /pause, /resume, /skip, `until`, and the
member's own /timezone, end to end through the real discord.py client against the fake
Discord, on a FakeClock, with the database read back (announcement, deliveries, schedule,
history). Every test runs on SQLite, and on PostgreSQL when a server is configured."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.announcements import Announcement, schedule_name
from bot.db import BotDb
from bot.posting.delivery import PERMANENT_CODES, nonce_for
from scheduler import ScheduleNotFound
from tests.bot.conftest import NOW, World, db_snapshot, run_command
from tests.bot.test_commands import any_db_crier  # noqa: F401 (a fixture, used by crier)
from tests.fakediscord import Member
from tests.fakediscord import Permissions as P
from tests.fakediscord.interactions import CB_AUTOCOMPLETE_RESULT

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.fakediscord.state import Channel

# --- helpers -------------------------------------------------------------------------------------


@pytest.fixture
def crier(any_db_crier: Crier) -> Crier:  # noqa: F811 (this module's bot: on either database)
    return any_db_crier


def stamp(dt: datetime) -> str:
    n = int(dt.timestamp())
    return f"<t:{n}:F> (<t:{n}:R>)"


async def schedule(world: World, when: str, message: str, **options: Any) -> int:
    """``/schedule`` by the admin into #news; returns the announcement's number."""
    cb = await run_command(
        world, "schedule", when=when, message=message, channel=world.news, **options
    )
    found = re.search(r"Scheduled announcement \*\*#(\d+)\*\*", cb.content or "")
    assert found is not None, cb.content
    return int(found[1])


async def answer(world: World, name: str, by: Member | None = None, **options: Any) -> str:
    cb = await run_command(world, name, by=by, **options)
    assert cb.ephemeral
    return cb.content or ""


async def get(crier: Crier, world: World, local_id: int) -> Announcement:
    return await crier.bot.announcements.get(world.guild.id, local_id)


async def advance_to(crier: Crier, clock: FakeClock, when: datetime) -> None:
    clock.set(when)
    await crier.sched.wait_idle()


def posts(world: World, channel: Channel | None = None) -> list[str]:
    return [m.content for m in world.fake.bot_messages(channel or world.news)]


async def deliveries(crier: Crier, ann: Announcement) -> list[tuple[float, str]]:
    async with crier.sched.reader() as db:
        rows = await BotDb(db).recent_deliveries(ann.id, 100)
    return sorted((d.fire_ts, str(d.state)) for d in rows)


async def history(crier: Crier, ann: Announcement) -> list[tuple[str, int | None]]:
    async with crier.sched.reader() as db:
        entries = await BotDb(db).history(ann.id, 100)
    return [(str(e.action), e.actor_id) for e in entries]


async def everything(crier: Crier) -> dict[str, Any]:
    """Every row kept, history and members' zones included (to assert nothing changed)."""
    rows = await db_snapshot(crier)
    async with crier.sched.reader() as db:
        for table in ("bot_history", "bot_member_settings"):
            cur = await db.execute(f"SELECT * FROM {table}")
            rows[table] = sorted(tuple(r) for r in await cur.fetchall())
    return rows


FIRST = NOW + timedelta(minutes=10)
HOURLY = [FIRST + timedelta(hours=i) for i in range(8)]


# --- /pause and /resume --------------------------------------------------------------------------


@pytest.mark.parametrize("repeat", ["every 1h", "0 * * * *"])
async def test_pause_across_due_times_then_resume_posts_only_future_ones(
    world: World, crier: Crier, clock: FakeClock, repeat: str
) -> None:
    if repeat.startswith("0 "):  # a cron rule: on the hour, from 13:00
        first, times = NOW + timedelta(hours=1), [NOW + timedelta(hours=i) for i in range(1, 9)]
    else:
        first, times = FIRST, HOURLY
    local = await schedule(world, "in 10m" if first == FIRST else "13:00", "Status", repeat=repeat)
    ann = await get(crier, world, local)
    await advance_to(crier, clock, times[0])
    assert posts(world) == ["Status"]

    text = await answer(world, "pause", id=local)
    assert f"Paused announcement **#{local}**" in text
    paused = await get(crier, world, local)
    assert paused.state == "paused"
    assert (await crier.sched.schedules.get(schedule_name(ann.id))).paused

    # Two due times pass while it is paused (and the bot keeps running): nothing posts.
    await advance_to(crier, clock, times[2] + timedelta(minutes=20))
    assert posts(world) == ["Status"]

    text = await answer(world, "resume", id=local)
    assert f"Resumed announcement **#{local}**" in text
    assert f"**Next:** {stamp(times[3])}" in text
    after = await get(crier, world, local)
    assert (after.state, after.failure) == ("scheduled", None)
    info = await crier.sched.schedules.get(schedule_name(ann.id))
    assert not info.paused
    assert info.next_fire == times[3]

    # No burst and no late post of the missed ones: the next post is the next future time.
    await advance_to(crier, clock, times[3] - timedelta(seconds=1))
    assert posts(world) == ["Status"]
    await advance_to(crier, clock, times[3])
    assert posts(world) == ["Status", "Status"]
    await advance_to(crier, clock, times[4])
    assert posts(world) == ["Status"] * 3
    await advance_to(crier, clock, times[4] + timedelta(minutes=1))
    assert await deliveries(crier, ann) == [
        (times[0].timestamp(), "sent"),
        (times[3].timestamp(), "sent"),
        (times[4].timestamp(), "sent"),
    ]
    assert all("Sent late" not in m for m in posts(world))
    admin = world.admin.user.id
    assert await history(crier, ann) == [
        ("created", admin),
        ("paused", admin),
        ("resumed", admin),
    ]


async def test_an_occurrence_materialized_before_the_pause_does_not_post_after_resume(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """An occurrence whose job exists when the pause lands (due, not yet run) is a time
    missed while paused: resuming later must not post it late."""
    local = await schedule(world, "in 10m", "Status", repeat="every 1h")
    ann = await get(crier, world, local)
    await advance_to(crier, clock, HOURLY[0])
    assert posts(world) == ["Status"]
    await answer(world, "pause", id=local)
    async with crier.sched.transaction() as ctx:  # HOURLY[1]'s job, not run yet (held up)
        await ctx.scheduler.run_at(
            HOURLY[1] + timedelta(minutes=30),
            "announcements:send",
            {"announcement_id": ann.id, "fire_ts": HOURLY[1].timestamp()},
        )
    await advance_to(crier, clock, HOURLY[1] + timedelta(minutes=20))
    await answer(world, "resume", id=local)
    await advance_to(crier, clock, HOURLY[1] + timedelta(minutes=30))
    assert posts(world) == ["Status"]
    assert (HOURLY[1].timestamp(), "skipped") in await deliveries(crier, ann)
    await advance_to(crier, clock, HOURLY[2])
    assert posts(world) == ["Status", "Status"]


async def test_pause_one_off_past_its_time_then_resume_is_refused(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, "in 10m", "Once")
    assert "It will not be posted" in await answer(world, "pause", id=local)
    await advance_to(crier, clock, FIRST + timedelta(minutes=5))
    assert posts(world) == []
    before = await everything(crier)

    text = await answer(world, "resume", id=local)
    assert "passed while it was paused" in text
    assert stamp(FIRST) in text
    assert f"`/edit id:{local} when:…`" in text
    assert "Nothing was changed." in text
    assert await everything(crier) == before
    assert (await get(crier, world, local)).state == "paused"
    await advance_to(crier, clock, FIRST + timedelta(days=1))
    assert posts(world) == []


async def test_pause_one_off_then_resume_before_its_time_posts_it_on_time(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, "in 10m", "Once")
    ann = await get(crier, world, local)
    await answer(world, "pause", id=local)
    await advance_to(crier, clock, FIRST - timedelta(minutes=5))
    text = await answer(world, "resume", id=local)
    assert f"**Next:** {stamp(FIRST)}" in text
    await advance_to(crier, clock, FIRST - timedelta(seconds=1))
    assert posts(world) == []
    await advance_to(crier, clock, FIRST)
    assert posts(world) == ["Once"]
    assert (await get(crier, world, local)).state == "sent"
    assert [a for a, _ in await history(crier, ann)] == ["created", "paused", "resumed"]


async def test_resume_of_a_one_off_whose_job_ran_while_paused_enqueues_a_new_one(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Its job came due while paused (and posted nothing); its time was then moved later
    (as /edit does): resuming gives it a job again."""
    local = await schedule(world, "in 10m", "Once")
    ann = await get(crier, world, local)
    await answer(world, "pause", id=local)
    await advance_to(crier, clock, FIRST)
    later = FIRST + timedelta(hours=1)
    async with crier.sched.transaction() as ctx:  # the new time, as an edit would write it
        await ctx.db.execute(
            "UPDATE bot_announcements SET first_ts = ? WHERE id = ?", (later.timestamp(), ann.id)
        )
    await answer(world, "resume", id=local)
    job_id = (await get(crier, world, local)).job_id
    assert job_id is not None
    assert job_id != ann.job_id
    await advance_to(crier, clock, later)
    assert posts(world) == ["Once"]


async def test_resume_clears_a_failure_pause(world: World, crier: Crier, clock: FakeClock) -> None:
    local = await schedule(world, "in 10m", "Digest", repeat="every 1h")
    ann = await get(crier, world, local)
    world.news.set_overwrite(world.guild.bot_member, deny=P.SEND_MESSAGES)
    await advance_to(crier, clock, HOURLY[0])
    failed = await get(crier, world, local)
    reason = f"{PERMANENT_CODES[50013]} (50013)"
    assert (failed.state, failed.failure) == ("paused", reason)
    assert await history(crier, ann) == [("created", world.admin.user.id), ("failed", None)]

    world.news.set_overwrite(world.guild.bot_member)  # fixed
    await advance_to(crier, clock, HOURLY[1] + timedelta(minutes=1))
    text = await answer(world, "resume", id=local)
    assert "The failure that paused it is cleared" in text
    assert f"**Next:** {stamp(HOURLY[2])}" in text
    after = await get(crier, world, local)
    assert (after.state, after.failure) == ("scheduled", None)
    await advance_to(crier, clock, HOURLY[2])
    assert posts(world) == ["Digest"]


async def test_pause_and_resume_refusals_change_nothing(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, "in 10m", "Status", repeat="every 1h")
    once = await schedule(world, "in 10m", "Once")
    before = await everything(crier)
    assert "isn't paused" in await answer(world, "resume", id=local)
    assert await everything(crier) == before
    await answer(world, "pause", id=local)
    before = await everything(crier)
    assert "already paused" in await answer(world, "pause", id=local)
    assert await everything(crier) == before
    await advance_to(crier, clock, FIRST)
    assert posts(world) == ["Once"]
    before = await everything(crier)
    for command in ("pause", "resume", "skip"):
        text = await answer(world, command, id=once)
        assert f"Announcement #{once} was already posted" in text, (command, text)
    await answer(world, "cancel", id=local)
    before = await everything(crier)
    for command in ("pause", "resume", "skip"):
        assert "was canceled" in await answer(world, command, id=local)
    assert await everything(crier) == before


# --- /skip ---------------------------------------------------------------------------------------


async def test_skip_the_next_occurrence_posts_nothing_then_the_next_one_posts(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, "in 10m", "Status", repeat="every 1h")
    ann = await get(crier, world, local)
    text = await answer(world, "skip", id=local)
    assert f"Skipping announcement **#{local}** at {stamp(HOURLY[0])}" in text
    assert f"**Next after that:** {stamp(HOURLY[1])}" in text
    # Skipped in its rule: the schedule itself never fires it (nothing recorded).
    assert await deliveries(crier, ann) == []
    info = await crier.sched.schedules.get((await get(crier, world, local)).schedule_name or "")
    assert info.next_fire == HOURLY[1]

    await advance_to(crier, clock, HOURLY[0] + timedelta(minutes=1))
    assert posts(world) == []
    await advance_to(crier, clock, HOURLY[1])
    [msg] = world.fake.bot_messages(world.news)
    assert msg.content == "Status"
    assert msg.nonce == nonce_for(ann.id, HOURLY[1].timestamp())

    # Two skips in a row skip two occurrences.
    await answer(world, "skip", id=local)
    text = await answer(world, "skip", id=local)
    assert stamp(HOURLY[3]) in text
    assert f"**Next after that:** {stamp(HOURLY[4])}" in text
    await advance_to(crier, clock, HOURLY[3] + timedelta(minutes=1))
    assert posts(world) == ["Status"]
    await advance_to(crier, clock, HOURLY[4])
    assert posts(world) == ["Status", "Status"]
    assert await deliveries(crier, ann) == [
        (HOURLY[1].timestamp(), "sent"),
        (HOURLY[4].timestamp(), "sent"),
    ]
    admin = world.admin.user.id
    assert await history(crier, ann) == [("created", admin)] + [("skipped", admin)] * 3
    assert (await get(crier, world, local)).state == "scheduled"


async def test_skip_is_refused_for_a_one_off_and_a_paused_one(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    once = await schedule(world, "in 10m", "Once")
    weekly = await schedule(world, "in 10m", "Status", repeat="weekly")
    await answer(world, "pause", id=weekly)
    before = await everything(crier)
    text = await answer(world, "skip", id=once)
    assert "posts only once" in text
    assert f"`/cancel id:{once}`" in text
    text = await answer(world, "skip", id=weekly)
    assert "is paused" in text
    assert f"`/resume id:{weekly}`" in text
    assert await everything(crier) == before
    await advance_to(crier, clock, FIRST)
    assert posts(world) == ["Once"]


# --- until ---------------------------------------------------------------------------------------


async def test_until_is_confirmed_and_the_next_posts_listed_stop_there(
    world: World, crier: Crier
) -> None:
    text = await answer(
        world, "schedule", when="in 10m", message="hi", repeat="every 1h", until="in 1h30m"
    )
    assert f"**Until:** {stamp(NOW + timedelta(hours=1, minutes=30))}, then it ends" in text
    listed = ", ".join(f"<t:{int(t.timestamp())}:F>" for t in HOURLY[:2])
    assert f"**Next:** {listed}\n" in text


async def test_until_the_last_occurrence_before_it_posts_then_it_is_done(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, "in 10m", "Status", repeat="every 1h", until="in 2h30m")
    ann = await get(crier, world, local)
    assert ann.until_ts == (NOW + timedelta(hours=2, minutes=30)).timestamp()
    for i in range(3):  # 12:10, 13:10, 14:10; 15:10 is past 14:30
        await advance_to(crier, clock, HOURLY[i])
        assert posts(world) == ["Status"] * (i + 1)
    done = await get(crier, world, local)
    assert done.state == "done"  # at once, after the last post
    with pytest.raises(ScheduleNotFound):
        await crier.sched.schedules.get(schedule_name(ann.id))
    assert (await history(crier, ann))[-1] == ("ended", None)
    listing = await answer(world, "list")
    assert f"🏁 **#{local}**" in listing
    assert "· done ·" in listing
    assert "ended: its `until` was reached" in listing

    await advance_to(crier, clock, HOURLY[6])
    assert posts(world) == ["Status"] * 3
    assert len(await deliveries(crier, ann)) == 3
    assert "has ended" in await answer(world, "pause", id=local)


async def test_until_reached_by_a_skipped_last_occurrence_ends_it(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, "in 10m", "Status", repeat="every 1h", until="in 1h30m")
    ann = await get(crier, world, local)
    await advance_to(crier, clock, HOURLY[0])
    text = await answer(world, "skip", id=local)
    assert stamp(HOURLY[1]) in text
    assert "the last one before its `until`" in text
    assert (await get(crier, world, local)).state == "done"  # nothing left: ended at once
    assert "has ended" in await answer(world, "skip", id=local)
    await advance_to(crier, clock, HOURLY[1])
    assert posts(world) == ["Status"]
    assert [a for a, _ in await history(crier, ann)] == ["created", "skipped", "ended"]


async def test_an_occurrence_past_until_posts_nothing_and_ends_it(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The delivery's own check: an occurrence whose time is past until (an until written
    while its next time was already set) posts nothing; the announcement is done."""
    local = await schedule(world, "in 10m", "Status", repeat="every 1h")
    ann = await get(crier, world, local)
    await advance_to(crier, clock, HOURLY[0])
    async with crier.sched.transaction() as ctx:
        await BotDb(ctx.db).set_until(ann.id, HOURLY[0].timestamp() + 60, ctx.now.timestamp())
    await advance_to(crier, clock, HOURLY[1])
    assert posts(world) == ["Status"]
    assert (await get(crier, world, local)).state == "done"
    with pytest.raises(ScheduleNotFound):
        await crier.sched.schedules.get(schedule_name(ann.id))
    assert (await history(crier, ann))[-1] == ("ended", None)
    await advance_to(crier, clock, HOURLY[3])
    assert posts(world) == ["Status"]


async def test_set_until_for_edit_sets_clears_and_ends_at_once(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    service = crier.bot.announcements
    local = await schedule(world, "in 10m", "Status", repeat="every 1h")
    ann = await get(crier, world, local)
    admin = world.admin.user.id
    later = NOW + timedelta(days=1)
    assert (await service.set_until(world.guild.id, local, later, admin)).until_ts == (
        later.timestamp()
    )
    cleared = await service.set_until(world.guild.id, local, None, admin)
    assert (cleared.until_ts, cleared.state) == (None, "scheduled")
    await advance_to(crier, clock, HOURLY[0])
    ended = await service.set_until(world.guild.id, local, HOURLY[0] + timedelta(minutes=5), admin)
    assert ended.state == "done"
    assert [a for a, _ in await history(crier, ann)] == ["created"] + ["edited"] * 3 + ["ended"]
    await advance_to(crier, clock, HOURLY[2])
    assert posts(world) == ["Status"]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"when": "in 10m"}, "`until` is for repeating announcements"),
        ({"when": "in 10m", "repeat": "hourly", "until": "in 5m"}, "must be after the first"),
        ({"when": "in 10m", "repeat": "hourly", "until": "someday"}, "try `in 90m`"),
        # The rule's first post (09:00 tomorrow) is after until: nothing would ever post.
        ({"when": "in 10m", "repeat": "0 9 * * *", "until": "in 1h"}, "must be after the first"),
    ],
)
async def test_until_refusals_write_nothing(
    world: World, crier: Crier, options: dict[str, Any], expected: str
) -> None:
    options = {"until": "in 2h", **options}
    before = await everything(crier)
    text = await answer(world, "schedule", message="hi", **options)
    assert expected.lower() in text.lower(), text
    assert await everything(crier) == before


# --- /list ---------------------------------------------------------------------------------------


async def test_list_shows_paused_and_until_distinctly(world: World, crier: Crier) -> None:
    paused = await schedule(world, "in 10m", "Status", repeat="every 1h", until="in 1 day")
    live = await schedule(world, "in 10m", "Other", repeat="every 1h")
    await answer(world, "pause", id=paused)
    text = await answer(world, "list")
    head, rest = text.split(f"**#{live}**")
    assert f"⏸️ **#{paused}**" in head
    assert "· paused ·" in head
    assert f"paused: nothing posts until `/resume id:{paused}`" in head
    assert f"until: {stamp(NOW + timedelta(days=1))}" in head
    assert "paused" not in rest
    assert "next:" in rest


# --- who may, and which guild --------------------------------------------------------------------


async def test_a_member_without_rights_is_refused_on_every_new_command(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    recurring = await schedule(world, "in 10m", "Status", repeat="every 1h")
    await answer(world, "pause", id=await schedule(world, "in 10m", "Once"))
    before = await everything(crier)
    for command, local in (("pause", recurring), ("resume", 2), ("skip", recurring)):
        text = await answer(world, command, by=world.member, id=local)
        assert "You need the **Manage Server** permission" in text, (command, text)
    text = await answer(world, "schedule", by=world.member, when="in 1h", message="x", until="2h")
    assert "You need the **Manage Server** permission" in text
    assert await everything(crier) == before
    await advance_to(crier, clock, FIRST)
    assert posts(world) == ["Status"]


async def test_the_manager_role_may_pause_resume_and_skip(world: World, crier: Crier) -> None:
    managers = world.guild.add_role("managers", 0)
    await answer(world, "settings", manager_role=managers)
    manager = world.guild.add_member(name="mia", roles=[managers])
    local = await schedule(world, "in 10m", "Status", repeat="every 1h")
    assert "Paused" in await answer(world, "pause", by=manager, id=local)
    assert "Resumed" in await answer(world, "resume", by=manager, id=local)
    assert "Skipping" in await answer(world, "skip", by=manager, id=local)
    ann = await get(crier, world, local)
    assert [who for _, who in await history(crier, ann)][1:] == [manager.user.id] * 3


async def test_another_guilds_id_is_not_found(
    world: World, other: World, crier: Crier, clock: FakeClock
) -> None:
    await schedule(world, "in 10m", "Ours", repeat="every 1h")
    local = await schedule(world, "in 10m", "Ours too", repeat="every 1h")
    before = await everything(crier)
    for command in ("pause", "resume", "skip"):
        text = await answer(other, command, id=local)
        assert text.startswith(f"announcement #{local} not found"), (command, text)
    assert await everything(crier) == before
    await advance_to(crier, clock, FIRST)
    assert sorted(posts(world)) == ["Ours", "Ours too"]


async def test_pause_resume_skip_autocomplete_offer_what_each_accepts(
    world: World, other: World, crier: Crier
) -> None:
    local = await schedule(world, "in 10m", "Status", repeat="every 1h")

    async def offered(w: World, command: str) -> list[int]:
        h = await w.fake.invoke_autocomplete(
            w.guild, w.general, w.admin, command, {"id": ""}, focused="id"
        )
        cb = await h.response()
        assert cb.type == CB_AUTOCOMPLETE_RESULT
        return [c["value"] for c in cb.choices]

    # Scheduled: it can be paused or skipped, not resumed.
    assert [await offered(world, c) for c in ("pause", "resume", "skip")] == [[local], [], [local]]
    await answer(world, "pause", id=local)
    # Paused: resumed, or its dates skipped ahead.
    assert [await offered(world, c) for c in ("pause", "resume", "skip")] == [[], [local], [local]]
    for command in ("pause", "resume", "skip"):
        assert await offered(other, command) == []


# --- /timezone -----------------------------------------------------------------------------------


async def test_timezone_then_schedule_reads_times_in_the_members_zone(
    world: World, crier: Crier
) -> None:
    await answer(world, "settings", timezone="Europe/Berlin")  # the server's: 19:00 UTC
    text = await answer(world, "timezone", zone="america/new york")
    assert "Your time zone is now **America/New_York**" in text
    async with crier.sched.reader() as db:
        assert await BotDb(db).member_timezone(world.admin.user.id) == "America/New_York"

    local = await schedule(world, "18:00", "Evening")  # 18:00 EST = 23:00 UTC
    a = await get(crier, world, local)
    assert (a.first_ts, a.timezone) == (
        datetime(2030, 3, 1, 23, tzinfo=UTC).timestamp(),
        "America/New_York",
    )
    # The command's own option wins over the member's zone.
    local = await schedule(world, "18:00", "London", timezone="Europe/London")
    assert (await get(crier, world, local)).first_ts == datetime(
        2030, 3, 1, 18, tzinfo=UTC
    ).timestamp()
    # Another manager without a zone of their own: the server's.
    role = world.guild.add_role("heralds", P.MANAGE_GUILD)
    herald = world.guild.add_member(name="herald", roles=[role])
    cb = await run_command(
        world, "schedule", by=herald, when="18:00", message="Berlin", channel=world.news
    )
    assert "Scheduled announcement **#3**" in (cb.content or "")
    b = await get(crier, world, 3)
    assert (b.first_ts, b.timezone) == (
        datetime(2030, 3, 1, 17, tzinfo=UTC).timestamp(),
        "Europe/Berlin",
    )


async def test_any_member_may_set_and_see_their_timezone(world: World, crier: Crier) -> None:
    text = await answer(world, "timezone", by=world.member)
    assert "times you type are read in **UTC**" in text
    text = await answer(world, "timezone", by=world.member, zone="Asia/Tokyo")
    assert "**Asia/Tokyo**" in text
    assert "Your time zone is **Asia/Tokyo**" in await answer(world, "timezone", by=world.member)
    async with crier.sched.reader() as db:
        assert await BotDb(db).member_timezone(world.member.user.id) == "Asia/Tokyo"
        assert await BotDb(db).member_timezone(world.admin.user.id) is None
    before = await everything(crier)
    text = await answer(world, "timezone", by=world.member, zone="Mars/Olympus")
    assert "Mars/Olympus" in text or "time zone" in text.lower()
    assert await everything(crier) == before


async def test_timezone_autocomplete(world: World, crier: Crier) -> None:
    h = await world.fake.invoke_autocomplete(
        world.guild, world.general, world.member, "timezone", {"zone": "tokyo"}, focused="zone"
    )
    assert [c["value"] for c in (await h.response()).choices] == ["Asia/Tokyo"]


async def test_a_failed_one_off_cannot_be_paused_resumed_or_skipped(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, "in 10m", "Once")
    world.news.set_overwrite(world.guild.bot_member, deny=P.SEND_MESSAGES)
    await advance_to(crier, clock, FIRST)
    assert (await get(crier, world, local)).state == "failed"
    before = await everything(crier)
    for command in ("pause", "resume", "skip"):
        text = await answer(world, command, id=local)
        assert f"Announcement #{local} failed ({PERMANENT_CODES[50013]} (50013))" in text
    assert await everything(crier) == before
