"""``python -m bot migrate``'s time and peak memory for a SQLite installation of 100,000
announcements (the scale benchmark's "modest" seed: 1,000 guilds, one of 20,000; with their
jobs, schedules and history), moved into a fresh PostgreSQL database per run.

    .venv/bin/python bench/migrate_bench.py --runs 3 --json out.json --dsn postgresql://...

Each run is its own ``python -m bot migrate`` process, as an operator runs it: the wall time
around it and its peak resident memory (``ru_maxrss`` of that child, from ``wait4``). The
peer in the same run is the same process doing nothing but start (``python -m bot --help``:
the same imports), so what the move itself costs is the difference. The server is ``--dsn``, else
``CRIER_BENCH_POSTGRES_DSN``, else ``CRIER_TEST_POSTGRES_DSN``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pg import fresh_database
from _scale_seed import Seed, cached

SEEDS = {"modest": Seed(100_000, 1_000, 20_000), "quick": Seed(3_000, 30, 1_000)}
ROOT = Path(__file__).resolve().parent.parent


def child(argv: list[str]) -> tuple[float, int, str]:
    """Run ``python -m bot ARGV``; its wall seconds, its own peak RSS (KiB, from ``wait4``)
    and its stdout."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bot", *argv],
            cwd=ROOT,
            stdout=out,
            stderr=err,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        _, status, usage = os.wait4(proc.pid, 0)
        took = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"python -m bot {' '.join(argv[:1])} failed:\n{err.read()}")
        return took, usage.ru_maxrss, out.read()


def rows_in(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        # the names come from sqlite_master, not from input
        count = 'SELECT count(*) FROM "{}"'
        return {n: conn.execute(count.format(n)).fetchone()[0] for n in names}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", choices=sorted(SEEDS), default="modest")
    ap.add_argument("--dsn", default=None, help="the server (a database per run is created)")
    ap.add_argument("--cache", type=Path, default=None, help="where the seeded database is kept")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    dsn = (
        args.dsn
        or os.environ.get("CRIER_BENCH_POSTGRES_DSN")
        or os.environ.get("CRIER_TEST_POSTGRES_DSN")
    )
    if not dsn:
        raise SystemExit("needs a PostgreSQL server: --dsn or CRIER_BENCH_POSTGRES_DSN")
    db, seeded = await cached(SEEDS[args.seed], args.cache, print)
    counts = rows_in(db)
    print(f"source {db}: {db.stat().st_size / 2**20:.1f} MiB; rows {counts}")
    peer = [child(["--help"]) for _ in range(args.runs)]
    peers = [p[0] for p in peer]
    peer_kib = max(p[1] for p in peer)
    runs: list[dict[str, Any]] = []
    for n in range(args.runs):
        async with fresh_database(dsn) as target:
            took, kib, out = child(["migrate", "--from", f"sqlite:///{db}", "--to", target])
        runs.append({"seconds": took, "peak_rss_mib": kib / 1024})
        print(f"run {n + 1}: {took:.1f} s, peak RSS {kib / 1024:.0f} MiB")
    print(out.rstrip().splitlines()[-1])
    secs = [r["seconds"] for r in runs]
    doc = {
        "seed": {**seeded, "rows": counts},
        "migrate": {
            "median_seconds": statistics.median(secs),
            "runs": runs,
            "peak_rss_mib": max(r["peak_rss_mib"] for r in runs),
        },
        "peer_start_only": {
            "median_seconds": statistics.median(peers),
            "peak_rss_mib": peer_kib / 1024,
        },
    }
    m, p = doc["migrate"], doc["peer_start_only"]
    print(
        f"migrate {args.seed} ({counts.get('bot_announcements', 0):,} announcements): median "
        f"{m['median_seconds']:.1f} s ({m['median_seconds'] / p['median_seconds']:.0f}x the "
        f"bare start's {p['median_seconds']:.2f} s), peak RSS {m['peak_rss_mib']:.0f} MiB "
        f"(the bare start: {p['peak_rss_mib']:.0f} MiB)"
    )
    if args.json:
        args.json.write_text(json.dumps(doc, indent=2), "utf-8")


if __name__ == "__main__":
    asyncio.run(main())
