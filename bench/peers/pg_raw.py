"""The raw PostgreSQL limit for the same work, on this server: asyncpg on one connection,
nothing but the three statements a job queue needs, on the scheduler's own ``scheduler_jobs``
table (its migrations, its partial due index): insert, claim with ``FOR UPDATE SKIP LOCKED``
(the scheduler's own claim shape: a CTE that locks the due rows, then the UPDATE), and
complete. No handler runs, no payload row is written, no NOTIFY is sent.

``one``    each job alone: three transactions per job (insert; claim one; complete one).
``batch``  ``BATCH`` jobs per transaction: insert 100 (one ``unnest`` statement), claim up to
           100, complete those 100 (``= ANY``): three transactions per 100 jobs."""

from __future__ import annotations

import time

import asyncpg

from bench.peers._pg_common import BATCH
from scheduler.stores.postgres import PostgresStore

NAME = "raw asyncpg"

_INSERT = (
    "INSERT INTO scheduler_jobs (fn, kind, state, next_ts, max_failures, initial_backoff, "
    "backoff_base, idempotent, created_at, updated_at) "
    "SELECT 'bench_noop', 'action', 'pending', t, 1, 1.0, 2.0, 0, t, t "
    "FROM unnest($1::float8[]) AS t"
)
_CLAIM = (
    "WITH due AS (SELECT id FROM scheduler_jobs "
    " WHERE state = 'pending' AND pace_key IS NULL AND priority = 0 AND kind = 'action' "
    "   AND next_ts <= $1 ORDER BY next_ts LIMIT $2 FOR UPDATE SKIP LOCKED) "
    "UPDATE scheduler_jobs AS j SET state = 'in_progress', run_count = j.run_count + 1, "
    " lease_expires_at = $1 + 30, updated_at = $1 "
    "FROM due WHERE j.id = due.id AND j.state = 'pending' RETURNING j.id"
)
_DONE = (
    "UPDATE scheduler_jobs SET state = 'success', lease_expires_at = NULL, updated_at = $1, "
    "finished_at = $1 WHERE id = ANY($2::bigint[]) AND state = 'in_progress'"
)


async def raw(dsn: str, n: int, mode: str) -> dict[str, float]:
    store = PostgresStore(dsn, listen=False, application_name="bench-setup")
    await store.open()  # the scheduler's migrations
    await store.close()
    per = 1 if mode == "one" else BATCH
    conn = await asyncpg.connect(dsn)
    try:
        t0 = time.time()
        for start in range(0, n, per):
            k = min(per, n - start)
            now = time.time()
            async with conn.transaction():
                await conn.execute(_INSERT, [now] * k)
            async with conn.transaction():
                ids = [r[0] for r in await conn.fetch(_CLAIM, time.time(), k)]
            async with conn.transaction():
                done = await conn.execute(_DONE, time.time(), ids)
            if len(ids) != k or done != f"UPDATE {k}":
                raise RuntimeError(f"raw {mode}: claimed {len(ids)}, {done}, expected {k}")
        total = time.time() - t0
        left = await conn.fetchval("SELECT count(*) FROM scheduler_jobs WHERE state <> 'success'")
    finally:
        await conn.close()
    if left:
        raise RuntimeError(f"raw {mode}: {left} jobs not in success")
    return {"jobs_per_s": n / total, "total_s": total}
