"""A server that removes the bot (or is deleted): its announcements stop at once, nothing about
it reaches a log channel, everything of it is deleted after FORGET_AFTER_DAYS by a durable
job, and a server that invites the bot back before then carries on as it was. End to end
through the real discord.py client against the fake Discord (GUILD_DELETE / GUILD_CREATE), on
a FakeClock; on SQLite, and on PostgreSQL when a server is configured."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.announcements import AWAY, FORGET_FN, ForgetArgs
from bot.announcements.deliveries import FORGOTTEN, Decision, begin_attempt
from bot.announcements.standing import forget_guild
from bot.app import Crier
from bot.config import load_settings
from bot.db import BotDb
from bot.models import GuildLimits
from scheduler import JobState
from tests.bot.conftest import NOW, World, restore_discord_endpoints, run_command, settings_for
from tests.bot.test_commands import postgres_dsn
from tests.bot.test_export_import import import_file
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from pathlib import Path

    from scheduler.testing import FakeClock
    from tests.fakediscord.state import Channel

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
PNG = b"\x89PNG\r\n\x1a\n" + b"p" * 500

MakeCrier = Callable[..., Awaitable[Crier]]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def make_crier(
    request: pytest.FixtureRequest, world: World, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[MakeCrier]:
    """Start the bot (``await make_crier(**settings)``) on SQLite, or on a fresh PostgreSQL
    database when a server is configured; a second call after ``close()`` restarts it on the
    same database."""
    url = f"sqlite:///{tmp_path / 'crier.db'}"
    cleanup = None
    if request.param == "postgres":
        dsn = postgres_dsn()
        if dsn is None:
            pytest.skip("needs CRIER_TEST_POSTGRES_DSN")
        from bot.app.crier import bot_migrations
        from tests.scheduler.pg import POOL

        db = await POOL.acquire(dsn, [bot_migrations()])  # at head and empty
        url = db.dsn

        async def cleanup() -> None:
            await POOL.release(db)

    started: list[Crier] = []

    async def start(**overrides: Any) -> Crier:
        settings = settings_for(world.fake, tmp_path / "unused.db", database_url=url, **overrides)
        app = Crier(settings, clock=clock, guild_ready_timeout=0.05)
        await app.start()
        started.append(app)
        return app

    try:
        yield start
    finally:
        for app in reversed(started):
            await app.close()
        restore_discord_endpoints()
        if cleanup is not None:
            await cleanup()


async def schedule(world: World, when: str, message: str, **options: Any) -> int:
    cb = await run_command(
        world, "schedule", when=when, message=message, channel=world.news, **options
    )
    found = re.search(r"Scheduled announcement \*\*#(\d+)\*\*", cb.content or "")
    assert found is not None, cb.content
    return int(found[1])


async def advance_to(crier: Crier, clock: FakeClock, delta: timedelta) -> None:
    clock.set(NOW + delta)
    await crier.sched.wait_idle()


def sends(world: World, since: int = 0) -> list[str]:
    """The message POSTs the fake received (any channel), from request ``since`` on."""
    return [
        r.path
        for r in world.fake.requests[since:]
        if r.method == "POST" and re.fullmatch(r"/channels/\d+/messages", r.path)
    ]


async def rows_of(crier: Crier, guild_id: int) -> dict[str, int]:
    """How many rows of each of the bot's tables belong to the guild."""
    async with crier.sched.reader() as db:
        counts: dict[str, int] = {}
        for table in (
            "bot_announcements",
            "bot_attachments",
            "bot_guild_settings",
            "bot_guilds_left",
            "bot_guild_limits",
            "bot_command_counts",
        ):
            cur = await db.execute(f"SELECT count(*) FROM {table} WHERE guild_id = ?", (guild_id,))
            counts[table] = int((await cur.fetchone())[0])
        for table in ("bot_deliveries", "bot_history"):
            cur = await db.execute(
                f"SELECT count(*) FROM {table} WHERE announcement_id IN "
                "(SELECT id FROM bot_announcements WHERE guild_id = ?)",
                (guild_id,),
            )
            counts[table] = int((await cur.fetchone())[0])
    return counts


