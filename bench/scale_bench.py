"""Scale benchmark: 1,000,000 announcements over 10,000 guilds (issue 12, "Proof at scale").

    python bench/scale_bench.py [--quick | --size full|modest|quick] [--runs N]
                                [--json PATH] [--cache DIR]

The announcements are seeded through the bot's domain layer (``Announcements.create_many``,
5,000 a transaction): one guild holds 100,000 of them, the rest are spread over the other
guilds; 70% one-off, 15% daily, 10% weekly, 5% every 6 hours, all due between a week and a
year ahead. The seeded SQLite database is cached in the temp dir (``--cache``) under a name
made of the seed parameters, so reruns skip the seeding.

Measured, each as the median with min and max over ``--runs`` runs:

- start-up to ready, without the gateway, in a fresh process (``bench/_scale_child.py``:
  build ``Crier``, open the database with its checks and migrations, start the scheduler,
  wait for its first pass and sweep to finish), and that process's peak RSS; once for a
  file the previous run closed cleanly, once with the file checked in full (as after a
  crash or a change by something else: ``PRAGMA quick_check`` reads every page);
- in the big guild, ``/list``'s first page and the ``id`` autocomplete of ``/cancel``
  (nothing typed, and a number typed), each its p99 over many calls: through the real bot
  (discord.py) against the fake Discord (``tests/fakediscord``), from the interaction's
  dispatch to the bot's callback arriving at the fake; and the domain-layer call alone;
- one dispatch pass (``claim_due`` and ``complete`` of a few due jobs, half of them paced)
  with 1,000 announcements pending and with all of them: the ratio says how flat it is.

Aims (issue 12): peak RSS under 200 MB; /list and autocomplete p99 under 100 ms; the pass
flat (at most 1.5 times the small store's). ``--size modest`` (100,000 over 1,000 guilds, the
big one 20,000) is what ``bench/run_all.py`` runs by default; ``--quick`` is a smoke run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

with warnings.catch_warnings():  # discord.py imports the deprecated stdlib audioop
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord

from bench._scale_seed import BIG_CHANNELS, Seed, big_guild_id, cached, renumber_big_guild
from bench._scale_seed import settings as bot_settings
from bench._stats import log, out, percentile, print_aims, ratio, summarize, to_jsonable
from bench.scheduler_bench import git_state, load_average
from bot.app import Crier, bot_migrations
from bot.commands.autocomplete import ACCEPTS
from bot.render import PAGE_SIZE
from scheduler import JobKind, SqliteStore
from scheduler.store_types import NewJob, Outcome
from scheduler.stores import _sqlite_verified
from tests.fakediscord import FakeDiscord
from tests.fakediscord import Permissions as P

ROOT = Path(__file__).resolve().parents[1]
SIZES = {
    "full": Seed(1_000_000, 10_000, 100_000),
    "modest": Seed(100_000, 1_000, 20_000),
    "quick": Seed(3_000, 30, 1_000),
}
SMALL = Seed(1_000, 10, 200)
"""The peer of the dispatch pass: 1,000 announcements pending."""
AIM_RSS_MIB = 200.0
AIM_P99_MS = 100.0
AIM_PASS_RATIO = 1.5
PASS_DUE = 8


class BenchError(SystemExit):
    pass


# --- start-up ------------------------------------------------------------------------------


def start_up(db: Path, *, full_check: bool) -> dict[str, float]:
    """One start-up in a fresh process (the file checked in full if ``full_check``)."""
    if full_check:
        _sqlite_verified.forget(db)
    proc = subprocess.run(
        [sys.executable, "-m", "bench._scale_child", str(db)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise BenchError(f"the start-up process failed:\n{proc.stdout}{proc.stderr}")
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def section_startup(db: Path, runs: int) -> dict[str, Any]:
    start_up(db, full_check=False)  # applies new migrations, if any, and closes cleanly: untimed
    out_: dict[str, Any] = {}
    for label, full in (("clean", False), ("checked", True)):
        got = [start_up(db, full_check=full) for _ in range(runs)]
        out_[label] = {
            "ready_s": summarize(g["ready_s"] for g in got),
            "peak_rss_mib": summarize(g["peak_rss_mib"] for g in got),
            "import_s": summarize(g["import_s"] for g in got),
        }
    return out_


# --- the domain layer ----------------------------------------------------------------------


def typed_prefix(highest: int) -> str:
    """A number a member might type: the first two digits of the guild's highest number."""
    return str(highest)[:2]


