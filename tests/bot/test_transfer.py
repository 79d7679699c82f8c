"""``python -m bot migrate --from sqlite:///PATH --to postgresql://…``: a stopped installation
moved whole (every table of both components, read back row for row), the bot then running on
PostgreSQL posts what was due, once; a non-empty target, a stale source, a value that would
change on the way are refused with nothing committed; the source is only read."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
import pytest

from bot.app import Crier, transfer
from bot.app.transfer import TransferError
from scheduler import MigrationSet, SqliteStore
from tests.bot.busy import (
    DUE_AFTER,
    DUE_TIMES,
    POSTED_BEFORE,
    every_row,
    make_busy,
    posts,
    step_to,
)
from tests.bot.conftest import World, settings_for
from tests.bot.test_config import clean_env
from tests.scheduler.stores import require_postgres

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from scheduler.testing import FakeClock

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def target() -> AsyncIterator[str]:
    from tests.scheduler.pg import fresh_database

    async with fresh_database(require_postgres()) as dsn:
        yield dsn


async def start(world: World, tmp_path: Path, clock: FakeClock, url: str) -> Crier:
    app = Crier(
        # One pinned shard: a running instance's shard leases are its own state, not the
        # installation's (they are released at close), so the tables compared stay still.
        settings_for(
            world.fake, tmp_path / "unused.db", database_url=url, shard_count=1, shard_ids=(0,)
        ),
        clock=clock,
        guild_ready_timeout=0.05,
    )
    await app.start()
    return app


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def target_tables(dsn: str) -> dict[str, int]:
    conn = await asyncpg.connect(dsn)
    try:
        names = await conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        )
        return {
            str(r[0]): int(await conn.fetchval(f'SELECT count(*) FROM "{r[0]}"')) for r in names
        }
    finally:
        await conn.close()


async def test_a_busy_installation_moves_whole_and_posts_what_was_due_once_on_postgres(
    world: World, tmp_path: Path, clock: FakeClock, target: str
) -> None:
    db = tmp_path / "crier.db"
    source = f"sqlite:///{db}"
    app = await start(world, tmp_path, clock, source)
    try:
        busy = await make_busy(app, world, clock)
        before = await every_row(app)
    finally:
        await app.close()
    digest = await asyncio.to_thread(file_digest, db)
    moved = await transfer.transfer(source, target)
    assert await asyncio.to_thread(file_digest, db) == digest, "the source was changed"
    assert {m.table for m in moved} == set(before)
    assert {m.table: m.rows for m in moved} == {t: len(rows) for t, rows in before.items()}

    app = await start(world, tmp_path, clock, target)
    try:
        # Every row of every table the source had, in the target the same.
        assert await every_row(app) == before
        await step_to(app, clock, DUE_TIMES)
        assert posts(world) == POSTED_BEFORE + DUE_AFTER
        # New rows take ids past the moved ones (the identity sequences were moved on).
        cb = await world.fake.invoke_command(
            world.guild, world.general, world.admin, "schedule",
            {"when": "in 1h", "message": "After the move", "channel": world.news},
        )  # fmt: skip
        assert f"#{len(busy.ids) + 1}**" in ((await cb.response(timeout=5)).content or "")
    finally:
        await app.close()


async def test_the_command_prints_every_table_and_the_source_is_untouched(
    world: World, tmp_path: Path, clock: FakeClock, target: str
) -> None:
    db = tmp_path / "crier.db"
    app = await start(world, tmp_path, clock, f"sqlite:///{db}")
    try:
        await make_busy(app, world, clock)
        before = await every_row(app)
    finally:
        await app.close()
    digest = await asyncio.to_thread(file_digest, db)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "migrate", "--from", f"sqlite:///{db}", "--to", target,
        cwd=tmp_path, env=clean_env(), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    text = out.decode()
    for table, rows in before.items():
        assert any(
            line.split()[:2] == [table, f"{len(rows):,}"] and line.endswith(" ok")
            for line in text.splitlines()
        ), (table, text)
    assert "in one transaction" in text
    assert "The source was only read" in text
    assert await asyncio.to_thread(file_digest, db) == digest
    # Run again into the now full target: refused, saying so, nothing changed.
    counts = await target_tables(target)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "migrate", "--from", f"sqlite:///{db}", "--to", target,
        cwd=tmp_path, env=clean_env(), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 1
    [line] = err.decode().splitlines()
    assert line.startswith("crier: ")
    assert "is not empty" in line
    assert "bot_announcements" in line
    assert await target_tables(target) == counts


def with_future_table(tmp_path: Path) -> MigrationSet:
    """Today's bot migrations and one more, adding a table (as a later release would)."""
    root = tmp_path / "future"
    shutil.copytree(ROOT / "migrations" / "bot", root)
    for dialect, kind in (("sqlite", "REAL"), ("postgres", "DOUBLE PRECISION")):
        (root / dialect / "0099_future.sql").write_text(
            f"CREATE TABLE bot_future (id BIGINT PRIMARY KEY, note TEXT, at {kind}, raw "
            f"{'BLOB' if dialect == 'sqlite' else 'BYTEA'});\n"
        )
    # Numbered without gaps: 0099 becomes the next one.
    files = sorted((root / "sqlite").glob("*.sql"))
    n = len(files)
    for dialect in ("sqlite", "postgres"):
        (root / dialect / "0099_future.sql").rename(root / dialect / f"{n:04d}_future.sql")
    return MigrationSet("crier", root)


