"""Retention (issue 32): delivery records, change history and Discord events' rows older than
``HISTORY_DAYS`` are deleted by an hourly job (one run per hour whatever the number of
instances), a bounded batch per transaction, keeping what ``/list``, ``/info`` and the
dashboard show and what the bot reads back: ``/info`` through the real discord.py client
against the fake Discord reads the same before and after, numbers and counts included. On a
FakeClock; every test on SQLite, and on PostgreSQL when a server is configured."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import pytest

from bot.announcements.retention import (
    DELIVERIES_WALKED,
    KEEP_DELIVERIES,
    KEEP_HISTORY,
    PRUNE_FN,
    RETENTION_CRON,
)
from bot.announcements.transfer import PENDING_FOR
from bot.config import ConfigError, load_settings
from bot.db import BotDb
from bot.models import HistoryAction, nonce_for
from scheduler import JobState
from tests.bot.conftest import NOW, CrierFactory, World, run_command
from tests.bot.test_commands import any_db_crier  # noqa: F401 (a fixture, used by crier)

if TYPE_CHECKING:
    from bot.announcements import Announcement
    from bot.app import Crier
    from scheduler.testing import FakeClock

DAY = 86400.0


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


async def walk(crier: Crier, clock: FakeClock, steps: int, step: timedelta) -> None:
    for _ in range(steps):
        clock.advance(step)
        await crier.sched.wait_idle()


async def seed_deliveries(
    crier: Crier, ann_id: int, times: list[float], states: tuple[str, ...]
) -> None:
    """Delivery rows as the bot writes them (``first_attempt_at`` is when the row was
    written: here, its occurrence's time), states taken in turn from ``states``."""
    async with crier.sched.transaction() as ctx:
        await ctx.db.executemany(
            "INSERT INTO bot_deliveries (announcement_id, fire_ts, nonce, state, "
            "first_attempt_at, message_id, sent_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (ann_id, ts, nonce_for(ann_id, ts), state, ts,
                 1000 + i if state == "sent" else None, ts if state == "sent" else None)
                for i, ts in enumerate(times)
                for state in [states[i % len(states)]]
            ],
        )  # fmt: skip


async def seed_history(crier: Crier, ann_id: int, entries: list[tuple[float, str]]) -> None:
    async with crier.sched.transaction() as ctx:
        await ctx.db.executemany(
            "INSERT INTO bot_history (announcement_id, at, actor_id, action, detail) "
            "VALUES (?, ?, NULL, ?, '')",
            [(ann_id, at, action) for at, action in entries],
        )


async def seed_events(crier: Crier, ann: Announcement, times: list[float]) -> None:
    async with crier.sched.transaction() as ctx:
        await ctx.db.executemany(
            "INSERT INTO bot_events (announcement_id, fire_ts, guild_id, state, event_id, name, "
            "start_ts, shows, updated_at) VALUES (?, ?, ?, 'created', ?, 'e', ?, '', ?)",
            [(ann.id, ts, ann.guild_id, 9000 + i, ts, ts) for i, ts in enumerate(times)],
        )


async def count(crier: Crier, table: str, ann_id: int | None = None) -> int:
    where = "" if ann_id is None else " WHERE announcement_id = ?"
    async with crier.sched.reader() as db:
        cur = await db.execute(
            f"SELECT COUNT(*) AS n FROM {table}{where}", () if ann_id is None else (ann_id,)
        )
        return int((await cur.fetchone())["n"])


async def counts(crier: Crier) -> int:
    """Every row of the tables the retention deletes from."""
    return sum([await count(crier, t) for t in ("bot_deliveries", "bot_history", "bot_events")])


async def run_job(crier: Crier) -> dict[str, Any]:
    """Run the hourly job now (its schedule triggered), until it is done; what it did."""
    job_id = await crier.sched.schedules.trigger(RETENTION_CRON)
    await crier.sched.wait_idle()
    result = await crier.sched.result(job_id, timeout=10)
    assert result["kind"] == "success", result
    value: dict[str, Any] = result["value"]
    return value


