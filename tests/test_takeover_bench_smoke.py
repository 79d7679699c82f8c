"""The take-over benchmark still runs: ``bench/takeover_bench.py --quick`` (one run on SQLite,
this tree only, short leases and IDENTIFY window) in a subprocess; every measurement in its
JSON is there with positive numbers, and the cold start of three counted 8 IDENTIFYs at
least. Nothing here is timed or compared against a floor.

The least that proves the script still works: one scenario per kind of measurement on one
store (SIGKILLed instances taking over are proven by ``tests/proof/test_takeover.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_bench_smoke import summaries

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "takeover_bench.py"


@pytest.mark.timeout(600)
def test_the_quick_takeover_bench_measures_every_scenario(tmp_path: Path) -> None:
    out = tmp_path / "takeover.json"
    argv = [sys.executable, str(BENCH), "--quick", "--json", str(out)]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=590)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text("utf-8"))
    found = dict(summaries(doc["summary"], "summary"))
    assert set(found) == {
        f"summary.{k}"
        for k in (
            "sqlite.after.restart",
            "sqlite.after.cold_start",
            "sqlite.after.takeover",
            "sqlite.after.identifies",
            "sqlite.after.refused",
            "sqlite.window.window_1",
            "sqlite.window.window_0",
        )
    }
    for where, s in found.items():
        if where.endswith("refused"):
            continue
        assert all(v > 0 for v in [s["median"], s["min"], s["max"], *s["runs"]]), where
    assert found["summary.sqlite.after.identifies"]["median"] >= 8
    assert (doc["identify_window_s"], doc["lease_s"]) == (0.2, 3.0)
    [run] = doc["runs"]
    assert len(run["sqlite.after"]["takeover"]["shards_lost"]) == 3
