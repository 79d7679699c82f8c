"""Crash loop: the bot with an application's jobs, SIGKILLed at random moments and restarted.

The process under test is ``tests.proof.worker crier``: the same :class:`bot.app.Crier` that
``python -m bot`` runs (real discord.py client against the fake Discord, the scheduler,
announcement delivery), with an application's handlers, tables and static crons added to
its scheduler. One process, one SQLite writer: a kill lands on deliveries, mutations,
actions and schedule ticks alike. (``python -m bot`` itself is killed mid-delivery in
``tests/bot/test_crash_bot.py``, and raced in ``test_races.py``.)

Each cycle the parent enqueues a wave of jobs due over the next ~2.5 s, starts the worker,
and kills it with SIGKILL either during start-up (about one cycle in six, at a random moment
after spawning: migrations, cron reconciliation, login) or 50–400 ms after it is ready, with
``/schedule`` commands sent to it through the fake Discord just before. Leases are 1 s and
the sweep runs every 0.2 s, so a restarted process recovers the killed one's work quickly.
The RNG is seeded (``CRIER_PROOF_SEED`` to replay; the seed is printed).

Random kill points land on work in flight only by chance, so some cycles (cycle 2, then
every TARGET_STRIDE-th, in CI too) choose theirs: the kill lands while a job of one kind is
surely running, in turn a mutation inside its transaction, an action before its effect, an
idempotent action before its effect, and a delivery whose message Discord created but whose
answer it holds back. Each such job must then end exactly as the contract says (below), and
every kind of "kill landed on work in flight" must have happened at least once.

The workload and what must hold afterwards (checked on the database file and the fake):

* ``proof:mutate`` mutations, each inserting one row keyed UNIQUE by its job and by its
  number: every one succeeded, rows == jobs, no duplicates. A kill during a mutation rolls it
  back and costs it one attempt (the contract); the budget (20) is more than the kills.
* ``proof:act`` actions (at most once): each either succeeded with exactly one effect row,
  or was failed by the lease sweep ("may or may not have had its effect") with zero or one;
  never run twice (run_count == 1).
* ``proof:act-idem`` idempotent actions: each succeeded with exactly one effect row
  (re-runs after a crash are allowed, and counted).
* static crons, 1 s intervals: ``fire_all``/``allow_all`` (a mutation) has exactly one run
  per fire time from its first to its last, without a gap, and nothing missed or skipped;
  ``skip``/``skip`` (an action) accounts for every fire time: run (at most once), skipped
  (previous run still held by a killed process's lease), or missed — and a time may be
  missed only if it fell while no process was up.
* announcements through ``/schedule`` (one-offs due 2–4 s later, spread over channels, and
  a recurring one): every one-off is posted exactly once, verbatim, with its deterministic
  nonce. The bot may instead mark one failed ("may not have been delivered", or missed) only
  when a retry comes later than NONCE_WINDOW_SECONDS after the first attempt, or the job is
  found later than CATCH_UP_WINDOW_MINUTES: this loop is far shorter than both windows, so
  here every one-off must be posted. No occurrence produces two messages. Every ``/schedule``
  the bot acknowledged is in the database.
* the targeted kills: the held mutation was rolled back and re-run by another process
  (attempts >= 1, its row written by the re-run); the held action failed by the lease sweep
  with no effect and was never re-run; the held idempotent action re-ran elsewhere to one
  effect; the held delivery was re-sent with the same nonce (attempts >= 2), Discord
  absorbed it, and the channel has the one message.
* nothing is left ``in_progress`` or due-but-pending; ``PRAGMA integrity_check`` is ok.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest

from bot.models import INTERRUPTED_AND_STOPPED
from bot.posting.delivery import nonce_for
from scheduler import JobKind, MigrationSet, SqliteStore
from scheduler.store_types import NewJob
from tests.fakediscord import FakeDiscord, Guild, InteractionHandle, Member
from tests.fakediscord import Permissions as P
from tests.fakediscord.state import Channel
from tests.proof.conftest import FULL, size
from tests.proof.harness import Proc, child_env, procs, rows, scalar, until
from tests.proof.worker import APP_COMPONENT, IDEM_RETRY, TICK_ALL, TICK_SKIP, write_app_migrations
from tests.support.ops import enqueue_all

if TYPE_CHECKING:
    from pathlib import Path

KILLS = size(10, 50)
MUTATIONS_PER_WAVE = size(30, 40)
ACTIONS_PER_WAVE = 4
IDEM_PER_WAVE = 4
ANNOUNCEMENTS_PER_CYCLE = size(6, 8)
CHANNELS = 8
EARLY_KILL_RATE = 1 / 6
LEASE = "1"
SWEEP = "0.2"
SETTLE_DEADLINE = 90.0
LEASE_LOST = "may or may not have had its effect"
TARGETS = ("mutation", "action", "idempotent action", "delivery")
TARGET_STRIDE = size(2, 5)
"""Cycles 2, 2 + stride, ... kill while a job of the next kind in TARGETS is in flight."""
TARGET_DEADLINE = 20.0
HELD = 120.0
"""How long a targeted job holds (or Discord holds its answer): longer than the test."""

pytestmark = [pytest.mark.slow, pytest.mark.timeout(size(120, 600))]


@dataclass
class Sent:
    """One /schedule the parent sent, and what it asked for."""

    handle: InteractionHandle
    message: str
    channel: Channel
    when: int


@dataclass
class Run:
    """What the loop did: for the report and for the checks."""

    seed: int
    kills: int = 0
    early_kills: int = 0
    windows: list[list[float]] = field(default_factory=list)
    """[kill time, next ready time] per kill: when no process was up (or still starting)."""
    sent: list[Sent] = field(default_factory=list)
    recurring: list[Sent] = field(default_factory=list)
    jobs: int = 0
    targeted: list[tuple[str, int, int]] = field(default_factory=list)
    """(kind, job id or announcement number, pid of the process killed under it)."""


def new_job(fn: str, kind: JobKind, due: float, args: Any, idempotent: bool = False) -> NewJob:
    return NewJob(
        fn=fn,
        kind=kind,
        next_ts=due,
        max_failures=IDEM_RETRY if kind is JobKind.MUTATION or idempotent else 1,
        initial_backoff=0.1,
        backoff_base=2.0,
        idempotent=idempotent,
        args_json=json.dumps(args),
    )


class Loop:
    def __init__(self, fake: FakeDiscord, tmp_path: Path, run: Run, started: list[Proc]) -> None:
        self.fake = fake
        self.tmp = tmp_path
        self.db = tmp_path / "crier.db"
        self.migrations = write_app_migrations(tmp_path / "app_migrations")
        self.run = run
        self.rng = random.Random(run.seed)
        self.started = started
        self.guild: Guild = fake.add_guild(
            name="Proof", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES
        )
        admins = self.guild.add_role("admins", P.MANAGE_GUILD)
        self.admin: Member = self.guild.add_member(name="alice", roles=[admins])
        self.channels = [self.guild.add_channel(f"news-{i}") for i in range(CHANNELS)]
        self.held = self.guild.add_channel("held")
        """Only the targeted deliveries post here (their answer is held back once)."""
        self.env = child_env(
            fake.env()
            | {
                "DATABASE_URL": f"sqlite:///{self.db}",
                "SCHEDULER_LEASE_SECONDS": LEASE,
                "SCHEDULER_SWEEP_SECONDS": SWEEP,
                "SEND_SPACING_SECONDS": "0",
                "LOG_LEVEL": "INFO",
            }
        )
        self.n = 0

    async def spawn(self) -> Proc:
        p = await Proc.start(
            ["-m", "tests.proof.worker", "crier", "--migrations", str(self.migrations)],
            env=self.env,
            workdir=self.tmp,
            label=f"crier-{len(self.started)}",
        )
        self.started.append(p)
        return p

    def logs(self) -> str:
        return "\n".join(f"--- {p.label} (pid {p.pid}) ---\n{p.log[-6000:]}" for p in self.started)

    async def wave(self, store: SqliteStore) -> None:
        """Jobs due over the next ~2.5 s: the worker about to start finds them due while it
        starts, runs, and is killed."""
        rng, now = self.rng, time.time()
        jobs: list[NewJob] = []
        for _ in range(MUTATIONS_PER_WAVE):
            due = now + rng.uniform(0.2, 2.5)
            # A little work inside the transaction (a kill may land before its commit); not
            # so much that batches of rolled-back mutations starve ticks and commands.
            args = {"n": self.n, "work": rng.uniform(0.0, 0.002)}
            jobs.append(new_job("proof:mutate", JobKind.MUTATION, due, args))
            self.n += 1
        for _ in range(ACTIONS_PER_WAVE):
            due, work = now + rng.uniform(0.2, 2.5), rng.uniform(0.0, 0.3)
            jobs.append(new_job("proof:act", JobKind.ACTION, due, {"work": work}))
        for _ in range(IDEM_PER_WAVE):
            due, work = now + rng.uniform(0.2, 2.5), rng.uniform(0.0, 0.3)
            jobs.append(new_job("proof:act-idem", JobKind.ACTION, due, {"work": work}, True))
        await store.at(now).run(enqueue_all(jobs))
        self.run.jobs += len(jobs)

    async def schedule(self, message: str, channel: Channel, when: int, **extra: Any) -> Sent:
        options = {"when": str(when), "message": message, "channel": channel, **extra}
        handle = await self.fake.invoke_command(
            self.guild, channel, self.admin, "schedule", options
        )
        return Sent(handle, message, channel, when)

    async def announce(self, cycle: int) -> None:
        """/schedule one-offs due 2–4 s from now (whole seconds), in random channels."""
        now = int(time.time())
        for k in range(ANNOUNCEMENTS_PER_CYCLE):
            text = f"cycle {cycle} #{k} — **bold** _it_ `code` 🎉 <#{self.channels[0].id}>"
            channel = self.rng.choice(self.channels)
            self.run.sent.append(await self.schedule(text, channel, now + self.rng.randint(2, 4)))
        if not any(acknowledged(r) for r in self.run.recurring):  # until one is taken
            sent = await self.schedule(
                "every minute, through every crash", self.channels[0], now + 2,
                repeat="every 1 minute",
            )  # fmt: skip
            self.run.recurring.append(sent)

    async def cycle(self, store: SqliteStore, i: int) -> None:
        await self.wave(store)
        proc = await self.spawn()
        target = target_of(i)
        if target is None and self.rng.random() < EARLY_KILL_RATE:
            # A kill while it starts: opening/migrating, reconciling crons, logging in.
            delay = self.rng.uniform(0.05, 1.0)
            ready = asyncio.ensure_future(proc.expect("READY"))
            await asyncio.wait({ready}, timeout=delay)
            ready.cancel()
            self.run.early_kills += 1
        else:
            await proc.expect("READY")
            self.mark_ready()
            await self.announce(i)
            if target is None:
                await asyncio.sleep(self.rng.uniform(0.05, 0.4))  # the random moment of the kill
            else:
                await self.hold(target, proc, store)
        proc.kill()
        killed = time.time()
        assert await proc.proc.wait() == -9, f"{proc.label} died by itself:\n{proc.log}"
        self.run.kills += 1
        self.run.windows.append([killed, float("inf")])  # closed by the next READY

    async def hold(self, kind: str, proc: Proc, store: SqliteStore) -> None:
        """Return once work of ``kind`` is surely in flight in ``proc`` (which is then killed)."""
        if kind == "delivery":
            # Discord creates the message, then holds its answer: the bot is killed while its
            # send is in flight, after the effect.
            self.fake.faults.add(
                method="POST", path_regex=re.escape(f"/channels/{self.held.id}/messages"),
                delay=HELD, after_effect=True,
            )  # fmt: skip
            before = len(self.fake.bot_messages(self.held))
            k = len([t for t in self.run.targeted if t[0] == kind])
            sent = await self.schedule(f"held delivery {k}", self.held, int(time.time()) + 2)
            self.run.sent.append(sent)
            await sent.handle.response(timeout=TARGET_DEADLINE)
            number = acknowledged(sent)
            assert number is not None, (sent.handle.callback, self.run.seed)
            await self.fake.wait_until(
                lambda: len(self.fake.bot_messages(self.held)) > before,
                timeout=TARGET_DEADLINE, what=f"held delivery {k} to reach Discord",
            )  # fmt: skip
            self.run.targeted.append((kind, number, proc.pid))
            return
        fn, job_kind, idempotent = {
            "mutation": ("proof:mutate", JobKind.MUTATION, False),
            "action": ("proof:act", JobKind.ACTION, False),
            "idempotent action": ("proof:act-idem", JobKind.ACTION, True),
        }[kind]
        args: dict[str, Any] = {"hold": HELD}
        if kind == "mutation":
            args["n"] = self.n
            self.n += 1
        now = time.time()
        [job_id] = await store.at(now).run(
            enqueue_all([new_job(fn, job_kind, now, args, idempotent)])
        )
        self.run.jobs += 1
        await proc.expect(f"HOLDING {job_id}", within=TARGET_DEADLINE)
        self.run.targeted.append((kind, job_id, proc.pid))

    def mark_ready(self) -> None:
        now = time.time()
        for window in self.run.windows:
            window[1] = min(window[1], now)


def target_of(cycle: int) -> str | None:
    """The kind of work cycle ``cycle`` kills in flight (None: a random kill point)."""
    if cycle < 2 or (cycle - 2) % TARGET_STRIDE:
        return None
    return TARGETS[(cycle - 2) // TARGET_STRIDE % len(TARGETS)]


def acknowledged(sent: Sent) -> int | None:
    """The announcement number the bot answered a /schedule with (None: no such answer)."""
    cb = sent.handle.callback
    found = re.search(r"Scheduled announcement \*\*#(\d+)\*\*", (cb and cb.content) or "")
    return None if found is None else int(found[1])


async def cancel_recurring(loop: Loop) -> None:
    """/cancel every recurring announcement in the database (acknowledged or not), so the
    run can settle. An occurrence still pending then is canceled with it, undelivered."""
    live = rows(
        loop.db,
        "SELECT local_id FROM bot_announcements WHERE repeat_kind IS NOT NULL "
        "AND state IN ('scheduled', 'paused')",
    )
    for a in live:
        h = await loop.fake.invoke_command(
            loop.guild, loop.channels[0], loop.admin, "cancel", {"id": a["local_id"]}
        )
        text = (await h.response(timeout=10)).content or ""
        assert "Canceled announcement" in text, text


async def pause_static_crons(loop: Loop) -> None:
    """The operator's command line pauses the static crons, so the run can settle."""
    for name in (TICK_ALL, TICK_SKIP):
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m", "scheduler", "--db", str(loop.db), "schedules", "pause", name,
            env=loop.env, cwd=loop.tmp,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await proc.communicate()
        assert proc.returncode == 0, (out, err)