async def left(crier: Crier, world: World) -> bool:
    return await crier.bot.announcements.left_guild(world.guild.id) is not None


async def wait_left(crier: Crier, world: World, want: bool = True) -> None:
    """Wait until the bot has recorded the guild left (or back): the gateway event is
    handled in a task of discord.py's, which the test does not hold."""
    for _ in range(1000):
        if await left(crier, world) is want:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the guild was never recorded {'left' if want else 'back'}")


async def set_log_channel(world: World, channel: Channel) -> None:
    cb = await run_command(world, "settings", log_channel=channel)
    assert "log" in (cb.content or "").lower(), cb.content


# --- tests ---------------------------------------------------------------------------------------


async def test_a_server_that_removes_the_bot_posts_nothing_and_is_forgotten(
    world: World, other: World, make_crier: MakeCrier, clock: FakeClock
) -> None:
    crier = await make_crier(forget_after=2.5 * 86400)  # FORGET_AFTER_DAYS=2.5
    await set_log_channel(world, world.general)
    upload = world.fake.make_attachment("cat.png", PNG)
    one_off = await schedule(world, "in 2h", "once", image=upload)
    hourly = await schedule(world, "in 1h", "hourly", repeat="hourly")
    # Another server's announcement goes on throughout.
    cb = await run_command(other, "schedule", when="in 1h", message="other", channel=other.news)
    assert "Scheduled" in (cb.content or "")
    sessions_guilds = [world.guild.id, other.guild.id]
    async with crier.sched.transaction() as ctx:
        await ctx.db.execute(
            "INSERT INTO bot_dashboard_sessions (id_hash, user_id, username, guild_ids, "
            "csrf_token, created_at, expires_at) VALUES ('h', 1, 'u', ?, 'c', 0, 9e9)",
            (str(sessions_guilds),),
        )
    before = len(world.fake.requests)

    world.fake.remove_guild(world.guild)
    await wait_left(crier, world)
    for hour in (1, 2, 3):
        await advance_to(crier, clock, timedelta(hours=hour))
    assert sends(world, before) == [f"/channels/{other.news.id}/messages"]  # only the other's
    a = await crier.bot.announcements.get(world.guild.id, one_off)
    assert (a.state, a.failure) == ("failed", AWAY)
    hourly_schedule = (await crier.bot.announcements.get(world.guild.id, hourly)).schedule_name
    async with crier.sched.reader() as db:
        recorded = await BotDb(db).recent_deliveries(a.id, 10)
    assert [(d.state, d.error) for d in recorded] == [("missed", AWAY)]
    # Its files went with it: a failed one-off never posts again.
    assert (await rows_of(crier, world.guild.id))["bot_attachments"] == 0

    # Forgotten by a durable job, run when its time comes even across a restart.
    await crier.close()
    crier = await make_crier(forget_after=2.5 * 86400)
    await advance_to(crier, clock, timedelta(days=2, hours=11))
    assert (await rows_of(crier, world.guild.id))["bot_announcements"] == 2
    await advance_to(crier, clock, timedelta(days=2, hours=12, seconds=1))
    assert await rows_of(crier, world.guild.id) == dict.fromkeys(
        (
            "bot_announcements",
            "bot_attachments",
            "bot_guild_settings",
            "bot_guilds_left",
            "bot_guild_limits",
            "bot_command_counts",
            "bot_deliveries",
            "bot_history",
        ),
        0,
    )
    async with crier.sched.reader() as db:
        cur = await db.execute("SELECT guild_ids FROM bot_dashboard_sessions")
        assert [r["guild_ids"] for r in await cur.fetchall()] == [f"[{other.guild.id}]"]
    names = [s.name for s in await crier.sched.schedules.list()]
    assert hourly_schedule is not None
    assert hourly_schedule not in names
    live = [
        j
        for j in await crier.sched.list_jobs(limit=1000)
        if j.state in (JobState.PENDING, JobState.IN_PROGRESS)
    ]
    assert live == []  # nothing of it is left to run (the other server's one posted)
    other_ann = await crier.bot.announcements.get(other.guild.id, 1)
    assert other_ann.guild_id == other.guild.id  # the other server is untouched
    forget = [j for j in await crier.sched.list_jobs(limit=1000) if j.fn == FORGET_FN]
    assert [j.state for j in forget] == [JobState.SUCCESS]


