"""Benchmarks of the scheduler on PostgreSQL with several worker processes.

    .venv/bin/python bench/pg_bench.py                 # everything (~3 minutes)
    .venv/bin/python bench/pg_bench.py --quick         # a small smoke run (< 30 s)
    .venv/bin/python bench/pg_bench.py --runs 5 --json out.json --dsn postgresql://...
    .venv/bin/python bench/scheduler_bench.py --store postgres ...   # the same

The server is ``--dsn``, else ``CRIER_BENCH_POSTGRES_DSN``, else ``CRIER_TEST_POSTGRES_DSN``,
else postgresql://postgres@127.0.0.1:5432/postgres. Every run creates a database of its own
(``crier_bench_*``) and drops it afterwards.

Sections (``--only``):

``throughput``  N due no-op jobs (actions, then mutations) drained by 1, 2 and 4 worker
                processes, each a whole ``Scheduler`` on its own ``PostgresStore`` (library
                defaults: batches of 64, 64 actions at once). The jobs are written first,
                parked an hour out, then released all at once by one UPDATE that makes them
                due, committed with a NOTIFY on the scheduler's channel: timed from that
                commit to the last job's ``finished_at`` (written by the worker that
                completed it); every job must end in ``success``.
``wake``        cross-process wake latency. Process A (a bare store without a driver or
                LISTEN, like a web process that only schedules work) enqueues due-now
                actions one at a time, 20-30 ms apart, each carrying ``time.time()`` taken
                just before the enqueue; process B (a running scheduler whose lease sweep
                is set to 60 s, so only the NOTIFY can wake it) takes ``time.time()`` as the
                handler starts. Latency = B's stamp - A's stamp (same machine, same clock),
                p50/p99 per run.

Every figure is the median of ``--runs`` runs (each with fresh processes and a fresh
database), shown with min and max. The aims are informational: the exit code is 0 either
way (1 only if a run ends wrong, e.g. a job not in ``success``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import platform
import random
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if __package__ in (None, ""):  # run as a script: make `bench` and `scheduler` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncpg

from bench._pg import fresh_database
from bench._stats import log, out, percentile, summarize, to_jsonable
from scheduler import JobKind, Registry, Scheduler
from scheduler.store_types import NewJob
from scheduler.stores.postgres import DEFAULT_CHANNEL, PostgresStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

SCRIPT = Path(__file__).resolve()
ROOT = SCRIPT.parent.parent
ACTION_FN = "bench:noop_action"
MUTATION_FN = "bench:noop_mutation"
PROBE_FN = "bench:probe"
KINDS = {"actions": (ACTION_FN, JobKind.ACTION), "mutations": (MUTATION_FN, JobKind.MUTATION)}
SECTIONS = ("throughput", "wake")
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
PARKED = 3600.0
"""The jobs wait this far out until they are released."""
WAKE_GAP = (0.020, 0.030)
"""Seconds between two wake probes (uniform), so each finds the worker idle."""
LINE_TIMEOUT = 60.0

AIM_WAKE_P99_MS = 50.0


class BenchError(RuntimeError):
    """A run did not end the way the benchmark requires."""


def job(fn: str, kind: JobKind, due: float, args: Any = None) -> NewJob:
    return NewJob(
        fn=fn,
        kind=kind,
        next_ts=due,
        max_failures=1,
        initial_backoff=1.0,
        backoff_base=2.0,
        idempotent=False,
        args_json=json.dumps(args),
    )


# --- the child processes ---------------------------------------------------------------------


async def child_work(dsn: str, name: str, sweep: float) -> None:
    """A worker: a whole scheduler on the database until stdin closes; then one JSON line
    (handler calls, and the wake probes' stamps)."""
    count = 0
    stamps: list[tuple[int, float, float]] = []
    registry = Registry()

    @registry.action(ACTION_FN)
    async def noop_action(ctx: Any, args: Any) -> None:
        nonlocal count
        count += 1

    @registry.mutation(MUTATION_FN)
    async def noop_mutation(ctx: Any, args: Any) -> None:
        nonlocal count
        count += 1

    @registry.action(PROBE_FN)
    async def probe(ctx: Any, args: Any) -> None:
        stamps.append((ctx.job.id, float(args["t"]), time.time()))

    sched = Scheduler(
        PostgresStore(dsn, application_name=f"bench-{name}"),
        registry,
        sweep_interval=sweep,
        lease=30.0,
    )
    async with sched:
        await sched.wait_idle()
        print("READY", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    print(json.dumps({"name": name, "count": count, "stamps": stamps}), flush=True)


async def child_enqueue(dsn: str, n: int, seed: int) -> None:
    """Process A: enqueue ``n`` due-now probes one at a time without a driver or LISTEN;
    then one JSON line: ``[job id, stamp before, time after the commit]`` each."""
    rng = random.Random(seed)
    store = PostgresStore(dsn, listen=False, application_name="bench-enqueuer")
    await store.open()
    sent: list[tuple[int, float, float]] = []
    try:
        for _ in range(n):
            await asyncio.sleep(rng.uniform(*WAKE_GAP))
            t = time.time()
            job_id = await store.at(t).enqueue(job(PROBE_FN, JobKind.ACTION, t, {"t": t}))
            sent.append((job_id, t, time.time()))
    finally:
        await store.close()
    print(json.dumps(sent), flush=True)


class Child:
    """A child process of this script, talked to through its stdin and stdout."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, *args: str) -> Child:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(SCRIPT),
            *args,
            cwd=ROOT,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        return cls(proc)

    async def line(self, within: float = LINE_TIMEOUT) -> str:
        if self.proc.stdout is None:
            raise RuntimeError("the child was started with a pipe")
        raw = await asyncio.wait_for(self.proc.stdout.readline(), within)
        if not raw:
            raise BenchError(f"a child process exited early ({await self.proc.wait()})")
        return raw.decode().strip()

    async def finish(self) -> Any:
        """Close stdin (a worker stops), read its JSON line, wait for the exit."""
        if self.proc.stdin is None:
            raise RuntimeError("the child was started with a pipe")
        self.proc.stdin.close()
        result = json.loads(await self.line())
        await asyncio.wait_for(self.proc.wait(), LINE_TIMEOUT)
        return result

    async def reap(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()


@contextlib.asynccontextmanager
async def children() -> AsyncIterator[list[Child]]:
    started: list[Child] = []
    try:
        yield started
    finally:
        await asyncio.gather(*(c.reap() for c in started))


async def start_workers(started: list[Child], dsn: str, n: int, sweep: float) -> list[Child]:
    ws = [await Child.start("_work", dsn, f"w{i}", str(sweep)) for i in range(n)]
    started.extend(ws)
    for w in ws:
        if (line := await w.line()) != "READY":
            raise BenchError(f"a worker said {line!r} instead of READY")
    return ws


# --- databases -------------------------------------------------------------------------------


async def migrate(dsn: str) -> None:
    store = PostgresStore(dsn, listen=False, application_name="bench-setup")
    await store.open()
    await store.close()


def cpu_times() -> tuple[float, float] | None:
    """(busy, total) jiffies of the whole machine so far (Linux), to tell how saturated the
    CPUs were during a run (whoever used them)."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [float(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def busy_between(a: tuple[float, float] | None, b: tuple[float, float] | None) -> float:
    if a is None or b is None or b[1] <= a[1]:
        return float("nan")
    return (b[0] - a[0]) / (b[1] - a[1])


async def job_states(conn: Any) -> dict[str, int]:
    rows = await conn.fetch("SELECT state, count(*) FROM scheduler_jobs GROUP BY state")
    return {str(r[0]): int(r[1]) for r in rows}


async def wait_finished(conn: Any, n: int, within: float) -> None:
    """Poll (10 per second; the figure is read from ``finished_at``, not from this) until
    ``n`` jobs are finished."""
    deadline = time.monotonic() + within
    while True:
        done = await conn.fetchval(
            "SELECT count(*) FROM scheduler_jobs WHERE state NOT IN ('pending', 'in_progress')"
        )
        if done >= n:
            return
        if time.monotonic() > deadline:
            raise BenchError(f"only {done} of {n} jobs finished within {within:.0f}s")
        await asyncio.sleep(0.1)


# --- 1. throughput -----------------------------------------------------------------------------


@dataclass
class Params:
    quick: bool
    runs: int
    jobs: int
    workers: tuple[int, ...]
    samples: int


async def throughput_run(base: str, kind: str, n: int, workers: int) -> dict[str, Any]:
    fn, job_kind = KINDS[kind]
    async with fresh_database(base) as dsn, children() as started:
        await migrate(dsn)
        store = PostgresStore(dsn, listen=False, application_name="bench-setup")
        await store.open()
        try:
            parked = time.time() + PARKED
            for start in range(0, n, 1000):
                async with store.transaction(time.time()) as tx:
                    for _ in range(min(1000, n - start)):
                        await tx.enqueue(job(fn, job_kind, parked))
        finally:
            await store.close()
        ws = await start_workers(started, dsn, workers, sweep=30.0)
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute("VACUUM ANALYZE scheduler_jobs")
            release = conn.transaction()
            await release.start()
            await conn.execute(
                "UPDATE scheduler_jobs SET next_ts = $1 WHERE state = 'pending'", time.time()
            )
            await conn.execute("SELECT pg_notify($1, 'bench')", DEFAULT_CHANNEL)
            released = time.time()  # the clock starts at the COMMIT that makes them due
            cpu0 = cpu_times()
            await release.commit()
            await wait_finished(conn, n, within=max(60.0, n / 100))
            cpu1 = cpu_times()
            last = await conn.fetchval("SELECT max(finished_at) FROM scheduler_jobs")
            states = await job_states(conn)
        finally:
            await conn.close()
        counts = [int((await w.finish())["count"]) for w in ws]
    if states != {"success": n} or sum(counts) != n:
        raise BenchError(f"{kind} x{workers}: states {states}, handler calls {counts}")
    seconds = float(last) - released
    return {
        "jobs_per_s": n / seconds,
        "seconds": seconds,
        "cpu_busy": busy_between(cpu0, cpu1),
        "per_worker": counts,
    }


def section_throughput(p: Params, base: str) -> dict[str, Any]:
    """Rounds of every (kind, worker count) in turn, so that load from outside drifting over
    the minutes weighs on each configuration alike."""
    got: dict[tuple[str, int], list[dict[str, Any]]] = {
        (k, w): [] for k in KINDS for w in p.workers
    }
    for r in range(p.runs):
        for (kind, w), runs in got.items():
            one = asyncio.run(throughput_run(base, kind, p.jobs, w))
            log(
                f"  round {r + 1}/{p.runs} {kind} x{w}: {one['jobs_per_s']:,.0f} jobs/s "
                f"({one['seconds']:.2f}s; CPU busy {one['cpu_busy']:.0%}; per worker "
                f"{one['per_worker']})"
            )
            runs.append(one)
    res: dict[str, Any] = {kind: {} for kind in KINDS}
    for (kind, w), runs in got.items():
        res[kind][w] = {
            "jobs_per_s": summarize(g["jobs_per_s"] for g in runs),
            "seconds": summarize(g["seconds"] for g in runs),
            "cpu_busy": summarize(g["cpu_busy"] for g in runs),
            "per_worker": [g["per_worker"] for g in runs],
        }
    return res


def print_throughput(p: Params, res: dict[str, Any]) -> None:
    out(f"\n== Throughput: {p.jobs:,} due no-op jobs drained by N worker processes")
    for kind, by_w in res.items():
        base = by_w[p.workers[0]]["jobs_per_s"].median
        for w, r in by_w.items():
            spread = ", ".join("/".join(str(c) for c in counts) for counts in r["per_worker"][:3])
            out(
                f"   {kind:9} x{w}: {r['jobs_per_s'].show('jobs/s')}"
                f"  = {r['jobs_per_s'].median / base:.2f}x of x{p.workers[0]}"
                f"; machine CPU busy {r['cpu_busy'].median:.0%}  (jobs per worker: {spread})"
            )


# --- 2. cross-process wake latency ---------------------------------------------------------


async def wake_run(base: str, samples: int, seed: int) -> dict[str, Any]:
    async with fresh_database(base) as dsn, children() as started:
        await migrate(dsn)
        [b] = await start_workers(started, dsn, 1, sweep=60.0)
        a = await Child.start("_enqueue", dsn, str(samples), str(seed))
        started.append(a)
        sent = json.loads(await a.line(within=LINE_TIMEOUT + samples * 0.1))
        conn = await asyncpg.connect(dsn)
        try:
            await wait_finished(conn, samples, within=LINE_TIMEOUT)
            states = await job_states(conn)
        finally:
            await conn.close()
        stamps = (await b.finish())["stamps"]
    if states != {"success": samples} or len(stamps) != samples:
        raise BenchError(f"wake: states {states}, {len(stamps)} handler stamps")
    ran = {int(job_id): float(at) for job_id, _, at in stamps}
    lat = [(ran[int(job_id)] - float(t)) * 1e3 for job_id, t, _ in sent]
    commit = [(float(after) - float(t)) * 1e3 for _, t, after in sent]
    return {
        "p50_ms": percentile(lat, 50),
        "p99_ms": percentile(lat, 99),
        "max_ms": max(lat),
        "enqueue_call_p50_ms": percentile(commit, 50),
        "samples": len(lat),
    }


def section_wake(p: Params, base: str) -> dict[str, Any]:
    runs = []
    for r in range(p.runs):
        got = asyncio.run(wake_run(base, p.samples, seed=r))
        log(
            f"  wake run {r + 1}/{p.runs}: p50 {got['p50_ms']:.1f} ms, p99 "
            f"{got['p99_ms']:.1f} ms, max {got['max_ms']:.1f} ms"
        )
        runs.append(got)
    return {
        key: summarize(g[key] for g in runs)
        for key in ("p50_ms", "p99_ms", "max_ms", "enqueue_call_p50_ms")
    } | {"samples_per_run": p.samples}


def print_wake(res: dict[str, Any]) -> None:
    out(
        f"\n== Cross-process wake: enqueue in A -> handler start in B "
        f"({res['samples_per_run']} probes per run; B's sweep every 60 s)"
    )
    out(f"   p50  {res['p50_ms'].show('ms', 1)}")
    out(f"   p99  {res['p99_ms'].show('ms', 1)}")
    out(f"   max  {res['max_ms'].show('ms', 1)}")
    out(f"   (of which A's own enqueue call, p50: {res['enqueue_call_p50_ms'].show('ms', 1)})")


# --- aims, meta, main --------------------------------------------------------------------------


def evaluate_aims(p: Params, res: dict[str, Any]) -> list[dict[str, Any]]:
    aims: list[dict[str, Any]] = []
    for kind, by_w in res.get("throughput", {}).items():
        medians = [by_w[w]["jobs_per_s"].median for w in p.workers]
        grows = all(b > a for a, b in itertools.pairwise(medians))
        shown = " -> ".join(f"x{w} {m:,.0f}" for w, m in zip(p.workers, medians, strict=True))
        aims.append(
            {
                "aim": f"{kind} throughput grows with workers",
                "shown": f"{shown} jobs/s",
                "target": "each step up",
                "pass": grows,
            }
        )
    if "wake" in res:
        p99 = res["wake"]["p99_ms"].median
        aims.append(
            {
                "aim": "cross-process wake p99",
                "shown": f"{p99:.1f} ms",
                "target": f"< {AIM_WAKE_P99_MS:g} ms",
                "pass": p99 < AIM_WAKE_P99_MS,
            }
        )
    return aims


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


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def default_dsn() -> str:
    return (
        os.environ.get("CRIER_BENCH_POSTGRES_DSN")
        or os.environ.get("CRIER_TEST_POSTGRES_DSN")
        or DEFAULT_DSN
    )


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Scheduler benchmarks on PostgreSQL with several worker processes.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    ap.add_argument("--quick", action="store_true", help="a small smoke run (< 30 s)")
    ap.add_argument("--runs", type=int, default=None, help="runs per measurement (default 3)")
    ap.add_argument("--json", type=Path, default=None, help="write the results as JSON here")
    ap.add_argument("--dsn", default=None, help="the server (a database on it is created)")
    ap.add_argument("--jobs", type=int, default=None, help="jobs per throughput run")
    ap.add_argument("--samples", type=int, default=None, help="wake probes per run")
    ap.add_argument("--workers", default="1,2,4", help="worker counts (default 1,2,4)")
    ap.add_argument("--only", default=",".join(SECTIONS), help=f"of {', '.join(SECTIONS)}")
    args = ap.parse_args(argv)
    args.sections = [s.strip() for s in args.only.split(",") if s.strip()]
    if set(args.sections) - set(SECTIONS):
        ap.error(f"--only takes {', '.join(SECTIONS)}")
    if args.runs is not None and args.runs < 1:
        ap.error("--runs must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_work":
        asyncio.run(child_work(argv[1], argv[2], float(argv[3])))
        return 0
    if argv and argv[0] == "_enqueue":
        asyncio.run(child_enqueue(argv[1], int(argv[2]), int(argv[3])))
        return 0
    args = parse_args(argv)
    p = Params(
        quick=args.quick,
        runs=args.runs if args.runs is not None else (1 if args.quick else 3),
        jobs=args.jobs or (2_000 if args.quick else 10_000),
        workers=tuple(int(w) for w in args.workers.split(",")),
        samples=args.samples or (100 if args.quick else 500),
    )
    base = args.dsn or default_dsn()
    started = time.perf_counter()
    try:
        server = asyncio.run(server_info(base))
    except (OSError, asyncpg.PostgresError) as exc:
        print(f"pg_bench: cannot reach PostgreSQL at {base}: {exc}", file=sys.stderr)
        return 2
    info = {
        "command": shlex.join([".venv/bin/python", "bench/pg_bench.py", *argv]),
        "python": platform.python_version(),
        "asyncpg": asyncpg.__version__,
        "postgres": server,
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "runs": p.runs,
        "jobs": p.jobs,
        "workers": list(p.workers),
        "samples": p.samples,
        "loadavg_start": load_average(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    out(
        f"pg bench: Python {info['python']}, PostgreSQL {server['server_version']} on "
        f"{server['host']} (fsync {server['fsync']}, synchronous_commit "
        f"{server['synchronous_commit']}), asyncpg {info['asyncpg']}, {info['cpus']} CPUs "
        f"shared by the server, the workers and this script; {info['platform']}"
    )
    out(f"command: {info['command']}")
    out(f"medians of {p.runs} run(s) with min and max; load average at start: "
        f"{info['loadavg_start']}")  # fmt: skip
    res: dict[str, Any] = {}
    try:
        if "throughput" in args.sections:
            log("[throughput]")
            res["throughput"] = section_throughput(p, base)
            print_throughput(p, res["throughput"])
        if "wake" in args.sections:
            log("[wake]")
            res["wake"] = section_wake(p, base)
            print_wake(res["wake"])
    except BenchError as exc:
        print(f"pg_bench: {exc}", file=sys.stderr)
        return 1
    aims = evaluate_aims(p, res)
    out("\n== Aims (informational; the exit code is 0 either way)")
    for a in aims:
        out(f"   {'PASS' if a['pass'] else 'MISS'}  {a['aim']}: {a['shown']} (aim {a['target']})")
    info["loadavg_end"] = load_average()
    elapsed = time.perf_counter() - started
    out(f"\n(total {elapsed:.0f} s; load average at the end: {info['loadavg_end']})")
    if args.json is not None:
        doc = {"meta": {**info, "elapsed_s": elapsed}, **to_jsonable(res), "aims": aims}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=2) + "\n", "utf-8")
        out(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
