"""Interaction latency under a burst: how fast the bot answers while thousands fall due.

    python bench/interaction_bench.py [--quick] [--runs N] [--sizes 0,1000,5000,10000]
                                      [--store sqlite|postgres] [--profile PATH] [--json PATH]

What a big server's admin sees at 09:00, when a "daily at 09:00" falls due in thousands of
servers at once: for each size N (0 is the idle baseline), a fresh bot (``bot.app.Crier``:
real discord.py client, the real SystemClock, a fresh database) has N one-off announcements
due at one instant, written through the ``Announcements`` service before they come due. From
that instant on, 200 interactions (``/schedule`` and ``/list`` alternating, one every 50 ms,
by the admin of the first guild) reach the bot through the fake Discord's gateway, while the
bot delivers the burst against the fake with Discord's limits enforced (5 message creates per
channel per 5 s, 50 requests per second globally; interaction callbacks are exempt from the
global limit, as on Discord).

Where the burst goes: 50 channels over 10 guilds (5 each). 50
channels is the most a bot keeping the default spacing (1.5 s) can post to at once without a
429 from the global limit (every channel's first send goes out at the due instant), so it is
the heaviest burst that is still clean; the floor is then bound by the spacing, (k - 1) * s
with k = N / 50 (bot_bench's ``minimum``), and every due occurrence is real work for the bot:
a pending job claimed when its channel's slot opens, its delivery bookkeeping before and
after the send, its completion. The admin works in a guild of their own, the same at every
size (#admin, with 20 announcements due in two hours, so ``/list`` has a page to show; each
``/schedule`` adds one more, also in two hours): what changes between sizes is the load alone.

Measured per interaction: the time from the fake's dispatch of INTERACTION_CREATE to the
arrival of the bot's first callback at the fake (its answer, or a deferral); unanswered =
no accepted callback within Discord's 3 s (the fake refuses a later one with 10062). Per
size: p50 / p99 / max over the 200, the count unanswered, the ratio of p99 to the idle p99,
and the burst's last delivery after the due instant against its floor. Median with min-max
over ``--runs``. ``--profile PATH`` writes a cProfile of the burst's first 20 s (the largest
size, first run) for ``python -m pstats``.

The fake serves in the bot's own process and event loop (as in every bench and test here),
so its own work (about 33 sends a second, 20 interactions a second) competes with the bot's:
the figures are pessimistic, not flattering. The injection lag (how late, by the loop, the
bench dispatched an interaction against its 50 ms timetable) is reported as a check.

Aim (issue 12): with 10,000 due at once, p99 < 250 ms and none unanswered, and the burst
within 5% of its floor.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import logging
import math
import os
import sys
import tempfile
import time
import warnings
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

with warnings.catch_warnings():  # discord.py imports the deprecated stdlib audioop
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord

from bench._stats import percentile, summarize
from bench.bot_bench import (
    CHANNEL_LIMIT,
    CHANNEL_WINDOW,
    GLOBAL_LIMIT,
    GLOBAL_WINDOW,
    minimum,
    recorded,
)
from bot.announcements import Draft
from bot.app import Crier
from bot.config import Settings
from tests.fakediscord import FakeDiscord, InteractionHandle
from tests.fakediscord import Permissions as P
from tests.fakediscord.state import Channel, Guild, Member

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

INTERACTIONS = 200
EVERY = 0.050
"""Seconds between two interactions."""
ACK_DEADLINE = 3.0
"""Discord's deadline for the first response."""
GUILDS, CHANNELS = 10, 50
HOME_ANNOUNCEMENTS = 20
PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"


@dataclass
class Run:
    announcements: int
    interactions: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    unanswered: int
    deferred: int
    injection_lag_max_ms: float
    last_after_due: float | None
    minimum: float | None
    ratio_to_floor: float | None
    messages: int
    count_429: int
    create_seconds: float
    latencies_ms: list[float | None]
    """Per interaction, in dispatch order (None: unanswered)."""


@dataclass
class World:
    fake: FakeDiscord
    guilds: list[Guild]
    chans: list[Channel]
    admin: Member
    admin_channel: Channel


