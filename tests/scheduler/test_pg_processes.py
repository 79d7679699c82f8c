"""Cross-process wake-ups on PostgreSQL, with real processes: a job committed by one process
is dispatched by another at once, through NOTIFY, not by the other's lease sweep.

The workers run a whole scheduler whose sweep (the only periodic timer, and the backstop
that would otherwise find the job) runs once at start-up and then not for an hour, far
beyond every deadline here. So a job committed after a worker is READY can only reach it
through the NOTIFY the enqueuing commit sent: the worker's LISTEN connection hears it and
wakes its driver, which claims the job if it is due or re-arms its one timer if it is not.
The tests assert what happened (which process ran which job, how often, the database's
run counts), not how fast: latency is measured by bench/pg_bench.py, which also runs here,
tiny, end to end (with throughput for 1, 2 and 4 worker processes).

This module is also the child: ``python -m tests.scheduler.test_pg_processes MODE DSN``

``work NAME``
    Run a scheduler (sweep every hour) whose ``probe:*`` handlers print
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
import dataclasses
import itertools
import json
import sys
import time
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import JobKind
from scheduler.store_types import NewJob
from tests.support.processes import ROOT, Process, until

asyncpg = pytest.importorskip("asyncpg")

from scheduler.stores.postgres import PostgresStore  # noqa: E402  (after the importorskip)
from tests.scheduler.pg import fresh_test_database  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

SWEEP = 3600.0
"""The workers' sweep interval: after the start-up sweep, none within any deadline below."""
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
            job_id = await store.at(t).enqueue(probe_job(ACTION, t))
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
    async with fresh_test_database() as dsn:
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


async def job_rows(dsn: str) -> dict[int, tuple[str, int]]:
    """Every job's (state, run_count), once none is pending or in progress any more
    (completions are recorded a moment after the handler ran) or the deadline passed."""
    conn = await asyncpg.connect(dsn)
    try:

        async def fetch() -> dict[int, tuple[str, int]]:
            rows = await conn.fetch("SELECT id, state, run_count FROM scheduler_jobs")
            return {int(r[0]): (r[1], int(r[2])) for r in rows}

        async def finished() -> bool:
            return all(
                state not in ("pending", "in_progress") for state, _ in (await fetch()).values()
            )

        with contextlib.suppress(AssertionError):
            await until(finished, LINE_TIMEOUT, "every job to finish")
        return await fetch()
    finally:
        await conn.close()


async def test_a_job_committed_here_wakes_another_process_through_notify(
    dsn: str, children: list[Child], tmp_path: Path
) -> None:
    """Due jobs committed by a process without a driver are run by the worker, each once,
    though its sweep never runs again: the NOTIFY of each commit woke it. A job not due yet
    is woken for too (the worker re-arms its timer for it) and runs at its time, not before."""
    b = await worker(tmp_path, dsn, "b", children)
    store = PostgresStore(dsn, listen=False, application_name="probe-parent")
    await store.open()
    ids: list[int] = []
    try:
        for i in range(20):
            fn = ACTION if i % 2 == 0 else MUTATION
            t = time.time()
            job_id = await store.at(t).enqueue(probe_job(fn, t))
            ran, name, ran_id, _ = await b.line()
            assert (ran, name, int(ran_id)) == ("RAN", "b", job_id)
            ids.append(job_id)
            await asyncio.sleep(0.05)
        due = time.time() + 1.5
        job_id = await store.at(time.time()).enqueue(probe_job(ACTION, due))
        ran, name, ran_id, at = await b.line()
        assert (ran, int(ran_id)) == ("RAN", job_id)
        assert float(at) >= due  # on its time, not early
        ids.append(job_id)
    finally:
        await store.close()
    await b.stop()  # it has exited: every run it made is in its output now
    assert b.proc.returncode == 0, b.err
    await b.rest()
    assert [int(line.split()[2]) for line in b.lines if line.startswith("RAN")] == ids
    assert await job_rows(dsn) == dict.fromkeys(ids, ("success", 1))


async def test_jobs_enqueued_by_one_process_are_each_run_once_by_one_of_two_others(
    dsn: str, children: list[Child], tmp_path: Path
) -> None:
    workers = [await worker(tmp_path, dsn, name, children) for name in ("b", "c")]
    n = 40
    a = await Child.start(tmp_path, dsn, "enqueue", str(n), "0.05")
    children.append(a)
    enqueued: set[int] = set()
    for _ in range(n):
        word, job_id, _ = await a.line()
        assert word == "ENQUEUED"
        enqueued.add(int(job_id))

    # Every job finishes (by the database) within the deadline, with no sweep to find any.
    assert await job_rows(dsn) == dict.fromkeys(enqueued, ("success", 1))
    # Stop both workers cleanly: once they have exited, every run is in their output.
    runs: list[tuple[str, int]] = []
    for w in workers:
        await w.stop()
        assert w.proc.returncode == 0, w.err
        await w.rest()
        for line in w.lines[1:]:  # after READY
            ran, name, job_id, _ = line.split()
            assert ran == "RAN", line
            runs.append((name, int(job_id)))

    per_job = collections.Counter(job_id for _, job_id in runs)
    assert set(per_job) == enqueued, (sorted(per_job), sorted(enqueued))
    assert set(per_job.values()) == {1}, per_job
    print(f"\n{json.dumps(collections.Counter(name for name, _ in runs))}")


async def test_two_processes_racing_one_pace_key_never_start_two_within_its_spacing(
    dsn: str, children: list[Child], tmp_path: Path
) -> None:
    """A backlog on one pace key, due at once, raced by two worker processes (each woken by
    every commit): each job runs once, and the claims start them in due order, no two within
    the spacing, whichever process claimed them. The starts are the claims' own times, as
    the run history keeps them (the time each claim took its key's slot), not when the
    handlers began: how long a loaded machine takes from a claim to the handler is not what
    the spacing promises."""
    spacing, n = 0.5, 6
    workers = [await worker(tmp_path, dsn, name, children) for name in ("b", "c")]
    store = PostgresStore(dsn, listen=False, application_name="probe-parent")
    await store.open()
    try:
        t = time.time()
        job = dataclasses.replace(probe_job(ACTION, t), pace_key="race", pace_spacing=spacing)
        ids = [await store.at(t).enqueue(job) for _ in range(n)]
    finally:
        await store.close()
    assert await job_rows(dsn) == dict.fromkeys(ids, ("success", 1))
    ran_by: dict[int, str] = {}
    for w in workers:
        await w.stop()
        assert w.proc.returncode == 0, w.err
        await w.rest()
        for line in w.lines[1:]:  # after READY
            ran, name, job_id, _ = line.split()
            assert ran == "RAN", line
            assert int(job_id) not in ran_by, line  # once each
            ran_by[int(job_id)] = name
    assert sorted(ran_by) == ids
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT job_id, started_at FROM scheduler_runs WHERE outcome = 'success' "
            "ORDER BY started_at, job_id"
        )
    finally:
        await conn.close()
    assert [int(r["job_id"]) for r in rows] == ids  # one run each, claimed in due order
    gaps = [b["started_at"] - a["started_at"] for a, b in itertools.pairwise(rows)]
    assert min(gaps) >= spacing - 1e-6, gaps  # (1e-6: the float sums of slot and spacing)
    print(f"\n{json.dumps(collections.Counter(ran_by.values()))}")


if __name__ == "__main__":
    child_main(sys.argv[1:])
