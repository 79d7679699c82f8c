"""Faults injected into a running ``python -m bot``: nothing lost, nothing doubled.

Each test runs the real bot process against the fake Discord and breaks something under it
for real while announcements come due:

- PostgreSQL: every backend of the test's own database is terminated, again and again,
  while a stream of announcements is delivered (the pool and the LISTEN connection must
  come back by themselves);
- SQLite: the database's files cannot be written (a file size limit of 0 on the bot), while
  acknowledged announcements come due; the bot must say so once, stay up, and post each of
  them once when writes work again;
- the gateway: refusing every connection while REST is up; what comes due is posted all
  the same, before the gateway is let back.

"Posted exactly once" is counted at the fake: one message per occurrence, told apart by the
deterministic nonce that carries the announcement and its fire time, and a delivery row
``sent`` with that message's id for each.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import re
import resource
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from bot.announcements import SEND_FN, Announcement, Announcements, Draft, SendArgs
from bot.app import bot_migrations
from bot.posting.delivery import SEND_RETRY, nonce_for
from scheduler import Registry, Scheduler, SqliteStore, Store
from scheduler.testing import FakeClock
from tests.fakediscord import FakeDiscord
from tests.fakediscord import Permissions as P
from tests.fakediscord.state import Channel, Message
from tests.proof.harness import PROOF_LIMITS, pg_work_settled, rows
from tests.scheduler.stores import postgres_dsn
from tests.support.processes import Process, bot_env, procs, start_bot, until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from tests.bot.conftest import World

DEADLINE = 30.0
LEASE = "2"
SWEEP = "0.5"


@pytest.fixture
async def bots() -> AsyncIterator[list[Process]]:
    """Every bot process a test starts; all are killed and reaped afterwards."""
    async with procs() as started:
        yield started


def logs(bots: list[Process]) -> str:
    return "\n".join(f"--- {b.label} ---\n{b.log[-8000:]}" for b in bots)


async def until_connected(fake: FakeDiscord, bots: list[Process]) -> None:
    """The bot is logged in, its gateway session is up and its commands are synced."""
    try:
        await fake.wait_until(
            lambda: fake.get_command("schedule") is not None and fake.gateway.connected_sessions,
            timeout=DEADLINE,
            what="the bot to connect with its commands synced",
        )
    except TimeoutError:
        raise AssertionError(f"the bot did not come up:\n{logs(bots)}") from None


@dataclass
class Stream:
    """Where the announcements go: channels spread over one guild, and an author."""

    channels: list[Channel]
    author_id: int

    def draft(self, i: int, due: float) -> Draft:
        channel = self.channels[i % len(self.channels)]
        assert channel.guild_id is not None
        return Draft(
            guild_id=channel.guild_id,
            channel_id=channel.id,
            author_id=self.author_id,
            content=f"announcement {i}",
            mention=None,
            allowed_mentions={"everyone": False, "roles": [], "users": True},
            first=datetime.fromtimestamp(due, UTC),
            timezone="UTC",
            repeat=None,
        )


def stream_world(fake: FakeDiscord, channels: int) -> Stream:
    guild = fake.add_guild(name="Faults", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES)
    admins = guild.add_role("admins", P.MANAGE_GUILD)
    author = guild.add_member(name="admin", roles=[admins])
    return Stream([guild.add_channel(f"c{i}") for i in range(channels)], author.id)


def assert_each_posted_once(
    messages: list[Message],
    anns: dict[int, dict[str, Any]],
    deliveries: list[dict[str, Any]],
) -> None:
    """One message per occurrence (by nonce), each in its announcement's channel with its
    text and recorded as that occurrence's message; every one-off sent, with one delivery."""
    per_nonce = collections.Counter(m.nonce for m in messages)
    doubled = {n: c for n, c in per_nonce.items() if c > 1}
    assert not doubled, f"occurrences posted more than once: {doubled}"
    by_nonce = {m.nonce: m for m in messages}
    recorded = {d["nonce"] for d in deliveries}
    orphans = [m for m in messages if m.nonce not in recorded]
    assert not orphans, f"messages without a delivery row: {orphans[:5]}"
    per_ann = collections.Counter(d["announcement_id"] for d in deliveries)
    assert set(per_ann) == set(anns), "announcements without a delivery"
    assert set(per_ann.values()) == {1}, per_ann
    for d in deliveries:
        ann = anns[d["announcement_id"]]
        assert d["state"] == "sent", d
        assert d["nonce"] == nonce_for(ann["id"], ann["first_ts"])
        msg = by_nonce.get(d["nonce"])
        assert msg is not None, f"{ann['content']!r} recorded as sent, but no message: {d}"
        assert (msg.id, msg.channel_id, msg.content) == (
            d["message_id"],
            ann["channel_id"],
            ann["content"],
        ), d
        assert (ann["state"], ann["last_message_id"]) == ("sent", msg.id), ann
    assert len(messages) == len(deliveries) == len(anns)


