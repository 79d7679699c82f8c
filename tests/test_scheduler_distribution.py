"""The scheduler as a distribution of its own (``packaging/scheduler``, ``crier-scheduler``):
what keeps it true without building it (``.ci/run scheduler-alone`` builds and installs it).

Its README's reference is what the docstrings say now, every public name has one, the
guarantees name tests that exist, its metadata is the bot's own for what they share, the
scheduler imports nothing it does not declare, and its tests import nothing of the bot."""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from packaging.requirements import Requirement

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ROOT / "packaging" / "scheduler"
README = PACKAGING / "README.md"
OWN = {"aiosqlite", "croniter", "tzdata"}
"""The scheduler distribution's dependencies."""
IMPORTED_AS = {
    "aiosqlite": "aiosqlite",
    "croniter": "croniter",
    "asyncpg": "asyncpg",  # the postgres extra
    "prometheus_client": "prometheus-client",  # the metrics extra
}
"""Each third-party module the scheduler imports, and the distribution that brings it."""


def script(name: str) -> ModuleType:
    path = ROOT / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_script_{name}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reference() -> tuple[str, list[str]]:
    made: tuple[str, list[str]] = script("scheduler_reference").reference()
    return made


def test_the_readme_reference_is_what_the_docstrings_say(reference: tuple[str, list[str]]) -> None:
    section, _ = reference
    readme = README.read_text("utf-8")
    start, end = "<!-- reference:start -->", "<!-- reference:end -->"
    committed = readme[readme.index(start) + len(start) : readme.index(end)].strip("\n")
    assert committed == section.strip("\n"), (
        "packaging/scheduler/README.md's reference is out of date: run "
        ".venv/bin/python scripts/scheduler_reference.py"
    )


def test_the_reference_names_every_public_name(reference: tuple[str, list[str]]) -> None:
    import scheduler
    import scheduler.metrics
    import scheduler.testing

    section, missing = reference
    assert missing == [], f"public names without a docstring: {missing}"
    names = [*scheduler.__all__, "PostgresStore", *scheduler.testing.__all__]
    names += scheduler.metrics.__all__
    for name in names:
        assert f"#### `{name}" in section or f"#### `with {name}(" in section, name
    # and what is reached through them: sched.schedules, ctx.scheduler
    for reached in ("Schedules", "TransactionScheduling", "ActionScheduling"):
        assert f"#### `{reached}`" in section, reached


def test_the_guarantees_name_tests_that_exist() -> None:
    readme = README.read_text("utf-8")
    table = readme.split("## What it guarantees", 1)[1].split("\n## ", 1)[0]
    cited = [
        line.split("|")[2] for line in table.splitlines() if line.startswith("| ") and "`" in line
    ]
    assert len(cited) >= 15
    for cell in cited:
        refs = re.findall(r"`(test_[^`]+)`", cell)
        assert refs, cell
        for ref in refs:
            file, _, name = ref.partition("::")
            path = ROOT / "tests" / "scheduler" / file
            assert path.is_file(), ref
            if name:
                tree = ast.parse(path.read_text("utf-8"))
                defined = {
                    n.name
                    for n in tree.body
                    if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                }
                assert name in defined, f"{ref}: no such test"


def test_its_metadata_is_the_bots_own_for_what_they_share() -> None:
    ours = tomllib.loads((PACKAGING / "pyproject.toml").read_text("utf-8"))["project"]
    bots = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    assert ours["name"] == "crier-scheduler"
    for key in ("version", "requires-python", "license"):
        assert ours[key] == bots[key], key
    shared = [d for d in bots["dependencies"] if Requirement(d).name in OWN]
    assert sorted(ours["dependencies"]) == sorted(shared)
    assert {Requirement(d).name for d in ours["dependencies"]} == OWN
    extras = ours["optional-dependencies"]
    assert extras == {k: bots["optional-dependencies"][k] for k in ("postgres", "metrics")}


def test_the_scheduler_imports_nothing_it_does_not_declare() -> None:
    found: dict[str, set[str]] = {}
    for path in (ROOT / "scheduler").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "scheduler":
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    assert set(found) <= set(IMPORTED_AS), {k: v for k, v in found.items() if k not in IMPORTED_AS}
    declared = tomllib.loads((PACKAGING / "pyproject.toml").read_text("utf-8"))["project"]
    everything = declared["dependencies"] + [
        d for extra in declared["optional-dependencies"].values() for d in extra
    ]
    names = {Requirement(d).name for d in everything}
    assert {IMPORTED_AS[top] for top in found} <= names


def test_a_missing_extra_is_named_with_the_install_that_brings_it() -> None:
    for module, name, extra in (
        ("asyncpg", "from scheduler import PostgresStore", "postgres"),
        ("prometheus_client", "import scheduler.metrics", "metrics"),
    ):
        code = f"import sys; sys.modules[{module!r}] = None\n{name}"
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
        )
        assert done.returncode == 1
        assert f"pip install 'crier-scheduler[{extra}]'" in done.stderr.splitlines()[-1]


def test_the_scheduler_tests_import_nothing_of_the_bot_nor_discord() -> None:
    alone = script("scheduler_alone")
    assert alone.forbidden_imports() == {}
    files = {str(p) for p in alone.suite_files()}
    # what they need, and only that: the fake Discord's package and the top conftest stay out
    assert {"tests/support/netguard.py", "tests/scheduler/conftest.py"} <= files
    assert not {f for f in files if f.startswith(("tests/fakediscord", "tests/bot"))}
    assert "tests/conftest.py" not in files