async def test_invited_back_in_time_it_carries_on_as_it_was(
    world: World, make_crier: MakeCrier, clock: FakeClock
) -> None:
    crier = await make_crier()  # FORGET_AFTER_DAYS: the default 30
    hourly = await schedule(world, "in 1h", "hourly", repeat="hourly")
    paused = await schedule(world, "in 1h", "paused one", repeat="hourly")
    await schedule(world, "in 5h", "later")
    cb = await run_command(world, "pause", id=paused)
    assert "paused" in (cb.content or "").lower(), cb.content
    await advance_to(crier, clock, timedelta(hours=1))
    assert [m.content for m in world.fake.bot_messages(world.news)] == ["hourly"]
    before = len(world.fake.requests)

    world.fake.remove_guild(world.guild)
    await wait_left(crier, world)
    for hour in (2, 3, 4):  # three of its times come while it is away
        await advance_to(crier, clock, timedelta(hours=hour, minutes=10))
    assert sends(world, before) == []
    # Its schedules are held meanwhile: not a job a time (a month of a repeat every minute).
    jobs = await crier.sched.list_jobs(limit=1000)
    away = [j for j in jobs if NOW.timestamp() + 3600 < j.next_ts <= NOW.timestamp() + 5 * 3600]
    assert [(j.fn, j.next_ts) for j in away] == [
        ("announcements:send", (NOW + 5 * HOUR).timestamp())
    ]
    world.fake.readd_guild(world.guild)
    await wait_left(crier, world, want=False)
    await crier.sched.wait_idle()
    assert sends(world, before) == []  # the missed ones are not posted late

    a = await crier.bot.announcements.get(world.guild.id, hourly)
    async with crier.sched.reader() as db:
        done = await BotDb(db).recent_deliveries(a.id, 10)
    hours = [(d.fire_ts - NOW.timestamp()) / 3600 for d in done]
    assert sorted(zip(hours, (d.state for d in done), strict=True)) == [
        (1.0, "sent"),
        (2.0, "missed"),
        (3.0, "missed"),
        (4.0, "missed"),
    ]
    assert {d.error for d in done if d.state == "missed"} == {AWAY}
    for hour in (5, 6):
        await advance_to(crier, clock, timedelta(hours=hour))
    posted = [m.content for m in world.fake.bot_messages(world.news)]
    assert sorted(posted) == ["hourly"] * 3 + ["later"]  # at 1h, 5h (both), 6h
    p = await crier.bot.announcements.get(world.guild.id, paused)
    assert p.state == "paused"  # it stays paused
    forget = [j for j in await crier.sched.list_jobs(limit=1000) if j.fn == FORGET_FN]
    assert [j.state for j in forget] == [JobState.CANCELED]
    await advance_to(crier, clock, 31 * DAY)
    assert (await rows_of(crier, world.guild.id))["bot_announcements"] == 3


async def test_invited_back_while_the_bot_was_offline_it_carries_on_at_the_next_start(
    world: World, make_crier: MakeCrier, clock: FakeClock
) -> None:
    crier = await make_crier()
    hourly = await schedule(world, "in 1h", "hourly", repeat="hourly")
    world.fake.remove_guild(world.guild)
    await wait_left(crier, world)
    await crier.close()
    world.fake.readd_guild(world.guild)  # no bot connected to hear GUILD_CREATE
    crier = await make_crier()  # READY lists the server again
    await wait_left(crier, world, want=False)
    forget = [j for j in await crier.sched.list_jobs(limit=1000) if j.fn == FORGET_FN]
    assert [j.state for j in forget] == [JobState.CANCELED]
    await advance_to(crier, clock, HOUR)
    assert [m.content for m in world.fake.bot_messages(world.news)] == ["hourly"]
    a = await crier.bot.announcements.get(world.guild.id, hourly)
    assert a.state == "scheduled"


