"""Upgrades that lose nothing, from every schema that ever landed on main (issue 22, item 1).

A busy installation is made through the bot (pending one-offs, one posted, an hourly one
posted once, a paused one, a canceled one, one with a file; history, deliveries, jobs,
schedules, runs), stopped, and read: its rows, its ``/list``, each ``/info`` and the
dashboard's list and pages. For every earlier release (:data:`tests.bot.schemas.RELEASES`) a
database is made at that release's schema and filled with those rows shaped for it; today's
bot opens it (upgrading it) and must read back the same, and post what was due, on time,
once. On SQLite and PostgreSQL.

A database copied (with the online backup) while a send was in flight, at every earlier
schema: the send is replayed with its nonce after the upgrade, one post.

Then a SIGKILL in the middle of a migration: a real ``python -m bot`` held (by a test-only
hook, :data:`scheduler.stores._base.HOLD_MIGRATION_ENV`) inside the transaction of the bot's
migration 0006, after its statements and before its commit, is killed; the database is
exactly at 0005 (the index 0006 drops is still there as it was), and the next start applies
0006 and loses nothing.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp
import asyncpg
import pytest

from bot.app import Crier
from bot.app.backup import backup_sqlite
from scheduler.stores._base import HOLD_MIGRATION_ENV
from scheduler.testing import FakeClock
from tests.bot.busy import (
    DUE_AFTER,
    DUE_TIMES,
    POSTED_BEFORE,
    STOPPED_AT,
    Busy,
    make_busy,
    posts,
    step_to,
)
from tests.bot.conftest import NOW, World, restore_discord_endpoints, run_command, settings_for
from tests.bot.schemas import (
    RELEASES,
    SKIPS_FROM_BOT,
    SKIPS_IN_RULE_FROM_BOT,
    Rows,
    build_postgres,
    build_sqlite,
    project_postgres,
    project_sqlite,
    read_rows,
    shaped,
    today,
)
from tests.fakediscord import FakeDiscord
from tests.scheduler.stores import require_postgres
from tests.support.processes import Process, procs, until
from tests.web.conftest import Site
from tests.web.test_dashboard_list import log_in

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

ROOT = Path(__file__).resolve().parents[2]
DIALECTS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
RELEASES_TIMEOUT = 900
"""The tests that go through every release start a bot per release (14 of them, with a
fresh database each): past the suite's 120 s on 2 loaded cores, so they get more."""


async def start(world: World, tmp_path: Path, clock: FakeClock, url: str) -> Crier:
    """The bot with its dashboard served on 127.0.0.1."""
    fake = world.fake
    settings = settings_for(
        fake,
        tmp_path / "unused.db",
        database_url=url,
        client_secret=fake.oauth2.client_secret,
        oauth_base=fake.oauth2.authorize_url.removesuffix("/oauth2/authorize"),
        http_address=("127.0.0.1", 0),
        shard_count=1,  # pinned: no shard leases, which are a running instance's own state
        shard_ids=(0,),
    )
    app = Crier(settings, clock=clock, guild_ready_timeout=0.05)
    await app.start()
    assert app.web is not None
    fake.oauth2.add_redirect_uri(f"{app.web.url}/auth/callback")
    return app


_CSRF = re.compile(r'(name="csrf"[^>]*value=")[^"]*(")|(value=")[^"]*("[^>]*name="csrf")')


def _page_text(text: str) -> str:
    """A dashboard page without what differs by session (its CSRF token)."""
    return _CSRF.sub(r"\1\3[csrf]\2\4", text)


@dataclass
class Reads:
    listing: str
    info: dict[str, str]
    dashboard: dict[str, str]

    def differences(self, other: Reads) -> list[str]:
        out = []
        if self.listing != other.listing:
            out.append(f"/list:\n{self.listing}\n!=\n{other.listing}")
        for k in self.info:
            if self.info[k] != other.info.get(k):
                out.append(f"/info {k}:\n{self.info[k]}\n!=\n{other.info.get(k)}")
        for k in self.dashboard:
            if self.dashboard[k] != other.dashboard.get(k):
                out.append(f"dashboard {k} differs")
        return out


