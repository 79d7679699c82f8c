"""Cross-process wake-ups on PostgreSQL, with real processes: a job committed by one process
is dispatched by another at once, through NOTIFY, not by the other's lease sweep.

The workers run a whole scheduler with a 60 s sweep interval (the only periodic timer, and
the backstop that would otherwise find the job), so a dispatch within a second can only come
from the NOTIFY the enqueuing commit sent: the worker's LISTEN connection hears it and wakes
its driver, which claims the job if it is due or re-arms its one timer if it is not.
(Also here: a tiny end-to-end run of bench/pg_bench.py, which measures the same with many
samples, and throughput with 1, 2 and 4 worker processes.)

This module is also the child: ``python -m tests.scheduler.test_pg_processes MODE DSN``

``work NAME``
    Run a scheduler (sweep every 60 s) whose ``probe:*`` handlers print
    ``RAN <name> <job id> <time.time() at handler start>``; ``READY`` once it runs; stops
    cleanly when stdin closes.
``enqueue N GAP``
    Without a driver (a bare store, no LISTEN: like a web process that only schedules
    work), enqueue ``N`` due-now ``probe:action`` jobs ``GAP`` seconds apart, printing
    ``ENQUEUED <job id> <time.time() before the enqueue>`` after each commit.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from scheduler import JobKind
from scheduler._ops import NewJob
from tests.scheduler.stores import postgres_dsn
from tests.support.processes import ROOT, Process

asyncpg = pytest.importorskip("asyncpg")

from scheduler.stores.postgres import PostgresStore  # noqa: E402  (after the importorskip)
from tests.scheduler.pg import fresh_database  # noqa: E402

SWEEP = 60.0
"""The workers' sweep interval: far longer than any wait below."""
WAKE_WITHIN = 1.0
"""A dispatch later than this after the enqueue was not woken by NOTIFY."""
LINE_TIMEOUT = 20.0
ACTION = "probe:action"
MUTATION = "probe:mutation"

pytestmark = pytest.mark.postgres


# --- the child -----------------------------------------------------------------------------


def say(line: str) -> None:
    print(line, flush=True)


def probe_job(fn: str, due: float) -> NewJob:
    return NewJob(
        fn=fn,
        kind=JobKind.ACTION if fn == ACTION else JobKind.MUTATION,
        next_ts=due,
        max_failures=1,
        initial_backoff=1.0,
        backoff_base=2.0,
        idempotent=False,
        args_json="null",
    )


async def work(dsn: str, name: str) -> None:
    from scheduler import Registry, Scheduler

    registry = Registry()

    @registry.action(ACTION)
    async def action(ctx: Any, args: Any) -> None:
        say(f"RAN {name} {ctx.job.id} {time.time()!r}")

    @registry.mutation(MUTATION)
    async def mutation(ctx: Any, args: Any) -> None:
        say(f"RAN {name} {ctx.job.id} {time.time()!r}")

    sched = Scheduler(
        PostgresStore(dsn, application_name=f"probe-{name}"),
        registry,
        sweep_interval=SWEEP,
        lease=30.0,
    )
    async with sched:
        await sched.wait_idle()  # the start-up sweep and first pass are behind us
        say("READY")
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes stdin


async def enqueue(dsn: str, n: int, gap: float) -> None:
    store = PostgresStore(dsn, listen=False, application_name="probe-enqueuer")
    await store.open()
    try:
        for _ in range(n):
            t = time.time()
            job_id = await store.enqueue(probe_job(ACTION, t), t)
            say(f"ENQUEUED {job_id} {t!r}")
            await asyncio.sleep(gap)
    finally:
        await store.close()


def child_main(argv: list[str]) -> None:
    mode, dsn, *rest = argv
    if mode == "work":
        asyncio.run(work(dsn, rest[0]))
    elif mode == "enqueue":
        asyncio.run(enqueue(dsn, int(rest[0]), float(rest[1])))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


# --- the parent ------------------------------------------------------------------------------


class Child(Process):
    line_timeout = LINE_TIMEOUT
    log_name = "stderr"

    @classmethod
    async def start(cls, tmp: Path, dsn: str, mode: str, *args: str) -> Child:
        return await cls.spawn(
            ["-m", "tests.scheduler.test_pg_processes", mode, dsn, *args],
            log_path=tmp / f"{mode}-{'-'.join(args)}-{time.monotonic_ns()}.err",
            label="the child",
            cwd=ROOT,
            stdin=True,
        )

    async def line(self, within: float = LINE_TIMEOUT) -> list[str]:
        """The next line the child prints, split into words."""
        return (await self.next_line(within)).split()

    @property
    def err(self) -> str:
        return self.log

    async def stop(self) -> None:
        """Close stdin (a worker stops cleanly), then make sure the process is gone."""
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), LINE_TIMEOUT)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()


@pytest.fixture
async def dsn() -> AsyncIterator[str]:
    base = postgres_dsn()
    if base is None:
        pytest.skip(
            "PostgreSQL tests need a server: set CRIER_TEST_POSTGRES_DSN="
            "postgresql://USER@HOST:PORT/DB (.ci/run sets it for the local server)"
        )
    async with fresh_database(base) as dsn:
        yield dsn


@pytest.fixture
async def children() -> AsyncIterator[list[Child]]:
    started: list[Child] = []
    try:
        yield started
    finally:
        await asyncio.gather(*(c.stop() for c in started))


