"""This scheduler side by side with APScheduler 3 and the naive poller, in one run.

Run from the project root with the project's virtualenv (``pip install -e '.[bench]'``)::

    .venv/bin/python bench/compare_bench.py                  # everything (~10-12 minutes)
    .venv/bin/python bench/compare_bench.py --quick          # a smoke run (< 30 s)
    .venv/bin/python bench/compare_bench.py --only throughput,lateness --json out.json

Peers (``bench/peers/``), each measurement in a fresh subprocess (``bench.peers.worker``):

``ours``             this scheduler, SQLite store (WAL, synchronous=NORMAL), SystemClock;
                     no-op actions (``ours_mutations``: no-op mutations, throughput only)
``apscheduler``      APScheduler 3 ``AsyncIOScheduler`` + ``SQLAlchemyJobStore`` on a SQLite
                     file configured by URL (SQLite's defaults: rollback journal, FULL sync)
``apscheduler_wal``  the same with WAL and synchronous=NORMAL (our store's settings)
``naive_1s/_5s``     one timer polls a jobs table every 1 s / 5 s (aiosqlite; see
                     ``bench/peers/naive_peer.py``)
``raw``              the machine's raw SQLite limit for the same work (scheduler_bench's)

Sections (``--only``):

``throughput``  due-now no-op jobs from the first enqueue to the last done, enqueued 100 per
                transaction (APScheduler: one ``add_job`` each, the loop gets control every
                100), in interleaved rounds; ratios are paired per round.
``lateness``    1,000 jobs due evenly over 10 s: how late each ran (p50, p99, max).
``idle``        CPU (``time.process_time``) over 30 s with 100,000 jobs pending an hour out;
                the peers' processes run at the same time (each counts only its own CPU).
``startup``     with 1,000,000 jobs pending: time from nothing open to ready to dispatch,
                and memory (peak RSS of a fresh process per run).
``pass``        one dispatch pass with 1,000 vs 1,000,000 pending (scheduler_bench's pass
                section; ``--pass-json`` takes it from a scheduler_bench JSON instead).

Every figure is the median of several runs with min and max; the aims at the end are
informational (exit code 0 either way).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import scheduler_bench as sb
from bench._stats import log, out, percentile, print_aims, ratio, summarize

ROOT = Path(__file__).resolve().parent.parent

SECTIONS = ("throughput", "lateness", "idle", "startup", "pass")

# Aims (from the issue).
AIM_THROUGHPUT_X = 5.0
AIM_P99_X = 10.0
AIM_MEMORY_MB = 150.0
AIM_PASS_FLAT_RATIO = sb.AIM_PASS_FLAT_RATIO


@dataclass(frozen=True)
class Variant:
    key: str
    label: str
    peer: str  # the worker's module key
    opts: dict[str, Any] = field(default_factory=dict)
    family: str = ""  # variants of one family share a database format

    @property
    def db_family(self) -> str:
        return self.family or self.peer


VARIANTS: dict[str, Variant] = {
    v.key: v
    for v in (
        Variant("ours", "this scheduler", "ours", {"kind": "actions"}),
        Variant("ours_mutations", "this scheduler (mutations)", "ours", {"kind": "mutations"}),
        Variant("raw", "raw SQLite (sqlite3)", "ours"),
        Variant("apscheduler", "APScheduler 3 (default journal)", "apscheduler", {"wal": False}),
        Variant("apscheduler_wal", "APScheduler 3 (WAL)", "apscheduler", {"wal": True}),
        Variant("naive_1s", "naive poller, 1 s", "naive", {"interval": 1.0}),
        Variant("naive_5s", "naive poller, 5 s", "naive", {"interval": 5.0}),
    )
}
APS = ("apscheduler", "apscheduler_wal")


class BenchError(RuntimeError):
    pass


class LeadTooShort(BenchError):
    pass


# --- parameters --------------------------------------------------------------------------------


class Params:
    """How big each section is, and how many runs each peer gets; ``--quick`` shrinks all."""

    def __init__(self, quick: bool, runs: int | None, slow_runs: int | None) -> None:
        self.quick = quick
        self.runs = runs if runs is not None else (1 if quick else 5)
        self.slow_runs = slow_runs if slow_runs is not None else (1 if quick else 3)
        slow = self.slow_runs
        self.batch = 100
        # Throughput: jobs and runs per variant. APScheduler on its default journal commits
        # with a full fsync per add and per removal; its rate does not depend on the count
        # (it never falls more than one batch behind), so it gets fewer jobs to keep the run
        # short.
        n = 100 if quick else 10_000
        self.tp_jobs = {k: n for k in VARIANTS if k != "naive_5s"}
        self.tp_jobs["apscheduler"] = 30 if quick else 2_000
        self.tp_runs = {k: self.runs for k in ("ours", "ours_mutations", "raw")}
        self.tp_runs |= {k: slow for k in ("apscheduler", "apscheduler_wal", "naive_1s")}
        # Lateness.
        self.late_jobs, self.late_span = (20, 0.5) if quick else (1_000, 10.0)
        self.late_runs = {"ours": self.runs} | {
            k: slow for k in ("apscheduler", "apscheduler_wal", "naive_1s", "naive_5s")
        }
        self.late_lead = 1.0  # doubled and retried if enqueueing overruns it
        # Idle.
        self.idle_pending, self.idle_window = (200, 1.0) if quick else (100_000, 30.0)
        self.idle_runs = slow
        self.idle_variants = ("ours", "apscheduler", "apscheduler_wal", "naive_1s", "naive_5s")
        # Start-up and memory.
        self.big_pending = 500 if quick else 1_000_000
        self.startup_runs = slow
        self.settle = 0.2 if quick else 2.0
        self.startup_variants = ("ours", "naive_1s", "apscheduler", "apscheduler_wal")
        # The dispatch pass (scheduler_bench's section).
        self.pass_params = sb.Params(quick, None, None)
        if quick:
            self.pass_params.pass_sizes = (500, 2_000)
            self.pass_params.pass_repeats = 5


# --- workers -----------------------------------------------------------------------------------


def worker_cmd(variant: Variant, op: str, args: dict[str, Any]) -> list[str]:
    spec = {"peer": variant.peer, "op": op, "args": {**variant.opts, **args}}
    return [sys.executable, "-m", "bench.peers.worker", json.dumps(spec)]


def parse_result(variant: Variant, op: str, proc: subprocess.CompletedProcess[str]) -> Any:
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        raise BenchError(
            f"{variant.key} {op}: the worker printed no result (exit {proc.returncode}):\n"
            + proc.stderr[-3000:]
        )
    doc = json.loads(lines[-1][len("RESULT ") :])
    if not doc["ok"]:
        cls = LeadTooShort if doc.get("kind") == "lead" else BenchError
        raise cls(f"{variant.key} {op}: {doc['error']}\n{proc.stderr[-3000:]}")
    return doc["value"]


def worker(variant: Variant, op: str, timeout: float = 900, **args: Any) -> Any:
    """Run ``op`` of ``variant`` in a fresh interpreter; return its result."""
    proc = subprocess.run(
        worker_cmd(variant, op, args),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return parse_result(variant, op, proc)


def workers_at_once(jobs: list[tuple[Variant, str, dict[str, Any]]], timeout: float) -> list[Any]:
    """Several workers at the same time (for measurements that don't compete for the CPU,
    and for builds); results in the order given."""
    procs = [
        subprocess.Popen(
            worker_cmd(v, op, args),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        for v, op, args in jobs
    ]
    results = []
    for (v, op, _), proc in zip(jobs, procs, strict=True):
        stdout, stderr = proc.communicate(timeout=timeout)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        results.append(parse_result(v, op, done))
    return results


def clean(folder: Path) -> None:
    for f in folder.iterdir():
        if f.is_file():
            f.unlink()


# --- 1. throughput -----------------------------------------------------------------------------


def section_throughput(p: Params, folder: Path) -> dict[str, Any]:
    order = ("raw", "ours", "ours_mutations", "naive_1s", "apscheduler_wal", "apscheduler")
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in order}
    by_round: list[dict[str, float]] = []
    for r in range(max(p.tp_runs.values())):
        log(f"  throughput round {r + 1}")
        this_round: dict[str, float] = {}
        for key in order:
            if r >= p.tp_runs[key]:
                continue
            v = VARIANTS[key]
            n = p.tp_jobs[key]
            if key == "raw":
                got = worker(v, "raw", folder=str(folder), n=n)
            else:
                got = worker(v, "throughput", folder=str(folder), n=n, batch=p.batch)
            samples[key].append(got)
            this_round[key] = got["jobs_per_s"]
            log(f"    {key:<16} {got['jobs_per_s']:8,.0f} jobs/s")
            clean(folder)
        by_round.append(this_round)
    result: dict[str, Any] = {"batch": p.batch, "peers": {}}
    for key, runs in samples.items():
        result["peers"][key] = {"jobs": p.tp_jobs[key]} | {
            m: summarize(s[m] for s in runs) for m in runs[0]
        }
    # ours / peer: the ratio of the medians, and the ratios paired within each round.
    ours = result["peers"]["ours"]["jobs_per_s"].median
    result["ratio_ours_to"] = {}
    for key in order:
        if key == "ours":
            continue
        paired = [rd["ours"] / rd[key] for rd in by_round if key in rd and "ours" in rd]
        result["ratio_ours_to"][key] = {
            "of_medians": ratio(ours, result["peers"][key]["jobs_per_s"].median),
            "paired": summarize(paired),
        }
    return result


def print_throughput(s: dict[str, Any]) -> None:
    out("\n== 1. Throughput: due-now no-op jobs, first enqueue -> last done")
    out(
        f"   (ours and naive: {s['batch']} enqueues per transaction while running; APScheduler: "
        f"add_job each, the loop gets control every {s['batch']}; raw: 3 transactions per job)"
    )
    for key, r in s["peers"].items():
        out(f"   {VARIANTS[key].label:<32} {r['jobs_per_s'].show('jobs/s')}  [{r['jobs']:,} jobs]")
    out("   this scheduler / peer (ratio of medians; paired per round: median, min, max):")
    for key, rt in s["ratio_ours_to"].items():
        paired = rt["paired"].show("", 2)
        out(f"     / {VARIANTS[key].label:<30} {rt['of_medians']:6.2f}x  paired {paired}")


# --- 2. lateness -------------------------------------------------------------------------------


def lateness_once(p: Params, key: str, folder: Path, lead: float) -> tuple[list[float], float]:
    """One run; if enqueueing overran the lead time, retry with twice the lead."""
    for _ in range(6):
        try:
            late = worker(
                VARIANTS[key],
                "lateness",
                folder=str(folder),
                n=p.late_jobs,
                span=p.late_span,
                lead=lead,
                batch=p.batch,
            )
            return late, lead
        except LeadTooShort:
            lead *= 2
            log(f"    {key}: enqueueing overran the lead time; retrying with {lead:.1f} s")
        finally:
            clean(folder)
    raise BenchError(f"{key}: could not enqueue the lateness jobs within {lead} s")


def section_lateness(p: Params, folder: Path) -> dict[str, Any]:
    keys = tuple(p.late_runs)
    lead = dict.fromkeys(keys, p.late_lead)
    per_run: dict[str, list[list[float]]] = {k: [] for k in keys}
    for r in range(max(p.late_runs.values())):
        log(f"  lateness round {r + 1} ({p.late_span:g} s each)")
        for key in keys:
            if r >= p.late_runs[key]:
                continue
            late, lead[key] = lateness_once(p, key, folder, lead[key])
            per_run[key].append(late)
            log(f"    {key:<16} p99 {percentile(late, 99) * 1000:10.2f} ms")
    result: dict[str, Any] = {"jobs": p.late_jobs, "span_s": p.late_span, "peers": {}}
    for key, runs in per_run.items():
        result["peers"][key] = {
            "lead_s": lead[key],
            "p50_ms": summarize(percentile(r, 50) * 1000 for r in runs),
            "p99_ms": summarize(percentile(r, 99) * 1000 for r in runs),
            "max_ms": summarize(max(r) * 1000 for r in runs),
            # Every job of every run, for the plot (ms, rounded to a microsecond).
            "all_ms": [round(x * 1000, 3) for r in runs for x in r],
        }
    ours = result["peers"]["ours"]["p99_ms"].median
    result["p99_ratio_peer_to_ours"] = {
        k: ratio(r["p99_ms"].median, ours) for k, r in result["peers"].items() if k != "ours"
    }
    return result


def print_lateness(s: dict[str, Any]) -> None:
    out(
        f"\n== 2. Lateness: {s['jobs']:,} no-op jobs due evenly over {s['span_s']:g} s "
        "(real clock); time.time() at the job's start minus its due time"
    )
    out("   (per run: p50/p99/max over its jobs; shown: median of the runs, min, max)")
    for key, r in s["peers"].items():
        out(f"   {VARIANTS[key].label}")
        for m in ("p50_ms", "p99_ms", "max_ms"):
            out(f"     {m[:3]:<4} {r[m].show('ms', 2)}")
    out("   p99 of the peer / p99 of this scheduler (medians):")
    for key, x in s["p99_ratio_peer_to_ours"].items():
        out(f"     {VARIANTS[key].label:<32} {x:10.1f}x")


# --- 3. idle CPU -------------------------------------------------------------------------------


def build_families(
    variants: tuple[str, ...], folder: Path, count: int, first_ts: float, spread: float
) -> dict[str, tuple[Path, float]]:
    """One database per family (ours, apscheduler, naive) with ``count`` pending jobs, built
    at the same time in separate processes. Returns the path and the seconds it took."""
    fams: dict[str, Variant] = {}
    for key in variants:
        fams.setdefault(VARIANTS[key].db_family, VARIANTS[key])
    jobs = []
    paths = {}
    for fam, v in fams.items():
        paths[fam] = folder / f"built-{fam}-{count}.db"
        args = {"path": str(paths[fam]), "count": count, "first_ts": first_ts, "spread": spread}
        jobs.append((v, "build", args))
    t0 = time.perf_counter()
    workers_at_once(jobs, timeout=1800)
    total = time.perf_counter() - t0
    log(f"  built {count:,} pending jobs for {', '.join(fams)} in {total:.0f} s (in parallel)")
    return {fam: (paths[fam], total) for fam in fams}


def copy_db(src: Path, dst: Path) -> Path:
    for suffix in ("", "-wal", "-shm", "-journal"):
        s = Path(str(src) + suffix)
        if s.exists():
            shutil.copyfile(s, Path(str(dst) + suffix))
    return dst


def section_idle(p: Params, folder: Path) -> dict[str, Any]:
    keys = p.idle_variants
    built = build_families(keys, folder, p.idle_pending, time.time() + 3600.0, 60.0)
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in keys}
    for r in range(p.idle_runs):
        log(f"  idle round {r + 1}/{p.idle_runs}: {len(keys)} peers at once, {p.idle_window:g} s")
        jobs = []
        for key in keys:
            src, _ = built[VARIANTS[key].db_family]
            path = copy_db(src, folder / f"idle-{key}-{r}.db")
            jobs.append((VARIANTS[key], "idle", {"path": str(path), "window": p.idle_window}))
        for key, got in zip(keys, workers_at_once(jobs, timeout=p.idle_window + 300), strict=True):
            samples[key].append(got)
    clean(folder)
    result: dict[str, Any] = {"pending": p.idle_pending, "window_s": p.idle_window, "peers": {}}
    for key, runs in samples.items():
        result["peers"][key] = {m: summarize(s[m] for s in runs) for m in runs[0]}
    return result


def print_idle(s: dict[str, Any]) -> None:
    out(
        f"\n== 3. Idle CPU: {s['window_s']:g} s with {s['pending']:,} jobs pending an hour out "
        "(time.process_time() of the peer's own process, all threads)"
    )
    out("   (the peers ran at the same time, each in its own process)")
    for key, r in s["peers"].items():
        extra = ""
        if "passes" in r:
            extra = f"  [{r['passes'].median:.0f} dispatch passes]"
        elif "ticks" in r:
            extra = f"  [{r['ticks'].median:.0f} ticks]"
        out(f"   {VARIANTS[key].label:<32} per 20 s {r['cpu_per_20s'].show('s CPU', 4)}{extra}")


# --- 4. start-up and memory with many pending ---------------------------------------------------


def section_startup(p: Params, folder: Path) -> dict[str, Any]:
    keys = p.startup_variants
    built = build_families(keys, folder, p.big_pending, time.time() + 3600.0, 86_400.0)
    # WAL is a persistent property of the file: the WAL variant gets its own copy, so the
    # default variant keeps its rollback journal.
    paths = {}
    for key in keys:
        src, _ = built[VARIANTS[key].db_family]
        same_family = [k for k in keys if VARIANTS[k].db_family == VARIANTS[key].db_family]
        paths[key] = src if same_family[0] == key else copy_db(src, folder / f"big-{key}.db")
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in keys}
    for r in range(p.startup_runs):
        log(f"  start-up round {r + 1}/{p.startup_runs} ({p.big_pending:,} pending)")
        for key in keys:
            got = worker(VARIANTS[key], "startup", path=str(paths[key]), settle=p.settle)
            samples[key].append(got)
            log(
                f"    {key:<16} ready in {got['startup_s'] * 1000:8.1f} ms, "
                f"peak RSS {got['peak_rss_mb']:.0f} MB"
            )
    sizes = {key: paths[key].stat().st_size / 2**20 for key in keys}
    clean(folder)
    result: dict[str, Any] = {
        "pending": p.big_pending,
        "settle_s": p.settle,
        "build_s": {fam: b for fam, (_, b) in built.items()},
        "peers": {},
    }
    for key, runs in samples.items():
        result["peers"][key] = {m: summarize(s[m] for s in runs) for m in runs[0]}
        result["peers"][key]["db_mb"] = sizes[key]
    return result


def print_startup(s: dict[str, Any]) -> None:
    out(
        f"\n== 4. Start-up and memory with {s['pending']:,} jobs pending (a fresh process per "
        "run; ready = able to dispatch: first pass / tick done)"
    )
    out(
        f"   (memory: peak RSS of the process (VmHWM), which includes the interpreter and the "
        f"peer's imports; 'base' is the RSS after imports; {s['settle_s']:g} s running after ready)"
    )
    for key, r in s["peers"].items():
        out(
            f"   {VARIANTS[key].label:<32} ready {r['startup_s'].scaled(1000).show('ms', 1)}; "
            f"peak RSS {r['peak_rss_mb'].show('MB', 1)} (base {r['rss_base_mb'].median:.1f} MB); "
            f"db {r['db_mb']:,.0f} MB"
        )


# --- 5. the dispatch pass (scheduler_bench's) ----------------------------------------------------


def from_jsonable(node: Any) -> Any:
    """scheduler_bench's JSON back into Summary objects."""
    if isinstance(node, dict):
        if {"median", "min", "max", "runs"} <= node.keys():
            return summarize(node["runs"])
        return {k: from_jsonable(v) for k, v in node.items()}
    if isinstance(node, list):
        return [from_jsonable(v) for v in node]
    return node


