"""Languages benchmark: what the gettext catalogs cost at start-up.

    python bench/i18n_bench.py [--runs N] [--root PATH]

Each run is a fresh interpreter (``sys.executable``) on the checkout at ``--root`` (default:
this one; give another checkout, e.g. the branch before, to compare) that imports
``bot.i18n`` and reads every shipped catalog (``i18n.catalogs()``, what the bot does once
at start-up, before it connects). Reports the medians over ``--runs`` (default 7) of the
import time, the catalog load time, and the memory the loaded catalogs hold
(``tracemalloc``: the blocks allocated by the load and still alive after it), plus the
number of messages per language. Nothing else of the bot is imported.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, sys, time, tracemalloc
sys.path.insert(0, sys.argv[1])
t0 = time.perf_counter()
from bot import i18n
t1 = time.perf_counter()
tracemalloc.start()
before = tracemalloc.take_snapshot()
t2 = time.perf_counter()
catalogs = i18n.catalogs()
t3 = time.perf_counter()
after = tracemalloc.take_snapshot()
held = sum(s.size_diff for s in after.compare_to(before, "filename"))
messages = {
    locale: len(c.entries) + len(getattr(c, "plurals", {})) for locale, c in catalogs.items()
}
print(json.dumps({"import": t1 - t0, "load": t3 - t2, "bytes": held, "messages": messages}))
"""


def run(root: Path) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(root)], check=True, capture_output=True, text=True
    ).stdout
    return dict(json.loads(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    results = [run(args.root.resolve()) for _ in range(args.runs)]

    def median(key: str) -> float:
        return statistics.median(float(str(r[key])) for r in results)

    print(f"checkout: {args.root.resolve()} ({args.runs} runs, medians)")
    print(f"import bot.i18n:   {median('import') * 1000:7.1f} ms")
    print(f"load the catalogs: {median('load') * 1000:7.1f} ms")
    print(f"catalogs held:     {median('bytes') / 1024:7.0f} KiB")
    print(f"messages:          {results[0]['messages']}")


if __name__ == "__main__":
    main()
