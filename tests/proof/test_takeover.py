"""Take over from the dead at once, never from the paused; and a calm start (issue 33), with
real ``python -m bot`` processes on one SQLite file or one PostgreSQL database, against the
fake Discord served by this test.

- **SIGKILL, restart.** An instance holding the shard and a delivery in flight (its send
  parked at the fake) is killed; a new one starts. It takes the shard and the delivery
  over *before the dead one's leases run out* (they are 60 s long, and the test compares
  with the expiries the database recorded), answers a command in a fresh gateway session,
  and the occurrence is posted once.
- **SIGSTOP, SIGCONT.** Of two instances, the one in the middle of a send is stopped for
  less than its leases; the other checks it several times meanwhile (its
  ``scheduler_holder_checks_total`` counts them) and takes nothing: no IDENTIFY of the
  paused one's shard, no second run of its delivery. Continued, it finishes the send:
  one message.
- **A cold start of three.** Three instances on 8 shards, let go one after the other by the
  fake's start barrier (their first ``GET /gateway/bot`` held until the test admits it:
  each once the one before is a member of the shards' group), all within the join window:
  each shard is IDENTIFYed once, 8 in all.

Nothing is timed against a guess: the test waits for states (sessions at the fake, lease and
run rows, counters), and the one comparison of times is between two stamps of the database's
own clock.
"""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import time
import urllib.request
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest

from tests.bot.test_shards import sharded_world
from tests.fakediscord import FakeDiscord
from tests.scheduler.pg import fresh_database
from tests.scheduler.stores import require_postgres
from tests.support.instances import Instances, Layout
from tests.support.processes import Process, procs, until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from tests.bot.conftest import World
    from tests.fakediscord import InteractionHandle

DEADLINE = 90.0
"""The longest any observable state is waited for (a loaded 2-core machine)."""
LONG = 60.0
"""Leases long enough that "before they ran out" needs no luck."""
IDENTIFY_WINDOW = 1.0

KINDS = ["sqlite", "postgres"]


@pytest.fixture
async def started() -> AsyncIterator[list[Process]]:
    async with procs() as started:
        yield started


@asynccontextmanager
async def database(kind: str, tmp_path: Path) -> AsyncIterator[str]:
    """A fresh database of ``kind``: its DATABASE_URL."""
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'crier.db'}"
        return
    async with fresh_database(require_postgres("these instances need a PostgreSQL server")) as dsn:
        yield dsn


async def rows(url: str, sql: str, *args: Any) -> list[dict[str, Any]]:
    """Rows of ``sql`` (``$n`` placeholders) on the database at ``url``."""
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=30)
        try:
            conn.row_factory = sqlite3.Row
            lite = sql
            for i in range(len(args), 0, -1):
                lite = lite.replace(f"${i}", "?")
            return [dict(r) for r in conn.execute(lite, args).fetchall()]
        finally:
            conn.close()
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        return [dict(r) for r in await conn.fetch(sql, *args)]
    finally:
        await conn.close()


async def db_now(url: str) -> float:
    """Now on the database's clock (SQLite's is this machine's)."""
    if url.startswith("sqlite:///"):
        return time.time()
    [row] = await rows(url, "SELECT extract(epoch FROM clock_timestamp())::float8 AS now")
    return float(row["now"])


async def wait(what: str, predicate: Callable[[], Any], cluster: Instances) -> None:
    try:
        await until(predicate, DEADLINE, what, interval=0.05)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{cluster.logs()}") from None


def sessions_on(fake: FakeDiscord, shard: int, count: int) -> list[Any]:
    return [s for s in fake.gateway.connected_sessions if s.shard == (shard, count)]


def identifies_of(fake: FakeDiscord, shard: int) -> int:
    return sum(1 for x in fake.identify_log if x.accepted and x.shard[0] == shard)


async def command(world: World, name: str, options: dict[str, Any]) -> InteractionHandle:
    return await world.fake.invoke_command(world.guild, world.general, world.admin, name, options)


def due_in(seconds: float) -> str:
    return f"<t:{int(time.time() + seconds)}>"


async def scheduled_once(world: World) -> None:
    """``/schedule`` "once" in #news, due in a few seconds."""
    h = await command(
        world, "schedule", {"when": due_in(3), "message": "once", "channel": world.news}
    )
    answer = (await h.response(timeout=DEADLINE)).content or ""
    assert "Scheduled announcement **#1**" in answer, answer


