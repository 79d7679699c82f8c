"""Where /edit re-anchors a recurring announcement whose ``when`` it leaves alone: at the
occurrence that would come next, a due one still waiting to be posted included; found by one
indexed read of that schedule's jobs, however many other deliveries are pending (the old
way filtered the newest 1,000 pending sends of every announcement in Python)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from bot.announcements import SEND_FN
from bot.db.occurrences import _NEXT_OCCURRENCE
from bot.models import Draft
from scheduler import JobState
from tests.bot.conftest import NOW, CrierFactory, World
from tests.bot.test_edit import advance, get, rows, schedule

if TYPE_CHECKING:
    from scheduler.testing import FakeClock

OTHERS = 1000
"""Pending sends of other announcements, all newer than the one waiting."""


async def test_the_anchor_is_the_due_occurrence_waiting_behind_a_thousand_newer_sends(
    world: World, crier_factory: CrierFactory, clock: FakeClock, db_url: str
) -> None:
    """On SQLite and PostgreSQL."""
    crier = await crier_factory(send_spacing=1.5, database_url=db_url)
    await schedule(world, message="first in line", when="in 1h")  # 13:00, sent first
    local = await schedule(world, message="daily", repeat="daily at 13:00")
    await advance(crier, clock, timedelta(hours=1))
    # 13:00: the one-off went out; the daily one's occurrence waits for #news's next slot.
    assert [m.content for m in world.fake.bot_messages(world.news)] == ["first in line"]
    daily = await get(crier, world, local)
    waiting = await rows(
        crier,
        "SELECT id, fire_ts FROM scheduler_jobs WHERE schedule_name = ? AND state = ?",
        daily.schedule_name,
        JobState.PENDING.value,
    )
    assert [r["fire_ts"] for r in waiting] == [(NOW + timedelta(hours=1)).timestamp()]

    far = NOW + timedelta(days=30)
    await crier.bot.announcements.create_many(
        [
            Draft(
                guild_id=10 + i % 2,  # other servers (each under its announcement limit)
                channel_id=20 + i % 7,
                author_id=world.admin.id,
                content=f"later {i}",
                mention=None,
                allowed_mentions={"everyone": False, "roles": [], "users": True},
                first=far + timedelta(minutes=i),
                timezone="UTC",
                repeat=None,
                until=None,
            )
            for i in range(OTHERS)
        ]
    )
    newer = await rows(
        crier,
        "SELECT count(*) AS n FROM scheduler_jobs WHERE fn = ? AND state = ? AND id > ?",
        SEND_FN,
        JobState.PENDING.value,
        waiting[0]["id"],
    )
    assert newer[0]["n"] == OTHERS

    assert await crier.bot.announcements.anchor(daily) == NOW + timedelta(hours=1)
    # With nothing waiting, it is the schedule's next fire (tomorrow 13:00).
    await advance(crier, clock, timedelta(seconds=2))
    assert [m.content for m in world.fake.bot_messages(world.news)][-1] == "daily"
    daily = await get(crier, world, local)
    assert await crier.bot.announcements.anchor(daily) == NOW + timedelta(days=1, hours=1)


async def test_the_anchor_query_reads_through_the_indexes(
    world: World, crier_factory: CrierFactory
) -> None:
    """On SQLite: the schedule's jobs by their (schedule_name, fire_ts) index, the schedule
    by its key; no table is scanned."""
    crier = await crier_factory()
    plan = await rows(crier, "EXPLAIN QUERY PLAN " + _NEXT_OCCURRENCE, "s", SEND_FN, "s")
    steps = [r["detail"] for r in plan]
    assert any("scheduler_jobs USING INDEX scheduler_jobs_schedule" in s for s in steps), steps
    assert any("scheduler_schedules USING INDEX" in s for s in steps), steps
    assert not [s for s in steps if s.startswith("SCAN scheduler_")], steps
