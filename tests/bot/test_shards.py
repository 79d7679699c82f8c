"""Gateway shards shared out among bot instances on one database (issue 25, items 2 to 4).

Every instance runs in this process on one SQLite file and one FakeClock, through the real
discord.py clients against the fake Discord, which routes each guild's events and
interactions to shard ``(guild_id >> 22) % count`` only. The shard leases renew every third
of ``SHARD_LEASE_SECONDS`` on the FakeClock: the test moves it a round at a time
(:func:`tick`) and, between moves, waits until every started shard is connected or waiting
for its IDENTIFY turn, so no verdict depends on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.app import Crier
from bot.app.identify import IdentifyGate
from bot.app.shards import IdentifyRefused, ShardingRequired
from bot.web.gateway import ShardState
from scheduler import LeaseShare, Pace, Registry, Scheduler
from scheduler.stores.sqlite import SqliteStore
from scheduler.testing import FakeClock
from tests.bot.conftest import NOW, World, restore_discord_endpoints, settings_for
from tests.bot.test_export_import import export
from tests.fakediscord import FakeDiscord, InteractionHandle
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from tests.fakediscord.state import Channel

COUNT = 4
LEASE = 30.0


def sharded_world(fake: FakeDiscord, shard: int, count: int = COUNT) -> World:
    """A guild on shard ``shard`` of ``count``, with #general, #news, an admin and a member."""
    guild = fake.add_guild(
        name=f"Shard {shard}",
        shard=(shard, count),
        bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE,
    )
    admins = guild.add_role("admins", P.MANAGE_GUILD)
    general = guild.add_channel("general")
    news = guild.add_channel("news")
    return World(
        fake,
        guild,
        general,
        news,
        guild.add_member(name=f"admin{shard}", roles=[admins]),
        guild.add_member(name=f"member{shard}"),
    )


class Cluster:
    """Bot instances started by the test on one database and one FakeClock."""

    def __init__(self, fake: FakeDiscord, db: Path, clock: FakeClock) -> None:
        self.fake = fake
        self.db = db
        self.clock = clock
        self.apps: list[Crier] = []
        self.closed: list[Crier] = []

    def make(self, **overrides: Any) -> Crier:
        values: dict[str, Any] = {
            "shard_count": COUNT,
            "shard_lease": LEASE,
            "identify_interval": 0.0,
        } | overrides
        app = Crier(
            settings_for(self.fake, self.db, **values), clock=self.clock, guild_ready_timeout=0.05
        )
        self.apps.append(app)
        return app

    async def start(self, **overrides: Any) -> Crier:
        app = self.make(**overrides)
        await app.start()
        return app

    @property
    def live(self) -> list[Crier]:
        return [a for a in self.apps if a not in self.closed]

    def settled(self) -> bool:
        return all(a.shards.settled() for a in self.live)

    async def tick(
        self,
        seconds: float = LEASE / 3,
        shares: list[LeaseShare] | None = None,
        until: Callable[[], bool] = lambda: False,
    ) -> None:
        """Move the clock by ``seconds`` (a lease round by default); return once each of
        ``shares`` (default: every live instance's) has run its round, and every started
        shard is connected (or waits for its IDENTIFY turn); or once ``until()``."""
        if shares is None:
            shares = [a.shards.share for a in self.live if a.shards.share is not None]
        before = [s.rounds for s in shares]
        self.clock.advance(seconds)
        await self.fake.wait_until(
            lambda: (
                until()
                or (
                    all(s.rounds > b for s, b in zip(shares, before, strict=True))
                    and self.settled()
                )
            ),
            timeout=20,
            what="every lease round and every shard connected",
        )

    async def until(self, predicate: Callable[[], bool], what: str, ticks: int = 30) -> None:
        """Tick until ``predicate()`` holds (at most ``ticks`` rounds)."""
        for _ in range(ticks):
            if predicate():
                return
            await self.tick()
        assert predicate(), what

    async def close(self, app: Crier, **kwargs: Any) -> None:
        self.closed.append(app)
        await app.close(**kwargs)

    async def drop(self, app: Crier, shard_id: int | None = None) -> None:
        """The sessions of ``app`` (or of its shard ``shard_id``) drop as a frozen process's
        do: its gateway loop stops and its connection goes, with no clean close."""
        for k, runner in list(app.shards.runners.items()):
            if shard_id is not None and k != shard_id:
                continue
            assert runner.task is not None
            runner.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runner.task
            if runner.client.ws is not None:
                await runner.client.ws.close(4000)

    def held(self, app: Crier) -> list[int]:
        return sorted(s.shard_id for s in app.shards.states() if s.held)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
