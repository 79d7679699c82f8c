"""pgqueuer (1.x) as its documentation shows: its schema installed by ``Queries.install``, a
``QueueManager`` on an ``AsyncpgDriver`` (one connection, which also LISTENs) running in the
same process with its defaults (batches of 10, a 30 s dequeue timeout shortened to the next
deferred job's time), ``async`` entrypoints, and the application's enqueues through
``Queries`` on a connection of their own, ``BATCH`` jobs per call (lists: one statement).

A scheduled job's ``execute_after`` is an interval the server adds to ``NOW()``: it is taken
from ``NOW()`` read in the same transaction as the enqueue, so each job is due exactly when
the others' are."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import time
from typing import TYPE_CHECKING, Any

import asyncpg

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

NAME = "pgqueuer"


@contextlib.asynccontextmanager
async def running(
    dsn: str, counter: Counter | None = None, late: Lateness | None = None
) -> AsyncIterator[tuple[Any, asyncpg.Connection]]:
    """The schema installed and a queue manager running until the block ends; yields the
    application's ``Queries`` and its connection, once the manager's listener answers."""
    from pgqueuer import Queries, QueueManager
    from pgqueuer.errors import FailingListenerError

    app_conn = await asyncpg.connect(dsn)
    worker_conn = await asyncpg.connect(dsn)
    try:
        queries = Queries.from_asyncpg_connection(app_conn)
        await queries.install()
        qm = QueueManager(Queries.from_asyncpg_connection(worker_conn))

        @qm.entrypoint(ACTION)
        async def noop(job: Any) -> None:
            if counter is not None:
                counter.hit()

        @qm.entrypoint(LATE)
        async def record(job: Any) -> None:
            if late is not None:
                late.record(json.loads(job.payload)["due"])

        task = asyncio.create_task(qm.run())
        try:
            while True:
                if task.done():
                    task.result()
                try:
                    await qm.listener_healthy(timeout=dt.timedelta(seconds=0.2))
                    break
                except FailingListenerError:
                    continue
            yield queries, app_conn
        finally:
            qm.shutdown.set()
            await asyncio.wait_for(task, 60)
    finally:
        await worker_conn.close()
        await app_conn.close()


async def remaining(conn: asyncpg.Connection) -> int:
    return int(await conn.fetchval("SELECT count(*) FROM pgqueuer"))


async def successes(conn: asyncpg.Connection) -> tuple[int, float | None]:
    row = await conn.fetchrow(
        "SELECT count(*), extract(epoch FROM max(created)) FROM pgqueuer_log "
        "WHERE status = 'successful'"
    )
    return int(row[0]), (None if row[1] is None else float(row[1]))


async def has_succeeded(conn: asyncpg.Connection, n: int) -> bool:
    return (await successes(conn))[0] >= n


async def throughput(dsn: str, n: int) -> dict[str, float]:
    counter = Counter(n)
    async with running(dsn, counter) as (queries, conn):
        t0 = time.time()
        for start in range(0, n, BATCH):
            k = min(BATCH, n - start)
            await queries.enqueue([ACTION] * k, [None] * k, [0] * k)
        enqueued = time.time()
        await asyncio.wait_for(counter.done.wait(), 600)
        # Outcomes are written in batches after the entrypoints return: wait for the last.
        await until(lambda: has_succeeded(conn, n))
        done, last = await successes(conn)
        left = await remaining(conn)
    if done != n or left != 0 or counter.count != n or last is None:
        raise RuntimeError(f"pgqueuer: {done} logged, {left} left, {counter.count} calls")
    total = last - t0
    return {"jobs_per_s": n / total, "total_s": total, "enqueue_s": enqueued - t0}


async def enqueue_at(queries: Any, conn: asyncpg.Connection, names: str, dues: list[float]) -> None:
    """One call: every job of ``dues`` due at its time (see the module's note)."""
    async with conn.transaction():
        now = float(await conn.fetchval("SELECT extract(epoch FROM now())"))
        await queries.enqueue(
            [names] * len(dues),
            [json.dumps({"due": d}).encode() for d in dues],
            [0] * len(dues),
            [dt.timedelta(seconds=d - now) for d in dues],
        )


async def lateness(dsn: str, n: int, span: float, lead: float) -> list[float]:
    late = Lateness(n)
    async with running(dsn, late=late) as (queries, conn):
        dues = due_times(n, span, lead)
        for start in range(0, n, BATCH):
            await enqueue_at(queries, conn, LATE, dues[start : start + BATCH])
        check_lead(dues[0])
        await asyncio.wait_for(late.done.wait(), lead + span + 60)
        await until(lambda: has_succeeded(conn, n))
    return late.late


async def idle(dsn: str, pending: int) -> dict[str, float]:
    async with running(dsn) as (queries, _):
        after = dt.timedelta(seconds=PARKED)
        for start in range(0, pending, 1000):
            k = min(1000, pending - start)
            await queries.enqueue([ACTION] * k, [None] * k, [0] * k, [after] * k)
        return await idle_window()
