"""Benchmarks of the scheduler on its SQLite store, with a raw SQLite peer from the same run.

Run from the project root with the project's virtualenv::

    .venv/bin/python bench/scheduler_bench.py                  # everything (~4 minutes)
    .venv/bin/python bench/scheduler_bench.py --quick          # a tiny smoke run (< 20 s)
    .venv/bin/python bench/scheduler_bench.py --only throughput,raw --runs 3 --json out.json
    .venv/bin/python bench/scheduler_bench.py --profile actions   # where the time goes
    .venv/bin/python bench/scheduler_bench.py --store postgres --quick   # bench/pg_bench.py

Sections (``--only`` takes a comma-separated list of these names):

``throughput``  10,000 due-now no-op jobs from the first enqueue to the last ``success``,
                for actions and for mutations, enqueued 100 per transaction while the
                scheduler runs.
``raw``         the machine's raw SQLite limit for the same work (stdlib sqlite3, WAL,
                synchronous=NORMAL, the scheduler_jobs schema, 3 transactions per job), the
                same batched (3 transactions per 100 jobs: the most those rows allow, with
                no scheduling at all) and aiosqlite's one-statement-per-hop cycle; with
                ``throughput`` also selected, they are measured in alternating rounds and
                the ratios are printed (ours / batched is the share of the batched limit).
``lateness``    1,000 actions spread evenly over 10 s on the real clock: how late each ran.
``idle``        CPU used over 30 s idle with 100,000 jobs pending an hour out.
``pass``        one dispatch pass (claim a few due jobs + record their completion) with
                1,000 and with 1,000,000 future jobs pending: it should not grow.

Every figure is the median of several runs, shown with min and max. The aims at the end are
informational: the exit code is 0 whether they are met or not.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import itertools
import json
import os
import platform
import pstats
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiosqlite

from bench._stats import log, out, percentile, print_aims, ratio, summarize, to_jsonable
from scheduler import JobKind, Registry, Scheduler, SqliteStore
from scheduler.migrations import scheduler_migrations
from scheduler.store_types import NewJob, Outcome

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterator

T = TypeVar("T")

SECTIONS = ("throughput", "raw", "lateness", "idle", "pass")

ACTION_FN = "bench:noop_action"
MUTATION_FN = "bench:noop_mutation"
LATE_FN = "bench:record_lateness"

# Aims (from the issue).
AIM_ACTION_RATIO = 0.50
AIM_BATCHED_SHARE = 0.25  # issue 12: at least a quarter of the batched raw limit
AIM_MUTATIONS_PER_S = 2600.0
AIM_LATENESS_P99_MS = 3.0
AIM_IDLE_CPU_PER_20S = 0.02
AIM_PASS_FLAT_RATIO = 1.5  # "flat": the big store's pass costs at most 1.5x the small one's


class BenchError(RuntimeError):
    """A run did not end the way the benchmark requires (a job not in success, ...)."""


# --- parameters --------------------------------------------------------------------------------


class Params:
    """How big each section is; ``--quick`` shrinks everything."""

    def __init__(self, quick: bool, runs: int | None, idle_runs: int | None) -> None:
        self.quick = quick
        self.runs = runs if runs is not None else (1 if quick else 5)
        self.idle_runs = idle_runs if idle_runs is not None else min(self.runs, 3)
        self.enqueue_batch = 100
        if quick:
            self.jobs = 500
            self.raw_jobs = 500
            self.aiosqlite_jobs = 200
            self.late_jobs, self.late_span, self.late_lead = 50, 0.5, 0.5
            self.idle_pending, self.idle_window = 2_000, 2.0
            self.pass_sizes = (1_000, 5_000)
            self.pass_repeats, self.pass_due = 10, 8
        else:
            self.jobs = 10_000
            self.raw_jobs = 10_000
            self.aiosqlite_jobs = 2_000
            self.late_jobs, self.late_span, self.late_lead = 1_000, 10.0, 1.0
            self.idle_pending, self.idle_window = 100_000, 30.0
            self.pass_sizes = (1_000, 1_000_000)
            self.pass_repeats, self.pass_due = 200, 8


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Each run gets a fresh event loop."""
    return asyncio.run(coro)


def driver_passes(sched: Scheduler) -> int | None:
    """How many dispatch passes the driver ran (a counter it keeps for benchmarks)."""
    driver = getattr(sched, "_driver", None)
    passes = getattr(driver, "passes", None)
    return passes if isinstance(passes, int) else None


# --- databases ---------------------------------------------------------------------------------


def scheduler_schema_sql() -> list[str]:
    """The scheduler's own migrations for SQLite: the real scheduler_jobs table and indexes."""
    return [m.sql for m in scheduler_migrations().load("sqlite")]


async def migrate(path: Path) -> None:
    """Create a database with the scheduler's schema, the way the store does."""
    store = SqliteStore(path)
    await store.open()
    await store.close()


_BUILD_JOB = (
    "INSERT INTO scheduler_jobs (id, fn, kind, state, next_ts, max_failures, initial_backoff, "
    "backoff_base, idempotent, created_at, updated_at) "
    "VALUES (?, ?, ?, 'pending', ?, ?, 1.0, 2.0, 0, ?, ?)"
)
_BUILD_ARGS = "INSERT INTO scheduler_job_args (job_id, args) VALUES (?, 'null')"