async def send_job(url: str) -> dict[str, Any]:
    [job] = await rows(
        url,
        "SELECT id, state, lease_holder, lease_expires_at, run_count FROM scheduler_jobs "
        "WHERE fn = 'announcements:send'",
    )
    return job


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def holder_checks(port: int) -> float:
    """``scheduler_holder_checks_total`` of the instance serving ``/metrics`` on ``port``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith("scheduler_holder_checks_total "):
            return float(line.split()[1])
    raise AssertionError("no scheduler_holder_checks_total in /metrics")


# --- SIGKILL, restart -----------------------------------------------------------------------


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", KINDS)
async def test_a_restart_after_sigkill_takes_over_before_the_dead_ones_leases_run_out(
    kind: str, tmp_path: Path, started: list[Process]
) -> None:
    layout = Layout(
        count=1, shard_lease=LONG, job_lease=LONG, sweep=LONG, identify_interval=IDENTIFY_WINDOW
    )
    async with (
        database(kind, tmp_path) as url,
        FakeDiscord(ratelimits=False, identify_window=IDENTIFY_WINDOW) as fake,
    ):
        world = sharded_world(fake, 0, 1)
        cluster = Instances(fake, url, tmp_path, started, layout)
        first = await cluster.start("first")
        await wait("the first instance connected", lambda: bool(sessions_on(fake, 0, 1)), cluster)
        h = await command(world, "list", {})
        assert (await h.response(timeout=DEADLINE)).content

        # A delivery in flight: its send reaches the fake and is parked there.
        hold = fake.hold_messages(world.news, stage="before")
        await scheduled_once(world)
        await wait("the send parked at the fake", lambda: hold.parked == 1, cluster)
        [shard_lease] = await rows(url, "SELECT holder, expires_at FROM scheduler_leases")
        job = await send_job(url)
        assert shard_lease["holder"] == job["lease_holder"] == "first"
        old_session = sessions_on(fake, 0, 1)[0]

        first.kill()
        assert await first.proc.wait() == -9
        second = await cluster.start("second")

        async def answered_again() -> bool:
            fresh = [s for s in sessions_on(fake, 0, 1) if s is not old_session]
            if not fresh:
                return False
            h = await command(world, "list", {})
            try:
                cb = await h.response(timeout=3.0)
            except TimeoutError:
                return False
            return cb.content is not None

        await wait("a command answered by the restarted instance", answered_again, cluster)
        answered_at = await db_now(url)
        [taken] = await rows(url, "SELECT holder FROM scheduler_leases")
        assert taken["holder"] == "second"
        # The shard was taken, and answers, while the dead one's lease still held.
        assert answered_at < shard_lease["expires_at"], (answered_at, shard_lease)

        # The delivery was taken over too, before its job lease ran out, and posted once.
        await wait("the occurrence posted", lambda: bool(fake.bot_messages(world.news)), cluster)
        lost = await rows(
            url,
            "SELECT process, finished_at, error FROM scheduler_runs WHERE outcome = 'lease_lost'",
        )
        assert [r["process"] for r in lost] == ["first"], lost
        assert "is gone" in lost[0]["error"]
        assert lost[0]["finished_at"] < job["lease_expires_at"]
        hold.release()  # the dead one's parked request goes on: its nonce was used already
        await wait(
            "the occurrence recorded sent",
            lambda: _sent(url),
            cluster,
        )
        assert [m.content for m in fake.bot_messages(world.news)] == ["once"]
        assert second.proc.returncode is None
        assert cluster.problems() == []


async def _done(url: str) -> bool:
    return bool((await send_job(url))["state"] == "success")


async def _sent(url: str) -> bool:
    got = await rows(url, "SELECT state FROM bot_deliveries")
    return [r["state"] for r in got] == ["sent"]


# --- SIGSTOP, SIGCONT -----------------------------------------------------------------------


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", KINDS)
async def test_a_paused_instance_keeps_its_shard_and_its_send_and_nothing_is_doubled(
    kind: str, tmp_path: Path, started: list[Process]
) -> None:
    layout = Layout(
        count=2, shard_lease=LONG, job_lease=LONG, sweep=1.0, identify_interval=IDENTIFY_WINDOW
    )
    async with (
        database(kind, tmp_path) as url,
        FakeDiscord(ratelimits=False, identify_window=IDENTIFY_WINDOW) as fake,
    ):
        worlds = [sharded_world(fake, k, 2) for k in range(2)]
        cluster = Instances(fake, url, tmp_path, started, layout)
        ports = {}
        for name in ("a", "b"):
            ports[name] = free_port()
            layout.extra = {"HTTP_ADDRESS": f"127.0.0.1:{ports[name]}"}
            await cluster.start(name)
        await wait(
            "an instance on each shard",
            lambda: _one_each(cluster),
            cluster,
        )
        # A send parked at the fake: whichever instance claimed it is paused in the middle.
        world = worlds[0]
        hold = fake.hold_messages(world.news, stage="before")
        await scheduled_once(world)
        await wait("the send parked at the fake", lambda: hold.parked == 1, cluster)
        job = await send_job(url)
        paused_name = job["lease_holder"]
        other = "b" if paused_name == "a" else "a"
        holders = await cluster.holders()
        [paused_shard] = holders[paused_name]
        identified = identifies_of(fake, paused_shard)
        leases_end = min(
            r["expires_at"] for r in await cluster.leases() if r["holder"] == paused_name
        )
        leases_end = min(leases_end, job["lease_expires_at"])

        paused = cluster.by_name[paused_name]
        await paused.pause()
        checks = await asyncio.to_thread(holder_checks, ports[other])
        await wait(
            "the other instance to check the paused one three times",
            lambda: _checked(ports[other], checks + 3),
            cluster,
        )
        assert await db_now(url) < leases_end  # still within the paused one's leases
        assert identifies_of(fake, paused_shard) == identified  # nobody took its shard
        assert [s.shard for s in fake.gateway.connected_sessions].count((paused_shard, 2)) <= 1
        assert (await send_job(url))["run_count"] == job["run_count"]  # nor its send
        await paused.resume()
        hold.release()
        await wait("the occurrence recorded sent", lambda: _sent(url), cluster)
        await wait("its run recorded", lambda: _done(url), cluster)

        assert [m.content for m in fake.bot_messages(world.news)] == ["once"]
        runs = await rows(
            url,
            "SELECT outcome, process FROM scheduler_runs WHERE fn = 'announcements:send'",
        )
        assert runs == [{"outcome": "success", "process": paused_name}], runs
        assert identifies_of(fake, paused_shard) == identified
        assert "is gone" not in cluster.by_name[other].log
        assert cluster.problems() == []


async def _members(url: str, n: int) -> bool:
    got = await rows(url, "SELECT holder FROM scheduler_lease_members")
    return len(got) >= n


async def _one_each(cluster: Instances) -> bool:
    return cluster.every_shard_served_once() and await cluster.shares() == [1, 1]


async def _checked(port: int, at_least: float) -> bool:
    return await asyncio.to_thread(holder_checks, port) >= at_least


# --- a cold start of three --------------------------------------------------------------------


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", KINDS)
async def test_three_instances_started_together_identify_each_shard_once(
    kind: str, tmp_path: Path, started: list[Process]
) -> None:
    # (the instances space their IDENTIFYs twice the fake's window apart: the test counts
    # them, and a loaded machine must not make one arrive early for its bucket's rate)
    layout = Layout(count=8, shard_lease=3.0, identify_interval=2 * IDENTIFY_WINDOW)
    async with (
        database(kind, tmp_path) as url,
        FakeDiscord(ratelimits=False, identify_window=IDENTIFY_WINDOW, max_concurrency=2) as fake,
    ):
        for k in range(8):
            sharded_world(fake, k, 8)
        barrier = fake.start_together(3)
        cluster = Instances(fake, url, tmp_path, started, layout)
        for name in ("a", "b", "c"):
            await cluster.start(name)
        await wait("three instances at the barrier", lambda: barrier.arrived == 3, cluster)
        # One after the other, each once the one before is a member of the shards' group:
        # without a calm start the first takes shards and IDENTIFYs some before the others
        # ask for their share, and the others IDENTIFY them again.
        for joined in (1, 2, 3):
            barrier.admit()
            await wait(f"{joined} member(s)", lambda n=joined: _members(url, n), cluster)

        async def even() -> bool:
            # ... and no hand-over under way (a taker confirms once its session is ready)
            leases = await cluster.leases()
            moving = any(r["handed_from"] or r["wanted_by"] for r in leases)
            shares = await cluster.shares()
            return not moving and cluster.every_shard_served_once() and shares == [3, 3, 2]

        await wait("8 shards served, 3, 3 and 2, nothing handed over", even, cluster)
        # A lease round more everywhere (each renews every second): nothing moves any more.
        renewed = {r["lease_key"]: r["expires_at"] for r in await cluster.leases()}

        async def all_renewed() -> bool:
            now = {r["lease_key"]: r["expires_at"] for r in await cluster.leases()}
            return all(now[k] > renewed[k] for k in renewed)

        await wait("every lease renewed once more", all_renewed, cluster)
        assert await cluster.shares() == [3, 3, 2]
        accepted = [x.shard[0] for x in fake.identify_log if x.accepted]
        assert sorted(accepted) == list(range(8)), fake.identify_log
        assert len(fake.identify_log) == 8, "\n".join(map(str, fake.identify_log))
        assert not any(r["handed_from"] for r in await cluster.leases())
        assert cluster.problems() == []
        print(f"\n{kind}: {len(fake.identify_log)} IDENTIFYs for 8 shards, 3 instances")
