"""A sample of the phrase corpus through ``/schedule`` end to end: the real discord.py client
against the fake Discord, on a FakeClock. NOW is Friday 2030-03-01 12:00 UTC (13:00 in
Paris, UTC+1 until Sunday 2030-03-31); the expected times are worked out by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from tests.bot.conftest import CrierFactory, World, announcement_schedules, run_command
from tests.bot.test_commands import advance, only_announcement, stamp

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock

PARIS = "Europe/Paris"


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def full(dt: datetime) -> str:
    return f"<t:{int(dt.timestamp())}:F>"


@pytest.mark.parametrize(
    ("repeat", "words", "posts"),
    [
        (
            "every friday at 8pm",
            "every Friday at 20:00 (Europe/Paris)",
            [utc(2030, 3, 1, 19), utc(2030, 3, 8, 19), utc(2030, 3, 15, 19)],
        ),
        (
            "every 2nd and 4th thursday at 19:00",
            "on the 2nd and 4th Thursday of every month, at 19:00 (Europe/Paris)",
            [utc(2030, 3, 14, 18), utc(2030, 3, 28, 18), utc(2030, 4, 11, 17)],
        ),
        (
            "biweekly on monday at 9:00",
            "every 2 weeks on Monday at 09:00, from the week of Monday 4 March 2030 (Europe/Paris)",
            [utc(2030, 3, 4, 8), utc(2030, 3, 18, 8), utc(2030, 4, 1, 7)],
        ),
        (
            "monthly on the 31st at 12:00",
            "every month on the 31st, or the last day of shorter months, at 12:00 (Europe/Paris)",
            [utc(2030, 3, 31, 10), utc(2030, 4, 30, 10), utc(2030, 5, 31, 10)],
        ),
    ],
)
async def test_when_left_out_the_rule_gives_the_first_time(
    world: World, crier: Crier, repeat: str, words: str, posts: list[datetime]
) -> None:
    cb = await run_command(world, "schedule", message="Sync", repeat=repeat, timezone=PARIS)
    content = cb.content or ""
    assert cb.ephemeral
    assert f"**First:** {stamp(posts[0])}" in content, content
    assert f"**Repeats:** {words}\n" in content
    assert "**Next:** " + ", ".join(full(t) for t in posts) + "\n" in content
    a = await only_announcement(crier, world)
    [info] = await announcement_schedules(crier)
    assert info.name == a.schedule_name
    assert info.next_fire == posts[0]


async def test_the_2nd_and_4th_thursday_post_on_those_days_only(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await run_command(
        world, "schedule", message="Club", repeat="every 2nd and 4th thursday at 19:00",
        timezone=PARIS,
    )  # fmt: skip
    minute = timedelta(minutes=1)
    # Thursday 14 March 19:00 in Paris, then (not the 3rd, the 21st) Thursday 28 March.
    for post, due in enumerate((utc(2030, 3, 14, 18), utc(2030, 3, 28, 18))):
        await advance(crier, clock, due - minute - clock.now())
        assert len(world.fake.bot_messages(world.general)) == post
        await advance(crier, clock, minute)
        assert len(world.fake.bot_messages(world.general)) == post + 1
    [info] = await announcement_schedules(crier)
    assert info.next_fire == utc(2030, 4, 11, 17)  # the 2nd Thursday of April, in summer time


@pytest.mark.parametrize(
    ("locale", "label", "first", "note"),
    [
        ("en-GB", "**First:**", utc(2030, 4, 3, 16), "I read `03/04` as 3 April (day/month"),
        (
            "fr",
            "**Première :**",
            utc(2030, 4, 3, 16),
            "J'ai lu `03/04` comme le 3 avril (jour/mois",
        ),
        ("en-US", "**First:**", utc(2030, 3, 4, 17), "I read `03/04` as 4 March (month/day"),
    ],
)
async def test_dates_are_read_by_the_members_locale(
    world: World, crier: Crier, locale: str, label: str, first: datetime, note: str
) -> None:
    h = await world.fake.invoke_command(
        world.guild,
        world.general,
        world.admin,
        "schedule",
        {"when": "03/04 18:00", "message": "Party", "timezone": PARIS},
        locale=locale,
    )
    content = (await h.response(timeout=5)).content or ""
    assert f"{label} {stamp(first)}" in content, content
    assert f"ℹ️ {note}" in content


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        ({"when": "18:00 EST"}, "`America/New_York`"),
        ({"when": "tonight 9pm", "repeat": "every sunday evening"}, "`every sunday at 18:00`"),
        ({"repeat": "twice a day"}, "`at 9:00 and 17:00 every day`"),
        ({"repeat": "every friday"}, "at what time"),
        ({}, "Please say when to post it"),
    ],
)
async def test_refusals_name_the_closest_accepted_forms(
    world: World, crier: Crier, options: dict[str, str], refusal: str
) -> None:
    cb = await run_command(world, "schedule", message="x", timezone=PARIS, **options)
    assert cb.ephemeral
    assert refusal in (cb.content or ""), cb.content
    assert await announcement_schedules(crier) == []
    assert await crier.sched.list_jobs() == []


async def test_a_biweekly_rule_posts_after_a_restart(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    """The date step is in the schedule's stored spec: a restarted bot keeps counting the
    weeks from the first post (Monday 4 March, then 18 March, then 1 April in summer time)."""
    first = await crier_factory()
    await run_command(
        world, "schedule", message="Sprint", repeat="biweekly on monday at 9:00", timezone=PARIS
    )
    await first.close()
    second = await crier_factory()
    minute = timedelta(minutes=1)
    for post, due in enumerate((utc(2030, 3, 4, 8), utc(2030, 3, 18, 8), utc(2030, 4, 1, 7))):
        await advance(second, clock, due - minute - clock.now())
        assert len(world.fake.bot_messages(world.general)) == post
        await advance(second, clock, minute)
        assert len(world.fake.bot_messages(world.general)) == post + 1
