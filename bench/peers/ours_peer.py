"""This scheduler, on its SQLite store with the real ``SystemClock``, through the same steps
as the other peers. The throughput and lateness runs are ``bench/scheduler_bench.py``'s own
(``throughput_run``, ``lateness_run``), so both benchmarks measure the same thing."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import TYPE_CHECKING

from bench import scheduler_bench as sb
from bench.peers._common import LeadTooShort, cpu_over, peak_rss_mb, rss_mb
from scheduler import Scheduler, SqliteStore

if TYPE_CHECKING:
    from pathlib import Path

NAME = "this scheduler"


async def throughput(folder: Path, n: int, batch: int, kind: str) -> dict[str, float]:
    """``kind`` is ``actions`` or ``mutations``; see ``scheduler_bench.throughput_run``."""
    got = await sb.throughput_run(kind, n, batch, folder)
    return {k: got[k] for k in ("jobs_per_s", "total_s", "enqueue_s")}


def raw(folder: Path, n: int) -> dict[str, float]:
    """The machine's raw SQLite limit for the same work: ``scheduler_bench.raw_sqlite_run``
    (stdlib sqlite3, WAL, synchronous=NORMAL, the scheduler_jobs schema, one transaction
    each for insert, claim and complete)."""
    return {"jobs_per_s": sb.raw_sqlite_run(n, folder)}


async def lateness(folder: Path, n: int, span: float, lead: float, batch: int) -> list[float]:
    p = SimpleNamespace(late_jobs=n, late_span=span, late_lead=lead, enqueue_batch=batch)
    try:
        return await sb.lateness_run(p, folder)  # type: ignore[arg-type]
    except sb.BenchError as exc:
        if "lead time" in str(exc):
            raise LeadTooShort(str(exc)) from exc
        raise


def build(path: Path, count: int, first_ts: float, spread: float) -> None:
    """The scheduler's own migrations, then direct inserts in its table format (half
    actions, half mutations), as ``scheduler_bench`` builds its pending jobs."""
    asyncio.run(sb.migrate(path))
    sb.build_pending(path, count, first_ts, spread)


async def idle(path: Path, window: float) -> dict[str, float]:
    async with Scheduler(SqliteStore(path), sb.noop_registry()) as sched:
        await sched.wait_idle()
        await asyncio.sleep(0.2)  # let the start-up sweep's tail settle
        passes0 = sb.driver_passes(sched)
        got = await cpu_over(window)
        passes1 = sb.driver_passes(sched)
    if passes0 is not None and passes1 is not None:
        got["passes"] = float(passes1 - passes0)
    return got


async def startup(path: Path, settle: float) -> dict[str, float]:
    """From nothing open to ``start()`` done and ``wait_idle()`` returned (store opened and
    migrations checked, start-up sweep and first dispatch pass run, the timer armed); then
    ``settle`` seconds running, for the memory readings."""
    base = rss_mb()
    t0 = time.perf_counter()
    sched = Scheduler(SqliteStore(path), sb.noop_registry())
    await sched.start()
    try:
        await sched.wait_idle()
        ready = time.perf_counter() - t0
        rss_ready = rss_mb()
        await asyncio.sleep(settle)
        return {
            "startup_s": ready,
            "rss_base_mb": base,
            "rss_ready_mb": rss_ready,
            "rss_settled_mb": rss_mb(),
            "peak_rss_mb": peak_rss_mb(),
        }
    finally:
        await sched.stop()
