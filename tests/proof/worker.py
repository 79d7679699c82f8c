"""The processes under test of the proof suites, and the application they run.

Run as ``python -m tests.proof.worker MODE --migrations DIR [options]``:

``crier``
    The bot exactly as ``python -m bot`` builds it (settings from the environment, the same
    :class:`bot.app.Crier`: real discord.py client, the scheduler, announcement delivery),
    plus an application's own jobs in the same process and the same database: the
    ``proof:*`` handlers below, the app tables (a migration set of their own) and two static
    1-second interval crons. So one SIGKILL lands on announcement deliveries, mutations,
    actions and schedule ticks alike, all contending for the one SQLite writer. Prints
    ``READY`` once the bot is connected (its scheduler runs from before the login).
``race``
    A plain :class:`scheduler.Scheduler` (no bot) on ``--db`` with the ``proof:*`` handlers
    and static crons, for the multi-process races. Prints ``READY``, then waits for
    ``GO <due_ts>`` on stdin: it then enqueues ``--keyed`` mutations and ``--keyed-actions``
    actions under fixed idempotency keys, due at ``due_ts`` (every racer enqueues the same
    keys at once: one job per key must come out), and tries to create the runtime schedules
    (every racer tries; one must win), printing ``CREATED <name>`` or ``EXISTS <name>``.
    ``--claim-barrier``: the first claim that brings back keyed jobs prints ``CLAIMED <m> <a>``
    and is held until ``RELEASE`` comes on stdin (the parent makes the racers race).

Every handler records what it did in an app table keyed UNIQUE on what must happen once,
with the pid of the process that ran it, so a second run is either refused by the database
(a mutation: the job fails) or visible (an action's attempts are counted separately).

A ``proof:mutate``, ``proof:act`` or ``proof:act-idem`` job whose args carry ``"hold": S``
prints ``HOLDING <job id>`` on its first run and then waits ``S`` seconds where its ``work``
would be (a mutation inside its transaction, after its insert; an action before its effect),
so the parent can kill the process while that job is surely in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

APP_COMPONENT = "proof_app"

APP_SQL = """\
-- proof:mutate: one row per job, and one per seeded number.
CREATE TABLE proof_mutations (
    n INTEGER NOT NULL UNIQUE, job_id INTEGER NOT NULL UNIQUE, pid INTEGER NOT NULL
);
-- proof:act (at most once): its effect, written by ctx.run_mutation.
CREATE TABLE proof_actions (job_id INTEGER NOT NULL UNIQUE, pid INTEGER NOT NULL);
-- proof:act-idem (re-run after a crash): its effect once, and every run that got that far.
CREATE TABLE proof_idem (job_id INTEGER NOT NULL UNIQUE, pid INTEGER NOT NULL);
CREATE TABLE proof_idem_runs (
    id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, pid INTEGER NOT NULL
);
-- proof:tick / proof:tick-act: one row per (schedule, fire time).
CREATE TABLE proof_ticks (
    schedule TEXT NOT NULL, fire_ts REAL NOT NULL, job_id INTEGER NOT NULL UNIQUE,
    pid INTEGER NOT NULL, UNIQUE (schedule, fire_ts)
);
"""

# Static crons every process registers (the crash loop's and the races').
TICK_ALL = "proof-every-1s-fire-all"
"""1 s interval, catch_up=fire_all, overlap=allow_all, a mutation: every fire time runs once."""
TICK_SKIP = "proof-every-1s-skip"
"""1 s interval, catch_up=skip, overlap=skip, an action (at most once): every fire time is
run, or counted as skipped (previous run still going) or missed."""
RACE_FAST = "race-static-250ms"
RACE_ACT = "race-static-500ms-action"
RACE_MINUTE = "race-static-every-minute"
RUNTIME_SCHEDULES = ("race-runtime-300ms", "race-runtime-every-minute-london")
IDEM_RETRY = 120
"""The retry budget of the proof:act-idem and proof:mutate jobs the crash loop enqueues, and
of the proof:tick occurrences. A kill during a run costs it one attempt (by contract), and
a crash loop whose kills keep landing in the same phase of each life can interrupt one job
every time; a budget larger than the loop's kills (at most 50, plus the lease losses of
one run) means the kills alone can never spend it."""


def write_app_migrations(root: Path) -> Path:
    """Write the proof application's migration set under ``root`` and return ``root``."""
    folder = root / "sqlite"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "0001_proof_app.sql").write_text(APP_SQL, "utf-8")
    return root


