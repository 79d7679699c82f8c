"""Run every benchmark and write ``docs/benchmarks.md`` with a plot, ``docs/benchmarks.png``.

    .venv/bin/python bench/run_all.py                 # the full run (~35 minutes)
    .venv/bin/python bench/run_all.py --quick         # smoke sizes; docs go to the results
                                                      #   folder, not docs/
    .venv/bin/python bench/run_all.py --from DIR      # rewrite the docs from a results folder

Runs, each in its own process, in this order: ``bench/scheduler_bench.py``,
``bench/schedules_bench.py``, ``bench/bot_bench.py`` (if present; also with three bot
processes on PostgreSQL when ``CRIER_TEST_POSTGRES_DSN`` names a server), ``bench/scale_bench.py``
(100,000 announcements; ``--scale-full`` for 1,000,000, seeded once and cached in the temp
dir), ``bench/interaction_bench.py`` (sizes from ``--interaction-sizes``) and
``bench/compare_bench.py`` (which takes its dispatch-pass section from scheduler_bench's
JSON rather than building a million rows twice), and ``bench/pg_compare.py`` (procrastinate
and pgqueuer on PostgreSQL) when ``CRIER_TEST_POSTGRES_DSN`` names a server. Each one's
stdout and JSON are kept in the results folder (``--out``, default a new temporary folder,
printed at the end).
Needs the project's ``bench`` extra: ``.venv/bin/pip install -e '.[bench]'``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.compare_bench import SECTIONS, VARIANTS, evaluate_aims, from_jsonable

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
DOCS = ROOT / "docs"
PY = ".venv/bin/python"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- running -------------------------------------------------------------------------------------


INTERACTION_SIZES = "0,1000,10000"
"""The bursts interaction_bench runs by default (about 6 minutes; the 10,000 one is the
issue's aim); ``--interaction-sizes 0,1000,5000,10000`` for the whole series."""

INTERACTION_RUNS = 3
"""Runs of each interaction_bench size (a median with its min-max; about 6 minutes each)."""


def plan(
    quick: bool, out: Path, interaction_sizes: str = INTERACTION_SIZES, scale: str = "modest"
) -> list[tuple[str, list[str]]]:
    """(name, argv after the interpreter) for each benchmark to run (``scale``: the size of
    ``bench/scale_bench.py``'s seed, ``modest`` unless ``--scale-full``)."""
    q = ["--quick"] if quick else []
    steps = [
        ("scheduler_bench", ["bench/scheduler_bench.py", *q]),
        (
            "schedules_bench",
            ["bench/schedules_bench.py", *(["--runs", "1", "--count", "1000"] if quick else [])],
        ),
    ]
    dsn = os.environ.get("CRIER_TEST_POSTGRES_DSN")
    if (BENCH / "bot_bench.py").exists():
        steps.append(("bot_bench", ["bench/bot_bench.py", *q]))
        if dsn:  # three bot processes sharing one PostgreSQL database
            pg = ["--processes", "3", "--store", "postgres", "--dsn", dsn]
            steps.append(("bot_bench_pg3", ["bench/bot_bench.py", *pg, *(q or ["--runs", "3"])]))
    if dsn and (BENCH / "shards_bench.py").exists():  # three instances sharing 8 shards
        steps.append(
            ("shards_bench", ["bench/shards_bench.py", "--dsn", dsn, *(q or ["--runs", "3"])])
        )
    if (BENCH / "takeover_bench.py").exists():  # a crash, a restart, a cold start of three
        stores = "sqlite,postgres" if dsn else "sqlite"
        takeover = ["bench/takeover_bench.py", "--stores", stores]
        if dsn:
            takeover += ["--dsn", dsn]
        steps.append(("takeover_bench", [*takeover, *(q or ["--runs", "3"])]))
    steps.append(("scale_bench", ["bench/scale_bench.py", *(q or ["--size", scale])]))
    steps.append(
        (
            "interaction_bench",
            [
                "bench/interaction_bench.py",
                *(q or ["--sizes", interaction_sizes, "--runs", str(INTERACTION_RUNS)]),
            ],
        )
    )
    steps.append(
        (
            "compare_bench",
            ["bench/compare_bench.py", *q, "--pass-json", str(out / "scheduler_bench.json")],
        )
    )
    if dsn and (BENCH / "pg_compare.py").exists():  # procrastinate and pgqueuer on PostgreSQL
        steps.append(("pg_compare", ["bench/pg_compare.py", "--dsn", dsn, *q]))
    return [(name, [*argv, "--json", str(out / f"{name}.json")]) for name, argv in steps]


def snapshot(rev: str, into: Path) -> str:
    """Export commit ``rev`` (``git archive``) into ``into``; return its full hash. The
    benchmarks then import that code only, whatever happens to the work tree meanwhile."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{rev}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit], cwd=ROOT, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return commit


def run_step(name: str, argv: list[str], out: Path, root: Path) -> dict[str, Any]:
    """Run one benchmark from ``root``, echoing its stdout (and keeping it in
    ``<name>.txt``)."""
    log(f"\n===== {name}: {PY} {' '.join(argv)}")
    t0 = time.perf_counter()
    lines: list[str] = []
    with subprocess.Popen(
        [sys.executable, *argv],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    ) as proc:
        if proc.stdout is None:
            raise RuntimeError("the child was started with a pipe")
        for line in proc.stdout:
            print(line, end="", flush=True)
            lines.append(line)
    elapsed = time.perf_counter() - t0
    (out / f"{name}.txt").write_text("".join(lines), "utf-8")
    status = {"name": name, "argv": argv, "exit": proc.returncode, "elapsed_s": elapsed}
    if proc.returncode != 0:
        log(f"{name} exited with {proc.returncode}")
    return status


def run_all(
    quick: bool,
    out: Path,
    rev: str | None,
    interaction_sizes: str = INTERACTION_SIZES,
    scale: str = "modest",
) -> None:
    info: dict[str, Any] = {"snapshot": None}
    root = ROOT
    if rev is not None:
        root = out / "snapshot"
        info["snapshot"] = snapshot(rev, root)
        log(f"measuring a snapshot of {info['snapshot']} in {root}")
    steps = plan(quick, out, interaction_sizes, scale)
    info["steps"] = [run_step(name, argv, out, root) for name, argv in steps]
    (out / "run_all.json").write_text(json.dumps(info, indent=2) + "\n", "utf-8")


# --- formatting ----------------------------------------------------------------------------------


def load(out: Path, name: str) -> dict[str, Any] | None:
    path = out / f"{name}.json"
    if not path.exists():
        return None
    doc: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return doc


def num(x: float, digits: int = 0) -> str:
    if math.isinf(x):
        return "∞"
    return f"{x:,.{digits}f}"


def spread(s: dict[str, Any], digits: int = 0, scale: float = 1.0) -> str:
    """``median (min–max)``, or just the median for one run."""
    med = num(s["median"] * scale, digits)
    if len(s.get("runs", [])) == 1 or s["min"] == s["max"]:
        return med
    return f"{med} ({num(s['min'] * scale, digits)}–{num(s['max'] * scale, digits)})"


def nruns(s: dict[str, Any]) -> int:
    return len(s.get("runs", []))


def label(key: str) -> str:
    return VARIANTS[key].label


def table(header: list[str], rows: list[list[str]], left: int = 1) -> list[str]:
    """A Markdown table; the first ``left`` columns are text (left-aligned), the rest numbers."""
    align = ["---"] * left + ["--:"] * (len(header) - left)
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(align) + " |",
        *("| " + " | ".join(r) + " |" for r in rows),
    ]


# --- the plot ------------------------------------------------------------------------------------

COLORS = {
    "ours": "#1b7837",
    "ours_mutations": "#5aae61",
    "raw": "#777777",
    "apscheduler": "#b2182b",
    "apscheduler_wal": "#ef8a62",
    "naive_1s": "#2166ac",
    "naive_5s": "#67a9cf",
}


def plot(cmp: dict[str, Any], path: Path) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(13, 9.5))
    (ax_tp, ax_late), (ax_idle, ax_mem) = axes

    def bars(ax: Any, keys: list[str], stats: list[dict[str, Any]], fmt: str) -> None:
        meds = [s["median"] for s in stats]
        lo = [s["median"] - s["min"] for s in stats]
        hi = [s["max"] - s["median"] for s in stats]
        ys = range(len(keys))
        ax.barh(
            ys,
            meds,
            xerr=[lo, hi],
            color=[COLORS[k] for k in keys],
            capsize=3,
            error_kw={"elinewidth": 1},
        )
        ax.set_yticks(list(ys), [label(k) for k in keys])
        ax.invert_yaxis()
        for y, m, s in zip(ys, meds, stats, strict=True):
            ax.text(s["max"] * 1.08, y, fmt.format(m), va="center", fontsize=8)

    tp = cmp.get("throughput")
    if tp:
        keys = list(tp["peers"])
        bars(ax_tp, keys, [tp["peers"][k]["jobs_per_s"] for k in keys], "{:,.0f}")
        ax_tp.set_xscale("log")
        ax_tp.set_xlabel("jobs/s, log scale (median; whiskers: min–max)")
        ax_tp.set_title("Throughput: due-now no-op jobs, enqueue → done")
        ax_tp.set_xlim(right=max(tp["peers"][k]["jobs_per_s"]["max"] for k in keys) * 4)

    late = cmp.get("lateness")
    if late:
        for key, r in late["peers"].items():
            xs = sorted(max(x, 0.01) for x in r["all_ms"])
            ys = [(i + 1) / len(xs) for i in range(len(xs))]
            ax_late.step(xs, ys, where="post", color=COLORS[key], label=label(key))
        ax_late.set_xscale("log")
        ax_late.set_xlabel("lateness, ms, log scale (every job of every run)")
        ax_late.set_ylabel("fraction of jobs at most this late")
        ax_late.axhline(0.99, color="#999999", lw=0.7, ls=":")
        ax_late.text(
            0.01, 0.985, "p99", fontsize=8, color="#666666", va="top", ha="left",
            transform=ax_late.get_yaxis_transform(),
        )  # fmt: skip
        ax_late.set_title(f"Lateness: {late['jobs']:,} jobs over {late['span_s']:g} s (ECDF)")
        ax_late.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.14), ncol=2)
        ax_late.grid(True, which="major", alpha=0.3)

    idle = cmp.get("idle")
    if idle:
        keys = list(idle["peers"])
        stats = [idle["peers"][k]["cpu_per_20s"] for k in keys]
        bars(ax_idle, keys, stats, "{:.4f} s")
        ax_idle.set_xlabel("CPU seconds per 20 s (median; whiskers: min–max)")
        ax_idle.set_title(f"Idle CPU with {idle['pending']:,} jobs pending an hour out")
        ax_idle.set_xlim(0, max(s["max"] for s in stats) * 1.35)
        ax_idle.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(5))

    st = cmp.get("startup")
    if st:
        keys = list(st["peers"])
        ready = [st["peers"][k]["startup_s"]["median"] * 1000 for k in keys]
        bars(ax_mem, keys, [st["peers"][k]["peak_rss_mb"] for k in keys], "{:.0f} MB")
        for y, k in enumerate(keys):
            peak = st["peers"][k]["peak_rss_mb"]["max"]
            ax_mem.text(
                peak * 1.08, y + 0.28, f"ready in {ready[y]:,.0f} ms", fontsize=7, color="#444444"
            )
        ax_mem.axvline(150, color="#444444", ls="--", lw=1)
        ax_mem.text(152, len(keys) - 0.6, "aim < 150 MB", fontsize=8)
        ax_mem.set_xlabel("peak RSS, MB (fresh process; includes the interpreter)")
        ax_mem.set_title(f"Memory and start-up, {st['pending']:,} jobs pending")
        ax_mem.set_xlim(0, max(200, max(st["peers"][k]["peak_rss_mb"]["max"] for k in keys) * 1.3))

    meta = cmp.get("meta", {})
    fig.suptitle(
        f"crier scheduler vs APScheduler 3 vs a naive poller — {meta.get('cpu', '?')}, "
        f"{meta.get('cpus', '?')} CPUs, Python {meta.get('python', '?')}, "
        f"SQLite {meta.get('sqlite', '?')}",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --- the document --------------------------------------------------------------------------------


def compare_aims(cmp: dict[str, Any]) -> list[dict[str, Any]]:
    """compare_bench's aims, evaluated afresh from its results (so the docs always apply
    the current definition of each aim to the data)."""
    sections = {k: from_jsonable(cmp[k]) for k in SECTIONS if k in cmp}
    return evaluate_aims(sections)


def aims_section(docs: dict[str, dict[str, Any] | None]) -> list[str]:
    rows = []
    for name in ("compare_bench", "scheduler_bench", "scale_bench", "shards_bench", "pg_compare"):
        doc = docs.get(name)
        aims = (doc or {}).get("aims", [])
        if name == "compare_bench" and doc:
            aims = compare_aims(doc)
        for a in aims:
            mark = "**PASS**" if a["pass"] else "**MISS**"
            rows.append([a["aim"], a["shown"], a["target"], mark, f"`{name}.py`"])
    sched = docs.get("schedules_bench")
    if sched:
        worst = max(
            [s["median"] for s in sched["reconcile"].values()]
            + [s["median"] for s in sched["catch_up"].values()]
        )
        mark = "**PASS**" if worst < 1.0 else "**MISS**"
        rows.append(
            [
                "schedules: boot reconcile and year-long catch-up",
                f"worst median {worst * 1000:,.0f} ms",
                "well under 1 s",
                mark,
                "`schedules_bench.py`",
            ]
        )
    return table(["aim", "measured (medians)", "target", "", "from"], rows, left=5)


def machine_section(docs: dict[str, dict[str, Any] | None], out: Path) -> list[str]:
    cmp = (docs.get("compare_bench") or {}).get("meta", {})
    sch = (docs.get("scheduler_bench") or {}).get("meta", {})
    lines = [
        f"- CPU: {cmp.get('cpu', '?')}, {cmp.get('cpus', '?')} cores "
        f"({cmp.get('cpus_usable', '?')} usable by the benchmark)",
        f"- OS: {cmp.get('platform', sch.get('platform', '?'))}",
        f"- Python {cmp.get('python', '?')}, SQLite {cmp.get('sqlite', '?')} (the stdlib's), "
        + ", ".join(f"{k} {v}" for k, v in cmp.get("versions", {}).items()),
    ]
    status = load(out, "run_all")
    if status and status.get("snapshot"):
        lines.append(
            f"- code measured: commit `{status['snapshot'][:12]}`, exported with `git archive` "
            "(`run_all.py --snapshot`), so edits to the shared work tree during the run could "
            "not leak into it"
        )
    else:
        lines.append(f"- checkout: `{cmp.get('git') or sch.get('git') or '?'}`")
    for name in ("scheduler_bench", "compare_bench"):
        m = (docs.get(name) or {}).get("meta", {})
        if m.get("git_end") and m.get("git_end") != m.get("git"):
            lines.append(
                f"- **the work tree changed while `{name}.py` ran** (shared with other "
                f"engineers): `{m.get('git')}` at its start, `{m['git_end']}` at its end; each "
                "measurement imports the scheduler afresh, so later ones ran the newer code"
            )
    for name in ("scheduler_bench", "schedules_bench", "bot_bench", "scale_bench", "compare_bench"):
        m = (docs.get(name) or {}).get("meta", {})
        took = ""
        if status:
            for s in status["steps"]:
                if s["name"] == name:
                    took = f", took {s['elapsed_s']:.0f} s"
        if m.get("loadavg_start") is not None:
            lines.append(
                f"- `{name}.py`: started {m.get('started', '?')}, load average (1/5/15 min) "
                f"{m['loadavg_start']} at the start, {m.get('loadavg_end')} at the end{took}"
            )
        elif took:
            lines.append(f"- `{name}.py`{took}")
    lines.append(
        "- The machine is shared with other work (a load average near the core count means "
        "the benchmark competed for the CPU): the ratios, measured in the same run and "
        "interleaved, are steadier than the absolute figures."
    )
    return lines


def compare_section(cmp: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    meta = cmp.get("meta", {})
    tp = cmp.get("throughput")
    if tp:
        lines += [
            "### Throughput: due-now no-op jobs, from the first enqueue to the last done",
            "",
            f"Ours and the naive poller enqueue {tp['batch']} jobs per transaction while running; "
            f"APScheduler has no batch API, so each `add_job` is its own transaction, and the "
            f"event loop gets control after every {tp['batch']}. Raw SQLite is "
            "`scheduler_bench`'s limit for the same work on this machine (stdlib `sqlite3`, WAL, "
            "`synchronous=NORMAL`, our schema, one transaction each for insert, claim and "
            "complete, nothing else); ours batches (enqueues, claims and completions), so it "
            "can beat this one-job-at-a-time limit. Rounds interleave the peers, so drift hits "
            "all alike; *paired* ratios are per round.",
            "",
        ]
        rows = []
        for key, r in tp["peers"].items():
            rt = tp["ratio_ours_to"].get(key)
            rows.append(
                [
                    label(key),
                    f"{r['jobs']:,}",
                    spread(r["jobs_per_s"]),
                    str(nruns(r["jobs_per_s"])),
                    "—" if rt is None else f"{rt['of_medians']:.2f}x",
                    "—" if rt is None else spread(rt["paired"], 2),
                ]
            )
        lines += table(
            ["peer", "jobs", "jobs/s: median (min–max)", "runs", "ours ÷ peer", "paired"], rows
        )
        lines.append("")
    late = cmp.get("lateness")
    if late:
        lines += [
            f"### Lateness: {late['jobs']:,} no-op jobs due evenly over {late['span_s']:g} s",
            "",
            "Each job records `time.time()` at its start minus the time it was due (real "
            "clock). Per run: the p50, p99 and max over its jobs; shown: the median of the runs "
            "with min–max. Jobs are enqueued through each peer's API while it runs, a lead time "
            "before the first is due (doubled and retried if enqueueing overran it).",
            "",
        ]
        rows = []
        for key, r in late["peers"].items():
            x = late["p99_ratio_peer_to_ours"].get(key)
            rows.append(
                [
                    label(key),
                    spread(r["p50_ms"], 2),
                    spread(r["p99_ms"], 2),
                    spread(r["max_ms"], 2),
                    str(nruns(r["p99_ms"])),
                    "—" if x is None else f"{x:,.1f}x",
                ]
            )
        lines += table(["peer", "p50 ms", "p99 ms", "max ms", "runs", "peer's p99 ÷ ours"], rows)
        lines.append("")
    idle = cmp.get("idle")
    if idle:
        lines += [
            f"### Idle CPU: {idle['window_s']:g} s with {idle['pending']:,} jobs pending an "
            "hour out",
            "",
            "`time.process_time()` of the peer's own process (all its threads) over the window. "
            "The peers' processes ran at the same time (each counts only its own CPU; they are "
            "idle, so they hardly compete).",
            "",
        ]
        rows = []
        for key, r in idle["peers"].items():
            wakes = "—"
            if "passes" in r:
                wakes = f"{r['passes']['median']:.0f} dispatch passes"
            elif "ticks" in r:
                wakes = f"{r['ticks']['median']:.0f} ticks"
            rows.append(
                [
                    label(key),
                    spread(r["cpu_per_20s"], 4),
                    spread(r["cpu_s"], 4),
                    str(nruns(r["cpu_s"])),
                    wakes,
                ]
            )
        lines += table(
            ["peer", "CPU s per 20 s", f"CPU s per {idle['window_s']:g} s", "runs", "wake-ups"],
            rows,
        )
        lines.append("")
    st = cmp.get("startup")
    if st:
        builds = ", ".join(f"{fam} {s:.0f} s" for fam, s in st["build_s"].items())
        lines += [
            f"### Start-up and memory with {st['pending']:,} jobs pending",
            "",
            "Each run is a fresh process: *ready* is the time from nothing open to able to "
            "dispatch (ours: `start()` + `wait_idle()`, i.e. store opened, migrations checked, "
            "start-up sweep and first pass done, timer armed; APScheduler: `start()` and its "
            "first processing pass; naive: connection opened and first tick done). *Peak RSS* "
            "is the process's VmHWM after ready plus "
            f"{st['settle_s']:g} s running; it includes the interpreter and the peer's imports "
            "(*base* = RSS after imports, before start). Jobs are due from an hour out over a "
            f"day. The databases were built just before (page cache warm), in parallel: "
            f"{builds} (wall time of the parallel build).",
            "",
        ]
        rows = []
        for key, r in st["peers"].items():
            rows.append(
                [
                    label(key),
                    spread(r["startup_s"], 1, 1000),
                    spread(r["peak_rss_mb"], 1),
                    num(r["rss_base_mb"]["median"], 1),
                    num(r["rss_settled_mb"]["median"], 1),
                    str(nruns(r["startup_s"])),
                    num(r["db_mb"]),
                ]
            )
        lines += table(
            [
                "peer",
                "ready, ms",
                "peak RSS, MB",
                "base RSS, MB",
                "RSS after, MB",
                "runs",
                "db file, MB",
            ],
            rows,
        )
        lines.append("")
    ps = cmp.get("pass")
    if ps:
        rt = ps["ratio"]
        lines += [
            "### Dispatch cost as pending grows (this scheduler)",
            "",
            f"One dispatch pass: `claim_due` + `complete` of {ps['due_per_pass']} due jobs, "
            f"with {rt['small']:,} vs {rt['big']:,} future jobs pending, median of "
            f"{ps['repeats']} repeats alternating between the two databases "
            f"({ps.get('source', '')}).",
            "",
        ]
        rows = []
        for n, r in ps["sizes"].items():
            rows.append([f"{int(n):,}", spread(r["pass_ms"], 3), spread(r["claim_ms"], 3)])
        lines += table(["pending", "pass, ms", "claim alone, ms"], rows)
        lines += ["", f"Ratio {rt['big']:,} ÷ {rt['small']:,}: pass **{rt['pass']:.2f}x**, "
                  f"claim {rt['claim']:.2f}x.", ""]  # fmt: skip
    del meta
    return lines


def scheduler_section(doc: dict[str, Any]) -> list[str]:
    lines = [
        "Our scheduler alone, in more detail (`scheduler_bench.py`; every figure median "
        f"(min–max) of {doc['meta']['runs']} runs unless stated).",
        "",
    ]
    rows = []
    tp = doc.get("throughput")
    if tp:
        for kind in ("actions", "mutations"):
            rows.append(
                [
                    f"due-now {kind}, {tp['jobs']:,} jobs",
                    spread(tp[kind]["jobs_per_s"]) + " jobs/s",
                ]
            )
    raw = doc.get("raw")
    if raw:
        rows.append(
            [
                f"raw sqlite3, 3 transactions per job, {raw['jobs']:,} jobs",
                spread(raw["sqlite3"]["jobs_per_s"]) + " jobs/s",
            ]
        )
        rows.append(
            [
                "aiosqlite, one statement per thread hop",
                spread(raw["aiosqlite"]["jobs_per_s"]) + " jobs/s",
            ]
        )
        for kind, s in raw.get("ratio", {}).items():
            rows.append([f"ours ÷ raw sqlite3, {kind} (paired)", spread(s, 2)])
    late = doc.get("lateness")
    if late:
        for m in ("p50_ms", "p99_ms", "max_ms"):
            rows.append(
                [
                    f"lateness {m[:3]}, {late['jobs']:,} actions over {late['span_s']:g} s",
                    spread(late[m], 2) + " ms",
                ]
            )
    idle = doc.get("idle")
    if idle:
        rows.append(
            [
                f"idle CPU, {idle['pending']:,} pending, per 20 s",
                spread(idle["cpu_per_20s"], 4) + " s",
            ]
        )
    ps = doc.get("pass")
    if ps:
        for n, r in ps["sizes"].items():
            rows.append([f"dispatch pass, {int(n):,} pending", spread(r["pass_ms"], 3) + " ms"])
    lines += table(["measurement", "median (min–max)"], rows)
    return lines


def schedules_section(doc: dict[str, Any]) -> list[str]:
    rows = [[f"reconcile: {k}", spread(s, 1, 1000)] for k, s in doc["reconcile"].items()]
    rows += [[f"catch-up: {k}", spread(s, 1, 1000)] for k, s in doc["catch_up"].items()]
    return table(["case", "ms: median (min–max)"], rows)


def notes_section(cmp: dict[str, Any]) -> list[str]:
    tp = (cmp.get("throughput") or {}).get("peers", {})
    aps_jobs = tp.get("apscheduler", {}).get("jobs")
    ours_jobs = tp.get("ours", {}).get("jobs")
    meta = cmp.get("meta", {})
    return [
        "- **APScheduler 3** runs as its documentation shows: `AsyncIOScheduler` with "
        "`SQLAlchemyJobStore` on a SQLite file, `date`-trigger jobs of a module-level coroutine "
        "(run on the event loop by the `AsyncIOExecutor`), completions counted by an "
        "`EVENT_JOB_EXECUTED` listener. Two settings differ from its defaults: "
        "`misfire_grace_time=None` (with the default of 1 s, jobs that start more than a second "
        "late are *skipped*, so most of a 10,000-job burst would be dropped rather than run) "
        "and `timezone=UTC`. *Default journal* is the store configured by URL (SQLite's "
        "defaults: rollback journal, `synchronous=FULL`, an fsync per commit); *WAL* gives it "
        "an engine whose connections switch to WAL with `synchronous=NORMAL`, our store's "
        "settings. APScheduler deletes a date job's row when it submits the run, so it is "
        "at most once; ours records each completion.",
        f"- APScheduler on its default journal is measured on {aps_jobs or 0:,} jobs instead "
        f"of {ours_jobs or 0:,}, to keep the run short: it is fsync-bound (two commits per "
        "job), and since it never falls more than one batch behind, its rate does not depend "
        "on the count.",
        "- The **1,000,000-job APScheduler table** is not built through `add_job` (that would "
        "take most of an hour at its rate): the first job is added through the real API, and "
        "every other row is written directly in the store's format — its `job_state` is that "
        "first row's unpickled state with the id, trigger (`DateTrigger`) and next run time "
        "replaced, pickled with the store's protocol; the first row rebuilt this way must be "
        "byte-for-byte what APScheduler wrote, or the build fails. Our table and the naive "
        "table are built by direct inserts too (`scheduler_bench.build_pending`).",
        "- The **naive poller** (`bench/peers/naive_peer.py`) is the background essay's "
        "design, written minimally but not carelessly: aiosqlite (our store's driver), WAL "
        "and `synchronous=NORMAL`, an index on `(status, run_at)`, a fixed cadence, an atomic "
        "claim per row (`UPDATE … WHERE id = ? AND status = 'pending'`), jobs run one after "
        "another in the tick, a stale-claim sweeper every 30 s. Its throughput is measured "
        "with N = 1 s; its lateness with N = 1 s and 5 s.",
        f"- Runs: {meta.get('runs', '?')} for ours and raw SQLite, {meta.get('slow_runs', '?')} "
        "for APScheduler, the naive poller, the idle windows and the start-ups (to keep the "
        "full run near 15 minutes). Every peer's measurement runs in a fresh subprocess "
        "(`python -m bench.peers.worker`), so memory is the peer's own and no peer inherits "
        "another's heap or threads.",
        "- Lateness for ours is `scheduler_bench`'s own run (`lateness_run`), as is the "
        "throughput (`throughput_run`) and the raw limit (`raw_sqlite_run`).",
    ]


def reading_section(cmp: dict[str, Any]) -> list[str]:
    """What the figures say, with this run's numbers, and why the peers differ."""
    lines = []
    late = (cmp.get("lateness") or {}).get("peers", {})
    if {"ours", "apscheduler_wal"} <= late.keys():
        o, a = late["ours"], late["apscheduler_wal"]
        lines.append(
            f"- **Lateness.** Ours starts a job {o['p50_ms']['median']:.2f} ms after it is due "
            f"at the median and {o['p99_ms']['median']:.2f} ms at p99; APScheduler on WAL "
            f"{a['p50_ms']['median']:.2f} and {a['p99_ms']['median']:.2f} ms. Ours claims due "
            "jobs in a write transaction in aiosqlite's connection thread and records their "
            "completions in another: hand-offs between threads, each of which can wait for a "
            "CPU when the machine is busy (the jobs due meanwhile wait with it), which shows in "
            "the tail and in the spread between runs. APScheduler does its SQLite work on the "
            "event-loop thread, with SQLAlchemy round trips before every run (its median), and "
            "on its default journal an fsync per removed job (its tail)."
        )
    idle = (cmp.get("idle") or {}).get("peers", {})
    if idle:
        lines.append(
            "- **Idle.** With nothing due, APScheduler sleeps until its next job; ours also wakes "
            "for its lease sweep every 30 s (the crash-recovery backstop, its only periodic "
            "timer); the naive poller wakes every N seconds to query the table."
        )
    tp = (cmp.get("throughput") or {}).get("peers", {})
    if "naive_1s" in tp:
        lines.append(
            "- **The naive poller** is fast in bulk once a tick finds the jobs, but every job "
            "waits for the next tick: its lateness is spread evenly over the interval (p50 about "
            "N/2, p99 about N)."
        )
    st = (cmp.get("startup") or {}).get("peers", {})
    if st:
        lines.append(
            "- **Memory and start-up** stay small at a million pending for every peer (peak RSS "
            "is within a few MB of the RSS after imports): all three keep pending jobs in the "
            "database and read only what is due, and the next due time, through an index."
        )
    return lines


