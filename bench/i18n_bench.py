"""Languages benchmark: what the gettext catalogs cost at start-up, before → after.

    python bench/i18n_bench.py [--runs N] [--root PATH] [--before PATH]

Each run is a fresh interpreter (``sys.executable``) on a checkout that does what the bot
does before it connects: imports the bot (``bot.app``, every module a running bot loads)
and, where the checkout has them, reads every shipped catalog (``bot.i18n.catalogs()``).
Two kinds of child, so that measuring memory does not slow what is timed:

- timed: first ``bot.i18n`` and every catalog (the languages' own cost; the bot's modules
  read the catalogs as they are imported, so they come first to be measured apart), then
  the rest of the bot (``time.perf_counter``), and the process's peak resident memory at
  the end (``ru_maxrss``);
- traced: the memory ``bot.i18n`` and the loaded catalogs hold (``tracemalloc``: the blocks
  allocated by that step and still alive after it).

``--root`` is the checkout measured (default: this one); ``--before`` another one to compare
with, e.g. a worktree of the commit before the languages work (``git worktree add
/tmp/before c99ce3e~1``), measured in the same run, interleaved, and reported beside it with
the ratio. Reports the medians over ``--runs`` (default 7).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
traced = sys.argv[2] == "traced"
if traced:
    import tracemalloc
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
t0 = time.perf_counter()
try:
    from bot import i18n
except ImportError:
    i18n = None
catalogs = {} if i18n is None else i18n.catalogs()
t1 = time.perf_counter()
held = 0
if traced:
    after = tracemalloc.take_snapshot()
    held = sum(s.size_diff for s in after.compare_to(before, "filename"))
import bot.app
t2 = time.perf_counter()
messages = {
    locale: len(c.entries) + len(getattr(c, "plurals", {})) for locale, c in catalogs.items()
}
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"load": t1 - t0, "import": t2 - t1, "rss": rss, "held": held,
                  "messages": messages}))
"""


def child(root: Path, kind: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), kind], check=True, capture_output=True, text=True
    ).stdout
    return dict(json.loads(out))


def measure(root: Path) -> dict[str, object]:
    timed = child(root, "timed")
    timed["held"] = child(root, "traced")["held"]
    return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--before", type=Path, default=None)
    args = parser.parse_args()
    roots = {"after": args.root.resolve()}
    if args.before is not None:
        roots = {"before": args.before.resolve(), **roots}
    results: dict[str, list[dict[str, object]]] = {name: [] for name in roots}
    for _ in range(args.runs):  # interleaved: a slow moment of the machine hits both
        for name, root in roots.items():
            results[name].append(measure(root))

    def median(name: str, key: str) -> float:
        return statistics.median(float(str(r[key])) for r in results[name])

    print(f"{args.runs} runs each, medians")
    rows = [
        ("start-up: bot.i18n + catalogs", "load", 1000, "ms"),
        ("start-up: the rest of the bot", "import", 1000, "ms"),
        ("peak resident memory", "rss", 1 / 2**20, "MiB"),
        ("memory bot.i18n + catalogs hold", "held", 1 / 1024, "KiB"),
    ]
    names = list(roots)
    print(f"{'':30}" + "".join(f"{n:>12}" for n in names) + ("   ratio" if len(names) > 1 else ""))
    for label, key, scale, unit in rows:
        values = [median(n, key) * scale for n in names]
        cells = "".join(f"{v:.1f} {unit}".rjust(12) for v in values)
        ratio = ""
        if len(values) > 1:
            # A checkout without catalogs has nothing to compare the languages' own rows with.
            new = key in ("load", "held") and not results[names[0]][0]["messages"]
            ratio = "   (new)" if new or values[0] < 0.1 else f"   {values[1] / values[0]:.2f}x"
        print(f"{label:30}{cells}{ratio}")
    for name in names:
        print(f"{name}: {roots[name]}; messages per language: {results[name][0]['messages']}")


if __name__ == "__main__":
    main()
