"""The naive design, written faithfully and minimally: one timer polls a table every N seconds.

This is the "two-layer design" of the background essay (``setInterval(checkDueTasks, N)``
over a table of what is due): a table of jobs; an asyncio loop that every ``interval``
seconds selects the due rows, and for each one atomically claims it (``UPDATE ... SET
status = 'processing' WHERE id = ? AND status = 'pending'``), runs it, and marks it done;
a sweeper puts rows stuck in ``processing`` past a timeout back to pending.

Choices, stated so the comparison can be judged:

- async over **aiosqlite** (the same driver our store uses), one connection for the poller
  and another for the application's enqueues, each ``execute`` then ``commit`` (implicit
  BEGIN), i.e. one thread hop per statement, as a straightforward implementation does;
- the same SQLite settings as our store: WAL, ``synchronous = NORMAL``, a busy timeout;
- an index on ``(status, run_at)``, so a tick is an index probe, not a table scan;
- a fixed cadence (tick k starts at ``start + k * interval``; a tick that overruns is
  followed by the next one at once, never by overlapping ones);
- jobs run one after another inside the tick (``for task of due: await runTask(task)``),
  and the sweeper runs every 30 s, like our lease sweep.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import aiosqlite

from bench.peers._common import Counter, Lateness, LeadTooShort, cpu_over, peak_rss_mb, rss_mb

if TYPE_CHECKING:
    from pathlib import Path

NAME = "naive poller"

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS naive_jobs ("
    " id INTEGER PRIMARY KEY,"
    " fn TEXT NOT NULL,"
    " args TEXT NOT NULL,"
    " run_at REAL NOT NULL,"
    " status TEXT NOT NULL DEFAULT 'pending',"
    " claimed_at REAL,"
    " done_at REAL)",
    "CREATE INDEX IF NOT EXISTS naive_jobs_due ON naive_jobs (status, run_at)",
)
_INSERT = "INSERT INTO naive_jobs (fn, args, run_at) VALUES (?, ?, ?)"
_DUE = (
    "SELECT id, fn, args FROM naive_jobs WHERE status = 'pending' AND run_at <= ? ORDER BY run_at"
)
_CLAIM = (
    "UPDATE naive_jobs SET status = 'processing', claimed_at = ? "
    "WHERE id = ? AND status = 'pending'"
)
_DONE = "UPDATE naive_jobs SET status = ?, done_at = ? WHERE id = ?"
_SWEEP = (
    "UPDATE naive_jobs SET status = 'pending', claimed_at = NULL "
    "WHERE status = 'processing' AND claimed_at < ?"
)

Handler = Callable[[Any], Awaitable[None]]


async def connect(path: Path) -> aiosqlite.Connection:
    db = await aiosqlite.connect(path)
    await db.execute("PRAGMA busy_timeout = 5000")
    await db.execute("PRAGMA journal_mode = WAL")
    await db.execute("PRAGMA synchronous = NORMAL")
    return db


class NaivePoller:
    """Every ``interval`` seconds: select due rows, claim each, run it, mark it done."""

    def __init__(
        self,
        path: Path,
        handlers: dict[str, Handler],
        interval: float,
        stale_after: float = 30.0,
        sweep_every: float = 30.0,
        on_done: Callable[[], None] | None = None,
    ) -> None:
        self.path = path
        self.handlers = handlers
        self.interval = interval
        self.stale_after = stale_after
        self.sweep_every = sweep_every
        self.on_done = on_done
        """Called after each job's done mark is committed (for the benchmark's count)."""
        self.ticks = 0
        self._db: aiosqlite.Connection | None = None
        self._task: asyncio.Task[None] | None = None
        self._last_sweep = 0.0

    async def start(self) -> None:
        """Open the database, create the table, run the first tick, start the timer."""
        self._db = await connect(self.path)
        for sql in SCHEMA:
            await self._db.execute(sql)
        await self._db.commit()
        await self._tick()
        self._task = asyncio.create_task(self._loop(), name="naive-poller")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._db is not None:
            await self._db.close()
            self._db = None

    async def _loop(self) -> None:
        next_at = time.monotonic()
        while True:
            next_at += self.interval
            delay = next_at - time.monotonic()
            if delay < 0:  # the tick overran: go again now, don't pile up missed ticks
                next_at, delay = time.monotonic(), 0.0
            await asyncio.sleep(delay)
            await self._tick()

    async def _tick(self) -> None:
        db = self._db
        if db is None:
            raise RuntimeError("the peer is started")
        self.ticks += 1
        now = time.time()
        if now - self._last_sweep >= self.sweep_every:
            self._last_sweep = now
            await db.execute(_SWEEP, (now - self.stale_after,))
            await db.commit()
        due = await db.execute_fetchall(_DUE, (now,))
        for job_id, fn, args in due:
            cur = await db.execute(_CLAIM, (time.time(), job_id))
            await db.commit()
            if cur.rowcount != 1:
                continue  # another poller got there first
            status = "done"
            try:
                await self.handlers[fn](json.loads(args))
            except Exception:
                status = "failed"
            await db.execute(_DONE, (status, time.time(), job_id))
            await db.commit()
            if self.on_done is not None:
                self.on_done()


class Client:
    """The application's side: its own connection, enqueueing ``batch`` rows per commit."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self.db = db

    @classmethod
    async def open(cls, path: Path) -> Client:
        db = await connect(path)
        for sql in SCHEMA:
            await db.execute(sql)
        await db.commit()
        return cls(db)

    async def enqueue_many(self, rows: list[tuple[str, Any, float]]) -> None:
        await self.db.executemany(_INSERT, [(fn, json.dumps(a), ts) for fn, a, ts in rows])
        await self.db.commit()

    async def states(self) -> dict[str, int]:
        rows = await self.db.execute_fetchall(
            "SELECT status, count(*) FROM naive_jobs GROUP BY status"
        )
        return {str(s): int(c) for s, c in rows}

    async def close(self) -> None:
        await self.db.close()


