"""The scheduler bench of two revisions of this repository, in one run: before and after.

Run from the project root with the project's virtualenv::

    .venv/bin/python bench/revisions_bench.py main~3            # main~3 against HEAD
    .venv/bin/python bench/revisions_bench.py 51cc7f9 HEAD --rounds 9 --only throughput,pass
    .venv/bin/python bench/revisions_bench.py main~3 --rounds 3 --bench-args=--quick

Each revision is checked out as a detached git worktree in a temporary folder (removed at
the end), and ``bench/scheduler_bench.py`` of that worktree measures it (``--runs 1`` a
round, so each round is one measurement of each). The two alternate round by round, the
first of a round taking turns, so a machine that gets busier or quieter during the run
weighs on both alike. Printed per measurement: the median of each revision over the rounds,
and the after/before ratio of each round (its median, min and max): the ratios are paired,
a round's two measurements having run one after the other. ``cpu_s`` is the CPU time of each
run's whole process (its enqueues, its passes, its handlers): the figure to read on a busy
machine, where the wall times swing with the other work.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._stats import log, out, ratio, summarize

ROOT = Path(__file__).resolve().parent.parent


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def checkout(rev: str, folder: Path) -> Path:
    """A detached worktree of ``rev`` in ``folder``."""
    tree = folder / rev.replace("/", "_").replace("~", "_").replace("^", "_")
    git("worktree", "add", "--detach", str(tree), rev)
    return tree


def measure(tree: Path, only: str, extra: list[str], out_json: Path) -> dict[str, float]:
    """One run of ``tree``'s scheduler bench: every measurement's median by its path, and
    ``cpu_s``, the CPU time (user + system) the run's process took: on a machine other work
    keeps busy, wall times swing with it, CPU time much less."""
    cmd = [sys.executable, str(tree / "bench" / "scheduler_bench.py"), "--only", only]
    cmd += ["--runs", "1", "--json", str(out_json), *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=tree, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {**dict(medians(json.loads(out_json.read_text()))), "cpu_s": cpu}


def medians(data: Any, path: str = "") -> list[tuple[str, float]]:
    """The ``median`` of every summary in a scheduler bench JSON, by its dotted path."""
    if isinstance(data, dict):
        if "median" in data and isinstance(data["median"], int | float):
            return [(path, float(data["median"]))]
        found: list[tuple[str, float]] = []
        for key, value in data.items():
            if key in ("meta", "aims"):
                continue
            found += medians(value, f"{path}.{key}" if path else str(key))
        return found
    return []


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("before", help="the revision measured as before (e.g. main~3, a hash)")
    ap.add_argument("after", nargs="?", default="HEAD", help="the revision after (HEAD)")
    ap.add_argument("--rounds", type=int, default=7, help="rounds (default 7)")
    ap.add_argument("--only", default="throughput", help="scheduler_bench sections")
    ap.add_argument(
        "--bench-args", default="", help="more arguments for scheduler_bench (e.g. --quick)"
    )
    ap.add_argument("--json", type=Path, default=None, help="write the results as JSON here")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    revs = {"before": git("rev-parse", args.before), "after": git("rev-parse", args.after)}
    out(
        f"before: {args.before} = {revs['before'][:10]}; after: {args.after} = {revs['after'][:10]}"
    )
    out(f"sections: {args.only}; {args.rounds} rounds, alternating; {args.bench_args or ''}")
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="revisions-bench-") as tmp:
        folder = Path(tmp)
        trees = {side: checkout(rev, folder) for side, rev in revs.items()}
        try:
            for n in range(args.rounds):
                order = ("before", "after") if n % 2 == 0 else ("after", "before")
                for side in order:
                    log(f"round {n + 1}/{args.rounds}: {side}")
                    got = measure(
                        trees[side], args.only, args.bench_args.split(), folder / "r.json"
                    )
                    runs[side].append(got)
        finally:
            for tree in trees.values():
                git("worktree", "remove", "--force", str(tree))
    results = {}
    out(f"\n{'measurement':<44} {'before':>12} {'after':>12}  after/before per round")
    for path in runs["before"][0]:
        before = summarize(r[path] for r in runs["before"])
        after = summarize(r[path] for r in runs["after"])
        paired = summarize(
            ratio(a[path], b[path]) for a, b in zip(runs["after"], runs["before"], strict=True)
        )
        results[path] = {
            "before": before.as_dict(),
            "after": after.as_dict(),
            "ratio": paired.as_dict(),
        }
        out(
            f"{path:<44} {before.median:>12,.2f} {after.median:>12,.2f}  "
            f"{paired.median:.3f} (min {paired.min:.3f}, max {paired.max:.3f})"
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"revisions": revs, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