def settled(db: Path) -> bool:
    return (
        scalar(db, "SELECT count(*) FROM scheduler_jobs WHERE state IN ('pending', 'in_progress')")
        == 0
    )


async def test_kill_9_loop_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    seed = int(os.environ.get("CRIER_PROOF_SEED") or random.SystemRandom().randrange(2**32))
    print(f"\ncrash loop: seed {seed} (replay with CRIER_PROOF_SEED={seed}), {KILLS} kills")
    run = Run(seed)
    async with FakeDiscord() as fake, procs() as started:
        loop = Loop(fake, tmp_path, run, started)
        store = SqliteStore(loop.db)
        await store.open([MigrationSet(APP_COMPONENT, loop.migrations)])
        t0 = time.monotonic()
        try:
            for i in range(KILLS):
                await loop.cycle(store, i)
        finally:
            await store.close()
        loop_seconds = time.monotonic() - t0

        # The last start: let it settle, then stop it cleanly.
        final = await loop.spawn()
        await final.expect("READY")
        loop.mark_ready()
        await cancel_recurring(loop)
        await pause_static_crons(loop)
        try:
            await until(lambda: settled(loop.db), SETTLE_DEADLINE, "every due job to finish")
        except AssertionError as exc:
            raise AssertionError(f"{exc} (seed {seed})\n{loop.logs()}") from None
        assert await final.terminate() == 0, final.log
        check_everything(loop, fake, run)
        print(
            f"crash loop: seed {seed}: {run.kills} kills ({run.early_kills} during start-up) "
            f"in {loop_seconds:.1f}s; {scalar(loop.db, 'SELECT count(*) FROM scheduler_jobs')} "
            f"jobs ({run.jobs} enqueued in waves), {len(run.sent)} one-off /schedule sent, "
            f"nonce dedup hits {fake.nonce_dedup_hits}"
        )


