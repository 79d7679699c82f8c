"""The retention benchmark still runs: ``bench/retention_bench.py`` at a tiny size (one
every-minute announcement, 10 days, HISTORY_DAYS=7) in a subprocess; its JSON counts exactly
the rows 7 days keep with the job (the scheduler's own week of jobs, arguments and runs, and
a week of delivery records) and without it (every delivery record). Nothing is timed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "retention_bench.py"
WEEK = 7 * 1440


@pytest.mark.timeout(240)
def test_tiny_retention_bench_counts_what_a_week_keeps(tmp_path: Path) -> None:
    out = tmp_path / "retention.json"
    argv = [sys.executable, str(BENCH), "--announcements", "1", "--days", "10",
            "--history-days", "7", "--backlog", "1", "--json", str(out)]  # fmt: skip
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=230)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text("utf-8"))
    without, with_job = doc["without"]["10"], doc["with"]["10"]
    assert without["bot_deliveries"] == 10 * 1440
    assert with_job["bot_deliveries"] == WEEK
    for table in ("scheduler_jobs", "scheduler_job_args", "scheduler_runs"):
        assert without[table] == with_job[table] == WEEK
    assert with_job["data_mib"] > 0
    assert "rows after each day" in proc.stdout
    # The backlog: one announcement, 3 days, all but the last half day deleted (the 5
    # latest are the last half day's), a batch per transaction.
    backlog = doc["backlog"]
    assert backlog["deleted"] == 3 * 1440 - 720
    assert backlog["transactions"] >= backlog["deleted"] // 1000
