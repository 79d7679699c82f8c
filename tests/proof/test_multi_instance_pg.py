"""Several bot instances share one schedule on PostgreSQL: each occurrence is posted once.

Three ``python -m bot`` processes run on one fresh PostgreSQL database against one fake
Discord. The test process writes the announcements through the bot's own ``Announcements``
service (the code ``/schedule`` ends in) while the bots run: one-offs due evenly over a
window, and recurring ones every few seconds for the whole window. Midway, one bot is
SIGKILLed and a new one started in its place; the other two take over its deliveries (at once:
its database session is gone, so its leases are).

"Posted exactly once" means, for a one-off, one message for the announcement; for a
recurring announcement, one message for each *occurrence*: each fire time for which the
scheduler created a job (one per ``"<schedule>:<fire_ts>"``, however many instances tick).
A fire time the overlap policy skipped (the previous occurrence still running) or the
catch-up policy dropped is counted by the schedule and is not an occurrence; the test allows
no more missing fire times than those counters account for.

Checked at the end, with every instance still running: at the fake, one message per
``(announcement, occurrence)`` (told apart by the deterministic nonce, which carries both),
no message without a delivery row, each in the announcement's channel with its text; in the
database, every delivery ``sent`` with that message's id, every one-off ``sent``, no job
pending, in progress or failed. The fake answers every send a moment after creating the
message, so the kill lands on sends in flight: a run killed after the message existed is
re-sent with the same nonce and answered with the first message (``nonce_dedup_hits``).

The fake's rate limits are off (what they do to a burst is bench/bot_bench.py's subject).
Sizes: 300 announcements (290 one-offs over 10 s, 10 recurring every 3 s); with
``CRIER_FULL=1``, 1,000 (980 one-offs over 20 s, 20 recurring every 3 s).
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import math
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.announcements import SEND_FN, Announcement, Announcements, Draft, SendArgs
from bot.app import bot_migrations
from bot.parsing import RepeatRule
from bot.posting.delivery import SEND_RETRY, nonce_for
from scheduler import Registry, Scheduler
from scheduler.testing import FakeClock
from tests.fakediscord import FakeDiscord
from tests.fakediscord import Permissions as P
from tests.fakediscord.state import Channel
from tests.proof.harness import PROOF_LIMITS, pg_work_settled
from tests.support.processes import Process, bot_env, procs, start_bot, until

asyncpg = pytest.importorskip("asyncpg")

from scheduler.stores.postgres import PostgresStore  # noqa: E402  (after the importorskip)
from tests.scheduler.pg import fresh_test_database  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

FULL = os.environ.get("CRIER_FULL", "").strip() == "1"

INSTANCES = 3
ONE_OFFS, RECURRING = (980, 20) if FULL else (290, 10)
GUILDS = 5
CHANNELS = 50
SPAN = 20.0 if FULL else 10.0
"""The one-offs are due evenly over this many seconds."""
EVERY = 3.0
"""The recurring announcements' period."""
LEAD = 10.0 if FULL else 6.0
"""Seconds from the first write to the first due time (writing takes ~3-7 ms each)."""
LEASE = 6.0
"""The job lease. A SIGKILLed instance's leases are taken at once (its session is gone); the
lease only has to outlast a loaded machine's delays between heartbeats (2 s did not: on a CI
run at a load near 7 one delivery's run was reclaimed four times and the wait ran out)."""
SWEEP = 0.5
SEND_DELAY = 1.0
"""The fake answers each send this long after creating the message: at 30-50 sends a second,
each instance has about ten in flight whenever it is killed."""
DEADLINE = 45.0

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


# --- processes -------------------------------------------------------------------------------


@pytest.fixture
async def dsn() -> AsyncIterator[str]:
    """A fresh database of its own, dropped afterwards."""
    async with fresh_test_database("the multi-instance proof needs a PostgreSQL server") as dsn:
        yield dsn


@pytest.fixture
async def bots() -> AsyncIterator[list[Process]]:
    """Every bot process the test starts; all are killed and reaped afterwards."""
    async with procs() as started:
        yield started


