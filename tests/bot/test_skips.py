"""Exceptions to a repeating announcement's rule (issue 35): ``/skip id: date:`` (a day, or
one occurrence by its date and time), ``/skip id: from: to:`` (both ends included),
``/unskip``, and ``/edit times:``, end to end through the real discord.py client against the
fake Discord on a FakeClock, read back from the posts, ``/info``, ``/list``, the schedule the
scheduler fires from, and the database. Every test runs on SQLite, and on PostgreSQL when a
server is configured."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pytest

from bot.announcements.deliveries import SKIPPED_DATE, TIMES_MADE, Decision, begin_attempt
from bot.db import BotDb
from bot.models import nonce_for
from bot.parsing.skips import Skip
from tests.bot.conftest import NOW, World, db_snapshot, run_command
from tests.bot.test_commands import any_db_crier  # noqa: F401 (a fixture, used by crier)

if TYPE_CHECKING:
    from bot.announcements import Announcement
    from bot.app import Crier
    from scheduler.testing import FakeClock

LONDON = ZoneInfo("Europe/London")


@pytest.fixture
def crier(any_db_crier: Crier) -> Crier:  # noqa: F811 (this module's bot: on either database)
    return any_db_crier


async def answer(world: World, name: str, **options: Any) -> str:
    cb = await run_command(world, name, **options)
    assert cb.ephemeral
    return cb.content or ""


async def schedule(world: World, **options: Any) -> int:
    text = await answer(world, "schedule", channel=world.news, **options)
    found = re.search(r"Scheduled announcement \*\*#(\d+)\*\*", text)
    assert found is not None, text
    return int(found[1])


async def get(crier: Crier, world: World, local: int) -> Announcement:
    return await crier.bot.announcements.get(world.guild.id, local)


async def walk(crier: Crier, clock: FakeClock, until: datetime, step: timedelta) -> None:
    """Move the clock to ``until`` in steps, letting every due job run at each."""
    t = clock.now()
    while t < until:
        t = min(until, t + step)
        clock.set(t)
        await crier.sched.wait_idle()


async def posted_at(world: World, crier: Crier, a: Announcement) -> list[datetime]:
    """The occurrences of ``a`` posted in #news, by their nonce (one per occurrence)."""
    by_nonce = {nonce_for(a.id, ts): ts for ts, state in await deliveries(crier, a)}
    return [
        datetime.fromtimestamp(by_nonce[m.nonce], UTC) for m in world.fake.bot_messages(world.news)
    ]


def posts(world: World) -> list[str]:
    return [m.content for m in world.fake.bot_messages(world.news)]


def stamp(dt: datetime) -> str:
    n = int(dt.timestamp())
    return f"<t:{n}:F> (<t:{n}:R>)"


def section(page: str, heading: str) -> list[str]:
    lines = page.split("\n")
    start = lines.index(f"**{heading}:**") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("**")), len(lines))
    return lines[start:end]


async def deliveries(crier: Crier, a: Announcement) -> list[tuple[float, str]]:
    async with crier.sched.reader() as db:
        rows = await BotDb(db).recent_deliveries(a.id, 1000)
    return sorted((d.fire_ts, str(d.state)) for d in rows)


def daily(day: int, hour: int = 18, month: int = 12, year: int = 2030) -> datetime:
    return datetime(year, month, day, hour, tzinfo=LONDON)


# --- /skip id: date: ----------------------------------------------------------------------------


