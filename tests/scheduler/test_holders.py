"""Holder liveness (scheduler._holders) on every store, on a FakeClock: a lease holder the
database can tell is gone loses its named leases and its jobs' leases at once (long before
they would run out); one that is merely paused keeps everything until they run out.

"Processes" are schedulers with their own process ids on one database. What proves each
alive is real: on SQLite, a real child process (``sleep``) stands for the holder's process
(its pid and start time are its proof): the test kills it (SIGKILL), stops it (SIGSTOP) or
leaves it; on PostgreSQL, the holder's own database session, which the test closes behind
the holder's back (the process "died" as far as the database can tell) or ends from another
session (``pg_terminate_backend``: the holder lives on and must learn it before it acts).
The FakeClock never reaches a lease's end unless a test says so, so "at once" is exact.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import ActionContext, JobState, LeaseShare, Registry, Scheduler
from scheduler._ops import holders as holder_ops
from scheduler._ops import leases as lease_ops
from scheduler.errors import LeaseLost
from scheduler.stores._process_liveness import ProcessLiveness, available
from scheduler.testing import FakeClock
from tests.support.processes import until

if TYPE_CHECKING:
    from tests.scheduler.stores import StoreFactory

pytestmark = pytest.mark.skipif(not available(), reason="needs Linux's /proc")

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
TTL = 30.0
JOB_LEASE = 30.0
KEYS = [f"shard:{i}" for i in range(8)]


def child() -> subprocess.Popen[bytes]:
    """A real process that lives until killed."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


def stat_of(pid: int) -> tuple[str, str]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0], fields[19]


@dataclass
class Proc:
    """One "process": a scheduler, and on SQLite the child process that proves it alive."""

    sched: Scheduler
    kind: str
    body: subprocess.Popen[bytes] | None = None
    ran: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.sched.settings.process_id

    async def die(self) -> None:
        """Its process is gone, as the database can tell (SIGKILL of the child, reaped; on
        PostgreSQL its holder session closed without the scheduler noticing)."""
        if self.body is not None:
            self.body.kill()
            self.body.wait()
        else:
            await self.sched.store.holder_session.close()  # type: ignore[attr-defined]

    def pause(self) -> None:
        assert self.body is not None
        os.kill(self.body.pid, signal.SIGSTOP)
        for _ in range(1000):
            if stat_of(self.body.pid)[0] in "Tt":
                return
        raise AssertionError("the child did not stop")

    def cont(self) -> None:
        assert self.body is not None
        os.kill(self.body.pid, signal.SIGCONT)


Procs = Callable[..., "asyncio.Future[Proc]"]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