async def test_a_table_a_later_migration_adds_is_moved_too(
    tmp_path: Path, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    future = with_future_table(tmp_path)
    monkeypatch.setattr(transfer, "bot_migrations", lambda: future)
    db = tmp_path / "future.db"
    store = SqliteStore(db)
    await store.open([future])
    try:
        async with store.transaction(1000.0) as tx:
            for i in range(1, 4):
                await tx.execute(
                    "INSERT INTO bot_future (id, note, at, raw) VALUES (?, ?, ?, ?)",
                    (i, f"note {i}", 1000.5 + i, bytes([i]) * i),
                )
    finally:
        await store.close()
    moved = await transfer.transfer(f"sqlite:///{db}", target)
    assert {m.table: m.rows for m in moved}["bot_future"] == 3
    conn = await asyncpg.connect(target)
    try:
        rows = await conn.fetch("SELECT id, note, at, raw FROM bot_future ORDER BY id")
    finally:
        await conn.close()
    assert [tuple(r) for r in rows] == [
        (i, f"note {i}", 1000.5 + i, bytes([i]) * i) for i in range(1, 4)
    ]


async def fresh_source(tmp_path: Path) -> Path:
    from bot.app import bot_migrations

    db = tmp_path / "src.db"
    store = SqliteStore(db)
    await store.open([bot_migrations()])
    await store.close()
    return db


async def test_a_value_that_would_change_is_refused_and_nothing_is_committed(
    tmp_path: Path, target: str
) -> None:
    import sqlite3

    db = await fresh_source(tmp_path)
    conn = sqlite3.connect(db)
    # SQLite keeps whatever it is given: text in a REAL column.
    conn.execute(
        "INSERT INTO bot_meta (key, value) VALUES ('ok', 'fine')"
    )  # a good row, copied first
    conn.execute("INSERT INTO bot_member_settings (user_id, timezone, updated_at) "
                 "VALUES (1, 'UTC', 'not a number')")  # fmt: skip
    conn.commit()
    conn.close()
    with pytest.raises(TransferError, match=r"bot_member_settings: a row holds .*not a number"):
        await transfer.transfer(f"sqlite:///{db}", target)
    assert await target_tables(target) == {}, "something was committed"


async def test_a_source_at_an_older_schema_is_refused_saying_what_to_do(
    tmp_path: Path, target: str
) -> None:
    import sqlite3

    db = await fresh_source(tmp_path)
    conn = sqlite3.connect(db)
    newest = "SELECT max(version) FROM scheduler_migrations WHERE component = 'crier'"
    [(latest,)] = conn.execute(newest).fetchall()
    conn.execute(
        "DELETE FROM scheduler_migrations WHERE component = 'crier' AND version = ?", (latest,)
    )
    conn.commit()
    conn.close()
    with pytest.raises(
        TransferError, match=rf"'crier' schema is at version {latest - 1}.*start this version"
    ):
        await transfer.transfer(f"sqlite:///{db}", target)
    assert await target_tables(target) == {}


async def test_bad_urls_are_refused(tmp_path: Path, target: str) -> None:
    with pytest.raises(TransferError, match="no database at"):
        await transfer.transfer(f"sqlite:///{tmp_path / 'missing.db'}", target)
    db = await fresh_source(tmp_path)
    with pytest.raises(TransferError, match="--to must be postgresql://"):
        await transfer.transfer(f"sqlite:///{db}", f"sqlite:///{tmp_path / 'x.db'}")
    with pytest.raises(TransferError, match="--from must be sqlite:///PATH"):
        await transfer.transfer(target, target)


async def test_a_table_that_reads_back_otherwise_fails_the_check_and_nothing_is_committed(
    world: World, tmp_path: Path, clock: FakeClock, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check at the end compares what the target holds, not what was sent: a row lost
    on the way (here deleted behind the copy's back) fails the move, all of it."""
    db = tmp_path / "crier.db"
    app = await start(world, tmp_path, clock, f"sqlite:///{db}")
    try:
        await make_busy(app, world, clock)
    finally:
        await app.close()
    copy_all = transfer._copy_all

    async def losing_one(*args: object) -> list[transfer.Moved]:
        moved = await copy_all(*args)  # type: ignore[arg-type]
        conn = args[1]
        await conn.execute(  # type: ignore[attr-defined]
            "DELETE FROM bot_history WHERE id = (SELECT max(id) FROM bot_history)"
        )
        return moved

    monkeypatch.setattr(transfer, "_copy_all", losing_one)
    with pytest.raises(TransferError, match=r"bot_history: the target reads back \d+ rows"):
        await transfer.transfer(f"sqlite:///{db}", target)
    assert await target_tables(target) == {}


async def test_a_row_postgresql_refuses_is_one_clear_error_and_nothing_is_committed(
    tmp_path: Path, target: str
) -> None:
    import sqlite3

    db = await fresh_source(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO bot_meta (key, value) VALUES (?, ?)", ("nul", "a\x00b"))  # a NUL
    conn.commit()
    conn.close()
    with pytest.raises(TransferError, match=r"refused the move: .*nothing was committed"):
        await transfer.transfer(f"sqlite:///{db}", target)
    assert await target_tables(target) == {}