# --- 1. PostgreSQL connections killed mid-run ---------------------------------------------

PG_KILLS = 6
PG_BATCH = 8
"""Announcements written (due at once) before each kill, and once more after the last."""
PG_COUNT = PG_BATCH * (PG_KILLS + 1)
PG_SEND_DELAY = 0.3
"""The fake answers each send this long after creating the message, so kills land on sends
in flight (the message exists, the bot has not recorded it yet)."""
LOCKER = "test-locker"
"""The application_name of the test's connection that holds a table lock for a kill."""


@pytest.fixture
async def pg_dsn() -> AsyncIterator[str]:
    """A fresh database of the test's own, dropped afterwards."""
    pytest.importorskip("asyncpg")
    from tests.scheduler.pg import fresh_test_database

    async with fresh_test_database("killing PostgreSQL connections needs a server") as dsn:
        yield dsn


async def write_with_service(
    dsn: str, drafts: list[Draft], clock_at: float | None = None
) -> list[Announcement]:
    """Write the announcements as /schedule does (through ``Announcements``), from a scheduler
    of the test's own whose clock stands still before anything is due, so it never claims
    anything; its migrations run first. It is stopped before any fault is injected.
    ``dsn``: a PostgreSQL URL, or the bots' ``sqlite:///PATH``; ``clock_at``: the writer's
    clock (default now; give one before the drafts' due times when they are due now)."""
    store: Store
    if dsn.startswith("sqlite:///"):
        store = SqliteStore(dsn.removeprefix("sqlite:///"))
    else:
        from scheduler.stores.postgres import PostgresStore

        store = PostgresStore(dsn, listen=False, application_name="test-writer")
    registry = Registry()

    # (as bot.posting registers it)
    @registry.action(SEND_FN, args=SendArgs, idempotent=True, retry=SEND_RETRY)
    async def never(ctx: Any, args: Any) -> None:
        raise AssertionError("the test process must never deliver")

    writer = Scheduler(
        store,
        registry,
        clock=FakeClock(time.time() if clock_at is None else clock_at),
        migrations=[bot_migrations()],
    )
    await writer.start()
    try:
        # As the bots (SEND_SPACING 0); the proof's repeats are seconds apart.
        service = Announcements(writer, send_spacing=0.0, limits=PROOF_LIMITS)
        return [(await service.create(d))[0] for d in drafts]
    finally:
        await writer.stop()


async def migrate(dsn: str) -> None:
    """The bot's schema, applied before the bot starts (as the writer would)."""
    await write_with_service(dsn, [])


