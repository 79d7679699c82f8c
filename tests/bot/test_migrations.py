"""The bot's schema migrations keep every row: a database written by an older release opens,
is migrated, and reads back the same announcements and deliveries, with the new states usable.

Each case writes a database at schema 0001 (only the first migration file, as the release
that had only it would), fills it through SQL as that release did, then opens it with the
current migrations.
"""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from bot.app import bot_migrations
from bot.db import BotDb
from bot.models import AnnouncementState, DeliveryState, HistoryAction
from scheduler import MigrationSet, SqliteStore, Store
from tests.scheduler.stores import require_postgres
from tests.scheduler.test_sql_parity import same_numbers_in_both_dialects

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

ROOT = Path(__file__).resolve().parents[2] / "migrations" / "bot"

OLD_ANNOUNCEMENT = (
    "INSERT INTO bot_announcements (id, guild_id, local_id, channel_id, author_id, content, "
    "mention, allowed_mentions, first_ts, timezone, repeat_kind, repeat_cron, repeat_every, "
    "repeat_words, job_id, schedule_name, state, failure, last_message_id, created_at, "
    "updated_at) VALUES (?, 7, ?, 70, 700, ?, NULL, '{}', 1000.0, 'UTC', ?, ?, NULL, ?, NULL, "
    "?, ?, NULL, ?, 900.0, 950.0)"
)
OLD_DELIVERY = (
    "INSERT INTO bot_deliveries (announcement_id, fire_ts, job_id, nonce, state, "
    "first_attempt_at, message_id, sent_at, late_by) VALUES (?, ?, 1, ?, ?, ?, ?, ?, 0.0)"
)


def first_release(tmp_path: Path) -> MigrationSet:
    """The bot's migrations as the first release shipped them: 0001 only."""
    for dialect in ("sqlite", "postgres"):
        (tmp_path / "bot" / dialect).mkdir(parents=True)
        shutil.copy(ROOT / dialect / "0001_announcements.sql", tmp_path / "bot" / dialect)
    return MigrationSet("crier", tmp_path / "bot")


async def fill_old(store: Store) -> None:
    async with store.transaction(1000.0) as tx:
        await tx.execute(OLD_ANNOUNCEMENT, (1, 1, "once", None, None, None, None, "sent", 55))
        await tx.execute(
            OLD_ANNOUNCEMENT,
            (
                2,
                2,
                "weekly",
                "cron",
                "0 9 * * 1",
                "every monday at 09:00",
                "crier:2",
                "paused",
                None,
            ),
        )
        await tx.execute(OLD_DELIVERY, (1, 1000.0, "n1", "sent", 1000.0, 55, 1001.0))
        await tx.execute(OLD_DELIVERY, (2, 2000.0, "n2", "failed", 2000.0, None, None))


async def check_migrated(store: Store) -> None:
    async with store.snapshot() as db:
        rows = BotDb(db)
        once = await rows.announcement(1)
        weekly = await rows.announcement(2)
        assert once is not None
        assert weekly is not None
        assert (once.content, once.state, once.last_message_id) == ("once", "sent", 55)
        assert (weekly.repeat_cron, weekly.schedule_name, weekly.state) == (
            "0 9 * * 1",
            "crier:2",
            AnnouncementState.PAUSED,
        )
        assert once.revision == weekly.revision == 1
        assert weekly.until_ts is None
        [sent] = await rows.recent_deliveries(1, 5)
        assert (sent.state, sent.message_id, sent.revision) == (DeliveryState.SENT, 55, 1)
        [failed] = await rows.recent_deliveries(2, 5)
        assert (failed.state, failed.revision) == (DeliveryState.FAILED, None)
        # Every announcement that existed gets its creation in the history, by its author.
        for ann_id in (1, 2):
            [created] = await rows.history(ann_id, 10)
            assert (created.action, created.actor_id, created.at) == (
                HistoryAction.CREATED,
                700,
                900.0,
            )
    # The new states and tables take writes.
    async with store.transaction(3000.0) as tx:
        rows = BotDb(tx)
        await rows.set_state(2, AnnouncementState.DONE, 3000.0)
        await rows.add_history(2, HistoryAction.ENDED, None, 3000.0, "its until was reached")
        await tx.execute(OLD_DELIVERY, (2, 3000.0, "n3", "skipped", 3000.0, None, None))
        await rows.set_member_timezone(700, "Europe/Paris", 3000.0)
    async with store.snapshot() as db:
        rows = BotDb(db)
        weekly = await rows.announcement(2)
        assert weekly is not None
        assert weekly.state is AnnouncementState.DONE
        assert [h.action for h in await rows.history(2, 10)] == ["created", "ended"]
        assert (await rows.recent_deliveries(2, 1))[0].state is DeliveryState.SKIPPED
        assert await rows.member_timezone(700) == "Europe/Paris"