async def test_a_skipped_day_is_left_out_by_the_scheduler_info_list_and_next(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Skipping Christmas (a date alone) of a daily 18:00 in London: the schedule's trigger
    excludes the day, so nothing is materialized for it; /info, /list and the {next} of the
    post before it all name the 26th."""
    clock.set(datetime(2030, 12, 20, 12, tzinfo=UTC))
    local = await schedule(
        world, when="18:00", repeat="daily", timezone="Europe/London",
        message="Standup. Next: {next}",
    )  # fmt: skip
    text = await answer(world, "skip", id=local, date="2030-12-25")
    assert f"Skipping announcement **#{local}** at {stamp(daily(25))}" in text
    assert f"**Next after that:** {stamp(daily(20))}" in text
    assert f"`/unskip id:{local} date:…`" in text

    a = await get(crier, world, local)
    assert a.repeat_skips == (Skip.day(date(2030, 12, 25)),)
    schedule_info = await crier.sched.schedules.get(a.schedule_name or "")
    assert schedule_info.trigger.exclude == (
        (daily(25, 0).astimezone(UTC), daily(26, 0).astimezone(UTC) - timedelta(microseconds=1)),
    )
    page = await answer(world, "info", id=local)
    assert "**Skipped dates** (Europe/London): Wednesday 25 December 2030" in page.split("\n")
    listing = await answer(world, "list")
    assert "  skips: Wednesday 25 December 2030" in listing.split("\n")

    await walk(crier, clock, datetime(2030, 12, 27, 12, tzinfo=UTC), timedelta(hours=6))
    days = [t.astimezone(LONDON).day for t in await posted_at(world, crier, a)]
    assert days == [20, 21, 22, 23, 24, 26]
    # The 24th's {next} says the 26th, as the schedule does.
    by_day = dict(zip(days, posts(world), strict=True))
    assert by_day[24] == f"Standup. Next: <t:{int(daily(26).timestamp())}:F>"
    assert (daily(25).timestamp(), "skipped") not in await deliveries(crier, a)
    assert "**Skipped dates**" not in await answer(world, "info", id=local)  # it passed


async def test_one_occurrence_named_by_date_and_time_far_ahead(world: World, crier: Crier) -> None:
    """Any future occurrence, not only the next: every 2 hours, the one at 14:00 in three
    days, read like `when` in the announcement's zone."""
    local = await schedule(world, when="in 2h", repeat="every 2h", message="ping")
    first = NOW + timedelta(hours=2)
    target = NOW + timedelta(days=3, hours=2)
    text = await answer(world, "skip", id=local, date=f"{target:%Y-%m-%d %H:%M}")
    assert stamp(target) in text
    assert f"**Next after that:** {stamp(first)}" in text
    a = await get(crier, world, local)
    trigger = (await crier.sched.schedules.get(a.schedule_name or "")).trigger
    assert trigger.next_after(target - timedelta(hours=2)) == target + timedelta(hours=2)
    # A time of the same minute names it too; another time of that day holds none.
    text = await answer(world, "skip", id=local, date=f"{target:%Y-%m-%d} 15:00")
    assert "doesn't post then" in text
    assert stamp(target + timedelta(hours=2)) in text  # its next time after that


async def test_a_range_skips_both_ends_and_unskip_takes_one_day_back(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    clock.set(datetime(2030, 12, 20, 12, tzinfo=UTC))
    local = await schedule(
        world, when="18:00", repeat="daily", timezone="Europe/London", message="Standup"
    )
    text = await answer(world, "skip", id=local, **{"from": "2030-12-24", "to": "2030-12-26"})
    assert "3 occurrences won't be posted" in text
    assert stamp(daily(24)) in text
    assert f"**Next after that:** {stamp(daily(20))}" in text
    text = await answer(world, "unskip", id=local, date="25 dec 2030")
    assert "posts again on Wednesday 25 December 2030" in text
    assert "1 occurrence is no longer skipped" in text
    a = await get(crier, world, local)
    assert [s.label() for s in a.repeat_skips] == ["2030-12-24", "2030-12-26"]
    page = await answer(world, "info", id=local)
    assert (
        "**Skipped dates** (Europe/London): Tuesday 24 December 2030; Thursday 26 December 2030"
        in page.split("\n")
    )
    await walk(crier, clock, datetime(2030, 12, 28, 12, tzinfo=UTC), timedelta(hours=6))
    days = [t.astimezone(LONDON).day for t in await posted_at(world, crier, a)]
    assert days == [20, 21, 22, 23, 25, 27]


async def test_a_skipped_day_holds_the_whole_local_day_across_a_clock_change(
    world: World, crier: Crier
) -> None:
    """27 October 2030 in London has 25 hours: an hourly announcement skips 25 posts, both
    passes of 01:00 included; the next is midnight on the 28th."""
    local = await schedule(
        world, when="2030-10-20 00:00", repeat="every 1h", timezone="Europe/London",
        message="tick",
    )  # fmt: skip
    text = await answer(world, "skip", id=local, date="2030-10-27")
    assert "25 occurrences won't be posted" in text
    assert stamp(datetime(2030, 10, 27, 0, tzinfo=LONDON)) in text
    a = await get(crier, world, local)
    trigger = (await crier.sched.schedules.get(a.schedule_name or "")).trigger
    before = datetime(2030, 10, 26, 23, tzinfo=LONDON)
    assert trigger.next_after(before) == datetime(2030, 10, 28, 0, tzinfo=LONDON)


async def test_times_ends_it_after_that_many_posts_and_next_says_none_on_the_last(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(
        world, when="in 1h", repeat="hourly", message="#{occurrence} next {next}"
    )
    text = await answer(world, "edit", id=local, times=3)
    assert "**Ends after (posts):** none → 3" in text
    hours = [NOW + timedelta(hours=h) for h in range(1, 6)]
    page = await answer(world, "info", id=local)
    assert "**Ends after:** 3 posts (0 made so far)" in page.split("\n")
    assert f"**Last post:** {stamp(hours[2])}" in page.split("\n")
    assert section(page, "Next times") == [f"• {stamp(t)}" for t in hours[:3]]
    # A skipped date doesn't count: the end moves one later.
    await answer(world, "skip", id=local, date=f"{hours[1]:%Y-%m-%d %H:%M}")
    page = await answer(world, "info", id=local)
    assert f"**Last post:** {stamp(hours[3])}" in page.split("\n")
    await walk(crier, clock, hours[4] + timedelta(minutes=5), timedelta(minutes=30))
    assert posts(world) == [
        f"#1 next <t:{int(hours[2].timestamp())}:F>",
        f"#2 next <t:{int(hours[3].timestamp())}:F>",
        "#3 next none",
    ]
    a = await get(crier, world, local)
    assert a.state == "done"
    assert "**Ends after:** 3 posts (3 made so far)" in (await answer(world, "info", id=local))


async def test_times_set_below_the_posts_made_ends_it_now_and_zero_clears_it(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, when="in 1h", repeat="hourly", message="tick")
    other = await schedule(world, when="in 1h", repeat="hourly", message="tock")
    await walk(crier, clock, NOW + timedelta(hours=2), timedelta(hours=1))
    assert posts(world).count("tick") == 2
    text = await answer(world, "edit", id=local, times=2)
    assert "**State:** done" in text
    assert (await get(crier, world, local)).state == "done"
    await answer(world, "edit", id=other, times=5)
    await answer(world, "edit", id=other, times=0)
    assert (await get(crier, world, other)).times is None


async def test_refusals_write_nothing(world: World, crier: Crier) -> None:
    weekly = await schedule(world, when="2030-03-04 09:00", repeat="weekly", message="w")
    once = await schedule(world, when="in 1h", message="once")
    before = await db_snapshot(crier)
    cases = [
        ({"id": weekly, "date": "2030-03-05"}, "doesn't post then"),  # a Tuesday
        ({"id": weekly, "date": "2030-02-25"}, "already passed"),
        (
            {"id": weekly, "date": "2030-03-04", "from": "2030-03-04", "to": "2030-03-05"},
            "not both",
        ),
        ({"id": weekly, "from": "2030-03-04"}, "both ends"),
        ({"id": weekly, "from": "2030-03-12", "to": "2030-03-04"}, "comes before `from`"),
        ({"id": once, "date": "2030-03-01"}, "posts only once"),
        ({"id": weekly, "date": "someday"}, "couldn't read"),
    ]
    for options, words in cases:
        assert words in await answer(world, "skip", **options), options
    assert "nothing skipped then" in await answer(world, "unskip", id=weekly, date="2030-03-04")
    assert "Say which date" in await answer(world, "unskip", id=weekly)
    assert "repeating announcements" in await answer(world, "edit", id=once, times=3)
    assert await db_snapshot(crier) == before
    await answer(world, "skip", id=weekly, date="2030-03-11")
    assert "already skipped" in await answer(world, "skip", id=weekly, date="2030-03-11 09:00")


async def test_a_paused_ones_dates_may_be_skipped_ahead(world: World, crier: Crier) -> None:
    local = await schedule(world, when="2030-03-04 09:00", repeat="weekly", message="w")
    await answer(world, "pause", id=local)
    assert "is paused" in await answer(world, "skip", id=local)  # the next: not known yet
    text = await answer(world, "skip", id=local, date="2030-03-18")
    assert "Skipping announcement" in text
    a = await get(crier, world, local)
    assert a.state == "paused"
    info = await crier.sched.schedules.get(a.schedule_name or "")
    assert info.paused
    text = await answer(world, "resume", id=local)
    assert f"**Next:** {stamp(datetime(2030, 3, 4, 9, tzinfo=UTC))}" in text
    assert info.trigger.next_after(datetime(2030, 3, 12, tzinfo=UTC)) == datetime(
        2030, 3, 25, 9, tzinfo=UTC
    )


async def test_an_occurrence_whose_job_was_made_before_its_skip_posts_nothing(
    world: World, crier: Crier
) -> None:
    """The guard in the delivery: a skip committed after an occurrence's job was made (its
    job already running) finds the skip in the rule and records it skipped."""
    local = await schedule(world, when="in 1h", repeat="hourly", message="tick")
    fire = NOW + timedelta(hours=1)
    await answer(world, "skip", id=local, date=f"{fire:%Y-%m-%d %H:%M}")
    a = await get(crier, world, local)
    async with crier.sched.transaction() as ctx:
        attempt = await begin_attempt(
            ctx, a.id, fire.timestamp(), job_id=1, found_at=fire.timestamp(),
            now=fire.timestamp(), catch_up_window=60, nonce_window=60,
        )  # fmt: skip
    assert (attempt.action, attempt.reason) == (Decision.DONE, SKIPPED_DATE)
    assert await deliveries(crier, a) == [(fire.timestamp(), "skipped")]


async def test_an_occurrence_running_when_times_is_reached_posts_nothing(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The same guard for ``times``: an occurrence whose job was already running when an
    edit lowered ``times`` to the posts made finds them made, and posts nothing."""
    local = await schedule(world, when="in 1h", repeat="hourly", message="tick")
    await walk(crier, clock, NOW + timedelta(hours=2), timedelta(hours=1))
    await answer(world, "edit", id=local, times=2)
    a = await get(crier, world, local)
    fire = NOW + timedelta(hours=3)
    async with crier.sched.transaction() as ctx:
        attempt = await begin_attempt(
            ctx, a.id, fire.timestamp(), job_id=1, found_at=fire.timestamp(),
            now=fire.timestamp(), catch_up_window=60, nonce_window=60,
        )  # fmt: skip
    assert (attempt.action, attempt.reason) == (Decision.DONE, TIMES_MADE.format(times=2))
    assert posts(world) == ["tick", "tick"]
