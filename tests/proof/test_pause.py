"""A bot process paused past its lease posts nothing twice (SIGSTOP, SQLite and PostgreSQL).

Two ``python -m bot`` processes, A and B, share one database (one SQLite file, or one fresh
PostgreSQL database) and one fake Discord. Two announcements are due at the same instant in
one channel. A takes both (B is held stopped while A claims them), posts the first, and is
SIGSTOPped during the second:

* ``slot``: while the second waits out the channel's spacing (SEND_SPACING_SECONDS, a
  minute): the scheduler starts it only in its channel's slot, so A does not hold it then
  (it is pending, with no lease); once A is stopped the test opens the slot (it moves the
  channel's pace row to the past, as time passing would) and B posts it in its slot;
* ``before``: mid-request, the fake holding the send before it made the message;
* ``after``: the fake made the message and holds back the answer, so A has neither got nor
  recorded it.

A stays stopped past its lease: B's lease sweep takes the second occurrence over and posts it
with the same nonce (``before``: B makes the message, A's parked send is then answered with
it; ``after``: A's send made it, B's re-send is answered with it). A is let go only once the
fake has *forgotten* that nonce (the test tells it to, as a pause longer than Discord's
memory would; until then the fake remembers far longer than any wait here, and the bot's
NONCE_WINDOW_SECONDS is long enough that B's takeover re-sends however slow the machine).
A's run of the second occurrence must then end without a send: before the fix, A went on from
where it stopped and posted the announcement again.

Nothing here depends on how fast the machine is: every step waits for the state it needs.

Checked: each announcement is at the fake exactly once (B took the second over in time); the
database has each occurrence ``sent`` with that message's id, both announcements ``sent``, every
job finished (no error noted on a sent delivery); A's log says once, at WARNING, that its run
was discarded because its lease was lost (stopped by the lease check, or finished after finding
the occurrence recorded and its outcome fenced out), A announces no retry of the job, and
neither bot logged a traceback. Both bots are still running.

In the ``before`` and ``after`` cases the send A had in flight either times out the moment A
wakes (if its timeout ran out during the pause) or is answered: either way the delivery checks
its lease before it treats the outcome, so A says nothing of a retry.

A stopped process that holds the SQLite write lock (or an open PostgreSQL transaction) would
stall the other one, which is not what is tested here: a bot is stopped only at a moment when
neither holds one (stopped, checked, let go and stopped again if it did).
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bot.announcements import SEND_FN, Announcements, Draft, SendArgs
from bot.app import bot_migrations
from bot.posting.delivery import SEND_RETRY, nonce_for
from scheduler import Registry, Scheduler, SqliteStore, Store
from scheduler.testing import FakeClock
from tests.fakediscord import FakeDiscord, MessageHold
from tests.fakediscord import Permissions as P
from tests.scheduler.crash_worker import connect
from tests.support.processes import Process, bot_env, procs, start_bot, until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.fakediscord.state import Channel

LEASE = 2.0
"""SCHEDULER_LEASE_SECONDS: A's lease lapses at most this long after it is stopped."""
SWEEP = 0.5
"""SCHEDULER_SWEEP_SECONDS: how soon B finds the lapsed lease."""
NONCE_WINDOW = 30.0
"""NONCE_WINDOW_SECONDS: B's takeover (about LEASE + SWEEP after the stop on an idle machine)
re-sends within it; only a machine stalled for half a minute would not."""
SEND_TIMEOUT = NONCE_WINDOW / 3
"""How long the bot waits for a send's answer (a third of its nonce window)."""
FAKE_NONCE_MEMORY = 3600.0
"""The fake's nonce memory until the test makes it forget: longer than every wait here."""
SPACING = {"slot": 60.0, "before": 0.5, "after": 0.5}
"""SEND_SPACING_SECONDS: ``slot`` stops A inside this wait (a minute, which the test cuts
short by opening the slot itself once A is stopped); the others only need the two sends
apart."""
LEAD = 1.0
"""Seconds from writing the announcements to their due time."""
DEADLINE = 45.0
"""Only stops a hung test."""

STAGES = {
    "slot": "waiting for its channel slot",
    "before": "mid-request, before the fake made the message",
    "after": "after the fake made the message, before A heard",
}

pytestmark = pytest.mark.timeout(180)


# --- the database ----------------------------------------------------------------------------


