"""The delivery benchmark with real bot processes sharing one PostgreSQL database.

``bench/bot_bench.py --processes N --store postgres`` runs a burst through this module: the
bench process serves the fake Discord (limits enforced, per bot token, so the processes share
them as on Discord), creates a fresh database on the server of ``--dsn``, starts N
``python -m bot`` processes on it (the command ``scripts/run`` ends in), writes the
announcements through the bot's ``Announcements`` service on a scheduler of its own, and
drops the database at the end.

The bench's own scheduler never delivers: its clock stands still before anything is due, so
its driver claims nothing (every send is a bot's), and it is stopped before the due instant.
Which process sent what comes from the run history (``scheduler_runs.process``).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from bench._pg import fresh_database
from bot.announcements import SEND_FN, Announcements, SendArgs
from bot.app import bot_migrations
from bot.models import Limits
from bot.posting.delivery import SEND_RETRY
from scheduler import Registry, Scheduler
from scheduler.stores.postgres import PostgresStore
from scheduler.testing import FakeClock
from tests.fakediscord import FakeDiscord
from tests.fakediscord import Permissions as P
from tests.support.processes import Process, bot_env, procs, start_bot

WriteBurst = Callable[[Announcements, int, int, list[Any], int], Awaitable[tuple[int, float]]]
"""Writes a burst (service, guild id, author id, channels, count): its due instant and the
seconds the writes took."""

STARTUP = 60.0
"""How long the bots may take to connect (three processes importing discord.py on 2 cores)."""


@contextlib.asynccontextmanager
async def writer(dsn: str, start: float) -> AsyncIterator[Scheduler]:
    """A scheduler on ``dsn`` to write announcements as ``/schedule`` does, whose clock
    stands at ``start`` (before anything is due): its driver never claims a delivery. It
    applies the bot's migrations."""
    registry = Registry()

    # (as bot.posting registers it)
    @registry.action(SEND_FN, args=SendArgs, idempotent=True, retry=SEND_RETRY)
    async def never(ctx: Any, args: Any) -> None:
        raise AssertionError("the bench process must never deliver")

    sched = Scheduler(
        PostgresStore(dsn, listen=False, application_name="bench-writer"),
        registry,
        clock=FakeClock(start),
        migrations=[bot_migrations()],
    )
    await sched.start()
    try:
        yield sched
    finally:
        await sched.stop()


@dataclass
class Burst:
    """What one burst left: the fake (stopped, its records kept), the channels, the due
    instant, how long the writes took, and the successful sends per process."""

    fake: FakeDiscord
    channels: list[Any]
    due: float
    create_seconds: float
    per_process: dict[str, int]


async def one_run(
    n: int,
    channels: int,
    spacing: float,
    processes: int,
    base_dsn: str,
    limits: dict[str, Any],
    lower: float,
    write: WriteBurst,
) -> Burst:
    """One burst of ``n`` over ``channels`` (the fake's ``limits``), written by ``write``
    and delivered by ``processes`` bots (``lower``: the floor, to bound the wait)."""
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            fresh_database(base_dsn) as dsn,
            FakeDiscord(ratelimits=True, **limits) as fake,
            procs() as bots,
        ):
            guild = fake.add_guild(name="Bench", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES)
            admin = guild.add_member(name="admin")
            chans = [guild.add_channel(f"c{i:02d}") for i in range(channels)]
            async with writer(dsn, time.time()) as sched:  # migrations before any bot starts
                env = bot_env(
                    fake.env(),
                    database_url=dsn,
                    lease="30",  # the defaults a deployment runs with
                    sweep="30",
                    spacing=str(spacing),
                ) | {
                    "LOG_LEVEL": "WARNING",
                    # The fake's IDENTIFY window is 0: the second bot need not wait the 5 s of
                    # Discord's for its turn (nothing is measured before every bot is up).
                    "IDENTIFY_INTERVAL_SECONDS": "0",
                }
                for i in range(processes):
                    bots.append(await start_bot(env, Path(tmp), f"bot{i}"))
                await connected(fake, bots, processes)
                # A bench's burst is one server's, past a server's default limit.
                service = Announcements(
                    sched, send_spacing=spacing, limits=Limits(max_announcements=10**9)
                )
                due, create_seconds = await write(service, guild.id, admin.id, chans, n)
            await fake.wait_until(
                lambda: len(fake.bot_messages()) >= n,
                timeout=(due - time.time()) + 3 * lower + 60,
                what=f"{n} messages",
            )
            split = await recorded(dsn, n)
            if any(b.proc.returncode is not None for b in bots):
                raise SystemExit("a bot exited during the run:\n" + logs(bots))
            return Burst(fake, chans, float(due), create_seconds, split)


def logs(bots: list[Process]) -> str:
    return "\n".join(f"--- {b.label} ---\n{b.log[-4000:]}" for b in bots)


async def connected(fake: FakeDiscord, bots: list[Process], n: int) -> None:
    try:
        await fake.wait_until(
            lambda: (
                len(fake.gateway.connected_sessions) == n
                and fake.get_command("schedule") is not None
            ),
            timeout=STARTUP,
            what=f"{n} bots connected",
        )
    except TimeoutError:
        raise SystemExit(f"the bots did not come up:\n{logs(bots)}") from None


async def recorded(dsn: str, n: int, within: float = 60.0) -> dict[str, int]:
    """Wait until every delivery has its message id recorded and every send job's run its
    outcome (it is recorded after the delivery's row); return the successful sends per
    process, from the run history."""
    conn = await asyncpg.connect(dsn)
    try:
        deadline = time.monotonic() + within
        while True:
            done = await conn.fetchval(
                "SELECT count(*) FROM bot_deliveries "
                "WHERE state = 'sent' AND message_id IS NOT NULL"
            )
            rows = await conn.fetch(
                "SELECT process, count(*) AS n FROM scheduler_runs "
                "WHERE fn = $1 AND outcome = 'success' GROUP BY process ORDER BY process",
                SEND_FN,
            )
            split = {str(r["process"]): int(r["n"]) for r in rows}
            if int(done) >= n and sum(split.values()) >= n:
                return split
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"only {done} of {n} deliveries and {sum(split.values())} runs were recorded"
                )
            await asyncio.sleep(0.05)
    finally:
        await conn.close()