def section_pass(p: Params, folder: Path, pass_json: Path | None) -> dict[str, Any]:
    if pass_json is not None:
        doc = json.loads(pass_json.read_text("utf-8"))
        got: dict[str, Any] = from_jsonable(doc["pass"])
        got["source"] = f"taken from {pass_json.name} (scheduler_bench.py, same session)"
        return got
    got = sb.section_pass(p.pass_params, folder)
    got["source"] = "measured by this run (scheduler_bench.section_pass)"
    return got


# --- aims ----------------------------------------------------------------------------------------


def evaluate_aims(res: dict[str, Any]) -> list[dict[str, Any]]:
    aims: list[dict[str, Any]] = []

    def add(name: str, value: float, target: str, ok: bool, shown: str) -> None:
        aims.append({"aim": name, "value": value, "target": target, "pass": ok, "shown": shown})

    tp = res.get("throughput")
    if tp is not None:
        for key in APS:
            # The smaller of the ratio of the medians and the median of the per-round ratios.
            rt = tp["ratio_ours_to"][key]
            x = min(rt["of_medians"], rt["paired"].median)
            add(
                f"throughput vs {VARIANTS[key].label}",
                x,
                f">= {AIM_THROUGHPUT_X:g}x",
                x >= AIM_THROUGHPUT_X,
                f"{rt['of_medians']:.1f}x of the medians "
                f"({tp['peers']['ours']['jobs_per_s'].median:,.0f} vs "
                f"{tp['peers'][key]['jobs_per_s'].median:,.0f} jobs/s), "
                f"{rt['paired'].median:.1f}x paired per round",
            )
    late = res.get("lateness")
    if late is not None:
        for key in APS:
            x = late["p99_ratio_peer_to_ours"][key]
            add(
                f"p99 lateness vs {VARIANTS[key].label}",
                x,
                f">= {AIM_P99_X:g}x lower",
                x >= AIM_P99_X,
                f"{x:.1f}x lower ({late['peers']['ours']['p99_ms'].median:.2f} vs "
                f"{late['peers'][key]['p99_ms'].median:.2f} ms)",
            )
    ps = res.get("pass")
    if ps is not None:
        rt = ps["ratio"]
        add(
            f"dispatch pass flat {rt['small']:,} -> {rt['big']:,} pending",
            rt["pass"],
            f"ratio <= {AIM_PASS_FLAT_RATIO}",
            rt["pass"] <= AIM_PASS_FLAT_RATIO,
            f"{rt['pass']:.2f}x ({ps['sizes'][str(rt['small'])]['pass_ms'].median:.3f} -> "
            f"{ps['sizes'][str(rt['big'])]['pass_ms'].median:.3f} ms)",
        )
    st = res.get("startup")
    if st is not None:
        mb = st["peers"]["ours"]["peak_rss_mb"].median
        add(
            f"memory at {st['pending']:,} pending",
            mb,
            f"< {AIM_MEMORY_MB:g} MB peak RSS",
            mb < AIM_MEMORY_MB,
            f"{mb:.1f} MB",
        )
    return aims


