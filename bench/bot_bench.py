"""Delivery benchmark: a burst of announcements due at once, against Discord's rate limits.

    python bench/bot_bench.py [--quick] [--runs N] [--json PATH]
    python bench/bot_bench.py --processes 3 --store postgres [--dsn DSN] [--runs N]

1,000 one-off announcements over 50 channels (20 per channel), all due at the same instant,
delivered to the fake Discord in ``tests/fakediscord`` with Discord's limits enforced:
5 message creates per channel per 5 s, 50 requests per second globally, per bot token (so
several processes with one token share them, as on Discord). The announcements are written
through the ``Announcements`` service (the code ``/schedule`` ends in), one transaction
each, before they come due.

Two modes. By default one real bot (``bot.app.Crier``: real discord.py client, SQLite
scheduler, the real SystemClock) runs in the bench process. With ``--processes N --store
postgres`` the bench creates a fresh PostgreSQL database on the server of ``--dsn``
(default ``CRIER_TEST_POSTGRES_DSN``, else postgresql://postgres@127.0.0.1:5432/test),
starts N ``python -m bot`` processes on it with the deployment's default lease and sweep,
writes the burst on a scheduler of its own that never delivers, and drops the database at
the end (``bench/_bot_processes.py``).

Reported per run: the time from the due instant until the last message exists at the fake;
the minimum the bot's spacing and Discord's limits allow; their ratio; the 429s the bot
provoked (``fake.count_429``); the successful sends per process (from the run history); and
checks: messages = announcements, each posted once by one request (no duplicate, no nonce
dedup needed), every channel's messages in the order the announcements were created (all
are due at one instant, so that is their due order), the spacing kept in every channel.

The minimum. With N messages over C channels (k = N / C per channel), per-channel spacing s,
a per-channel limit of L_ch per W_ch seconds and a global limit of L_g per W_g seconds, all
due at t = 0 and each request taking no time, the last message cannot exist before

    max( (k - 1) * s,                      a channel's sends are at least s apart
         (ceil(k / L_ch) - 1) * W_ch,      a channel gets L_ch sends per window
         (ceil(N / L_g) - 1) * W_g )       everyone gets L_g sends per window

For the full run: max(19 * 1.5, 3 * 5, 19 * 1) = 28.5 s (the spacing binds). The floor is
the same for any number of processes: the spacing is kept across all of them (each job
carries its channel's pace), and the limits are the token's, so more processes add no
capacity a channel could use; they only share the work (and the first send of each channel
can go out no earlier than the due instant whoever sends it). With s >= 1 s and
C <= L_g / 1 channels, no 1 s window can hold more than C <= 50 sends and no 5 s window more
than 4 sends to one channel, so a bot that keeps its spacing provokes no 429 at all.
Aim: within 5% of the minimum, zero 429s.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import json
import logging
import math
import os
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

with warnings.catch_warnings():  # discord.py imports the deprecated stdlib audioop
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord

from bench._stats import summarize
from bot.announcements import SEND_FN, Announcements, Draft
from bot.app import Crier
from bot.config import Settings
from tests.fakediscord import FakeDiscord
from tests.fakediscord import Permissions as P

CHANNEL_LIMIT, CHANNEL_WINDOW = 5, 5.0
GLOBAL_LIMIT, GLOBAL_WINDOW = 50, 1.0
LIMITS: dict[str, Any] = {
    "message_limit": CHANNEL_LIMIT,
    "message_per": CHANNEL_WINDOW,
    "global_limit": GLOBAL_LIMIT,
    "global_per": GLOBAL_WINDOW,
}
"""The fake's limits (Discord's): per bot token, so processes with one token share them."""
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"
AIM = 1.05
"""The aim: the last delivery within 5% of the minimum."""


def minimum(n: int, channels: int, spacing: float) -> tuple[float, dict[str, float]]:
    k = math.ceil(n / channels)
    bounds = {
        "spacing": (k - 1) * spacing,
        "channel limit": (math.ceil(k / CHANNEL_LIMIT) - 1) * CHANNEL_WINDOW,
        "global limit": (math.ceil(n / GLOBAL_LIMIT) - 1) * GLOBAL_WINDOW,
    }
    return max(bounds.values()), bounds


@dataclass
class Run:
    announcements: int
    channels: int
    spacing: float
    processes: int
    """Bot processes started (``per_process`` has those that sent anything)."""
    store: str
    create_seconds: float
    first_after_due: float
    last_after_due: float
    minimum: float
    ratio: float
    count_429: int
    messages: int
    send_requests: int
    nonce_dedup_hits: int
    duplicates: int
    channels_out_of_order: int
    min_channel_gap: float
    max_lateness_of_first_per_channel: float
    per_process: list[int]
    """Successful sends per process (from the run history), most first."""


async def one_run(n: int, channels: int, spacing: float) -> Run:
    """One burst delivered by one in-process bot on SQLite."""
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeDiscord(ratelimits=True, **LIMITS) as fake:
            guild = fake.add_guild(name="Bench", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES)
            admin = guild.add_member(name="admin")
            chans = [guild.add_channel(f"c{i:02d}") for i in range(channels)]
            settings = Settings(
                token=fake.token,
                database_url=f"sqlite:///{Path(tmp) / 'crier.db'}",
                api_base=fake.api_base,
                gateway_url=fake.gateway_url,
                send_spacing=spacing,
                # One member schedules the whole burst, in far less than a minute.
                commands_per_minute=1_000_000,
                max_announcements=10**9,
            )
            crier = Crier(settings, guild_ready_timeout=0.05)  # the real SystemClock
            await crier.start()
            try:
                service = crier.bot.announcements
                due, create_seconds = await write_burst(service, guild.id, admin.id, chans, n)
                lower, _ = minimum(n, len(chans), spacing)
                await fake.wait_until(
                    lambda: len(fake.bot_messages()) >= n,
                    timeout=(due - time.time()) + 3 * lower + 60,
                    what=f"{n} messages",
                )
                split = await recorded(crier, n)
            finally:
                await crier.close()
                discord.http.Route.BASE = "https://discord.com/api/v10"
    return measure(fake, chans, n, spacing, float(due), create_seconds, split, "sqlite", 1)


async def processes_run(n: int, channels: int, spacing: float, processes: int, dsn: str) -> Run:
    """One burst delivered by ``processes`` bot processes on a fresh PostgreSQL database."""
    from bench import _bot_processes

    lower, _ = minimum(n, channels, spacing)
    b = await _bot_processes.one_run(
        n, channels, spacing, processes, dsn, LIMITS, lower, write_burst
    )
    return measure(
        b.fake, b.channels, n, spacing, b.due, b.create_seconds, b.per_process, "postgres",
        processes,
    )  # fmt: skip


def measure(
    fake: FakeDiscord,
    chans: list[Any],
    n: int,
    spacing: float,
    due: float,
    create_seconds: float,
    per_process: dict[str, int],
    store: str,
    processes: int,
) -> Run:
    """The figures and checks of one burst, from what the fake recorded."""
    lower, _ = minimum(n, len(chans), spacing)
    msgs = fake.bot_messages()
    created = sorted(m.created_at for m in msgs)
    gaps: list[float] = []
    firsts: list[float] = []
    out_of_order = 0
    for ch in chans:
        mine = sorted((m for m in msgs if m.channel_id == ch.id), key=lambda m: m.created_at)
        times = [m.created_at for m in mine]
        gaps += [b - a for a, b in itertools.pairwise(times)]
        firsts.append(times[0] - due)
        order = [int(m.content.rsplit(" ", 1)[1]) for m in mine]  # "announcement <i>"
        out_of_order += order != sorted(order)
    sends = [
        r
        for r in fake.requests
        if r.method == "POST" and r.path.endswith("/messages") and r.status != 429
    ]
    contents = collections.Counter(m.content for m in msgs)
    return Run(
        announcements=n,
        channels=len(chans),
        spacing=spacing,
        processes=processes,
        store=store,
        create_seconds=create_seconds,
        first_after_due=created[0] - due,
        last_after_due=created[-1] - due,
        minimum=lower,
        ratio=(created[-1] - due) / lower if lower else float("nan"),
        count_429=fake.count_429,
        messages=len(msgs),
        send_requests=len(sends),
        nonce_dedup_hits=fake.nonce_dedup_hits,
        duplicates=sum(c - 1 for c in contents.values()),
        channels_out_of_order=out_of_order,
        min_channel_gap=min(gaps) if gaps else float("nan"),
        max_lateness_of_first_per_channel=max(firsts),
        per_process=sorted(per_process.values(), reverse=True),
    )


async def write_burst(
    service: Announcements, guild_id: int, author_id: int, chans: list[Any], n: int
) -> tuple[int, float]:
    """``n`` announcements round robin over ``chans`` through the ``Announcements`` service
    (the code ``/schedule`` ends in), one transaction each, all due at one instant far
    enough ahead to write them all first; returns the instant and the time the writes took."""
    due = math.ceil(time.time() + 3.0 + n * 0.01)
    first = datetime.fromtimestamp(due, UTC)
    started = time.perf_counter()
    for i in range(n):
        await service.create(
            Draft(
                guild_id=guild_id,
                channel_id=chans[i % len(chans)].id,
                author_id=author_id,
                content=f"announcement {i}",
                mention=None,
                allowed_mentions={"everyone": False, "roles": [], "users": True},
                first=first,
                timezone="UTC",
                repeat=None,
            )
        )
    create_seconds = time.perf_counter() - started
    if time.time() >= due:
        raise SystemExit(f"creating {n} announcements took {create_seconds:.1f}s: past due")
    return due, create_seconds


async def recorded(crier: Crier, n: int, within: float = 60.0) -> dict[str, int]:
    """Wait until every delivery has its message id recorded (so nothing is cut short) and
    every send job's run its outcome (recorded after the delivery's row); return the
    successful sends per process, from the run history."""
    deadline = time.monotonic() + within
    while True:
        async with crier.sched.reader() as db:
            cur = await db.execute(
                "SELECT count(*) FROM bot_deliveries "
                "WHERE state = 'sent' AND message_id IS NOT NULL"
            )
            row = await cur.fetchone()
            cur = await db.execute(
                "SELECT process, count(*) FROM scheduler_runs "
                "WHERE fn = ? AND outcome = 'success' GROUP BY process",
                (SEND_FN,),
            )
            split = {str(r[0]): int(r[1]) for r in await cur.fetchall()}
        done = int(row[0]) if row is not None else 0
        if done >= n and sum(split.values()) >= n:
            return split
        if time.monotonic() > deadline:
            raise SystemExit(
                f"only {done} of {n} deliveries and {sum(split.values())} runs were recorded"
            )
        await asyncio.sleep(0.05)


def show(run: Run) -> None:
    print(
        f"  last delivered {run.last_after_due:6.2f}s after due (first {run.first_after_due:.2f}s;"
        f" every channel's first within {run.max_lateness_of_first_per_channel:.2f}s)"
        f"  minimum {run.minimum:.2f}s  ratio {run.ratio:.3f}  429s {run.count_429}"
    )
    print(
        f"  {run.messages} messages from {run.send_requests} accepted send requests "
        f"(duplicates {run.duplicates}, nonce dedups {run.nonce_dedup_hits}); channels out of "
        f"order {run.channels_out_of_order}; smallest gap in a channel "
        f"{run.min_channel_gap:.3f}s; {run.announcements} announcements created in "
        f"{run.create_seconds:.2f}s; sends per process {run.per_process}"
    )


def correct(run: Run) -> bool:
    """Every announcement posted once, by one request, with no dedup needed, in order."""
    return (
        run.messages == run.announcements
        and run.send_requests == run.announcements
        and run.duplicates == 0
        and run.nonce_dedup_hits == 0
        and run.channels_out_of_order == 0
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="250 announcements (5 per channel)")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--announcements", type=int, default=None)
    p.add_argument("--channels", type=int, default=50)
    p.add_argument("--spacing", type=float, default=1.5, help="SEND_SPACING_SECONDS")
    p.add_argument(
        "--processes", type=int, default=1, help="bot processes (more than 1: --store postgres)"
    )
    p.add_argument("--store", choices=("sqlite", "postgres"), default=None)
    p.add_argument(
        "--dsn",
        default=os.environ.get("CRIER_TEST_POSTGRES_DSN") or DEFAULT_DSN,
        help="the PostgreSQL server to create the bench database on (CRIER_TEST_POSTGRES_DSN)",
    )
    p.add_argument("--json", type=Path, default=None)
    opts = p.parse_args()
    n = opts.announcements or (250 if opts.quick else 1000)
    store = opts.store or ("postgres" if opts.processes > 1 else "sqlite")
    if store == "sqlite" and opts.processes != 1:
        p.error("--store sqlite runs one in-process bot: use --store postgres for processes")
    if opts.processes < 1:
        p.error("--processes must be at least 1")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    lower, bounds = minimum(n, opts.channels, opts.spacing)
    who = (
        "one in-process bot on SQLite"
        if store == "sqlite"
        else f"{opts.processes} bot process(es) on one PostgreSQL database"
    )
    print(
        f"{n} announcements due at once over {opts.channels} channels, delivered by {who}; "
        f"spacing {opts.spacing}s; Discord limits {CHANNEL_LIMIT}/{CHANNEL_WINDOW:g}s per "
        f"channel, {GLOBAL_LIMIT}/{GLOBAL_WINDOW:g}s global (per token: shared)"
    )
    print(
        "minimum = max("
        + ", ".join(f"{name} {value:.2f}s" for name, value in bounds.items())
        + f") = {lower:.2f}s"
    )
    runs: list[Run] = []
    for i in range(opts.runs):
        if store == "sqlite":
            run = asyncio.run(one_run(n, opts.channels, opts.spacing))
        else:
            run = asyncio.run(
                processes_run(n, opts.channels, opts.spacing, opts.processes, opts.dsn)
            )
        print(f"run {i + 1}/{opts.runs}:")
        show(run)
        runs.append(run)
    ok = all(correct(r) for r in runs)
    last = summarize(r.last_after_due for r in runs)
    ratio = summarize(r.ratio for r in runs)
    c429 = summarize(r.count_429 for r in runs)
    print(
        f"median of {len(runs)}: last delivered {last.show('s', 2)}; ratio to minimum "
        f"{ratio.show('', 3)}; 429s {c429.show('', 0)}"
    )
    print(
        f"aim (within {AIM - 1:.0%} of the minimum, zero 429s): "
        + ("met" if ratio.median <= AIM and c429.max == 0 else "NOT met")
        + ("" if ok else "; WARNING: a message was missing, duplicated, re-sent or out of order")
    )
    if opts.json is not None:
        doc = {
            "announcements": n,
            "channels": opts.channels,
            "spacing": opts.spacing,
            "processes": opts.processes,
            "store": store,
            "minimum": lower,
            "bounds": bounds,
            "last_after_due": last.as_dict(),
            "ratio": ratio.as_dict(),
            "count_429": c429.as_dict(),
            "runs": [asdict(r) for r in runs],
        }
        opts.json.write_text(json.dumps(doc, indent=2), "utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
