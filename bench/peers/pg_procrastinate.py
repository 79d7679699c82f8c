"""procrastinate (3.x) as its documentation shows: an ``App`` on a ``PsycopgConnector``, its
schema applied by its schema manager, ``async`` tasks, a worker run in the same process by
``run_worker_async`` (LISTEN/NOTIFY on, its polling interval at the default 5 s). Jobs are
deferred ``BATCH`` per call: ``batch_defer_async`` (one statement) where they share their
options; scheduled jobs, each with its own ``schedule_at``, through the job manager's
``batch_defer_jobs_async``, the call ``batch_defer_async`` makes, given the jobs.

Its worker runs ``concurrency`` jobs at once (1 by default; set here, see
``bench/pg_compare.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import time
from typing import TYPE_CHECKING, Any

from bench.peers._common import Counter, Lateness
from bench.peers._pg_common import (
    ACTION,
    BATCH,
    LATE,
    PARKED,
    check_lead,
    due_times,
    idle_window,
    until,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

NAME = "procrastinate"


def make_app(dsn: str, counter: Counter | None = None, late: Lateness | None = None) -> Any:
    from procrastinate import App, PsycopgConnector

    app = App(connector=PsycopgConnector(conninfo=dsn))

    @app.task(name=ACTION)
    async def noop() -> None:
        if counter is not None:
            counter.hit()

    @app.task(name=LATE)
    async def record(due: float) -> None:
        if late is not None:
            late.record(due)

    return app


async def fetch(app: Any, sql: str) -> list[tuple[Any, ...]]:
    async with app.connector.pool.connection() as conn, conn.cursor() as cur:
        await cur.execute(sql)
        return list(await cur.fetchall())


@contextlib.asynccontextmanager
async def running(app: Any, concurrency: int) -> AsyncIterator[None]:
    """The app open with its schema, and a worker running until the block ends; entered once
    the worker has registered itself (its listener is started before that)."""
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        worker = asyncio.create_task(
            app.run_worker_async(concurrency=concurrency, install_signal_handlers=False)
        )
        try:
            while not (await fetch(app, "SELECT count(*) FROM procrastinate_workers"))[0][0]:
                if worker.done():
                    worker.result()
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)  # its listener and first fetch: started just after
            yield
        finally:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker


async def statuses(app: Any) -> dict[str, int]:
    rows = await fetch(app, "SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY 1")
    return {str(r[0]): int(r[1]) for r in rows}


async def has_succeeded(app: Any, n: int) -> bool:
    return (await statuses(app)).get("succeeded", 0) >= n


async def throughput(dsn: str, n: int, concurrency: int) -> dict[str, float]:
    counter = Counter(n)
    app = make_app(dsn, counter)
    task = app.tasks[ACTION]
    async with running(app, concurrency):
        t0 = time.time()
        for start in range(0, n, BATCH):
            await task.batch_defer_async(*({} for _ in range(min(BATCH, n - start))))
        enqueued = time.time()
        await asyncio.wait_for(counter.done.wait(), 600)
        # The worker records each outcome after the task returns: wait for the last one.
        await until(lambda: has_succeeded(app, n))
        last = (
            await fetch(
                app,
                "SELECT extract(epoch FROM max(at)) FROM procrastinate_events "
                "WHERE type = 'succeeded'",
            )
        )[0][0]
        got = await statuses(app)
    if got != {"succeeded": n} or counter.count != n:
        raise RuntimeError(f"procrastinate: statuses {got}, {counter.count} handler calls")
    total = float(last) - t0
    return {"jobs_per_s": n / total, "total_s": total, "enqueue_s": enqueued - t0}


async def lateness(dsn: str, n: int, span: float, lead: float, concurrency: int) -> list[float]:
    late = Lateness(n)
    app = make_app(dsn, late=late)
    task = app.tasks[LATE]
    async with running(app, concurrency):
        dues = due_times(n, span, lead)
        for start in range(0, n, BATCH):
            # What batch_defer_async does (one statement for the batch), each job with its
            # own schedule_at: the job manager's batch call, given the jobs themselves.
            jobs = [
                task.configure(schedule_at=dt.datetime.fromtimestamp(d, dt.UTC)).make_new_job(due=d)
                for d in dues[start : start + BATCH]
            ]
            await app.job_manager.batch_defer_jobs_async(jobs=jobs)
        check_lead(dues[0])
        await asyncio.wait_for(late.done.wait(), lead + span + 60)
        await until(lambda: has_succeeded(app, n))
    return late.late


async def idle(dsn: str, pending: int, concurrency: int) -> dict[str, float]:
    app = make_app(dsn)
    task = app.tasks[ACTION]
    async with running(app, concurrency):
        when = dt.datetime.fromtimestamp(time.time() + PARKED, dt.UTC)
        deferrer = task.configure(schedule_at=when)
        for start in range(0, pending, 1000):
            await deferrer.batch_defer_async(*({} for _ in range(min(1000, pending - start))))
        return await idle_window()
