"""Crash safety with real processes: SIGKILL a child at a chosen point, restart, look.

The child (``tests/scheduler/crash_worker.py``) prints a line at the point of interest and
the parent kills it the moment it reads that line. The parent then waits for concrete
database conditions with a deadline (``until``), never for a fixed time.

Every test runs on each store kind: a SQLite file, and a fresh PostgreSQL database when
``CRIER_TEST_POSTGRES_DSN`` is set (skipped otherwise). On PostgreSQL a SIGKILL leaves the
child's server sessions behind it: the server aborts their open transactions once it sees
the connections close, and a restarted child must recover all the same.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import JobState, MigrationSet, Scheduler, SqliteStore, Store
from tests.scheduler.crash_worker import (
    APP_COMPONENT,
    Child,
    build_registry,
    connect,
    write_app_migrations,
)
from tests.scheduler.stores import STORE_KINDS
from tests.support.processes import procs, until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

# The first child's lease: short, so the restarted child can reclaim soon after the kill.
LEASE = "0.5"
# The first child never sweeps again after its start-up sweep (it must not reclaim its own run).
NO_SWEEP = "600"
# The restarted child sweeps often.
FAST_SWEEP = "0.1"
DEADLINE = 20.0


class Db:
    """The test's own connection to the children's database, for its checks. SQL is
    written with ``?`` placeholders for both kinds."""

    def __init__(self, kind: str, target: str, conn: Any) -> None:
        self.kind = kind
        self.target = target
        """What a child is given: the SQLite file's path or the PostgreSQL URL."""
        self._conn = conn

    @classmethod
    async def open(cls, kind: str, target: str) -> Db:
        if kind == "sqlite":
            return cls(kind, target, None)  # a connection per check, opened after the children
        import asyncpg

        return cls(kind, target, await asyncpg.connect(target))

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()

    async def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        if self.kind == "sqlite":
            conn = connect(Path(self.target))
            try:
                conn.row_factory = sqlite3.Row
                return [dict(r) for r in conn.execute(sql, params).fetchall()]
            finally:
                conn.close()
        from scheduler.sql.placeholders import translate_placeholders

        return [dict(r) for r in await self._conn.fetch(translate_placeholders(sql), *params)]

    async def scalar(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        [row] = await self.rows(sql, params)
        [value] = row.values()
        return value

    async def job_row(self, job_id: int) -> dict[str, Any]:
        found = await self.rows(
            "SELECT j.state, j.attempts, j.run_count, a.error, a.result FROM scheduler_jobs j "
            "JOIN scheduler_job_args a ON a.job_id = j.id WHERE j.id = ?",
            (job_id,),
        )
        assert found, f"job {job_id} is missing"
        return found[0]

    async def job_state(self, job_id: int) -> tuple[str, int, int]:
        row = await self.job_row(job_id)
        return (row["state"], row["attempts"], row["run_count"])

    async def in_progress(self) -> int:
        return int(
            await self.scalar("SELECT count(*) FROM scheduler_jobs WHERE state = 'in_progress'")
        )

    async def count(self, table: str, where: str = "", params: tuple[Any, ...] = ()) -> int:
        return int(await self.scalar(f"SELECT count(*) FROM {table} {where}", params))

    async def check_integrity(self) -> None:
        """SQLite: the file is sound after the kills. (PostgreSQL's own WAL recovery is the
        server's business; the checks above are what the application can see.)"""
        if self.kind == "sqlite":
            assert await self.scalar("PRAGMA integrity_check") == "ok"

    def bare_store(self) -> Store:
        if self.kind == "sqlite":
            return SqliteStore(self.target)
        from scheduler.stores.postgres import PostgresStore

        return PostgresStore(self.target, listen=False)


@pytest.fixture(
    params=[
        pytest.param(kind, marks=[pytest.mark.postgres] if kind == "postgres" else [])
        for kind in STORE_KINDS
    ]
)
async def db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Db]:
    """The children's database, of each store kind."""
    if request.param == "sqlite":
        d = await Db.open("sqlite", str(tmp_path / "crash.db"))
        yield d
        return
    from tests.scheduler.pg import fresh_test_database

    async with fresh_test_database() as dsn:
        d = await Db.open("postgres", dsn)
        try:
            yield d
        finally:
            await d.close()


@pytest.fixture
def migrations(tmp_path: Path) -> Path:
    return write_app_migrations(tmp_path / "app_migrations")


@pytest.fixture
async def children() -> AsyncIterator[list[Child]]:
    """Every child a test starts; all of them are killed and reaped afterwards."""
    async with procs() as started:
        yield started