def say(line: str) -> None:
    print(line, flush=True)


async def _work(ctx: Any, args: Any) -> None:
    """The job's simulated work; on the first run of a job told to hold, announce it and
    hold (the parent kills the process meanwhile)."""
    hold = float(args.get("hold", 0.0))
    if hold and ctx.job.run_count == 1:
        say(f"HOLDING {ctx.job.id}")
        await asyncio.sleep(hold)
    await asyncio.sleep(float(args.get("work", 0.0)))


def register_workload(registry: Any) -> None:
    """The application's handlers (``proof:*``)."""
    from scheduler import Retry

    pid = os.getpid()

    @registry.mutation("proof:mutate")
    async def mutate(ctx: Any, args: Any) -> int:
        await ctx.db.execute(
            "INSERT INTO proof_mutations (n, job_id, pid) VALUES (?, ?, ?)",
            (int(args["n"]), ctx.job.id, pid),
        )
        # Work inside the transaction (holding the writer): a kill may land before the commit.
        await _work(ctx, args)
        return int(args["n"])

    @registry.action("proof:act")
    async def act(ctx: Any, args: Any) -> str:
        async def record(tx: Any, job_id: int) -> None:
            await tx.db.execute(
                "INSERT INTO proof_actions (job_id, pid) VALUES (?, ?)", (job_id, pid)
            )

        await _work(ctx, args)  # "external I/O" before the effect
        await ctx.run_mutation(record, ctx.job.id)
        return "acted"

    @registry.action("proof:act-idem", idempotent=True)
    async def act_idem(ctx: Any, args: Any) -> str:
        async def record(tx: Any, job_id: int) -> None:
            await tx.db.execute(
                "INSERT OR IGNORE INTO proof_idem (job_id, pid) VALUES (?, ?)", (job_id, pid)
            )
            await tx.db.execute(
                "INSERT INTO proof_idem_runs (job_id, pid) VALUES (?, ?)", (job_id, pid)
            )

        await _work(ctx, args)
        await ctx.run_mutation(record, ctx.job.id)
        return "acted"

    # A kill during a batch of mutations costs every job claimed in it an attempt (by
    # contract), so the ticks get the same large budget as the enqueued mutations: the
    # default (4) can be spent by four kills, dead-lettering that fire time.
    @registry.mutation("proof:tick", retry=Retry(max_failures=IDEM_RETRY))
    async def tick(ctx: Any, args: Any) -> None:
        await ctx.db.execute(
            "INSERT INTO proof_ticks (schedule, fire_ts, job_id, pid) VALUES (?, ?, ?, ?)",
            (ctx.job.schedule_name, ctx.job.fire_ts, ctx.job.id, pid),
        )

    @registry.action("proof:tick-act")
    async def tick_act(ctx: Any, args: Any) -> None:
        name, fire_ts, job_id = ctx.job.schedule_name, ctx.job.fire_ts, ctx.job.id

        async def record(tx: Any, _: Any) -> None:
            await tx.db.execute(
                "INSERT INTO proof_ticks (schedule, fire_ts, job_id, pid) VALUES (?, ?, ?, ?)",
                (name, fire_ts, job_id, pid),
            )

        await ctx.run_mutation(record, None)


def crash_loop_crons() -> Any:
    from scheduler import cron_jobs

    crons = cron_jobs()
    second = timedelta(seconds=1)
    crons.interval(TICK_ALL, second, "proof:tick", catch_up="fire_all", overlap="allow_all")
    crons.interval(TICK_SKIP, second, "proof:tick-act", catch_up="skip", overlap="skip")
    return crons


def race_crons() -> Any:
    from scheduler import cron_jobs

    crons = cron_jobs()
    crons.interval(
        RACE_FAST, timedelta(milliseconds=250), "proof:tick",
        catch_up="fire_all", overlap="allow_all",
    )  # fmt: skip
    crons.interval(
        RACE_ACT, timedelta(milliseconds=500), "proof:tick-act",
        catch_up="fire_all", overlap="allow_all",
    )  # fmt: skip
    crons.cron(RACE_MINUTE, "* * * * *", "proof:tick", catch_up="fire_all", overlap="allow_all")
    return crons