@pytest.mark.postgres
@pytest.mark.timeout(90)
async def test_postgres_backends_killed_repeatedly_every_announcement_posted_once(
    pg_dsn: str, bots: list[Process], tmp_path: Path
) -> None:
    import asyncpg

    base = postgres_dsn()
    assert base is not None
    database = pg_dsn.rsplit("/", 1)[1]
    await migrate(pg_dsn)
    async with FakeDiscord(ratelimits=False) as fake:
        stream = stream_world(fake, channels=4)
        fake.faults.add(
            method="POST",
            path_regex=r"/channels/\d+/messages",
            times=10**9,
            after_effect=True,
            delay=PG_SEND_DELAY,
        )
        env = bot_env(fake.env(), database_url=pg_dsn, lease=LEASE, sweep=SWEEP, spacing="0")
        bot = await start_bot(env, tmp_path, "bot")
        bots.append(bot)
        await until_connected(fake, bots)

        # The stream is written by the test, one batch before each kill and one after the
        # last, so how many kills happen, and that work comes after the last, does not depend
        # on how fast anything runs.
        made: list[Announcement] = []

        async def write_batch() -> list[str]:
            now = time.time()
            batch = [stream.draft(len(made) + i, now) for i in range(PG_BATCH)]
            made.extend(await write_with_service(pg_dsn, batch, clock_at=now - 60))
            return [d.content for d in batch]

        # The killer's own session is on the server's base database: only the test's
        # database is touched, and never the server itself.
        killer = await asyncpg.connect(base)
        kills: list[tuple[float, list[str], bool]] = []
        """(when, the application_name of each bot backend terminated, whether one of them
        was in a transaction)"""

        async def backends() -> list[Any]:
            return list(
                await killer.fetch(
                    "SELECT pid, application_name FROM pg_stat_activity "
                    "WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name <> $2",
                    database,
                    LOCKER,
                )
            )

        async def kill(mid_transaction: bool) -> list[Any]:
            """Terminate every backend of the test's database (only once one of the bot's is
            in a transaction, when told so); pg_terminate_backend stays in the select list,
            never in WHERE, where it could be evaluated before the filter, on other
            databases. The locker's backend goes too; its rows are left out."""
            found = list(
                await killer.fetch(
                    "SELECT application_name, "
                    "  xact_start IS NOT NULL AND application_name <> $3 AS in_tx, "
                    "  pg_terminate_backend(pid) AS gone FROM pg_stat_activity "
                    "WHERE datname = $1 AND pid <> pg_backend_pid() AND (NOT $2 OR EXISTS ("
                    "  SELECT 1 FROM pg_stat_activity WHERE datname = $1 "
                    "  AND pid <> pg_backend_pid() AND application_name <> $3 "
                    "  AND xact_start IS NOT NULL))",
                    database,
                    mid_transaction,
                    LOCKER,
                )
            )
            return [r for r in found if r["application_name"] != LOCKER]

        conn = await asyncpg.connect(pg_dsn)
        try:
            # Kill, then wait until the bot is back (a new backend, and every job so far
            # finished after the kill), then the next batch and kill. Every other kill lands
            # inside one of the bot's transactions for certain: the test holds a lock on
            # bot_deliveries (which the writer does not touch) while the batch is written, so
            # the bot's first delivery write waits in its transaction until the kill. The
            # others land while the batch's first send is in flight (made, not yet answered).
            for k in range(PG_KILLS):
                mid_tx = k % 2 == 1
                locker = None
                if mid_tx:
                    locker = await asyncpg.connect(
                        pg_dsn, server_settings={"application_name": LOCKER}
                    )
                    await locker.execute("BEGIN; LOCK TABLE bot_deliveries IN EXCLUSIVE MODE")
                contents = await write_batch()
                if not mid_tx:
                    await fake.wait_until(
                        lambda c=contents: any(m.content in c for m in fake.bot_messages()),
                        timeout=DEADLINE,
                        what=f"a send of batch {k + 1}",
                    )
                rows: list[Any] = []

                async def killed(mid_tx: bool = mid_tx, rows: list[Any] = rows) -> bool:
                    rows[:] = await kill(mid_tx)
                    return bool(rows)

                try:
                    await until(killed, DEADLINE, f"kill {len(kills) + 1}", interval=0.001)
                finally:
                    if locker is not None:
                        with contextlib.suppress(Exception):
                            await locker.close(timeout=5)
                killed_at = time.time()
                kills.append(
                    (
                        killed_at,
                        [r["application_name"] for r in rows],
                        any(r["in_tx"] for r in rows),
                    )
                )

                # The test's own reader went with the kill: a new one.
                conn.terminate()
                conn = await asyncpg.connect(pg_dsn)

                async def back(conn: Any = conn) -> bool:
                    return bool(await backends()) and await pg_work_settled(conn)

                try:
                    await until(back, DEADLINE, f"the bot to deliver after kill {len(kills)}")
                except AssertionError as exc:
                    jobs_now = await conn.fetch(
                        "SELECT id, state, run_count, attempts, next_ts FROM scheduler_jobs"
                    )
                    sending = await conn.fetch("SELECT * FROM bot_deliveries WHERE state <> 'sent'")
                    raise AssertionError(
                        f"{exc}\njobs: {jobs_now}\nunsent: {sending}\n{logs(bots)}"
                    ) from None
                assert bot.proc.returncode is None, logs(bots)

            last_kill = kills[-1][0]
            await write_batch()  # delivered after the last kill
            # Every LISTEN connection killed was re-established (supervised), and is live now.
            listen_kills = [k for k in kills if "scheduler-listen" in k[1]]

            async def listening() -> bool:
                return any(r["application_name"] == "scheduler-listen" for r in await backends())

            await until(listening, DEADLINE, "the LISTEN connection to come back")
        finally:
            await killer.close()

        try:
            try:
                await until(
                    lambda: pg_work_settled(conn), DEADLINE, "every job to finish", interval=0.1
                )
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{logs(bots)}") from None
            anns = {
                r["id"]: dict(r)
                for r in await conn.fetch(
                    "SELECT id, channel_id, content, first_ts, state, last_message_id "
                    "FROM bot_announcements"
                )
            }
            deliveries = [
                dict(r)
                for r in await conn.fetch(
                    "SELECT announcement_id, fire_ts, nonce, state, message_id, attempts "
                    "FROM bot_deliveries"
                )
            ]
            jobs = [
                dict(r) for r in await conn.fetch("SELECT state, run_count FROM scheduler_jobs")
            ]
        finally:
            await conn.close()
        messages = fake.bot_messages()
        assert bot.proc.returncode is None, f"the bot exited\n{logs(bots)}"
        log_text = bot.log

    assert len(anns) == len(made) == PG_COUNT
    assert_each_posted_once(messages, anns, deliveries)
    assert {j["state"] for j in jobs} == {"success"}, collections.Counter(j["state"] for j in jobs)
    # The bot kept delivering after the last kill: what was due later was posted too.
    after = [m for m in messages if m.created_at > last_kill]
    assert after, "nothing was posted after the last kill"
    assert len(kills) == PG_KILLS
    assert listen_kills, "no kill caught the LISTEN connection"
    assert any(k[2] for k in kills), "no kill landed inside a transaction"
    assert "LISTEN connection re-established" in log_text, log_text[-4000:]

    # The kills really interrupted deliveries: some ran again (re-sent with their nonce).
    interrupted = [j for j in jobs if j["run_count"] > 1]
    resent = [d for d in deliveries if d["attempts"] > 1]
    assert interrupted, f"no kill interrupted a delivery\n{log_text[-4000:]}"
    print(
        f"\n{len(kills)} kills ({sum(len(k[1]) for k in kills)} backends, "
        f"{sum(k[2] for k in kills)} in a transaction) over "
        f"{PG_KILLS + 1} batches; {len(messages)} messages for {PG_COUNT} announcements; "
        f"{len(interrupted)} job(s) run again, {len(resent)} delivery(ies) sent again, "
        f"{fake.nonce_dedup_hits} answered by nonce; {len(after)} posted after the last kill"
    )


