"""The largest classes and functions of ``bot/`` and ``scheduler/``, in lines.

    .venv/bin/python scripts/sizes.py                    # the working tree
    .venv/bin/python scripts/sizes.py --rev 8e2d21b^     # a commit, read from git
    .venv/bin/python scripts/sizes.py --rev 8e2d21b^ --rev main --top 5

A size is the lines from a definition's ``def``/``class`` line to its last line (docstring,
comments and blank lines inside included; decorators not). Methods and nested functions
count as functions of their own, named by where they stand (``Delivery.send``); a class's
size includes its methods'. With two ``--rev``, each is printed in turn.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("bot", "scheduler")


@dataclass(frozen=True, slots=True)
class Definition:
    kind: str  # "class" or "function"
    name: str  # qualified: Outer.inner
    path: str
    lines: int


def definitions(path: str, source: str) -> list[Definition]:
    """Every class and function defined in ``source`` (the file at ``path``)."""
    out: list[Definition] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                kind = "class" if isinstance(child, ast.ClassDef) else "function"
                end = child.end_lineno if child.end_lineno is not None else child.lineno
                out.append(Definition(kind, name, path, end - child.lineno + 1))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source, filename=path), "")
    return out


def tree_files(root: Path) -> dict[str, str]:
    """The Python files of the packages in the directory ``root``, by path."""
    return {
        str(p.relative_to(root)): p.read_text("utf-8")
        for package in PACKAGES
        for p in sorted((root / package).rglob("*.py"))
    }


def git_files(root: Path, rev: str) -> dict[str, str]:
    """The Python files of the packages at commit ``rev`` of the repository at ``root``."""

    def git(*args: str) -> str:
        done = subprocess.run(  # noqa: S603 (git, with fixed arguments and a revision)
            ["git", "-C", str(root), *args],  # noqa: S607 (git from PATH, as a developer runs it)
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"git {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    names = git("ls-tree", "-r", "--name-only", rev, "--", *PACKAGES).split()
    return {n: git("show", f"{rev}:{n}") for n in names if n.endswith(".py")}


def largest(files: dict[str, str], package: str, kind: str, top: int) -> list[Definition]:
    found = [
        d
        for path, source in files.items()
        if path.startswith(f"{package}/")
        for d in definitions(path, source)
        if d.kind == kind
    ]
    return sorted(found, key=lambda d: (-d.lines, d.path, d.name))[:top]


def report(files: dict[str, str], top: int) -> str:
    lines = []
    for package in PACKAGES:
        for kind in ("class", "function"):
            plural = "classes" if kind == "class" else "functions"
            lines.append(f"{package}/: the {top} largest {plural}")
            for d in largest(files, package, kind, top):
                lines.append(f"  {d.lines:5d}  {d.name}  ({d.path})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", action="append", help="a commit to read (repeatable)")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args(argv)
    if not args.rev:
        print(report(tree_files(args.root), args.top))
        return 0
    for i, rev in enumerate(args.rev):
        if i:
            print()
        print(f"== {rev}")
        print(report(git_files(args.root, rev), args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