@dataclass
class Database:
    kind: str
    url: str
    """The bots' DATABASE_URL."""
    path: Path | None = None
    conn: Any = None
    """PostgreSQL: the test's own connection for reads."""

    def store(self) -> Store:
        if self.path is not None:
            return SqliteStore(self.path)
        from scheduler.stores.postgres import PostgresStore

        return PostgresStore(self.url, listen=False, max_size=2, application_name="test-writer")

    async def query(self, sql: str) -> list[dict[str, Any]]:
        if self.path is not None:
            with closing(connect(self.path)) as conn:
                conn.row_factory = sqlite3.Row
                return [dict(r) for r in conn.execute(sql).fetchall()]
        return [dict(r) for r in await self.conn.fetch(sql)]

    async def execute(self, sql: str) -> None:
        if self.path is not None:
            with closing(connect(self.path)) as conn:
                conn.execute(sql)
            return
        await self.conn.execute(sql)

    async def quiet(self) -> bool:
        """No bot holds the SQLite write lock / has a PostgreSQL transaction open."""
        if self.path is not None:
            with closing(sqlite3.connect(self.path, timeout=0, isolation_level=None)) as conn:
                try:
                    conn.execute("BEGIN IMMEDIATE")
                except sqlite3.OperationalError:
                    return False
                conn.execute("ROLLBACK")
                return True
        busy = await self.conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = 'scheduler' AND xact_start IS NOT NULL"
        )
        return bool(busy == 0)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    if request.param == "sqlite":
        path = tmp_path / "crier.db"
        yield Database("sqlite", f"sqlite:///{path}", path=path)
        return
    asyncpg = pytest.importorskip("asyncpg")
    from tests.scheduler.pg import fresh_test_database

    async with fresh_test_database("the pause proof needs a PostgreSQL server") as dsn:
        conn = await asyncpg.connect(dsn, server_settings={"application_name": "test-reader"})
        try:
            yield Database("postgres", dsn, conn=conn)
        finally:
            await conn.close()


@pytest.fixture
async def writer(database: Database) -> AsyncIterator[Scheduler]:
    """The test's own scheduler on the bots' database, to write announcements as /schedule
    does. Its clock stands still before anything is due, so it never claims anything. It
    applies the migrations before any bot starts."""
    registry = Registry()

    # (as bot.posting registers it)
    @registry.action(SEND_FN, args=SendArgs, idempotent=True, retry=SEND_RETRY)
    async def never(ctx: Any, args: Any) -> None:
        raise AssertionError("the test process must never deliver")

    sched = Scheduler(
        database.store(), registry, clock=FakeClock(time.time()), migrations=[bot_migrations()]
    )
    await sched.start()
    try:
        yield sched
    finally:
        await sched.stop()


# --- helpers -----------------------------------------------------------------------------------


async def stop_quietly(bot: Process, db: Database) -> None:
    """SIGSTOP ``bot`` at a moment it holds no write lock or open transaction."""
    deadline = time.monotonic() + DEADLINE
    while True:
        await bot.pause()
        if await db.quiet():
            return
        await bot.resume()
        assert time.monotonic() < deadline, f"{bot.label} never stopped outside a transaction"
        await asyncio.sleep(0.01)


def draft(channel: Channel, author_id: int, content: str, due: float) -> Draft:
    assert channel.guild_id is not None
    return Draft(
        guild_id=channel.guild_id,
        channel_id=channel.id,
        author_id=author_id,
        content=content,
        mention=None,
        allowed_mentions={"everyone": False, "roles": [], "users": True},
        first=datetime.fromtimestamp(due, UTC),
        timezone="UTC",
        repeat=None,
    )


DELIVERIES = (
    "SELECT d.announcement_id, d.fire_ts, d.job_id, d.nonce, d.state, d.attempts, d.message_id, "
    "d.error, a.content, a.state AS ann_state, a.last_message_id, j.state AS job_state, "
    "j.run_count FROM bot_deliveries d JOIN bot_announcements a ON a.id = d.announcement_id "
    "LEFT JOIN scheduler_jobs j ON j.id = d.job_id ORDER BY d.announcement_id"
)


# --- the proof ---------------------------------------------------------------------------------


class AnnouncedRetry(AssertionError):
    """A logged that it will retry a job it no longer holds."""