# --- the checks -----------------------------------------------------------------------------------


def check_everything(loop: Loop, fake: FakeDiscord, run: Run) -> None:
    db = loop.db
    seed = f"(seed {run.seed})"
    # Nothing left running or due.
    states = Counter({r["state"]: r["n"] for r in rows(
        db, "SELECT state, count(*) AS n FROM scheduler_jobs GROUP BY state"
    )})  # fmt: skip
    assert states["in_progress"] == 0, (states, seed)
    assert states["pending"] == 0, (states, seed)
    assert scalar(db, "PRAGMA integrity_check") == "ok"
    if FULL:
        assert scalar(db, "SELECT count(*) FROM scheduler_jobs") >= 2000, seed

    landed = check_mutations(db, loop.n, seed)
    landed |= check_actions(db, seed)
    check_fire_all(db, seed)
    check_skip(db, run, seed)
    landed |= check_announcements(loop, fake, run, seed)
    check_targets(loop, fake, run, seed)
    for p in loop.started:
        assert "Traceback" not in p.log, f"{p.label}:\n{p.log}"
    # Kills landed on work in flight of every kind (the targeted cycles make sure of it).
    assert all(landed.values()), (landed, seed)


def check_mutations(db: Path, seeded: int, seed: str) -> dict[str, int]:
    jobs = rows(
        db,
        "SELECT j.id, j.state, j.attempts, a.result, a.error FROM scheduler_jobs j "
        "JOIN scheduler_job_args a ON a.job_id = j.id WHERE j.fn = 'proof:mutate'",
    )
    assert len(jobs) == seeded, seed
    assert [j for j in jobs if j["state"] != "success"] == [], seed
    effects = rows(db, "SELECT n, job_id FROM proof_mutations")
    assert len(effects) == len(jobs), seed  # exactly once each: no loss, no duplicate
    assert sorted(e["n"] for e in effects) == list(range(seeded)), seed
    by_job = {e["job_id"]: e["n"] for e in effects}
    assert all(json.loads(j["result"]) == by_job[j["id"]] for j in jobs), seed
    retried = sum(1 for j in jobs if j["attempts"] > 0)
    print(f"  mutations: {len(jobs)}, all once; {retried} rolled back by a kill and re-run")
    return {"mutations rolled back": retried}