@asynccontextmanager
async def opened(make: Callable[[], Store], migrations: MigrationSet) -> AsyncIterator[Store]:
    store = make()
    await store.open([migrations])
    try:
        yield store
    finally:
        await store.close()


async def upgrade(make: Callable[[], Store], tmp_path: Path) -> None:
    async with opened(make, first_release(tmp_path)) as old:
        await fill_old(old)
    async with opened(make, bot_migrations()) as new:
        await check_migrated(new)


def test_every_bot_migration_number_exists_in_both_dialects() -> None:
    numbered = same_numbers_in_both_dialects(bot_migrations())
    assert numbered[0][0] == 1


async def test_sqlite_database_of_the_first_release_is_migrated_with_its_rows(
    tmp_path: Path,
) -> None:
    await upgrade(lambda: SqliteStore(tmp_path / "crier.db"), tmp_path)


@pytest.mark.postgres
async def test_postgres_database_of_the_first_release_is_migrated_with_its_rows(
    tmp_path: Path,
) -> None:
    from scheduler.stores.postgres import PostgresStore
    from tests.scheduler.pg import fresh_database

    async with fresh_database(require_postgres(), pooled=False) as dsn:
        await upgrade(lambda: PostgresStore(dsn), tmp_path)


async def test_a_repeat_rule_reads_back_exactly_as_it_was_written(tmp_path: Path) -> None:
    """nth weekdays and a date step survive the row, so the rule can be rebuilt (by /edit)."""
    from datetime import UTC, date, datetime, timedelta

    from bot.models import Draft
    from bot.parsing import RepeatRule
    from scheduler.triggers import DateStep

    rules = [
        RepeatRule("cron", "0 18 * * 4", None, "every 2nd and 4th thursday", nth=(2, 4)),
        RepeatRule("cron", "0 18 * * 5", None, "last friday", nth=(-1,)),
        RepeatRule(
            "cron", "0 9 * * 1", None, "every other monday",
            step=DateStep(2, "week", date(2026, 12, 7)),
        ),
        RepeatRule("interval", None, timedelta(hours=2), "every 2 hours"),
    ]  # fmt: skip
    async with opened(lambda: SqliteStore(tmp_path / "rules.db"), bot_migrations()) as store:
        ids = []
        async with store.transaction(1000.0) as tx:
            for n, rule in enumerate(rules, start=1):
                draft = Draft(
                    guild_id=7, channel_id=70, author_id=700, content="x", mention=None,
                    allowed_mentions={}, first=datetime(2026, 12, 7, 9, tzinfo=UTC),
                    timezone="Europe/Paris", repeat=rule,
                )  # fmt: skip
                ids.append(await BotDb(tx).insert_announcement(draft, n, 1000.0))
        async with store.snapshot() as db:
            for ann_id, rule in zip(ids, rules, strict=True):
                ann = await BotDb(db).announcement(ann_id)
                assert ann is not None
                assert ann.rule == rule


LANGUAGE_ROWS = [
    "INSERT INTO bot_guild_settings (guild_id, timezone, updated_at) "
    "VALUES (11, 'Europe/Paris', 900.0)",
    "INSERT INTO bot_meta (key, value) VALUES ('guild_language:11', 'fr')",
    "INSERT INTO bot_meta (key, value) VALUES ('guild_language:22', 'de')",
    "INSERT INTO bot_meta (key, value) VALUES ('commands_hash', 'abc')",
]


