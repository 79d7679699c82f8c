"""Crash safety with real processes: SIGKILL a child at a chosen point, restart, look.

The child (``tests/scheduler/crash_worker.py``) prints a line at the point of interest and
the parent kills it the moment it reads that line. The parent then waits for concrete
database conditions with a deadline (``until``), never for a fixed time.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from scheduler import JobState, SqliteStore
from tests.scheduler.crash_worker import Child, connect, write_app_migrations
from tests.support.processes import procs, until

# The first child's lease: short, so the restarted child can reclaim soon after the kill.
LEASE = "0.5"
# The first child never sweeps again after its start-up sweep (it must not reclaim its own run).
NO_SWEEP = "600"
# The restarted child sweeps often.
FAST_SWEEP = "0.1"
DEADLINE = 20.0


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "crash.db"


@pytest.fixture
def migrations(tmp_path: Path) -> Path:
    return write_app_migrations(tmp_path / "app_migrations")


@pytest.fixture
async def children() -> AsyncIterator[list[Child]]:
    """Every child a test starts; all of them are killed and reaped afterwards."""
    async with procs() as started:
        yield started


def job_row(conn: sqlite3.Connection, job_id: int) -> sqlite3.Row:
    conn.row_factory = sqlite3.Row
    row: sqlite3.Row | None = conn.execute(
        "SELECT j.state, j.attempts, j.run_count, a.error, a.result FROM scheduler_jobs j "
        "JOIN scheduler_job_args a ON a.job_id = j.id WHERE j.id = ?",
        (job_id,),
    ).fetchone()
    assert row is not None, f"job {job_id} is missing"
    return row


def scalar(conn: sqlite3.Connection, sql: str, params: tuple[object, ...] = ()) -> Any:
    return conn.execute(sql, params).fetchone()[0]


def in_progress(conn: sqlite3.Connection) -> int:
    return int(scalar(conn, "SELECT count(*) FROM scheduler_jobs WHERE state = 'in_progress'"))


async def test_committed_enqueues_survive_kill_9(
    db: Path, migrations: Path, children: list[Child]
) -> None:
    child = await Child.start("enqueue-loop", db, migrations)
    children.append(child)
    await child.expect("READY")
    for _ in range(25):
        await child.expect("COMMITTED")
    child.kill()  # at once: the child is in the middle of its next enqueue
    rest = await child.rest()
    assert await child.proc.wait() == -9
    committed = [int(line.split()[1]) for line in child.lines if line.startswith("COMMITTED")]
    assert len(committed) >= 25
    assert all(line.startswith("COMMITTED") for line in rest), rest

    store = SqliteStore(db)  # a bare store: recovery of the WAL happens on open
    await store.open()
    try:
        for n, job_id in enumerate(committed):
            job = await store.get_job(job_id, 0)
            assert job is not None, f"committed job {job_id} was lost"
            assert (job.state, job.fn, job.args) == (JobState.PENDING, "app:write", {"n": n})
    finally:
        await store.close()
    with closing(connect(db)) as conn:
        assert scalar(conn, "PRAGMA integrity_check") == "ok"
        # Anything past the last printed id was never acknowledged; at most the one in flight
        # when the kill landed may have committed.
        assert int(scalar(conn, "SELECT max(id) FROM scheduler_jobs")) <= committed[-1] + 1


async def test_a_mutation_killed_mid_transaction_runs_again_exactly_once(
    db: Path, migrations: Path, children: list[Child]
) -> None:
    first = await Child.start(
        "serve", db, migrations, "--lease", LEASE, "--sweep", NO_SWEEP,
        "--hang", "--enqueue", "app:write",
    )  # fmt: skip
    children.append(first)
    job_id = int(await first.expect("IN_MUTATION"))
    first.kill()
    assert await first.proc.wait() == -9

    with closing(connect(db)) as conn:
        # The handler's insert was never committed; the claim was.
        assert scalar(conn, "SELECT count(*) FROM app_rows") == 0
        row = job_row(conn, job_id)
        assert (row["state"], row["attempts"], row["run_count"]) == ("in_progress", 0, 1)

        second = await Child.start("serve", db, migrations, "--lease", "1", "--sweep", FAST_SWEEP)
        children.append(second)
        await second.expect("READY")
        await until(
            lambda: job_row(conn, job_id)["state"] == "success", DEADLINE, "the job to succeed"
        )
        await until(
            lambda: scalar(conn, "SELECT count(*) FROM app_callbacks") == 1,
            DEADLINE,
            "its on_complete to run",
        )
        assert await second.terminate() == 0, second.stderr

        assert scalar(conn, "SELECT count(*) FROM app_rows WHERE job_id = ?", (job_id,)) == 1
        assert scalar(conn, "SELECT pid FROM app_rows") == second.proc.pid
        row = job_row(conn, job_id)
        assert (row["state"], row["attempts"], row["run_count"]) == ("success", 1, 2)
        assert json.loads(row["result"]) == job_id
        assert in_progress(conn) == 0
        assert scalar(conn, "PRAGMA integrity_check") == "ok"


async def _kill_an_action_and_restart(
    fn: str, db: Path, migrations: Path, children: list[Child]
) -> tuple[int, sqlite3.Connection, Child]:
    first = await Child.start(
        "serve", db, migrations, "--lease", LEASE, "--sweep", NO_SWEEP,
        "--hang", "--enqueue", fn,
    )  # fmt: skip
    children.append(first)
    job_id = int(await first.expect("IN_ACTION"))
    first.kill()
    assert await first.proc.wait() == -9
    conn = connect(db)
    row = job_row(conn, job_id)
    assert (row["state"], row["attempts"], row["run_count"]) == ("in_progress", 0, 1)
    second = await Child.start("serve", db, migrations, "--lease", "1", "--sweep", FAST_SWEEP)
    children.append(second)
    await second.expect("READY")
    return job_id, conn, second


async def test_an_action_killed_mid_run_is_failed_by_the_sweep_and_not_rerun(
    db: Path, migrations: Path, children: list[Child]
) -> None:
    job_id, conn, second = await _kill_an_action_and_restart("app:act", db, migrations, children)
    with closing(conn):
        await until(
            lambda: scalar(conn, "SELECT count(*) FROM app_callbacks") == 1,
            DEADLINE,
            "the on_complete callback of the lost action",
        )
        assert await second.terminate() == 0, second.stderr

        row = job_row(conn, job_id)
        assert (row["state"], row["attempts"], row["run_count"]) == ("failed", 1, 1)
        assert "may or may not have had its effect" in row["error"]
        cb = conn.execute("SELECT job_id, kind, error FROM app_callbacks").fetchone()
        assert tuple(cb) == (job_id, "failed", row["error"])
        # Never run again: neither started in the second child nor recorded anywhere.
        assert not [line for line in second.lines if line.startswith("IN_ACTION")]
        assert scalar(conn, "SELECT count(*) FROM action_runs") == 0
        assert in_progress(conn) == 0
        assert scalar(conn, "PRAGMA integrity_check") == "ok"


async def test_an_idempotent_action_killed_mid_run_is_run_again_to_success(
    db: Path, migrations: Path, children: list[Child]
) -> None:
    job_id, conn, second = await _kill_an_action_and_restart(
        "app:act-idempotent", db, migrations, children
    )
    with closing(conn):
        await until(
            lambda: scalar(conn, "SELECT count(*) FROM app_callbacks") == 1,
            DEADLINE,
            "the on_complete callback of the re-run action",
        )
        assert await second.terminate() == 0, second.stderr

        row = job_row(conn, job_id)
        assert (row["state"], row["attempts"], row["run_count"]) == ("success", 1, 2), tuple(row)
        assert json.loads(row["result"]) == "acted"
        assert tuple(conn.execute("SELECT job_id, kind FROM app_callbacks").fetchone()) == (
            job_id,
            "success",
        )
        assert [line for line in second.lines if line.startswith("IN_ACTION")] == [
            f"IN_ACTION {job_id}"
        ]
        runs = conn.execute("SELECT job_id, pid FROM action_runs").fetchall()
        assert [tuple(r) for r in runs] == [(job_id, second.proc.pid)]
        assert in_progress(conn) == 0
        assert scalar(conn, "PRAGMA integrity_check") == "ok"