def check_actions(db: Path, seed: str) -> dict[str, int]:
    acts = rows(
        db,
        "SELECT j.id, j.state, j.run_count, a.error, "
        "(SELECT count(*) FROM proof_actions e WHERE e.job_id = j.id) AS effects "
        "FROM scheduler_jobs j JOIN scheduler_job_args a ON a.job_id = j.id "
        "WHERE j.fn = 'proof:act'",
    )
    lost = 0
    for a in acts:
        assert a["run_count"] == 1, (a, seed)  # at most once: never started twice
        if a["state"] == "success":
            assert a["effects"] == 1, (a, seed)
        else:
            assert a["state"] == "failed", (a, seed)
            assert LEASE_LOST in (a["error"] or ""), (a, seed)
            assert a["effects"] <= 1, (a, seed)
            lost += 1
    idem = rows(
        db,
        "SELECT j.id, j.state, j.run_count, "
        "(SELECT count(*) FROM proof_idem e WHERE e.job_id = j.id) AS effects "
        "FROM scheduler_jobs j WHERE j.fn = 'proof:act-idem'",
    )
    assert [i for i in idem if i["state"] != "success" or i["effects"] != 1] == [], seed
    rerun = sum(1 for i in idem if i["run_count"] > 1)
    print(
        f"  actions: {len(acts)} at most once ({lost} failed by a lost lease); "
        f"{len(idem)} idempotent all once ({rerun} re-run after a kill)"
    )
    return {"actions lost": lost, "idempotent re-runs": rerun}


