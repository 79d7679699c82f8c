"""The benchmark still runs: ``bench/scheduler_bench.py --quick`` in a subprocess, every
section present in its JSON with positive numbers. Nothing here is timed or compared."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "scheduler_bench.py"

SECTIONS = ("throughput", "raw", "lateness", "idle", "pass")


def summaries(node: Any, where: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every ``{"median", "min", "max", "runs"}`` object in the document, with its path."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        if {"median", "min", "max", "runs"} <= node.keys():
            found.append((where, node))
        else:
            for key, value in node.items():
                found.extend(summaries(value, f"{where}.{key}"))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found.extend(summaries(value, f"{where}[{i}]"))
    return found


@pytest.mark.timeout(60)
def test_quick_bench_writes_every_section(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--json", str(out), "--dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=55,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text("utf-8"))

    for section in SECTIONS:
        assert section in doc, f"section {section!r} missing from the JSON"
        found = summaries(doc[section], section)
        assert found, f"section {section!r} has no measurements"
        for where, s in found:
            values = [s["median"], s["min"], s["max"], *s["runs"]]
            assert all(isinstance(v, int | float) for v in values), (where, s)
            if where.endswith(".passes"):  # a count of dispatch passes: none is possible
                assert all(v >= 0 for v in values), (where, s)
            else:
                assert all(v > 0 for v in values), (where, s)

    tp = doc["throughput"]
    for kind in ("actions", "mutations"):
        assert tp[kind]["jobs_per_s"]["median"] > 0
    assert doc["raw"]["sqlite3"]["jobs_per_s"]["median"] > 0
    assert doc["raw"]["aiosqlite"]["jobs_per_s"]["median"] > 0
    assert doc["raw"]["sqlite3_batched"]["jobs_per_s"]["median"] > 0
    assert set(doc["raw"]["ratio"]) == {"actions", "mutations"}
    assert set(doc["raw"]["ratio_batched"]) == {"actions", "mutations"}
    for key in ("p50_ms", "p99_ms", "max_ms"):
        assert doc["lateness"][key]["median"] > 0
    assert doc["idle"]["cpu_per_20s"]["median"] > 0
    assert len(doc["pass"]["sizes"]) == 2
    assert doc["pass"]["ratio"]["pass"] > 0
    assert len(doc["aims"]) == 6
    assert all(isinstance(a["pass"], bool) for a in doc["aims"])
    # Human-readable output names every aim with PASS or MISS.
    assert proc.stdout.count("PASS") + proc.stdout.count("MISS") >= 6


@pytest.mark.timeout(60)
def test_quick_profile_mode_runs(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--profile", "actions", "--profile-top", "5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=55,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for label in ("end to end", "enqueue only", "dispatch only", "writer connection"):
        assert label in proc.stdout, proc.stdout