def build_pending(
    path: Path, count: int, first_ts: float, spread: float, kind: JobKind | None = None
) -> float:
    """Add ``count`` pending jobs (each with its args row; half actions and half mutations
    unless ``kind`` is given) due from ``first_ts`` over ``spread`` seconds, by direct
    ``executemany`` in ONE transaction on a scheduler-migrated database. Returns the seconds
    it took."""

    def job_kind(i: int) -> JobKind:
        if kind is not None:
            return kind
        return JobKind.MUTATION if i % 2 else JobKind.ACTION

    started = time.perf_counter()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("BEGIN IMMEDIATE")
        base = int(conn.execute("SELECT coalesce(max(id), 0) FROM scheduler_jobs").fetchone()[0])
        now = time.time()
        step = spread / count
        rows = (
            (
                base + i + 1,
                MUTATION_FN if k is JobKind.MUTATION else ACTION_FN,
                k.value,
                first_ts + i * step,
                4 if k is JobKind.MUTATION else 1,
                now,
                now,
            )
            for i, k in ((i, job_kind(i)) for i in range(count))
        )
        conn.executemany(_BUILD_JOB, rows)
        conn.executemany(_BUILD_ARGS, ((base + i + 1,) for i in range(count)))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return time.perf_counter() - started


async def job_states(sched: Scheduler) -> dict[str, int]:
    async with sched.reader() as db:
        cur = await db.execute("SELECT state, count(*) FROM scheduler_jobs GROUP BY state")
        rows = await cur.fetchall()
    return {str(r[0]): int(r[1]) for r in rows}


# --- 1. throughput -----------------------------------------------------------------------------