def grid(db: Path, name: str) -> tuple[list[float], dict[str, Any]]:
    """The schedule's row and every fire time from its first to its last reached one."""
    [row] = rows(db, "SELECT * FROM scheduler_schedules WHERE name = ?", (name,))
    spec = json.loads(row["trigger_spec"])
    anchor = datetime.fromisoformat(spec["anchor"]).timestamp()
    every = spec["every_us"] / 1e6
    assert row["last_fire_ts"] is not None, row
    count = round((row["last_fire_ts"] - anchor) / every)
    return [round(anchor + k * every, 6) for k in range(1, count + 1)], row


def check_fire_all(db: Path, seed: str) -> None:
    times, row = grid(db, TICK_ALL)
    assert (row["missed"], row["skipped"]) == (0, 0), (row, seed)
    jobs = rows(
        db,
        "SELECT j.id, j.state, j.fire_ts, j.attempts, a.error FROM scheduler_jobs j "
        "JOIN scheduler_job_args a ON a.job_id = j.id WHERE schedule_name = ?",
        (TICK_ALL,),
    )
    assert [j for j in jobs if j["state"] != "success"] == [], seed
    ticks = [round(t["fire_ts"], 6) for t in rows(
        db, "SELECT fire_ts FROM proof_ticks WHERE schedule = ?", (TICK_ALL,)
    )]  # fmt: skip
    assert len(ticks) == len(set(ticks)) == len(jobs), seed  # one run per fire time
    assert sorted(ticks) == times, (
        f"fire times without a run: {sorted(set(times) - set(ticks))}; "
        f"runs off the grid: {sorted(set(ticks) - set(times))} {seed}"
    )
    print(f"  fire_all cron: {len(times)} fire times, each run exactly once, no gap")