async def domain_calls(db: Path, guild: int, highest: int, calls: int) -> dict[str, list[float]]:
    crier = Crier(bot_settings(db))
    await crier.sched.start()
    a = crier.bot.announcements
    accepts = ACCEPTS["cancel"]
    kinds: dict[str, Any] = {
        "list": lambda: a.listing(guild, 0, PAGE_SIZE),
        "autocomplete": lambda: a.choices(guild, accepts.states, recurring=accepts.recurring),
        "autocomplete_typed": lambda: a.choices(
            guild, accepts.states, recurring=accepts.recurring, id_prefix=typed_prefix(highest)
        ),
    }
    times: dict[str, list[float]] = {k: [] for k in kinds}
    try:
        for k, call in kinds.items():
            found = await call()
            if not found.items:
                raise BenchError(f"{k}: nothing found in the big guild")
            for _ in range(calls):
                t0 = time.perf_counter()
                await call()
                times[k].append((time.perf_counter() - t0) * 1000)
    finally:
        await crier.sched.stop()
    return times


# --- through the bot and the fake Discord --------------------------------------------------


async def interaction_calls(db: Path, highest: int, calls: int) -> dict[str, list[float]]:
    async with FakeDiscord() as fake:
        guild = fake.add_guild(
            name="Big", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE
        )
        admins = guild.add_role("admins", P.MANAGE_GUILD)
        channels = [guild.add_channel(f"c{k:02d}") for k in range(BIG_CHANNELS)]
        admin = guild.add_member(name="admin", roles=[admins])
        renumber_big_guild(db, guild.id, [c.id for c in channels])
        s = bot_settings(db, token=fake.token, api_base=fake.api_base, gateway_url=fake.gateway_url)
        crier = Crier(s, guild_ready_timeout=0.05)
        await crier.start()
        here = channels[0]
        kinds: dict[str, Any] = {
            "list": lambda: fake.invoke_command(guild, here, admin, "list"),
            "autocomplete": lambda: fake.invoke_autocomplete(
                guild, here, admin, "cancel", {"id": ""}, focused="id"
            ),
            "autocomplete_typed": lambda: fake.invoke_autocomplete(
                guild, here, admin, "cancel", {"id": typed_prefix(highest)}, focused="id"
            ),
        }
        times: dict[str, list[float]] = {k: [] for k in kinds}
        try:
            for k, invoke in kinds.items():
                for i in range(calls + 3):  # the first three warm up
                    handle = await invoke()
                    cb = await handle.response(timeout=30.0)
                    if k == "list" and "#" not in str(cb.data.get("content", "")):
                        raise BenchError(f"/list answered without a listing: {cb.data}")
                    if k != "list" and not cb.choices:
                        raise BenchError(f"{k}: no choices offered")
                    if i >= 3:
                        times[k].append((cb.at - handle.created_at) * 1000)
        finally:
            await crier.close()
            discord.http.Route.BASE = "https://discord.com/api/v10"
    return times


def p99s(runs: list[dict[str, list[float]]]) -> dict[str, Any]:
    return {
        k: {
            "p99_ms": summarize(percentile(r[k], 99) for r in runs),
            "p50_ms": summarize(percentile(r[k], 50) for r in runs),
            "calls": len(runs[0][k]),
        }
        for k in runs[0]
    }


def section_latency(db: Path, seed: Seed, runs: int, calls: int) -> dict[str, Any]:
    highest = seed.big
    domain = [asyncio.run(domain_calls(db, big_guild_id(db), highest, calls)) for _ in range(runs)]
    bot = [asyncio.run(interaction_calls(db, highest, calls)) for _ in range(runs)]
    return {"typed": typed_prefix(highest), "bot": p99s(bot), "domain": p99s(domain)}


# --- one dispatch pass ---------------------------------------------------------------------


def due_job(k: int, now: float) -> NewJob:
    action = k % 2 == 1
    return NewJob(
        fn="bench:pass-action" if action else "bench:pass-mutation",
        kind=JobKind.ACTION if action else JobKind.MUTATION,
        next_ts=now - 1.0,
        max_failures=1 if action else 4,
        initial_backoff=1.0,
        backoff_base=2.0,
        idempotent=False,
        args_json="null",
        pace_key=f"bench:pace:{k}" if k % 4 >= 2 else None,  # half of them paced
        pace_spacing=0.001 if k % 4 >= 2 else None,
    )


