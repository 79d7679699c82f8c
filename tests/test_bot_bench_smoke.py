"""The delivery benchmark still runs with bot processes on PostgreSQL: ``bench/bot_bench.py
--processes 2 --store postgres`` on a small burst, in a subprocess (it starts the bots, and
creates and drops its database itself). Its checks must hold; nothing here is timed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scheduler.stores import POSTGRES_DSN_ENV, require_postgres

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "bot_bench.py"


@pytest.mark.postgres
@pytest.mark.timeout(150)
def test_two_bot_processes_post_a_small_burst_once_each_in_order(tmp_path: Path) -> None:
    dsn = require_postgres("the multi-process delivery bench needs a PostgreSQL server")
    out = tmp_path / "bot_bench.json"
    argv = ["--announcements", "30", "--channels", "10", "--spacing", "0.5"]
    proc = subprocess.run(
        [sys.executable, str(BENCH), *argv, "--processes", "2", "--store", "postgres",
         "--json", str(out)],
        cwd=ROOT,
        env=os.environ | {POSTGRES_DSN_ENV: dsn},
        capture_output=True,
        text=True,
        timeout=140,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text("utf-8"))
    assert (doc["processes"], doc["store"], doc["minimum"]) == (2, "postgres", 1.0)
    [run] = doc["runs"]
    assert (run["messages"], run["send_requests"], run["duplicates"]) == (30, 30, 0)
    assert (run["nonce_dedup_hits"], run["channels_out_of_order"]) == (0, 0)
    assert sum(run["per_process"]) == 30
    assert 1 <= len(run["per_process"]) <= 2
    assert run["last_after_due"] >= run["minimum"]  # nobody beats the spacing