@pytest.fixture
async def writer(dsn: str) -> AsyncIterator[Scheduler]:
    """The test's own scheduler on the same database, to write announcements as /schedule
    does. Its clock stands still at the start, before anything is due, so its driver never
    claims (or ticks) anything: every delivery is the bots' doing. It applies the migrations
    before any bot starts."""
    registry = Registry()

    # (as bot.posting registers it)
    @registry.action(SEND_FN, args=SendArgs, idempotent=True, retry=SEND_RETRY)
    async def never(ctx: Any, args: Any) -> None:
        raise AssertionError("the test process must never deliver")

    sched = Scheduler(
        PostgresStore(dsn, listen=False, max_size=GUILDS, application_name="test-writer"),
        registry,
        clock=FakeClock(time.time()),
        migrations=[bot_migrations()],
    )
    await sched.start()
    try:
        yield sched
    finally:
        await sched.stop()


# --- the world -------------------------------------------------------------------------------


@dataclass
class Plan:
    channels: list[Channel]
    """Spread over the guilds: channel ``i`` is in guild ``i % GUILDS``."""
    authors: dict[int, int]
    """An author per guild."""
    start: float
    """The first one-off's due time."""


def draft(plan: Plan, i: int, content: str, first: float, repeat: RepeatRule | None) -> Draft:
    channel = plan.channels[i % len(plan.channels)]
    guild_id = channel.guild_id
    assert guild_id is not None
    return Draft(
        guild_id=guild_id,
        channel_id=channel.id,
        author_id=plan.authors[guild_id],
        content=content,
        mention=None,
        allowed_mentions={"everyone": False, "roles": [], "users": True},
        first=datetime.fromtimestamp(first, UTC),
        timezone="UTC",
        repeat=repeat,
    )


async def write_announcements(service: Announcements, plan: Plan) -> list[Announcement]:
    """The recurring ones (their first fires staggered over one period at the window's
    start) and the one-offs (due evenly over the window), in due order within each guild,
    one writer per guild (creates in one guild take their numbers one after the other)."""
    every = RepeatRule("interval", None, timedelta(seconds=EVERY), f"every {EVERY:g} seconds")
    drafts = [
        draft(plan, j, f"recurring {j}", plan.start + EVERY * j / RECURRING, every)
        for j in range(RECURRING)
    ] + [
        draft(plan, i, f"one-off {i}", plan.start + SPAN * i / ONE_OFFS, None)
        for i in range(ONE_OFFS)
    ]
    per_guild: dict[int, list[Draft]] = collections.defaultdict(list)
    for d in sorted(drafts, key=lambda d: d.first):
        per_guild[d.guild_id].append(d)

    async def write(ds: list[Draft]) -> list[Announcement]:
        return [(await service.create(d))[0] for d in ds]

    done = await asyncio.gather(*(write(ds) for ds in per_guild.values()))
    return [a for written in done for a in written]


async def sleep_until(ts: float) -> None:
    await asyncio.sleep(max(0.0, ts - time.time()))


async def query(conn: Any, sql: str) -> list[dict[str, Any]]:
    return [dict(r) for r in await conn.fetch(sql)]


# --- the proof -------------------------------------------------------------------------------