# --- 2. SQLite: the database's disk full --------------------------------------------------

FULL_DUE_IN = 3
"""Seconds from scheduling to the first one's due time."""
LATER_BY = 4
"""Seconds from the first one's due time to the other three's: the disk is full by then (it
is made full as soon as the first send reaches the fake)."""
FULL_FOR = 3.0
"""Seconds the disk stays full after the later due time: several retries of every loop (the
dispatch pass retries each second and the sweep wakes it every 0.5 s)."""
REFUSED = "cannot write to the database"
WRITABLE = "can be written again"
INFO_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO ")

# The bot as ``python -m bot`` runs it, with SIGXFSZ ignored (as CPython does by default,
# said here so that a write past the file size limit fails with EFBIG rather than killing it).
_BOT_MAIN = (
    "import runpy, signal; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
    "runpy.run_module('bot', run_name='__main__', alter_sys=True)"
)


@dataclass
class PipedBot:
    """A bot process whose stdout and stderr are one pipe, read by the test into ``lines``
    (and copied to its log file). No file of the bot's own holds its log: a file size limit
    put on the bot must not cut its log short."""

    process: Process
    lines: list[str]
    pump: asyncio.Task[None]

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    async def start(cls, env: dict[str, str], workdir: Path, name: str) -> PipedBot:
        log_path = workdir / f"{name}.log"
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _BOT_MAIN,
            env=env,
            cwd=workdir,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        lines: list[str] = []

        async def pump() -> None:
            assert proc.stdout is not None
            with log_path.open("w", encoding="utf-8") as log:
                while raw := await proc.stdout.readline():
                    line = raw.decode("utf-8", "replace").rstrip("\n")
                    lines.append(line)
                    log.write(line + "\n")
                    log.flush()

        task = asyncio.create_task(pump(), name=f"{name}-log")
        return cls(Process(proc, log_path, name), lines, task)


def set_file_size_limit(pid: int, limit: int | None) -> None:
    """RLIMIT_FSIZE of process ``pid``: ``limit`` bytes (0: no file of its can grow or be
    written at all), or none."""
    if limit is None:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)
    else:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))