async def reads(app: Crier, world: World, clock: FakeClock, busy: Busy) -> Reads:
    listing = json.dumps((await run_command(world, "list")).data, sort_keys=True)
    info = {}
    for name, local in busy.ids.items():
        cb = await run_command(world, "info", id=local)
        info[name] = json.dumps(cb.data, sort_keys=True)
    assert app.web is not None
    assert app.dashboard is not None
    site = Site(app, app.dashboard, app.web.url, world, clock)
    pages = {"list": f"/g/{world.guild.id}"} | {
        name: f"/g/{world.guild.id}/a/{local}" for name, local in busy.ids.items()
    }
    dashboard = {}
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        await log_in(site, http, world.admin)
        for name, path in pages.items():
            async with http.get(site.url + path) as resp:
                assert resp.status == 200, (path, await resp.text())
                dashboard[name] = _page_text(await resp.text())
    return Reads(listing, info, dashboard)


@dataclass
class Made:
    busy: Busy
    rows: Rows
    reads: Reads


async def made(world: World, tmp_path: Path) -> Made:
    """The busy installation on SQLite at today's schema, stopped, and what it reads back."""
    db = tmp_path / "busy.db"
    clock = FakeClock(NOW)
    app = await start(world, tmp_path, clock, f"sqlite:///{db}")
    try:
        busy = await make_busy(app, world, clock)
        seen = await reads(app, world, clock, busy)
    finally:
        await app.close()
    return Made(busy, read_rows(db), seen)


def expected_differences(bot: int, name: str) -> bool:
    """Whether an earlier release could not hold what today's dashboard page of ``name``
    shows: before the bot's 0002 there was no history (the upgrade writes each
    announcement's creation, nothing after it), before its 0004 no file. (``/info`` is
    compared for every one, less those lines: :func:`as_release_kept`.)"""
    return (
        bot < SKIPS_FROM_BOT
        or (bot < 4 and name == "With a file")
        or (bot < SKIPS_IN_RULE_FROM_BOT and name == "Skipped once")
    )


def due_after(bot: int) -> list[str]:
    """What posts after the stop: before the bot's 0002 nothing could be skipped, so the
    skipped occurrence (``NOW + 40 min``) is still to come and posts too."""
    if bot < SKIPS_FROM_BOT:
        return ["Skipped once", *DUE_AFTER]
    return DUE_AFTER


def as_release_kept(info: str, bot: int) -> str:
    """Today's ``/info`` (its JSON) as a database of an earlier release can show it after
    the upgrade: before the bot's 0002 no history was kept (the upgrade writes each
    announcement's creation, so only that line is left), before its 0004 no file."""
    data = json.loads(info)
    lines = data["content"].split("\n")
    if bot < 2:
        start = lines.index("**History:**")
        end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("• "))
        kept = [ln for ln in lines[start + 1 : end] if " created by " in ln]
        lines = lines[: start + 1] + kept + lines[end:]
    if bot < 4:
        lines = [ln for ln in lines if not ln.startswith("**Files:**")]
    data["content"] = "\n".join(lines)
    return json.dumps(data, sort_keys=True)


async def upgraded_from(
    world: World, tmp_path: Path, base: Made, url: str, bot: int
) -> tuple[Reads, list[str]]:
    """Today's bot on the earlier release's database at ``url``: what it reads back, and
    what it posts from the stop until every due time passed."""
    clock = FakeClock(STOPPED_AT)
    app = await start(world, tmp_path, clock, url)
    try:
        seen = await reads(app, world, clock, base.busy)
        before = len(world.fake.requests)
        await step_to(app, clock, DUE_TIMES)
        return seen, sends_to_news(world, before)
    finally:
        await app.close()


def sends_to_news(world: World, since: int) -> list[str]:
    """The text of every send to #news the fake answered since request number ``since``
    (requests, not messages: every release's bot posts into the same fake, which answers a
    nonce it saw before with the message it made then)."""
    path = f"/channels/{world.news.id}/messages"
    return [
        r.body["content"]
        for r in world.fake.requests[since:]
        if r.method == "POST" and r.path == path and r.status == 200
    ]