async def one_pass(store: SqliteStore) -> tuple[float, float]:
    """Make ``PASS_DUE`` jobs due (untimed), then time claiming and completing them; also
    time a claim that finds nothing due (the wake timer's pass). Milliseconds."""
    now = time.time()
    async with store.transaction(now) as tx:
        await tx.enqueue_many([due_job(k, now) for k in range(PASS_DUE)])
    now = time.time()
    t0 = time.perf_counter()
    claim = await store.at(now).claim_due(now + 30.0, mutation_limit=64, action_limit=64)
    report = await store.at(time.time()).complete(
        [Outcome(j, ok=True, value_json="null") for j in claim.jobs]
    )
    t1 = time.perf_counter()
    now = time.time()
    idle = await store.at(now).claim_due(now + 30.0, mutation_limit=64, action_limit=64)
    t2 = time.perf_counter()
    if len(claim.jobs) != PASS_DUE or report.applied != PASS_DUE or idle.jobs:
        raise BenchError(f"pass: claimed {len(claim.jobs)}, completed {report.applied}")
    if claim.next_due is None or claim.next_due < now:
        raise BenchError("pass: the next due time should be a future announcement's")
    return (t1 - t0) * 1000, (t2 - t1) * 1000


async def forget_bench_jobs(store: SqliteStore) -> None:
    async with store.transaction(time.time()) as tx:
        await tx.execute(
            "DELETE FROM scheduler_runs WHERE job_id IN "
            "(SELECT id FROM scheduler_jobs WHERE fn LIKE 'bench:pass-%')"
        )
        await tx.execute(
            "DELETE FROM scheduler_job_args WHERE job_id IN "
            "(SELECT id FROM scheduler_jobs WHERE fn LIKE 'bench:pass-%')"
        )
        await tx.execute("DELETE FROM scheduler_jobs WHERE fn LIKE 'bench:pass-%'")
        await tx.execute("DELETE FROM scheduler_pace WHERE pace_key LIKE 'bench:pace:%'")