async def worker(tmp: Path, dsn: str, name: str, children: list[Child]) -> Child:
    child = await Child.start(tmp, dsn, "work", name)
    children.append(child)
    assert await child.line() == ["READY"], child.err
    return child


async def settled_states(dsn: str, n: int) -> dict[str, int]:
    """Job counts by state, once ``n`` jobs are finished (completions are recorded a moment
    after the handler runs) or the wait is over."""
    conn = await asyncpg.connect(dsn)
    try:
        deadline = time.monotonic() + LINE_TIMEOUT
        while True:
            rows = await conn.fetch("SELECT state, count(*) FROM scheduler_jobs GROUP BY state")
            states = {r[0]: int(r[1]) for r in rows}
            finished = sum(v for k, v in states.items() if k not in ("pending", "in_progress"))
            if finished >= n or time.monotonic() > deadline:
                return states
            await asyncio.sleep(0.05)
    finally:
        await conn.close()


async def test_a_job_committed_here_is_run_by_another_process_at_once(
    dsn: str, children: list[Child], tmp_path: Path
) -> None:
    b = await worker(tmp_path, dsn, "b", children)
    store = PostgresStore(dsn, listen=False, application_name="probe-parent")
    await store.open()
    lags: list[float] = []
    try:
        for i in range(20):
            fn = ACTION if i % 2 == 0 else MUTATION
            t = time.time()
            job_id = await store.enqueue(probe_job(fn, t), t)
            ran, name, ran_id, at = await b.line()
            assert (ran, name, int(ran_id)) == ("RAN", "b", job_id)
            lags.append(float(at) - t)
            await asyncio.sleep(0.05)
        # Not due yet: the NOTIFY makes b re-arm its timer for it (no sweep would find it
        # for a minute), so it runs on time.
        due = time.time() + 1.5
        job_id = await store.enqueue(probe_job(ACTION, due), time.time())
        ran, name, ran_id, at = await b.line()
        assert (ran, int(ran_id)) == ("RAN", job_id)
        assert due <= float(at) < due + WAKE_WITHIN, float(at) - due
    finally:
        await store.close()
    assert max(lags) < WAKE_WITHIN, lags
    assert await settled_states(dsn, 21) == {"success": 21}
    print(f"\nenqueue here -> handler start there: median {statistics.median(lags) * 1e3:.1f} ms, "
          f"max {max(lags) * 1e3:.1f} ms")  # fmt: skip


async def test_jobs_enqueued_by_one_process_are_each_run_once_by_one_of_two_others(
    dsn: str, children: list[Child], tmp_path: Path
) -> None:
    workers = [await worker(tmp_path, dsn, name, children) for name in ("b", "c")]
    n = 40
    a = await Child.start(tmp_path, dsn, "enqueue", str(n), "0.05")
    children.append(a)
    enqueued: dict[int, float] = {}
    for _ in range(n):
        word, job_id, t = await a.line()
        assert word == "ENQUEUED"
        enqueued[int(job_id)] = float(t)

    runs: list[tuple[str, int, float]] = []
    all_ran = asyncio.Event()

    async def collect(w: Child) -> None:
        while True:
            ran, name, job_id, at = await w.line()
            assert ran == "RAN"
            runs.append((name, int(job_id), float(at)))
            if len(runs) >= n:
                all_ran.set()

    tasks = [asyncio.create_task(collect(w)) for w in workers]
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(all_ran.wait(), LINE_TIMEOUT)
        await asyncio.sleep(0.5)  # a second run of any job would have shown by now
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    per_job = collections.Counter(job_id for _, job_id, _ in runs)
    assert set(per_job) == set(enqueued), (sorted(per_job), sorted(enqueued))
    assert set(per_job.values()) == {1}, per_job
    lags = [at - enqueued[job_id] for _, job_id, at in runs]
    assert max(lags) < WAKE_WITHIN, lags
    assert await settled_states(dsn, n) == {"success": n}
    by_worker = collections.Counter(name for name, _, _ in runs)
    print(f"\n{json.dumps(by_worker)}; median {statistics.median(lags) * 1e3:.1f} ms, "
          f"max {max(lags) * 1e3:.1f} ms")  # fmt: skip


async def test_the_postgres_benchmark_runs(tmp_path: Path) -> None:
    """bench/pg_bench.py (and scheduler_bench.py --store postgres, which hands over to it)
    end to end, tiny: the figures are not checked, only that every run ended right."""
    base = postgres_dsn()
    if base is None:
        pytest.skip("PostgreSQL tests need CRIER_TEST_POSTGRES_DSN (.ci/run sets it)")
    out = tmp_path / "pg_bench.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(ROOT / "bench" / "scheduler_bench.py"),
        "--store",
        "postgres",
        "--quick",
        "--jobs",
        "300",
        "--workers",
        "1,2",
        "--samples",
        "20",
        "--dsn",
        base,
        "--json",
        str(out),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    stdout, _ = await asyncio.wait_for(proc.communicate(), 100)
    assert proc.returncode == 0, stdout.decode()
    doc = json.loads(out.read_text("utf-8"))
    assert set(doc["throughput"]) == {"actions", "mutations"}
    assert set(doc["throughput"]["actions"]) == {"1", "2"}
    assert doc["wake"]["samples_per_run"] == 20
    assert [a["aim"] for a in doc["aims"]][-1] == "cross-process wake p99"


if __name__ == "__main__":
    child_main(sys.argv[1:])