def without_entry(listing: str, text: str) -> str:
    """``/list``'s answer (its JSON) without the entry of the announcement showing ``text``."""
    data = json.loads(listing)
    entries: list[list[str]] = []
    for line in data["content"].split("\n"):
        if line.startswith("  ") and entries:
            entries[-1].append(line)
        else:
            entries.append([line])
    kept = [e for e in entries if e[-1] != f"  `{text}`"]
    data["content"] = "\n".join(line for e in kept for line in e)
    return json.dumps(data, sort_keys=True)


def check_upgrade(base: Made, seen: Reads, new_posts: list[str], bot: int, sched: int) -> None:
    where = f"from schema bot {bot} / scheduler {sched}"
    if bot < SKIPS_FROM_BOT:  # never skipped there: its next time differs (see due_after)
        assert without_entry(seen.listing, "Skipped once") == without_entry(
            base.reads.listing, "Skipped once"
        ), where
    else:
        assert seen.listing == base.reads.listing, where
    for name in base.busy.ids:
        if bot < SKIPS_IN_RULE_FROM_BOT and name == "Skipped once":
            # Never skipped before 0002 (see due_after); until 0015 skipped by a delivery
            # row, moved into its rule at the start: its history says the skip otherwise.
            continue
        expected = as_release_kept(base.reads.info[name], bot)
        assert seen.info[name] == expected, (where, name)
        if not expected_differences(bot, name):
            assert seen.dashboard[name] == base.reads.dashboard[name], (where, name)
    if bot < SKIPS_FROM_BOT:
        assert without_row(seen.dashboard["list"], "Skipped once") == without_row(
            base.reads.dashboard["list"], "Skipped once"
        ), where
    else:
        assert seen.dashboard["list"] == base.reads.dashboard["list"], where
    assert new_posts == due_after(bot), where


_ROW = re.compile(r"\s*<tr class=\"state-[^\"]*\">.*?</tr>", re.DOTALL)


def without_row(page: str, text: str) -> str:
    """The dashboard's list without the row of the announcement showing ``text``."""
    return _ROW.sub(lambda m: "" if text in m[0] else m[0], page)


@contextlib.asynccontextmanager
async def releases_database(dialect: str) -> AsyncIterator[str | None]:
    """For PostgreSQL, a fresh database (dropped afterwards) that :func:`at_release` empties
    and rebuilds at each release in turn: creating and dropping one per release (a second
    or two each on a loaded server) would cost more than the release's own upgrade."""
    if dialect == "sqlite":
        yield None
        return
    from tests.scheduler.pg import fresh_database

    async with fresh_database(require_postgres(), pooled=False) as dsn:
        yield dsn