@pytest.mark.timeout(240 if FULL else 120)
async def test_three_instances_post_every_occurrence_once_across_a_sigkill(  # noqa: C901 (one scenario, read top to bottom)
    dsn: str, writer: Scheduler, bots: list[Process], tmp_path: Path
) -> None:
    async with FakeDiscord(ratelimits=False) as fake:
        guilds = [
            fake.add_guild(name=f"Scale {g}", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES)
            for g in range(GUILDS)
        ]
        channels = [guilds[i % GUILDS].add_channel(f"c{i:02d}") for i in range(CHANNELS)]
        authors = {g.id: g.add_member(name="admin").id for g in guilds}
        # One more one-off, due midway in a channel of its own: the fake makes its message and
        # holds the answer, and the instance whose run sent it is the one killed, so the kill
        # interrupts a delivery by construction, whenever it comes.
        target_channel = guilds[0].add_channel("target")
        held = fake.hold_messages(target_channel, stage="after")
        # Every send is answered SEND_DELAY after the message exists: a kill catches some.
        fake.faults.add(
            method="POST",
            path_regex=r"/channels/\d+/messages",
            times=10**9,
            after_effect=True,
            delay=SEND_DELAY,
        )
        env = bot_env(fake.env(), database_url=dsn, lease=str(LEASE), sweep=str(SWEEP), spacing="0")

        def logs() -> str:
            return "\n".join(f"--- bot {i} ---\n{b.log[-6000:]}" for i, b in enumerate(bots))

        async def connected(n: int) -> None:
            try:
                await fake.wait_until(
                    lambda: len(fake.gateway.connected_sessions) == n,
                    timeout=DEADLINE,
                    what=f"{n} bot(s) connected",
                )
            except TimeoutError:
                raise AssertionError(f"the bots did not come up:\n{logs()}") from None

        for i in range(INSTANCES):
            bots.append(await start_bot(env, tmp_path, f"bot{i}"))
        await connected(INSTANCES)

        # Written while the three instances run: each commit's NOTIFY re-arms their timers.
        plan = Plan(channels, authors, start=math.ceil(time.time() + LEAD))
        t0 = time.time()
        service = Announcements(writer, send_spacing=0.0, limits=PROOF_LIMITS)
        made = await write_announcements(service, plan)
        target_plan = Plan([target_channel], authors, start=plan.start)
        target_draft = draft(target_plan, 0, "kill target", plan.start + SPAN / 2, None)
        [target, *_] = await service.create(target_draft)
        made.append(target)
        written_in = time.time() - t0  # (late writes only make their deliveries late)

        # The target's send is at the fake, unanswered (midway through the window, or later
        # on a slow machine): SIGKILL the instance running it and start another in its place.
        await fake.wait_until(
            lambda: held.parked == 1, timeout=SPAN + DEADLINE, what="the target's send"
        )
        conn = await asyncpg.connect(dsn)
        try:
            holder = await conn.fetchval(
                "SELECT j.lease_holder FROM bot_deliveries d JOIN scheduler_jobs j "
                "ON j.id = d.job_id WHERE d.nonce = $1 AND j.state = 'in_progress'",
                str(held.sends[0].nonce),
            )
        finally:
            await conn.close()
        [victim] = [b for b in bots if f":{b.pid}:" in str(holder)]
        victim.proc.kill()
        killed_at = time.time()
        assert await victim.proc.wait() == -9
        held.release()  # its answer goes to a closed connection
        in_flight = len(
            [m for m in fake.bot_messages() if m.created_at > killed_at - SEND_DELAY]
        )  # messages whose answer was still held at the kill (by any instance)
        await fake.wait_until(
            lambda: len(fake.gateway.connected_sessions) == INSTANCES - 1,
            timeout=DEADLINE,
            what="the killed bot's gateway to close",
        )
        bots.append(await start_bot(env, tmp_path, "bot-restarted"))
        await connected(INSTANCES)

        # Let the recurring ones run for the whole window, and wait until every fire time in
        # it has been ticked (an occurrence job, or counted as skipped or missed), however
        # late a loaded machine ticks; then cancel them as /cancel does.
        await sleep_until(plan.start + SPAN + EVERY)
        recurring = [a for a in made if a.recurring]
        counters: dict[str, Any] = {}

        async def every_fire_time_ticked() -> bool:
            c = await asyncpg.connect(dsn)
            try:
                rows = await c.fetch(
                    "SELECT schedule_name, fire_ts FROM scheduler_jobs "
                    "WHERE schedule_name IS NOT NULL"
                )
            finally:
                await c.close()
            counters.clear()
            counters.update({s.name: s for s in await writer.schedules.list()})
            fired = collections.defaultdict(set)
            for r in rows:
                fired[r["schedule_name"]].add(r["fire_ts"])
            for a in recurring:
                info = counters[a.schedule_name]
                grid = [a.first_ts + EVERY * k for k in range(int(SPAN / EVERY) + 1)]
                lost = [t for t in grid if t not in fired[a.schedule_name]]
                if len(lost) > info.skipped + info.missed:
                    return False
            return True

        try:
            await until(every_fire_time_ticked, DEADLINE, "every fire time of the window ticked")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{logs()}") from None
        for a in recurring:
            await Announcements(writer, send_spacing=0.0).cancel(a.guild_id, a.local_id)

        conn = await asyncpg.connect(dsn)
        try:
            try:
                await until(
                    lambda: pg_work_settled(conn), DEADLINE, "every job to finish", interval=0.1
                )
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{logs()}") from None
            anns = {
                r["id"]: r
                for r in await query(
                    conn,
                    "SELECT id, channel_id, content, first_ts, repeat_kind, state, failure, "
                    "last_message_id, schedule_name FROM bot_announcements",
                )
            }
            deliveries = await query(
                conn,
                "SELECT announcement_id, fire_ts, job_id, nonce, state, attempts, message_id, "
                "error, late_by FROM bot_deliveries",
            )
            jobs = await query(
                conn,
                "SELECT j.id, j.state, j.run_count, j.schedule_name, j.fire_ts, a.result, "
                "a.error FROM scheduler_jobs j LEFT JOIN scheduler_job_args a ON a.job_id = j.id",
            )
        finally:
            await conn.close()

        messages = fake.bot_messages()
        ok = [b for b in bots if b is not victim]
        assert all(b.proc.returncode is None for b in ok), logs()

    # --- exactly once, at the fake ----------------------------------------------------------
    assert len(anns) == ONE_OFFS + 1 + RECURRING
    # First, any delivery not sent, with why (a count mismatch below says less).
    not_sent = [d for d in deliveries if d["state"] != "sent"]
    assert not not_sent, f"deliveries not sent: {not_sent[:5]}\n{logs()}"
    per_nonce = collections.Counter(m.nonce for m in messages)
    duplicates = {n: c for n, c in per_nonce.items() if c != 1}
    assert not duplicates, f"occurrences posted more than once: {duplicates}"
    by_nonce = {m.nonce: m for m in messages}
    by_occurrence = {(d["announcement_id"], d["fire_ts"]): d for d in deliveries}
    assert len(by_occurrence) == len(deliveries)
    delivered_nonces = {d["nonce"] for d in deliveries}
    orphans = [m for m in messages if m.nonce not in delivered_nonces]
    assert not orphans, f"messages without a delivery row: {orphans[:5]}"
    missing = [d for d in deliveries if d["nonce"] not in by_nonce]
    assert not missing, f"sent deliveries whose message the fake lacks: {missing[:5]}\n{logs()}"
    assert len(messages) == len(deliveries)

    # --- every delivery recorded, with the message it made ----------------------------------
    for d in deliveries:
        ann = anns[d["announcement_id"]]
        assert d["nonce"] == nonce_for(d["announcement_id"], d["fire_ts"])
        msg = by_nonce[d["nonce"]]
        assert (msg.id, msg.channel_id, msg.content) == (
            d["message_id"],
            ann["channel_id"],
            ann["content"],
        ), d

    # --- every one-off posted, once -----------------------------------------------------------
    one_offs = [a for a in anns.values() if a["repeat_kind"] is None]
    assert len(one_offs) == ONE_OFFS + 1
    for a in one_offs:
        d = by_occurrence.get((a["id"], a["first_ts"]))
        assert d is not None, f"one-off {a['content']!r} has no delivery"
        assert a["state"] == "sent", a
        assert a["last_message_id"] == d["message_id"], a
    assert len([d for d in deliveries if anns[d["announcement_id"]]["repeat_kind"] is None]) == (
        ONE_OFFS + 1
    )

    # --- every recurring occurrence posted, once; no fire time lost unaccounted ---------------
    jobs_of: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for j in jobs:
        if j["schedule_name"] is not None:
            jobs_of[j["schedule_name"]].append(j)
    occurrences = 0
    skipped_or_missed = 0
    for a in (a for a in anns.values() if a["repeat_kind"] is not None):
        name = a["schedule_name"]
        assert a["state"] == "canceled", a
        info = counters[name]
        skipped_or_missed += info.skipped + info.missed
        fired = {j["fire_ts"] for j in jobs_of[name]}
        for j in jobs_of[name]:
            steps = (j["fire_ts"] - a["first_ts"]) / EVERY
            assert abs(steps - round(steps)) < 1e-6, f"{name}: off the grid: {j}"
            if j["state"] == "canceled":  # pending when the announcement was canceled
                continue
            assert j["state"] == "success", j
            if '"skipped"' in (j["result"] or ""):  # ran after the cancel: nothing to post
                assert (a["id"], j["fire_ts"]) not in by_occurrence
                continue
            assert (a["id"], j["fire_ts"]) in by_occurrence, f"{name}: {j} posted nothing"
            occurrences += 1
        grid = [a["first_ts"] + EVERY * k for k in range(int(SPAN / EVERY) + 1)]
        lost = [t for t in grid if t not in fired]
        assert len(lost) <= info.skipped + info.missed, (name, lost, info)
        assert len(grid) >= 3
    recurring_deliveries = len(deliveries) - ONE_OFFS - 1
    assert occurrences == recurring_deliveries

    # --- the scheduler is settled, and the kill really interrupted work -------------------------
    states = collections.Counter(j["state"] for j in jobs)
    assert set(states) <= {"success", "canceled"}, states
    assert states["canceled"] <= RECURRING  # at most one pending occurrence each
    rerun = [j for j in jobs if j["run_count"] > 1]
    [target_job] = [j for j in jobs if j["id"] == target.job_id]
    assert target_job["run_count"] >= 2, target_job  # the killed run, taken over
    assert fake.nonce_dedup_hits >= 1  # its re-send was answered with the held message

    lateness = sorted(d["late_by"] for d in deliveries if d["late_by"] is not None)
    print(
        f"\n{len(anns)} announcements ({ONE_OFFS} one-off, {RECURRING} recurring every "
        f"{EVERY:g}s) written in {written_in:.1f}s; {len(messages)} messages for "
        f"{len(deliveries)} occurrences ({occurrences} recurring; {skipped_or_missed} fire "
        f"times skipped by overlap/catch-up); {len(rerun)} run(s) taken over after the "
        f"SIGKILL ({in_flight} answers held at the kill, by any instance), "
        f"{fake.nonce_dedup_hits} re-send(s) answered by nonce; "
        f"lateness p50 {lateness[len(lateness) // 2]:.2f}s, max {lateness[-1]:.2f}s"
    )