def recorded(db: Path) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    """The announcements by id, and every delivery row, as the bot recorded them."""
    anns = {
        r["id"]: r
        for r in rows(
            db,
            "SELECT id, channel_id, content, first_ts, state, last_message_id "
            "FROM bot_announcements",
        )
    }
    deliveries = rows(
        db,
        "SELECT announcement_id, fire_ts, nonce, state, message_id, attempts FROM bot_deliveries",
    )
    return anns, deliveries


async def schedule(world: World, when: int, message: str) -> str:
    h = await world.fake.invoke_command(
        world.guild,
        world.general,
        world.admin,
        "schedule",
        options={"when": str(when), "message": message, "channel": world.news},
    )
    content = (await h.response(timeout=DEADLINE)).content
    assert content is not None
    return content


@pytest.mark.timeout(90)
async def test_sqlite_disk_full_one_clear_line_then_every_announcement_posted_once(
    world: World, bots: list[Process], tmp_path: Path
) -> None:
    """The bot's database files are made unwritable for real, by setting the bot process's
    file size limit to 0 bytes: from then on every write to them fails (EFBIG, which SQLite
    reports as a disk I/O error), wherever it falls, so the condition does not depend on
    whether the WAL happens to have room left.

    Four announcements were acknowledged before. The first is being posted when the disk
    fills: the fake has created its message and holds the answer, so the bot cannot record
    it; it must be re-sent with its nonce afterwards (one message). The other three come due
    while the disk is full.

    The fake holds the first send's answer until the test lets it go (after the disk is
    full), and holds the later sends before making anything: one that reached the fake
    before the disk was full would fail the test saying so, instead of posting."""
    fake, news = world.fake, world.news
    db = tmp_path / "crier.db"
    env = bot_env(fake.env(), database_url=f"sqlite:///{db}", lease=LEASE, sweep=SWEEP, spacing="0")
    bot = await PipedBot.start(env, tmp_path, "bot")
    bots.append(bot.process)
    try:
        await until_connected(fake, bots)
        await until(lambda: any("connected as" in line for line in bot.lines), DEADLINE, "on_ready")
        # The first send: the message is created, its answer held until the disk is full.
        answer = fake.hold_messages(news, stage="after")
        early = fake.hold_messages(news, stage="before", skip=1, count=3)
        first_due = int(time.time()) + FULL_DUE_IN
        later_due = first_due + LATER_BY
        reply = await schedule(world, first_due, "in flight")
        assert "Scheduled announcement" in reply, reply
        for i in range(3):
            reply = await schedule(world, later_due, f"due while full {i}")
            assert "Scheduled announcement" in reply, reply
        await fake.wait_until(lambda: answer.parked == 1, timeout=DEADLINE, what="the first send")
        set_file_size_limit(bot.pid, 0)
        full_from = len(bot.lines)
        assert early.sends == [], "a later send reached the fake before the disk was full"
        early.release()  # (nothing parked: the later ones are claimed only once writes work)
        [in_flight] = fake.bot_messages(news)
        answer.release()  # the bot hears of its message and cannot record it

        await until(
            lambda: time.time() > later_due + FULL_FOR, DEADLINE, "the disk to be full a while"
        )
        await until(
            lambda: any(REFUSED in line for line in bot.lines[full_from:]),
            DEADLINE,
            "the bot to say it cannot write",
        )
        # Asked while the disk is full: refused in words, and nothing is saved.
        during = await schedule(world, later_due + 600, "asked while the disk is full")
        assert during.startswith("I can't save anything right now"), during

        while_full = bot.lines[full_from:]
        assert bot.process.proc.returncode is None, logs(bots)
        assert fake.bot_messages(news) == [in_flight], "posted with nothing recorded"
        refused = [line for line in while_full if REFUSED in line]
        assert len(refused) == 1, "\n".join(while_full)
        assert " ERROR " in refused[0], refused[0]
        assert "file size limit" in refused[0], refused[0]
        # One line, and nothing else said about it: no traceback, no warning per retry
        # (every line but INFO ones; a traceback's lines have no timestamp and level).
        said = [line for line in while_full if not INFO_LINE.match(line)]
        assert said == refused, "\n".join(while_full)

        set_file_size_limit(bot.pid, None)

        def settled() -> bool:
            jobs = rows(db, "SELECT state FROM scheduler_jobs")
            return len(jobs) == 4 and all(r["state"] == "success" for r in jobs)

        try:
            await until(settled, DEADLINE, "the due work to resume", interval=0.1)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{logs(bots)}") from None
        await until(lambda: any(WRITABLE in line for line in bot.lines), DEADLINE, "the news")
        anns, deliveries = recorded(db)
        messages = fake.bot_messages(news)
        assert bot.process.proc.returncode is None, logs(bots)
    finally:
        bot.process.kill()
        await bot.process.proc.wait()
        await bot.pump

    assert sorted(a["content"] for a in anns.values()) == [
        *(f"due while full {i}" for i in range(3)),
        "in flight",
    ]
    assert_each_posted_once(messages, anns, deliveries)
    # The send in flight was re-sent once writes worked, and Discord answered it with the
    # first message (its nonce); the others were sent once each.
    attempts = {anns[d["announcement_id"]]["content"]: d["attempts"] for d in deliveries}
    assert attempts == {"in flight": 2} | {f"due while full {i}": 1 for i in range(3)}
    assert fake.nonce_dedup_hits == 1
    assert messages[0] is in_flight
    assert fake.bot_messages(world.general) == []
    after = bot.lines[full_from:]
    assert len([line for line in after if REFUSED in line]) == 1, "\n".join(after)
    assert len([line for line in after if WRITABLE in line]) == 1, "\n".join(after)
    assert not [line for line in bot.lines if "Traceback" in line], "\n".join(bot.lines)