@contextlib.asynccontextmanager
async def at_release(
    dialect: str, db: Path, bot: int, sched: int, rows: Rows, pg: str | None = None
) -> AsyncIterator[str]:
    """The URL of a database at release ``(bot, sched)`` holding ``rows``: a SQLite file at
    ``db``, or on PostgreSQL the database ``pg`` (from :func:`releases_database`) emptied
    first (its schema dropped with everything in it: no object of crier's lives outside
    it), else a fresh one dropped afterwards."""
    if dialect == "sqlite":
        build_sqlite(db, bot, sched)
        project_sqlite(db, rows)
        yield f"sqlite:///{db}"
        return
    from tests.scheduler.pg import fresh_database

    async with contextlib.AsyncExitStack() as stack:
        if pg is None:
            dsn = await stack.enter_async_context(fresh_database(require_postgres(), pooled=False))
        else:
            dsn = pg
        conn = await asyncpg.connect(dsn)
        try:
            if pg is not None:
                # As dropping the database would: a session the previous bot left closing.
                await conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
            await build_postgres(conn, bot, sched)
            await project_postgres(conn, rows)
        finally:
            await conn.close()
        yield dsn


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.timeout(RELEASES_TIMEOUT)
async def test_every_earlier_schema_full_of_work_upgrades_losing_nothing(
    world: World, tmp_path: Path, dialect: str
) -> None:
    base = await made(world, tmp_path)
    assert posts(world) == POSTED_BEFORE
    # The newest release is older than today's code in neither component, and not today's
    # itself (a change that adds migrations appends the release it started from).
    last = RELEASES[-1][:2]
    assert last != today(), "today's schema is not an earlier release"
    assert all(r <= t for r, t in zip(last, today(), strict=True)), "a release is missing"
    tried = []
    async with releases_database(dialect) as pg:
        for bot, sched, _commit in RELEASES:
            if bot == 0:
                continue  # the scheduler alone: see the test below
            rows = shaped(base.rows, bot, sched)
            async with at_release(
                dialect, tmp_path / f"release-{bot}-{sched}.db", bot, sched, rows, pg
            ) as url:
                seen, new_posts = await upgraded_from(world, tmp_path, base, url, bot)
            check_upgrade(base, seen, new_posts, bot, sched)
            tried.append((bot, sched))
    assert len(tried) == len([r for r in RELEASES if r[0]])


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    """This module's fake Discord remembers a nonce for an hour (its real loop time): every
    release's bot replays the same send into it, one after another, over minutes. Its
    per-channel message limit is lifted: every release's bot posts into the same #news within
    seconds of the one before, and Discord's 5 per 5 s (covered in tests/bot/test_delivery.py)
    would only make each wait out a 429 in real time."""
    async with FakeDiscord(nonce_window=3600.0, message_limit=10_000, message_per=1.0) as f:
        yield f


async def mid_send(world: World, tmp_path: Path) -> tuple[Rows, int, float]:
    """A send Discord has made the message for, its answer still held back, copied with the
    online backup while it waits: the rows of a database stopped mid-send, the message's id
    and the time it was sent at."""
    db, copy = tmp_path / "mid.db", tmp_path / "mid-copy.db"
    clock = FakeClock(NOW)
    app = await start(world, tmp_path, clock, f"sqlite:///{db}")
    try:
        await run_command(world, "schedule", when="in 1m", message="Mid-send", channel=world.news)
        hold = world.fake.hold_messages(world.news, stage="after")
        clock.set(NOW + timedelta(minutes=1))
        await world.fake.wait_until(lambda: hold.parked, timeout=10, what="the send")
        backup_sqlite(db, copy)
        hold.release()
        await app.sched.wait_idle()
    finally:
        await app.close()
    [message] = world.fake.bot_messages(world.news)
    return read_rows(copy), message.id, (NOW + timedelta(minutes=1)).timestamp()


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.timeout(RELEASES_TIMEOUT)
async def test_a_database_stopped_mid_send_at_every_earlier_schema_posts_it_once(
    world: World, tmp_path: Path, dialect: str
) -> None:
    """The send in flight when the database was copied (its row says sending, its job is
    leased) is, after the upgrade, replayed with its nonce once its lease has run out:
    Discord answers with the message it made, so there is one post, recorded as sent."""
    rows, message_id, sent_at = await mid_send(world, tmp_path)
    [delivery] = rows["bot_deliveries"]
    assert delivery["state"] == "sending"
    async with releases_database(dialect) as pg:
        for bot, sched, _ in [r for r in RELEASES if r[0]]:
            shaped_rows = shaped(rows, bot, sched)
            before = len(world.fake.requests)
            hits = world.fake.nonce_dedup_hits
            db = tmp_path / f"mid-{bot}-{sched}.db"
            async with at_release(dialect, db, bot, sched, shaped_rows, pg) as url:
                await replay(world, tmp_path, url, sent_at, message_id, (bot, sched))
            assert sends_to_news(world, before) == ["Mid-send"], (bot, sched)
            assert world.fake.nonce_dedup_hits == hits + 1, (bot, sched)
            assert [m.id for m in world.fake.bot_messages(world.news)] == [message_id]


