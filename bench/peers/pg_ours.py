"""This scheduler on its PostgreSQL store (library defaults: a pool of up to 10 connections,
LISTEN/NOTIFY wake-ups, batches of 64, 64 actions at once), with the real ``SystemClock``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.peers._common import Counter, Lateness, peak_rss_mb, rss_mb
from bench.peers._pg_common import ACTION, BATCH, LATE, PARKED, check_lead, due_times, idle_window
from scheduler import JobRequest, Registry, Scheduler
from scheduler.stores.postgres import PostgresStore

NAME = "this scheduler (PostgreSQL)"


def registry(counter: Counter | None = None, late: Lateness | None = None) -> Registry:
    reg = Registry()

    @reg.action(ACTION)
    async def noop(ctx: Any, args: Any) -> None:
        if counter is not None:
            counter.hit()

    @reg.action(LATE)
    async def record(ctx: Any, args: Any) -> None:
        if late is not None:
            late.record(args["due"])

    return reg


def scheduler(dsn: str, reg: Registry) -> Scheduler:
    return Scheduler(PostgresStore(dsn, application_name="bench-ours"), reg)


async def states(sched: Scheduler) -> dict[str, int]:
    async with sched.reader() as db:
        cur = await db.execute("SELECT state, count(*) FROM scheduler_jobs GROUP BY state")
        return {str(r[0]): int(r[1]) for r in await cur.fetchall()}


async def throughput(dsn: str, n: int) -> dict[str, float]:
    """``n`` due-now no-op actions enqueued ``BATCH`` per call (``enqueue_many``, one
    transaction each) while the scheduler runs; from the first enqueue to the last
    ``finished_at`` the scheduler wrote."""
    counter = Counter(n)
    async with scheduler(dsn, registry(counter)) as sched:
        await sched.wait_idle()
        t0 = time.time()
        for start in range(0, n, BATCH):
            await sched.enqueue_many([JobRequest(ACTION) for _ in range(min(BATCH, n - start))])
        enqueued = time.time()
        await asyncio.wait_for(counter.done.wait(), 600)
        await sched.wait_idle()
        async with sched.reader() as db:
            cur = await db.execute("SELECT max(finished_at) FROM scheduler_jobs")
            last = float((await cur.fetchone())[0])
        got = await states(sched)
    if got != {"success": n} or counter.count != n:
        raise RuntimeError(f"ours: states {got}, {counter.count} handler calls of {n}")
    return {"jobs_per_s": n / (last - t0), "total_s": last - t0, "enqueue_s": enqueued - t0}


async def lateness(dsn: str, n: int, span: float, lead: float) -> list[float]:
    late = Lateness(n)
    async with scheduler(dsn, registry(late=late)) as sched:
        await sched.wait_idle()
        dues = due_times(n, span, lead)
        for start in range(0, n, BATCH):
            await sched.enqueue_many(
                [JobRequest(LATE, {"due": d}, run_at=d) for d in dues[start : start + BATCH]]
            )
        check_lead(dues[0])
        await asyncio.wait_for(late.done.wait(), lead + span + 60)
        await sched.wait_idle()
        got = await states(sched)
    if got != {"success": n}:
        raise RuntimeError(f"ours lateness: states {got}")
    return late.late


async def idle(dsn: str, pending: int) -> dict[str, float]:
    async with scheduler(dsn, registry()) as sched:
        await sched.wait_idle()
        at = time.time() + PARKED
        for start in range(0, pending, 1000):
            await sched.enqueue_many(
                [
                    JobRequest(ACTION, run_at=at + i)
                    for i in range(start, min(pending, start + 1000))
                ]
            )
        await sched.wait_idle()
        return await idle_window()


async def startup(dsn: str, settle: float) -> dict[str, float]:
    """From nothing open to started and idle (pool opened, migrations checked, the start-up
    sweep and the first dispatch pass run), then ``settle`` seconds running; memory."""
    base = rss_mb()
    t0 = time.perf_counter()
    sched = scheduler(dsn, registry())
    await sched.start()
    try:
        await sched.wait_idle()
        ready = time.perf_counter() - t0
        await asyncio.sleep(settle)
        return {
            "startup_s": ready,
            "rss_base_mb": base,
            "rss_settled_mb": rss_mb(),
            "peak_rss_mb": peak_rss_mb(),
        }
    finally:
        await sched.stop()