async def cluster(fake: FakeDiscord, tmp_path: Path, clock: FakeClock) -> AsyncIterator[Cluster]:
    c = Cluster(fake, tmp_path / "crier.db", clock)
    try:
        yield c
    finally:
        for app in reversed(c.live):
            await app.close()
        restore_discord_endpoints()


@pytest.fixture
def worlds(fake: FakeDiscord) -> list[World]:
    """A guild on each of the 4 shards."""
    return [sharded_world(fake, k) for k in range(COUNT)]


def sessions_by_shard(fake: FakeDiscord) -> dict[int, int]:
    out: dict[int, int] = {}
    for s in fake.gateway.connected_sessions:
        out[s.shard[0]] = out.get(s.shard[0], 0) + 1
    return out


async def schedule_once_in(world: World, text: str) -> InteractionHandle:
    """``/schedule`` in ``world``'s guild: answered once, by the one session connected on
    its shard (a session closed by a hand-over may still be resumable, so the fake keeps
    its events for it, but nothing connected receives them)."""
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "schedule", {"when": "in 1h", "message": text}
    )
    cb = await h.response(timeout=10)
    assert "Scheduled announcement **#1**" in (cb.content or ""), cb.content
    shard = (world.guild.id >> 22) % COUNT
    connected = [s for s in world.fake.gateway.connected_sessions if s.shard[0] == shard]
    assert len(connected) == 1, "one session per shard"
    assert [c.accepted for c in h.callbacks] == [True]
    return h


async def announcements_in(app: Crier, world: World) -> list[str]:
    listing = await app.bot.announcements.listing(world.guild.id, 0, 100)
    return [a.content for a in listing.items]


class Coverage:
    """Records every moment (each change of the fake's state) at which a shard of
    ``count`` had no connected session."""

    def __init__(self, fake: FakeDiscord, count: int = COUNT) -> None:
        self.gaps: list[list[int]] = []
        changed = fake._changed

        def watch() -> None:
            served = {s.shard[0] for s in fake.gateway.connected_sessions if s.shard[1] == count}
            if served != set(range(count)):
                self.gaps.append(sorted(served))
            changed()

        fake._changed = watch  # type: ignore[method-assign]


# --- one instance ---------------------------------------------------------------------------------


async def test_one_instance_runs_every_shard_and_answers_in_a_guild_of_each(
    worlds: list[World], cluster: Cluster
) -> None:
    app = await cluster.start()
    assert cluster.held(app) == [0, 1, 2, 3]
    assert sessions_by_shard(cluster.fake) == {0: 1, 1: 1, 2: 1, 3: 1}
    assert [c.shard for c in app.clients] == [(k, COUNT) for k in range(COUNT)]
    for k, world in enumerate(worlds):
        await schedule_once_in(world, f"from shard {k}")
        assert await announcements_in(app, world) == [f"from shard {k}"]
    assert app.shards.problems() == []
    assert {s.shard_id: s.guilds for s in app.shards.states()} == {0: 1, 1: 1, 2: 1, 3: 1}


