"""The shards benchmark still runs: ``bench/shards_bench.py`` at a tiny size (40 guilds over
8 shards, 16 announcements over 8 channels due 2 s after they are written, a 0.2 s identify
window and a 2 s shard lease) in a subprocess, on a database of its own on the PostgreSQL
server of the tests; every measurement in its JSON is there with positive numbers, and every
aim is reported. Nothing here is timed or compared against a floor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_bench_smoke import summaries

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "shards_bench.py"

pytestmark = [pytest.mark.postgres]


@pytest.mark.timeout(240)
def test_tiny_shards_bench_measures_every_section(tmp_path: Path) -> None:
    dsn = os.environ.get("CRIER_TEST_POSTGRES_DSN")
    if not dsn:
        pytest.skip("the shards bench needs a PostgreSQL server (CRIER_TEST_POSTGRES_DSN)")
    out = tmp_path / "shards.json"
    argv = [
        sys.executable, str(BENCH), "--guilds", "40", "--announcements", "16",
        "--channels", "8", "--identify-window", "0.2", "--shard-lease", "2", "--lead", "2",
        "--dsn", dsn, "--json", str(out),
    ]  # fmt: skip
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=230)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text("utf-8"))
    found = dict(summaries(doc["summary"], "summary"))
    assert set(found) == {
        f"summary.{k}"
        for k in (
            "spawn_to_all_ready",
            "identify_first_to_last",
            "identify_ratio",
            "burst_last_after_due",
            "burst_ratio",
            "sigkill_to_answered",
            "takeover_p99_ms",
        )
    }
    for where, s in found.items():
        assert all(v > 0 for v in [s["median"], s["min"], s["max"], *s["runs"]]), where
    [run] = doc["runs"]
    assert run["burst"]["messages"] == 16
    assert len(run["takeover"]["shards_lost"]) == 3  # the instance holding 3 of 8
    assert run["takeover"]["interactions"] > 0
    assert len(doc["aims"]) == 5
