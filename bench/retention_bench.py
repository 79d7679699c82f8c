"""What the database holds after N days of a server whose announcements all repeat every
minute, with the retention job (``HISTORY_DAYS``) and without it (the scheduler's own
retention of its jobs and runs, a week, runs in both).

Run from the project root with the project's virtualenv::

    .venv/bin/python bench/retention_bench.py                      # 1 announcement, 120 days
    .venv/bin/python bench/retention_bench.py --announcements 2 --days 40 --history-days 30

Each simulated day writes, per announcement and minute, the rows one occurrence leaves (as
the bot and the scheduler write them: the delivery record, the occurrence's job and its
arguments, its run), moves a FakeClock one day on, runs the scheduler's sweep, and (with
pruning) the retention job's run exactly as the bot runs it, on SQLite. Rows grow linearly
with the number of announcements (the factor to a server at its limit of 1,000 is printed).
Also printed: how long each daily run of the retention took, the longest time between two of
its commits (what a post or a command may wait for, at most), and the MiB of the database's
pages in use (its free pages, which later writes reuse, left out: SQLite's file does not
shrink by itself); then one run over a backlog (``--backlog`` announcements, 3 days, all but
half a day past the retention, as after an upgrade): its transactions and their times.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.announcements.retention import Retention
from bot.app import bot_migrations
from scheduler import Registry, Scheduler, SqliteStore
from scheduler.testing import FakeClock

DAY = 86400.0
START = 1_900_000_000.0  # 2030-03-17, a Sunday (any day would do)
TABLES = ("bot_deliveries", "scheduler_jobs", "scheduler_job_args", "scheduler_runs")


async def seed_announcements(sched: Scheduler, n: int) -> list[int]:
    async with sched.transaction() as ctx:
        for i in range(n):
            await ctx.db.execute(
                "INSERT INTO bot_announcements (guild_id, local_id, channel_id, author_id, "
                "content, allowed_mentions, first_ts, timezone, repeat_kind, repeat_every, "
                "state, created_at, updated_at, schedule_name) VALUES (1, ?, 10, 100, 'tick', "
                "'{}', ?, 'UTC', 'interval', 60, 'scheduled', ?, ?, ?)",
                (i + 1, START, START, START, f"announcement:{i + 1}"),
            )
        cur = await ctx.db.execute("SELECT id FROM bot_announcements ORDER BY id")
        return [int(r["id"]) for r in await cur.fetchall()]


async def one_day(sched: Scheduler, anns: list[int], day_start: float, next_job: int) -> int:
    """The rows of one day of every-minute occurrences of ``anns``, minute by minute (as
    they are written); returns the next free job id."""
    deliveries, jobs, args, runs = [], [], [], []
    job_id = next_job
    for minute in range(1440):
        ts = day_start + 60 * minute
        for ann in anns:
            deliveries.append((ann, ts, job_id, f"n{ann}:{ts}", ts, 900_000 + job_id, ts))
            jobs.append(
                (job_id, f"announcement:{ann}:{ts!r}", f"announcement:{ann}", ts, ts, ts, ts, ts)
            )
            args.append((job_id, json.dumps({"announcement_id": ann})))
            runs.append((job_id, ts, ts, ts))
            job_id += 1
    async with sched.transaction() as ctx:
        await ctx.db.executemany(
            "INSERT INTO bot_deliveries (announcement_id, fire_ts, job_id, nonce, state, "
            "first_attempt_at, message_id, sent_at) VALUES (?, ?, ?, ?, 'sent', ?, ?, ?)",
            deliveries,
        )
        await ctx.db.executemany(
            "INSERT INTO scheduler_jobs (id, fn, kind, state, next_ts, max_failures, "
            "initial_backoff, backoff_base, idempotent, run_count, idempotency_key, "
            "schedule_name, fire_ts, created_at, updated_at, finished_at) VALUES "
            "(?, 'announcements:send', 'action', 'success', ?, 1, 1.0, 2.0, 1, 1, "
            "?, ?, ?, ?, ?, ?)",
            [(j[0], j[3], j[1], j[2], j[4], j[5], j[6], j[7]) for j in jobs],
        )
        await ctx.db.executemany(
            "INSERT INTO scheduler_job_args (job_id, args) VALUES (?, ?)", args
        )
        await ctx.db.executemany(
            "INSERT INTO scheduler_runs (job_id, fn, attempt, run_count, due_ts, started_at, "
            "finished_at, outcome) VALUES (?, 'announcements:send', 0, 1, ?, ?, ?, 'success')",
            runs,
        )
    return job_id


async def counts(sched: Scheduler) -> dict[str, int]:
    out = {}
    async with sched.reader() as db:
        for table in TABLES:
            cur = await db.execute(f"SELECT COUNT(*) AS n FROM {table}")  # noqa: S608
            row = await cur.fetchone()
            out[table] = 0 if row is None else int(row["n"])
    return out


def used_bytes(db: Path) -> int:
    """The pages of the database that hold data (its free pages, reused by later writes,
    left out; the write-ahead log's newer pages counted), read on a connection of its own."""
    conn = sqlite3.connect(db)
    try:
        pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
        free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
        size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    finally:
        conn.close()
    return (pages - free) * size


async def simulate(
    folder: Path, announcements: int, days: int, history_days: float, prune: bool, report: set[int]
) -> dict[int, dict[str, Any]]:
    """Rows (and the retention's timings) at the end of each day in ``report``."""
    db = folder / ("with.db" if prune else "without.db")
    clock = FakeClock(START)
    registry = Registry()
    sched = Scheduler(
        SqliteStore(str(db)), registry, clock=clock, migrations=[bot_migrations()],
        sweep_interval=3600.0,
    )  # fmt: skip
    retention = Retention(sched, history_days * DAY)
    longest = 0.0
    mark = time.perf_counter()

    async def timed_step() -> None:
        nonlocal longest, mark
        now = time.perf_counter()
        longest = max(longest, now - mark)
        mark = now

    retention.pause_point = timed_step
    out: dict[int, dict[str, Any]] = {}
    async with sched:
        anns = await seed_announcements(sched, announcements)
        next_job = 1
        for day in range(1, days + 1):
            next_job = await one_day(sched, anns, START + (day - 1) * DAY, next_job)
            clock.set(START + day * DAY)
            await sched.sweep()  # the scheduler's own retention: a week of jobs and runs
            took = 0.0
            if prune:
                longest = 0.0
                mark = began = time.perf_counter()
                await retention.prune()
                took = time.perf_counter() - began
            if day in report:
                found: dict[str, Any] = dict(await counts(sched))
                found["total"] = sum(found[t] for t in TABLES)
                found["prune_s"] = round(took, 3)
                found["longest_transaction_ms"] = round(longest * 1000, 1)
                found["data_mib"] = round(used_bytes(db) / 2**20, 1)
                out[day] = found
    return out


async def backlog(folder: Path, announcements: int, days: int) -> dict[str, Any]:
    """One run of the retention over a backlog: ``days`` days of ``announcements``
    every-minute announcements, all but the last half day past the retention (as after an
    upgrade, or HISTORY_DAYS lowered): how many rows, transactions, and how long each."""
    clock = FakeClock(START)
    sched = Scheduler(SqliteStore(str(folder / "backlog.db")), Registry(), clock=clock,
                      migrations=[bot_migrations()])  # fmt: skip
    async with sched:
        anns = await seed_announcements(sched, announcements)
        next_job = 1
        for day in range(days):
            next_job = await one_day(sched, anns, START + day * DAY, next_job)
        clock.set(START + days * DAY)
        retention = Retention(sched, DAY / 2)
        marks = [time.perf_counter()]

        async def mark() -> None:
            marks.append(time.perf_counter())

        retention.pause_point = mark
        done = await retention.prune()
    steps = sorted(b - a for a, b in pairwise(marks))
    return {
        "deleted": done.deliveries,
        "transactions": done.transactions,
        "total_s": round(marks[-1] - marks[0], 3),
        "median_ms": round(steps[len(steps) // 2] * 1000, 1),
        "max_ms": round(steps[-1] * 1000, 1),
    }


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--announcements", type=int, default=1, help="every-minute ones (1)")
    ap.add_argument("--days", type=int, default=120, help="simulated days (120)")
    ap.add_argument("--history-days", type=float, default=90.0, help="HISTORY_DAYS (90)")
    ap.add_argument(
        "--backlog", type=int, default=10, help="announcements of the backlog run (10; 0: none)"
    )
    ap.add_argument("--json", type=Path, help="write the figures here too")
    return ap.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    report = {d for d in (1, 7, 30, 60, 90, 120, 180, 365) if d <= args.days} | {args.days}
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for prune in (False, True):
            name = "with" if prune else "without"
            results[name] = asyncio.run(
                simulate(Path(tmp), args.announcements, args.days, args.history_days, prune, report)
            )
    n = args.announcements
    print(
        f"{n} announcement(s) repeating every minute, HISTORY_DAYS={args.history_days:g}: rows "
        "after each day (x{0} for 1,000 announcements)".format(1000 // n if n else 0)
    )
    head = f"{'day':>4} {'without':>11} {'with':>11} {'deliveries w/o':>15} {'deliveries w/':>14}"
    print(head + f" {'prune s':>8} {'longest tx ms':>14} {'MiB w/o':>8} {'MiB w/':>7}")
    for day in sorted(report):
        a, b = results["without"][day], results["with"][day]
        print(
            f"{day:>4} {a['total']:>11,} {b['total']:>11,} {a['bot_deliveries']:>15,} "
            f"{b['bot_deliveries']:>14,} {b['prune_s']:>8} {b['longest_transaction_ms']:>14} "
            f"{a['data_mib']:>8} {b['data_mib']:>7}"
        )
    if args.backlog:
        with tempfile.TemporaryDirectory() as tmp:
            found = asyncio.run(backlog(Path(tmp), args.backlog, 3))
        results["backlog"] = found
        print(
            f"backlog: {args.backlog} every-minute announcements, 3 days, all but the last half "
            f"day past the retention: {found['deleted']:,} delivery records deleted in "
            f"{found['transactions']} transactions, {found['total_s']} s in all; between two "
            f"commits {found['median_ms']} ms (median), {found['max_ms']} ms at most"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2, sort_keys=True), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