async def test_the_shard_count_defaults_to_discords_recommendation(
    fake: FakeDiscord, cluster: Cluster
) -> None:
    fake.gateway.sharding.recommended_shards = 3
    app = await cluster.start(shard_count=None)
    assert cluster.held(app) == [0, 1, 2]
    assert fake.gateway.connected_shards() == [(0, 3), (1, 3), (2, 3)]


# --- two and three instances ----------------------------------------------------------------------


async def even_pair(
    cluster: Cluster, coverage: list[Coverage] | None = None
) -> tuple[Crier, Crier]:
    """a starts with every shard, then b: by hand-over, 2 each (``coverage`` gets a
    :class:`Coverage` watching from the moment a is up)."""
    a = await cluster.start()
    if coverage is not None:
        coverage.append(Coverage(cluster.fake))
    b = await cluster.start()
    assert cluster.held(b) == []  # everything is a's: b asks, a hands over
    await cluster.until(
        lambda: (
            len(cluster.held(a)) == len(cluster.held(b)) == 2
            and sessions_by_shard(cluster.fake) == dict.fromkeys(range(COUNT), 1)
        ),
        "2 and 2 shards, one session each",
    )
    return a, b


async def test_two_instances_share_four_shards_two_each_and_answer_each_command_once(
    worlds: list[World], cluster: Cluster
) -> None:
    coverage: list[Coverage] = []
    a, b = await even_pair(cluster, coverage)
    assert coverage[0].gaps == []  # every shard was served throughout the hand-over
    assert sorted(cluster.held(a) + cluster.held(b)) == [0, 1, 2, 3]
    for k, world in enumerate(worlds):
        await schedule_once_in(world, f"shard {k}")
    for app in (a, b):
        await app.sched.wait_idle()
    for k, world in enumerate(worlds):
        assert await announcements_in(a, world) == [f"shard {k}"]
    assert a.stats.interactions_lost + b.stats.interactions_lost == 0


async def test_an_instance_that_stops_renewing_loses_its_shards_to_the_other(
    worlds: list[World], cluster: Cluster
) -> None:
    """b hangs (its lease rounds never finish, its sessions drop: a process frozen, then
    cut off): a takes its shards once their leases run out, and answers there."""
    a, b = await even_pair(cluster)
    lost = cluster.held(b)
    assert b.shards.share is not None
    frozen = asyncio.Event()

    async def hang() -> None:
        await frozen.wait()

    b.shards.share.round = hang  # type: ignore[method-assign]
    await cluster.drop(b)
    cluster.closed.append(b)  # not driven by tick any more
    await cluster.fake.wait_until(
        lambda: sorted(sessions_by_shard(cluster.fake)) == cluster.held(a), what="b's sessions gone"
    )
    await cluster.tick()
    assert cluster.held(a) != [0, 1, 2, 3]  # b's leases have not run out yet
    await cluster.until(lambda: cluster.held(a) == [0, 1, 2, 3], "a took b's shards", ticks=5)
    for k in lost:
        await schedule_once_in(worlds[k], f"after b died, shard {k}")
    frozen.set()
    await b.close()


async def test_an_instance_closed_without_hand_over_lets_its_shards_go_at_once(
    worlds: list[World], cluster: Cluster
) -> None:
    a, b = await even_pair(cluster)
    lost = cluster.held(b)
    await cluster.close(b)
    await cluster.until(lambda: cluster.held(a) == [0, 1, 2, 3], "a took b's shards", ticks=2)
    for k in lost:
        await schedule_once_in(worlds[k], f"after b left, shard {k}")


async def test_a_third_instance_gets_its_share_by_hand_over_with_no_shard_unserved(
    worlds: list[World], cluster: Cluster
) -> None:
    """c's shard then waits a minute for its IDENTIFY turn (a slot the test reserves first):
    its giver keeps its session until c's is ready, not merely started."""
    a, b = await even_pair(cluster)
    coverage = Coverage(cluster.fake)
    await a.sched.reserve_slot(Pace("gateway:identify:0", 60.0))
    c = await cluster.start(identify_interval=5.0)
    await cluster.until(
        lambda: (
            sorted(len(cluster.held(x)) for x in (a, b, c)) == [1, 1, 2]
            and sessions_by_shard(cluster.fake) == dict.fromkeys(range(COUNT), 1)
        ),
        "shares of 2, 1 and 1",
    )
    assert coverage.gaps == []
    for k, world in enumerate(worlds):
        await schedule_once_in(world, f"three instances, shard {k}")


