"""The migrate benchmark still runs: ``bench/migrate_bench.py --seed quick --runs 1`` in a
subprocess, on a cache of its own, into a database it makes and drops on the test server;
its JSON has every figure, positive. Nothing here is timed or compared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scheduler.stores import require_postgres

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.postgres
@pytest.mark.timeout(300)
def test_quick_migrate_bench_measures_the_move_and_its_peer(tmp_path: Path) -> None:
    dsn = require_postgres()
    out = tmp_path / "migrate.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "migrate_bench.py"), "--seed", "quick",
         "--runs", "1", "--dsn", dsn, "--cache", str(tmp_path / "cache"), "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=290,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text("utf-8"))
    assert doc["seed"]["rows"]["bot_announcements"] == 3_000
    [run] = doc["migrate"]["runs"]
    assert run["seconds"] > 0
    assert run["peak_rss_mib"] > 0
    assert doc["peer_start_only"]["median_seconds"] > 0
    assert "every table's row count and checksum read back the same" in proc.stdout
