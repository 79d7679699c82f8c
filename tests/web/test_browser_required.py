"""Without Chromium the dashboard's browser tests are skipped, saying why, except in CI
(``CRIER_REQUIRE_BROWSER=1``, which ``.ci/run`` sets): there they fail, so a run that never
drove the browser cannot end in "CI passed". Checked by running one browser test in a
pytest of its own, pointed at a Chromium that does not exist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .conftest import REQUIRE_BROWSER

ROOT = Path(__file__).resolve().parents[2]
ONE_BROWSER_TEST = "tests/web/test_dashboard_browser.py::test_cookie_flags_and_security_headers"


def run_without_chromium(tmp_path: Path, *, required: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != REQUIRE_BROWSER}
    env["CRIER_CHROMIUM"] = str(tmp_path / "no-chromium-here")
    if required:
        env[REQUIRE_BROWSER] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", ONE_BROWSER_TEST],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_without_chromium_the_browser_tests_are_skipped_saying_why(tmp_path: Path) -> None:
    done = run_without_chromium(tmp_path, required=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout
    assert f"no Chromium at {tmp_path / 'no-chromium-here'}" in done.stdout


def test_in_ci_a_missing_chromium_fails_the_run(tmp_path: Path) -> None:
    done = run_without_chromium(tmp_path, required=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 error" in done.stdout
    assert f"{REQUIRE_BROWSER}=1: the browser tests must run" in done.stdout
    assert "skipped" not in done.stdout


def test_ci_requires_the_browser_and_lists_skip_reasons() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert f"export {REQUIRE_BROWSER}=1" in script
    assert "./scripts/test -q -rs" in script