# --- mode: crier --------------------------------------------------------------------------------


async def crier_main(opts: argparse.Namespace) -> int:
    from bot.app import Crier, setup_logging
    from bot.config import load_settings
    from scheduler import MigrationSet

    settings = load_settings()
    setup_logging(settings)
    # The same Crier `python -m bot` runs; the application adds its handlers, tables and
    # crons to the bot's scheduler before it starts (as an app embedding the bot would).
    crier = Crier(settings, guild_ready_timeout=0.05)
    register_workload(crier.registry)
    sched = crier.sched
    sched.crons = crash_loop_crons()
    sched.migrations = (*sched.migrations, MigrationSet(APP_COMPONENT, Path(opts.migrations)))
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await crier.start()
    say("READY")
    runner = asyncio.ensure_future(crier.wait())
    waiter = asyncio.ensure_future(stop.wait())
    await asyncio.wait({runner, waiter}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    await crier.close()
    runner.cancel()
    with contextlib.suppress(BaseException):
        await runner
    say("STOPPED")
    return 0


# --- mode: race ---------------------------------------------------------------------------------


async def race_main(opts: argparse.Namespace) -> int:
    from scheduler import DuplicateName, MigrationSet, Registry, Retry, Scheduler, SqliteStore

    registry = Registry()
    register_workload(registry)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    go: asyncio.Queue[list[str]] = asyncio.Queue()
    released = asyncio.Event()

    async def read_lines() -> None:
        """``RELEASE`` lets a held claim go on; every other line is the main flow's."""
        while raw := await reader.readline():
            words = raw.decode().split()
            if words == ["RELEASE"]:
                released.set()
            else:
                await go.put(words)
        await go.put([])

    lines = asyncio.create_task(read_lines())
    store: Any = SqliteStore(opts.db)
    if opts.claim_barrier:
        from tests.scheduler.crash_worker import held_claim_store

        def keyed(jobs: list[Any]) -> bool:
            return any(j.fn in ("proof:mutate", "proof:act") for j in jobs)

        store = held_claim_store(opts.db, released.wait, keyed)
    sched = Scheduler(
        store,
        registry,
        crons=race_crons(),
        lease=opts.lease,
        sweep_interval=opts.sweep,
        shutdown_grace=5.0,
        # batches smaller than a racer's share of the due work, so each finds some of both
        # kinds (the scheduler's default, 256, would let the first take every mutation)
        batch_size=64,
        max_concurrency=64,
        migrations=[MigrationSet(APP_COMPONENT, Path(opts.migrations))],
    )
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    async with sched:
        say("READY")
        line = await go.get()
        if line[:1] != ["GO"]:
            return 2
        due = float(line[1])
        # Every racer enqueues the same keys at the same moment.
        async with sched.transaction() as ctx:
            for n in range(opts.keyed):
                await ctx.scheduler.enqueue(
                    "proof:mutate", {"n": n}, run_at=due, idempotency_key=f"seed:m:{n}",
                    retry=Retry(max_failures=1),
                )  # fmt: skip
            for n in range(opts.keyed_actions):
                await ctx.scheduler.enqueue(
                    "proof:act", {"n": n}, run_at=due, idempotency_key=f"seed:a:{n}"
                )
        fast, minute = RUNTIME_SCHEDULES
        for name, spec, tz in (
            (fast, timedelta(milliseconds=300), None),
            (minute, "* * * * *", "Europe/London"),
        ):
            try:
                await sched.schedules.create(
                    name, spec, "proof:tick", tz=tz, catch_up="fire_all", overlap="allow_all"
                )
                say(f"CREATED {name}")
            except DuplicateName:
                say(f"EXISTS {name}")
        await stop.wait()
    lines.cancel()
    say("STOPPED")
    return 0


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tests.proof.worker")
    p.add_argument("mode", choices=["crier", "race"])
    p.add_argument("--migrations", required=True)
    p.add_argument("--db", default=None)
    p.add_argument("--lease", type=float, default=30.0)
    p.add_argument("--sweep", type=float, default=30.0)
    p.add_argument("--keyed", type=int, default=0)
    p.add_argument("--keyed-actions", type=int, default=0)
    p.add_argument("--claim-barrier", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    opts = parse(argv)
    if opts.mode == "crier":
        return asyncio.run(crier_main(opts))
    return asyncio.run(race_main(opts))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