class Countdown:
    """Counts handler calls; its event is set at the ``n``-th (no polling needed)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.count = 0
        self.done = asyncio.Event()

    def hit(self) -> None:
        self.count += 1
        if self.count == self.n:
            self.done.set()


def noop_registry(countdown: Countdown | None = None) -> Registry:
    reg = Registry()

    @reg.action(ACTION_FN)
    async def noop_action(ctx: Any, args: Any) -> None:
        if countdown is not None:
            countdown.hit()

    @reg.mutation(MUTATION_FN)
    async def noop_mutation(ctx: Any, args: Any) -> None:
        if countdown is not None:
            countdown.hit()

    return reg


async def throughput_run(kind: str, n: int, batch: int, folder: Path) -> dict[str, float]:
    """Enqueue ``n`` due-now no-op jobs, ``batch`` per transaction, while the scheduler runs;
    time from the first enqueue to the last job's success (handler counted, then
    ``wait_idle`` so the completions are committed), then check the database."""
    countdown = Countdown(n)
    fn = ACTION_FN if kind == "actions" else MUTATION_FN
    path = folder / f"throughput-{kind}-{time.monotonic_ns()}.db"
    async with Scheduler(SqliteStore(path), noop_registry(countdown)) as sched:
        await sched.wait_idle()  # the start-up sweep and first pass are not timed
        passes0 = driver_passes(sched)
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            async with sched.transaction() as ctx:
                for _ in range(min(batch, n - start)):
                    await ctx.scheduler.enqueue(fn)
        t_enqueued = time.perf_counter()
        await countdown.done.wait()
        t_handlers = time.perf_counter()
        await sched.wait_idle()
        t_end = time.perf_counter()
        passes1 = driver_passes(sched)
        states = await job_states(sched)
    if states != {"success": n}:
        raise BenchError(f"{kind}: expected {n} jobs in success, found {states}")
    total = t_end - t0
    result = {
        "jobs_per_s": n / total,
        "total_s": total,
        "enqueue_s": t_enqueued - t0,
        "handlers_s": t_handlers - t0,
    }
    if passes0 is not None and passes1 is not None:
        result["passes"] = float(passes1 - passes0)
    return result


async def enqueue_only_run(kind: str, n: int, batch: int, folder: Path) -> float:
    """Diagnostics: the enqueue half alone (jobs due in an hour, so the running scheduler
    claims nothing). Jobs/s."""
    fn = ACTION_FN if kind == "actions" else MUTATION_FN
    path = folder / f"enqueue-{kind}-{time.monotonic_ns()}.db"
    async with Scheduler(SqliteStore(path), noop_registry()) as sched:
        await sched.wait_idle()
        later = time.time() + 3600.0
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            async with sched.transaction() as ctx:
                for _ in range(min(batch, n - start)):
                    await ctx.scheduler.enqueue(fn, run_at=later)
        elapsed = time.perf_counter() - t0
    return n / elapsed


async def drain_run(kind: str, n: int, folder: Path) -> float:
    """Diagnostics: the dispatch half alone. ``n`` due jobs are written directly before the
    scheduler starts; timed from ``start()`` to every job in success. Jobs/s."""
    job_kind = JobKind.ACTION if kind == "actions" else JobKind.MUTATION
    path = folder / f"drain-{kind}-{time.monotonic_ns()}.db"
    await migrate(path)
    build_pending(path, n, time.time() - 60.0, 1.0, job_kind)
    countdown = Countdown(n)
    sched = Scheduler(SqliteStore(path), noop_registry(countdown))
    t0 = time.perf_counter()
    await sched.start()
    try:
        await countdown.done.wait()
        await sched.wait_idle()
        elapsed = time.perf_counter() - t0
        states = await job_states(sched)
    finally:
        await sched.stop()
    if states != {"success": n}:
        raise BenchError(f"drain {kind}: expected {n} jobs in success, found {states}")
    return n / elapsed


# --- 2. raw SQLite ---------------------------------------------------------------------------

_RAW_INSERT = (
    "INSERT INTO scheduler_jobs (fn, kind, state, next_ts, max_failures, initial_backoff, "
    "backoff_base, idempotent, created_at, updated_at) "
    "VALUES (?, 'action', 'pending', ?, 1, 1.0, 2.0, 0, ?, ?)"
)
_RAW_CLAIM = (
    "UPDATE scheduler_jobs SET state = 'in_progress', run_count = run_count + 1, "
    "lease_expires_at = ?, updated_at = ? WHERE id = ? AND state = 'pending'"
)
_RAW_DONE = (
    "UPDATE scheduler_jobs SET state = 'success', lease_expires_at = NULL, updated_at = ?, "
    "finished_at = ? WHERE id = ? AND state = 'in_progress'"
)


def raw_database(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise BenchError(f"could not switch {path} to WAL (got {mode!r})")
    conn.execute("PRAGMA synchronous = NORMAL")
    for sql in scheduler_schema_sql():
        conn.executescript(sql)
    return conn


def count_success(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT count(*) FROM scheduler_jobs WHERE state = 'success'").fetchone()
    return int(row[0])


def raw_sqlite_run(n: int, folder: Path) -> float:
    """Stdlib sqlite3, one job at a time: insert, claim, complete, each its own transaction."""
    path = folder / f"raw-{time.monotonic_ns()}.db"
    conn = raw_database(path)
    try:
        execute = conn.execute
        t0 = time.perf_counter()
        for _ in range(n):
            now = time.time()
            execute("BEGIN IMMEDIATE")
            job_id = execute(_RAW_INSERT, (ACTION_FN, now, now, now)).lastrowid
            execute("COMMIT")
            execute("BEGIN IMMEDIATE")
            execute(_RAW_CLAIM, (now + 30.0, now, job_id))
            execute("COMMIT")
            execute("BEGIN IMMEDIATE")
            execute(_RAW_DONE, (now, now, job_id))
            execute("COMMIT")
        elapsed = time.perf_counter() - t0
        if count_success(conn) != n:
            raise BenchError("raw sqlite3: not every job reached success")
    finally:
        conn.close()
    return n / elapsed


RAW_BATCH = 100
"""Jobs per transaction of the batched raw peer (the scheduler's own enqueue batch)."""


def raw_sqlite_batched_run(n: int, folder: Path, batch: int = RAW_BATCH) -> float:
    """Stdlib sqlite3, ``batch`` jobs per transaction: insert them, claim them, complete
    them (three transactions per batch, one ``executemany`` each): the most the same rows
    and statements can do on this machine with no scheduling at all."""
    path = folder / f"raw-batched-{time.monotonic_ns()}.db"
    conn = raw_database(path)
    try:
        execute, many = conn.execute, conn.executemany
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            k = min(batch, n - start)
            now = time.time()
            execute("BEGIN IMMEDIATE")
            first = execute(_RAW_INSERT, (ACTION_FN, now, now, now)).lastrowid
            many(_RAW_INSERT, [(ACTION_FN, now, now, now)] * (k - 1))
            execute("COMMIT")
            ids = range(int(first or 0), int(first or 0) + k)
            execute("BEGIN IMMEDIATE")
            many(_RAW_CLAIM, [(now + 30.0, now, i) for i in ids])
            execute("COMMIT")
            execute("BEGIN IMMEDIATE")
            many(_RAW_DONE, [(now, now, i) for i in ids])
            execute("COMMIT")
        elapsed = time.perf_counter() - t0
        if count_success(conn) != n:
            raise BenchError("raw sqlite3 batched: not every job reached success")
    finally:
        conn.close()
    return n / elapsed


async def aiosqlite_run(n: int, folder: Path) -> float:
    """The same three transactions per job through plain aiosqlite: ``await execute`` then
    ``await commit`` for each (implicit BEGIN), so one thread hop per statement."""
    path = folder / f"aiosqlite-{time.monotonic_ns()}.db"
    raw_database(path).close()
    async with aiosqlite.connect(path) as db:
        await db.execute("PRAGMA synchronous = NORMAL")
        t0 = time.perf_counter()
        for _ in range(n):
            now = time.time()
            cur = await db.execute(_RAW_INSERT, (ACTION_FN, now, now, now))
            job_id = cur.lastrowid
            await db.commit()
            await db.execute(_RAW_CLAIM, (now + 30.0, now, job_id))
            await db.commit()
            await db.execute(_RAW_DONE, (now, now, job_id))
            await db.commit()
        elapsed = time.perf_counter() - t0
    conn = sqlite3.connect(path)
    try:
        if count_success(conn) != n:
            raise BenchError("aiosqlite: not every job reached success")
    finally:
        conn.close()
    return n / elapsed


def section_throughput_raw(p: Params, want: set[str], folder: Path) -> dict[str, Any]:
    """Throughput and the raw peer, in alternating rounds so drift hits both alike."""
    samples: dict[str, list[dict[str, float]]] = {"actions": [], "mutations": []}
    raw: list[float] = []
    batched: list[float] = []
    aio: list[float] = []
    paired: dict[str, list[float]] = {"actions": [], "mutations": []}
    paired_batched: dict[str, list[float]] = {"actions": [], "mutations": []}
    paired_aio: dict[str, list[float]] = {"actions": [], "mutations": []}
    for r in range(p.runs):
        log(f"  round {r + 1}/{p.runs}")
        raw_now = batched_now = aio_now = None
        if "raw" in want:
            raw_now = raw_sqlite_run(p.raw_jobs, folder)
            raw.append(raw_now)
            batched_now = raw_sqlite_batched_run(p.jobs, folder)
            batched.append(batched_now)
            aio_now = run_async(aiosqlite_run(p.aiosqlite_jobs, folder))
            aio.append(aio_now)
        if "throughput" in want:
            for kind in ("actions", "mutations"):
                got = run_async(throughput_run(kind, p.jobs, p.enqueue_batch, folder))
                samples[kind].append(got)
                if raw_now is not None and batched_now is not None and aio_now is not None:
                    paired[kind].append(got["jobs_per_s"] / raw_now)
                    paired_batched[kind].append(got["jobs_per_s"] / batched_now)
                    paired_aio[kind].append(got["jobs_per_s"] / aio_now)
        for f in folder.glob("*.db*"):
            f.unlink()
    result: dict[str, Any] = {}
    if "throughput" in want:
        tp: dict[str, Any] = {"jobs": p.jobs, "enqueue_batch": p.enqueue_batch}
        for kind, runs in samples.items():
            tp[kind] = {key: summarize(s[key] for s in runs) for key in runs[0]}
        result["throughput"] = tp
    if "raw" in want:
        rw: dict[str, Any] = {
            "jobs": p.raw_jobs,
            "sqlite3": {"jobs_per_s": summarize(raw)},
            "sqlite3_batched": {
                "jobs": p.jobs, "batch": RAW_BATCH, "jobs_per_s": summarize(batched),
            },
            "aiosqlite": {"jobs": p.aiosqlite_jobs, "jobs_per_s": summarize(aio)},
        }  # fmt: skip
        if "throughput" in want:
            rw["ratio"] = {kind: summarize(v) for kind, v in paired.items()}
            rw["ratio_batched"] = {kind: summarize(v) for kind, v in paired_batched.items()}
            rw["ratio_aiosqlite"] = {kind: summarize(v) for kind, v in paired_aio.items()}
        result["raw"] = rw
    return result


def print_throughput(tp: dict[str, Any]) -> None:
    out(f"\n== 1. Throughput: {tp['jobs']:,} due-now no-op jobs, first enqueue -> last success")
    out(
        f"   (enqueued {tp['enqueue_batch']} jobs per transaction while the scheduler runs; "
        "timed until the handler count reaches the total, then wait_idle so every completion "
        "is committed; states checked in the DB afterwards)"
    )
    for kind in ("actions", "mutations"):
        s = tp[kind]
        extra = (
            f"enqueue done {s['enqueue_s'].median:.2f} s, last handler "
            f"{s['handlers_s'].median:.2f} s, all success {s['total_s'].median:.2f} s"
        )
        if "passes" in s:
            extra += f", {s['passes'].median:.0f} passes"
        out(f"   {kind:<10} {s['jobs_per_s'].show('jobs/s')}")
        out(f"   {'':<10} [{extra}]")


def print_raw(rw: dict[str, Any]) -> None:
    out(
        "\n== 2. Raw SQLite limit, same machine, same run: stdlib sqlite3, WAL, "
        "synchronous=NORMAL, the scheduler_jobs schema"
    )
    out("   (3 transactions per job: INSERT; claim = UPDATE state; complete = UPDATE state)")
    out(f"   sqlite3    {rw['sqlite3']['jobs_per_s'].show('jobs/s')}  [{rw['jobs']:,} jobs]")
    bt = rw["sqlite3_batched"]
    out(
        f"   batched    {bt['jobs_per_s'].show('jobs/s')}  [{bt['jobs']:,} jobs; the same "
        f"statements, {bt['batch']} jobs per transaction: 3 transactions per {bt['batch']} jobs]"
    )
    aio = rw["aiosqlite"]
    out(
        f"   aiosqlite  {aio['jobs_per_s'].show('jobs/s')}  [{aio['jobs']:,} jobs; execute + "
        "commit per transaction = 6 thread hops per job]"
    )
    if "ratio" in rw:
        out("   ours / raw sqlite3 (paired per round):")
        for kind, s in rw["ratio"].items():
            out(f"     {kind:<10} {s.show('', 2)}")
        out("   ours / raw sqlite3 batched, the share of the batched limit (paired per round):")
        for kind, s in rw["ratio_batched"].items():
            out(f"     {kind:<10} {s.show('', 2)}")
        out("   ours / aiosqlite one-statement-per-hop (paired per round):")
        for kind, s in rw["ratio_aiosqlite"].items():
            out(f"     {kind:<10} {s.show('', 2)}")
    else:
        out("   (select the throughput section too for the ratio ours / raw)")


# --- 3. lateness -------------------------------------------------------------------------------


async def lateness_run(p: Params, folder: Path) -> list[float]:
    """``n`` actions due evenly over ``span`` seconds (real clock); each records how late it
    started: ``time.time()`` minus the due time it was scheduled for (passed in its args)."""
    n = p.late_jobs
    late: list[float] = []
    done = asyncio.Event()
    reg = Registry()

    @reg.action(LATE_FN)
    async def record(ctx: Any, args: Any) -> None:
        late.append(time.time() - args["due"])
        if len(late) == n:
            done.set()

    path = folder / f"lateness-{time.monotonic_ns()}.db"
    async with Scheduler(SqliteStore(path), reg) as sched:
        await sched.wait_idle()
        first = time.time() + p.late_lead
        step = p.late_span / n
        for start in range(0, n, p.enqueue_batch):
            async with sched.transaction() as ctx:
                for i in range(start, min(n, start + p.enqueue_batch)):
                    due = first + i * step
                    await ctx.scheduler.run_at(due, LATE_FN, {"due": due})
        if time.time() >= first:
            raise BenchError("enqueueing took longer than the lead time; raise late_lead")
        await asyncio.wait_for(done.wait(), timeout=p.late_lead + p.late_span + 60)
        await sched.wait_idle()
        states = await job_states(sched)
    if states != {"success": n}:
        raise BenchError(f"lateness: expected {n} jobs in success, found {states}")
    return late


def section_lateness(p: Params, folder: Path) -> dict[str, Any]:
    p50: list[float] = []
    p99: list[float] = []
    worst: list[float] = []
    for r in range(p.runs):
        log(f"  lateness run {r + 1}/{p.runs} ({p.late_span:.0f} s)")
        late = run_async(lateness_run(p, folder))
        p50.append(percentile(late, 50) * 1000)
        p99.append(percentile(late, 99) * 1000)
        worst.append(max(late) * 1000)
    return {
        "jobs": p.late_jobs,
        "span_s": p.late_span,
        "p50_ms": summarize(p50),
        "p99_ms": summarize(p99),
        "max_ms": summarize(worst),
    }


def print_lateness(s: dict[str, Any]) -> None:
    out(
        f"\n== 3. Lateness: {s['jobs']:,} no-op actions due evenly over {s['span_s']:.0f} s "
        "(SystemClock); time.time() at handler start minus the due time"
    )
    out("   (per run: p50/p99/max over its jobs; shown: median of the runs, min, max)")
    for key, label in (("p50_ms", "p50"), ("p99_ms", "p99"), ("max_ms", "max")):
        out(f"   {label:<4} {s[key].show('ms', 2)}")


# --- 4. idle CPU ---------------------------------------------------------------------------


async def idle_run(p: Params, folder: Path) -> dict[str, float]:
    path = folder / f"idle-{time.monotonic_ns()}.db"
    await migrate(path)
    build_s = build_pending(path, p.idle_pending, time.time() + 3600.0, 60.0)
    async with Scheduler(SqliteStore(path), noop_registry()) as sched:
        await sched.wait_idle()
        await asyncio.sleep(0.2)  # let the start-up sweep's tail settle
        passes0 = driver_passes(sched)
        c0, w0 = time.process_time(), time.perf_counter()
        await asyncio.sleep(p.idle_window)
        c1, w1 = time.process_time(), time.perf_counter()
        passes1 = driver_passes(sched)
        states = await job_states(sched)
    if states != {"pending": p.idle_pending}:
        raise BenchError(f"idle: expected {p.idle_pending} pending jobs, found {states}")
    cpu = c1 - c0
    result = {"cpu_s": cpu, "cpu_per_20s": cpu * 20.0 / (w1 - w0), "build_s": build_s}
    if passes0 is not None and passes1 is not None:
        result["passes"] = float(passes1 - passes0)
    return result


def section_idle(p: Params, folder: Path) -> dict[str, Any]:
    runs = []
    for r in range(p.idle_runs):
        log(f"  idle run {r + 1}/{p.idle_runs} ({p.idle_window:.0f} s)")
        runs.append(run_async(idle_run(p, folder)))
        for f in folder.glob("*.db*"):
            f.unlink()
    result: dict[str, Any] = {
        "pending": p.idle_pending,
        "window_s": p.idle_window,
        "build": "direct executemany in one transaction on a scheduler-migrated database",
    }
    for key in runs[0]:
        result[key] = summarize(r[key] for r in runs)
    return result


def print_idle(s: dict[str, Any]) -> None:
    out(
        f"\n== 4. Idle CPU: {s['window_s']:.0f} s idle with {s['pending']:,} jobs pending an "
        "hour out (time.process_time() delta: all threads)"
    )
    out(f"   (rows built by {s['build']}, {s['build_s'].median:.2f} s)")
    out(f"   per {s['window_s']:.0f} s   {s['cpu_s'].show('s CPU', 4)}")
    out(f"   per 20 s   {s['cpu_per_20s'].show('s CPU', 4)}")
    if "passes" in s:
        out(f"   dispatch passes in the window: {s['passes'].median:.0f}")


# --- 5. dispatch pass vs pending count -----------------------------------------------------------


def due_job(kind: JobKind, now: float) -> NewJob:
    return NewJob(
        fn=ACTION_FN if kind is JobKind.ACTION else MUTATION_FN,
        kind=kind,
        next_ts=now - 1.0,
        max_failures=1 if kind is JobKind.ACTION else 4,
        initial_backoff=1.0,
        backoff_base=2.0,
        idempotent=False,
        args_json="null",
    )


async def one_pass(store: SqliteStore, due: int) -> tuple[float, float]:
    """Make ``due`` jobs due (half actions; untimed), then time ``store.claim_due`` and
    ``store.complete`` of what it claimed. Returns (claim, claim + complete) in ms."""
    now = time.time()
    async with store.transaction(now) as tx:
        for k in range(due):
            kind = JobKind.ACTION if k % 2 else JobKind.MUTATION
            await tx.enqueue(due_job(kind, now))
    now = time.time()
    t0 = time.perf_counter()
    claim = await store.at(now).claim_due(now + 30.0, mutation_limit=64, action_limit=64)
    t1 = time.perf_counter()
    report = await store.at(time.time()).complete(
        [Outcome(j, ok=True, value_json="null") for j in claim.jobs]
    )
    t2 = time.perf_counter()
    if len(claim.jobs) != due or report.applied != due:
        raise BenchError(
            f"pass: claimed {len(claim.jobs)} and completed {report.applied}, expected {due}"
        )
    if claim.next_due is None or claim.next_due < now:
        raise BenchError("pass: next_due should be the first future job")
    return (t1 - t0) * 1000, (t2 - t0) * 1000


async def pass_runs(p: Params, folder: Path) -> dict[str, Any]:
    """One store per size, each with that many future jobs; no scheduler runs, so nothing
    else claims. The repeats alternate between the stores, so drift hits every size alike."""
    stores: dict[int, SqliteStore] = {}
    built: dict[int, float] = {}
    claims: dict[int, list[float]] = {n: [] for n in p.pass_sizes}
    passes: dict[int, list[float]] = {n: [] for n in p.pass_sizes}
    try:
        for pending in p.pass_sizes:
            log(f"  pass: building {pending:,} pending jobs")
            path = folder / f"pass-{pending}-{time.monotonic_ns()}.db"
            await migrate(path)
            built[pending] = build_pending(path, pending, time.time() + 3600.0, 86_400.0)
            stores[pending] = SqliteStore(path)
            await stores[pending].open()
        log(f"  pass: {p.pass_repeats} repeats per size")
        warmup = max(3, p.pass_repeats // 10)
        for r in range(warmup + p.pass_repeats):
            for pending, store in stores.items():
                claim_ms, pass_ms = await one_pass(store, p.pass_due)
                if r >= warmup:
                    claims[pending].append(claim_ms)
                    passes[pending].append(pass_ms)
    finally:
        for store in stores.values():
            await store.close()
    return {
        str(n): {
            "build_s": built[n],
            "claim_ms": summarize(claims[n]),
            "pass_ms": summarize(passes[n]),
        }
        for n in p.pass_sizes
    }


def section_pass(p: Params, folder: Path) -> dict[str, Any]:
    sizes = run_async(pass_runs(p, folder))
    for f in folder.glob("*.db*"):
        f.unlink()
    small, big = (sizes[str(n)] for n in (p.pass_sizes[0], p.pass_sizes[-1]))
    return {
        "due_per_pass": p.pass_due,
        "repeats": p.pass_repeats,
        "build": "direct executemany in one transaction on a scheduler-migrated database",
        "sizes": sizes,
        "ratio": {
            "small": p.pass_sizes[0],
            "big": p.pass_sizes[-1],
            "claim": ratio(big["claim_ms"].median, small["claim_ms"].median),
            "pass": ratio(big["pass_ms"].median, small["pass_ms"].median),
        },
    }


def print_pass(s: dict[str, Any]) -> None:
    out(
        f"\n== 5. One dispatch pass: claim_due + complete of {s['due_per_pass']} due jobs "
        f"(half actions), median of {s['repeats']} repeats, alternating between the sizes"
    )
    out(f"   (future pending jobs built by {s['build']})")
    for pending, r in s["sizes"].items():
        out(
            f"   {int(pending):>9,} pending: pass {r['pass_ms'].show('ms', 3)}; "
            f"claim alone {r['claim_ms'].median:.3f} ms  [rows built in {r['build_s']:.1f} s]"
        )
    rt = s["ratio"]
    out(
        f"   ratio {rt['big']:,} / {rt['small']:,}: pass {rt['pass']:.2f}x, "
        f"claim {rt['claim']:.2f}x"
    )


# --- aims ----------------------------------------------------------------------------------


def evaluate_aims(res: dict[str, Any]) -> list[dict[str, Any]]:
    aims: list[dict[str, Any]] = []

    def add(name: str, value: float, target: str, ok: bool, shown: str) -> None:
        aims.append({"aim": name, "value": value, "target": target, "pass": ok, "shown": shown})

    ratio_ = res.get("raw", {}).get("ratio")
    if ratio_ is not None:
        v = ratio_["actions"].median
        add(
            "due-now actions vs raw SQLite",
            v,
            f">= {AIM_ACTION_RATIO:.0%} of raw",
            v >= AIM_ACTION_RATIO,
            f"{v:.0%} of raw",
        )
    share = res.get("raw", {}).get("ratio_batched")
    if share is not None:
        v = share["actions"].median
        add(
            f"due-now actions as a share of raw SQLite batched {RAW_BATCH} per transaction",
            v,
            f">= {AIM_BATCHED_SHARE:.0%} of batched raw",
            v >= AIM_BATCHED_SHARE,
            f"{v:.0%} of batched raw",
        )
    tp = res.get("throughput")
    if tp is not None:
        v = tp["mutations"]["jobs_per_s"].median
        add(
            "due-now mutations",
            v,
            f">= {AIM_MUTATIONS_PER_S:,.0f} jobs/s",
            v >= AIM_MUTATIONS_PER_S,
            f"{v:,.0f} jobs/s",
        )
    late = res.get("lateness")
    if late is not None:
        v = late["p99_ms"].median
        add(
            "lateness p99",
            v,
            f"< {AIM_LATENESS_P99_MS} ms",
            v < AIM_LATENESS_P99_MS,
            f"{v:.2f} ms",
        )
    idle = res.get("idle")
    if idle is not None:
        v = idle["cpu_per_20s"].median
        add(
            "idle CPU",
            v,
            f"< {AIM_IDLE_CPU_PER_20S} s per 20 s",
            v < AIM_IDLE_CPU_PER_20S,
            f"{v:.4f} s per 20 s",
        )
    ps = res.get("pass")
    if ps is not None:
        v = ps["ratio"]["pass"]
        rt = ps["ratio"]
        add(
            f"pass time flat {rt['small']:,} -> {rt['big']:,} pending",
            v,
            f"ratio <= {AIM_PASS_FLAT_RATIO}",
            v <= AIM_PASS_FLAT_RATIO,
            f"{v:.2f}x",
        )
    return aims


# --- output --------------------------------------------------------------------------------


def meta(p: Params, argv: list[str], folder: Path) -> dict[str, Any]:
    return {
        "command": shlex.join([".venv/bin/python", "bench/scheduler_bench.py", *argv]),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "aiosqlite": getattr(aiosqlite, "__version__", "?"),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "runs": p.runs,
        "idle_runs": p.idle_runs,
        "quick": p.quick,
        "db_folder": str(folder),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "loadavg_start": load_average(),
        "git": git_state(),
    }


def git_state() -> str | None:
    """The checkout measured: commit, and whether scheduler/ has uncommitted changes."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "scheduler", "migrations"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    if not head:
        return None
    return head + (" (scheduler/ or migrations/ modified)" if dirty else "")


def load_average() -> list[float] | None:
    """The 1/5/15-minute load averages: other work on the machine makes figures noisy."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


# --- profiling ---------------------------------------------------------------------------------


@contextmanager
def profile_all_threads() -> Iterator[dict[str, cProfile.Profile]]:
    """cProfile on this thread and on every thread started inside the block (aiosqlite's
    connection threads): each gets its own profiler, keyed by thread name."""
    profiles: dict[str, cProfile.Profile] = {}

    def start_in_thread(frame: Any, event: str, arg: Any) -> None:
        sys.setprofile(None)
        prof = cProfile.Profile()
        name = threading.current_thread().name
        if "_connection_worker_thread" in name:  # aiosqlite; the store opens its writer first
            seen = sum("aiosqlite" in k for k in profiles)
            role = ("writer", "reader")[seen] if seen < 2 else "other"
            name = f"aiosqlite thread #{seen + 1} ({role} connection, {name.split(' ')[0]})"
        profiles[name] = prof
        prof.enable()

    main = cProfile.Profile()
    profiles["event loop (main thread)"] = main
    threading.setprofile(start_in_thread)
    main.enable()
    try:
        yield profiles
    finally:
        main.disable()
        threading.setprofile(None)


def run_profile(kind: str, p: Params, folder: Path, top: int, dump: Path | None) -> None:
    """Where the time of the ``kind`` throughput case goes: the end-to-end rate split into
    its enqueue and dispatch halves (unprofiled, interleaved, median of ``runs``), then one
    run under cProfile on every thread, per job."""
    n = p.jobs
    rates: dict[str, list[float]] = {"end to end": [], "enqueue only": [], "dispatch only": []}
    for _ in range(p.runs):
        rates["end to end"].append(
            run_async(throughput_run(kind, n, p.enqueue_batch, folder))["jobs_per_s"]
        )
        rates["enqueue only"].append(run_async(enqueue_only_run(kind, n, p.enqueue_batch, folder)))
        rates["dispatch only"].append(run_async(drain_run(kind, n, folder)))
        for f in folder.glob("*.db*"):
            f.unlink()
    out(f"{n:,} no-op {kind}, enqueued {p.enqueue_batch} per transaction (unprofiled):")
    for label, values in rates.items():
        sm = summarize(values)
        out(f"   {label:<14} {sm.show('jobs/s')} = {1e6 / sm.median:,.0f} us per job")
    out(
        "   (enqueue only: due in an hour, nothing claimed; dispatch only: due jobs written "
        "directly, then start() -> all success)"
    )
    with profile_all_threads() as profiles:
        got = run_async(throughput_run(kind, n, p.enqueue_batch, folder))
    out(
        f"\nprofiled end to end: {got['jobs_per_s']:,.0f} jobs/s "
        "(cProfile slows the Python side, not SQLite's C code)"
    )
    for name, prof in profiles.items():
        stats = pstats.Stats(prof)
        total = stats.total_tt  # type: ignore[attr-defined]
        if total < 0.01:
            continue
        out(
            f"\n--- {name}: {total:.2f} s profiled = {total / n * 1e6:,.0f} us per job "
            f"(top {top} by own time; waits show as epoll.poll / SimpleQueue.get)"
        )
        if dump is not None:
            dump.mkdir(parents=True, exist_ok=True)
            safe = "".join(c if c.isalnum() else "_" for c in name)
            stats.dump_stats(dump / f"{kind}-{safe}.prof")
        rows = sorted(
            stats.stats.items(),  # type: ignore[attr-defined]
            key=lambda kv: kv[1][2],
            reverse=True,
        )
        out(f"   {'us/job':>8} {'cum us/job':>10} {'calls/job':>9}  function")
        for (file, line, func), (_cc, ncalls, tt, ct, _callers) in rows[:top]:
            where = f"{Path(file).name}:{line}" if line else file
            out(f"   {tt / n * 1e6:8.1f} {ct / n * 1e6:10.1f} {ncalls / n:9.2f}  {func} ({where})")


# --- main --------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Scheduler benchmarks (SQLite store) with a raw SQLite peer.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    ap.add_argument("--quick", action="store_true", help="a tiny smoke run (< 20 s)")
    ap.add_argument("--runs", type=int, default=None, help="runs per measurement (default 5)")
    ap.add_argument(
        "--idle-runs", type=int, default=None, help="runs of the idle window (default min(runs, 3))"
    )
    ap.add_argument("--json", type=Path, default=None, help="write the results as JSON here")
    ap.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections to run: {', '.join(SECTIONS)}",
    )
    ap.add_argument("--dir", type=Path, default=None, help="folder for the databases")
    ap.add_argument(
        "--profile",
        choices=("actions", "mutations"),
        default=None,
        help="profile one throughput run (all threads) instead of running the sections",
    )
    ap.add_argument("--profile-top", type=int, default=30, help="functions shown per thread")
    ap.add_argument("--profile-out", type=Path, default=None, help="dump .prof files here")
    ap.add_argument(
        "--store",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="postgres: run bench/pg_bench.py with the other arguments instead",
    )
    args = ap.parse_args(argv)
    args.sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown section(s): {', '.join(sorted(unknown))}; choose from {SECTIONS}")
    if args.runs is not None and args.runs < 1:
        ap.error("--runs must be at least 1")
    if args.idle_runs is not None and args.idle_runs < 1:
        ap.error("--idle-runs must be at least 1")
    return args


def _postgres_argv(argv: list[str]) -> list[str] | None:
    """The arguments for bench/pg_bench.py when ``argv`` asks for ``--store postgres`` (the
    PostgreSQL benchmark, several worker processes, is that script), else None."""
    if "--store=postgres" not in argv and ("--store", "postgres") not in itertools.pairwise(argv):
        return None
    rest = [a for a in argv if a != "--store=postgres"]
    if "--store" in rest:
        i = rest.index("--store")
        del rest[i : i + 2]
    return rest


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if (pg_argv := _postgres_argv(argv)) is not None:
        from bench import pg_bench

        return pg_bench.main(pg_argv)
    args = parse_args(argv)
    p = Params(args.quick, args.runs, args.idle_runs)
    want = set(args.sections)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="scheduler-bench-", dir=args.dir) as tmp:
        folder = Path(tmp)
        if args.profile is not None:
            run_profile(args.profile, p, folder, args.profile_top, args.profile_out)
            return 0
        info = meta(p, argv, folder)
        out(
            f"scheduler bench: Python {info['python']}, SQLite {info['sqlite']}, aiosqlite "
            f"{info['aiosqlite']}, {info['cpus']} CPUs, {info['platform']}"
        )
        out(f"command: {info['command']}")
        out(f"databases in {folder}; medians of {p.runs} run(s) with min and max")
        out(f"checkout: {info['git']}; load average at start (1/5/15 min): {info['loadavg_start']}")
        res: dict[str, Any] = {}
        steps: list[tuple[str, Callable[[], None]]] = []

        def do_tp_raw() -> None:
            got = section_throughput_raw(p, want, folder)
            res.update(got)
            if "throughput" in got:
                print_throughput(got["throughput"])
            if "raw" in got:
                print_raw(got["raw"])

        def do_lateness() -> None:
            res["lateness"] = section_lateness(p, folder)
            print_lateness(res["lateness"])

        def do_idle() -> None:
            res["idle"] = section_idle(p, folder)
            print_idle(res["idle"])

        def do_pass() -> None:
            res["pass"] = section_pass(p, folder)
            print_pass(res["pass"])

        if want & {"throughput", "raw"}:
            steps.append(("throughput/raw", do_tp_raw))
        if "lateness" in want:
            steps.append(("lateness", do_lateness))
        if "idle" in want:
            steps.append(("idle", do_idle))
        if "pass" in want:
            steps.append(("pass", do_pass))
        for name, step in steps:
            log(f"[{name}]")
            step()
        aims = evaluate_aims(res)
        print_aims(aims)
        elapsed = time.perf_counter() - started
        info["loadavg_end"] = load_average()
        out(f"\n(total {elapsed:.0f} s; load average at the end: {info['loadavg_end']})")
        if args.json is not None:
            doc = {"meta": {**info, "elapsed_s": elapsed}, **to_jsonable(res), "aims": aims}
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(doc, indent=2) + "\n", "utf-8")
            out(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
