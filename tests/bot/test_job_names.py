"""The bot's jobs under the names and argument shapes earlier releases stored them with.

Every job is now named ``announcements:<what>``; a database written by an earlier release
holds pending ``crier.update_posted`` and ``crier.publish`` jobs, and schedules whose
occurrences carry ``{"announcement_id": N}`` alone. Each is written here exactly as that
release left it (the job's ``fn`` column, the plain JSON arguments) and must still run, on
SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from bot.announcements import (
    EVENTS_FN,
    FORGET_FN,
    OLD_NAMES,
    PLACE_SEND_FN,
    PLACE_UPDATE_FN,
    POSTNOW_FN,
    PUBLISH_FN,
    REMIND_FN,
    REPORT_FN,
    REPORTS_FN,
    SEND_FN,
    TIDY_FN,
    UPDATE_FN,
)
from bot.announcements.retention import PRUNE_FN
from bot.app import Crier
from scheduler import JobState, TransactionContext
from tests.bot.test_commands import any_db_crier  # noqa: F401  (a fixture used here)
from tests.bot.test_destinations import publish_held_back
from tests.bot.test_edit import advance, edit, get, posted_one, rows, schedule

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.bot.conftest import World


async def stored_under(ctx: TransactionContext, job_id: int, old_name: str) -> None:
    """In ``ctx``'s transaction, make job ``job_id`` a job as the earlier release stored
    it: under ``old_name``."""
    await ctx.db.execute("UPDATE scheduler_jobs SET fn = ? WHERE id = ?", (old_name, job_id))


async def stored_args(crier: Crier, job_id: int) -> Any:
    [row] = await rows(crier, "SELECT args FROM scheduler_job_args WHERE job_id = ?", job_id)
    return json.loads(row["args"])


async def test_every_bot_job_is_named_alike_and_answers_to_its_old_name(crier: Crier) -> None:
    registry = crier.registry
    names = sorted(r.name for r in registry)
    places = [PLACE_SEND_FN, PLACE_UPDATE_FN]
    assert names == sorted(
        [
            SEND_FN,
            UPDATE_FN,
            PUBLISH_FN,
            REPORT_FN,
            REPORTS_FN,
            FORGET_FN,
            EVENTS_FN,
            REMIND_FN,
            POSTNOW_FN,
            PRUNE_FN,
            *places,
            TIDY_FN,
        ]
    )
    assert all(re.fullmatch(r"announcements:[a-z_]+", name) for name in names), names
    assert all(r.args_type is not None for r in registry)  # no handler unpacks a dict
    assert OLD_NAMES == {UPDATE_FN: ("crier.update_posted",), PUBLISH_FN: ("crier.publish",)}
    for new, old_names in OLD_NAMES.items():
        assert [registry.get(old) for old in old_names] == [registry.get(new)]


async def test_an_update_job_stored_under_its_old_name_updates_the_post(
    world: World,
    any_db_crier: Crier,  # noqa: F811  (the fixture imported above)
    clock: FakeClock,
) -> None:
    crier = any_db_crier
    local, msg = await posted_one(world, crier, clock, "v1")
    await edit(world, id=local, message="v2", update_posted=False)  # no update job of ours
    a = await get(crier, world, local)
    [sent] = await rows(crier, "SELECT fire_ts FROM bot_deliveries")
    old_args = {"announcement_id": a.id, "fire_ts": sent["fire_ts"], "channel_id": world.news.id}
    async with crier.sched.transaction() as ctx:  # written and renamed in one commit
        job_id = await ctx.scheduler.enqueue(UPDATE_FN, old_args)
        await stored_under(ctx, job_id, "crier.update_posted")
    await crier.sched.wait_idle()

    assert msg.content == "v2"
    assert world.fake.bot_messages(world.news) == [msg]
    job = await crier.sched.get_job(job_id)
    assert job is not None
    assert (job.fn, job.state) == ("crier.update_posted", JobState.SUCCESS)
    assert await stored_args(crier, job_id) == old_args  # the earlier release's very shape


async def test_a_publish_job_stored_under_its_old_name_publishes_the_post(
    world: World,
    any_db_crier: Crier,  # noqa: F811  (the fixture imported above)
    clock: FakeClock,
) -> None:
    crier = any_db_crier
    news, waiting = await publish_held_back(world, crier, clock)
    async with crier.sched.transaction() as ctx:  # (it waits 120 s: nothing claims it now)
        await stored_under(ctx, waiting.id, "crier.publish")
    assert set(await stored_args(crier, waiting.id)) == {
        "announcement_id", "fire_ts", "channel_id", "message_id", "posted_at", "round"
    }  # fmt: skip
    await advance(crier, clock, timedelta(minutes=3))

    [post] = world.fake.bot_messages(news)
    assert post.crossposted
    [row] = await rows(crier, "SELECT publish_state FROM bot_deliveries")
    assert row["publish_state"] == "published_late"
    job = await crier.sched.get_job(waiting.id)
    assert job is not None
    assert (job.fn, job.state) == ("crier.publish", JobState.SUCCESS)


async def test_a_schedule_stored_with_the_old_arguments_still_posts(
    world: World,
    any_db_crier: Crier,  # noqa: F811  (the fixture imported above)
    clock: FakeClock,
) -> None:
    """An earlier release stored a recurring announcement's schedule with arguments
    ``{"announcement_id": N}`` (no ``fire_ts``): its occurrences post as before."""
    crier = any_db_crier
    local = await schedule(world, when="in 10m", repeat="hourly", message="tick")
    a = await get(crier, world, local)
    assert a.schedule_name is not None
    async with crier.sched.transaction() as ctx:
        await ctx.db.execute(
            "UPDATE scheduler_schedules SET args = ? WHERE name = ?",
            (json.dumps({"announcement_id": a.id}), a.schedule_name),
        )
    assert (await crier.sched.schedules.get(a.schedule_name)).args == {"announcement_id": a.id}
    await advance(crier, clock, timedelta(minutes=10))
    await advance(crier, clock, timedelta(hours=1))
    assert [m.content for m in world.fake.bot_messages(world.news)] == ["tick", "tick"]
    jobs = [j for j in await crier.sched.list_jobs(fn=SEND_FN) if j.state == JobState.SUCCESS]
    assert len(jobs) == 2