SHARDS_INTRO = [
    "10,000 guilds over 8 shards, three `python -m bot` instances on one PostgreSQL database "
    "sharing the shards through leases (`SHARD_LEASE_SECONDS=5`), against the fake Discord "
    "with Discord's limits; the identify window is 1 s instead of Discord's 5 s (the bot's "
    "`IDENTIFY_INTERVAL_SECONDS` alike) so a run takes minutes. The IDENTIFY floor is 7 "
    "windows for 8 shards in one bucket; the bot reserves turns 1.25 windows apart (a margin "
    "against connection set-up drift), so 1.25x is its best. The take-over bound is the "
    "lease, a lease round, one IDENTIFY turn per lost shard and 5 s for the processes to "
    "connect. Its output, as printed:",
]


REVISIONS_NOTE = Path(__file__).resolve().parent / "revisions_note.md"
"""Changes measured before and after (kept by hand in that file: the figures of one change,
not something this run measures again), written at the end of the page as they are."""

TAKEOVER_INTRO = [
    "Real `python -m bot` processes against the fake Discord (its IDENTIFY window 1 s, the "
    "bot's `IDENTIFY_INTERVAL_SECONDS` alike, `max_concurrency` 1) with the deployment's "
    "leases (30 s): a SIGKILLed lone instance restarted at once, from the kill to a command "
    "answered in a fresh gateway session (beside it, a lone cold start on a fresh database: "
    "what a restart costs with nothing to take over); one of three instances on 8 shards "
    "SIGKILLed, until a command is answered in a guild of each of its 3 shards; the "
    "IDENTIFYs of three instances spawned at once on 8 shards; a lone start with the join "
    "window against without. `--before PATH` runs a checkout of before the change in the "
    "same run (issue 33: `git worktree add --detach ../before 51cc7f9`, then "
    "`takeover_bench.py --before ../before`). The latest run (this checkout only), as "
    "printed:",
]