async def test_committed_enqueues_survive_kill_9(
    db: Db, migrations: Path, children: list[Child]
) -> None:
    child = await Child.start("enqueue-loop", db.target, migrations)
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

    store = db.bare_store()  # a bare store (on SQLite, recovery of the WAL happens on open)
    await store.open()
    try:
        for n, job_id in enumerate(committed):
            job = await store.at(0).get_job(job_id)
            assert job is not None, f"committed job {job_id} was lost"
            assert (job.state, job.fn, job.args) == (JobState.PENDING, "app:write", {"n": n})
    finally:
        await store.close()
    await db.check_integrity()
    # Anything past the last printed id was never acknowledged; at most the one in flight
    # when the kill landed may have committed.
    assert int(await db.scalar("SELECT max(id) FROM scheduler_jobs")) <= committed[-1] + 1


async def test_a_mutation_killed_mid_transaction_runs_again_exactly_once(
    db: Db, migrations: Path, children: list[Child]
) -> None:
    first = await Child.start(
        "serve", db.target, migrations, "--lease", LEASE, "--sweep", NO_SWEEP,
        "--hang", "--enqueue", "app:write",
    )  # fmt: skip
    children.append(first)
    job_id = int(await first.expect("IN_MUTATION"))
    first.kill()
    assert await first.proc.wait() == -9

    # The handler's insert was never committed; the claim was.
    assert await db.count("app_rows") == 0
    assert await db.job_state(job_id) == ("in_progress", 0, 1)

    second = await Child.start(
        "serve", db.target, migrations, "--lease", "1", "--sweep", FAST_SWEEP
    )
    children.append(second)
    await second.expect("READY")

    async def succeeded() -> bool:
        return (await db.job_state(job_id))[0] == "success"

    async def called_back() -> bool:
        return await db.count("app_callbacks") == 1

    await until(succeeded, DEADLINE, "the job to succeed")
    await until(called_back, DEADLINE, "its on_complete to run")
    assert await second.terminate() == 0, second.stderr

    assert await db.count("app_rows", "WHERE job_id = ?", (job_id,)) == 1
    assert await db.scalar("SELECT pid FROM app_rows") == second.proc.pid
    row = await db.job_row(job_id)
    assert (row["state"], row["attempts"], row["run_count"]) == ("success", 1, 2)
    assert json.loads(row["result"]) == job_id
    assert await db.in_progress() == 0
    await db.check_integrity()


async def test_a_batch_killed_mid_run_is_retried_whole_with_the_same_items(
    db: Db, migrations: Path, children: list[Child]
) -> None:
    """The child fills a batch of three and runs it; it is killed mid-run (the run's writes
    not committed). Another process then adds an item: the batch started, so the item goes
    to a new batch. A restarted child runs the first batch again, with its three items and
    nothing else, and the new batch with its one item: each item in exactly one committed
    run. (While a mutation runs, a SQLite file's write lock is held: the item can only be
    added once the run is gone.)"""
    first = await Child.start(
        "serve", db.target, migrations, "--lease", LEASE, "--sweep", NO_SWEEP,
        "--hang", "--batch", "3",
    )  # fmt: skip
    children.append(first)
    job_id = int(await first.expect("BATCHED"))
    assert int(await first.expect("IN_BATCH")) == job_id
    first.kill()
    assert await first.proc.wait() == -9
    assert await db.count("batch_runs") == 0  # the run's insert was never committed
    assert await db.job_state(job_id) == ("in_progress", 0, 1)

    other = Scheduler(
        db.bare_store(),
        build_registry(hang=False),
        migrations=[MigrationSet(APP_COMPONENT, migrations)],
    )
    await other.open()  # a process that writes work only
    try:
        late = await other.batch("app:batch", "late", key="crash", max_items=3, max_wait=0.5)
    finally:
        await other.close()
    assert late != job_id  # the first batch started: it takes no more items

    second = await Child.start(
        "serve", db.target, migrations, "--lease", "1", "--sweep", FAST_SWEEP
    )
    children.append(second)
    await second.expect("READY")

    async def both_done() -> bool:
        states = [(await db.job_state(j))[0] for j in (job_id, late)]
        return states == ["success", "success"]

    await until(both_done, DEADLINE, "both batches to succeed")
    assert await second.terminate() == 0, second.stderr
    runs = await db.rows("SELECT job_id, items, pid FROM batch_runs ORDER BY id")
    assert sorted((r["job_id"], json.loads(r["items"])) for r in runs) == sorted(
        [(job_id, [0, 1, 2]), (late, ["late"])]
    )
    assert {r["pid"] for r in runs} == {second.proc.pid}
    assert await db.job_state(job_id) == ("success", 1, 2)  # the lost run counted
    await db.check_integrity()