async def test_sigterm_hands_every_shard_over_before_leaving(
    worlds: list[World], cluster: Cluster
) -> None:
    """A rolling deploy: b stops with hand-over; each of its sessions is closed only once a
    took the shard over and connected it."""
    a, b = await even_pair(cluster)
    coverage = Coverage(cluster.fake)
    cluster.closed.append(b)
    share = b.shards.share
    assert share is not None
    leaving = asyncio.create_task(b.close(hand_over=True))
    await asyncio.sleep(0)
    ticks = 0
    while not leaving.done():  # b's leave rounds come every LEASE / 6, a's every LEASE / 3
        ticks += 1
        shares = [share] + ([a.shards.share] if ticks % 2 == 0 and a.shards.share else [])
        await cluster.tick(LEASE / 6, shares, until=leaving.done)
    await leaving
    assert cluster.held(a) == [0, 1, 2, 3]
    assert coverage.gaps == []
    for k, world in enumerate(worlds):
        await schedule_once_in(world, f"after the deploy, shard {k}")


async def test_a_lone_instance_leaves_at_once_on_sigterm(
    worlds: list[World], cluster: Cluster
) -> None:
    app = await cluster.start()
    await asyncio.wait_for(cluster.close(app, hand_over=True), 10)  # the clock never moves
    assert cluster.fake.gateway.connected_sessions == []


# --- pinning --------------------------------------------------------------------------------------


async def test_a_shard_stopped_while_it_handles_an_interaction_answers_it_first(
    worlds: list[World], cluster: Cluster
) -> None:
    """A shard is stopped (a hand-over, SIGTERM) while it handles an interaction it received:
    ``/import``, deferred, its file's download held at the fake. Its session and its REST
    client are closed only once the answer is sent: the other sessions that received the
    interaction stay silent (its effect was this one's), so closing under it would lose the
    member's answer."""
    world = worlds[1]
    app = await cluster.start()
    _, data = await export(world)
    release = cluster.fake.attachments.hold_downloads()
    h = await cluster.fake.invoke_command(
        world.guild, world.general, world.admin, "import", {"file": ("export.json", data)}
    )
    await h.response(timeout=10)  # deferred
    await cluster.fake.wait_until(
        lambda: cluster.fake.attachments.downloads_waiting == 1, what="the download at the fake"
    )
    closing = asyncio.create_task(cluster.close(app))
    await cluster.fake.wait_until(
        lambda: 1 not in app.shards.runners or closing.done(), what="shard 1 stopping"
    )
    release.set()
    await asyncio.wait_for(closing, 30)
    # (closed: nothing more can come; the answer is there or it is lost)
    assert h.original is not None
    assert not h.original.loading, "the deferred answer was never completed"
    assert h.original.content.startswith("Nothing to import"), h.original.content  # (empty)


async def test_pinned_shards_take_no_leases(worlds: list[World], cluster: Cluster) -> None:
    a = await cluster.start(shard_ids=(0, 1))
    b = await cluster.start(shard_ids=(2, 3))
    assert (cluster.held(a), cluster.held(b)) == ([0, 1], [2, 3])
    assert a.shards.share is None
    assert b.shards.share is None
    for _ in range(3):
        await cluster.tick(LEASE)
    assert (cluster.held(a), cluster.held(b)) == ([0, 1], [2, 3])
    async with a.sched.reader() as db:
        cur = await db.execute("SELECT COUNT(*) AS n FROM scheduler_leases")
        assert (await cur.fetchone())["n"] == 0


