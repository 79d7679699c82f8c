"""``python -m bot backup PATH``: an online copy of the SQLite database (SQLite's backup API,
then an integrity check of the copy), taken while the bot runs, never needing Discord; on
PostgreSQL the one ``pg_dump`` command to run. A backup taken mid-delivery, restored, posts
each announcement once (the send is replayed with its nonce inside the nonce window) or
reports it (past the window), never twice."""

from __future__ import annotations

import asyncio
import shlex
import shutil
import sqlite3
import sys
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from bot.app import Crier
from bot.app.backup import BackupError, backup_sqlite
from bot.db import BotDb
from bot.models import DeliveryState
from tests.bot.busy import schedule
from tests.bot.conftest import NOW, World, settings_for
from tests.bot.test_config import clean_env

if TYPE_CHECKING:
    from scheduler.testing import FakeClock


async def run_cli(cwd: Path, env: dict[str, str], *argv: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *argv, cwd=cwd, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def start(world: World, db: Path, clock: FakeClock) -> Crier:
    app = Crier(settings_for(world.fake, db), clock=clock, guild_ready_timeout=0.05)
    await app.start()
    return app


def restore(backup: Path, db: Path) -> None:
    """The README's restore drill: the bot stopped, its files replaced by the backup."""
    for extra in ("-wal", "-shm"):
        Path(f"{db}{extra}").unlink(missing_ok=True)
    shutil.copyfile(backup, db)


async def backup_mid_delivery(
    world: World, tmp_path: Path, clock: FakeClock, message: str
) -> tuple[Path, Path, int]:
    """A bot sends ``message``; Discord has created it but its answer is held back while
    ``python -m bot backup`` copies the running bot's database; then the send completes
    and the bot stops. Returns the database, the backup and the announcement's number."""
    db, backup = tmp_path / "crier.db", tmp_path / "backup.db"
    app = await start(world, db, clock)
    try:
        local = await schedule(world, "in 1m", message)
        hold = world.fake.hold_messages(world.news, stage="after")
        clock.set(NOW + timedelta(minutes=1))
        await world.fake.wait_until(lambda: hold.parked, timeout=10, what="the send")
        env = clean_env(DATABASE_URL=f"sqlite:///{db}")  # no token: Discord is not needed
        status, out, err = await run_cli(tmp_path, env, "backup", str(backup))
        assert status == 0, err
        assert out.startswith(f"backed up {db} to {backup}")
        assert "integrity check" in out
        hold.release()
        await app.sched.wait_idle()
        [sent] = world.fake.bot_messages(world.news)
        assert sent.content == message
    finally:
        await app.close()
    return db, backup, local


async def occurrences(app: Crier, world: World, local: int) -> list[tuple[str, int | None]]:
    ann = await app.bot.announcements.get(world.guild.id, local)
    async with app.sched.reader() as db:
        rows = await BotDb(db).recent_deliveries(ann.id, 10)
    return [(str(d.state), d.message_id) for d in rows]


async def test_a_backup_taken_mid_send_restored_posts_it_once_inside_the_nonce_window(
    world: World, tmp_path: Path, clock: FakeClock
) -> None:
    db, backup, local = await backup_mid_delivery(world, tmp_path, clock, "Once, restored")
    [first] = world.fake.bot_messages(world.news)
    restore(backup, db)
    app = await start(world, db, clock)
    try:
        # The backup holds the send as in flight: it waits for its lease, then is replayed.
        assert await occurrences(app, world, local) == [(DeliveryState.SENDING, None)]
        clock.set(NOW + timedelta(minutes=1, seconds=app.settings.lease + 1))
        await app.sched.sweep()  # the lease of the backup's run is found expired, now
        await app.sched.wait_idle()
        assert world.fake.bot_messages(world.news) == [first]
        assert world.fake.nonce_dedup_hits == 1
        assert await occurrences(app, world, local) == [(DeliveryState.SENT, first.id)]
    finally:
        await app.close()


async def test_a_backup_taken_mid_send_restored_after_the_nonce_window_reports_it(
    world: World, tmp_path: Path, clock: FakeClock
) -> None:
    db, backup, local = await backup_mid_delivery(world, tmp_path, clock, "Reported, restored")
    restore(backup, db)
    app = await start(world, db, clock)
    try:
        clock.set(NOW + timedelta(minutes=1, seconds=app.settings.nonce_window + 60))
        await app.sched.sweep()
        await app.sched.wait_idle()
        assert len(world.fake.bot_messages(world.news)) == 1, "posted twice"
        [(state, _)] = await occurrences(app, world, local)
        assert state == DeliveryState.FAILED
        ann = await app.bot.announcements.get(world.guild.id, local)
        assert ann.failure is not None
        assert "may" in ann.failure, ann.failure
    finally:
        await app.close()


def names_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def make_db(path: Path, rows: int = 2000) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    conn.execute("CREATE INDEX t_v ON t (v)")
    conn.executemany("INSERT INTO t (v) VALUES (?)", [(f"value {i}" * 5,) for i in range(rows)])
    conn.commit()
    conn.close()


def test_the_copy_holds_every_row_and_the_source_is_left_as_it_was(tmp_path: Path) -> None:
    make_db(tmp_path / "a.db")
    before = (tmp_path / "a.db").read_bytes()
    copied = backup_sqlite(tmp_path / "a.db", tmp_path / "b.db")
    assert copied.tables == 1
    assert copied.size == (tmp_path / "b.db").stat().st_size
    conn = sqlite3.connect(tmp_path / "b.db")
    assert conn.execute("SELECT count(*), max(id) FROM t").fetchone() == (2000, 2000)
    conn.close()
    assert (tmp_path / "a.db").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "b.db"]