async def _kill_an_action_and_restart(
    fn: str, db: Db, migrations: Path, children: list[Child]
) -> tuple[int, Child]:
    first = await Child.start(
        "serve", db.target, migrations, "--lease", LEASE, "--sweep", NO_SWEEP,
        "--hang", "--enqueue", fn,
    )  # fmt: skip
    children.append(first)
    job_id = int(await first.expect("IN_ACTION"))
    first.kill()
    assert await first.proc.wait() == -9
    assert await db.job_state(job_id) == ("in_progress", 0, 1)
    second = await Child.start(
        "serve", db.target, migrations, "--lease", "1", "--sweep", FAST_SWEEP
    )
    children.append(second)
    await second.expect("READY")
    return job_id, second


async def test_an_action_killed_mid_run_is_failed_by_the_sweep_and_not_rerun(
    db: Db, migrations: Path, children: list[Child]
) -> None:
    job_id, second = await _kill_an_action_and_restart("app:act", db, migrations, children)

    async def called_back() -> bool:
        return await db.count("app_callbacks") == 1

    await until(called_back, DEADLINE, "the on_complete callback of the lost action")
    assert await second.terminate() == 0, second.stderr

    row = await db.job_row(job_id)
    assert (row["state"], row["attempts"], row["run_count"]) == ("failed", 1, 1)
    assert "may or may not have had its effect" in row["error"]
    [cb] = await db.rows("SELECT job_id, kind, error FROM app_callbacks")
    assert (cb["job_id"], cb["kind"], cb["error"]) == (job_id, "failed", row["error"])
    # Never run again: neither started in the second child nor recorded anywhere.
    assert not [line for line in second.lines if line.startswith("IN_ACTION")]
    assert await db.count("action_runs") == 0
    assert await db.in_progress() == 0
    await db.check_integrity()


async def test_an_idempotent_action_killed_mid_run_is_run_again_to_success(
    db: Db, migrations: Path, children: list[Child]
) -> None:
    job_id, second = await _kill_an_action_and_restart(
        "app:act-idempotent", db, migrations, children
    )

    async def called_back() -> bool:
        return await db.count("app_callbacks") == 1

    await until(called_back, DEADLINE, "the on_complete callback of the re-run action")
    assert await second.terminate() == 0, second.stderr

    row = await db.job_row(job_id)
    assert (row["state"], row["attempts"], row["run_count"]) == ("success", 1, 2), row
    assert json.loads(row["result"]) == "acted"
    [cb] = await db.rows("SELECT job_id, kind FROM app_callbacks")
    assert (cb["job_id"], cb["kind"]) == (job_id, "success")
    assert [line for line in second.lines if line.startswith("IN_ACTION")] == [
        f"IN_ACTION {job_id}"
    ]
    runs = await db.rows("SELECT job_id, pid FROM action_runs")
    assert [(r["job_id"], r["pid"]) for r in runs] == [(job_id, second.proc.pid)]
    assert await db.in_progress() == 0
    await db.check_integrity()


async def test_a_killed_holders_place_under_a_concurrency_limit_is_freed_by_its_reclaim(
    db: Db, migrations: Path, children: list[Child]
) -> None:
    """Two jobs of one key, one at a time: the first runs in a child that is killed mid-run;
    the second waits without a lease all along, and starts (in the restarted child) only
    once the lost run has been reclaimed, which frees the key's place."""
    first = await Child.start(
        "serve", db.target, migrations, "--lease", LEASE, "--sweep", NO_SWEEP,
        "--hang", "--limited", "2",
    )  # fmt: skip
    children.append(first)
    lost, behind = map(int, (await first.expect("LIMITED")).split())
    assert int(await first.expect("IN_ACTION")) == lost
    first.kill()
    assert await first.proc.wait() == -9
    assert await db.job_state(lost) == ("in_progress", 0, 1)
    [row] = await db.rows(
        "SELECT state, lease_expires_at FROM scheduler_jobs WHERE id = ?", (behind,)
    )
    assert (row["state"], row["lease_expires_at"]) == ("pending", None)

    second = await Child.start(
        "serve", db.target, migrations, "--lease", "1", "--sweep", FAST_SWEEP
    )
    children.append(second)
    await second.expect("READY")

    async def called_back() -> bool:
        return await db.count("app_callbacks") == 2

    await until(called_back, DEADLINE, "both jobs' on_complete callbacks")
    assert await second.terminate() == 0, second.stderr
    assert await db.job_state(lost) == ("failed", 1, 1)  # an action: not run again
    assert await db.job_state(behind) == ("success", 0, 1)
    rows = await db.rows("SELECT job_id, outcome, started_at, finished_at FROM scheduler_runs")
    runs = {(r["job_id"], r["outcome"]): r for r in rows}
    # The second started only after the first's run was reclaimed (its place freed).
    assert runs[(behind, "success")]["started_at"] >= runs[(lost, "lease_lost")]["finished_at"]
    assert [line for line in second.lines if line.startswith("IN_ACTION")] == [
        f"IN_ACTION {behind}"
    ]
    assert await db.in_progress() == 0