def build_world(fake: FakeDiscord, guilds: int, channels: int) -> World:
    perms = P.VIEW_CHANNEL | P.SEND_MESSAGES
    gs = [fake.add_guild(name=f"Guild {i}", bot_permissions=perms) for i in range(guilds)]
    chans = [gs[i % guilds].add_channel(f"c{i:03d}") for i in range(channels)]
    # The admin's own server, the same at every size: what changes is the load only.
    home = fake.add_guild(name="Home", bot_permissions=perms)
    managers = home.add_role("admins", P.MANAGE_GUILD)
    admin = home.add_member(name="admin", roles=[managers])
    admin_channel = home.add_channel("admin")
    return World(fake, [home, *gs], chans, admin, admin_channel)


@asynccontextmanager
async def database(store: str, tmp: Path) -> AsyncIterator[str]:
    """A fresh database URL: a file in ``tmp``, or a PostgreSQL database created and
    dropped around the run (DSN from CRIER_TEST_POSTGRES_DSN)."""
    if store == "sqlite":
        yield f"sqlite:///{tmp / 'crier.db'}"
        return
    import asyncpg

    base = os.environ.get("CRIER_TEST_POSTGRES_DSN", PG_DSN)
    name = f"crier_interact_{os.getpid()}_{time.monotonic_ns()}"
    admin = await asyncpg.connect(base)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        yield base.rsplit("/", 1)[0] + "/" + name
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def one_run(
    n: int,
    store: str,
    spacing: float,
    profile: Path | None,
    guilds: int,
    channels: int,
    wait_burst: bool = True,
) -> Run:
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            database(store, Path(tmp)) as url,
            FakeDiscord(
                ratelimits=True,
                message_limit=CHANNEL_LIMIT,
                message_per=CHANNEL_WINDOW,
                global_limit=GLOBAL_LIMIT,
                global_per=GLOBAL_WINDOW,
                interaction_ack_timeout=ACK_DEADLINE,
            ) as fake,
        ):
            world = build_world(fake, guilds, channels)
            settings = Settings(
                token=fake.token,
                database_url=url,
                api_base=fake.api_base,
                gateway_url=fake.gateway_url,
                send_spacing=spacing,
                # A few members fire the whole burst, in far less than a minute.
                commands_per_minute=1_000_000,
                max_announcements=10**9,
            )
            crier = Crier(settings, guild_ready_timeout=0.05)  # the real SystemClock
            await crier.start()
            try:
                return await measure(crier, world, n, spacing, profile, wait_burst)
            finally:
                await crier.close()
                discord.http.Route.BASE = "https://discord.com/api/v10"


async def seed(crier: Crier, world: World, n: int) -> tuple[float, float]:
    """``n`` announcements due at one instant (round robin over the channels); returns the
    instant and how long writing them took."""
    later = datetime.fromtimestamp(time.time() + 7200, UTC)
    for i in range(HOME_ANNOUNCEMENTS):
        await crier.bot.announcements.create(draft(world.admin_channel, world, f"home {i}", later))
    due = math.ceil(time.time() + 3.0 + n * 0.004)
    first = datetime.fromtimestamp(due, UTC)
    started = time.perf_counter()
    for i in range(n):
        chan = world.chans[i % len(world.chans)]
        await crier.bot.announcements.create(draft(chan, world, f"announcement {i}", first))
    took = time.perf_counter() - started
    if n and time.time() >= due:
        raise SystemExit(f"creating {n} announcements took {took:.1f}s: past due")
    return due, took


def draft(chan: Channel, world: World, content: str, first: datetime) -> Draft:
    if chan.guild is None:
        raise RuntimeError("a guild channel has its guild")
    return Draft(
        guild_id=chan.guild.id,
        channel_id=chan.id,
        author_id=world.admin.user.id,
        content=content,
        mention=None,
        allowed_mentions={"everyone": False, "roles": [], "users": True},
        first=first,
        timezone="UTC",
        repeat=None,
    )


