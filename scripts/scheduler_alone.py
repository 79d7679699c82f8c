"""The scheduler alone, as a developer adopting it gets it: its wheel (``crier-scheduler``),
built from this tree's ``scheduler/`` and installed into a new virtualenv where discord.py and
the bot are not, its README's quick start run there as written, then its own tests.

    .venv/bin/python scripts/scheduler_alone.py            # as .ci/run scheduler-alone runs it
    .venv/bin/python scripts/scheduler_alone.py -k pacing  # arguments go to pytest
    .venv/bin/python scripts/scheduler_alone.py --keep /tmp/alone  # keep the wheel and venv

Offline: the wheel is built without build isolation (hatchling is in the dev virtualenv), and
everything the new virtualenv needs, the wheel's dependencies (and its ``postgres`` and
``metrics`` extras) and the test tools, is installed with ``pip --no-index`` from wheels made
of the dev virtualenv's own installed distributions (the same versions the rest of the suite
runs on). pip resolves the wheel's declared dependencies from those alone, so one it forgot to
declare is missing there and the tests fail.

Checked on the way: the two wheels (the scheduler's and the bot's) carry the same
``scheduler/`` files byte for byte (one source, two distributions); ``import discord`` and
``import bot`` fail in the new virtualenv, and ``scheduler`` is imported from it.

The tests run from a copy of ``tests/scheduler`` and the test modules it imports (nothing of
this tree is importable there), with the repository's pytest settings. They are the
scheduler's tests for CI: ``.ci/run tests`` leaves ``tests/scheduler`` to this step, so they
run once, against the installed wheel (``./scripts/test`` still runs them from the source).
"""

from __future__ import annotations

import argparse
import ast
import base64
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ROOT / "packaging" / "scheduler"
README = PACKAGING / "README.md"
EXTRAS = ("postgres", "metrics")
TEST_TOOLS = ("pytest", "pytest-asyncio", "pytest-timeout", "pytest-xdist", "hypothesis")
"""What the scheduler's tests run with (the dev extra's test tools)."""
FORBIDDEN = ("bot", "discord", "tests.bot", "tests.fakediscord", "tests.web", "tests.proof")
"""What the scheduler's tests may not import: they run where none of it is installed."""


# --- the tests' own files ------------------------------------------------------------------


def imported_modules(path: Path) -> set[str]:
    """The absolute module names a file imports (anywhere in it, type-checking blocks too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def module_file(name: str) -> Path | None:
    """The file of a module of this tree's ``tests`` package, if ``name`` is one."""
    if name != "tests" and not name.startswith("tests."):
        return None
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def suite_files() -> list[Path]:
    """``tests/scheduler`` and every module of ``tests`` it imports (and their packages'
    ``__init__``), relative to the repository."""
    todo = sorted((ROOT / "tests" / "scheduler").glob("*.py"))
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for parent in path.relative_to(ROOT).parents:
            init = ROOT / parent / "__init__.py"
            if parent != Path() and init.is_file():
                todo.append(init)
        for name in imported_modules(path):
            found = module_file(name)
            if found is not None:
                todo.append(found)
    return sorted(p.relative_to(ROOT) for p in seen)


def forbidden_imports() -> dict[str, list[str]]:
    """For each file of the scheduler's tests, what it imports that it may not."""
    bad: dict[str, list[str]] = {}
    for path in suite_files():
        names = sorted(
            name
            for name in imported_modules(ROOT / path)
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
        )
        if names:
            bad[str(path)] = names
    return bad


# --- the wheels ----------------------------------------------------------------------------