async def test_a_removal_missed_while_offline_is_found_at_the_next_send(
    world: World, make_crier: MakeCrier, clock: FakeClock
) -> None:
    crier = await make_crier()
    await set_log_channel(world, world.general)
    one_off = await schedule(world, "in 1h", "once")
    hourly = await schedule(world, "in 1h", "hourly", repeat="hourly")
    world.fake.remove_guild(world.guild, tell=False)  # no GUILD_DELETE reaches the bot
    before = len(world.fake.requests)

    await advance_to(crier, clock, timedelta(hours=1))
    assert await left(crier, world)
    made = world.fake.requests[before:]
    assert [r.path for r in made if r.path == f"/guilds/{world.guild.id}"] != []
    # At most the sends that found it out; nothing to the log channel.
    assert set(sends(world, before)) <= {f"/channels/{world.news.id}/messages"}
    a = await crier.bot.announcements.get(world.guild.id, one_off)
    assert (a.state, a.failure) == ("failed", AWAY)
    h = await crier.bot.announcements.get(world.guild.id, hourly)
    assert h.state == "scheduled"  # not paused by a failure: it carries on if invited back
    before = len(world.fake.requests)
    await advance_to(crier, clock, timedelta(hours=2))
    assert sends(world, before) == []  # once known, nothing is attempted


async def test_files_of_a_canceled_announcement_are_deleted(
    world: World, make_crier: MakeCrier, clock: FakeClock
) -> None:
    crier = await make_crier()
    upload = world.fake.make_attachment("cat.png", PNG)
    kept = await schedule(world, "in 1h", "kept", image=upload)
    upload = world.fake.make_attachment("dog.png", PNG)
    canceled = await schedule(world, "in 1h", "canceled", image=upload)
    cb = await run_command(world, "cancel", id=canceled)
    assert "Canceled" in (cb.content or ""), cb.content
    k = await crier.bot.announcements.get(world.guild.id, kept)
    c = await crier.bot.announcements.get(world.guild.id, canceled)
    assert await crier.bot.announcements.image_names(k.id) == [("cat.png", len(PNG))]
    assert await crier.bot.announcements.image_names(c.id) == []


async def test_a_forget_job_of_an_earlier_leaving_forgets_nothing(
    world: World, make_crier: MakeCrier, clock: FakeClock
) -> None:
    """Left, back, left again: the first leaving's job (had it not been canceled, or run
    while the bot came back) deletes nothing; the second leaving's own job will."""
    crier = await make_crier()
    await schedule(world, "in 1h", "once")
    announcements = crier.bot.announcements
    assert await announcements.guild_left(world.guild.id)
    first = await announcements.left_guild(world.guild.id)
    assert first is not None
    assert not await announcements.guild_left(world.guild.id)
    assert await announcements.guild_returned(world.guild.id) is not None
    clock.advance(timedelta(minutes=1))
    assert await announcements.guild_left(world.guild.id)
    async with crier.sched.transaction() as ctx:
        kept = await forget_guild(ctx, ForgetArgs(world.guild.id, first.left_at))
    assert kept == {"kept": "the bot is in the server again"}
    assert (await rows_of(crier, world.guild.id))["bot_announcements"] == 1


def test_forget_after_days_takes_fractions() -> None:
    env = {"DISCORD_TOKEN": "x" * 30}
    assert load_settings(env, env_file=None).forget_after == 30 * 86400
    assert load_settings({**env, "FORGET_AFTER_DAYS": "0.25"}, env_file=None).forget_after == (
        6 * 3600
    )