def check_skip(db: Path, run: Run, seed: str) -> None:
    times, row = grid(db, TICK_SKIP)
    jobs = rows(
        db,
        "SELECT j.id, j.state, j.run_count, j.fire_ts, a.error FROM scheduler_jobs j "
        "JOIN scheduler_job_args a ON a.job_id = j.id WHERE j.schedule_name = ?",
        (TICK_SKIP,),
    )
    fired = [round(j["fire_ts"], 6) for j in jobs]
    assert len(fired) == len(set(fired)), seed
    assert set(fired) <= set(times), seed
    # Every fire time is accounted for: run, skipped (overlap) or missed (catch-up).
    assert len(times) == len(jobs) + row["skipped"] + row["missed"], (row, len(jobs), seed)
    # Missed (catch_up=skip drops a backlog) only while no process was up and ticking.
    down = [t for t in times if any(a - 1.0 <= t <= b for a, b in run.windows)]
    assert row["missed"] <= len(down), (row, len(down), seed)
    effects = Counter(
        round(r["fire_ts"], 6)
        for r in rows(db, "SELECT fire_ts FROM proof_ticks WHERE schedule = ?", (TICK_SKIP,))
    )
    for j in jobs:
        t = round(j["fire_ts"], 6)
        assert j["run_count"] == 1, (j, seed)
        if j["state"] == "success":
            assert effects[t] == 1, (j, seed)
        else:
            assert j["state"] == "failed", (j, seed)
            assert LEASE_LOST in (j["error"] or ""), (j, seed)
            assert effects[t] <= 1, (j, seed)
    print(
        f"  skip cron: {len(times)} fire times = {len(jobs)} run + {row['skipped']} skipped "
        f"+ {row['missed']} missed (all while down: {len(down)} times fell in down windows)"
    )


def check_announcements(loop: Loop, fake: FakeDiscord, run: Run, seed: str) -> dict[str, int]:
    db = loop.db
    anns = {
        a["id"]: a
        for a in rows(db, "SELECT * FROM bot_announcements WHERE guild_id = ?", (loop.guild.id,))
    }
    deliveries = rows(db, "SELECT * FROM bot_deliveries")
    by_ann: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for d in deliveries:
        by_ann[d["announcement_id"]].append(d)
    messages = [m for ch in [*loop.channels, loop.held] for m in fake.bot_messages(ch)]
    by_nonce = Counter(str(m.nonce) for m in messages)
    assert [n for n, c in by_nonce.items() if c > 1] == [], seed  # no occurrence posted twice
    by_id = {m.id: m for m in messages}

    # Every /schedule the bot acknowledged is in the database, verbatim.
    acked = 0
    by_local = {a["local_id"]: a for a in anns.values()}
    for s in run.sent + run.recurring:
        local = acknowledged(s)
        if local is None:
            cb = s.handle.callback
            assert cb is None or "Something went wrong" not in (cb.content or ""), (cb, seed)
            continue
        acked += 1
        a = by_local.get(local)
        assert a is not None, (local, seed)
        assert a["content"] == s.message, (local, seed)
        assert a["channel_id"] == s.channel.id, (a, seed)
        assert a["first_ts"] == s.when, (a, seed)

    one_offs = [a for a in anns.values() if a["repeat_kind"] is None]
    for a in one_offs:
        ds = by_ann.get(a["id"], [])
        assert a["state"] == "sent", (a, ds, seed)
        [d] = ds
        assert d["state"] == "sent", (d, seed)
        assert d["fire_ts"] == a["first_ts"], (d, seed)
        msg = by_id.get(d["message_id"])
        assert msg is not None, (d, seed)
        assert msg.content == a["content"], (msg.content, a["content"], seed)  # verbatim
        assert msg.channel_id == a["channel_id"], seed
        assert msg.nonce == d["nonce"] == nonce_for(a["id"], a["first_ts"]), seed
    # Recurring: every occurrence posted once, unless the final /cancel found it still
    # pending (recovering from a kill): then it is canceled, with no delivery and no message.
    maybe_delivered: set[str] = set()
    recurring = [a for a in anns.values() if a["repeat_kind"] is not None]
    for a in recurring:
        ds = {d["fire_ts"]: d for d in by_ann.get(a["id"], [])}
        jobs = rows(
            db,
            "SELECT fire_ts, state FROM scheduler_jobs WHERE schedule_name = ?",
            (f"announcement:{a['id']}",),
        )
        assert len(ds) == len(by_ann.get(a["id"], [])), seed
        for j in jobs:
            nonce = nonce_for(a["id"], j["fire_ts"])
            if j["state"] == "canceled":
                assert j["fire_ts"] not in ds, (a, j, seed)
                assert by_nonce[nonce] == 0, (a, j, seed)
                continue
            d = ds[j["fire_ts"]]
            if d["state"] == "failed" and a["state"] == "canceled":
                # Killed mid-send, then canceled by the final /cancel before its re-run: not
                # sent again, and the books say it may or may not have reached Discord.
                assert j["state"] == "success", (a, j, d, seed)
                assert d["error"] == INTERRUPTED_AND_STOPPED.format(state="canceled"), (d, seed)
                assert by_nonce[nonce] <= 1, (a, j, d, seed)
                maybe_delivered.add(nonce)
                continue
            assert j["state"] == "success", (a, j, d, seed)
            assert d["state"] == "sent", (a, j, d, seed)
            assert by_id[d["message_id"]].nonce == nonce, seed
            assert by_nonce[nonce] == 1, seed
            assert by_id[d["message_id"]].content == a["content"], seed
        assert set(ds) <= {j["fire_ts"] for j in jobs}, seed
    sent = sum(1 for d in deliveries if d["state"] == "sent")
    unrecorded = sum(by_nonce[n] for n in maybe_delivered)
    # No message outside the books (those the books call "may not have been delivered" aside).
    assert len(messages) == sent + unrecorded, (len(messages), sent, unrecorded, seed)
    resends = sum(d["attempts"] - 1 for d in deliveries)
    most = max((d["attempts"] for d in deliveries), default=0)
    print(
        f"  announcements: {len(one_offs)} one-offs and {len(recurring)} recurring ({acked} "
        f"acknowledged of {len(run.sent) + len(run.recurring)} /schedule sent), "
        f"{len(messages)} messages, each occurrence once; "
        f"{resends} re-sends after a kill (one delivery was attempted {most} times), "
        f"{fake.nonce_dedup_hits} absorbed by the nonce"
    )
    return {"deliveries re-sent": resends}


