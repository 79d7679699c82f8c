"""APScheduler 3: ``AsyncIOScheduler`` with its ``SQLAlchemyJobStore`` on a SQLite file.

Set up as its documentation shows, with two settings stated here:

- ``job_defaults={"misfire_grace_time": None}``: the default (1 s) would *skip* every job
  that starts more than a second late, so a burst of 10,000 due-now jobs would mostly be
  "missed", not run. With None every job runs, however late, as ours do.
- ``timezone=UTC``, so no run depends on the machine's local zone.

Two variants: ``wal=False`` is the store as configured by a URL (SQLite's defaults:
rollback journal, ``synchronous = FULL``); ``wal=True`` gives the store an engine whose
connections switch to WAL with ``synchronous = NORMAL`` -- the same settings as our store.

Jobs are ``date``-trigger jobs of a module-level coroutine (the ``AsyncIOExecutor`` runs it
on the event loop). APScheduler deletes a date job's row when it submits the run, so a job is
done when its function has run; completions are counted by an ``EVENT_JOB_EXECUTED``
listener. A run that is missed or raises fails the benchmark.
"""

from __future__ import annotations

import asyncio
import pickle
import sqlite3
import sys
import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED, EVENT_JOB_MISSED, JobEvent
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.date import DateTrigger
from sqlalchemy import create_engine, event, func, select

from bench.peers._common import Counter, Lateness, LeadTooShort, cpu_over, peak_rss_mb, rss_mb

if TYPE_CHECKING:
    from pathlib import Path

NAME = "APScheduler 3"
TABLE = "apscheduler_jobs"

_counter: Counter | None = None
_lateness: Lateness | None = None


async def noop_job() -> None:
    """The no-op job (a textual reference to it is what the job store pickles)."""


async def late_job(due: float) -> None:
    if _lateness is not None:
        _lateness.record(due)


def make_store(path: Path, wal: bool) -> SQLAlchemyJobStore:
    if not wal:
        return SQLAlchemyJobStore(url=f"sqlite:///{path}")
    engine = create_engine(f"sqlite:///{path}")

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: Any, record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA synchronous = NORMAL")
        cur.close()

    return SQLAlchemyJobStore(engine=engine)


class Failed(RuntimeError):
    pass


class Peer:
    """One scheduler on one database file, with completion counting."""

    def __init__(self, path: Path, wal: bool) -> None:
        self.store = make_store(path, wal)
        self.sched = AsyncIOScheduler(
            jobstores={"default": self.store},
            job_defaults={"misfire_grace_time": None},
            timezone=UTC,
        )
        self.counter: Counter | None = None
        self.bad: list[str] = []
        self.sched.add_listener(self._on_event, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR)
        self.sched.add_listener(self._on_missed, EVENT_JOB_MISSED)

    def _on_event(self, ev: JobEvent) -> None:
        if ev.code == EVENT_JOB_ERROR:
            self.bad.append(f"job {ev.job_id} raised {getattr(ev, 'exception', None)!r}")
        elif self.counter is not None:
            self.counter.hit()

    def _on_missed(self, ev: JobEvent) -> None:
        self.bad.append(f"job {ev.job_id} was missed")

    async def start(self) -> None:
        """``start()``, then wait for its first processing pass: ``start`` queues it with
        ``call_soon_threadsafe``, so a callback queued after it runs once it has finished."""
        self.sched.start()
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        loop.call_soon_threadsafe(ready.set_result, None)
        await ready

    async def stop(self) -> None:
        if self.sched.running:
            self.sched.shutdown(wait=False)  # queued on the loop: let it run
            for _ in range(3):
                await asyncio.sleep(0)
        self.store.engine.dispose()

    def rows(self) -> int:
        with self.store.engine.begin() as conn:
            return int(conn.execute(select(func.count()).select_from(self.store.jobs_t)).scalar())

    def check(self) -> None:
        if self.bad:
            raise Failed(f"{len(self.bad)} run(s) went wrong, e.g. {self.bad[0]}")


# --- the measurements ----------------------------------------------------------------------------


async def throughput(folder: Path, n: int, batch: int, wal: bool) -> dict[str, float]:
    """``n`` due-now no-op jobs added through ``add_job`` while the scheduler runs (each add is
    its own transaction, the API has no batch; the loop gets control after every ``batch``
    adds); timed from the first add until the ``n``-th ``EVENT_JOB_EXECUTED``."""
    path = folder / f"aps-throughput-{time.monotonic_ns()}.db"
    peer = Peer(path, wal)
    peer.counter = Counter(n)
    await peer.start()
    try:
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            now = datetime.now(UTC)
            for _ in range(min(batch, n - start)):
                peer.sched.add_job(noop_job, "date", run_date=now)
            await asyncio.sleep(0)
        t_enqueued = time.perf_counter()
        await peer.counter.done.wait()
        t_end = time.perf_counter()
        left = peer.rows()
        peer.check()
    finally:
        await peer.stop()
    if left:
        raise Failed(f"apscheduler throughput: {left} job rows left in the store")
    return {"jobs_per_s": n / (t_end - t0), "total_s": t_end - t0, "enqueue_s": t_enqueued - t0}


