"""A child process for the crash and multi-process tests, and the parent's helpers to drive it.

Run as ``python -m tests.scheduler.crash_worker MODE DB --migrations DIR [options]``, where
``DB`` is a SQLite file path or a ``postgresql://`` URL:

``enqueue-loop``
    Enqueue far-future jobs one after another, printing ``COMMITTED <job_id>`` after each
    commit, until killed.
``serve``
    Run a scheduler (``--lease``, ``--sweep``) until SIGTERM. ``--enqueue FN`` first enqueues
    one due job of ``FN`` (printing ``ENQUEUED <job_id>``); ``--batch N`` adds the items
    0..N-1 to one batch of ``app:batch`` of N items, full and so due at once (printing
    ``BATCHED <job_id>``); ``--hang`` makes the ``app:*`` handlers print ``IN_MUTATION
    <job_id>`` / ``IN_ACTION <job_id>`` / ``IN_BATCH <job_id>`` and then block forever, so
    that a SIGKILL lands inside the run.
``--limited N`` enqueues N jobs of ``app:act-limited`` (one at a time
    across processes: ``Concurrency("crash", 1)``) in one transaction (printing ``LIMITED
    <job_id> ...``).
``race``
    Run a scheduler on the ``race:*`` handlers until SIGTERM. ``--claim-barrier`` holds the
    first claim that brings back work: the worker prints ``CLAIMED <mutations> <actions>``
    (what it now holds a lease on) and runs nothing more until the parent writes ``GO`` on
    its stdin, so the parent can make every worker claim from the same due set while the
    others hold their claims (a race arranged by the test, not left to the OS's scheduling).

Every mode prints ``READY`` once its scheduler is running. Lines are flushed at once: the
parent acts on each line as soon as it reads it.

The application's own tables come from a migration set (:func:`write_app_migrations`), as a
real application's would, so they exist before the first job runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.support.processes import Process

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scheduler.store_types import Claim

APP_COMPONENT = "crash_app"

APP_SQL = """\
-- What the app:* handlers wrote (deliberately not unique: a second run would show).
CREATE TABLE app_rows (id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, pid INTEGER NOT NULL);
-- Runs of the app:* actions that got past their hang point.
CREATE TABLE action_runs (id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, pid INTEGER NOT NULL);
-- What on_complete callbacks received.
CREATE TABLE app_callbacks (
    id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, kind TEXT NOT NULL, error TEXT
);
-- The race: one row per job at most (a second run of a mutation would violate this).
CREATE TABLE race_runs (
    job_id INTEGER NOT NULL UNIQUE, kind TEXT NOT NULL, pid INTEGER NOT NULL
);
-- The race: every attempt of an action, counted separately from race_runs.
CREATE TABLE race_attempts (id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, pid INTEGER NOT NULL);
-- What the app:batch handler was given, one row per run that committed.
CREATE TABLE batch_runs (
    id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, items TEXT NOT NULL, pid INTEGER NOT NULL
);
"""


APP_SQL_POSTGRES = """\
-- The same tables on PostgreSQL (the race:* handlers' SQL is SQLite's, so only the crash
-- tests' tables are used here).
CREATE TABLE app_rows (id BIGSERIAL PRIMARY KEY, job_id BIGINT NOT NULL, pid INTEGER NOT NULL);
CREATE TABLE action_runs (
    id BIGSERIAL PRIMARY KEY, job_id BIGINT NOT NULL, pid INTEGER NOT NULL
);
CREATE TABLE app_callbacks (
    id BIGSERIAL PRIMARY KEY, job_id BIGINT NOT NULL, kind TEXT NOT NULL, error TEXT
);
CREATE TABLE batch_runs (
    id BIGSERIAL PRIMARY KEY, job_id BIGINT NOT NULL, items TEXT NOT NULL, pid INTEGER NOT NULL
);
"""


def write_app_migrations(root: Path) -> Path:
    """Write the test application's migration set (SQLite and PostgreSQL) under ``root`` and
    return ``root``."""
    for dialect, sql in (("sqlite", APP_SQL), ("postgres", APP_SQL_POSTGRES)):
        folder = root / dialect
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "0001_crash_app.sql").write_text(sql, "utf-8")
    return root


# --- the child ---------------------------------------------------------------------------------


def say(line: str) -> None:
    print(line, flush=True)


def build_registry(hang: bool) -> Any:
    from scheduler import Concurrency, Registry

    registry = Registry()
    pid = os.getpid()

    async def block() -> None:
        await asyncio.Event().wait()

    @registry.mutation("app:write")
    async def app_write(ctx: Any, args: Any) -> int:
        await ctx.db.execute("INSERT INTO app_rows (job_id, pid) VALUES (?, ?)", (ctx.job.id, pid))
        if hang:
            say(f"IN_MUTATION {ctx.job.id}")  # the insert above is not committed yet
            await block()
        return int(ctx.job.id)

    async def act(ctx: Any, args: Any) -> str:
        say(f"IN_ACTION {ctx.job.id}")
        if hang:
            await block()

        async def record(tx: Any, job_id: int) -> None:
            await tx.db.execute(
                "INSERT INTO action_runs (job_id, pid) VALUES (?, ?)", (job_id, pid)
            )

        await ctx.run_mutation(record, ctx.job.id)
        return "acted"

    @registry.mutation("app:batch")
    async def app_batch(ctx: Any, args: Any) -> None:
        items = json.dumps(args["items"])
        await ctx.db.execute(
            "INSERT INTO batch_runs (job_id, items, pid) VALUES (?, ?, ?)", (ctx.job.id, items, pid)
        )
        if hang:
            say(f"IN_BATCH {ctx.job.id}")  # the insert above is not committed yet
            await block()

    registry.register("app:act", act, "action")
    registry.register("app:act-idempotent", act, "action", idempotent=True)
    # One at a time, across every process (a lost run's place is freed when it is reclaimed).
    registry.register("app:act-limited", act, "action", concurrency=Concurrency("crash", 1))

    @registry.mutation("app:record")
    async def app_record(ctx: Any, args: Any) -> None:
        result = args["result"]
        await ctx.db.execute(
            "INSERT INTO app_callbacks (job_id, kind, error) VALUES (?, ?, ?)",
            (args["job_id"], result["kind"], result.get("error")),
        )

    @registry.mutation("race:m")
    async def race_m(ctx: Any, args: Any) -> None:
        await ctx.db.execute(
            "INSERT INTO race_runs (job_id, kind, pid) VALUES (?, 'mutation', ?)",
            (ctx.job.id, pid),
        )

    @registry.action("race:a")
    async def race_a(ctx: Any, args: Any) -> None:
        async def record(tx: Any, job_id: int) -> None:
            await tx.db.execute(
                "INSERT OR IGNORE INTO race_runs (job_id, kind, pid) VALUES (?, 'action', ?)",
                (job_id, pid),
            )
            await tx.db.execute(
                "INSERT INTO race_attempts (job_id, pid) VALUES (?, ?)", (job_id, pid)
            )

        await ctx.run_mutation(record, ctx.job.id)

    return registry


def held_claim_store(
    db: str, release: Callable[[], Awaitable[None]], holds: Callable[[Any], bool]
) -> Any:
    """A SQLite store whose first claim that ``holds`` (given the claimed jobs) is held: it
    prints ``CLAIMED <mutations> <actions>`` (what it now holds a lease on) and returns only
    once ``release()`` does, so the parent can make every worker claim from one due set while
    the others hold their claims."""
    from scheduler import JobKind, SqliteStore
    from scheduler.abc import OperationsAt

    held = False

    class HeldOps(OperationsAt):
        __slots__ = ()

        async def claim_due(
            self,
            lease_until: float,
            *,
            mutation_limit: int,
            action_limit: int,
            process: str | None = None,
        ) -> Claim:
            nonlocal held
            claim = await super().claim_due(
                lease_until,
                mutation_limit=mutation_limit,
                action_limit=action_limit,
                process=process,
            )
            if not held and holds(claim.jobs):
                held = True
                kinds = [j.kind for j in claim.jobs]
                say(f"CLAIMED {kinds.count(JobKind.MUTATION)} {kinds.count(JobKind.ACTION)}")
                await release()
            return claim

    class HeldStore(SqliteStore):
        def at(self, now: float) -> OperationsAt:
            return HeldOps(self, now)

    return HeldStore(db)


def claim_barrier_store(db: str) -> Any:
    """A SQLite store whose first claim that brings back work waits for ``GO`` on stdin."""

    async def go() -> None:
        line = await asyncio.to_thread(sys.stdin.readline)
        if line.strip() != "GO":
            raise SystemExit(f"expected GO on stdin, got {line!r}")

    return held_claim_store(db, go, bool)


async def child_main(opts: argparse.Namespace) -> None:
    from scheduler import MigrationSet, Scheduler
    from scheduler.cli import open_store

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    sched = Scheduler(
        claim_barrier_store(opts.db) if opts.claim_barrier else open_store(opts.db),
        build_registry(opts.hang),
        lease=opts.lease,
        sweep_interval=opts.sweep,
        shutdown_grace=1.0,
        # race: batches smaller than a third of the due work, so each of three finds some
        **({"batch_size": 64, "max_concurrency": 64} if opts.mode == "race" else {}),
        migrations=[MigrationSet(APP_COMPONENT, Path(opts.migrations))],
    )
    async with sched:
        say("READY")
        if opts.mode == "enqueue-loop":
            n = 0
            while True:
                job_id = await sched.run_after(3600, "app:write", {"n": n})
                say(f"COMMITTED {job_id}")
                n += 1
        if opts.enqueue:
            job_id = await sched.run_after(0, opts.enqueue, on_complete="app:record")
            say(f"ENQUEUED {job_id}")
        if opts.limited:
            async with sched.transaction() as ctx:  # both exist before either is claimed
                ids = [
                    await ctx.scheduler.run_after(0, "app:act-limited", on_complete="app:record")
                    for _ in range(opts.limited)
                ]
            say("LIMITED " + " ".join(map(str, ids)))
        if opts.batch:
            async with sched.transaction() as ctx:  # the batch fills (and is due) at its commit
                for n in range(opts.batch):
                    job_id = await ctx.scheduler.batch(
                        "app:batch", n, key="crash", max_items=opts.batch, max_wait=3600
                    )
            say(f"BATCHED {job_id}")
        await stop.wait()
    say("STOPPED")


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tests.scheduler.crash_worker")
    p.add_argument("mode", choices=["enqueue-loop", "serve", "race"])
    p.add_argument("db")
    p.add_argument("--migrations", required=True)
    p.add_argument("--lease", type=float, default=30.0)
    p.add_argument("--sweep", type=float, default=30.0)
    p.add_argument("--enqueue", default=None)
    p.add_argument("--hang", action="store_true")
    p.add_argument("--batch", type=int, default=0, help="add this many items to a batch")
    p.add_argument("--limited", type=int, default=0, help="enqueue this many app:act-limited jobs")
    p.add_argument("--claim-barrier", action="store_true")
    return p.parse_args(argv)


# --- the parent's side ---------------------------------------------------------------------------


class Child(Process):
    """A worker process; its stdout is read line by line, its stderr kept in a file."""

    line_timeout = 15.0
    log_name = "stderr"

    @classmethod
    async def start(
        cls, mode: str, db: Path | str, migrations: Path, *args: str, stdin: bool = False
    ) -> Child:
        """Start a child on ``db`` (a SQLite path or a PostgreSQL URL); its stderr goes to a
        file beside ``migrations``; ``stdin``: a pipe the parent writes with :meth:`send`."""
        argv = (
            "-m",
            "tests.scheduler.crash_worker",
            mode,
            str(db),
            "--migrations",
            str(migrations),
            *args,
        )
        log_path = migrations.parent / f"child-{time.monotonic_ns()}.stderr"
        return await cls.spawn(argv, log_path=log_path, label="child", stdin=stdin)

    @property
    def stderr(self) -> str:
        return self.log


def connect(db: Path) -> sqlite3.Connection:
    """A plain autocommit connection for the parent's checks (each query sees the latest commit)."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 10000")
    return conn


if __name__ == "__main__":
    asyncio.run(child_main(parse(sys.argv[1:])))
