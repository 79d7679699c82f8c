"""Runs one measurement of one peer in this (fresh) process and prints its result.

    python -m bench.peers.worker '{"peer": "naive", "op": "idle", "args": {...}}'

Only the named peer's module is imported, so each process's memory is that peer's own.
The result is the last line of stdout: ``RESULT <json>``.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import sys
from pathlib import Path
from typing import Any

MODULES = {
    "ours": "bench.peers.ours_peer",
    "apscheduler": "bench.peers.apscheduler_peer",
    "naive": "bench.peers.naive_peer",
    # On PostgreSQL (bench/pg_compare.py).
    "pg_ours": "bench.peers.pg_ours",
    "pg_procrastinate": "bench.peers.pg_procrastinate",
    "pg_pgqueuer": "bench.peers.pg_pgqueuer",
    "pg_raw": "bench.peers.pg_raw",
}
OPS = ("throughput", "lateness", "idle", "startup", "build", "raw")


def run(spec: dict[str, Any]) -> Any:
    module = importlib.import_module(MODULES[spec["peer"]])
    op = spec["op"]
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}")
    fn = getattr(module, op)
    args = dict(spec.get("args", {}))
    for key in ("folder", "path"):
        if key in args:
            args[key] = Path(args[key])
    accepted = inspect.signature(fn).parameters
    args = {k: v for k, v in args.items() if k in accepted}
    if inspect.iscoroutinefunction(fn):
        return asyncio.run(fn(**args))
    return fn(**args)


def main() -> int:
    spec = json.loads(sys.argv[1])
    try:
        result = run(spec)
    except Exception as exc:
        kind = "lead" if type(exc).__name__ == "LeadTooShort" else "error"
        print("RESULT " + json.dumps({"ok": False, "kind": kind, "error": repr(exc)}), flush=True)
        raise
    print("RESULT " + json.dumps({"ok": True, "value": result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
