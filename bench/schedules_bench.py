"""Recurring-schedule benchmark: boot reconciliation and catch-up after a long downtime.

    python bench/schedules_bench.py [--runs 5] [--json PATH]

Prints medians (min-max) of:
- reconciling 10,000 static crons at boot: first boot (all new), a restart with the registry
  unchanged, and a restart with 100 entries edited;
- the catch-up tick of a 1-second interval schedule that was down for a year, under each
  policy (skip, fire_once, fire_all): the time to compute the backlog, materialize its
  occurrences and re-anchor (a year is 31,536,000 missed times).
Aim (from the issue): both well under a second.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scheduler import Registry, SqliteStore, cron_jobs
from scheduler._engine import Engine
from scheduler.crons import reconcile_crons
from scheduler.schedules import TransactionSchedules
from scheduler.testing import FakeClock

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

START = datetime(2030, 1, 1, tzinfo=UTC)


def registry() -> Registry:
    reg = Registry()

    @reg.mutation("noop")
    async def noop(ctx: Any, args: Any) -> None:
        return None

    return reg


def crons(n: int, edited: int = 0) -> Any:
    c = cron_jobs()
    for i in range(n):
        minute = (i + (30 if i < edited else 0)) % 60
        if i % 3 == 0:
            c.interval(f"interval-{i}", timedelta(minutes=5 + i % 50), "noop", {"i": i})
        elif i % 3 == 1:
            c.cron(f"cron-{i}", f"{minute} */2 * * 1-5", "noop", {"i": i}, tz="Europe/London")
        else:
            c.daily(f"daily-{i}", i % 24, minute, "noop", {"i": i})
    return c


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    t0 = time.perf_counter()
    await fn()
    return time.perf_counter() - t0


async def reconcile_case(n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "r.db"
        clock = FakeClock(START)
        out: dict[str, float] = {}
        for label, registry_crons in (
            ("first boot", crons(n)),
            ("restart, unchanged", crons(n)),
            ("restart, 100 edited", crons(n, edited=100)),
        ):
            engine = Engine(SqliteStore(path), registry(), clock)
            await engine.open_store()
            try:
                out[label] = await timed(partial(reconcile_crons, engine, registry_crons))
            finally:
                await engine.store.close()
            clock.advance(60)
        return out


async def catch_up_case(policy: str) -> float:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "c.db"
        clock = FakeClock(START)
        engine = Engine(SqliteStore(path), registry(), clock)
        await engine.open_store()
        try:
            async with engine.store.transaction(clock.time()) as tx:
                await TransactionSchedules(engine, tx).create(
                    "every-second", timedelta(seconds=1), "noop", catch_up=policy,
                    overlap="allow_all",
                )  # fmt: skip
            clock.advance(timedelta(days=365))
            return await timed(engine.tick_schedules)
        finally:
            await engine.store.close()


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def fmt(s: dict[str, float]) -> str:
    return f"{s['median'] * 1000:8.1f} ms  ({s['min'] * 1000:.1f}-{s['max'] * 1000:.1f})"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--count", type=int, default=10_000, help="static crons to reconcile")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    results: dict[str, Any] = {"reconcile": {}, "catch_up": {}}
    runs = [await reconcile_case(args.count) for _ in range(args.runs)]
    print(f"Boot reconciliation of {args.count:,} static crons (median of {args.runs}, min-max):")
    for label in runs[0]:
        s = summary([r[label] for r in runs])
        results["reconcile"][label] = s
        print(f"  {label:<22} {fmt(s)}")
    print("Catch-up of a 1-second interval down for a year (31,536,000 missed times):")
    for policy in ("skip", "fire_once", "fire_all"):
        s = summary([await catch_up_case(policy) for _ in range(args.runs)])
        results["catch_up"][policy] = s
        note = " (materializes the newest 1,000)" if policy == "fire_all" else ""
        print(f"  {policy:<22} {fmt(s)}{note}")
    worst = max(
        [s["median"] for s in results["reconcile"].values()]
        + [s["median"] for s in results["catch_up"].values()]
    )
    verdict = "PASS" if worst < 1.0 else "MISS"
    print(f"Aim: every case well under 1 s -> {verdict} (worst median {worst * 1000:.0f} ms)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