async def replay(
    world: World, tmp_path: Path, url: str, sent_at: float, message_id: int, where: object
) -> None:
    clock = FakeClock(datetime.fromtimestamp(sent_at, UTC))
    app = await start(world, tmp_path, clock, url)
    try:
        clock.advance(timedelta(seconds=app.settings.lease + 1))
        await app.sched.sweep()  # the copied run's lease is found expired, now
        await app.sched.wait_idle()
        async with app.sched.reader() as db:
            cur = await db.execute("SELECT state, message_id FROM bot_deliveries")
            assert [tuple(r) for r in await cur.fetchall()] == [("sent", message_id)], where
    finally:
        await app.close()


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_scheduler_only_database_gets_the_bot_tables_and_keeps_its_jobs(
    world: World, tmp_path: Path, dialect: str
) -> None:
    """The scheduler's first releases had no bot: a database of theirs opened by today's bot
    is upgraded, its jobs kept, and the bot works on it."""
    for _bot, sched, _ in [r for r in RELEASES if r[0] == 0]:
        at = STOPPED_AT.timestamp() - 60  # finished a minute ago (kept, not yet pruned)
        rows: Rows = {
            "scheduler_jobs": [
                {"id": 1, "fn": "someone.else", "kind": "action", "state": "success",
                 "next_ts": at, "attempts": 1, "max_failures": 1, "initial_backoff": 1.0,
                 "backoff_base": 2.0, "run_count": 1, "created_at": at - 60,
                 "updated_at": at, "finished_at": at},
            ],
            "scheduler_job_args": [{"job_id": 1, "args": "{}"}],
        }  # fmt: skip
        if dialect == "sqlite":
            db = tmp_path / f"sched-{sched}.db"
            build_sqlite(db, 0, sched)
            project_sqlite(db, rows)
            url = f"sqlite:///{db}"
            app = await start(world, tmp_path, FakeClock(STOPPED_AT), url)
            try:
                job = await app.sched.get_job(1)
                assert job is not None
                assert job.fn == "someone.else"
                cb = await run_command(world, "list")
                assert cb.data is not None
            finally:
                await app.close()
        else:
            from tests.scheduler.pg import fresh_database

            async with fresh_database(require_postgres(), pooled=False) as dsn:
                conn = await asyncpg.connect(dsn)
                try:
                    await build_postgres(conn, 0, sched)
                    await project_postgres(conn, rows)
                finally:
                    await conn.close()
                app = await start(world, tmp_path, FakeClock(STOPPED_AT), dsn)
                try:
                    job = await app.sched.get_job(1)
                    assert job is not None
                    assert job.fn == "someone.else"
                finally:
                    await app.close()
    restore_discord_endpoints()


# --- a SIGKILL inside a migration ------------------------------------------------------------

HELD_AT = (5, 6)
"""The release the killed upgrade starts from: its next bot migration, 0006, drops an index
and creates three (a half-applied one would leave the index gone)."""


def index_sql_sqlite(db: Path) -> dict[str, str]:
    conn = sqlite3.connect(db)
    try:
        return {
            str(n): str(s)
            for n, s in conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
                "AND tbl_name = 'bot_announcements'"
            )
        }
    finally:
        conn.close()


def versions_sqlite(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        return {
            str(c): int(v)
            for c, v in conn.execute(
                "SELECT component, max(version) FROM scheduler_migrations GROUP BY component"
            )
        }
    finally:
        conn.close()


async def index_sql_pg(dsn: str) -> dict[str, str]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'bot_announcements'"
        )
        return {str(r[0]): str(r[1]) for r in rows}
    finally:
        await conn.close()


async def versions_pg(dsn: str) -> dict[str, int]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT component, max(version) FROM scheduler_migrations GROUP BY component"
        )
        return {str(r[0]): int(r[1]) for r in rows}
    finally:
        await conn.close()


