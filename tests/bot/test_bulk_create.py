"""``Announcements.create_many``: the same stored state as ``create`` one by one, on every
store, and all or nothing when one draft is refused."""

from __future__ import annotations

from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.announcements import SEND_FN, Announcements, Draft, NotPossible, SendArgs, TooMuchStored
from bot.app import bot_migrations
from bot.models import Content, Destination, Image
from bot.parsing import RepeatRule
from scheduler import Registry, Scheduler, SqliteStore, Store
from scheduler.testing import FakeClock
from tests.scheduler.stores import STORE_KINDS, require_postgres

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

NOW = datetime(2030, 3, 1, 12, 0, tzinfo=UTC)
TABLES = {
    "bot_announcements": "id",
    "bot_history": "id",
    "bot_guild_settings": "guild_id",
    "bot_attachments": "id",
    "scheduler_jobs": "id",
    "scheduler_job_args": "job_id",
    "scheduler_schedules": "name",
}


@pytest.fixture(params=STORE_KINDS)
async def two_stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """Two fresh, empty databases of one store kind (a function giving a store on each)."""
    if request.param == "sqlite":
        yield lambda i: SqliteStore(tmp_path / f"db{i}.sqlite")
        return
    dsn = require_postgres()
    from scheduler.stores.postgres import PostgresStore
    from tests.scheduler.pg import fresh_database

    async with fresh_database(dsn) as first, fresh_database(dsn) as second:
        dsns = (first, second)
        yield lambda i: PostgresStore(dsns[i], listen=False)


@asynccontextmanager
async def service(store: Store, **limits: Any) -> AsyncIterator[Announcements]:
    registry = Registry()

    @registry.action(SEND_FN, args=SendArgs, idempotent=True)
    async def never(ctx: Any, args: Any) -> None:
        raise AssertionError("nothing is due in these tests")

    sched = Scheduler(store, registry, clock=FakeClock(NOW), migrations=[bot_migrations()])
    async with sched:
        yield Announcements(sched, 3600.0, send_spacing=1.5, **limits)


def draft(guild: int, i: int, **changes: Any) -> Draft:
    values: dict[str, Any] = {
        "guild_id": guild,
        "channel_id": 1000 + guild * 10 + i % 3,
        "author_id": 7,
        "content": f"announcement {i} of guild {guild}",
        "mention": "everyone" if i % 4 == 0 else None,
        "allowed_mentions": {"everyone": i % 4 == 0, "roles": [], "users": True},
        "first": NOW + timedelta(hours=1 + i),
        "timezone": "Europe/London",
        "repeat": None,
    }
    values.update(changes)
    return Draft(**values)


DAILY = RepeatRule("cron", "0 9 * * *", None, "every day at 09:00 (Europe/London)")
HOURLY = RepeatRule("interval", None, timedelta(hours=2), "every 2 hours")


def mixed_drafts() -> list[Draft]:
    """One-offs and recurring ones (cron in a zone, interval, with an end), rich ones and
    one with a file, over three guilds in an interleaved order."""
    out: list[Draft] = []
    for i in range(30):
        guild = (1, 2, 3)[i % 3]
        changes: dict[str, Any] = {}
        if i % 5 == 1:
            changes["repeat"] = DAILY
        elif i % 5 == 3:
            changes["repeat"] = HOURLY
            changes["until"] = NOW + timedelta(days=30)
        if i % 7 == 2:
            changes["rich"] = Content(title="News", silent=True, destination=Destination.TEXT)
        if i == 8:
            changes["images"] = (Image("a.png", "image/png", b"\x89PNG" + bytes(60)),)
        out.append(draft(guild, i, **changes))
    return out


async def dump(a: Announcements) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    async with a.sched.reader() as db:
        for table, key in TABLES.items():
            cur = await db.execute(f"SELECT * FROM {table} ORDER BY {key}")
            out[table] = [dict(r) for r in await cur.fetchall()]
    return out


async def test_create_many_stores_what_create_one_by_one_stores(two_stores: Any) -> None:
    drafts = mixed_drafts()
    earlier = [draft(2, 100), draft(2, 101, repeat=DAILY)]  # guild 2 already numbers 1 and 2
    async with service(two_stores(0)) as one:
        for d in earlier + drafts:
            await one.create(d)
        singly = await dump(one)
        local_ids = numbers(drafts, {2: 3})
        expected = [await one.get(d.guild_id, n) for d, n in zip(drafts, local_ids, strict=True)]
    async with service(two_stores(1)) as many:
        for d in earlier:
            await many.create(d)
        made = await many.create_many(drafts)
        bulk = await dump(many)

    assert bulk == singly
    assert len(singly["bot_announcements"]) == len(earlier) + len(drafts)
    assert len(singly["scheduler_schedules"]) == 1 + 12
    assert [a for a, _ in made] == expected
    assert [a.local_id for a, _ in made if a.guild_id == 2][:2] == [3, 4]
    for (_, first), d in zip(made, drafts, strict=True):
        if d.repeat is None:
            assert first == d.first
        else:  # the schedule's first time at or after the draft's first
            assert first >= d.first
    assert made[1][1] == datetime(2030, 3, 2, 9, 0, tzinfo=UTC)  # 09:00 London is 09:00 UTC


def numbers(drafts: list[Draft], start: dict[int, int]) -> list[int]:
    """The per-guild numbers drafts written in order get."""
    nxt = dict(start)
    out = []
    for d in drafts:
        out.append(nxt.setdefault(d.guild_id, 1))
        nxt[d.guild_id] += 1
    return out


async def test_create_many_writes_nothing_when_one_draft_is_refused(tmp_path: Path) -> None:
    ends_first = draft(1, 2, repeat=DAILY, until=NOW + timedelta(minutes=5))
    async with service(SqliteStore(tmp_path / "db.sqlite")) as a:
        before = await dump(a)
        with pytest.raises(NotPossible):
            await a.create_many([draft(1, 0), draft(1, 1, repeat=HOURLY), ends_first])
        assert await dump(a) == before


async def test_create_many_keeps_the_servers_file_limit(tmp_path: Path) -> None:
    big = (Image("big.bin", None, bytes(600)),)
    async with service(SqliteStore(tmp_path / "db.sqlite"), guild_files_max_bytes=1000) as a:
        before = await dump(a)
        with pytest.raises(TooMuchStored):
            await a.create_many([draft(1, 0, images=big), draft(1, 1, images=big)])
        assert await dump(a) == before
        made = await a.create_many([draft(1, 0, images=big), draft(2, 1, images=big)])
        assert [(x.guild_id, x.local_id) for x, _ in made] == [(1, 1), (2, 1)]