def check_targets(loop: Loop, fake: FakeDiscord, run: Run, seed: str) -> None:
    """Each job a targeted kill landed on ended as the contract says for its kind."""
    db = loop.db
    kinds = Counter(kind for kind, _, _ in run.targeted)
    assert set(kinds) == set(TARGETS), (run.targeted, seed)
    for kind, ident, killed_pid in run.targeted:
        if kind == "delivery":
            [a] = rows(
                db, "SELECT id, state, first_ts FROM bot_announcements WHERE local_id = ? "
                "AND guild_id = ?", (ident, loop.guild.id),
            )  # fmt: skip
            [d] = rows(db, "SELECT * FROM bot_deliveries WHERE announcement_id = ?", (a["id"],))
            # Re-sent after the kill, with the same nonce; Discord answered with the message
            # it had created, so there is still exactly one.
            assert (a["state"], d["state"]) == ("sent", "sent"), (a, d, seed)
            assert d["attempts"] >= 2, (d, seed)
            posted = [m for m in fake.bot_messages(loop.held) if m.nonce == d["nonce"]]
            assert [m.id for m in posted] == [d["message_id"]], (posted, d, seed)
            continue
        [j] = rows(
            db,
            "SELECT j.state, j.attempts, j.run_count, a.error FROM scheduler_jobs j "
            "JOIN scheduler_job_args a ON a.job_id = j.id WHERE j.id = ?",
            (ident,),
        )
        if kind == "mutation":  # rolled back, re-run elsewhere, once
            assert (j["state"], j["attempts"] >= 1) == ("success", True), (j, seed)
            pids = [r["pid"] for r in rows(
                db, "SELECT pid FROM proof_mutations WHERE job_id = ?", (ident,)
            )]  # fmt: skip
            assert len(pids) == 1, (pids, killed_pid, seed)
            assert pids[0] != killed_pid, (pids, killed_pid, seed)
        elif kind == "action":  # lost with its lease: failed, no effect, never re-run
            assert (j["state"], j["run_count"]) == ("failed", 1), (j, seed)
            assert LEASE_LOST in (j["error"] or ""), (j, seed)
            assert scalar(db, "SELECT count(*) FROM proof_actions WHERE job_id = ?", (ident,)) == 0
        else:  # idempotent: re-run elsewhere to one effect
            assert j["state"] == "success", (j, seed)
            assert j["run_count"] >= 2, (j, seed)
            pids = [r["pid"] for r in rows(
                db, "SELECT pid FROM proof_idem WHERE job_id = ?", (ident,)
            )]  # fmt: skip
            assert len(pids) == 1, (pids, killed_pid, seed)
            assert pids[0] != killed_pid, (pids, killed_pid, seed)
    assert fake.nonce_dedup_hits >= kinds["delivery"], (fake.nonce_dedup_hits, seed)
    print(f"  targeted kills: {dict(kinds)}, each ended as its kind must")


# --- one delivery in a crash loop ---------------------------------------------------------------

HOLD = 120.0
"""How long the fake holds a send it was told to hold (longer than the test)."""