async def interact(world: World) -> tuple[list[InteractionHandle], list[float]]:
    """200 interactions, one every 50 ms from now, /schedule and /list alternating, each
    dispatched on its own timetable (none waits for an earlier one's answer)."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    guild = world.guilds[0]
    lags: list[float] = []

    async def one(i: int) -> InteractionHandle:
        await asyncio.sleep(max(0.0, start + i * EVERY - loop.time()))
        lags.append(loop.time() - (start + i * EVERY))
        if i % 2 == 0:
            return await world.fake.invoke_command(
                guild,
                world.admin_channel,
                world.admin,
                "schedule",
                {"when": "in 2 hours", "message": f"interactive {i}"},
            )
        return await world.fake.invoke_command(guild, world.admin_channel, world.admin, "list")

    handles = await asyncio.gather(*(one(i) for i in range(INTERACTIONS)))
    # Every one answered, or past Discord's deadline (a later callback is refused).
    await world.fake.wait_until(
        lambda: all(
            h.callbacks or time.monotonic() - h.created_at > ACK_DEADLINE + 0.5 for h in handles
        ),
        timeout=ACK_DEADLINE + 5,
        what="every interaction answered or too late",
    )
    return list(handles), lags


def first_response(h: InteractionHandle) -> float | None:
    """Seconds from dispatch to the first accepted callback (None: unanswered)."""
    cb = h.callback
    return None if cb is None else cb.at - h.created_at


async def measure(
    crier: Crier, world: World, n: int, spacing: float, profile: Path | None, wait_burst: bool
) -> Run:
    fake = world.fake
    due, create_seconds = await seed(crier, world, n)
    await asyncio.sleep(max(0.0, due - time.time()))
    prof = cProfile.Profile() if profile is not None else None
    if prof is not None:
        prof.enable()
    handles, lags = await interact(world)
    times = [t for t in map(first_response, handles) if t is not None]
    unanswered = len(handles) - len(times)
    deferred = sum(1 for h in handles if h.deferred)
    if prof is not None:
        await asyncio.sleep(max(0.0, due + 20 - time.time()))
        prof.disable()
        if profile is None:
            raise RuntimeError("the profile was asked for")
        prof.dump_stats(str(profile))
    last = lower = ratio = None
    if n and wait_burst:
        lower, _ = minimum(n, len(world.chans), spacing)
        await fake.wait_until(
            lambda: len(burst_messages(world)) >= n,
            timeout=(due - time.time()) + 3 * lower + 60,
            what=f"{n} messages",
        )
        await recorded(crier, n)
        last = max(m.created_at for m in burst_messages(world)) - due
        ratio = last / lower if lower else float("nan")
    return Run(
        announcements=n,
        interactions=len(handles),
        p50_ms=percentile(times, 50) * 1000 if times else math.inf,
        p99_ms=percentile(times, 99) * 1000 if times else math.inf,
        max_ms=max(times) * 1000 if times else math.inf,
        unanswered=unanswered,
        deferred=deferred,
        injection_lag_max_ms=max(lags) * 1000,
        last_after_due=last,
        minimum=lower,
        ratio_to_floor=ratio,
        messages=len(burst_messages(world)),
        count_429=fake.count_429,
        create_seconds=create_seconds,
        latencies_ms=[
            None if t is None else round(t * 1000, 2) for t in map(first_response, handles)
        ],
    )


def burst_messages(world: World) -> list[Any]:
    """The burst's messages (the admin's channel only gets what /schedule schedules)."""
    return [m for m in world.fake.bot_messages() if m.channel_id != world.admin_channel.id]


def show(run: Run) -> None:
    burst = (
        f"; burst last {run.last_after_due:.2f}s after due, floor {run.minimum:.2f}s, "
        f"ratio {run.ratio_to_floor:.3f}, 429s {run.count_429}"
        if run.last_after_due is not None
        else ""
    )
    print(
        f"  N={run.announcements}: first response p50 {run.p50_ms:.1f} ms, p99 "
        f"{run.p99_ms:.1f} ms, max {run.max_ms:.1f} ms; unanswered {run.unanswered}/"
        f"{run.interactions} (deferred {run.deferred}); injection lag max "
        f"{run.injection_lag_max_ms:.1f} ms{burst} (seeded in {run.create_seconds:.1f}s)",
        flush=True,
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="sizes 0 and 250, one run")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument(
        "--sizes", default=None, help="comma-separated, 0 = idle (default 0,1000,5000,10000)"
    )
    p.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--spacing", type=float, default=1.5, help="SEND_SPACING_SECONDS")
    p.add_argument("--guilds", type=int, default=GUILDS)
    p.add_argument("--channels", type=int, default=CHANNELS)
    p.add_argument("--profile", type=Path, default=None)
    p.add_argument(
        "--interactions-only",
        action="store_true",
        help="stop after the interactions (no burst floor): for profiling and iterating",
    )
    p.add_argument("--json", type=Path, default=None)
    opts = p.parse_args()
    sizes = (
        [int(s) for s in opts.sizes.split(",")]
        if opts.sizes
        else ([0, 250] if opts.quick else [0, 1000, 5000, 10000])
    )
    if 0 not in sizes:
        sizes = [0, *sizes]  # the ratio needs the idle baseline
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    print(
        f"{INTERACTIONS} interactions (/schedule, /list alternating, one every "
        f"{EVERY * 1000:.0f} ms) from the due instant; bursts over {opts.channels} channels in "
        f"{opts.guilds} guilds; spacing {opts.spacing}s; store {opts.store}",
        flush=True,
    )
    by_size: dict[int, list[Run]] = {n: [] for n in sizes}
    biggest = max(sizes)
    for r in range(opts.runs):
        print(f"run {r + 1}/{opts.runs}:", flush=True)
        for n in sizes:
            prof = opts.profile if (r == 0 and n == biggest) else None
            run = asyncio.run(
                one_run(
                    n,
                    opts.store,
                    opts.spacing,
                    prof,
                    opts.guilds,
                    opts.channels,
                    wait_burst=not opts.interactions_only,
                )
            )
            show(run)
            by_size[n].append(run)
    idle_p99 = summarize(r.p99_ms for r in by_size[0])
    print(f"median of {opts.runs} run(s):")
    doc: dict[str, Any] = {"store": opts.store, "sizes": {}}
    ok = True
    for n in sizes:
        runs = by_size[n]
        p50 = summarize(r.p50_ms for r in runs)
        p99 = summarize(r.p99_ms for r in runs)
        mx = summarize(r.max_ms for r in runs)
        unanswered = summarize(r.unanswered for r in runs)
        ratio_idle = summarize(r.p99_ms / idle_p99.median for r in runs)
        entry: dict[str, Any] = {
            "p50_ms": p50.as_dict(),
            "p99_ms": p99.as_dict(),
            "max_ms": mx.as_dict(),
            "unanswered": unanswered.as_dict(),
            "p99_to_idle": ratio_idle.as_dict(),
            "runs": [asdict(r) for r in runs],
        }
        line = (
            f"  N={n}: p50 {p50.show('ms', 1)}; p99 {p99.show('ms', 1)}; max "
            f"{mx.show('ms', 1)}; unanswered {unanswered.show('', 0)}; p99 / idle p99 "
            f"{ratio_idle.show('', 2)}"
        )
        if n and all(r.ratio_to_floor is not None for r in runs):
            floor = summarize(r.ratio_to_floor or 0.0 for r in runs)
            last = summarize(r.last_after_due or 0.0 for r in runs)
            entry["last_after_due"] = last.as_dict()
            entry["ratio_to_floor"] = floor.as_dict()
            entry["minimum"] = runs[0].minimum
            line += f"; burst last {last.show('s', 2)}, ratio to floor {floor.show('', 3)}"
            ok = ok and all(r.messages == n for r in runs)
        print(line)
        doc["sizes"][str(n)] = entry
    if biggest:
        runs = by_size[biggest]
        p99 = summarize(r.p99_ms for r in runs).median
        unanswered_max = max(r.unanswered for r in runs)
        floor = summarize(r.ratio_to_floor or math.inf for r in runs).median
        met = p99 < 250 and unanswered_max == 0 and floor <= 1.05
        print(
            f"aim (N={biggest}: p99 < 250 ms, none unanswered, burst within 5% of its floor): "
            + ("met" if met else "NOT met")
        )
    if not ok:
        print("WARNING: a burst message was missing or duplicated")
    if opts.json is not None:
        opts.json.write_text(json.dumps(doc, indent=2), "utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