async def killed_in_migration(world: World, tmp_path: Path, url: str) -> None:
    """``python -m bot`` on ``url``, held inside the bot's migration 0006, then SIGKILLed."""
    held = tmp_path / "held"
    env = {
        **__import__("os").environ,
        **world.fake.env(),
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": url,
        HOLD_MIGRATION_ENV: f"crier/{HELD_AT[0] + 1}:{held}",
    }
    async with procs() as started:
        proc = await Process.spawn(
            ["-m", "bot"], log_path=tmp_path / "held.log", label="bot", env=env,
            cwd=tmp_path, stdout_to_log=True,
        )  # fmt: skip
        started.append(proc)
        await until(held.exists, 60, "the migration to be held")
        assert int(held.read_text()) == proc.pid
        proc.kill()
        await proc.proc.wait()
    assert world.fake.requests == [], "the bot reached Discord before its migrations"


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_sigkill_inside_a_migration_leaves_it_unapplied_and_the_next_start_applies_it(
    world: World, tmp_path: Path, dialect: str
) -> None:
    base = await made(world, tmp_path)
    requests_before = len(world.fake.requests)
    world.fake.requests.clear()
    bot, sched = HELD_AT
    rows = shaped(base.rows, bot, sched)
    if dialect == "sqlite":
        db = tmp_path / "held.db"
        build_sqlite(db, bot, sched)
        project_sqlite(db, rows)
        url = f"sqlite:///{db}"
        before = index_sql_sqlite(db)
        await killed_in_migration(world, tmp_path, url)
        assert versions_sqlite(db)["crier"] == bot, "the held migration was recorded"
        assert index_sql_sqlite(db) == before, "the held migration was half applied"
        seen, new_posts = await upgraded_from(world, tmp_path, base, url, bot)
        assert versions_sqlite(db) == {"crier": today()[0], "scheduler": today()[1]}
        assert index_sql_sqlite(db) != before
        check_upgrade(base, seen, new_posts, bot, sched)
    else:
        from tests.scheduler.pg import fresh_database

        async with fresh_database(require_postgres(), pooled=False) as dsn:
            conn = await asyncpg.connect(dsn)
            try:
                await build_postgres(conn, bot, sched)
                await project_postgres(conn, rows)
            finally:
                await conn.close()
            before = await index_sql_pg(dsn)
            await killed_in_migration(world, tmp_path, dsn)
            assert (await versions_pg(dsn))["crier"] == bot
            assert await index_sql_pg(dsn) == before
            seen, new_posts = await upgraded_from(world, tmp_path, base, dsn, bot)
            assert await versions_pg(dsn) == {"crier": today()[0], "scheduler": today()[1]}
            assert await index_sql_pg(dsn) != before
            check_upgrade(base, seen, new_posts, bot, sched)
    assert requests_before > 0


# --- a database from a newer release ---------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_database_of_a_newer_release_is_refused_in_one_line_and_left_untouched(
    world: World, tmp_path: Path, dialect: str
) -> None:
    from tests.bot.test_config import assert_one_clear_line, clean_env, run_bot

    bot, sched = today()
    newer = (
        f"INSERT INTO scheduler_migrations VALUES ('crier', {bot + 1}, 'from_the_future', 'x', 1.0)"
    )
    if dialect == "sqlite":
        db = tmp_path / "newer.db"
        build_sqlite(db, bot, sched)
        conn = sqlite3.connect(db)
        conn.execute(newer)
        conn.commit()
        conn.close()
        before = db.read_bytes()
        run = await run_bot(tmp_path, clean_env(**world.fake.env(), DATABASE_URL=f"sqlite:///{db}"))
        assert db.read_bytes() == before, "the newer database was changed"
    else:
        from tests.scheduler.pg import fresh_database

        async with fresh_database(require_postgres(), pooled=False) as dsn:
            conn_pg = await asyncpg.connect(dsn)
            try:
                await build_postgres(conn_pg, bot, sched)
                await conn_pg.execute(newer)
                tables_before = await conn_pg.fetch(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = 'public' ORDER BY 1"
                )
                run = await run_bot(tmp_path, clean_env(**world.fake.env(), DATABASE_URL=dsn))
                assert await conn_pg.fetchval("SELECT count(*) FROM scheduler_migrations") == (
                    bot + sched + 1
                )
                assert tables_before == await conn_pg.fetch(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = 'public' ORDER BY 1"
                )
            finally:
                await conn_pg.close()
    assert_one_clear_line(run, "newer version", f"version {bot + 1}", "nothing in it was changed")
    assert world.fake.requests == []