def write_docs(out: Path, docs_dir: Path) -> Path:
    docs = {
        n: load(out, n)
        for n in (
            "compare_bench",
            "scheduler_bench",
            "schedules_bench",
            "bot_bench",
            "scale_bench",
            "pg_compare",
        )
    }
    cmp = docs["compare_bench"] or {}
    docs_dir.mkdir(parents=True, exist_ok=True)
    png = docs_dir / "benchmarks.png"
    if cmp:
        plot(cmp, png)
    quick = bool(cmp.get("meta", {}).get("quick"))
    lines = [
        "# Benchmarks",
        "",
        "_Written by `bench/run_all.py`; do not edit by hand — rerun it._"
        + (
            " **This is a `--quick` smoke run: sizes are tiny, figures mean little.**"
            if quick
            else ""
        ),
        "",
        "Side by side in one run on one machine: this scheduler (SQLite store, real clock), "
        "APScheduler 3 (`AsyncIOScheduler` + `SQLAlchemyJobStore` on SQLite) and the naive "
        '"one timer polls the table every N seconds" design, against the raw SQLite limit '
        "of the same machine. Figures are medians with min–max over several runs; ratios "
        "compare peers measured in the same run.",
        "",
        "## Aims",
        "",
        *aims_section(docs),
        "",
        "## Machine",
        "",
        *machine_section(docs, out),
        "",
        "## Reproduce",
        "",
        "```sh",
        ".venv/bin/pip install -e '.[bench]'      # apscheduler<4, sqlalchemy, matplotlib,",
        "                                          # procrastinate, pgqueuer",
        f"{PY} bench/run_all.py --snapshot HEAD   # everything, on the committed code;",
        "                                               # rewrites this file and the plot",
        "```",
        "",
        "or one benchmark at a time:",
        "",
        "```sh",
    ]
    status = load(out, "run_all")
    lines.append("OUT=$(mktemp -d)                           # where the JSON goes")
    if status:
        for step in status["steps"]:
            argv = [a.replace(str(out), '"$OUT"') for a in step["argv"]]
            lines.append(f"{PY} {' '.join(argv)}")
    else:
        lines += [f"{PY} bench/compare_bench.py", f"{PY} bench/scheduler_bench.py"]
    lines += [
        "```",
        "",
        "(`--quick` on any of them is a smoke run of a few seconds.)",
        "",
        "## Side by side",
        "",
        "![throughput, lateness, idle CPU and memory per peer](benchmarks.png)",
        "",
    ]
    if cmp:
        lines += compare_section(cmp)
    if cmp:
        lines += ["### Reading the figures", "", *reading_section(cmp), ""]
    lines += ["### How the peers were run, and the compromises", "", *notes_section(cmp), ""]
    if docs["scheduler_bench"]:
        lines += ["## This scheduler in detail", "", *scheduler_section(docs["scheduler_bench"])]
        lines.append("")
    if docs["schedules_bench"]:
        lines += [
            "## Recurring schedules (`schedules_bench.py`)",
            "",
            "Boot reconciliation of static crons and the catch-up tick of a 1-second interval "
            "down for a year (FakeClock), median (min–max).",
            "",
            *schedules_section(docs["schedules_bench"]),
            "",
        ]
    bot_txt = out / "bot_bench.txt"
    if bot_txt.exists():
        lines += [
            "## Delivery through the bot (`bot_bench.py`)",
            "",
            "Its output, as printed:",
            "",
            "```",
            bot_txt.read_text("utf-8").rstrip(),
            "```",
            "",
        ]
    pg3_txt = out / "bot_bench_pg3.txt"
    if pg3_txt.exists():
        lines += [
            "## Delivery by three bot processes on one PostgreSQL database "
            "(`bot_bench.py --processes 3 --store postgres`)",
            "",
            "The same burst, delivered by three real bot processes sharing one database "
            "(pacing is the scheduler's, across processes). Its output, as printed:",
            "",
            "```",
            pg3_txt.read_text("utf-8").rstrip(),
            "```",
            "",
        ]
    scale_txt = out / "scale_bench.txt"
    if scale_txt.exists():
        lines += [
            "## At scale (`scale_bench.py`)",
            "",
            "Announcements seeded through the domain layer over many guilds, one of them big: "
            "start-up, peak RSS, /list and autocomplete in the big guild, the dispatch pass "
            "against 1,000 pending. Its output, as printed:",
            "",
            "```",
            scale_txt.read_text("utf-8").rstrip(),
            "```",
            "",
        ]
    shards_txt = out / "shards_bench.txt"
    if shards_txt.exists():
        lines += [
            "## Shards (`shards_bench.py`)",
            "",
            *SHARDS_INTRO,
            "",
            "```",
            shards_txt.read_text("utf-8").rstrip(),
            "```",
            "",
        ]
    takeover_txt = out / "takeover_bench.txt"
    if takeover_txt.exists():
        lines += [
            "## Take-over and a calm start (`takeover_bench.py`)",
            "",
            *TAKEOVER_INTRO,
            "",
            "```",
            takeover_txt.read_text("utf-8").rstrip(),
            "```",
            "",
        ]
    pg_cmp = load(out, "pg_compare")
    if pg_cmp:
        from bench.pg_compare import docs_section

        lines += [
            "## Side by side on PostgreSQL (`pg_compare.py`)",
            "",
            "This scheduler on PostgreSQL against procrastinate and pgqueuer, the Python job "
            "queues that live in PostgreSQL, on one server in one run, with the raw asyncpg "
            "limit of the same work.",
            "",
            *docs_section(pg_cmp),
            "",
        ]
    interact_txt = out / "interaction_bench.txt"
    if interact_txt.exists():
        lines += [
            "## Interactions during a burst (`interaction_bench.py`)",
            "",
            "Time to the first response of 200 `/schedule` and `/list` interactions, one "
            "every 50 ms from the instant a burst falls due (0 is idle). Its output, as "
            "printed:",
            "",
            "```",
            interact_txt.read_text("utf-8").rstrip(),
            "```",
            "",
        ]
    lines += [REVISIONS_NOTE.read_text("utf-8").rstrip(), ""]
    md = docs_dir / "benchmarks.md"
    md.write_text("\n".join(lines).rstrip() + "\n", "utf-8")
    return md


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    ap.add_argument("--quick", action="store_true", help="smoke sizes (docs go to --out)")
    ap.add_argument("--out", type=Path, default=None, help="results folder (default: new temp)")
    ap.add_argument("--docs", type=Path, default=None, help="where to write the docs")
    ap.add_argument(
        "--snapshot",
        metavar="REV",
        default=None,
        help="measure commit REV (e.g. HEAD), exported with git archive, not the work tree",
    )
    ap.add_argument(
        "--interaction-sizes",
        default=INTERACTION_SIZES,
        help=f"bursts for interaction_bench (default {INTERACTION_SIZES}; 0 is idle)",
    )
    ap.add_argument(
        "--scale-full",
        action="store_true",
        help="scale_bench at 1,000,000 announcements (default: 100,000; seeded once, cached)",
    )
    ap.add_argument("--from", dest="source", type=Path, default=None,
                    help="don't run; rewrite the docs from this results folder")  # fmt: skip
    args = ap.parse_args(argv)
    if args.source is not None:
        out = args.source
    else:
        out = args.out or Path(tempfile.mkdtemp(prefix="run-all-"))
        out.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        run_all(
            args.quick,
            out,
            args.snapshot,
            args.interaction_sizes,
            "full" if args.scale_full else "modest",
        )
        log(f"\nall benchmarks ran in {time.perf_counter() - started:.0f} s")
    quick = args.quick
    if args.source is not None:
        quick = bool(((load(out, "compare_bench") or {}).get("meta") or {}).get("quick"))
    docs_dir = args.docs or (out if quick else DOCS)
    md = write_docs(out, docs_dir)
    log(f"results in {out}; wrote {md} and {docs_dir / 'benchmarks.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
