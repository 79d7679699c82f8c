"""The limits against abuse, end to end through the real discord.py client against the fake
Discord on a FakeClock: each refusal names its limit and its setting and writes nothing; an
operator raises a limit for one server; the count and the insert are one transaction (a
PostgreSQL race held open by the test); commands per minute are counted in the database,
once per interaction across instances; a flood in one server leaves another's on time."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.announcements import OverLimit, check_templates
from bot.app import Crier
from bot.models import Draft, GuildLimits, Limits
from tests.bot.conftest import NOW, World, db_snapshot, run_command
from tests.bot.test_leaving import make_crier  # noqa: F401 (a fixture)

if TYPE_CHECKING:
    from pathlib import Path

    from scheduler.testing import FakeClock
    from tests.bot.test_leaving import MakeCrier

# ruff: noqa: F811 (make_crier: the fixture, as each test's argument)

TEN_MINUTES = NOW + timedelta(minutes=10)


async def schedule_answer(world: World, **options: Any) -> tuple[str, bool]:
    options.setdefault("when", "in 10m")
    options.setdefault("message", "hello")
    cb = await run_command(world, "schedule", channel=world.news, **options)
    return cb.content or "", cb.ephemeral


def scheduled(text: str) -> bool:
    return re.search(r"Scheduled announcement \*\*#\d+\*\*", text) is not None


async def test_live_announcements_per_server(
    world: World, other: World, make_crier: MakeCrier
) -> None:
    crier = await make_crier(max_announcements=2)
    for _ in range(2):
        assert scheduled((await schedule_answer(world))[0])
    before = await db_snapshot(crier)
    text, private = await schedule_answer(world, repeat="daily")
    assert private
    assert not scheduled(text)
    assert "MAX_ANNOUNCEMENTS_PER_GUILD" in text, text
    assert "limit of 2" in text, text
    assert await db_snapshot(crier) == before  # nothing written
    assert scheduled((await schedule_answer(other))[0])  # another server has its own

    cb = await run_command(world, "cancel", id=1)
    assert "Canceled" in (cb.content or ""), cb.content
    assert scheduled((await schedule_answer(world))[0])  # room again
    assert not scheduled((await schedule_answer(world))[0])

    # An operator raises it for this server only.
    announcements = crier.bot.announcements
    raised = await announcements.set_guild_limits(GuildLimits(world.guild.id, max_announcements=3))
    assert raised.max_announcements == 3
    assert raised.commands_per_minute == 1_000_000
    assert scheduled((await schedule_answer(world))[0])
    assert "limit of 3" in (await schedule_answer(world))[0]
    assert (await announcements.guild_limits(other.guild.id))[1].max_announcements == 2


async def test_the_count_and_the_insert_are_one_transaction(
    world: World, make_crier: MakeCrier, clock: FakeClock
) -> None:
    """Two instances create in one server at once, with room for one: each counts only once
    the server's row is its own (the test holds that row locked until both wait on it, so
    both would have counted the same zero otherwise), and one is written."""
    crier = await make_crier(max_announcements=1)
    store: Any = crier.sched.store
    if store.dialect != "postgres":
        pytest.skip("a race of PostgreSQL's (SQLite has one writer)")
    async with crier.sched.transaction() as ctx:
        await ctx.db.execute(
            "INSERT INTO bot_guild_settings (guild_id, updated_at) VALUES (?, 0)",
            (world.guild.id,),
        )
    # Instances of their own (a process's own transactions take turns in it): their
    # schedulers only, sharing the database.
    # (each with a name of its own, as two processes would have)
    instances = [
        Crier(replace(crier.settings, instance_name=f"racer-{i}"), clock=clock) for i in range(2)
    ]
    for instance in instances:
        await instance.sched.start()
    import asyncpg

    holder = await asyncpg.connect(store.dsn)
    try:
        tx = holder.transaction()
        await tx.start()
        await holder.execute(
            "SELECT 1 FROM bot_guild_settings WHERE guild_id = $1 FOR UPDATE", world.guild.id
        )
        draft = Draft(world.guild.id, world.news.id, 1, "race", None, {}, TEN_MINUTES, "UTC", None)
        creates = [
            asyncio.create_task(instance.bot.announcements.create(draft)) for instance in instances
        ]
        waiting = 0
        for _ in range(6000):  # until both wait for the row lock the test holds
            # pg_stat_activity is read once per transaction and kept: the holder's is open,
            # so each look clears that snapshot to see the racers as they are now.
            await holder.execute("SELECT pg_stat_clear_snapshot()")
            waiting = await holder.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            )
            ended = [t for t in creates if t.done()]
            if waiting == len(instances) or ended:
                break
            await asyncio.sleep(0.01)
        # A create that ended before it could wait says why.
        assert not ended, [t.exception() or t.result() for t in ended]
        activity = await holder.fetch(
            "SELECT state, wait_event_type, wait_event, left(query, 50) AS q "
            "FROM pg_stat_activity WHERE datname = current_database()"
        )
        assert waiting == len(instances), [tuple(r) for r in activity]
        await tx.rollback()
        results = await asyncio.gather(*creates, return_exceptions=True)
    finally:
        await holder.close()
        for instance in instances:
            await instance.sched.stop()
    refused = [r for r in results if isinstance(r, OverLimit)]
    assert len(refused) == 1, results
    async with crier.sched.reader() as db:
        cur = await db.execute(
            "SELECT count(*) FROM bot_announcements WHERE guild_id = ?", (world.guild.id,)
        )
        assert (await cur.fetchone())[0] == 1


async def test_the_shortest_repeat(world: World, make_crier: MakeCrier) -> None:
    crier = await make_crier(min_repeat=600.0)  # MIN_REPEAT_MINUTES=10
    for repeat in ("every 5 minutes", "*/5 * * * *", "0,1 9 * * *"):
        text, private = await schedule_answer(world, repeat=repeat)
        assert private, (repeat, text)
        assert not scheduled(text), (repeat, text)
        assert "MIN_REPEAT_MINUTES" in text, text
        assert "10 minutes" in text, text
    assert scheduled((await schedule_answer(world, repeat="every 10 minutes"))[0])
    cb = await run_command(world, "edit", id=1, repeat="every 2 minutes")
    assert "MIN_REPEAT_MINUTES" in (cb.content or ""), cb.content
    a = await crier.bot.announcements.get(world.guild.id, 1)
    assert a.repeat_every == 600.0  # the edit wrote nothing
    await crier.bot.announcements.set_guild_limits(
        GuildLimits(world.guild.id, min_repeat_seconds=60.0)
    )
    assert scheduled((await schedule_answer(world, repeat="every minute"))[0])


async def test_files_per_server_raised_by_an_operator(world: World, make_crier: MakeCrier) -> None:
    crier = await make_crier(guild_files_max_bytes=1000.0)
    png = b"\x89PNG\r\n\x1a\n" + b"p" * 592
    first = world.fake.make_attachment("a.png", png)
    assert scheduled((await schedule_answer(world, image=first))[0])
    second = world.fake.make_attachment("b.png", png)
    text, _ = await schedule_answer(world, image=second)
    assert "GUILD_FILES_MAX_MB" in text, text
    await crier.bot.announcements.set_guild_limits(
        GuildLimits(world.guild.id, files_max_bytes=2000.0)
    )
    third = world.fake.make_attachment("c.png", png)
    assert scheduled((await schedule_answer(world, image=third))[0])


async def list_answer(world: World, by: Any = None) -> str:
    cb = await run_command(world, "list", by=by)
    assert cb.ephemeral
    return cb.content or ""


async def test_commands_per_member_per_minute_across_instances(
    world: World, make_crier: MakeCrier, clock: FakeClock
) -> None:
    """Two instances on one database, both receiving every interaction: each command
    counts once, in the count both share."""
    crier = await make_crier(commands_per_minute=3)
    await make_crier(commands_per_minute=3)
    clock.set(NOW + timedelta(seconds=5))
    for _ in range(3):
        assert "Slow down" not in await list_answer(world)
    before = await db_snapshot(crier)
    text = await list_answer(world)
    assert text.startswith("Slow down"), text
    assert "COMMANDS_PER_MINUTE" in text, text
    assert "Wait 55 seconds" in text
    assert await db_snapshot(crier) == before
    cb = await run_command(world, "schedule", when="in 1h", message="m", channel=world.news)
    assert (cb.content or "").startswith("Slow down")  # every command counts
    assert "Slow down" not in await list_answer(world, by=world.member)  # per member
    clock.set(NOW + timedelta(minutes=1))
    assert "Slow down" not in await list_answer(world)  # a new minute
    async with crier.sched.reader() as db:
        cur = await db.execute(
            "SELECT minute, count FROM bot_command_counts WHERE user_id = ?",
            (world.admin.user.id,),
        )
        rows = [tuple(r) for r in await cur.fetchall()]
    assert rows == [(int(clock.now().timestamp() // 60), 1)]  # older minutes pruned


def test_templates_per_server() -> None:
    limits = Limits(max_templates=2)
    check_templates(limits, 1)
    with pytest.raises(OverLimit, match="MAX_TEMPLATES_PER_GUILD"):
        check_templates(limits, 2)


async def test_a_flood_in_one_server_leaves_another_on_time(
    world: World, other: World, make_crier: MakeCrier, clock: FakeClock, tmp_path: Path
) -> None:
    """One server fills its (raised) limit with announcements due at one instant in one
    channel; another server's, due at the same instant and made last, posts at that
    instant, while the flood posts one per spacing."""
    spacing = 1.5
    crier = await make_crier(send_spacing=spacing)
    world.fake.ratelimits.set_message_limit(1000, 5.0)
    flood = 300
    await crier.bot.announcements.set_guild_limits(
        GuildLimits(world.guild.id, max_announcements=flood)
    )
    drafts = [
        Draft(world.guild.id, world.news.id, 1, f"flood {i}", None, {}, TEN_MINUTES, "UTC", None)
        for i in range(flood)
    ]
    await crier.bot.announcements.create_many(drafts)
    with pytest.raises(OverLimit, match="MAX_ANNOUNCEMENTS_PER_GUILD"):
        await crier.bot.announcements.create_many(drafts[:1])
    cb = await run_command(other, "schedule", when="in 10m", message="on time", channel=other.news)
    assert "Scheduled" in (cb.content or "")

    clock.set(TEN_MINUTES)
    await crier.sched.wait_idle()
    assert [m.content for m in world.fake.bot_messages(other.news)] == ["on time"]
    assert len(world.fake.bot_messages(world.news)) == 1  # the flood waits its turns
    for i in range(2, 5):
        clock.advance(spacing)
        await crier.sched.wait_idle()
        assert len(world.fake.bot_messages(world.news)) == i