def run(argv: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(  # noqa: S603 (this script's own commands: pip, python, bash)
        [str(a) for a in argv], capture_output=True, text=True, check=False, **kwargs
    )
    if done.returncode != 0:
        raise SystemExit(
            f"failed ({done.returncode}): {' '.join(map(str, argv))}\n{done.stdout}{done.stderr}"
        )
    return done


def build(project: Path, out: Path) -> Path:
    """The wheel of the project at ``project``, built offline into ``out``."""
    before = set(out.glob("*.whl"))
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", out, project], env=pip_env())  # fmt: skip
    [wheel] = set(out.glob("*.whl")) - before
    return wheel


def scheduler_files(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as whl:
        return {n: whl.read(n) for n in whl.namelist() if n.startswith("scheduler/")}


def same_scheduler(ours: Path, bots: Path) -> None:
    """Both wheels carry the same ``scheduler/`` files, byte for byte."""
    mine, theirs = scheduler_files(ours), scheduler_files(bots)
    if mine != theirs:
        differ = sorted(n for n in mine.keys() | theirs.keys() if mine.get(n) != theirs.get(n))
        raise SystemExit(f"{ours.name} and {bots.name} carry different scheduler files: {differ}")
    if "scheduler/py.typed" not in mine or not any("/_migrations/" in n for n in mine):
        raise SystemExit(f"{ours.name} lacks py.typed or the migrations")
    print(f"{ours.name}: {len(mine)} files of scheduler/, the same as in {bots.name}")


def requirements_of(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as whl:
        [name] = [n for n in whl.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(whl.read(name).decode("utf-8"))
    return metadata.get_all("Requires-Dist") or []


def needed(roots: list[tuple[str, frozenset[str]]]) -> dict[str, importlib.metadata.Distribution]:
    """The installed distributions that ``roots`` (requirements, each with the extras of what
    requires it) need here, with what they need in turn."""
    found: dict[str, importlib.metadata.Distribution] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = list(roots)
    while todo:
        text, active = todo.pop()
        req = Requirement(text)
        if req.marker is not None and not any(
            req.marker.evaluate({"extra": extra}) for extra in active or {""}
        ):
            continue
        key = (canonicalize_name(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        dist = importlib.metadata.distribution(req.name)
        if not req.specifier.contains(dist.version, prereleases=True):
            raise SystemExit(f"{req} is wanted, but the dev virtualenv has {dist.version}")
        found[key[0]] = dist
        todo.extend((sub, frozenset(req.extras)) for sub in dist.requires or [])
    return found


def repack(dist: importlib.metadata.Distribution, into: Path) -> Path:
    """A wheel of an installed distribution: its files as its RECORD lists them (scripts and
    caches aside: pip makes its scripts again), under the tags its WHEEL file names."""
    files = [f for f in dist.files or [] if f.parts[0] != ".." and "__pycache__" not in f.parts]
    [info] = {f.parts[0] for f in files if f.parts[0].endswith(".dist-info")}
    tags = [t.split("-") for t in re.findall(r"^Tag: (\S+)$", dist.read_text("WHEEL") or "", re.M)]
    tag = "-".join(".".join(sorted({t[i] for t in tags})) for i in range(3))
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    wheel = into / f"{name}-{dist.version}-{tag}.whl"
    record: list[str] = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as whl:
        for file in files:
            if file.parts[0] == info and file.name in (
                "RECORD", "INSTALLER", "REQUESTED", "direct_url.json"
            ):  # fmt: skip
                continue
            data = Path(str(file.locate())).read_bytes()
            whl.writestr(file.as_posix(), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{file.as_posix()},sha256={digest.decode()},{len(data)}")
        record.append(f"{info}/RECORD,,")
        whl.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


def wheelhouse(scheduler_wheel: Path, into: Path) -> None:
    """Wheels of everything the scheduler's wheel (with its extras) and the tests need."""
    into.mkdir()
    roots = [(r, frozenset(EXTRAS)) for r in requirements_of(scheduler_wheel)]
    roots += [(tool, frozenset()) for tool in TEST_TOOLS]
    dists = needed(roots)
    for dist in dists.values():
        repack(dist, into)
    print(f"wheelhouse: {', '.join(sorted(dists))}")


# --- the virtualenv ------------------------------------------------------------------------


def pip_env() -> dict[str, str]:
    """This environment without pip's settings (no index, find-links or constraints from the
    machine's configuration), nor a PYTHONPATH that could reach this tree."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "PYTHONPATH"}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def venv_env(venv: Path) -> dict[str, str]:
    env = pip_env()
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def install(venv: Path, scheduler_wheel: Path, wheels: Path) -> None:
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    extras = ",".join(EXTRAS)
    run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "--quiet",
         "--no-index", "--find-links", wheels, f"{scheduler_wheel}[{extras}]", *TEST_TOOLS],
        env=pip_env())  # fmt: skip


def alone(venv: Path, cwd: Path) -> None:
    """discord.py and the bot are not importable; the scheduler comes from the virtualenv."""
    python = venv / "bin" / "python"
    for name in ("discord", "bot"):
        done = subprocess.run(  # noqa: S603 (the new virtualenv's python, a fixed import)
            [python, "-c", f"import {name}"], cwd=cwd, env=venv_env(venv),
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode == 0 or f"No module named '{name}'" not in done.stderr:
            raise SystemExit(f"`import {name}` should fail in {venv}: {done.stderr}")
        print(f"import {name}: ModuleNotFoundError, as it should")
    where = run([python, "-c", "import scheduler; print(scheduler.__file__)"],
                cwd=cwd, env=venv_env(venv)).stdout.strip()  # fmt: skip
    if not Path(where).is_relative_to(venv):
        raise SystemExit(f"scheduler was imported from {where}, not from {venv}")
    print(f"import scheduler: {where}")


# --- the README's quick start --------------------------------------------------------------


def quick_start_blocks() -> dict[str, list[str]]:
    """The fenced blocks of the README's ``## Quick start``, by language."""
    text = README.read_text("utf-8")
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks: dict[str, list[str]] = {}
    for lang, body in re.findall(r"^```(\w+)\n(.*?)^```$", section, re.M | re.S):
        blocks.setdefault(lang, []).append(body)
    return blocks


def quick_start(venv: Path, where: Path) -> None:
    """The quick start's program prints what the README says; its commands then run."""
    blocks = quick_start_blocks()
    where.mkdir()
    (where / "quickstart.py").write_text("\n".join(blocks["python"]), "utf-8")
    done = run([venv / "bin" / "python", "quickstart.py"], cwd=where, env=venv_env(venv),
               timeout=60)  # fmt: skip
    [expected] = blocks["text"]
    if done.stdout != expected:
        raise SystemExit(f"the quick start printed:\n{done.stdout}\nthe README says:\n{expected}")
    for commands in blocks["sh"]:
        run(["bash", "-euo", "pipefail", "-c", commands], cwd=where, env=venv_env(venv),
            timeout=60)  # fmt: skip
    print(f"the quick start: printed what the README says; {len(blocks['sh'])} shell block ran")


# --- the tests -----------------------------------------------------------------------------


def copy_suite(into: Path) -> None:
    for path in suite_files():
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / path, target)


def run_tests(venv: Path, suite: Path, pytest_args: list[str]) -> int:
    workers = os.environ.get("CRIER_TEST_WORKERS", "3")
    argv = [venv / "bin" / "python", "-m", "pytest", "-c", ROOT / "pyproject.toml",
            "--rootdir", suite, "-p", "no:cacheprovider", "-n", workers, "--dist", "worksteal",
            "-q", "-rs", "tests/scheduler", *pytest_args]  # fmt: skip
    sys.stdout.flush()
    return subprocess.run(  # noqa: S603 (the new virtualenv's pytest)
        [str(a) for a in argv], cwd=suite, env=venv_env(venv), check=False
    ).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="work in this (new) folder and keep it")
    args, pytest_args = parser.parse_known_args(argv)
    bad = forbidden_imports()
    if bad:
        raise SystemExit(f"the scheduler's tests import what is not installed alone: {bad}")
    if args.keep is not None:
        args.keep.mkdir(parents=True)
        return alone_in(args.keep, pytest_args)
    with tempfile.TemporaryDirectory(prefix="scheduler-alone-") as tmp:
        return alone_in(Path(tmp), pytest_args)


def alone_in(work: Path, pytest_args: list[str]) -> int:
    dist = work / "dist"
    dist.mkdir()
    ours = build(PACKAGING, dist)
    same_scheduler(ours, build(ROOT, dist))
    wheelhouse(ours, work / "wheels")
    venv = work / "venv"
    install(venv, ours, work / "wheels")
    suite = work / "suite"
    copy_suite(suite)
    alone(venv, suite)
    quick_start(venv, work / "quickstart")
    return run_tests(venv, suite, pytest_args)


if __name__ == "__main__":
    sys.exit(main())