# --- one channel's spacing, across the instances ----------------------------------------------

PACED = 12
"""One-offs due at (almost) the same instant in one channel."""
PACED_SPACING = 0.5
"""SEND_SPACING_SECONDS of every instance (and of the writer, whose jobs carry it)."""
PACED_LEASE = "30"
PACED_SWEEP = "600"
"""No sweep runs after the start-up ones (every deadline is far shorter): each slot's job
can only be started by a timer or a NOTIFY, never found by a sweep."""


@pytest.mark.timeout(120)
async def test_three_instances_keep_one_channels_spacing(
    dsn: str, writer: Scheduler, bots: list[Process], tmp_path: Path
) -> None:
    """Three instances, a burst due at once in one channel: each announcement is posted
    once, the claims start them in due order, and no two start within the spacing of each
    other, whichever instance claimed them (each occurrence job carries the channel's pace:
    the scheduler starts one per slot across every instance, instead of each process spacing
    only its own). The starts are the claims' own times from the run history (when each took
    the channel's slot), not when the sends reached the fake: how long a loaded machine takes
    from a claim to the request is not what the spacing promises."""
    async with FakeDiscord(ratelimits=False) as fake:
        guild = fake.add_guild(name="Paced", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES)
        news = guild.add_channel("news")
        author = guild.add_member(name="admin").id
        env = bot_env(
            fake.env(),
            database_url=dsn,
            lease=PACED_LEASE,
            sweep=PACED_SWEEP,
            spacing=str(PACED_SPACING),
        )
        for i in range(INSTANCES):
            bots.append(await start_bot(env, tmp_path, f"bot{i}"))
        await fake.wait_until(
            lambda: len(fake.gateway.connected_sessions) == INSTANCES,
            timeout=DEADLINE,
            what=f"{INSTANCES} bots connected",
        )
        plan = Plan([news], {guild.id: author}, start=math.ceil(time.time() + 2.0))
        service = Announcements(writer, send_spacing=PACED_SPACING, limits=PROOF_LIMITS)
        made = [  # due 10 ms apart: one due order, all due within 0.12 s
            (await service.create(draft(plan, 0, f"paced {i:02d}", plan.start + i * 0.01, None)))[0]
            for i in range(PACED)
        ]

        conn = await asyncpg.connect(dsn)
        try:
            await until(
                lambda: pg_work_settled(conn), DEADLINE, "every job to finish", interval=0.1
            )
            states = await query(conn, "SELECT state, count(*) AS n FROM bot_deliveries GROUP BY 1")
            claims = await query(
                conn,
                f"SELECT job_id, started_at FROM scheduler_runs WHERE fn = '{SEND_FN}' "
                "ORDER BY started_at, id",
            )
        finally:
            await conn.close()
        messages = fake.bot_messages(news)
        assert all(b.proc.returncode is None for b in bots)

    assert states == [{"state": "sent", "n": PACED}]
    assert sorted(m.content for m in messages) == [f"paced {i:02d}" for i in range(PACED)]
    first_claims = list(dict.fromkeys(c["job_id"] for c in claims))
    assert first_claims == [a.job_id for a in made], claims  # claimed in due order
    gaps = [b["started_at"] - a["started_at"] for a, b in itertools.pairwise(claims)]
    assert min(gaps) >= PACED_SPACING - 1e-6, gaps  # (1e-6: float sums of slot and spacing)
    assert fake.count_429 == 0