# --- identify limits ------------------------------------------------------------------------------


@pytest.fixture
def paced(clock: FakeClock) -> FakeDiscord:
    """A fake whose gateway allows one IDENTIFY per bucket per 5 s of the test's clock, in
    2 buckets (max_concurrency 2)."""
    return FakeDiscord(identify_window=5.0, gateway_clock=clock.monotonic, max_concurrency=2)


async def drive_starts(
    paced: FakeDiscord, cluster: Cluster, starting: list[asyncio.Task[None]], step: float
) -> None:
    """Move the clock ``step`` at a time while ``starting`` run, each time once every shard
    is connected or waits for its turn; stop early once an IDENTIFY is refused."""

    def refused() -> bool:
        return not all(x.accepted for x in paced.identify_log)

    while not all(t.done() for t in starting):
        await paced.wait_until(
            lambda: all(t.done() for t in starting) or cluster.settled() or refused(),
            timeout=20,
            what="every shard connected or waiting its turn",
        )
        if refused():
            return
        cluster.clock.advance(step)
        await asyncio.sleep(0)


async def test_identify_never_goes_over_the_bucket_rate_across_instances(
    paced: FakeDiscord, tmp_path: Path, clock: FakeClock
) -> None:
    """Two instances that each pin all 4 shards: 8 IDENTIFYs, 4 per bucket, one per 5 s of
    the clock across both, never one too early (the fake would answer op 9)."""
    async with paced:
        for k in range(COUNT):
            sharded_world(paced, k)
        cluster = Cluster(paced, tmp_path / "crier.db", clock)
        apps = [cluster.make(shard_ids=(0, 1, 2, 3), identify_interval=5.0) for _ in range(2)]
        starting = [asyncio.create_task(app.start()) for app in apps]
        try:
            await drive_starts(paced, cluster, starting, 1)
            log = paced.identify_log
            assert [x.outcome for x in log] == ["accepted"] * 8, log
            for t in starting:
                t.result()
            for bucket in (0, 1):
                times = [x.at for x in log if x.bucket == bucket]
                assert len(times) == 4
                assert all(later - earlier >= 5.0 for earlier, later in itertools.pairwise(times))
        finally:
            for app in apps:
                await app.close()
            restore_discord_endpoints()


async def test_an_identify_that_reaches_discord_late_does_not_push_the_next_one_over_the_rate(
    paced: FakeDiscord, tmp_path: Path, clock: FakeClock
) -> None:
    """A turn is a time on the instance's clock; the IDENTIFY reaches Discord once its
    connection is set up, later for one shard than for another. Here the first IDENTIFY of
    bucket 0 reaches the fake 0.5 s after its turn (the fake's clock moves on before judging
    it), the next one exactly on its turn: the turns are reserved a margin more than the
    interval apart, so the two still arrive 5 s apart or more, and neither gets op 9."""
    drift = 0.5
    judge = paced.gateway._identify
    drifted: list[float] = []

    def late(conn: Any, data: Any) -> None:
        if not drifted:
            drifted.append(clock.monotonic())
            clock.advance(drift)
        judge(conn, data)

    paced.gateway._identify = late  # type: ignore[method-assign]
    async with paced:
        for k in range(COUNT):
            sharded_world(paced, k)
        cluster = Cluster(paced, tmp_path / "crier.db", clock)
        app = cluster.make(shard_ids=(0, 2), identify_interval=5.0)  # both of bucket 0
        starting = asyncio.create_task(app.start())
        try:
            # (0.25 s steps wake a turn at its very time: no drift for the second)
            await drive_starts(paced, cluster, [starting], 0.25)
            log = paced.identify_log
            assert drifted
            assert [x.outcome for x in log] == ["accepted"] * 2, log
            starting.result()
            assert log[1].at - log[0].at >= 5.0
        finally:
            await app.close()
            restore_discord_endpoints()