async def test_a_delivery_interrupted_by_more_crashes_than_its_retries_is_not_dropped(
    tmp_path: Path,
) -> None:
    """``python -m bot`` crash-loops (as under systemd's Restart=always) while one delivery
    is in flight: each start re-sends the occurrence (same nonce), Discord holds the request,
    and the process is killed — more times than the send's retry budget. Once the loop ends
    (well inside the nonce window), the announcement must still be posted, exactly once: a
    crash is not a failed attempt that may use up the budget and drop the occurrence without
    a word, leaving it "scheduled" forever."""
    kills = 7
    async with FakeDiscord() as fake, procs() as started:
        guild = fake.add_guild(name="Loop", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES)
        admin = guild.add_member(name="alice", roles=[guild.add_role("admins", P.MANAGE_GUILD)])
        news, general = guild.add_channel("news"), guild.add_channel("general")
        db = tmp_path / "crier.db"
        env = child_env(
            fake.env()
            | {
                "DATABASE_URL": f"sqlite:///{db}",
                "SCHEDULER_LEASE_SECONDS": "1",
                "SCHEDULER_SWEEP_SECONDS": "0.2",
                "SEND_SPACING_SECONDS": "0",
            }
        )
        path = re.escape(f"/channels/{news.id}/messages")

        def sends() -> int:
            return sum(
                1 for r in fake.requests if r.method == "POST" and re.fullmatch(path, r.path)
            )

        async def start() -> Proc:
            p = await Proc.start(["-m", "bot"], env=env, workdir=tmp_path, label="bot")
            started.append(p)
            await fake.wait_until(
                lambda: (
                    fake.get_command("schedule") is not None and fake.gateway.connected_sessions
                ),
                timeout=30,
                what="the bot to connect",
            )
            return p

        bot = await start()
        h = await fake.invoke_command(guild, general, admin, "settings", {"log_channel": general})
        await h.response(timeout=10)
        # Every send to #news reaches Discord's edge and hangs there, uncreated.
        fake.faults.add(method="POST", path_regex=path, delay=HOLD, disconnect=True, times=100)
        h = await fake.invoke_command(
            guild, general, admin, "schedule",
            {"when": str(int(time.time()) + 2), "message": "through a crash loop", "channel": news},
        )  # fmt: skip
        assert "Scheduled announcement **#1**" in ((await h.response(timeout=10)).content or "")

        def dropped() -> bool:
            return scalar(db, "SELECT state FROM scheduler_jobs") == "failed"

        for k in range(kills):
            await fake.wait_until(
                lambda k=k: sends() > k or dropped(), timeout=30, what=f"send attempt {k + 1}"
            )
            if sends() <= k:
                [job] = rows(db, "SELECT state, attempts, run_count FROM scheduler_jobs")
                [row] = rows(db, "SELECT state, attempts, error FROM bot_deliveries")
                [ann] = rows(db, "SELECT state, failure FROM bot_announcements")
                raise AssertionError(
                    f"after {k} crashes the delivery job was dead-lettered and never sent "
                    f"again; the announcement is left {ann} (nothing reported), its "
                    f"delivery {row}, its job {job}"
                )
            bot.kill()
            assert await bot.proc.wait() == -9
            await fake.wait_until(lambda: not fake.gateway.connected_sessions, what="the kill")
            if k + 1 < kills:
                bot = await start()
        fake.faults.clear()  # Discord answers again
        await start()
        try:
            await until(
                lambda: scalar(db, "SELECT state FROM bot_announcements") != "scheduled",
                30,
                "the announcement to be posted or reported",
            )
        except AssertionError:
            [job] = rows(db, "SELECT state, attempts, run_count FROM scheduler_jobs")
            [row] = rows(db, "SELECT state, attempts, error FROM bot_deliveries")
            raise AssertionError(
                f"after {kills} crashes the occurrence was dropped without a word: the "
                f"announcement is still 'scheduled', its delivery {row}, its job {job}"
            ) from None
        [row] = rows(db, "SELECT state, message_id, nonce, attempts FROM bot_deliveries")
        [msg] = fake.bot_messages(news)
        assert (row["state"], row["message_id"]) == ("sent", msg.id)
        assert msg.content == "through a crash loop"
        assert msg.nonce == row["nonce"]
        assert sends() == kills + 1  # one send per start, all with the same nonce
        assert {
            r.body["nonce"]
            for r in fake.requests
            if r.method == "POST" and re.fullmatch(path, r.path)
        } == {row["nonce"]}
        assert scalar(db, "SELECT state FROM scheduler_jobs") == "success"
        assert fake.bot_messages(general) == []  # nothing to report
