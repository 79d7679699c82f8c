"""The pre-commit hooks run what CI runs: every step of .ci/run, each once, from local hooks
(no hook repository to fetch); the linters before a commit, the tests (the suite, and the
scheduler's alone) before a push."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CI_RUN = ROOT / ".ci" / "run"


def ci_steps() -> list[str]:
    """The steps .ci/run runs, in order (its STEPS array)."""
    found = re.search(r"^STEPS=\(([^)]*)\)$", CI_RUN.read_text(), re.M)
    assert found is not None, "no STEPS=(...) line in .ci/run"
    return found[1].split()


def hooks() -> list[dict[str, Any]]:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    assert [repo["repo"] for repo in config["repos"]] == ["local"]
    hooks: list[dict[str, Any]] = config["repos"][0]["hooks"]
    return hooks


def test_every_step_of_ci_is_one_local_hook() -> None:
    entries = [hook["entry"] for hook in hooks()]
    assert sorted(entries) == sorted(f".ci/run {step}" for step in ci_steps())
    for hook in hooks():
        assert hook["language"] == "system", hook
        assert hook["pass_filenames"] is False, hook  # the whole tree, as CI checks it
        assert hook["always_run"] is True, hook


def test_the_linters_run_before_a_commit_and_the_tests_before_a_push() -> None:
    stages = {hook["entry"].split()[-1]: hook["stages"] for hook in hooks()}
    assert stages.pop("tests") == ["pre-push", "manual"]
    assert stages.pop("scheduler-alone") == ["pre-push", "manual"]
    assert stages.pop("container") == ["pre-push", "manual"]
    assert stages
    for step, at in stages.items():
        assert at == ["pre-commit", "manual"], step


def test_ci_run_dispatches_every_step_it_lists() -> None:
    labels = re.findall(r"^    ([a-z-]+)\) ", CI_RUN.read_text(), re.M)
    assert labels == ci_steps()


def test_a_named_step_runs_alone() -> None:
    done = subprocess.run(
        [str(CI_RUN), "ruff-format"], capture_output=True, text=True, timeout=300, check=False
    )
    # ruff's format check ran (its verdict on the tree is the CI step's, not this test's)
    assert re.search(r"\d+ files? (already formatted|would be reformatted)", done.stdout), done
    assert "CI passed" not in done.stdout  # only a full run says so
    assert "passed in" not in done.stdout  # and no test ran


def test_an_unknown_step_is_refused_by_name() -> None:
    done = subprocess.run(
        [str(CI_RUN), "ruff-check", "nosuch"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "no step 'nosuch'" in done.stderr
    assert "ruff-check" in done.stderr  # it lists the steps there are
    assert done.stdout == ""  # nothing ran