# --- output --------------------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def meta(p: Params, argv: list[str], folder: Path) -> dict[str, Any]:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "command": shlex.join([".venv/bin/python", "bench/compare_bench.py", *argv]),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_usable": usable,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "versions": {
            d: version(d) for d in ("apscheduler", "sqlalchemy", "aiosqlite", "matplotlib")
        },
        "quick": p.quick,
        "runs": p.runs,
        "slow_runs": p.slow_runs,
        "db_folder": str(folder),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "loadavg_start": sb.load_average(),
        "git": sb.git_state(),
    }


def apscheduler_missing() -> str | None:
    for mod in ("apscheduler", "sqlalchemy"):
        try:
            __import__(mod)
        except ImportError:
            return mod
    return None


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="This scheduler vs APScheduler 3 vs a naive poller, in one run.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    ap.add_argument("--quick", action="store_true", help="a small smoke run (< 30 s)")
    ap.add_argument("--runs", type=int, default=None, help="runs of the fast peers (default 5)")
    ap.add_argument(
        "--slow-runs",
        type=int,
        default=None,
        help="runs of APScheduler, the naive poller, idle and start-up (default 3)",
    )
    ap.add_argument("--json", type=Path, default=None, help="write the results as JSON here")
    ap.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections to run: {', '.join(SECTIONS)}",
    )
    ap.add_argument("--dir", type=Path, default=None, help="folder for the databases")
    ap.add_argument(
        "--pass-json",
        type=Path,
        default=None,
        help="take the dispatch-pass section from this scheduler_bench.py JSON",
    )
    args = ap.parse_args(argv)
    args.sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown section(s): {', '.join(sorted(unknown))}; choose from {SECTIONS}")
    for name in ("runs", "slow_runs"):
        value = getattr(args, name)
        if value is not None and value < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    missing = apscheduler_missing()
    if missing is not None:
        print(
            f"compare_bench needs {missing}: install the project's bench extra with "
            "`.venv/bin/pip install -e '.[bench]'`",
            file=sys.stderr,
        )
        return 2
    p = Params(args.quick, args.runs, args.slow_runs)
    want = set(args.sections)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="compare-bench-", dir=args.dir) as tmp:
        folder = Path(tmp)
        info = meta(p, argv, folder)
        out(
            f"compare bench: {info['cpu']}, {info['cpus']} CPUs ({info['cpus_usable']} usable), "
            f"Python {info['python']}, SQLite {info['sqlite']}, {info['platform']}"
        )
        out("versions: " + ", ".join(f"{k} {v}" for k, v in info["versions"].items()))
        out(f"command: {info['command']}")
        out(
            f"medians of {p.runs} run(s) for ours and raw SQLite, {p.slow_runs} for the slower "
            "peers, with min and max"
        )
        out(f"checkout: {info['git']}; load average at start (1/5/15 min): {info['loadavg_start']}")
        res: dict[str, Any] = {}
        steps = [
            ("throughput", section_throughput, print_throughput),
            ("lateness", section_lateness, print_lateness),
            ("idle", section_idle, print_idle),
            ("startup", section_startup, print_startup),
        ]
        for name, run, show in steps:
            if name in want:
                log(f"[{name}]")
                res[name] = run(p, folder)
                show(res[name])
        if "pass" in want:
            log("[pass]")
            res["pass"] = section_pass(p, folder, args.pass_json)
            out(f"\n(dispatch pass: {res['pass']['source']})")
            sb.print_pass(res["pass"])
        aims = evaluate_aims(res)
        print_aims(aims)
        elapsed = time.perf_counter() - started
        info["loadavg_end"] = sb.load_average()
        info["git_end"] = sb.git_state()
        out(f"\n(total {elapsed:.0f} s; load average at the end: {info['loadavg_end']})")
        if args.json is not None:
            doc = {"meta": {**info, "elapsed_s": elapsed}, **sb.to_jsonable(res), "aims": aims}
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(doc, indent=2) + "\n", "utf-8")
            out(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