async def test_a_turn_reached_later_than_its_margin_is_given_up_for_a_new_one(
    paced: FakeDiscord, tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Shards 0 and 2 (both of bucket 0) reserve turns 6 s apart (the 5 s window and its
    1 s margin). Shard 0's connection stalls 3 s past its turn (the fake's clock moves on
    when it accepts the socket, before the IDENTIFY is sent): sent then, its IDENTIFY would
    come 3 s before shard 2's, inside the window, and one would get op 9. Shard 0 gives its
    turn up and waits a new one behind shard 2: both are accepted, 5 s apart or more."""
    caplog.set_level(logging.INFO, "crier")
    stall = 3.0
    handle = paced.gateway.handle
    stalled: list[float] = []

    async def slow_first(request: Any) -> Any:
        if not stalled:
            stalled.append(clock.time())
            clock.advance(stall)
        return await handle(request)

    paced.gateway.handle = slow_first  # type: ignore[method-assign]
    async with paced:
        for k in range(COUNT):
            sharded_world(paced, k)
        cluster = Cluster(paced, tmp_path / "crier.db", clock)
        app = cluster.make(shard_ids=(0, 2), identify_interval=5.0)
        starting = asyncio.create_task(app.start())
        try:
            await drive_starts(paced, cluster, [starting], 0.25)
            log = paced.identify_log
            assert stalled
            assert [x.outcome for x in log] == ["accepted"] * 2, log
            starting.result()
            assert [x.shard[0] for x in log] == [2, 0]  # shard 0 went behind shard 2
            assert log[1].at - log[0].at >= 5.0
            assert "past its IDENTIFY turn's margin" in caplog.text
        finally:
            await app.close()
            restore_discord_endpoints()


async def test_a_re_identify_woken_past_its_margin_waits_a_new_turn(tmp_path: Path) -> None:
    """The gate's own wait (a running shard's re-IDENTIFY): a process stalled past its turn
    by more than the margin wakes too late to keep it, so it reserves the bucket's next turn
    (6 s after the one reserved last: the 5 s window and its 1 s margin) and waits for it."""
    clock = FakeClock(NOW)
    limit = {"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1}

    async def fetch() -> dict[str, int]:
        return limit

    async with Scheduler(SqliteStore(tmp_path / "db.sqlite"), Registry(), clock=clock) as sched:
        gate = IdentifyGate(sched, clock, fetch, interval=5.0, kept=1, max_concurrency=1)
        start = clock.time()
        await gate.wait(0)  # the bucket's first turn: now
        waiting = asyncio.create_task(gate.wait(1))  # its turn: start + 6
        await settle(lambda: 1 in gate.waiting)
        clock.advance(10)  # woken 4 s past its turn, 3 s past the margin
        await settle(lambda: gate.identified == 3 and 1 in gate.waiting)  # a new turn
        clock.advance(start + 12 - clock.time() - 0.01)
        await settle(lambda: waiting.done(), settles=False)  # not before start + 12
        clock.advance(0.01)
        await asyncio.wait_for(waiting, 5)


async def settle(done: Callable[[], bool], *, settles: bool = True) -> None:
    """Yield to the loop until ``done()`` (a database round trip takes a few turns; up to
    10 s on a loaded machine), or, with ``settles=False``, check that it does not come
    within 0.1 s (the clock is the test's: nothing would make it come)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + (10.0 if settles else 0.1)
    while loop.time() < end:
        if done():
            break
        await asyncio.sleep(0.005)
    assert done() is settles


async def test_the_session_start_budget_floor_refuses_to_identify(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """6 session starts a day, 2 kept: shards 0 to 3 connect (with a warning once the
    budget is low), shard 4 is refused with a clear error and the last 2 are never spent."""
    async with FakeDiscord(session_start_total=6) as fake:
        for k in range(5):
            sharded_world(fake, k, count=5)
        cluster = Cluster(fake, tmp_path / "crier.db", clock)
        app = cluster.make(shard_count=5, session_starts_kept=2)
        try:
            with pytest.raises(IdentifyRefused) as refused:
                await app.start()
            assert "down to 2 of 6" in str(refused.value)
            assert "SESSION_STARTS_KEPT" in str(refused.value)
            assert fake.gateway.sharding.remaining == 2
            assert len(fake.identify_log) == 4
            assert "session start budget is low: 4 of 6 left" in caplog.text
        finally:
            await app.close()
            restore_discord_endpoints()


async def test_a_shard_past_the_guild_limit_is_a_clear_error_naming_shard_count(
    tmp_path: Path, clock: FakeClock
) -> None:
    async with FakeDiscord(max_guilds_per_shard=2) as fake:
        for k in range(3):
            sharded_world(fake, k)
        cluster = Cluster(fake, tmp_path / "crier.db", clock)
        app = cluster.make(shard_count=1)
        try:
            with pytest.raises(ShardingRequired) as refused:
                await app.start()
            assert "4011" in str(refused.value)
            assert "SHARD_COUNT" in str(refused.value)
        finally:
            await app.close()
            restore_discord_endpoints()


# --- deliveries do not need the guild's shard -----------------------------------------------------


async def test_deliveries_in_a_guild_whose_shard_another_instance_holds(
    worlds: list[World], cluster: Cluster, clock: FakeClock
) -> None:
    """b (shards 2 and 3) schedules a post in a thread, a forum and an announcement channel
    of the guild on shard 3, then stops; a (shards 0 and 1) delivers them all."""
    world = worlds[3]
    world.fake.ratelimits.set_bucket("crosspost", 10, 1.0)
    thread = world.guild.add_thread(world.news, "weekly")
    forum = world.guild.add_forum("releases", tags=["news"])
    updates = world.guild.add_announcement_channel("updates")
    a = await cluster.start(shard_ids=(0, 1))
    b = await cluster.start(shard_ids=(2, 3))
    targets: list[tuple[Channel, dict[str, Any]]] = [
        (thread, {"message": "in the thread"}),
        (forum, {"message": "in the forum", "title": "Release", "tags": "news"}),
        (updates, {"message": "to followers"}),
    ]
    for channel, options in targets:
        h = await world.fake.invoke_command(
            world.guild, world.general, world.admin, "schedule",
            {"when": "in 10m", "channel": channel, **options},
        )  # fmt: skip
        assert "Scheduled announcement" in ((await h.response()).content or "")
        assert h.delivered_to == [s.id for s in world.fake.gateway.sessions_for(world.guild.id)]
    await cluster.close(b)
    assert a.bot.get_guild(world.guild.id) is None  # not a's shard: a knows nothing of it
    clock.advance(timedelta(minutes=10))
    await a.sched.wait_idle()
    assert [m.content for m in world.fake.bot_messages(thread)] == ["in the thread"]
    [post] = world.fake.forum_posts(forum)
    assert post.name == "Release"
    [sent] = world.fake.bot_messages(updates)
    assert sent.content == "to followers"
    await world.fake.wait_until(lambda: sent.crossposted, what="the publish")


# --- what an operator sees ------------------------------------------------------------------------


async def test_shard_states_for_healthz_and_metrics(worlds: list[World], cluster: Cluster) -> None:
    a, b = await even_pair(cluster)
    states = a.shards.states()
    assert [s.shard_id for s in states] == [0, 1, 2, 3]
    assert all(isinstance(s, ShardState) for s in states)
    assert [s.held for s in states] == [k in cluster.held(a) for k in range(COUNT)]
    assert all(s.ready for s in states if s.held)
    assert a.shards.problems() == []
    assert b.shards.problems() == []
    down = cluster.held(b)[0]
    await cluster.drop(b, down)
    await cluster.fake.wait_until(lambda: b.shards.problems() != [], what="b's shard down")
    assert b.shards.problems() == [f"gateway not connected (shard {down} of 4)"]
