"""The export and import benchmark still runs: ``bench/transfer_bench.py --quick`` (200
announcements, one run) in a subprocess. Its own checks must hold (every import answered
"Imported", no row refused); nothing here is timed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "transfer_bench.py"


@pytest.mark.timeout(150)
def test_the_transfer_bench_exports_and_imports_a_small_server(tmp_path: Path) -> None:
    out = tmp_path / "transfer.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=140,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text("utf-8"))
    assert (doc["announcements"], doc["runs"]) == (200, 1)
    for key in ("export_code_s", "import_code_s", "export_peak_mib", "import_peak_mib"):
        assert doc[key]["median"] > 0, key
    assert doc["file_bytes"]["median"] > 200 * 100  # every announcement is in the file
