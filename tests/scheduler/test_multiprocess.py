"""Three processes on one SQLite file race for the same due jobs: each job runs exactly once.

The workers (``tests/scheduler/crash_worker.py race``) open a fresh file at the same moment
(racing the migrations too), then the parent enqueues every job at once, due at once. The
race is arranged, not left to the operating system's scheduling: each worker's first claim
that brings back work is held (``--claim-barrier``) until every worker has made one, so all
three claim from the same due set while the others hold leases on part of it, and each runs
mutations and actions. Every run records itself in an application table keyed UNIQUE on the
job id; a second run of a mutation would violate it (and fail the job), and every action
attempt is counted in a table of its own.

The lease (an hour) outlasts the test by far, so no lease can expire however slow the
machine is: a second run could only come from a claim that was not exclusive.
"""

from __future__ import annotations

import time
from contextlib import closing
from typing import TYPE_CHECKING

import pytest

from scheduler import JobKind, SqliteStore
from scheduler.migrations import MigrationSet
from scheduler.store_types import NewJob
from tests.scheduler.crash_worker import APP_COMPONENT, Child, connect, write_app_migrations
from tests.support.ops import enqueue_all
from tests.support.processes import procs, until

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import AsyncIterator
    from pathlib import Path

WORKERS = 3
MUTATIONS = 2000
ACTIONS = 500
DEADLINE = 180.0
"""Only stops a hung test: the work takes a few seconds on an idle machine."""


def job(fn: str, kind: JobKind, due: float) -> NewJob:
    return NewJob(
        fn=fn,
        kind=kind,
        next_ts=due,
        max_failures=4 if kind is JobKind.MUTATION else 1,
        initial_backoff=1.0,
        backoff_base=2.0,
        idempotent=False,
        args_json="null",
    )


@pytest.fixture
async def workers(tmp_path: Path) -> AsyncIterator[tuple[Path, Path, list[Child]]]:
    db = tmp_path / "race.db"
    migrations = write_app_migrations(tmp_path / "app_migrations")
    async with procs() as started:
        yield db, migrations, started


def count(conn: sqlite3.Connection, sql: str) -> int:
    return int(conn.execute(sql).fetchone()[0])


async def test_three_processes_race_for_due_work_and_each_job_runs_exactly_once(
    workers: tuple[Path, Path, list[Child]],
) -> None:
    db, migrations, children = workers
    # All three open the fresh file at once: they race the migrations as well.
    for _ in range(WORKERS):
        children.append(
            await Child.start(
                "race",
                db,
                migrations,
                "--lease",
                "3600",
                "--sweep",
                "0.1",
                "--claim-barrier",
                stdin=True,
            )
        )
    for child in children:
        await child.expect("READY")

    store = SqliteStore(db)
    await store.open([MigrationSet(APP_COMPONENT, migrations)])
    try:
        now = time.time()
        jobs = [job("race:m", JobKind.MUTATION, now) for _ in range(MUTATIONS)]
        jobs += [job("race:a", JobKind.ACTION, now) for _ in range(ACTIONS)]
        ids: list[int] = await store.at(now).run(enqueue_all(jobs))
    finally:
        await store.close()
    assert len(set(ids)) == MUTATIONS + ACTIONS

    # Each worker finds the work (its sweep wakes it every 0.1 s), claims a batch and holds it
    # until every worker has claimed one: three disjoint batches out of one due set.
    for child in children:
        mutations, actions = map(int, (await child.expect("CLAIMED", within=60)).split())
        assert mutations > 0, (mutations, actions)
        assert actions > 0, (mutations, actions)
    for child in children:
        await child.send("GO")

    with closing(connect(db)) as conn:
        await until(
            lambda: (
                count(
                    conn,
                    "SELECT count(*) FROM scheduler_jobs WHERE state IN "
                    "('success', 'failed', 'canceled')",
                )
                == MUTATIONS + ACTIONS
            ),
            DEADLINE,
            "every job to finish",
        )
        for child in children:
            assert await child.terminate() == 0, child.stderr
            assert "Traceback" not in child.stderr, child.stderr
            assert "lease sweep" not in child.stderr, child.stderr  # no lease ever expired
            assert "discarded" not in child.stderr, child.stderr  # no outcome was fenced off

        states = dict(conn.execute("SELECT state, count(*) FROM scheduler_jobs GROUP BY state"))
        assert states == {"success": MUTATIONS + ACTIONS}
        assert count(conn, "SELECT count(*) FROM scheduler_jobs WHERE run_count != 1") == 0
        assert count(conn, "SELECT count(*) FROM scheduler_jobs WHERE attempts != 0") == 0

        runs = dict(conn.execute("SELECT kind, count(*) FROM race_runs GROUP BY kind"))
        assert runs == {"mutation": MUTATIONS, "action": ACTIONS}
        assert (
            count(
                conn,
                "SELECT count(*) FROM scheduler_jobs j JOIN race_runs r ON r.job_id = j.id "
                "WHERE (j.fn = 'race:m') = (r.kind = 'mutation')",
            )
            == MUTATIONS + ACTIONS
        )
        # Actions: every attempt counted, no job attempted twice.
        assert count(conn, "SELECT count(*) FROM race_attempts") == ACTIONS
        assert count(conn, "SELECT count(DISTINCT job_id) FROM race_attempts") == ACTIONS

        by_pid = dict(conn.execute("SELECT pid, count(*) FROM race_runs GROUP BY pid"))
        pids = {child.proc.pid for child in children}
        assert set(by_pid) == pids, f"not every worker ran work: {by_pid}"
        for kind in ("mutation", "action"):
            ran = {
                pid
                for (pid,) in conn.execute(
                    "SELECT DISTINCT pid FROM race_runs WHERE kind = ?", (kind,)
                )
            }
            assert ran == pids, f"not every worker ran a {kind}: {ran}"

        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        print(f"runs per worker: {sorted(by_pid.values())}")
