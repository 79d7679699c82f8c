"""The PostgreSQL comparison still runs: ``bench/pg_compare.py --quick`` in a subprocess, every
peer and every section present in its JSON. Nothing here is timed or compared; it needs the
project's bench extra (procrastinate, pgqueuer) and a PostgreSQL server, else it skips."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "pg_compare.py"
DSN = os.environ.get("CRIER_TEST_POSTGRES_DSN")

MISSING = [m for m in ("procrastinate", "pgqueuer") if importlib.util.find_spec(m) is None]
pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        bool(MISSING),
        reason=(
            f"pg_compare needs {', '.join(MISSING)} (the project's bench extra): "
            "run `.venv/bin/pip install -e '.[bench]'` to enable this test"
        ),
    ),
    pytest.mark.skipif(not DSN, reason="needs CRIER_TEST_POSTGRES_DSN (a PostgreSQL server)"),
]

PEERS = {"ours", "pgqueuer", "procrastinate"}
THROUGHPUT = PEERS | {"raw_one", "raw_batch"}


def summary_ok(s: Any) -> bool:
    return (
        isinstance(s, dict)
        and {"median", "min", "max", "runs"} <= s.keys()
        and bool(s["runs"])
        and all(isinstance(v, int | float) and v >= 0 for v in s["runs"])
    )


@pytest.mark.timeout(240)
def test_every_peer_and_section_is_in_the_json(tmp_path: Path) -> None:
    out = tmp_path / "pg_compare.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--dsn", str(DSN), "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=220,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text("utf-8"))
    assert doc["meta"]["command"].startswith(".venv/bin/python bench/pg_compare.py")
    tp = doc["throughput"]
    assert set(tp["peers"]) == THROUGHPUT
    assert all(summary_ok(r["jobs_per_s"]) for r in tp["peers"].values())
    assert set(tp["ratio_ours_to"]) == THROUGHPUT - {"ours"}
    late = doc["lateness"]
    assert set(late["peers"]) == PEERS
    for r in late["peers"].values():
        assert r["p50_ms"]["median"] <= r["p99_ms"]["median"] <= r["max_ms"]["median"]
    idle = doc["idle"]
    assert set(idle["peers"]) == PEERS
    for r in idle["peers"].values():
        for m in ("cpu_per_10s", "xacts_per_10s", "backends"):
            assert summary_ok(r[m]), m
    sc = doc["scale"]
    assert len(sc["sizes"]) == 2
    assert all(
        summary_ok(r["pass_ms"]) and summary_ok(r["peak_rss_mb"]) for r in sc["sizes"].values()
    )
    assert {a["aim"].split(" ")[0] for a in doc["aims"]} >= {"throughput", "lateness", "idle"}
    # the docs' section renders from the JSON (bench/run_all.py writes it)
    sys.path.insert(0, str(ROOT))
    from bench.pg_compare import docs_section

    md = "\n".join(docs_section(doc))
    for what in ("**Throughput**", "**Lateness**", "**Idle**", "**Many pending", "pgqueuer"):
        assert what in md, what
    # every database the run made is gone (only its own: other runs on the server, the other
    # benchmarks' smoke tests among them, make theirs meanwhile)
    made = doc["meta"]["databases"]
    assert made
    assert all(name.startswith("crier_bench_") for name in made), made
    left = subprocess.run(
        ["psql", str(DSN), "-Atc", "SELECT datname FROM pg_database"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert not set(made) & set(left), set(made) & set(left)