async def pass_runs(dbs: dict[str, Path], repeats: int) -> dict[str, dict[str, list[float]]]:
    """Alternating between the stores, so drift hits each alike."""
    stores = {k: SqliteStore(p) for k, p in dbs.items()}
    got: dict[str, dict[str, list[float]]] = {k: {"pass": [], "idle": []} for k in dbs}
    try:
        for s in stores.values():
            await s.open([bot_migrations()])
        warmup = max(3, repeats // 10)
        for r in range(warmup + repeats):
            for k, s in stores.items():
                pass_ms, idle_ms = await one_pass(s)
                if r >= warmup:
                    got[k]["pass"].append(pass_ms)
                    got[k]["idle"].append(idle_ms)
    finally:
        for s in stores.values():
            await forget_bench_jobs(s)
            await s.close()
    return got


def pending(db: Path) -> int:
    import sqlite3

    with sqlite3.connect(db) as conn:
        jobs = conn.execute("SELECT count(*) FROM scheduler_jobs WHERE state = 'pending'")
        schedules = conn.execute("SELECT count(*) FROM scheduler_schedules")
        return int(jobs.fetchone()[0]) + int(schedules.fetchone()[0])


def section_pass(small: Path, big: Path, repeats: int) -> dict[str, Any]:
    got = asyncio.run(pass_runs({"small": small, "big": big}, repeats))
    sizes = {
        k: {
            "pending": pending(p),
            "pass_ms": summarize(got[k]["pass"]),
            "idle_ms": summarize(got[k]["idle"]),
        }
        for k, p in (("small", small), ("big", big))
    }
    return {
        "due_per_pass": PASS_DUE,
        "repeats": repeats,
        "sizes": sizes,
        "ratio": {
            "pass": ratio(sizes["big"]["pass_ms"].median, sizes["small"]["pass_ms"].median),
            "idle": ratio(sizes["big"]["idle_ms"].median, sizes["small"]["idle_ms"].median),
        },
    }


# --- report --------------------------------------------------------------------------------


def report(doc: dict[str, Any]) -> list[dict[str, Any]]:
    seed, s = doc["seed"], doc["startup"]
    out(
        f"== Seed: {seed['seed']['announcements']:,} announcements over "
        f"{seed['seed']['guilds']:,} guilds (one holds {seed['seed']['big']:,}); "
        + (
            "from the cache"
            if seed["cached"]
            else f"seeded in {seed['seed_seconds']:.0f} s ({seed['per_second']:,.0f}/s)"
        )
        + f"; {seed['bytes'] / 2**20:,.0f} MiB"
    )
    out("\n== Start-up to ready without the gateway (fresh process), peak RSS")
    for label, what in (("clean", "after a clean close"), ("checked", "checked in full")):
        r = s[label]
        out(
            f"   {what:>20}: {r['ready_s'].show('s', 3)}; peak RSS "
            f"{r['peak_rss_mib'].show('MiB', 0)}; imports {r['import_s'].median:.2f} s"
        )
    lat = doc["latency"]
    out(f"\n== In the big guild: p99 (p50) of each call; typed number {lat['typed']!r}")
    for side, label in (("bot", "through the bot + fake Discord"), ("domain", "domain layer")):
        out(f"   {label}:")
        for k, r in lat[side].items():
            out(
                f"     {k:>18}: p99 {r['p99_ms'].show('ms', 1)}; p50 {r['p50_ms'].median:.1f} ms"
                f" ({r['calls']} calls a run)"
            )
    ps = doc["pass"]
    out(f"\n== One dispatch pass (claim + complete of {ps['due_per_pass']} due jobs, half paced)")
    for k, r in ps["sizes"].items():
        out(
            f"   {r['pending']:>9,} pending ({k}): pass {r['pass_ms'].show('ms', 3)}; "
            f"idle claim {r['idle_ms'].median:.3f} ms"
        )
    out(f"   ratio big/small: pass {ps['ratio']['pass']:.2f}, idle {ps['ratio']['idle']:.2f}")
    clean, checked = s["clean"], s["checked"]
    worst_rss = max(s[k]["peak_rss_mib"].max for k in s)
    n, big = seed["seed"]["announcements"], seed["seed"]["big"]
    names = {
        "list": f"/list first page p99, guild of {big:,}",
        "autocomplete": "/cancel id autocomplete p99 (nothing typed)",
        "autocomplete_typed": f"/cancel id autocomplete p99 ({lat['typed']!r} typed)",
    }
    aims = [
        {
            "aim": f"peak RSS of the start-up, {n:,} announcements",
            "shown": f"{worst_rss:.0f} MiB (worst run)",
            "target": f"< {AIM_RSS_MIB:.0f} MB",
            "pass": worst_rss * 1.048576 < AIM_RSS_MIB,
        },
        *(
            {
                "aim": names[k] + ", through the bot",
                "shown": f"{r['p99_ms'].median:.1f} ms",
                "target": f"< {AIM_P99_MS:.0f} ms",
                "pass": r["p99_ms"].median < AIM_P99_MS,
            }
            for k, r in lat["bot"].items()
        ),
        {
            "aim": f"dispatch pass flat, {ps['sizes']['big']['pending']:,} vs "
            f"{ps['sizes']['small']['pending']:,} pending",
            "shown": f"ratio {ps['ratio']['pass']:.2f}",
            "target": f"<= {AIM_PASS_RATIO}",
            "pass": ps["ratio"]["pass"] <= AIM_PASS_RATIO,
        },
        {
            "aim": f"start-up to ready, {n:,} announcements (clean close / checked in full)",
            "shown": f"{clean['ready_s'].median:.3f} s / {checked['ready_s'].median:.2f} s",
            "target": "informational",
            "pass": True,
        },
    ]
    print_aims(aims)
    return aims


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--size", choices=sorted(SIZES), default="full")
    p.add_argument("--quick", action="store_true", help="the same as --size quick, fewer calls")
    p.add_argument("--runs", type=int, default=None, help="runs of each measurement (3)")
    p.add_argument("--calls", type=int, default=None, help="calls per run for a p99 (200)")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--cache", type=Path, default=None, help="where seeded databases are kept")
    opts = p.parse_args()
    size = "quick" if opts.quick else opts.size
    runs = opts.runs or (1 if opts.quick else 3)
    calls = opts.calls or (30 if opts.quick else 200)
    repeats = 20 if opts.quick else 100
    seed = SIZES[size]
    cache = opts.cache or Path(tempfile.gettempdir())

    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    loadavg_start = load_average()
    big, seeded = asyncio.run(cached(seed, cache, log))
    small, _ = asyncio.run(cached(SMALL, cache, log))
    log("start-up")
    startup = section_startup(big, runs)
    log("latency")
    latency = section_latency(big, seed, runs, calls)
    log("dispatch pass")
    passes = section_pass(small, big, repeats)
    doc: dict[str, Any] = {
        "meta": {
            "command": " ".join([".venv/bin/python", "bench/scale_bench.py", *sys.argv[1:]]),
            "started": started,
            "loadavg_start": loadavg_start,
            "loadavg_end": load_average(),
            "git": git_state(),
            "cache": str(cache),
        },
        "size": size,
        "runs": runs,
        "seed": seeded,
        "startup": startup,
        "latency": latency,
        "pass": passes,
    }
    out(
        f"checkout: {doc['meta']['git']}; load average (1/5/15 min) {loadavg_start} at the "
        f"start, {doc['meta']['loadavg_end']} at the end"
    )
    doc["aims"] = report(doc)
    if opts.json is not None:
        opts.json.write_text(json.dumps(to_jsonable(doc), indent=2), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
