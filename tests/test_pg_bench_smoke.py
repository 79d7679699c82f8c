"""The PostgreSQL benchmark still runs: ``bench/pg_bench.py`` (and ``scheduler_bench.py --store
postgres``, which hands over to it), tiny, in a subprocess. Nothing here is timed or compared.

(Beside the other benchmarks' smoke tests rather than in ``tests/scheduler``: it runs a script
of the repository's ``bench/``, which the scheduler's own tests, run against its installed
wheel too, cannot reach.)"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING

import pytest

from tests.scheduler.stores import postgres_dsn
from tests.support.processes import ROOT

if TYPE_CHECKING:
    from pathlib import Path


async def test_the_postgres_benchmark_runs(tmp_path: Path) -> None:
    """bench/pg_bench.py (and scheduler_bench.py --store postgres, which hands over to it)
    end to end, tiny: the figures are not checked, only that every run ended right. One
    worker count, 2 (the several processes' path; a count of 1 is the same code with one):
    each count costs a fresh database and its worker processes per kind of job."""
    base = postgres_dsn()
    if base is None:
        pytest.skip("PostgreSQL tests need CRIER_TEST_POSTGRES_DSN (.ci/run sets it)")
    out = tmp_path / "pg_bench.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(ROOT / "bench" / "scheduler_bench.py"),
        "--store",
        "postgres",
        "--quick",
        "--jobs",
        "100",
        "--workers",
        "2",
        "--samples",
        "20",
        "--dsn",
        base,
        "--json",
        str(out),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    stdout, _ = await asyncio.wait_for(proc.communicate(), 100)
    assert proc.returncode == 0, stdout.decode()
    doc = json.loads(out.read_text("utf-8"))
    assert set(doc["throughput"]) == {"actions", "mutations"}
    assert set(doc["throughput"]["actions"]) == {"2"}
    for kind in ("actions", "mutations"):
        [per_worker] = doc["throughput"][kind]["2"]["per_worker"]
        assert len(per_worker) == 2, (kind, per_worker)
        assert sum(per_worker) == 100, (kind, per_worker)
    assert doc["wake"]["samples_per_run"] == 20
    assert [a["aim"] for a in doc["aims"]][-1] == "cross-process wake p99"