class Gate:
    """An idempotent action's runs block here until the test lets them go."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.go = asyncio.Event()
        self.contexts: list[tuple[str, ActionContext]] = []


@pytest.fixture
async def world(
    stores: StoreFactory, clock: FakeClock
) -> AsyncIterator[tuple[Callable[..., Any], Gate]]:
    """``make(name, start=True)``: a scheduler named ``name`` on the shared database (on
    SQLite proved alive by a child process of its own), with the action ``work``."""
    gate = Gate()
    bodies: list[subprocess.Popen[bytes]] = []
    async with AsyncExitStack() as stack:
        made = 0

        async def make(name: str, *, own: bool = False, start: bool = True) -> Proc:
            nonlocal made
            registry = Registry()

            @registry.action("work", idempotent=True)
            async def work(ctx: ActionContext, args: Any) -> str:
                gate.contexts.append((name, ctx))
                gate.started.set()
                await gate.go.wait()
                ctx.ensure_lease(1.0)
                return name

            store = stores.new() if made == 0 else stores.again()
            made += 1
            body = None
            if stores.kind == "sqlite" and not own:
                body = child()
                bodies.append(body)
                store.liveness = ProcessLiveness(pid=body.pid)
            sched = Scheduler(
                store,
                registry,
                clock=clock,
                process_id=name,
                lease=JOB_LEASE,
                sweep_interval=3600,
                liveness_interval=1.0,
            )
            if start:
                await stack.enter_async_context(sched)
            return Proc(sched, stores.kind, body)

        try:
            yield make, gate
        finally:
            gate.go.set()
            for body in bodies:
                body.kill()
                body.wait()


async def lease_row(sched: Scheduler, key: str) -> lease_ops.LeaseRow | None:
    rows = await sched._engine.now().run(partial(lease_ops.leases_of, keys=[key]))
    return rows.get(key)


# --- named leases -----------------------------------------------------------------------------


async def test_a_gone_holders_lease_is_taken_at_once(world: Any, clock: FakeClock) -> None:
    make, _ = world
    a, b = await make("a"), await make("b")
    assert await b.sched.leases.take("k", ttl=TTL)
    assert not await a.sched.leases.take("k", ttl=TTL)  # b is alive: its lease holds
    await b.die()
    assert await a.sched.leases.take("k", ttl=TTL)  # at once: the clock has not moved
    assert await a.sched.leases.holders(["k"]) == {"k": "a"}
    assert await b.sched.leases.renew(["k"], ttl=TTL) == set()
    assert a.sched.stats.holders_gone == 1


async def test_a_paused_holder_keeps_its_lease_until_it_runs_out(
    world: Any, clock: FakeClock
) -> None:
    """Stopped (SIGSTOP) on SQLite; on PostgreSQL a holder whose session stays open (a
    paused process's kernel keeps its socket): alive, so its lease runs its course."""
    make, _ = world
    a, b = await make("a"), await make("b")
    assert await b.sched.leases.take("k", ttl=TTL)
    if b.body is not None:
        b.pause()
    try:
        clock.advance(TTL - 1)  # (the watches run meanwhile)
        assert not await a.sched.leases.take("k", ttl=TTL)
        await a.sched._engine.holders.check()
        assert await a.sched.leases.holders(["k"]) == {"k": "b"}
        clock.advance(1)
        assert await a.sched.leases.take("k", ttl=TTL)  # it ran out
    finally:
        if b.body is not None:
            b.cont()


async def test_the_watches_take_a_gone_members_keys_within_one_interval(
    world: Any, clock: FakeClock
) -> None:
    """Three members (3, 3 and 2 keys); the one with 2 dies: within one liveness interval
    both survivors take their part (4 and 4), whichever of them found it gone, each in a
    round run at once (not at its next third of the lease)."""
    make, _ = world
    procs = [await make(n) for n in ("a", "b", "c")]
    running: dict[str, set[str]] = {p.name: set() for p in procs}

    def share(p: Proc) -> LeaseShare:
        async def start(key: str) -> None:
            running[p.name].add(key)

        async def stop(key: str) -> None:
            running[p.name].discard(key)

        return p.sched.leases.share("g", KEYS, start=start, stop=stop, ttl=TTL)

    shares = [share(p) for p in procs]
    for s in shares:
        await s.join()
    for _ in range(4):  # asks, hand-overs, confirmations
        clock.advance(TTL / 3)
        for s in shares:
            await s.round()
    assert sorted(len(k) for k in running.values()) == [2, 3, 3]
    dead = next(p for p in procs if len(running[p.name]) == 2)
    survivors = [s for s, p in zip(shares, procs, strict=True) if p is not dead]
    rounds = [s.rounds for s in survivors]
    await dead.die()
    clock.advance(1.0)  # one liveness interval, a thirtieth of the lease
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while sorted(len(running[s.me]) for s in survivors) != [4, 4]:
        assert loop.time() < deadline, running
        await asyncio.sleep(0.01)
    assert all(s.rounds > r for s, r in zip(survivors, rounds, strict=True))
    assert set().union(*(running[s.me] for s in survivors)) == set(KEYS)
    for s in shares:
        await s.leave(within=0)


async def test_a_stopped_scheduler_gives_its_leases_back(world: Any) -> None:
    make, _ = world
    a, b = await make("a"), await make("b", start=False)
    await b.sched.start()
    assert await b.sched.leases.take("k", ttl=TTL)
    await b.sched.stop()
    assert await a.sched.leases.holders(["k"]) == {}
    assert await a.sched.leases.take("k", ttl=TTL)


def interval_watches(clock: FakeClock) -> int:
    """The holder watches sleeping their liveness interval (the fixture's sweep sleeps an
    hour; nothing else here sleeps on the clock)."""
    return sum(1 for left in clock.sleeping if left <= 1.0)


async def test_a_lone_holder_that_hears_commits_waits_for_one_instead_of_checking(
    world: Any, clock: FakeClock
) -> None:
    """Alone among the holders on PostgreSQL (which hears other processes' commits), a
    process's watch costs nothing while idle: it waits for a commit, not an interval. A new
    holder's registration is announced: the lone one checks within an interval, finds it,
    watches it every interval from then on and finds it gone at once. On SQLite (which
    hears nothing from other processes) the lone watch checks every interval, as before."""
    make, _ = world
    a = await make("a")
    hears = a.sched.store.hears_others
    for _ in range(3):  # the watch's first step (up to its first wait: no I/O before it)
        await asyncio.sleep(0)
    assert interval_watches(clock) == (0 if hears else 1)
    if not hears:
        return
    checks = a.sched.stats.holder_checks
    clock.advance(5.0)  # no sleeper was due: nothing ran
    assert a.sched.stats.holder_checks == checks
    b = await make("b")  # its watch sleeps an interval; a's wakes on b's registration
    await until(lambda: interval_watches(clock) == 2, 10, "a's watch to hear b register")
    clock.advance(1.0)
    await until(lambda: a.sched.stats.holder_checks > checks, 10, "a's check")
    await until(lambda: interval_watches(clock) == 2, 10, "a's watch on b every interval")
    await b.die()
    clock.advance(1.0)
    await until(lambda: a.sched.stats.holders_gone == 1, 10, "a to find b gone")


# --- jobs -------------------------------------------------------------------------------------


async def test_a_gone_holders_job_is_reclaimed_at_once_and_runs_again(world: Any) -> None:
    make, gate = world
    b = await make("b")
    job = await b.sched.enqueue("work")
    await asyncio.wait_for(gate.started.wait(), 10)
    await b.die()
    a = await make("a")  # its start finds b gone: the clock has not moved
    gate.go.set()
    runs = await wait_for_runs(a.sched, job, 2)
    # (b's scheduler lives on in this process, so either may run it again)
    assert [(r.run_count, r.outcome.value) for r in runs] == [(2, "success"), (1, "lease_lost")]
    assert runs[1].process == "b"
    assert "is gone" in (runs[1].error or "")


async def wait_for_runs(sched: Scheduler, job: int, n: int) -> list[Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 15
    while True:
        runs = await sched.runs(job_id=job)
        got = await sched.get_job(job)
        if len(runs) >= n and got is not None and got.state is JobState.SUCCESS:
            return runs
        assert loop.time() < deadline, runs
        await asyncio.sleep(0.02)


async def test_a_restart_under_the_same_name_reclaims_the_predecessors_jobs_at_start(
    world: Any,
) -> None:
    make, gate = world
    old = await make("crier")
    job = await old.sched.enqueue("work")
    await asyncio.wait_for(gate.started.wait(), 10)
    await old.die()
    again = await make("crier", own=True)  # the same name, proved by this process
    gate.go.set()
    runs = await wait_for_runs(again.sched, job, 2)
    assert [r.outcome.value for r in runs] == ["success", "lease_lost"]


# --- SQLite: what proves a process -------------------------------------------------------------


def proof(pid: int, start: str, *, boot: str | None = None, namespace: str | None = None) -> str:
    boot = boot or Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    namespace = namespace or os.readlink("/proc/self/ns/pid")
    return f"process {boot} {namespace} {os.getuid()} {pid} {start}"


async def test_a_reused_pid_a_zombie_and_an_earlier_boot_are_gone_a_stopped_process_is_not() -> (
    None
):
    judge = ProcessLiveness()
    me = os.getpid()
    _, my_start = stat_of(me)
    zombie = child()
    stopped = child()
    try:
        os.kill(stopped.pid, signal.SIGSTOP)
        zombie.kill()  # not reaped: a zombie until wait()
        await wait_until(lambda: stat_of(zombie.pid)[0] == "Z")
        await wait_until(lambda: stat_of(stopped.pid)[0] in "Tt")
        proofs = {
            "alive": proof(me, my_start),
            "reused pid": proof(me, str(int(my_start) + 1)),
            "zombie": proof(zombie.pid, stat_of(zombie.pid)[1]),
            "stopped": proof(stopped.pid, stat_of(stopped.pid)[1]),
            "earlier boot": proof(me, my_start, boot="00000000-0000-0000-0000-000000000000"),
            "other container": proof(12345, "1", namespace="pid:[1]"),
            "not a proof": "session 2026-01-01 7",
        }
        assert await judge.gone(proofs) == {"reused pid", "zombie", "earlier boot"}
        zombie.wait()
        assert await judge.gone({"exited": proofs["zombie"]}) == {"exited"}
    finally:
        for p in (zombie, stopped):
            p.kill()
            p.wait()


async def test_a_leases_holder_on_a_reused_pid_loses_it_at_once(world: Any) -> None:
    """The holder's pid is alive (it is this test's), but it started at another time."""
    make, _ = world
    a = await make("a")
    if a.kind != "sqlite":
        pytest.skip("a process's proof is the SQLite store's")
    me = os.getpid()
    reused = proof(me, str(int(stat_of(me)[1]) + 1))
    ops = a.sched._engine.now()
    await ops.run(partial(holder_ops.put, holder="z", proof=reused))
    assert await ops.run(partial(lease_ops.take, key="k", holder="z", ttl=TTL))
    assert await a.sched.leases.take("k", ttl=TTL)


# --- PostgreSQL: a session that ends, a server that restarted -------------------------------------


async def test_a_proof_from_before_a_server_restart_is_not_judged_gone(world: Any) -> None:
    make, _ = world
    a = await make("a")
    if a.kind != "postgres":
        pytest.skip("a session's proof is the PostgreSQL store's")
    ops = a.sched._engine.now()
    stale = "session 2001-01-01 00:00:00+00 12345"  # a key nobody holds, another server run
    await ops.run(partial(holder_ops.put, holder="z", proof=stale))
    assert await ops.run(partial(lease_ops.take, key="k", holder="z", ttl=TTL))
    assert not await a.sched.leases.take("k", ttl=TTL)
    assert await a.sched._engine.holders.check() == set()


async def end_session(store: Any, dsn_store: Any) -> None:
    """End ``store``'s holder session from another session, as an administrator would."""
    pid = store.holder_session.backend_pid
    async with dsn_store._acquire() as conn:
        assert await conn.fetchval("SELECT pg_terminate_backend($1)", pid)


async def test_a_holder_whose_session_ended_stops_acting_and_loses_what_was_taken(
    world: Any,
) -> None:
    """Its session ended while it lives on: until it proved itself again it neither claims
    nor acts on a lease it holds; once another process found it gone (before it proved
    itself again), what it held is lost for good, and it learns so before acting."""
    make, gate = world
    b = await make("b")
    if b.kind != "postgres":
        pytest.skip("a session's proof is the PostgreSQL store's")
    session = b.sched.store.holder_session
    reconnect = asyncio.Event()
    connect = session._connect

    async def held_connect() -> Any:
        await reconnect.wait()  # the test decides when it may prove itself again
        return await connect()

    session._connect = held_connect
    assert await b.sched.leases.take("k", ttl=TTL)
    job = await b.sched.enqueue("work")
    await asyncio.wait_for(gate.started.wait(), 10)
    [(_, ctx)] = gate.contexts
    assert ctx.lease_remaining() > 0
    a = await make("a", start=False)
    await a.sched.open()
    holders = b.sched._engine.holders
    restoring = asyncio.Event()  # set once b's driver asks to be proved alive again
    restore = holders.restore

    async def watched_restore() -> None:
        task = asyncio.current_task()
        if not holders.proven and task is not None and task.get_name() == "scheduler-driver":
            restoring.set()
        await restore()

    holders.restore = watched_restore  # type: ignore[method-assign]
    await end_session(b.sched.store, a.sched.store)
    await wait_until(lambda: not holders.proven)
    assert ctx.lease_remaining() == 0  # it learnt at once, before any other process acted
    with pytest.raises(LeaseLost, match="proof of life lapsed"):
        ctx.ensure_lease(1.0)
    assert await a.sched._engine.holders.check() == {"b"}  # found gone meanwhile
    assert await a.sched.leases.take("k", ttl=TTL)
    job_now = await a.sched.get_job(job)
    assert job_now is not None
    assert job_now.state is JobState.PENDING  # reclaimed: it runs again
    # b's driver, woken, proves b alive again before it claims anything (and cannot yet).
    b.sched.wake()
    await asyncio.wait_for(restoring.wait(), 10)
    job_now = await a.sched.get_job(job)
    assert job_now is not None
    assert job_now.state is JobState.PENDING  # not claimed by a process that may be gone
    reconnect.set()
    await wait_until(lambda: holders.proven)
    assert ctx.lease_remaining() == 0  # still lost: someone took it in between
    assert await b.sched.leases.renew(["k"], ttl=TTL) == set()
    gate.go.set()
    await a.sched.close()


async def test_a_holder_that_proved_itself_again_first_keeps_everything(world: Any) -> None:
    make, gate = world
    b = await make("b")
    if b.kind != "postgres":
        pytest.skip("a session's proof is the PostgreSQL store's")
    assert await b.sched.leases.take("k", ttl=TTL)
    await b.sched.enqueue("work")
    await asyncio.wait_for(gate.started.wait(), 10)
    [(_, ctx)] = gate.contexts
    a = await make("a", start=False)
    await a.sched.open()
    holders = b.sched._engine.holders
    epoch = holders.epoch
    await end_session(b.sched.store, a.sched.store)
    await wait_until(lambda: holders.epoch > epoch and holders.proven)
    assert await a.sched._engine.holders.check() == set()  # its new proof stands
    assert not await a.sched.leases.take("k", ttl=TTL)
    assert ctx.lease_remaining() > 0  # nobody found it gone: its run is its own again
    assert await b.sched.leases.renew(["k"], ttl=TTL) == {"k"}
    gate.go.set()
    await a.sched.close()


async def wait_until(predicate: Callable[[], bool], within: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not predicate():
        assert loop.time() < deadline, "never happened"
        await asyncio.sleep(0.01)
