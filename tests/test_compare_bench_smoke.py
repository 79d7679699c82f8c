"""The comparison benchmark still runs: ``bench/compare_bench.py --quick`` in a subprocess,
every peer and every metric present in its JSON, and ``bench/run_all.py`` can write the
docs and the plot from it. Nothing here is timed or compared."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "compare_bench.py"

MISSING = [m for m in ("apscheduler", "sqlalchemy") if importlib.util.find_spec(m) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING),
    reason=(
        f"compare_bench needs {', '.join(MISSING)} (the project's bench extra): "
        "run `.venv/bin/pip install -e '.[bench]'` to enable this test"
    ),
)

THROUGHPUT = {"raw", "ours", "ours_mutations", "naive_1s", "apscheduler", "apscheduler_wal"}
LATENESS = {"ours", "apscheduler", "apscheduler_wal", "naive_1s", "naive_5s"}
IDLE = {"ours", "apscheduler", "apscheduler_wal", "naive_1s", "naive_5s"}
STARTUP = {"ours", "naive_1s", "apscheduler", "apscheduler_wal"}


def summary_ok(s: Any, positive: bool = True) -> bool:
    if not isinstance(s, dict) or not {"median", "min", "max", "runs"} <= s.keys():
        return False
    values = [s["median"], s["min"], s["max"], *s["runs"]]
    if not all(isinstance(v, int | float) for v in values) or not s["runs"]:
        return False
    return all(v > 0 for v in values) if positive else all(v >= 0 for v in values)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    tmp = tmp_path_factory.mktemp("compare")
    out = tmp / "compare_bench.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--json", str(out), "--dir", str(tmp)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=150,  # about 25 s on an idle 2-core machine; room for a busy CI box
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp, json.loads(out.read_text("utf-8")), proc.stdout


@pytest.mark.timeout(180)
def test_every_peer_and_metric_is_in_the_json(quick_run: tuple[Path, dict[str, Any], str]) -> None:
    _, doc, stdout = quick_run
    for key in ("cpu", "cpus", "python", "sqlite", "versions", "loadavg_start", "command"):
        assert key in doc["meta"], key

    tp = doc["throughput"]
    assert set(tp["peers"]) == THROUGHPUT
    for key, r in tp["peers"].items():
        assert r["jobs"] > 0, key
        assert summary_ok(r["jobs_per_s"]), key
        if key != "raw":  # the raw limit reports only its rate
            assert summary_ok(r["total_s"]), key
    assert set(tp["ratio_ours_to"]) == THROUGHPUT - {"ours"}
    for key, rt in tp["ratio_ours_to"].items():
        assert rt["of_medians"] > 0, key
        assert summary_ok(rt["paired"]), key

    late = doc["lateness"]
    assert set(late["peers"]) == LATENESS
    for key, r in late["peers"].items():
        for metric in ("p50_ms", "p99_ms", "max_ms"):
            assert summary_ok(r[metric], positive=False), (key, metric)
        assert r["p50_ms"]["median"] <= r["p99_ms"]["median"] <= r["max_ms"]["median"], key
        assert len(r["all_ms"]) == late["jobs"] * len(r["p99_ms"]["runs"]), key
    assert set(late["p99_ratio_peer_to_ours"]) == LATENESS - {"ours"}

    idle = doc["idle"]
    assert set(idle["peers"]) == IDLE
    for key, r in idle["peers"].items():
        assert summary_ok(r["cpu_per_20s"], positive=False), key
        assert summary_ok(r["wall_s"]), key
    assert "passes" in idle["peers"]["ours"]
    assert "ticks" in idle["peers"]["naive_1s"]

    st = doc["startup"]
    assert set(st["peers"]) == STARTUP
    for key, r in st["peers"].items():
        for metric in ("startup_s", "peak_rss_mb", "rss_base_mb", "rss_settled_mb"):
            assert summary_ok(r[metric]), (key, metric)
        assert r["peak_rss_mb"]["median"] >= r["rss_base_mb"]["median"], key
        assert r["db_mb"] > 0, key

    ps = doc["pass"]
    assert len(ps["sizes"]) == 2
    for r in ps["sizes"].values():
        assert summary_ok(r["pass_ms"])
    assert ps["ratio"]["pass"] > 0

    assert len(doc["aims"]) == 6
    assert all(isinstance(a["pass"], bool) for a in doc["aims"])
    assert stdout.count("PASS") + stdout.count("MISS") >= 6


@pytest.mark.timeout(180)
def test_run_all_writes_docs_and_plot(quick_run: tuple[Path, dict[str, Any], str]) -> None:
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("the plot needs matplotlib (the project's bench extra)")
    tmp, _, _ = quick_run
    docs = tmp / "docs"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "run_all.py"),
            "--from",
            str(tmp),
            "--docs",
            str(docs),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    md = (docs / "benchmarks.md").read_text("utf-8")
    for heading in ("## Aims", "## Machine", "## Reproduce", "### Throughput", "### Lateness"):
        assert heading in md, heading
    assert "APScheduler 3 (WAL)" in md
    assert "naive poller, 5 s" in md
    png = (docs / "benchmarks.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    assert len(png) > 10_000