# --- the measurements ----------------------------------------------------------------------------


async def _noop(args: Any) -> None:
    return None


async def throughput(folder: Path, n: int, batch: int, interval: float) -> dict[str, float]:
    """``n`` due-now no-op jobs enqueued ``batch`` per commit while the poller runs; timed from
    the first enqueue until the last row is marked done."""
    counter = Counter(n)
    path = folder / f"naive-throughput-{time.monotonic_ns()}.db"
    client = await Client.open(path)
    poller = NaivePoller(path, {"noop": _noop}, interval, on_done=counter.hit)
    await poller.start()
    try:
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            now = time.time()
            await client.enqueue_many([("noop", None, now)] * min(batch, n - start))
        t_enqueued = time.perf_counter()
        await counter.done.wait()  # the n-th done mark is committed
        t_end = time.perf_counter()
        states = await client.states()
    finally:
        await poller.stop()
        await client.close()
    if states != {"done": n}:
        raise RuntimeError(f"naive throughput: expected {n} done, found {states}")
    return {"jobs_per_s": n / (t_end - t0), "total_s": t_end - t0, "enqueue_s": t_enqueued - t0}


async def lateness(
    folder: Path, n: int, span: float, lead: float, batch: int, interval: float
) -> list[float]:
    """``n`` jobs due evenly over ``span`` seconds from ``lead`` seconds on; each records how
    late it ran."""
    rec = Lateness(n)

    async def record(args: Any) -> None:
        rec.record(args["due"])

    path = folder / f"naive-lateness-{time.monotonic_ns()}.db"
    client = await Client.open(path)
    poller = NaivePoller(path, {"record": record}, interval)
    await poller.start()
    try:
        first = time.time() + lead
        step = span / n
        for start in range(0, n, batch):
            rows = []
            for i in range(start, min(n, start + batch)):
                due = first + i * step
                rows.append(("record", {"due": due}, due))
            await client.enqueue_many(rows)
        if time.time() >= first:
            raise LeadTooShort(f"enqueueing {n} jobs took longer than the {lead} s lead")
        await asyncio.wait_for(rec.done.wait(), timeout=lead + span + interval + 60)
    finally:
        await poller.stop()
        await client.close()
    return rec.late


def build(path: Path, count: int, first_ts: float, spread: float) -> None:
    """``count`` pending rows due from ``first_ts`` over ``spread`` seconds, in one
    transaction (the table is the peer's own, so direct inserts are exactly its format)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        for sql in SCHEMA:
            conn.execute(sql)
        conn.execute("BEGIN IMMEDIATE")
        step = spread / count
        conn.executemany(_INSERT, (("noop", "null", first_ts + i * step) for i in range(count)))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


async def idle(path: Path, window: float, interval: float) -> dict[str, float]:
    """CPU over ``window`` seconds with the poller running on a database of future jobs."""
    poller = NaivePoller(path, {"noop": _noop}, interval)
    await poller.start()
    try:
        await asyncio.sleep(0.2)
        ticks0 = poller.ticks
        got = await cpu_over(window)
        got["ticks"] = float(poller.ticks - ticks0)
    finally:
        await poller.stop()
    return got


async def startup(path: Path, interval: float, settle: float) -> dict[str, float]:
    """From nothing open to the first tick done (ready to dispatch), on a built database;
    then ``settle`` seconds running, for the memory readings."""
    base = rss_mb()
    poller = NaivePoller(path, {"noop": _noop}, interval)
    t0 = time.perf_counter()
    await poller.start()
    ready = time.perf_counter() - t0
    try:
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
        await poller.stop()
