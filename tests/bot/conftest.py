"""End-to-end fixtures: a fake Discord on 127.0.0.1 and the real bot (real discord.py client)
connected to it, on a real database."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import discord
import pytest

from bot.app import Crier
from bot.config import Settings
from scheduler.testing import FakeClock
from tests.fakediscord import FakeDiscord, Guild, InteractionCallback, Member
from tests.fakediscord import Permissions as P
from tests.fakediscord.state import Channel

if TYPE_CHECKING:
    from pathlib import Path

    from scheduler.schedules import ScheduleInfo

NOW = datetime(2030, 3, 1, 12, 0, tzinfo=UTC)


@dataclass
class World:
    fake: FakeDiscord
    guild: Guild
    general: Channel
    news: Channel
    admin: Member
    """Has Manage Server."""
    member: Member
    """An ordinary member."""
    extra: dict[str, Any] = field(default_factory=dict)


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as f:
        yield f


def add_world(fake: FakeDiscord, name: str, admin: str, member: str) -> World:
    """A guild the bot is in (view, send, mention everyone), with #general and #news, an
    admin (Manage Server) and an ordinary member."""
    guild = fake.add_guild(
        name=name, bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE
    )
    admins = guild.add_role("admins", P.MANAGE_GUILD)
    general = guild.add_channel("general")
    news = guild.add_channel("news")
    admin_member = guild.add_member(name=admin, roles=[admins])
    plain_member = guild.add_member(name=member)
    return World(fake, guild, general, news, admin_member, plain_member)


@pytest.fixture
def world(fake: FakeDiscord) -> World:
    return add_world(fake, "Crier Test", admin="alice", member="bob")


def settings_for(fake: FakeDiscord, db: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "token": fake.token,
        "database_url": f"sqlite:///{db}",
        "api_base": fake.api_base,
        "gateway_url": fake.gateway_url,
        # The pacer waits on the injected clock, which only the test moves: tests that are
        # not about spacing send without it (test_delivery's spacing test sets its own).
        "send_spacing": 0.0,
        "publish_spacing": 0.0,  # likewise (test_destinations' publish spacing test sets it)
        "reminder_spacing": 0.0,  # likewise (test_reminders' pacing test sets it)
        # One member fires commands faster than a person would, and the FakeClock keeps
        # them all in one minute: the tests of the limit set their own.
        "commands_per_minute": 1_000_000,
        # IDENTIFYs are spaced on the injected clock too (the fake's gateway allows any rate
        # unless a test gives it a window: test_shards does, and spaces them).
        "identify_interval": 0.0,
        # A calm start of the shard leases waits on the injected clock as well: an instance
        # takes its shards at once (test_shards' calm start test sets its own window).
        "shard_join_window": 0.0,
        # Failure reports gathered into digests, and bursts of edits, wait on the injected
        # clock too: a report is posted, and a posted message edited, at once (the tests of
        # the digest and of the burst set their own).
        "report_gather": 0.0,
        "edit_quiet": 0.0,
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
async def crier(world: World, tmp_path: Path, clock: FakeClock) -> AsyncIterator[Crier]:
    app = Crier(
        settings_for(world.fake, tmp_path / "crier.db"), clock=clock, guild_ready_timeout=0.05
    )
    await app.start()
    try:
        yield app
    finally:
        await app.close()
        restore_discord_endpoints()


def restore_discord_endpoints() -> None:
    discord.http.Route.BASE = "https://discord.com/api/v10"
    import yarl

    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL("wss://gateway.discord.gg/")


# --- command-surface helpers (used by test_commands / test_permissions / test_sync) ----------

SNAPSHOT_KEEPS = {
    # A command's write transaction takes its interaction's id as a once key whatever it
    # decides (so that another gateway session given the same interaction does nothing):
    # the mark that the interaction was handled, not something the command wrote.
    "scheduler_once": "once_key NOT LIKE 'interaction:%'",
    # Every command counts towards its member's commands per minute, whatever it decides
    # (the count is the limit's, not something the command wrote).
    "bot_command_counts": "1 = 0",
    # The running instance renews its shard leases and its membership on its own clock
    # (a renewal may fall between two snapshots): its liveness, not a command's write.
    "scheduler_leases": "1 = 0",
    "scheduler_lease_members": "1 = 0",
    # Its proof of life, refreshed on that clock too (seen_at).
    "scheduler_holders": "1 = 0",
}
"""The rows :func:`db_snapshot` compares, for the tables where some rows change without the
request having written anything (every row of every other table is compared). SQLite's own
``sqlite_*`` tables are left out: ``sqlite_sequence`` only follows the ids of the rows read
here, and the planner's statistics are SQLite's to rewrite."""


async def table_names(app: Crier) -> list[str]:
    """Every table of the bot's database, both components' and the migrations' own, as
    the database itself lists them (so a table added by a migration is never missed)."""
    if app.sched.store.dialect == "postgres":
        sql = (
            "SELECT table_name AS name FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        )
    else:
        sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    async with app.sched.reader() as db:
        cur = await db.execute(sql)
        return sorted(str(r["name"]) for r in await cur.fetchall())


async def db_snapshot(app: Crier) -> dict[str, list[tuple[Any, ...]]]:
    """Every row the bot and the scheduler keep, in every table of the database (but the
    rows :data:`SNAPSHOT_KEEPS` leaves out), to assert that nothing was written."""
    tables = await table_names(app)
    out: dict[str, list[tuple[Any, ...]]] = {}
    async with app.sched.reader() as db:
        for table in tables:
            where = f" WHERE {SNAPSHOT_KEEPS[table]}" if table in SNAPSHOT_KEEPS else ""
            cur = await db.execute(f"SELECT * FROM {table}{where}")
            out[table] = sorted((tuple(r) for r in await cur.fetchall()), key=repr)
    return out


async def run_command(
    world: World,
    name: str,
    *,
    by: Member | None = None,
    where: Channel | None = None,
    **options: Any,
) -> InteractionCallback:
    """``/name`` with ``options`` in ``world``'s guild, by ``by`` (default: the admin) in
    channel ``where`` (default: #general); returns the bot's accepted callback."""
    h = await world.fake.invoke_command(
        world.guild, where or world.general, by or world.admin, name, options
    )
    return await h.response(timeout=5)


async def schedule_id(world: World, **options: Any) -> int:
    """``/schedule`` with ``options`` (in #news unless a channel is given) by the admin;
    the number of the announcement it made (asserting it made one)."""
    options.setdefault("channel", world.news)
    cb = await run_command(world, "schedule", **options)
    found = re.search(r"Scheduled announcement \*\*#(\d+)\*\*", cb.content or "")
    assert found is not None, cb.content
    return int(found[1])


async def announcement_schedules(app: Crier) -> list[ScheduleInfo]:
    """The schedules the bot made for its announcements (at runtime): its own static ones
    (the hourly retention job's) left out."""
    return [s for s in await app.sched.schedules.list() if s.source == "runtime"]


@pytest.fixture
def other(fake: FakeDiscord, world: World) -> World:
    """A second guild the bot is in, with its own admin and channels."""
    return add_world(fake, "Other Guild", admin="carol", member="dave")


CrierFactory = Callable[..., Awaitable[Crier]]


@pytest.fixture
async def crier_factory(
    world: World, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[CrierFactory]:
    """Start a bot (``await crier_factory(**settings_overrides)``) on the test's database and
    FakeClock; start another after ``close()`` to model downtime and restarts. Every bot it
    started is closed at the end."""
    started: list[Crier] = []

    async def start(**overrides: Any) -> Crier:
        app = Crier(
            settings_for(world.fake, tmp_path / "crier.db", **overrides),
            clock=clock,
            guild_ready_timeout=0.05,
        )
        await app.start()
        started.append(app)
        return app

    try:
        yield start
    finally:
        for app in reversed(started):
            await app.close()
        restore_discord_endpoints()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A fresh database for the test, once on SQLite and once on PostgreSQL: a test that
    takes it (or :func:`crier_on_each_db`) runs on both."""
    from tests.web.test_dashboard_http import database_url

    async with database_url(request.param, tmp_path) as url:
        yield url


@pytest.fixture
async def crier_on_each_db(crier_factory: CrierFactory, db_url: str) -> Crier:
    """The bot on :func:`db_url`'s database (SQLite, then PostgreSQL). A test module runs
    every test that takes ``crier`` on both by overriding it::

        @pytest.fixture
        def crier(crier_on_each_db: Crier) -> Crier:
            return crier_on_each_db
    """
    return await crier_factory(database_url=db_url)
