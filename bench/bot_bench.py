"""Delivery benchmark: a burst of announcements due at once, against Discord's rate limits.

    python bench/bot_bench.py [--quick] [--runs N] [--json PATH]

1,000 one-off announcements over 50 channels (20 per channel), all due at the same instant,
delivered by the real bot (``bot.app.Crier``: real discord.py client, SQLite scheduler, the
real SystemClock) to the fake Discord in ``tests/fakediscord`` with Discord's limits enforced:
5 message creates per channel per 5 s, 50 requests per second globally. The announcements are
written through the ``Announcements`` service (``crier.bot.announcements.create``), the same
code ``/schedule`` ends in, one transaction each, before they come due.

Reported per run: the time from the due instant until the last message exists at the fake;
the minimum the bot's spacing and Discord's limits allow; their ratio; the 429s the bot
provoked (``fake.count_429``); and checks (messages = announcements, no duplicate, no second
request, the spacing kept in every channel).

The minimum. With N messages over C channels (k = N / C per channel), per-channel spacing s,
a per-channel limit of L_ch per W_ch seconds and a global limit of L_g per W_g seconds, all
due at t = 0 and each request taking no time, the last message cannot exist before

    max( (k - 1) * s,                      a channel's sends are at least s apart
         (ceil(k / L_ch) - 1) * W_ch,      a channel gets L_ch sends per window
         (ceil(N / L_g) - 1) * W_g )       everyone gets L_g sends per window

For the full run: max(19 * 1.5, 3 * 5, 19 * 1) = 28.5 s (the spacing binds). With s >= 1 s
and C <= L_g / 1 channels, no 1 s window can hold more than C <= 50 sends and no 5 s window
more than 4 sends to one channel, so a bot that keeps its spacing provokes no 429 at all.
Aim: within 20% of the minimum, zero 429s.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import math
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
from bot.announcements import Draft
from bot.app import Crier
from bot.config import Settings
from tests.fakediscord import FakeDiscord
from tests.fakediscord import Permissions as P

CHANNEL_LIMIT, CHANNEL_WINDOW = 5, 5.0
GLOBAL_LIMIT, GLOBAL_WINDOW = 50, 1.0


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
    create_seconds: float
    first_after_due: float
    last_after_due: float
    minimum: float
    ratio: float
    count_429: int
    messages: int
    send_requests: int
    nonce_dedup_hits: int
    min_channel_gap: float
    max_lateness_of_first_per_channel: float


async def one_run(n: int, channels: int, spacing: float) -> Run:
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeDiscord(
            ratelimits=True,
            message_limit=CHANNEL_LIMIT,
            message_per=CHANNEL_WINDOW,
            global_limit=GLOBAL_LIMIT,
            global_per=GLOBAL_WINDOW,
        ) as fake:
            guild = fake.add_guild(name="Bench", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES)
            admin = guild.add_member(name="admin")
            chans = [guild.add_channel(f"c{i:02d}") for i in range(channels)]
            settings = Settings(
                token=fake.token,
                database_url=f"sqlite:///{Path(tmp) / 'crier.db'}",
                api_base=fake.api_base,
                gateway_url=fake.gateway_url,
                send_spacing=spacing,
            )
            crier = Crier(settings, guild_ready_timeout=0.05)  # the real SystemClock
            await crier.start()
            try:
                return await burst(crier, fake, guild.id, admin.id, chans, n, spacing)
            finally:
                await crier.close()
                discord.http.Route.BASE = "https://discord.com/api/v10"


async def burst(
    crier: Crier, fake: FakeDiscord, guild_id: int, author_id: int, chans: list[Any], n: int,
    spacing: float,
) -> Run:  # fmt: skip
    # All due at one instant, far enough ahead to write them all first (about 1 ms each).
    due = math.ceil(time.time() + 3.0 + n * 0.004)
    first = datetime.fromtimestamp(due, UTC)
    started = time.perf_counter()
    for i in range(n):  # round robin over the channels
        await crier.bot.announcements.create(
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

    lower, _ = minimum(n, len(chans), spacing)
    await fake.wait_until(
        lambda: len(fake.bot_messages()) >= n,
        timeout=(due - time.time()) + 3 * lower + 60,
        what=f"{n} messages",
    )
    msgs = fake.bot_messages()
    await recorded(crier, n)
    created = sorted(m.created_at for m in msgs)
    gaps: list[float] = []
    firsts: list[float] = []
    for ch in chans:
        times = [m.created_at for m in msgs if m.channel_id == ch.id]
        gaps += [b - a for a, b in itertools.pairwise(times)]
        firsts.append(times[0] - due)
    sends = [
        r
        for r in fake.requests
        if r.method == "POST" and r.path.endswith("/messages") and r.status != 429
    ]
    return Run(
        announcements=n,
        channels=len(chans),
        spacing=spacing,
        create_seconds=create_seconds,
        first_after_due=created[0] - due,
        last_after_due=created[-1] - due,
        minimum=lower,
        ratio=(created[-1] - due) / lower if lower else float("nan"),
        count_429=fake.count_429,
        messages=len(msgs),
        send_requests=len(sends),
        nonce_dedup_hits=fake.nonce_dedup_hits,
        min_channel_gap=min(gaps) if gaps else float("nan"),
        max_lateness_of_first_per_channel=max(firsts),
    )


async def recorded(crier: Crier, n: int, within: float = 60.0) -> None:
    """Wait until every delivery has its message id recorded (so nothing is cut short)."""
    deadline = time.monotonic() + within
    while True:
        async with crier.sched.reader() as db:
            cur = await db.execute(
                "SELECT count(*) FROM bot_deliveries "
                "WHERE state = 'sent' AND message_id IS NOT NULL"
            )
            row = await cur.fetchone()
        if row is not None and int(row[0]) >= n:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"only {row[0] if row else 0} of {n} deliveries were recorded")
        await asyncio.sleep(0.05)


def show(run: Run) -> None:
    print(
        f"  last delivered {run.last_after_due:6.2f}s after due (first {run.first_after_due:.2f}s;"
        f" every channel's first within {run.max_lateness_of_first_per_channel:.2f}s)"
        f"  minimum {run.minimum:.2f}s  ratio {run.ratio:.3f}  429s {run.count_429}"
    )
    print(
        f"  {run.messages} messages from {run.send_requests} accepted send requests "
        f"(nonce dedups {run.nonce_dedup_hits}); smallest gap in a channel "
        f"{run.min_channel_gap:.3f}s; {run.announcements} announcements created in "
        f"{run.create_seconds:.2f}s"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="250 announcements (5 per channel)")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--announcements", type=int, default=None)
    p.add_argument("--channels", type=int, default=50)
    p.add_argument("--spacing", type=float, default=1.5, help="SEND_SPACING_SECONDS")
    p.add_argument("--json", type=Path, default=None)
    opts = p.parse_args()
    n = opts.announcements or (250 if opts.quick else 1000)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    lower, bounds = minimum(n, opts.channels, opts.spacing)
    print(
        f"{n} announcements due at once over {opts.channels} channels; spacing "
        f"{opts.spacing}s; Discord limits {CHANNEL_LIMIT}/{CHANNEL_WINDOW:g}s per channel, "
        f"{GLOBAL_LIMIT}/{GLOBAL_WINDOW:g}s global"
    )
    print(
        "minimum = max("
        + ", ".join(f"{name} {value:.2f}s" for name, value in bounds.items())
        + f") = {lower:.2f}s"
    )
    runs: list[Run] = []
    for i in range(opts.runs):
        run = asyncio.run(one_run(n, opts.channels, opts.spacing))
        print(f"run {i + 1}/{opts.runs}:")
        show(run)
        runs.append(run)
    ok = all(r.messages == n and r.send_requests == n and r.nonce_dedup_hits == 0 for r in runs)
    last = summarize(r.last_after_due for r in runs)
    ratio = summarize(r.ratio for r in runs)
    c429 = summarize(r.count_429 for r in runs)
    print(
        f"median of {len(runs)}: last delivered {last.show('s', 2)}; ratio to minimum "
        f"{ratio.show('', 3)}; 429s {c429.show('', 0)}"
    )
    print(
        "aim (within 20% of the minimum, zero 429s): "
        + ("met" if ratio.median <= 1.2 and c429.median == 0 else "NOT met")
        + ("" if ok else "; WARNING: a message was missing, duplicated or re-sent")
    )
    if opts.json is not None:
        doc = {
            "announcements": n,
            "channels": opts.channels,
            "spacing": opts.spacing,
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