@pytest.mark.parametrize(
    "dialect", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_a_server_language_kept_by_release_9_moves_into_its_settings_row(
    tmp_path: Path, dialect: str
) -> None:
    """Release 9 kept ``/settings language`` in ``bot_meta``; migration 0010 moves it into
    the server's settings row (made for a server that had none), keeping the row's other
    settings, and leaves no ``guild_language:`` key behind (and the bot's other keys)."""
    from tests.bot.schemas import build_postgres, build_sqlite

    if dialect == "sqlite":
        path = tmp_path / "release-9.db"
        build_sqlite(path, 9, 10)
        conn = sqlite3.connect(path, isolation_level=None)
        for sql in LANGUAGE_ROWS:
            conn.execute(sql)
        conn.close()
        await check_language_moved(lambda: SqliteStore(path))
        return
    import asyncpg

    from scheduler.stores.postgres import PostgresStore
    from tests.scheduler.pg import fresh_database

    async with fresh_database(require_postgres(), pooled=False) as dsn:
        pg = await asyncpg.connect(dsn)
        try:
            await build_postgres(pg, 9, 10)
            for sql in LANGUAGE_ROWS:
                await pg.execute(sql)
        finally:
            await pg.close()
        await check_language_moved(lambda: PostgresStore(dsn))


async def check_language_moved(make: Callable[[], Store]) -> None:
    async with opened(make, bot_migrations()) as store, store.snapshot() as db:
        rows = BotDb(db)
        paris = await rows.guild_settings(11)
        assert paris is not None
        assert (paris.timezone, paris.language) == ("Europe/Paris", "fr")
        berlin = await rows.guild_settings(22)
        assert berlin is not None
        assert (berlin.timezone, berlin.language) == (None, "de")
        assert await rows.meta_keys("guild_language:") == []
        assert await rows.meta_value("commands_hash") == "abc"


PENDING_ROWS = [
    "INSERT INTO bot_templates (guild_id, name, name_key, content, image_name, image_data, "
    "author_id, created_at) VALUES (11, 'Poster', 'poster', 'x', 'a.png', {blob}, 700, 900.0)",
    "INSERT INTO bot_templates (guild_id, name, name_key, content, author_id, created_at) "
    "VALUES (11, 'Plain', 'plain', 'y', 700, 900.0)",
    "INSERT INTO bot_meta (key, value) VALUES ('import:11:abc123', '{{\"user\": 700}}')",
    "INSERT INTO bot_meta (key, value) VALUES ('commands_hash', 'abc')",
]


@pytest.mark.parametrize(
    "dialect", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_release_11_dry_runs_are_dropped_and_template_files_measured(
    tmp_path: Path, dialect: str
) -> None:
    """Migration 0012: a dry run kept in ``bot_meta`` (``import:<guild>:<token>``) is
    dropped (they wait 15 minutes), the bot's other keys kept; each template's file gets
    its size, so the server's files count it without reading it."""
    from tests.bot.schemas import build_postgres, build_sqlite

    if dialect == "sqlite":
        path = tmp_path / "release-11.db"
        build_sqlite(path, 11, 10)
        conn = sqlite3.connect(path, isolation_level=None)
        for sql in PENDING_ROWS:
            conn.execute(sql.format(blob="x'" + "ab" * 1234 + "'"))
        conn.close()
        await check_pending_dropped(lambda: SqliteStore(path))
        return
    import asyncpg

    from scheduler.stores.postgres import PostgresStore
    from tests.scheduler.pg import fresh_database

    async with fresh_database(require_postgres(), pooled=False) as dsn:
        pg = await asyncpg.connect(dsn)
        try:
            await build_postgres(pg, 11, 10)
            for sql in PENDING_ROWS:
                await pg.execute(sql.format(blob="'\\x" + "ab" * 1234 + "'::bytea"))
        finally:
            await pg.close()
        await check_pending_dropped(lambda: PostgresStore(dsn))


async def check_pending_dropped(make: Callable[[], Store]) -> None:
    async with opened(make, bot_migrations()) as store, store.snapshot() as db:
        rows = BotDb(db)
        assert await rows.meta_keys("import:") == []
        assert await rows.meta_value("commands_hash") == "abc"
        assert await rows.template_file_bytes(11) == 1234
        assert await rows.template_names(11) == ["Plain", "Poster"]
        [poster] = [t for t in await rows.templates(11) if t.image is not None]
        assert poster.image is not None
        assert poster.image.data == b"\xab" * 1234