async def guild_columns(crier: Crier) -> dict[str, str]:
    """Every ``bot_*`` table that says whose it is, as the database lists them (so a table
    a migration adds is never missed): table → its column naming a server (``guild_id``;
    ``guild_ids`` for dashboard sessions) or, failing that, an announcement
    (``announcement_id``)."""
    async with crier.sched.reader() as db:
        if crier.sched.store.dialect == "postgres":
            cur = await db.execute(
                "SELECT table_name AS t, column_name AS c FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND table_name LIKE 'bot\\_%'"
            )
            pairs = [(str(r["t"]), str(r["c"])) for r in await cur.fetchall()]
        else:
            cur = await db.execute(
                "SELECT m.name AS t, p.name AS c FROM sqlite_master m, pragma_table_info(m.name) p "
                "WHERE m.type = 'table' AND m.name LIKE 'bot\\_%' ESCAPE '\\'"
            )
            pairs = [(str(r["t"]), str(r["c"])) for r in await cur.fetchall()]
    found: dict[str, str] = {}
    for column in ("announcement_id", "guild_ids", "guild_id"):  # the last one found wins
        found |= {t: c for t, c in pairs if c == column}
    return found


async def rows_of_guild(crier: Crier, guild_id: int, ann_ids: list[int]) -> dict[str, int]:
    """How many rows of the server each of :func:`guild_columns`' tables holds."""
    counts: dict[str, int] = {}
    async with crier.sched.reader() as db:
        for table, column in sorted((await guild_columns(crier)).items()):
            if column == "guild_ids":  # a JSON list of ids
                cur = await db.execute(f"SELECT guild_ids FROM {table}")
                counts[table] = sum(
                    guild_id in json.loads(r["guild_ids"]) for r in await cur.fetchall()
                )
                continue
            ids = [guild_id] if column == "guild_id" else [*ann_ids, -1]
            marks = ", ".join("?" * len(ids))
            cur = await db.execute(
                f"SELECT count(*) AS n FROM {table} WHERE {column} IN ({marks})", ids
            )
            counts[table] = int((await cur.fetchone())["n"])
    return counts


async def import_one(world: World, row: dict[str, Any], key: str, *, confirm: bool) -> None:
    data = json.dumps({"version": 2, "announcements": [{**row, "key": key}]}).encode()
    done, _ = await import_file(world, data, confirm=confirm)
    assert ("Imported" if confirm else "Dry run") in done.content, done.content


