"""This scheduler on PostgreSQL side by side with procrastinate and pgqueuer, in one run, on
one server, against the raw asyncpg limit of the same work.

Run from the project root with the project's virtualenv (``pip install -e '.[bench]'``)::

    .venv/bin/python bench/pg_compare.py                     # everything (~10 minutes)
    .venv/bin/python bench/pg_compare.py --quick             # a smoke run (< 1 minute)
    .venv/bin/python bench/pg_compare.py --only throughput,lateness --json out.json

The server is ``--dsn``, else ``CRIER_BENCH_POSTGRES_DSN``, else ``CRIER_TEST_POSTGRES_DSN``,
else postgresql://postgres@127.0.0.1:5432/postgres. Every measurement gets a database of its
own (``crier_bench_*``), created for it and dropped after it; the server is never
reconfigured or restarted.

Peers (``bench/peers/pg_*.py``), each measurement in a fresh process (``bench.peers.worker``),
the peer's worker and the application's enqueues in that one process:

``ours``            this scheduler, ``PostgresStore`` with the library's defaults
``pgqueuer``        pgqueuer: ``QueueManager`` with its defaults, enqueues through ``Queries``
``procrastinate``   procrastinate: ``App`` + ``PsycopgConnector``, a worker of
                    ``--procrastinate-concurrency`` (default 10) jobs at once, its polling
                    interval the default 5 s
``raw_one``         raw asyncpg: insert, claim (``FOR UPDATE SKIP LOCKED``), complete, each
                    its own transaction, one job at a time (500 jobs: its rate does not
                    depend on the count)
``raw_batch``       the same, 100 jobs per transaction

Sections (``--only``):

``throughput``  2,000 due-now no-op jobs, enqueued 100 per call while the worker runs, from
                the first enqueue to the last completion the peer recorded in the database;
                rounds interleave the peers, ratios are paired per round.
``lateness``    500 jobs due evenly over 5 s (enqueued ahead, a lead time before the first
                is due): ``time.time()`` at the job's start minus its due time.
``idle``        10,000 jobs pending an hour out, the peers running at once (each on its
                database) for a 30 s window (after 11 s, a VACUUM ANALYZE, 11 s more), shown
                per 10 s (30 s holds a whole number of each peer's periods): the
                CPU of the peer's process, the CPU of its database's backends
                (``/proc/<pid>/stat`` of the pids ``pg_stat_activity`` names for its
                database) and the transactions its database counted (``pg_stat_database``:
                commits + rollbacks).
``scale``       this scheduler alone, 1,000 vs 1,000,000 jobs pending on PostgreSQL: one
                dispatch pass (claim + complete of 8 due jobs), alternating between the two
                databases, and a fresh process's start-up time and memory on each. The
                million rows are written by ``generate_series``; a sample enqueued through
                the scheduler's API must equal them column for column, or the run stops.

Every figure is the median of several runs with min and max; the aims at the end are
informational (exit code 0 either way; 1 if a run ends wrong, 2 if a peer is missing).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import secrets
import shlex
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

if __package__ in (None, ""):  # run as a script: make `bench` and `scheduler` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncpg

from bench import scheduler_bench as sb
from bench._pg import PREFIX, with_database
from bench._stats import log, out, percentile, print_aims, ratio, summarize, to_jsonable

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("throughput", "lateness", "idle", "scale")
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
PEER_DISTS = ("procrastinate", "pgqueuer")

# Aims (issue 34).
AIM_VS_PROCRASTINATE = 2.0
AIM_VS_PGQUEUER = 1.0
AIM_P99_MS = 20.0
AIM_IDLE_XACTS = 1.0  # per 10 s window: "near zero"
AIM_PASS_FLAT = 1.5
AIM_RSS_FLAT = 1.1


@dataclass(frozen=True)
class Variant:
    key: str
    label: str
    peer: str
    opts: dict[str, Any] = field(default_factory=dict)


VARIANTS: dict[str, Variant] = {
    v.key: v
    for v in (
        Variant("ours", "this scheduler", "pg_ours"),
        Variant("pgqueuer", "pgqueuer", "pg_pgqueuer"),
        Variant("procrastinate", "procrastinate", "pg_procrastinate"),
        Variant("raw_one", "raw asyncpg, 1 job per transaction", "pg_raw", {"mode": "one"}),
        Variant("raw_batch", "raw asyncpg, 100 per transaction", "pg_raw", {"mode": "batch"}),
    )
}
PEERS = ("ours", "pgqueuer", "procrastinate")


class BenchError(RuntimeError):
    pass


class LeadTooShort(BenchError):
    pass


class Params:
    def __init__(self, args: argparse.Namespace) -> None:
        quick = bool(args.quick)
        self.quick = quick
        self.runs = args.runs if args.runs is not None else (1 if quick else 3)
        self.slow_runs = args.slow_runs if args.slow_runs is not None else (1 if quick else 3)
        self.concurrency = args.procrastinate_concurrency
        self.tp_jobs = 100 if quick else 2_000
        # raw asyncpg one job at a time commits (and so flushes the WAL) three times per job:
        # its rate does not depend on the count, so it gets fewer jobs to keep the run short.
        self.tp_raw_one_jobs = 20 if quick else 500
        self.late_jobs, self.late_span, self.late_lead = (
            (20, 0.3, 0.5) if quick else (500, 5.0, 1.0)
        )
        self.idle_pending = 100 if quick else 10_000
        # 30 s: a whole number of every peer's periods (this scheduler's lease sweep and
        # pgqueuer's dequeue timeout are 30 s, procrastinate's polls 5 s and 10 s), so the
        # window's count is the steady rate whatever the phase; shown per 10 s.
        self.idle_settle, self.idle_window = (0.5, 1.0) if quick else (11.0, 30.0)
        self.scale_sizes = (500, 2_000) if quick else (1_000, 1_000_000)
        self.pass_repeats, self.pass_due = (5, 8) if quick else (200, 8)
        self.settle = 0.2 if quick else 2.0


# --- databases and workers ----------------------------------------------------------------------


MADE: list[str] = []
"""Every database this run created (each is dropped after its measurement)."""


@contextlib.asynccontextmanager
async def database(base: str) -> Any:
    """A database of its own for one measurement, dropped afterwards (its connections
    ended first: only this database's); yields (name, dsn)."""
    name = PREFIX + secrets.token_hex(6)
    MADE.append(name)
    conn = await asyncpg.connect(base)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    try:
        yield name, with_database(base, name)
    finally:
        conn = await asyncpg.connect(base)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


def worker_argv(variant: Variant, op: str, args: dict[str, Any]) -> list[str]:
    spec = {"peer": variant.peer, "op": op, "args": {**variant.opts, **args}}
    return [sys.executable, "-m", "bench.peers.worker", json.dumps(spec)]


class Worker:
    """A peer's process, talked to line by line (stdout: READY, CPU marks, RESULT)."""

    def __init__(self, variant: Variant, proc: asyncio.subprocess.Process) -> None:
        self.variant = variant
        self.proc = proc

    @classmethod
    async def start(cls, variant: Variant, op: str, **args: Any) -> Worker:
        proc = await asyncio.create_subprocess_exec(
            *worker_argv(variant, op, args),
            cwd=ROOT,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        return cls(variant, proc)

    async def line(self, within: float) -> str:
        if self.proc.stdout is None:
            raise BenchError("the worker was started with a pipe")
        raw = await asyncio.wait_for(self.proc.stdout.readline(), within)
        if not raw:
            err = b""
            if self.proc.stderr is not None:
                err = await self.proc.stderr.read()
            raise BenchError(
                f"{self.variant.key}: the worker exited early ({await self.proc.wait()}):\n"
                + err.decode(errors="replace")[-3000:]
            )
        return raw.decode().strip()

    async def send(self, text: str) -> None:
        if self.proc.stdin is None:
            raise BenchError("the worker was started with a pipe")
        self.proc.stdin.write((text + "\n").encode())
        await self.proc.stdin.drain()

    async def result(self, within: float) -> Any:
        while True:
            line = await self.line(within)
            if line.startswith("RESULT "):
                break
        doc = json.loads(line[len("RESULT ") :])
        await asyncio.wait_for(self.proc.wait(), 60)
        if not doc["ok"]:
            err = b""
            if self.proc.stderr is not None:
                err = await self.proc.stderr.read()
            cls = LeadTooShort if doc.get("kind") == "lead" else BenchError
            raise cls(f"{self.variant.key}: {doc['error']}\n{err.decode()[-3000:]}")
        return doc["value"]

    async def reap(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()


async def run_worker(variant: Variant, op: str, **args: Any) -> Any:
    w = await Worker.start(variant, op, **args)
    try:
        return await w.result(900)
    finally:
        await w.reap()


# --- 1. throughput -------------------------------------------------------------------------------


async def section_throughput(p: Params, base: str) -> dict[str, Any]:
    order = ("raw_one", "raw_batch", "ours", "pgqueuer", "procrastinate")
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in order}
    rounds: list[dict[str, float]] = []
    for r in range(p.runs):
        log(f"  throughput round {r + 1}/{p.runs}")
        this: dict[str, float] = {}
        for key in order:
            v = VARIANTS[key]
            async with database(base) as (_, dsn):
                op = "raw" if v.peer == "pg_raw" else "throughput"
                n = p.tp_raw_one_jobs if key == "raw_one" else p.tp_jobs
                got = await run_worker(v, op, dsn=dsn, n=n, concurrency=p.concurrency)
            samples[key].append(got)
            this[key] = got["jobs_per_s"]
            log(f"    {key:<14} {got['jobs_per_s']:8,.0f} jobs/s")
        rounds.append(this)
    res: dict[str, Any] = {"jobs": p.tp_jobs, "peers": {}, "ratio_ours_to": {}}
    for key, runs in samples.items():
        res["peers"][key] = {m: summarize(s[m] for s in runs) for m in runs[0]}
        res["peers"][key]["jobs"] = p.tp_raw_one_jobs if key == "raw_one" else p.tp_jobs
    ours = res["peers"]["ours"]["jobs_per_s"].median
    for key in order:
        if key != "ours":
            res["ratio_ours_to"][key] = {
                "of_medians": ratio(ours, res["peers"][key]["jobs_per_s"].median),
                "paired": summarize(rd["ours"] / rd[key] for rd in rounds),
            }
    return res


def print_throughput(s: dict[str, Any]) -> None:
    out(f"\n== 1. Throughput: {s['jobs']:,} due-now no-op jobs, first enqueue -> last completion")
    out("   (enqueued 100 per call while the worker runs; the end is the last completion")
    out("   time the peer wrote in the database; raw: no worker, 3 transactions per step)")
    for key, r in s["peers"].items():
        out(f"   {VARIANTS[key].label:<36} {r['jobs_per_s'].show('jobs/s')}  [{r['jobs']:,} jobs]")
    out("   this scheduler / peer (ratio of medians; paired per round: median, min, max):")
    for key, rt in s["ratio_ours_to"].items():
        out(
            f"     / {VARIANTS[key].label:<34} {rt['of_medians']:6.2f}x  "
            f"paired {rt['paired'].show('', 2)}"
        )


# --- 2. lateness ---------------------------------------------------------------------------------


async def lateness_once(p: Params, base: str, key: str, lead: float) -> tuple[list[float], float]:
    for _ in range(7):
        try:
            async with database(base) as (_, dsn):
                late = await run_worker(
                    VARIANTS[key],
                    "lateness",
                    dsn=dsn,
                    n=p.late_jobs,
                    span=p.late_span,
                    lead=lead,
                    concurrency=p.concurrency,
                )
            return late, lead
        except LeadTooShort:
            lead *= 2
            log(f"    {key}: enqueueing overran the lead time; retrying with {lead:.1f} s")
    raise BenchError(f"{key}: could not enqueue the lateness jobs within {lead} s")


async def section_lateness(p: Params, base: str) -> dict[str, Any]:
    lead = dict.fromkeys(PEERS, p.late_lead)
    per_run: dict[str, list[list[float]]] = {k: [] for k in PEERS}
    for r in range(p.slow_runs):
        log(f"  lateness round {r + 1}/{p.slow_runs}")
        for key in PEERS:
            late, lead[key] = await lateness_once(p, base, key, lead[key])
            per_run[key].append(late)
            log(f"    {key:<14} p99 {percentile(late, 99) * 1000:10.2f} ms")
    res: dict[str, Any] = {"jobs": p.late_jobs, "span_s": p.late_span, "peers": {}}
    for key, runs in per_run.items():
        res["peers"][key] = {
            "lead_s": lead[key],
            "p50_ms": summarize(percentile(x, 50) * 1000 for x in runs),
            "p99_ms": summarize(percentile(x, 99) * 1000 for x in runs),
            "max_ms": summarize(max(x) * 1000 for x in runs),
        }
    ours = res["peers"]["ours"]["p99_ms"].median
    res["p99_ratio_peer_to_ours"] = {
        k: ratio(r["p99_ms"].median, ours) for k, r in res["peers"].items() if k != "ours"
    }
    return res


def print_lateness(s: dict[str, Any]) -> None:
    out(
        f"\n== 2. Lateness: {s['jobs']:,} no-op jobs due evenly over {s['span_s']:g} s; "
        "time.time() at the job's start minus its due time"
    )
    out("   (per run: p50/p99/max over its jobs; shown: median of the runs, min, max)")
    for key, r in s["peers"].items():
        out(f"   {VARIANTS[key].label}")
        for m in ("p50_ms", "p99_ms", "max_ms"):
            out(f"     {m[:3]:<4} {r[m].show('ms', 2)}")
    out("   p99 of the peer / p99 of this scheduler (medians):")
    for key, x in s["p99_ratio_peer_to_ours"].items():
        out(f"     {VARIANTS[key].label:<32} {x:10.1f}x")


# --- 3. idle -------------------------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def proc_cpu(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (``/proc/<pid>/stat``), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text("ascii")
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK


async def db_reading(mon: asyncpg.Connection, name: str) -> dict[str, Any]:
    """The database's client backends (pid -> CPU so far) and its transaction count."""
    await mon.execute("SELECT pg_stat_clear_snapshot()")
    pids = [
        int(r[0])
        for r in await mon.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 "
            "AND backend_type = 'client backend'",
            name,
        )
    ]
    xacts = await mon.fetchval(
        "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1", name
    )
    return {"cpu": {pid: proc_cpu(pid) for pid in pids}, "xacts": int(xacts)}


def backend_cpu(a: dict[str, Any], b: dict[str, Any]) -> float | None:
    """CPU the backends used between two readings (a backend that is in both; one that
    came meanwhile counts from its start)."""
    total = 0.0
    for pid, c1 in b["cpu"].items():
        if c1 is None:
            return None
        c0 = a["cpu"].get(pid) or 0.0
        total += c1 - c0
    return total


async def vacuum(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


async def mark(w: Worker) -> float:
    await w.send("mark")
    line = await w.line(30)
    if not line.startswith("CPU "):
        raise BenchError(f"{w.variant.key}: expected a CPU mark, got {line!r}")
    return float(line.split()[1])


async def idle_round(p: Params, base: str) -> dict[str, dict[str, float]]:
    async with contextlib.AsyncExitStack() as stack:
        dbs = {k: await stack.enter_async_context(database(base)) for k in PEERS}
        workers: dict[str, Worker] = {}
        try:
            for key in PEERS:
                workers[key] = await Worker.start(
                    VARIANTS[key],
                    "idle",
                    dsn=dbs[key][1],
                    pending=p.idle_pending,
                    concurrency=p.concurrency,
                )
            for key, w in workers.items():
                if (line := await w.line(300)) != "READY":
                    raise BenchError(f"{key}: said {line!r} instead of READY")
            # A backend sends its statistics up to 10 s late (PostgreSQL 15): the builds' must
            # be in before the VACUUM ANALYZE that leaves autovacuum nothing to do in the
            # window, and the VACUUM's own before the window's first reading.
            await asyncio.sleep(p.idle_settle)
            for _, dsn in dbs.values():
                await vacuum(dsn)
            await asyncio.sleep(p.idle_settle)
            mon = await asyncpg.connect(base)
            try:
                t0 = time.perf_counter()
                cpu0 = {k: await mark(w) for k, w in workers.items()}
                db0 = {k: await db_reading(mon, dbs[k][0]) for k in PEERS}
                await asyncio.sleep(p.idle_window - (time.perf_counter() - t0))
                cpu1 = {k: await mark(w) for k, w in workers.items()}
                db1 = {k: await db_reading(mon, dbs[k][0]) for k in PEERS}
                wall = time.perf_counter() - t0
            finally:
                await mon.close()
            for w in workers.values():
                await w.send("stop")
            for w in workers.values():
                await w.result(120)
        finally:
            for w in workers.values():
                await w.reap()
    got = {}
    for key in PEERS:
        per = 10.0 / wall
        bcpu = backend_cpu(db0[key], db1[key])
        got[key] = {
            "cpu_per_10s": (cpu1[key] - cpu0[key]) * per,
            "backend_cpu_per_10s": float("nan") if bcpu is None else bcpu * per,
            "xacts_per_10s": (db1[key]["xacts"] - db0[key]["xacts"]) * per,
            "backends": float(len(db1[key]["cpu"])),
        }
    return got


async def section_idle(p: Params, base: str) -> dict[str, Any]:
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in PEERS}
    for r in range(p.slow_runs):
        log(f"  idle round {r + 1}/{p.slow_runs}: the peers at once, {p.idle_window:g} s")
        for key, got in (await idle_round(p, base)).items():
            runs[key].append(got)
            log(
                f"    {key:<14} process {got['cpu_per_10s']:.4f} s, backends "
                f"{got['backend_cpu_per_10s']:.2f} s, {got['xacts_per_10s']:.1f} transactions"
            )
    res: dict[str, Any] = {
        "pending": p.idle_pending,
        "window_s": p.idle_window,
        "settle_s": p.idle_settle,
        "peers": {},
    }
    for key, rs in runs.items():
        res["peers"][key] = {m: summarize(x[m] for x in rs) for m in rs[0]}
    return res


def print_idle(s: dict[str, Any]) -> None:
    out(
        f"\n== 3. Idle: {s['pending']:,} jobs pending an hour out, the peers running at once; "
        f"a {s['window_s']:g} s window after {s['settle_s']:g} s, a VACUUM ANALYZE, "
        f"{s['settle_s']:g} s (per 10 s)"
    )
    out("   (process: time.process_time() of the peer's process; backends: utime+stime of")
    out("   its database's client backends, 10 ms ticks; transactions: pg_stat_database)")
    for key, r in s["peers"].items():
        out(
            f"   {VARIANTS[key].label:<16} process {r['cpu_per_10s'].show('s', 4)}; backends "
            f"{r['backend_cpu_per_10s'].show('s', 2)} ({r['backends'].median:.0f} connections); "
            f"transactions {r['xacts_per_10s'].show('', 1)}"
        )


# --- 4. a million pending (this scheduler) ------------------------------------------------------

_BULK_JOBS = (
    "INSERT INTO scheduler_jobs (fn, kind, state, next_ts, max_failures, initial_backoff, "
    "backoff_base, idempotent, created_at, updated_at) "
    "SELECT $1, 'action', 'pending', $2 + g * $3, 1, 1.0, 2.0, 0, $4, $4 "
    "FROM generate_series(0, $5 - 1) AS g"
)
_BULK_ARGS = (
    "INSERT INTO scheduler_job_args (job_id, args) "
    "SELECT id, 'null' FROM scheduler_jobs WHERE id > $1"
)
_VARYING = ("id", "next_ts", "created_at", "updated_at")
SAMPLE = 3


async def build_pending(dsn: str, count: int) -> dict[str, Any]:
    """``count`` pending actions due from an hour out over a day: ``SAMPLE`` through the
    scheduler's API (``enqueue_many`` with ``run_at``), the rest by ``generate_series``; then
    every bulk row must equal the API's rows in every column but the id and the times."""
    from bench.peers import pg_ours
    from scheduler import JobRequest

    t0 = time.perf_counter()
    first, step = time.time() + 3600.0, 86_400.0 / count
    async with pg_ours.scheduler(dsn, pg_ours.registry()) as sched:
        await sched.enqueue_many(
            [JobRequest(pg_ours.ACTION, run_at=first + i * step) for i in range(SAMPLE)]
        )
    conn = await asyncpg.connect(dsn)
    try:
        top = await conn.fetchval("SELECT max(id) FROM scheduler_jobs")
        async with conn.transaction():
            await conn.execute(
                _BULK_JOBS,
                pg_ours.ACTION,
                first + SAMPLE * step,
                step,
                time.time(),
                count - SAMPLE,
            )
            await conn.execute(_BULK_ARGS, top)
        await conn.execute("VACUUM ANALYZE")
        drop = " - ".join(f"'{c}'" for c in _VARYING)
        shapes = await conn.fetch(
            f"SELECT DISTINCT to_jsonb(j) - {drop} AS row, "  # noqa: S608 (names above)
            "to_jsonb(a) - 'job_id' AS args, j.id <= $1 AS api "
            "FROM scheduler_jobs j JOIN scheduler_job_args a ON a.job_id = j.id",
            top,
        )
        counts = await conn.fetchrow(
            "SELECT (SELECT count(*) FROM scheduler_jobs), (SELECT count(*) FROM "
            "scheduler_job_args), (SELECT count(*) FROM scheduler_jobs WHERE state = 'pending')"
        )
    finally:
        await conn.close()
    api = {(r["row"], r["args"]) for r in shapes if r["api"]}
    bulk = {(r["row"], r["args"]) for r in shapes if not r["api"]}
    if len(api) != 1 or bulk != api or tuple(counts) != (count, count, count):
        raise BenchError(
            f"the bulk rows differ from the API's: api {api}, bulk {bulk}, counts {tuple(counts)}"
        )
    return {"build_s": time.perf_counter() - t0}


async def pass_runs(p: Params, dsns: dict[int, str]) -> dict[int, dict[str, Any]]:
    from scheduler.stores.postgres import PostgresStore

    stores = {
        n: PostgresStore(dsn, listen=False, application_name="bench-pass")
        for n, dsn in dsns.items()
    }
    claims: dict[int, list[float]] = {n: [] for n in dsns}
    passes: dict[int, list[float]] = {n: [] for n in dsns}
    try:
        for store in stores.values():
            await store.open()
        warmup = max(3, p.pass_repeats // 10)
        for r in range(warmup + p.pass_repeats):
            for n, store in stores.items():
                claim_ms, pass_ms = await sb.one_pass(store, p.pass_due)  # type: ignore[arg-type]
                if r >= warmup:
                    claims[n].append(claim_ms)
                    passes[n].append(pass_ms)
    finally:
        for store in stores.values():
            await store.close()
    return {n: {"claim_ms": summarize(claims[n]), "pass_ms": summarize(passes[n])} for n in dsns}


async def section_scale(p: Params, base: str) -> dict[str, Any]:
    async with contextlib.AsyncExitStack() as stack:
        dsns: dict[int, str] = {}
        built: dict[int, dict[str, Any]] = {}
        for n in p.scale_sizes:
            _, dsns[n] = await stack.enter_async_context(database(base))
            log(f"  scale: building {n:,} pending jobs")
            built[n] = await build_pending(dsns[n], n)
            log(f"    built in {built[n]['build_s']:.1f} s (sample of {SAMPLE} checked)")
        log(f"  scale: {p.pass_repeats} dispatch passes per size, alternating")
        sizes = await pass_runs(p, dsns)
        mem: dict[int, list[dict[str, float]]] = {n: [] for n in dsns}
        for r in range(p.slow_runs):
            for n, dsn in dsns.items():
                got = await run_worker(VARIANTS["ours"], "startup", dsn=dsn, settle=p.settle)
                mem[n].append(got)
                log(
                    f"    start-up round {r + 1}, {n:,} pending: ready in "
                    f"{got['startup_s'] * 1000:.0f} ms, peak RSS {got['peak_rss_mb']:.1f} MB"
                )
        # the pass left these due jobs behind it done; the databases hold what they held
    small, big = p.scale_sizes[0], p.scale_sizes[-1]
    res: dict[str, Any] = {"due_per_pass": p.pass_due, "repeats": p.pass_repeats, "sizes": {}}
    for n in p.scale_sizes:
        res["sizes"][str(n)] = {
            **sizes[n],
            "build_s": built[n]["build_s"],
            **{m: summarize(x[m] for x in mem[n]) for m in mem[n][0]},
        }
    s, b = res["sizes"][str(small)], res["sizes"][str(big)]
    res["ratio"] = {
        "small": small,
        "big": big,
        "pass": ratio(b["pass_ms"].median, s["pass_ms"].median),
        "claim": ratio(b["claim_ms"].median, s["claim_ms"].median),
        "peak_rss": ratio(b["peak_rss_mb"].median, s["peak_rss_mb"].median),
        "startup": ratio(b["startup_s"].median, s["startup_s"].median),
    }
    return res


def print_scale(s: dict[str, Any]) -> None:
    out(
        f"\n== 4. This scheduler with many pending on PostgreSQL: one dispatch pass (claim + "
        f"complete of {s['due_per_pass']} due jobs), median of {s['repeats']} alternating; a "
        "fresh process's start-up and memory"
    )
    for n, r in s["sizes"].items():
        out(
            f"   {int(n):>9,} pending: pass {r['pass_ms'].show('ms', 3)}; claim "
            f"{r['claim_ms'].median:.3f} ms; ready {r['startup_s'].scaled(1000).show('ms', 0)}; "
            f"peak RSS {r['peak_rss_mb'].show('MB', 1)}  [built in {r['build_s']:.0f} s]"
        )
    rt = s["ratio"]
    out(
        f"   ratio {rt['big']:,} / {rt['small']:,}: pass {rt['pass']:.2f}x, claim "
        f"{rt['claim']:.2f}x, peak RSS {rt['peak_rss']:.2f}x, start-up {rt['startup']:.2f}x"
    )


# --- the docs' section (bench/run_all.py writes it into docs/benchmarks.md) --------------------


def _cell(s: dict[str, Any], digits: int = 0) -> str:
    """``median (min–max)`` of a summary read back from the JSON."""
    med = f"{s['median']:,.{digits}f}"
    if len(s["runs"]) == 1 or s["min"] == s["max"]:
        return med
    return f"{med} ({s['min']:,.{digits}f}–{s['max']:,.{digits}f})"


def _table(header: list[str], rows: list[list[str]], left: int = 1) -> list[str]:
    align = ["---"] * left + ["--:"] * (len(header) - left)
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(align) + " |",
        *("| " + " | ".join(r) + " |" for r in rows),
    ]


def docs_section(doc: dict[str, Any]) -> list[str]:
    """The Markdown of a run's JSON: what was run and how, then a table per section."""
    m = doc["meta"]
    pg = m["postgres"]
    v = m["versions"]
    lines = [
        f"Command: `{m['command']}` (started {m['started']}, {m['elapsed_s']:.0f} s; load "
        f"average {m['loadavg_start']} at the start, {m['loadavg_end']} at the end).",
        "",
        f"PostgreSQL {pg['server_version']} on {pg['host']} (fsync {pg['fsync']}, "
        f"synchronous_commit {pg['synchronous_commit']}: every commit waits for its WAL "
        f"flush), Python {m['python']}, asyncpg {v['asyncpg']}, procrastinate "
        f"{v['procrastinate']} (psycopg {v['psycopg']}), pgqueuer {v['pgqueuer']}; checkout "
        f"`{m['git']}`. **The machine has {m['cpus']} cores, shared by the server, the peers "
        "and other engineers' test suites running at the same time** (a load average far "
        "above 2 means every process, the server's included, waited for a CPU): the "
        "absolute figures are this machine's on that day; the ratios within a round, each "
        "peer measured minutes apart in the same run, are what to compare.",
        "",
        "Each measurement runs in a fresh process (the peer's worker and the application's "
        "enqueues in one process) on a database of its own, created for it and dropped after "
        "it. Figures are medians with min–max over the runs.",
        "",
    ]
    tp = doc.get("throughput")
    if tp:
        lines += [
            f"**Throughput**: {tp['jobs']:,} due-now no-op jobs enqueued 100 per call while the "
            "worker runs, from the first enqueue to the last completion the peer recorded in "
            "the database. Raw asyncpg is the same work with nothing else: insert, claim "
            "(`FOR UPDATE SKIP LOCKED`), complete, each its own transaction, on the "
            f"scheduler's table; paired ratios are per round ({m['runs']} round(s)).",
            "",
        ]
        rows = []
        for key, r in tp["peers"].items():
            rt = tp["ratio_ours_to"].get(key)
            rows.append(
                [
                    VARIANTS[key].label,
                    f"{r.get('jobs', tp['jobs']):,}",
                    _cell(r["jobs_per_s"]),
                    "—" if rt is None else f"{rt['of_medians']:.2f}x",
                    "—" if rt is None else _cell(rt["paired"], 2),
                ]
            )
        lines += _table(["peer", "jobs", "jobs/s", "ours ÷ peer", "paired per round"], rows)
        lines.append("")
    late = doc.get("lateness")
    if late:
        lines += [
            f"**Lateness**: {late['jobs']:,} no-op jobs due evenly over {late['span_s']:g} s, "
            "enqueued ahead; `time.time()` at the job's start minus its due time.",
            "",
        ]
        rows = [
            [
                VARIANTS[key].label,
                _cell(r["p50_ms"], 1),
                _cell(r["p99_ms"], 1),
                _cell(r["max_ms"], 1),
                "—" if key == "ours" else f"{late['p99_ratio_peer_to_ours'][key]:,.1f}x",
            ]
            for key, r in late["peers"].items()
        ]
        lines += _table(["peer", "p50 ms", "p99 ms", "max ms", "peer's p99 ÷ ours"], rows)
        lines.append("")
    idle = doc.get("idle")
    if idle:
        lines += [
            f"**Idle**: {idle['pending']:,} jobs pending an hour out, the three running at "
            f"once, each on its database; a {idle['window_s']:g} s window (after "
            f"{idle['settle_s']:g} s, a `VACUUM ANALYZE` and {idle['settle_s']:g} s more, so "
            "neither the build's statistics nor autovacuum fall into it; 30 s holds a whole "
            "number of every peer's periods: this scheduler's lease sweep and pgqueuer's "
            "dequeue timeout are 30 s, procrastinate polls every 5 s and beats every 10 s, "
            "so the count is the steady rate whatever the phase). Per 10 s: the "
            "peer's process CPU (`time.process_time()`), its database's client backends' CPU "
            "(`/proc/<pid>/stat`, 10 ms ticks) and the transactions its database counted "
            "(`pg_stat_database`).",
            "",
        ]
        rows = [
            [
                VARIANTS[key].label,
                _cell(r["cpu_per_10s"], 4),
                _cell(r["backend_cpu_per_10s"], 2),
                f"{r['backends']['median']:.0f}",
                _cell(r["xacts_per_10s"], 1),
            ]
            for key, r in idle["peers"].items()
        ]
        lines += _table(
            ["peer", "process CPU s", "backends' CPU s", "connections", "transactions"], rows
        )
        lines.append("")
    sc = doc.get("scale")
    if sc:
        lines += [
            "**Many pending (this scheduler)**: one dispatch pass (claim + complete of "
            f"{sc['due_per_pass']} due jobs), median of {sc['repeats']} alternating between "
            "the databases; a fresh process's start-up (to started and idle) and peak RSS. "
            "The rows are written by `generate_series` after a sample enqueued through the "
            "scheduler's API, which they must equal column for column.",
            "",
        ]
        rows = [
            [
                f"{int(n):,}",
                _cell(r["pass_ms"], 2),
                _cell(r["claim_ms"], 2),
                _cell({k: r["startup_s"][k] for k in r["startup_s"]}, 3),
                _cell(r["peak_rss_mb"], 1),
                f"{r['build_s']:.0f}",
            ]
            for n, r in sc["sizes"].items()
        ]
        lines += _table(
            ["pending", "pass ms", "claim ms", "start-up s", "peak RSS MB", "built in s"], rows
        )
        rt = sc["ratio"]
        lines += [
            "",
            f"Ratio {rt['big']:,} ÷ {rt['small']:,}: pass {rt['pass']:.2f}x, claim "
            f"{rt['claim']:.2f}x, peak RSS {rt['peak_rss']:.2f}x, start-up {rt['startup']:.2f}x.",
            "",
        ]
    conc = m.get("procrastinate_concurrency", 10)
    lines += [
        "How the peers were run:",
        "",
        "- **this scheduler**: `Scheduler(PostgresStore(dsn), registry)` with the library's "
        "defaults (a pool of up to 10 connections, LISTEN/NOTIFY wake-ups, claims of up to 64, "
        "64 actions at once), no-op actions; enqueues through `enqueue_many`; a job's end is "
        "its `finished_at`.",
        "- **pgqueuer**: its schema by `Queries.install()`, a `QueueManager` on an "
        "`AsyncpgDriver` (one connection, which also LISTENs) with its defaults (batches of "
        "10, a 30 s dequeue timeout that it shortens to the next deferred job's time), "
        "`async` entrypoints; enqueues through `Queries.enqueue` with lists (one statement "
        "per 100) on a connection of their own; a scheduled job's `execute_after` is taken "
        "from `NOW()` read in the enqueue's own transaction; a job's end is its "
        "`pgqueuer_log` row (`successful`), which pgqueuer writes in batches.",
        f"- **procrastinate**: `App(connector=PsycopgConnector(...))`, its schema by the "
        f"schema manager, `async` tasks, `run_worker_async(concurrency={conc})` in the same "
        "process (its default concurrency is 1; LISTEN/NOTIFY on, its fetch polling interval "
        "the default 5 s, which is when a job deferred for later is found); enqueues by "
        "`batch_defer_async` (scheduled ones: the job manager's `batch_defer_jobs_async`, "
        "the call `batch_defer_async` makes, each job with its own `schedule_at`); a job's "
        "end is its `succeeded` event.",
        "- **raw asyncpg**: the scheduler's own `scheduler_jobs` table and claim statement "
        "shape, no payload row, no NOTIFY, no handler: the floor of the database work.",
        "",
    ]
    lines += ["Aims (issue 34):", ""]
    rows = [
        [a["aim"], a["shown"], a["target"], "**PASS**" if a["pass"] else "**MISS**"]
        for a in doc.get("aims", [])
    ]
    lines += _table(["aim", "measured (medians)", "target", ""], rows, left=4)
    return lines


# --- aims, meta, main ----------------------------------------------------------------------------


def evaluate_aims(res: dict[str, Any]) -> list[dict[str, Any]]:
    aims: list[dict[str, Any]] = []

    def add(name: str, ok: bool, shown: str, target: str) -> None:
        aims.append({"aim": name, "pass": bool(ok), "shown": shown, "target": target})

    tp = res.get("throughput")
    if tp is not None:
        for key, x in (("procrastinate", AIM_VS_PROCRASTINATE), ("pgqueuer", AIM_VS_PGQUEUER)):
            rt = tp["ratio_ours_to"][key]
            worst = min(rt["of_medians"], rt["paired"].median)
            add(
                f"throughput vs {key}",
                worst >= x,
                f"{rt['of_medians']:.2f}x of the medians "
                f"({tp['peers']['ours']['jobs_per_s'].median:,.0f} vs "
                f"{tp['peers'][key]['jobs_per_s'].median:,.0f} jobs/s), "
                f"{rt['paired'].median:.2f}x paired per round",
                f">= {x:g}x",
            )
    late = res.get("lateness")
    if late is not None:
        p99 = late["peers"]["ours"]["p99_ms"].median
        add("lateness p99", p99 < AIM_P99_MS, f"{p99:.2f} ms", f"< {AIM_P99_MS:g} ms")
    idle = res.get("idle")
    if idle is not None:
        x = idle["peers"]["ours"]["xacts_per_10s"].median
        add(
            "idle database transactions",
            x <= AIM_IDLE_XACTS,
            f"{x:.1f} per 10 s",
            f"<= {AIM_IDLE_XACTS:g} per 10 s",
        )
    sc = res.get("scale")
    if sc is not None:
        rt = sc["ratio"]
        add(
            f"dispatch pass flat {rt['small']:,} -> {rt['big']:,} pending",
            rt["pass"] <= AIM_PASS_FLAT,
            f"{rt['pass']:.2f}x",
            f"<= {AIM_PASS_FLAT:g}x",
        )
        add(
            f"memory flat {rt['small']:,} -> {rt['big']:,} pending",
            rt["peak_rss"] <= AIM_RSS_FLAT,
            f"{rt['peak_rss']:.2f}x peak RSS",
            f"<= {AIM_RSS_FLAT:g}x",
        )
    return aims


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


async def server_info(base: str) -> dict[str, Any]:
    conn = await asyncpg.connect(base)
    try:
        return {
            "server_version": await conn.fetchval("SHOW server_version"),
            "fsync": await conn.fetchval("SHOW fsync"),
            "synchronous_commit": await conn.fetchval("SHOW synchronous_commit"),
            "host": urlsplit(base).hostname,
        }
    finally:
        await conn.close()


def missing_peers() -> list[str]:
    import importlib.util

    return [m for m in PEER_DISTS if importlib.util.find_spec(m) is None]


def default_dsn() -> str:
    return (
        os.environ.get("CRIER_BENCH_POSTGRES_DSN")
        or os.environ.get("CRIER_TEST_POSTGRES_DSN")
        or DEFAULT_DSN
    )


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="This scheduler vs procrastinate vs pgqueuer on PostgreSQL, in one run.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    ap.add_argument("--quick", action="store_true", help="a small smoke run")
    ap.add_argument("--runs", type=int, default=None, help="throughput rounds (default 3)")
    ap.add_argument(
        "--slow-runs", type=int, default=None, help="lateness, idle, start-up runs (default 3)"
    )
    ap.add_argument("--dsn", default=None, help="the server (databases on it are created)")
    ap.add_argument("--json", type=Path, default=None, help="write the results as JSON here")
    ap.add_argument("--only", default=",".join(SECTIONS), help=f"of {', '.join(SECTIONS)}")
    ap.add_argument(
        "--procrastinate-concurrency",
        type=int,
        default=10,
        help="jobs procrastinate's worker runs at once (default 10; its own default is 1)",
    )
    args = ap.parse_args(argv)
    args.sections = [s.strip() for s in args.only.split(",") if s.strip()]
    if set(args.sections) - set(SECTIONS):
        ap.error(f"--only takes {', '.join(SECTIONS)}")
    for name in ("runs", "slow_runs", "procrastinate_concurrency"):
        value = getattr(args, name)
        if value is not None and value < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


async def amain(args: argparse.Namespace, argv: list[str]) -> int:
    p = Params(args)
    base = args.dsn or default_dsn()
    try:
        server = await server_info(base)
    except (OSError, asyncpg.PostgresError) as exc:
        print(f"pg_compare: cannot reach PostgreSQL at {base}: {exc}", file=sys.stderr)
        return 2
    info: dict[str, Any] = {
        "command": shlex.join([".venv/bin/python", "bench/pg_compare.py", *argv]),
        "python": platform.python_version(),
        "postgres": server,
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "versions": {d: version(d) for d in ("asyncpg", "procrastinate", "psycopg", "pgqueuer")},
        "quick": p.quick,
        "runs": p.runs,
        "slow_runs": p.slow_runs,
        "procrastinate_concurrency": p.concurrency,
        "loadavg_start": sb.load_average(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "git": sb.git_state(),
    }
    out(
        f"pg compare: PostgreSQL {server['server_version']} on {server['host']} (fsync "
        f"{server['fsync']}, synchronous_commit {server['synchronous_commit']}), Python "
        f"{info['python']}, {info['cpus']} CPUs shared by the server, the peers and other "
        f"work on this machine; {info['platform']}"
    )
    out("versions: " + ", ".join(f"{k} {v}" for k, v in info["versions"].items()))
    out(f"command: {info['command']}")
    out(
        f"medians of {p.runs} throughput round(s) and {p.slow_runs} of the rest, with min and "
        f"max; checkout {info['git']}; load average at start {info['loadavg_start']}"
    )
    started = time.perf_counter()
    res: dict[str, Any] = {}
    steps = [
        ("throughput", section_throughput, print_throughput),
        ("lateness", section_lateness, print_lateness),
        ("idle", section_idle, print_idle),
        ("scale", section_scale, print_scale),
    ]
    try:
        for name, run, show in steps:
            if name in args.sections:
                log(f"[{name}]")
                res[name] = await run(p, base)
                show(res[name])
    except BenchError as exc:
        print(f"pg_compare: {exc}", file=sys.stderr)
        return 1
    aims = evaluate_aims(res)
    print_aims(aims)
    info["loadavg_end"] = sb.load_average()
    elapsed = time.perf_counter() - started
    out(f"\n(total {elapsed:.0f} s; load average at the end: {info['loadavg_end']})")
    if args.json is not None:
        info["databases"] = MADE
        doc = {"meta": {**info, "elapsed_s": elapsed}, **to_jsonable(res), "aims": aims}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=2) + "\n", "utf-8")
        out(f"results written to {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if missing := missing_peers():
        print(
            f"pg_compare needs {', '.join(missing)}: install the project's bench extra with "
            "`.venv/bin/pip install -e '.[bench]'`",
            file=sys.stderr,
        )
        return 2
    return asyncio.run(amain(args, argv))


if __name__ == "__main__":
    sys.exit(main())