def section(page: str, title: str) -> list[str]:
    lines = page.split("\n")
    start = lines.index(f"**{title}:**") + 1
    out = []
    for line in lines[start:]:
        if line.startswith("**"):
            break
        out.append(line)
    return out


# --- what /info shows is kept -------------------------------------------------------------------


async def test_info_reads_the_same_before_and_after_the_retention_deletes_the_old_rows(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """A repeating announcement numbering its posts ({occurrence}) with an end after 5,000
    posts, 2,000 occurrences of it recorded a month ago (posted, missed, failed, skipped),
    Discord events' rows of theirs, 8 real posts and 14 changes. The retention with nothing
    kept back by age (cutoff: now) deletes all but what /info shows: /info answers the same
    text, its next post has the number /info said, and its count of posts made is whole."""
    local = await schedule(world, when="in 1m", repeat="every minute", message="Post {occurrence}")
    await answer(world, "edit", id=local, times=5000)
    ann = await get(crier, world, local)
    month_ago = NOW.timestamp() - 30 * DAY
    old = [month_ago + 60 * i for i in range(2000)]
    await seed_deliveries(crier, ann.id, old, ("sent", "missed", "failed", "sent", "skipped"))
    await seed_events(crier, ann, old[:20])
    for _ in range(6):
        await answer(world, "pause", id=local)
        await answer(world, "resume", id=local)
    await walk(crier, clock, 8, timedelta(minutes=1))
    assert len(world.fake.bot_messages(world.news)) == 8
    before = await answer(world, "info", id=local)
    assert section(before, "Last deliveries")[0].startswith("• <t:")  # the latest posts
    assert "**Ends after:** 5000 posts (808 made so far)" in before.split("\n")
    assert before.endswith("> Post 2009")  # 2,008 occurrences recorded before it

    crier.retention.keep_for = 0.0  # everything is past the retention but what is kept
    done = await run_job(crier)

    assert await answer(world, "info", id=local) == before
    assert done["deliveries"] == 2000 + 8 - KEEP_DELIVERIES
    assert done["events"] == 20
    assert done["history"] == 14 - 1 - KEEP_HISTORY  # created, edited, 6 x pause/resume
    assert await count(crier, "bot_deliveries", ann.id) == KEEP_DELIVERIES
    assert await count(crier, "bot_events", ann.id) == 0
    async with crier.sched.reader() as db:
        cur = await db.execute(
            "SELECT action FROM bot_history WHERE announcement_id = ? ORDER BY id", (ann.id,)
        )
        actions = [r["action"] for r in await cur.fetchall()]
    assert actions[0] == HistoryAction.CREATED.value  # its creation, whatever its age
    assert len(actions) == 1 + KEEP_HISTORY
    await walk(crier, clock, 1, timedelta(minutes=1))
    assert world.fake.bot_messages(world.news)[-1].content == "Post 2009"
    page = await answer(world, "info", id=local)
    assert "**Ends after:** 5000 posts (809 made so far)" in page.split("\n")


async def test_posts_in_other_places_go_with_their_occurrence_and_the_latest_edits_in_place(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """An announcement also posted in #events (also_in): the retention deletes each
    place's post record with its occurrence's, keeps those of the occurrences /info shows
    (it reads the same), and an edit still brings the latest post up to date in both
    places, in place."""
    events = world.guild.add_channel("events")
    local = await schedule(world, when="in 1m", repeat="every minute", message="v1")
    await answer(world, "edit", id=local, also_in=f"<#{events.id}>")
    await walk(crier, clock, 8, timedelta(minutes=1))
    ann = await get(crier, world, local)
    assert await count(crier, "bot_place_deliveries", ann.id) == 8
    before = await answer(world, "info", id=local)
    assert f"↳ <#{events.id}> — ✅ posted" in before
    crier.retention.keep_for = 0.0
    await run_job(crier)
    assert await answer(world, "info", id=local) == before
    kept = await count(crier, "bot_deliveries", ann.id)
    assert kept == KEEP_DELIVERIES
    async with crier.sched.reader() as db:
        cur = await db.execute(
            "SELECT p.fire_ts FROM bot_place_deliveries p WHERE p.announcement_id = ? AND "
            "EXISTS (SELECT 1 FROM bot_deliveries d WHERE d.announcement_id = p.announcement_id "
            "AND d.fire_ts = p.fire_ts)",
            (ann.id,),
        )
        assert (
            len(await cur.fetchall()) == kept == await count(crier, "bot_place_deliveries", ann.id)
        )
    latest = [world.fake.bot_messages(c)[-1] for c in (world.news, events)]
    said = await answer(world, "edit", id=local, message="v2")
    assert "in place" in said, said
    await crier.sched.wait_idle()
    assert [m.content for m in latest] == ["v2", "v2"]


async def test_the_latest_attempt_post_and_resume_are_kept_whatever_came_after(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The newest occurrences are all skipped ones, the resume is older than /info's
    changes: the latest attempted occurrence (what an edit brings up to date, /list's
    publish state), the latest post (``times``' last post) and the latest resume (a late
    delivery finds whether its time came while paused) are read back the same after."""
    local = await schedule(world, when="in 300 days", repeat="hourly", message="tick")
    ann = await get(crier, world, local)
    start = NOW.timestamp()  # what follows was written after it was made, in time order
    posted = [start + 3600 * i for i in range(1, 11)]
    skipped = [start + DAY + 3600 * i for i in range(KEEP_DELIVERIES + 1)]
    await seed_deliveries(crier, ann.id, posted, ("sent", "failed"))
    await seed_deliveries(crier, ann.id, skipped, ("skipped",))
    resumed = start + 2 * DAY
    await seed_history(
        crier,
        ann.id,
        [(resumed - 1, "paused"), (resumed, "resumed")]
        + [(resumed + 60 * i, "edited") for i in range(1, KEEP_HISTORY + 3)],
    )

    async def read_back() -> tuple[Any, ...]:
        async with crier.sched.reader() as db:
            rows = BotDb(db)
            return (
                await rows.last_attempted_delivery(ann.id),
                await rows.latest_post(ann.id),
                await rows.last_change_at(ann.id, HistoryAction.RESUMED),
                await rows.posts_made(ann.id),
                await rows.occurrences_before(ann.id, now + 2 * DAY),
                await rows.recent_deliveries(ann.id, KEEP_DELIVERIES + 1),
                await rows.history(ann.id, KEEP_HISTORY),
            )

    clock.advance(timedelta(days=5, minutes=30))  # between two hourly runs
    now = clock.now().timestamp()
    await seed_deliveries(crier, ann.id, [now + DAY], ("skipped",))  # ahead: never old
    before = await read_back()
    assert before[0].fire_ts == posted[-1]
    assert before[1] == posted[-2]
    crier.retention.keep_for = 0.0  # all that came is past the retention
    await run_job(crier)
    assert await read_back() == before
    # Kept: the 5 latest skipped ones, the one ahead, the latest attempt and the latest post.
    assert await count(crier, "bot_deliveries", ann.id) == KEEP_DELIVERIES + 1 + 2


# --- batches, a run cut short, the walk, two instances -------------------------------------------


async def test_each_transaction_deletes_at_most_a_batch(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """With batches of 50: after each write transaction of the run (read from another
    connection, at the run's pause point) at most 50 rows are gone; all of them in the end."""
    anns = []
    for _ in range(3):
        local = await schedule(world, when="in 300 days", message="x")
        anns.append(await get(crier, world, local))
    for k, ann in enumerate(anns):
        times = [NOW.timestamp() + DAY * k + 60 * i for i in range(1, 301)]
        await seed_deliveries(crier, ann.id, times, ("sent", "missed"))
        await seed_history(crier, ann.id, [(t, "edited") for t in times[:100]])
    clock.advance(timedelta(days=5, minutes=30))  # between two hourly runs
    crier.retention.keep_for = 0.0
    crier.retention.batch = 50
    seen = [await counts(crier)]

    async def after_each() -> None:
        seen.append(await counts(crier))

    crier.retention.pause_point = after_each
    await run_job(crier)
    gone = [a - b for a, b in pairwise(seen)]
    assert max(gone) <= 50
    assert sum(gone) == 3 * (300 - KEEP_DELIVERIES) + 3 * (100 - KEEP_HISTORY)
    assert len([g for g in gone if g]) >= sum(gone) // 50


async def test_a_run_cut_short_is_run_again_and_finishes_counting_each_row_once(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The run stops after its third transaction (an exception where a process could die):
    what it committed stays, the job runs again after its backoff and deletes the rest, and
    the posts counted for ``times`` are the same as before either run."""
    local = await schedule(world, when="in 1h", repeat="hourly", message="x")
    ann = await get(crier, world, local)
    times = [NOW.timestamp() - 100 * DAY + 60 * i for i in range(1000)]
    await seed_deliveries(crier, ann.id, times, ("sent", "sent", "missed"))
    async with crier.sched.reader() as db:
        made = await BotDb(db).posts_made(ann.id)
    crier.retention.batch = 100
    steps = 0

    async def crash_once() -> None:
        nonlocal steps
        steps += 1
        if steps == 3:
            raise RuntimeError("the process died here")

    crier.retention.pause_point = crash_once
    job_id = await crier.sched.schedules.trigger(RETENTION_CRON)
    await crier.sched.wait_idle()
    job = await crier.sched.get_job(job_id)
    assert job.state == JobState.PENDING  # to be run again
    assert await count(crier, "bot_deliveries", ann.id) == 1000 - 300  # 3 batches done
    async with crier.sched.reader() as db:
        assert await BotDb(db).posts_made(ann.id) == made
    clock.advance(timedelta(minutes=3))  # past its backoff
    await crier.sched.wait_idle()
    assert (await crier.sched.get_job(job_id)).state == JobState.SUCCESS
    assert await count(crier, "bot_deliveries", ann.id) == KEEP_DELIVERIES
    async with crier.sched.reader() as db:
        assert await BotDb(db).posts_made(ann.id) == made


async def test_a_run_reads_only_what_went_past_the_cutoff_since_the_last(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The walk goes on from where the last run stopped: a second run with nothing new
    past the cutoff looks at no announcement, though the kept rows are older than the
    cutoff."""
    for _ in range(3):
        ann = await get(crier, world, await schedule(world, when="in 1h", message="x"))
        times = [NOW.timestamp() - 100 * DAY + 60 * i for i in range(20)]
        await seed_deliveries(crier, ann.id, times, ("sent",))
    first = await run_job(crier)
    assert first["deliveries"] == 3 * (20 - KEEP_DELIVERIES)
    async with crier.sched.reader() as db:
        assert await BotDb(db).meta_value(DELIVERIES_WALKED) is not None
    clock.advance(timedelta(seconds=1))  # another run (a trigger at one time is one job)
    again = await run_job(crier)
    # One transaction for each table that grows with use (nothing there): none walked.
    assert (again["deliveries"], again["transactions"]) == (0, 3)


async def test_what_grows_with_use_is_deleted_by_the_job(crier: Crier) -> None:
    """Import dry runs that expired, /postnow's posts (ended) older than the retention,
    and the command counts of past minutes of members who used no command since."""
    now = NOW.timestamp()
    old = now - 100 * DAY
    async with crier.sched.transaction() as ctx:
        await ctx.db.executemany(
            "INSERT INTO bot_pending_imports (guild_id, user_id, token, document, created_at) "
            "VALUES (?, ?, ?, '{}', ?)",
            [(1, u, f"t{u}", now - PENDING_FOR - 1 if u < 30 else now) for u in range(40)],
        )
        await ctx.db.executemany(
            "INSERT INTO bot_extra_posts (announcement_id, guild_id, request_key, fire_ts, "
            "channel_id, nonce, state, created_at) VALUES (1, 1, ?, ?, 10, 'n', ?, ?)",
            [
                (f"k{i}", at, state, at)
                for i, (at, state) in enumerate(
                    [(old, "sent")] * 20 + [(old, "failed")] * 5 + [(old, "queued")]
                    + [(now, "sent")] * 3
                )
            ],
        )  # fmt: skip
        minute = int(now // 60)
        await ctx.db.executemany(
            "INSERT INTO bot_command_counts (guild_id, user_id, minute, count) VALUES (1, ?, ?, 1)",
            [(u, minute - 1 - u) for u in range(50)] + [(99, minute)],
        )
    done = await run_job(crier)
    assert (done["pending_imports"], done["extra_posts"], done["command_counts"]) == (30, 25, 50)
    assert await count(crier, "bot_pending_imports") == 10
    assert await count(crier, "bot_extra_posts") == 1 + 3  # one never ended, and the new
    assert await count(crier, "bot_command_counts") == 1  # this minute's


async def test_two_instances_prune_once_an_hour(
    world: World, crier_factory: CrierFactory, db_url: str, clock: FakeClock
) -> None:
    """Two instances on one database: each hour's run is one job, run once, by one of
    them (the occurrence of one static schedule)."""
    a = await crier_factory(database_url=db_url)
    b = await crier_factory(database_url=db_url)
    pruned: list[str] = []
    for name, app in (("a", a), ("b", b)):
        prune = app.retention.prune

        async def counted(*args: Any, name: str = name, prune: Any = prune) -> Any:
            pruned.append(name)
            return await prune(*args)

        app.retention.prune = counted  # type: ignore[method-assign]
    for _ in range(3):
        clock.advance(timedelta(hours=1))
        await asyncio.gather(a.sched.wait_idle(), b.sched.wait_idle())
    await asyncio.gather(a.sched.wait_idle(), b.sched.wait_idle())
    assert len(pruned) == 3  # by either: one run an hour in all
    runs = await a.sched.runs(fn=PRUNE_FN)
    assert len(runs) == 3
    assert all(r.outcome == "success" for r in runs)
    jobs = await a.sched.list_jobs(fn=PRUNE_FN)
    assert len({j.id for j in jobs}) == 3


async def test_two_prunes_of_one_announcement_at_once_count_each_row_once(
    world: World, crier: Crier
) -> None:
    """On PostgreSQL (several writers), a prune holding its deletes uncommitted while a
    second prune of the same announcement waits for them: the second finds them gone and
    counts nothing, so ``times`` and ``{occurrence}`` count each deleted row once."""
    if crier.sched.store.dialect != "postgres":
        pytest.skip("one writer at a time on SQLite: nothing overlaps")
    ann = await get(crier, world, await schedule(world, when="in 1h", message="x"))
    times = [NOW.timestamp() - 100 * DAY + 60 * i for i in range(50)]
    await seed_deliveries(crier, ann.id, times, ("sent",))
    before = NOW.timestamp()
    deleted, release = asyncio.Event(), asyncio.Event()

    async def first() -> int:
        async with crier.sched.transaction() as ctx:
            n = await BotDb(ctx.db).prune_deliveries(ann.id, before, before, 5, 1000)
            deleted.set()
            await release.wait()
            return n

    async def second() -> int:
        async with crier.sched.transaction() as ctx:
            return await BotDb(ctx.db).prune_deliveries(ann.id, before, before, 5, 1000)

    holding = asyncio.create_task(first())
    await deleted.wait()
    waiting = asyncio.create_task(second())
    import asyncpg

    conn = await asyncpg.connect(crier.settings.database_url)
    try:
        for _ in range(1000):  # until the second waits for the first's row locks
            if waiting.done():
                break
            if await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'"
            ):
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the second prune neither waited nor finished")
    finally:
        await conn.close()
    release.set()
    assert (await holding, await waiting) == (45, 0)
    async with crier.sched.reader() as db:
        assert await BotDb(db).posts_made(ann.id) == 50


# --- the setting ----------------------------------------------------------------------------------


def test_history_days_defaults_to_90_and_refuses_less_than_a_week() -> None:
    env = {"DISCORD_TOKEN": "x" * 30}
    assert load_settings(env, env_file=None).history_days == 90 * DAY
    assert load_settings({**env, "HISTORY_DAYS": "365.5"}, env_file=None).history_days == (
        365.5 * DAY
    )
    for bad, why in (("3", "must be between 7 and 36500, got 3"), ("ninety", "must be a number")):
        with pytest.raises(ConfigError, match=f"HISTORY_DAYS {why}"):
            load_settings({**env, "HISTORY_DAYS": bad}, env_file=None)