# --- 3. The gateway down, REST up -----------------------------------------------------------

GATEWAY_DUE_IN = 1.0
"""Seconds from writing the announcements (the gateway already down) to their due time."""


async def test_gateway_down_rest_up_announcements_still_posted_before_it_returns(
    world: World, bots: list[Process], tmp_path: Path
) -> None:
    """Deliveries are REST calls and must not wait for the gateway: with the gateway
    refusing every connection (the bot disconnected, its reconnects answered 503) and REST
    up, the announcements that come due are posted while it is still down. The order of
    events is the proof, and the test makes it: the gateway goes down first, then the
    announcements are written (as /schedule writes them, through ``Announcements``, into the
    bot's database, which the bot's sweep reads), due a moment later; their messages exist
    before the gateway is let back."""
    fake = world.fake
    channels = [world.news, world.general]
    db = tmp_path / "crier.db"
    url = f"sqlite:///{db}"
    env = bot_env(fake.env(), database_url=url, lease=LEASE, sweep=SWEEP, spacing="0")
    bots.append(await start_bot(env, tmp_path, "bot"))
    await until_connected(fake, bots)

    fake.gateway.refuse_connections = True
    assert await fake.disconnect_gateway() == 1
    down_at = time.time()
    due = down_at + GATEWAY_DUE_IN

    def draft(i: int) -> Draft:
        return Draft(
            guild_id=world.guild.id,
            channel_id=channels[i % 2].id,
            author_id=world.admin.id,
            content=f"while down {i}",
            mention=None,
            allowed_mentions={"everyone": False, "roles": [], "users": True},
            first=datetime.fromtimestamp(due, UTC),
            timezone="UTC",
            repeat=None,
        )

    await write_with_service(url, [draft(i) for i in range(4)], clock_at=down_at)
    try:
        await fake.wait_until(
            lambda: len(fake.bot_messages()) == 4, timeout=DEADLINE, what="the deliveries"
        )
        # The bot did try to come back, and was refused: the gateway really was down for it.
        await fake.wait_until(
            lambda: fake.gateway.refused_count > 0, timeout=DEADLINE, what="a refused reconnect"
        )
    except TimeoutError as exc:
        raise AssertionError(f"{exc}\n{logs(bots)}") from None
    # Still down: every message was posted before the gateway is let back.
    assert fake.gateway.refuse_connections
    assert not fake.gateway.connected_sessions
    messages = fake.bot_messages()
    assert all(down_at < m.created_at for m in messages)
    assert all(due <= m.created_at for m in messages), "posted early"

    fake.gateway.refuse_connections = False
    try:
        await fake.wait_until(
            lambda: fake.gateway.connected_sessions,
            timeout=DEADLINE,
            what="the bot's gateway to come back by itself",
        )
    except TimeoutError as exc:
        raise AssertionError(f"{exc}\n{logs(bots)}") from None
    assert bots[0].proc.returncode is None, logs(bots)

    def all_sent() -> bool:
        sent = rows(db, "SELECT state FROM bot_deliveries")
        return len(sent) == 4 and all(r["state"] == "sent" for r in sent)

    await until(all_sent, DEADLINE, "the deliveries to be recorded", interval=0.1)
    anns, deliveries = recorded(db)
    assert_each_posted_once(fake.bot_messages(), anns, deliveries)
    assert {m.channel_id for m in messages} == {c.id for c in channels}
