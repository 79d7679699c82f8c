"""What one dispatch pass costs in SQLite's own work, for two revisions: a count of virtual
machine instructions, not a time, so a busy machine does not change it.

Run from the project root with the project's virtualenv::

    .venv/bin/python bench/sql_steps_bench.py 43ff3c6~1 43ff3c6

Each revision is checked out as a detached git worktree in a temporary folder (removed at
the end); a child process on that worktree's ``scheduler`` opens a SQLite store holding
1,000 jobs due in an hour and counts, with a progress handler on the store's writer
connection (called at every instruction), the instructions of: a claim that finds nothing
due (what every pass with nothing to do costs), and a claim of 64 due jobs (half actions)
with the completion of all 64 (a busy pass). The count covers the statements the scheduler
sends, index upkeep included; Python's own work around them is not counted (the throughput
and ``cpu_s`` of ``revisions_bench.py`` measure the whole).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._stats import out
from bench.revisions_bench import checkout, git

CHILD = """
import asyncio, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
from scheduler import JobKind, SqliteStore
from scheduler.store_types import NewJob, Outcome

def job(kind, ts):
    return NewJob(fn="f", kind=kind, next_ts=ts, max_failures=4, initial_backoff=1.0,
                  backoff_base=2.0, idempotent=False, args_json="null")

async def main():
    with tempfile.TemporaryDirectory() as d:
        s = SqliteStore(d + "/steps.db")
        await s.open()
        now = time.time()
        async with s.transaction(now) as tx:
            for i in range(1000):
                await tx.enqueue(job(JobKind.MUTATION, now + 3600 + i))
        steps = [0]
        def count():
            steps[0] += 1
            return 0
        conn = s._writer._conn
        conn.set_progress_handler(count, 1)
        t = time.time()
        await s.at(t).claim_due(t + 30, mutation_limit=64, action_limit=64)
        idle = steps[0]
        conn.set_progress_handler(None, 1)
        async with s.transaction(t) as tx:
            for k in range(64):
                await tx.enqueue(job(JobKind.ACTION if k % 2 else JobKind.MUTATION, t - 1))
        steps[0] = 0
        conn.set_progress_handler(count, 1)
        t = time.time()
        claim = await s.at(t).claim_due(t + 30, mutation_limit=64, action_limit=64)
        await s.at(t).complete([Outcome(j, ok=True, value_json="null") for j in claim.jobs])
        conn.set_progress_handler(None, 1)
        assert len(claim.jobs) == 64, len(claim.jobs)
        print(idle, steps[0])
        await s.close()

asyncio.run(main())
"""


def count(tree: Path) -> tuple[int, int]:
    """(a claim with nothing due, a pass of 64 jobs) in instructions, on ``tree``."""
    got = subprocess.run(
        [sys.executable, "-c", CHILD, str(tree)],
        cwd=tree,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return int(got[0]), int(got[1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("before", help="the revision measured as before (e.g. main~3, a hash)")
    ap.add_argument("after", nargs="?", default="HEAD", help="the revision after (HEAD)")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    revs = {"before": git("rev-parse", args.before), "after": git("rev-parse", args.after)}
    with tempfile.TemporaryDirectory(prefix="sql-steps-") as tmp:
        trees = {side: checkout(rev, Path(tmp)) for side, rev in revs.items()}
        try:
            counts = {side: count(tree) for side, tree in trees.items()}
        finally:
            for tree in trees.values():
                git("worktree", "remove", "--force", str(tree))
    b_rev, a_rev = revs["before"][:10], revs["after"][:10]
    out(f"before: {args.before} = {b_rev}; after: {args.after} = {a_rev}")
    out(f"{'SQLite instructions':<44} {'before':>10} {'after':>10}  after/before")
    for n, what in enumerate(("claim, nothing due (1,000 pending)", "pass of 64 due jobs")):
        b, a = counts["before"][n], counts["after"][n]
        out(f"{what:<44} {b:>10,} {a:>10,}  {a / b:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