def test_a_damaged_database_gives_no_backup_and_says_so(tmp_path: Path) -> None:
    """An index that no longer matches its table (the pages read fine, so the copy is made):
    the copy's integrity check finds it, and the copy is not kept."""
    make_db(tmp_path / "a.db")
    conn = sqlite3.connect(tmp_path / "a.db")
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = 'CREATE INDEX t_v ON t (v DESC)' WHERE name = 't_v'"
    )
    conn.commit()
    conn.close()
    with pytest.raises(
        BackupError, match=r"failed its integrity check \(row \d+ missing from index"
    ):
        backup_sqlite(tmp_path / "a.db", tmp_path / "b.db")
    assert names_in(tmp_path) == ["a.db"], "a bad copy was kept"


def test_an_existing_file_is_never_overwritten_and_a_missing_database_is_not_made(
    tmp_path: Path,
) -> None:
    make_db(tmp_path / "a.db")
    (tmp_path / "b.db").write_bytes(b"keep me")
    with pytest.raises(BackupError, match="already exists"):
        backup_sqlite(tmp_path / "a.db", tmp_path / "b.db")
    assert (tmp_path / "b.db").read_bytes() == b"keep me"
    with pytest.raises(BackupError, match="no database at"):
        backup_sqlite(tmp_path / "missing.db", tmp_path / "c.db")
    assert not (tmp_path / "missing.db").exists()
    assert not (tmp_path / "c.db").exists()


async def test_on_postgres_it_prints_the_pg_dump_command_with_the_real_url(
    tmp_path: Path,
) -> None:
    url = "postgresql://crier:s3cret@db.internal:5432/crier"
    env = clean_env(DATABASE_URL=url)
    status, out, err = await run_cli(tmp_path, env, "backup", str(tmp_path / "crier.dump"))
    assert status == 0, err
    assert out == f"pg_dump --format=custom --file={tmp_path / 'crier.dump'} {url}\n"
    assert shlex.split(out)[-1] == url
    assert "s3cret" not in err
    assert "pg_dump" in err
    assert names_in(tmp_path) == []
