"""The scale benchmark still runs: ``bench/scale_bench.py --quick`` in a subprocess, on a
cache of its own; every measurement in its JSON is there with positive numbers. Nothing
here is timed or compared."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_bench_smoke import summaries

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "scale_bench.py"


@pytest.mark.timeout(240)
def test_quick_scale_bench_measures_every_section(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    argv = [sys.executable, str(BENCH), "--quick", "--calls", "5", "--json", str(out)]
    proc = subprocess.run(
        [*argv, "--cache", str(tmp_path / "cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=230,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text("utf-8"))
    assert doc["seed"]["seed"]["announcements"] == 3_000
    assert not doc["seed"]["cached"]
    for section in ("startup", "latency", "pass"):
        found = summaries(doc[section], section)
        assert found, f"section {section!r} has no measurements"
        for where, s in found:
            assert all(v > 0 for v in [s["median"], s["min"], s["max"], *s["runs"]]), where
    for side in ("bot", "domain"):
        assert set(doc["latency"][side]) == {"list", "autocomplete", "autocomplete_typed"}
    assert doc["pass"]["sizes"]["small"]["pending"] < doc["pass"]["sizes"]["big"]["pending"]
    aims = [a["aim"] for a in doc["aims"]]
    assert any(a.startswith("peak RSS of the start-up") for a in aims), aims
    assert any(a.startswith("dispatch pass flat") for a in aims), aims
    assert sum(a.endswith("through the bot") for a in aims) == 3, aims
