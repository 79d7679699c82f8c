"""The reminders benchmark still runs: ``bench/reminders_bench.py`` at a tiny size (20
members, 10 ms apart, due 3 s after they are written) in a subprocess; its JSON has every
measurement with positive numbers, and every member got one DM. Nothing here is timed or
compared against a floor."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_bench_smoke import summaries

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "reminders_bench.py"


@pytest.mark.timeout(240)
def test_tiny_reminders_bench_measures_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "reminders.json"
    argv = [sys.executable, str(BENCH), "--members", "20", "--spacing", "0.01",
            "--ahead", "3", "--json", str(out)]  # fmt: skip
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=230)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text("utf-8"))
    assert set(doc) == {"0.01"}
    for spacing, section in doc.items():
        found = dict(summaries(section, spacing))
        assert {f"{spacing}.{k}" for k in ("first_after_due_s", "last_after_due_s",
                "per_member_ms", "peak_mib", "reminders_mib")} <= set(found)  # fmt: skip
        assert all(s["median"] > 0 for k, s in found.items() if "reminders_mib" not in k)
        [run] = section["runs"]
        assert (run["dms"], run["duplicates"], run["nonce_dedup_hits"]) == (20, 0, 0)
    assert doc["0.01"]["floor_s"] == pytest.approx(0.2)
    assert "time to the last DM" in proc.stdout or "to the last" in proc.stdout