@pytest.mark.parametrize(
    "stage",
    STAGES,
)
async def test_a_bot_paused_past_its_lease_posts_nothing_twice(  # noqa: C901 (one scenario per stage, read top to bottom)
    database: Database, writer: Scheduler, stage: str, tmp_path: Path
) -> None:
    async with FakeDiscord(nonce_window=FAKE_NONCE_MEMORY) as fake, procs() as bots:
        guild = fake.add_guild(name="Pause", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES)
        news = guild.add_channel("news")
        author = guild.add_member(name="admin")
        env = bot_env(
            fake.env(),
            database_url=database.url,
            lease=str(LEASE),
            sweep=str(SWEEP),
            spacing=str(SPACING[stage]),
        ) | {"NONCE_WINDOW_SECONDS": str(NONCE_WINDOW)}

        def logs() -> str:
            return "\n".join(f"--- {b.label} ---\n{b.log[-8000:]}" for b in bots)

        async def wait(predicate: Any, what: str, within: float = DEADLINE) -> None:
            try:
                await until(predicate, within, what, interval=0.01)
            except AssertionError as exc:
                rows = await database.query(DELIVERIES)
                raise AssertionError(f"{exc} ({STAGES[stage]})\nrows: {rows}\n{logs()}") from None

        def sends() -> list[Any]:
            path = f"/channels/{news.id}/messages"
            return [r for r in fake.requests if r.method == "POST" and r.path == path]

        a = await start_bot(env, tmp_path, "A")
        b = await start_bot(env, tmp_path, "B")
        bots += [a, b]
        await wait(lambda: len(fake.gateway.connected_sessions) == 2, "both bots connected")

        # --- A takes both occurrences: B is stopped until A has claimed them ----------------
        await stop_quietly(b, database)
        hold: MessageHold | None = None
        if stage != "slot":
            hold = fake.hold_messages(
                news, stage="before" if stage == "before" else "after", skip=1
            )
        due = time.time() + LEAD
        service = Announcements(writer, send_spacing=SPACING[stage])
        made = [
            (await service.create(draft(news, author.id, text, due)))[0]
            for text in ("First of two", "Second of two")
        ]
        job_ids = ",".join(str(m.job_id) for m in made)

        async def claimed() -> bool:
            rows = await database.query(
                f"SELECT run_count FROM scheduler_jobs WHERE id IN ({job_ids})"
            )
            if stage == "slot":  # the second waits for its slot unclaimed
                return sorted(r["run_count"] for r in rows) == [0, 1]
            return len(rows) == 2 and all(r["run_count"] >= 1 for r in rows)

        await wait(claimed, "A to claim both occurrences (slot: the first)")
        await b.resume()

        # --- A posted and recorded the first; the second is in progress -------------------
        async def first_done() -> bool:
            if not fake.bot_messages(news):
                return False
            rows = await database.query(DELIVERIES)
            return any(r["state"] == "sent" and r["job_state"] == "success" for r in rows)

        await wait(first_done, "A to post and record the first")
        # (The second may have been made already, its answer held: ``after``.)
        [recorded] = [r for r in await database.query(DELIVERIES) if r["state"] == "sent"]
        [first] = [m for m in fake.bot_messages(news) if m.nonce == recorded["nonce"]]
        nonces = {nonce_for(m.id, m.first_ts): m for m in made}
        assert first.nonce in nonces, (first, nonces)
        [nonce] = [n for n in nonces if n != first.nonce]
        second_job = nonces[nonce].job_id
        [job] = await database.query(
            f"SELECT state, run_count FROM scheduler_jobs WHERE id = {second_job}"
        )
        waiting = ("pending", 0) if stage == "slot" else ("in_progress", 1)
        assert (job["state"], job["run_count"]) == waiting, job

        async def second_row() -> dict[str, Any] | None:
            rows = {r["nonce"]: r for r in await database.query(DELIVERIES)}
            return rows.get(nonce)

        # --- stop A at the chosen point ---------------------------------------------------
        if stage == "slot":
            await stop_quietly(a, database)
            # A is stopped while the second waits for its slot, a minute away: unclaimed.
            [job] = await database.query(
                f"SELECT state, run_count FROM scheduler_jobs WHERE id = {second_job}"
            )
            assert (job["state"], job["run_count"]) == ("pending", 0), job
            assert len(sends()) == 1
            # The minute passes at once: the channel's slot opens. B learns of it as of any
            # commit that changed pending work: on SQLite at its sweep's pass, on PostgreSQL
            # from the wake-up such a commit sends (B's timer is a minute away; its sweep
            # makes no pass while it hears the others).
            await database.execute("UPDATE scheduler_pace SET next_start_ts = 0")
            if database.kind == "postgres":
                from scheduler.stores.postgres import DEFAULT_CHANNEL

                await database.execute(f"NOTIFY {DEFAULT_CHANNEL}, 'the test'")
        else:
            assert hold is not None
            await wait(lambda: hold.parked == 1, "A's second send to reach the fake")
            send_began = time.monotonic()
            assert hold.sends[0].nonce == nonce
            row = await second_row()
            assert row is not None, row
            assert row["state"] == "sending", row
            assert fake.remembers_nonce(news, nonce) is (stage == "after")
            await stop_quietly(a, database)
            if stage == "after":
                hold.release()  # the answer waits in A's socket: A is stopped

        # --- B takes the second over once A's lease lapsed, and posts it ------------------
        async def taken_over() -> bool:
            row = await second_row()
            return row is not None and row["state"] == "sent" and row["job_state"] == "success"

        await wait(taken_over, "B to take the second occurrence over and record it")
        row = await second_row()
        # B's run is the job's second (slot: its only one, A never held it).
        assert row is not None, row
        assert row["run_count"] == (1 if stage == "slot" else 2), row
        if stage == "before":
            assert hold is not None
            hold.release()  # A's send goes on now, and is answered with B's message
            await wait(lambda: fake.nonce_dedup_hits == 1, "A's held send to be answered")
        assert [m.nonce for m in fake.bot_messages(news)] == [first.nonce, nonce]

        # --- A goes on only once the fake has forgotten the nonce -------------------------
        fake.nonce_window = 0.0  # as if A had been stopped for longer than Discord remembers
        assert not fake.remembers_nonce(news, nonce)
        if stage != "slot":
            # A stays stopped until its send's timeout (the bot's NONCE_WINDOW / 3) has run
            # out, so that it wakes with the send timed out, as after a long pause.
            await asyncio.sleep(max(0.0, send_began + SEND_TIMEOUT + 0.5 - time.monotonic()))
        await a.resume()
        # A's run ends in one of two ways, both logged once at WARNING: cancelled or stopped
        # by the lease check ("run 1 discarded: lease lost"), or finished (it found the
        # occurrence recorded) and its outcome fenced out as stale.
        discarded = re.compile(
            rf"^\S+ \S+ WARNING +scheduler\.driver: (job {second_job} \(.*\) run 1 discarded: "
            r"lease lost \(.*\)|1 outcome\(s\) discarded: their lease had expired\b.*)$",
            re.M,
        )

        def a_settled() -> bool:
            # A's run has ended (or, the defect, A posted the announcement again).
            return bool(discarded.search(a.log) or len(fake.bot_messages(news)) > 2)

        if stage != "slot":  # (in the slot case A never ran the second: nothing to end)
            await wait(a_settled, "A's run of the second to end after the pause")

        messages = fake.bot_messages(news)
        final = await database.query(DELIVERIES)
        jobs = await database.query(
            "SELECT state, count(*) AS n FROM scheduler_jobs GROUP BY state ORDER BY state"
        )
        alive = [(p.label, p.proc.returncode) for p in bots]
        a_log, b_log = a.log, b.log

    # --- each announcement at the fake exactly once -----------------------------------------
    assert [(m.content, m.nonce) for m in messages] == [
        (first.content, first.nonce),
        (row["content"], nonce),
    ], f"{STAGES[stage]}: posted more than once\n{a_log}"
    assert fake.nonce_dedup_hits == (0 if stage == "slot" else 1)
    assert all(code is None for _, code in alive), alive

    # --- the database: each occurrence sent, with its one message ---------------------------
    by_nonce = {m.nonce: m for m in messages}
    assert len(final) == 2
    for d in final:
        msg = by_nonce[d["nonce"]]
        assert d["nonce"] == nonce_for(d["announcement_id"], d["fire_ts"])
        assert (d["state"], d["message_id"], d["job_state"]) == ("sent", msg.id, "success"), d
        assert (d["ann_state"], d["last_message_id"]) == ("sent", msg.id), d
        assert d["error"] is None, d
    assert jobs == [{"state": "success", "n": 2}], jobs

    # --- A's log: its run discarded once, no retry announced, no traceback -----------------
    if stage == "slot":
        assert f"job {second_job} " not in a_log, a_log  # A never held the second
    else:
        assert len(discarded.findall(a_log)) == 1, a_log
    assert "Traceback" not in a_log, a_log
    assert "Traceback" not in b_log, b_log
    if re.search(rf"job {second_job}\b.*will retry", a_log):  # last: all else holds
        raise AnnouncedRetry(f"A announced a retry of a job it no longer held:\n{a_log}")