async def test_forgetting_a_server_deletes_its_rows_of_every_bot_table(
    world: World, other: World, make_crier: MakeCrier, clock: FakeClock
) -> None:
    """Everything of the server is deleted, as the README says: every ``bot_*`` table that
    names a server or an announcement is listed from the database's own catalog, and each
    must hold a row of the server before (a table this test does not fill fails it: fill
    it here, and forget it in ``forget_guild_rows``) and none after. ``bot_member_settings``
    (a member's own /timezone, theirs in every server) names neither, and is kept."""
    world.guild.set_bot_permissions(
        P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.CREATE_EVENTS
    )
    crier = await make_crier(forget_after=86400, event_lead=86400)
    announcements = crier.bot.announcements
    await set_log_channel(world, world.general)  # its settings row
    upload = world.fake.make_attachment("cat.png", PNG)
    hourly = await schedule(world, "in 1h", "hourly", repeat="hourly", image=upload, event=True,
                            event_location="Town hall")  # fmt: skip
    # Its other place (each occurrence's post there is recorded too).
    await run_command(world, "edit", id=hourly, also_in=f"<#{world.general.id}>")
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "template save", {"name": "t", "from": hourly}
    )
    assert "Saved" in ((await h.response()).content or "")
    row = {"key": "k1", "text": "imported", "first": (NOW + DAY).isoformat(),
           "timezone": "UTC", "destination": {"name": "news"}}  # fmt: skip
    await import_one(world, row, "k1", confirm=True)  # the keys of an imported one
    await announcements.set_guild_limits(GuildLimits(world.guild.id, max_templates=50))
    await announcements.calendar_address(world.guild.id, world.admin.id)  # its calendar's
    await advance_to(crier, clock, timedelta(hours=1))  # a delivery, and its events
    # A dry run waiting (after the hour: HISTORY_DAYS's hourly job prunes expired ones).
    await import_one(world, row, "k2", confirm=False)
    ann = await announcements.get(world.guild.id, hourly)
    await run_command(world, "edit", id=hourly, reminder="15m")  # its reminder settings
    await run_command(world, "remindme", by=world.member, id=hourly)  # who asked
    await run_command(world, "edit", id=hourly, replace=True, delete_after="2d")  # its settings
    await run_command(world, "postnow", id=hourly)  # an extra post (and its row in bot_posts)
    await crier.sched.wait_idle()
    async with crier.sched.transaction() as ctx:  # rows only a running job holds, or a login
        cur = await ctx.db.execute("SELECT 1 FROM bot_template_places WHERE template_id = 1")
        if await cur.fetchone() is None:  # the template saved its announcement's places
            await ctx.db.execute(  # a template's other place
                "INSERT INTO bot_template_places (template_id, channel_id, guild_id, position) "
                "VALUES (1, ?, ?, 0)",
                (world.general.id, world.guild.id),
            )
        await ctx.db.execute(
            "INSERT INTO bot_post_claims (announcement_id, guild_id, job_id, attempt, until_ts) "
            "VALUES (?, ?, 1, 0, 0)",
            (ann.id, world.guild.id),
        )
        await ctx.db.execute(  # a reminder sent, and the counts of an older occurrence
            "INSERT INTO bot_reminders (announcement_id, fire_ts, user_id, guild_id, state, "
            "nonce, attempt_at) VALUES (?, 1, 2, ?, 'sent', 'r', 0)",
            (ann.id, world.guild.id),
        )
        await ctx.db.execute(
            "INSERT INTO bot_reminder_counts (announcement_id, fire_ts, guild_id, sent) "
            "VALUES (?, 0, ?, 1)",
            (ann.id, world.guild.id),
        )
        await ctx.db.execute(  # a thumbnail (/style; test_style posts them)
            "INSERT INTO bot_thumbnails (announcement_id, guild_id, filename, size, data, "
            "created_at) VALUES (?, ?, 'logo.png', 3, ?, 0)",
            (ann.id, world.guild.id, b"png"),
        )
        await ctx.db.execute(  # who it posts as, its channel's webhook, a post through it
            "INSERT INTO bot_post_as (announcement_id, guild_id, name) VALUES (?, ?, 'Hall')",
            (ann.id, world.guild.id),
        )
        await ctx.db.execute(
            "INSERT INTO bot_webhooks (channel_id, guild_id, webhook_id, token) "
            "VALUES (?, ?, 1, 'secret')",
            (world.news.id, world.guild.id),
        )
        await ctx.db.execute(
            "INSERT INTO bot_webhook_posts (announcement_id, fire_ts, channel_id, guild_id, "
            "after_id) VALUES (?, 1, ?, ?, 0)",
            (ann.id, world.news.id, world.guild.id),
        )
        await ctx.db.execute(
            "INSERT INTO bot_dashboard_sessions (id_hash, user_id, username, guild_ids, "
            "csrf_token, created_at, expires_at) VALUES ('h', 1, 'u', ?, 'c', 0, 9e9)",
            (json.dumps([world.guild.id, other.guild.id]),),
        )
    cb = await run_command(other, "schedule", when="in 3h", message="other", channel=other.news)
    assert "Scheduled" in (cb.content or "")
    ann_ids = [a.id for a in (await announcements.export_rows(world.guild.id)).announcements]
    other_before = await rows_of_guild(crier, other.guild.id, [])

    world.fake.remove_guild(world.guild)
    await wait_left(crier, world)
    before = await rows_of_guild(crier, world.guild.id, ann_ids)
    assert [t for t, n in before.items() if n == 0] == [], "fill these tables in this test"
    await advance_to(crier, clock, timedelta(days=1, hours=2))

    after = await rows_of_guild(crier, world.guild.id, ann_ids)
    assert {t: n for t, n in after.items() if n} == {}, "not forgotten"
    async with crier.sched.reader() as db:
        cur = await db.execute("SELECT key FROM bot_meta")
        assert [k for (k,) in await cur.fetchall() if str(world.guild.id) in str(k)] == []
    # Untouched, but for the counts of past minutes: the hourly retention job prunes
    # every server's (tests/bot/test_retention.py).
    other_after = await rows_of_guild(crier, other.guild.id, [])
    assert other_after.pop("bot_command_counts") == 0
    assert other_before.pop("bot_command_counts") == 1
    assert other_after == other_before