async def lateness(
    folder: Path, n: int, span: float, lead: float, batch: int, wal: bool
) -> list[float]:
    """``n`` date jobs due evenly over ``span`` seconds from ``lead`` seconds on, added while
    the scheduler runs; each records how late it ran."""
    global _lateness
    path = folder / f"aps-lateness-{time.monotonic_ns()}.db"
    peer = Peer(path, wal)
    rec = _lateness = Lateness(n)
    await peer.start()
    try:
        first = time.time() + lead
        step = span / n
        for start in range(0, n, batch):
            for i in range(start, min(n, start + batch)):
                due = first + i * step
                peer.sched.add_job(
                    late_job,
                    "date",
                    run_date=datetime.fromtimestamp(due, UTC),
                    kwargs={"due": due},
                )
            await asyncio.sleep(0)
        if time.time() >= first:
            raise LeadTooShort(f"adding {n} jobs took longer than the {lead} s lead")
        await asyncio.wait_for(rec.done.wait(), timeout=lead + span + 120)
        peer.check()
    finally:
        _lateness = None
        await peer.stop()
    return rec.late


async def _seed(path: Path, first: datetime) -> tuple[str, bytes]:
    """Create the table through the store and add one job through the real API (scheduler
    started paused, so nothing runs); return its id and the row APScheduler wrote."""
    peer = Peer(path, wal=False)
    peer.sched.start(paused=True)
    try:
        job = peer.sched.add_job(noop_job, "date", run_date=first)
        with peer.store.engine.begin() as conn:
            state = conn.execute(
                select(peer.store.jobs_t.c.job_state).where(peer.store.jobs_t.c.id == job.id)
            ).scalar()
    finally:
        await peer.stop()
    if not isinstance(state, bytes):
        raise RuntimeError("APScheduler stores its job state pickled")
    return job.id, state


def _state(template: dict[str, Any], job_id: str, when: datetime) -> bytes:
    state = dict(template)
    state["id"] = job_id
    state["trigger"] = DateTrigger(run_date=when, timezone=UTC)
    state["next_run_time"] = when
    return pickle.dumps(state, pickle.HIGHEST_PROTOCOL)


def _row(template: dict[str, Any], ts: float) -> tuple[str, float, bytes]:
    job_id = uuid.uuid4().hex  # what Job() gives a job added without an id
    when = datetime.fromtimestamp(ts, UTC)
    return job_id, when.timestamp(), _state(template, job_id, when)


def build(path: Path, count: int, first_ts: float, spread: float) -> None:
    """``count`` pending date jobs due from ``first_ts`` over ``spread`` seconds, in the
    store's own format: the first through ``add_job``; the rest written directly, each row's
    ``job_state`` made from that first row's unpickled state with the id, trigger and
    next run time replaced (the rest of a no-op date job's state is the same for all), pickled
    with the store's protocol. Row one, rebuilt this way, must match APScheduler's own bytes.
    All in one transaction: adding a million through ``add_job`` would take most of an hour.
    """
    first = datetime.fromtimestamp(first_ts, UTC)
    seed_id, seed_state = asyncio.run(_seed(path, first))
    # Interned keys, as in the live objects, so pickle's memo shares the same strings.
    template = {sys.intern(k): v for k, v in pickle.loads(seed_state).items()}  # noqa: S301 (APScheduler's state, made just above)
    if _state(template, seed_id, first) != seed_state:
        raise Failed("the directly built job state differs from APScheduler's own")
    step = spread / count
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            f"INSERT INTO {TABLE} (id, next_run_time, job_state) VALUES (?, ?, ?)",  # noqa: S608 (a constant)
            (_row(template, first_ts + i * step) for i in range(1, count)),
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


async def idle(path: Path, window: float, wal: bool) -> dict[str, float]:
    """CPU over ``window`` seconds with the scheduler running on a database of future jobs."""
    peer = Peer(path, wal)
    await peer.start()
    try:
        await asyncio.sleep(0.2)
        got = await cpu_over(window)
        peer.check()
    finally:
        await peer.stop()
    return got


async def startup(path: Path, wal: bool, settle: float) -> dict[str, float]:
    """From nothing (no engine, no scheduler) to the end of the first processing pass on a
    built database; then ``settle`` seconds running, for the memory readings."""
    base = rss_mb()
    t0 = time.perf_counter()
    peer = Peer(path, wal)
    await peer.start()
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
        await peer.stop()
