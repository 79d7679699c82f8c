"""Races: two and three processes on one SQLite file, for the same due jobs and the same
schedule ticks; and two and three ``python -m bot`` processes for the same announcements.

``tests/scheduler/test_multiprocess.py`` races three processes for plain due jobs. Here every
racer also:

* opens the fresh file at the same moment (racing migrations and the reconciliation of the
  static crons every one of them registers: a 250 ms interval mutation, a 500 ms interval
  action, a per-minute cron; all ``catch_up="fire_all"``, ``overlap="allow_all"``, so every
  fire time must have its run);
* on ``GO``, enqueues the *same* jobs under the same idempotency keys at the same moment,
  all due at once (one job per key must come out, run once), and tries to create the same
  runtime schedules (a 300 ms interval, a per-minute cron in Europe/London): one creation
  wins, the others get ``DuplicateName``;
* then ticks every schedule and claims every due job, concurrently with the others.

Afterwards: zero double claims (every job's ``run_count`` is 1, every job succeeded, and an
app-side UNIQUE row per run), exactly one job per (schedule, fire time), no fire time
without its run from each schedule's first to its last, nothing skipped or missed.

The bots: one ``python -m bot`` takes the ``/schedule`` commands (the fake Discord sends an
interaction to every connected session, so only one runs while they come in), then the
others start on the same file; every announcement comes due after all are connected. Each
must be posted exactly once: one message per announcement in the fake, one accepted send
request per announcement (a 429 that discord.py waits out and retries was refused, not
sent), none that Discord's nonce had to absorb, one attempt per delivery.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from bot.posting.delivery import nonce_for
from scheduler import MigrationSet, SqliteStore
from scheduler.triggers import trigger_from_json
from tests.fakediscord import FakeDiscord
from tests.fakediscord import Permissions as P
from tests.proof.conftest import FULL, size
from tests.proof.harness import Proc, child_env, procs, rows, scalar, until
from tests.proof.worker import (
    APP_COMPONENT,
    RACE_ACT,
    RACE_FAST,
    RACE_MINUTE,
    RUNTIME_SCHEDULES,
    write_app_migrations,
)

if TYPE_CHECKING:
    from pathlib import Path

KEYED = size(1000, 3000)
KEYED_ACTIONS = size(200, 600)
FAST_TICKS = size(24, 120)
"""How many 250 ms ticks of the fast static cron to wait for (6 s, or 30 s at full length)."""
DEADLINE = size(60.0, 180.0)
SCHEDULES = (RACE_FAST, RACE_ACT, RACE_MINUTE, *RUNTIME_SCHEDULES)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(size(120, 400))]


# --- schedulers -----------------------------------------------------------------------------------


def expected_times(row: dict[str, Any]) -> list[float]:
    """Every fire time of the schedule after its creation, up to its last reached one."""
    trig = trigger_from_json(row["trigger_spec"])
    out: list[float] = []
    if row["last_fire_ts"] is None:
        return out
    t = trig.next_after(datetime.fromtimestamp(row["created_at"], UTC))
    last = datetime.fromtimestamp(row["last_fire_ts"], UTC)
    while t <= last:
        out.append(round(t.timestamp(), 6))
        t = trig.next_after(t)
    return out


async def pause_all(db: Path, migrations: Path) -> None:
    """Stop the ticking (as an operator would) so the run can settle and be checked."""
    store = SqliteStore(db)
    await store.open([MigrationSet(APP_COMPONENT, migrations)])
    try:
        for name in SCHEDULES:
            await store.at(time.time()).pause_schedule(name)
    finally:
        await store.close()


@pytest.mark.parametrize("racers", [2, 3])
async def test_processes_race_for_due_jobs_and_schedule_ticks(tmp_path: Path, racers: int) -> None:
    db = tmp_path / "race.db"
    migrations = write_app_migrations(tmp_path / "app_migrations")
    env = child_env({})
    async with procs() as started:
        for i in range(racers):  # all open the fresh file at once
            started.append(
                await Proc.start(
                    [
                        "-m",
                        "tests.proof.worker",
                        "race",
                        "--db",
                        str(db),
                        "--migrations",
                        str(migrations),
                        "--lease",
                        "3600",
                        "--sweep",
                        "0.1",
                        "--keyed",
                        str(KEYED),
                        "--keyed-actions",
                        str(KEYED_ACTIONS),
                        "--claim-barrier",
                    ],
                    env=env,
                    workdir=tmp_path,
                    label=f"racer-{i}",
                    stdin=True,
                )
            )
        for p in started:
            await p.expect("READY")
        due = time.time() + 1.0
        await asyncio.gather(*(p.send(f"GO {due}") for p in started))
        created: Counter[str] = Counter()
        existed: Counter[str] = Counter()
        # The race is arranged: each racer's first claim of keyed jobs is held until every
        # racer has made one, so all claim from the same due set while the others hold
        # theirs (not left to how the OS schedules them).
        for p in started:
            told = claimed = 0
            while told < len(RUNTIME_SCHEDULES) or not claimed:
                verb, *rest = (await p.next_line()).split()
                if verb == "CLAIMED":
                    mutations, actions = map(int, rest)
                    assert mutations > 0, (p.label, mutations, actions)
                    assert actions > 0, (p.label, mutations, actions)
                    claimed += 1
                else:
                    (created if verb == "CREATED" else existed)[rest[0]] += 1
                    told += 1
        await asyncio.gather(*(p.send("RELEASE") for p in started))

        def ticks(name: str) -> int:
            return int(scalar(db, "SELECT count(*) FROM proof_ticks WHERE schedule = ?", (name,)))

        def all_done() -> bool:
            return (
                scalar(
                    db,
                    "SELECT count(*) FROM scheduler_jobs WHERE state IN ('pending', 'in_progress')",
                )
                == 0
                and ticks(RACE_FAST) >= FAST_TICKS
            )

        await until(all_done, DEADLINE, f"the keyed jobs and {FAST_TICKS} fast ticks")
        await pause_all(db, migrations)
        await until(
            lambda: (
                scalar(
                    db,
                    "SELECT count(*) FROM scheduler_jobs WHERE state IN ('pending', 'in_progress')",
                )
                == 0
            ),
            DEADLINE,
            "the last ticks to finish",
        )
        for p in started:
            assert await p.terminate() == 0, p.log
            assert "Traceback" not in p.log, p.log
            assert "lease sweep" not in p.log, p.log  # no lease ever expired
            assert "discarded" not in p.log, p.log  # no outcome was fenced off

    # One creation won per runtime schedule; every other racer was told it exists.
    assert created == Counter(dict.fromkeys(RUNTIME_SCHEDULES, 1)), created
    assert existed == Counter(dict.fromkeys(RUNTIME_SCHEDULES, racers - 1)), existed

    # Zero double claims: every job ran once, and succeeded.
    jobs = rows(db, "SELECT id, state, run_count, attempts FROM scheduler_jobs")
    assert Counter(j["state"] for j in jobs) == {"success": len(jobs)}
    assert [j for j in jobs if j["run_count"] != 1 or j["attempts"] != 0] == []

    # One job per idempotency key, run once, its effect once.
    keyed = "SELECT count(*) FROM scheduler_jobs WHERE idempotency_key LIKE ?"
    assert scalar(db, keyed, ("seed:m:%",)) == KEYED
    assert scalar(db, keyed, ("seed:a:%",)) == KEYED_ACTIONS
    assert [r["n"] for r in rows(db, "SELECT n FROM proof_mutations ORDER BY n")] == list(
        range(KEYED)
    )
    assert scalar(db, "SELECT count(*) FROM proof_actions") == KEYED_ACTIONS

    # Exactly one job and one run per (schedule, fire time), none missing.
    report = []
    for name in SCHEDULES:
        [row] = rows(db, "SELECT * FROM scheduler_schedules WHERE name = ?", (name,))
        assert (row["skipped"], row["missed"], row["last_error"]) == (0, 0, None), row
        fired = [
            round(r["fire_ts"], 6)
            for r in rows(db, "SELECT fire_ts FROM scheduler_jobs WHERE schedule_name = ?", (name,))
        ]
        ran = [
            round(r["fire_ts"], 6)
            for r in rows(db, "SELECT fire_ts FROM proof_ticks WHERE schedule = ?", (name,))
        ]
        assert len(fired) == len(set(fired)), f"{name}: a fire time has two jobs"
        assert sorted(ran) == sorted(fired), f"{name}: runs and jobs differ"
        assert sorted(fired) == expected_times(row), f"{name}: a fire time has no run"
        report.append(f"{name}: {len(fired)}")
    assert len([r for r in report if not r.endswith(": 0")]) >= 3

    per_pid = "SELECT pid, count(*) AS n FROM {} GROUP BY pid"
    work: Counter[int] = Counter()
    for table in ("proof_mutations", "proof_actions", "proof_ticks"):
        work.update({r["pid"]: r["n"] for r in rows(db, per_pid.format(table))})
    by_pid = {r["pid"]: r["n"] for r in rows(db, per_pid.format("proof_mutations"))}
    tick_pids = {r["pid"]: r["n"] for r in rows(db, per_pid.format("proof_ticks"))}
    assert set(work) <= {p.pid for p in started}
    # Every racer ran keyed mutations and actions (its held claim's, at least).
    pids = {p.pid for p in started}
    assert set(by_pid) == pids, f"not every racer ran a keyed mutation: {by_pid}"
    act_pids = {r["pid"] for r in rows(db, per_pid.format("proof_actions"))}
    assert act_pids == pids, f"not every racer ran a keyed action: {act_pids}"
    assert scalar(db, "PRAGMA integrity_check") == "ok"
    print(
        f"\n{racers} racers: {len(jobs)} jobs, each run once; runs per process "
        f"{sorted(work.values())} (keyed mutations {sorted(by_pid.values())}, ticks "
        f"{sorted(tick_pids.values())}); "
        f"occurrences per schedule: {', '.join(report)}"
    )


# --- bots -----------------------------------------------------------------------------------------

ANNOUNCEMENTS = size(60, 200)
BOT_CHANNELS = 5


@pytest.mark.parametrize("bots", [2, 3])
async def test_bot_processes_on_one_file_post_each_announcement_once(
    tmp_path: Path, bots: int
) -> None:
    db = tmp_path / "crier.db"
    async with FakeDiscord() as fake, procs() as started:
        fake.ratelimits.set_message_limit(10_000, 1.0)  # 429s are another suite's subject
        guild = fake.add_guild(name="Race", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES)
        admin = guild.add_member(name="alice", roles=[guild.add_role("admins", P.MANAGE_GUILD)])
        channels = [guild.add_channel(f"news-{i}") for i in range(BOT_CHANNELS)]
        env = child_env(
            fake.env()
            | {
                "DATABASE_URL": f"sqlite:///{db}",
                "SCHEDULER_LEASE_SECONDS": "30",
                "SCHEDULER_SWEEP_SECONDS": "0.1",
                "SEND_SPACING_SECONDS": "0",
            }
        )

        async def start(i: int) -> Proc:
            p = await Proc.start(["-m", "bot"], env=env, workdir=tmp_path, label=f"bot-{i}")
            started.append(p)
            return p

        def connected() -> int:
            return len(fake.gateway.connected_sessions)

        t = time.monotonic()
        await start(0)
        await fake.wait_until(
            lambda: fake.get_command("schedule") is not None and connected() == 1,
            timeout=30,
            what="the first bot",
        )
        startup = time.monotonic() - t
        # Every bot is up before anything is scheduled (a start-up's length is the machine's
        # load: a CI run at a load near 7 once saw the others still starting when a due time
        # set before them came), so the race waits only for the commands below.
        for i in range(1, bots):
            await start(i)
        await fake.wait_until(lambda: connected() == bots, timeout=60, what="every bot")
        due = int(time.time() + max(10.0, 4 * startup))
        texts = [f"race {k}: **once** 🎯" for k in range(ANNOUNCEMENTS)]
        handles = [
            await fake.invoke_command(
                guild,
                channels[0],
                admin,
                "schedule",
                {"when": str(due), "message": text, "channel": channels[k % BOT_CHANNELS]},
            )
            for k, text in enumerate(texts)
        ]
        for h in handles:
            assert "Scheduled announcement" in ((await h.response(timeout=10)).content or "")
        if FULL:  # a recurring one too: its ticks are raced as well
            h = await fake.invoke_command(
                guild,
                channels[0],
                admin,
                "schedule",
                {"when": str(due), "message": "every minute", "repeat": "every 1 minute"},
            )
            assert "Scheduled announcement" in ((await h.response(timeout=10)).content or "")
        assert time.time() < due - 1, "the commands took too long: no race would happen"

        expected = ANNOUNCEMENTS + (2 if FULL else 0)  # the recurring one: two occurrences

        def posted() -> int:
            return sum(len(fake.bot_messages(ch)) for ch in channels)

        await fake.wait_until(
            lambda: posted() >= expected, timeout=size(60, 150), what="every announcement"
        )
        await until(
            lambda: (
                scalar(db, "SELECT count(*) FROM bot_deliveries WHERE state = 'sent'") >= expected
            ),
            30,
            "every delivery recorded",
        )
        for p in started:
            assert p.proc.returncode is None, p.log
            assert await p.terminate() == 0, p.log
            assert "Traceback" not in p.log, p.log

        messages = [m for ch in channels for m in fake.bot_messages(ch)]
        sends = [
            r
            for r in fake.requests
            if r.method == "POST" and re.fullmatch(r"/channels/\d+/messages", r.path)
        ]
    assert len(messages) == expected
    assert Counter(m.content for m in messages if m.content != "every minute") == Counter(texts)
    nonces = Counter(str(m.nonce) for m in messages)
    assert max(nonces.values()) == 1  # every occurrence once
    # Never sent twice: one accepted send per occurrence (a 429 is refused and retried by
    # discord.py, not sent), and no repeat that Discord's nonce had to absorb.
    accepted = Counter(r.body["nonce"] for r in sends if r.status != 429)
    assert len(accepted) == expected, sends
    assert max(accepted.values()) == 1, sends
    assert fake.nonce_dedup_hits == 0
    refused = Counter(r.status for r in sends if r.status != 200)
    deliveries = rows(db, "SELECT * FROM bot_deliveries")
    assert len(deliveries) == expected
    assert {(d["state"], d["attempts"]) for d in deliveries} == {("sent", 1)}
    by_id = {m.id: m for m in messages}
    for d in deliveries:
        assert by_id[d["message_id"]].nonce == nonce_for(d["announcement_id"], d["fire_ts"])
    jobs = rows(db, "SELECT state, run_count FROM scheduler_jobs")
    assert {(j["state"], j["run_count"]) for j in jobs} == {("success", 1)}
    assert scalar(db, "PRAGMA integrity_check") == "ok"
    print(
        f"\n{bots} bots: {expected} occurrences due at once, each posted once, sent once "
        f"(refused and retried: {dict(refused)})"
    )