async def test_a_delivery_that_finds_its_announcement_forgotten_records_nothing(
    world: World, make_crier: MakeCrier, clock: FakeClock
) -> None:
    """A delivery job that read its announcement just before the forget job deleted it (both
    due at once) writes nothing after it: no delivery row of an announcement that is no
    more (found by the test above, when the forget job and a delivery came due together)."""
    crier = await make_crier()
    number = await schedule(world, "in 1h", "once")
    ann = await crier.bot.announcements.get(world.guild.id, number)
    announcements = crier.bot.announcements
    assert await announcements.guild_left(world.guild.id)
    left_at = await announcements.left_guild(world.guild.id)
    assert left_at is not None
    async with crier.sched.transaction() as ctx:
        await forget_guild(ctx, ForgetArgs(world.guild.id, left_at.left_at))
    fire_ts = ann.first_ts
    async with crier.sched.transaction() as ctx:
        attempt = await begin_attempt(
            ctx, ann.id, fire_ts, job_id=1, found_at=fire_ts + 1, now=fire_ts + 1,
            catch_up_window=60, nonce_window=60, guild_id=world.guild.id,
        )  # fmt: skip
    assert (attempt.action, attempt.reason) == (Decision.AWAY, FORGOTTEN)
    async with crier.sched.reader() as db:
        assert await BotDb(db).recent_deliveries(ann.id, 10) == []


async def test_a_delivery_recording_while_the_server_is_forgotten_leaves_nothing_behind(
    world: World, make_crier: MakeCrier, clock: FakeClock
) -> None:
    """The forget job and a delivery's bookkeeping at once (both due together): on
    PostgreSQL (several writers) the delivery's transaction has recorded its occurrence and
    not committed yet when the forget job starts. The forget job waits for it (the
    announcement's row is locked by both), then deletes what it recorded; without the lock
    it deleted before that commit and the row stayed for ever. (SQLite has one writer: the
    two never overlap.)"""
    crier = await make_crier()
    if crier.sched.store.dialect != "postgres":
        pytest.skip("one writer at a time on SQLite: nothing overlaps")
    number = await schedule(world, "in 1h", "once")
    ann = await crier.bot.announcements.get(world.guild.id, number)
    announcements = crier.bot.announcements
    assert await announcements.guild_left(world.guild.id)
    left_at = await announcements.left_guild(world.guild.id)
    assert left_at is not None
    recorded, release = asyncio.Event(), asyncio.Event()

    async def delivery() -> None:
        async with crier.sched.transaction() as ctx:
            attempt = await begin_attempt(
                ctx, ann.id, ann.first_ts, job_id=1, found_at=ann.first_ts,
                now=ann.first_ts, catch_up_window=60, nonce_window=60, guild_id=world.guild.id,
            )  # fmt: skip
            assert attempt.action == Decision.AWAY  # recorded missed: the bot is out of it
            recorded.set()
            await release.wait()

    async def forget() -> None:
        async with crier.sched.transaction() as ctx:
            await forget_guild(ctx, ForgetArgs(world.guild.id, left_at.left_at))

    holding = asyncio.create_task(delivery())
    await recorded.wait()
    forgetting = asyncio.create_task(forget())
    dsn = crier.settings.database_url
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        for _ in range(1000):  # until it waits for the lock, or (without it) is done
            if forgetting.done():
                break
            waiting = await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'"
            )
            if waiting:
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the forget job neither waited nor finished")
    finally:
        await conn.close()
    release.set()
    await holding
    await forgetting
    counts = await rows_of(crier, world.guild.id)
    async with crier.sched.reader() as db:
        cur = await db.execute(
            "SELECT count(*) AS n FROM bot_deliveries WHERE announcement_id = ?", (ann.id,)
        )
        orphans = int((await cur.fetchone())["n"])
    assert (counts["bot_announcements"], orphans) == (0, 0)
