"""Named leases (sched.leases) and fair shares of a group of keys, on every store.

"Processes" are schedulers with their own process ids on one database, on one FakeClock;
the rounds of each share are run by the test in an order it chooses (never by timers), so
every hand-over step is seen, and the invariant that matters is checked after each step:
the work of every key runs somewhere, and once things settle, nowhere twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import LeaseShare, Registry, Scheduler
from scheduler._ops import leases as lease_ops
from scheduler.errors import InvalidArgument
from scheduler.leases import quotas
from scheduler.testing import FakeClock

if TYPE_CHECKING:
    from tests.scheduler.stores import StoreFactory

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
TTL = 30.0
KEYS = [f"shard:{i}" for i in range(8)]

Procs = Callable[[str], Scheduler]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
async def procs(stores: StoreFactory, clock: FakeClock) -> AsyncIterator[Procs]:
    """``procs(name)``: a started scheduler named ``name`` on the shared database."""
    async with AsyncExitStack() as stack:
        made: dict[str, Scheduler] = {}

        def make(name: str) -> Scheduler:
            return made[name]

        for name in ("a", "b", "c", "d"):
            made[name] = await stack.enter_async_context(
                Scheduler(
                    stores.new() if not made else stores.again(),
                    Registry(),
                    clock=clock,
                    process_id=name,
                    sweep_interval=3600,
                    liveness_interval=3600,  # (tests/scheduler/test_holders.py tests the watch)
                )
            )
        yield make


class Work:
    """What each process runs: the keys started and not stopped, per process, and a log."""

    def __init__(self) -> None:
        self.running: dict[str, set[str]] = {}
        self.log: list[tuple[str, str, str]] = []

    def share(
        self, sched: Scheduler, keys: list[str] = KEYS, ready: Callable[[str], bool] | None = None
    ) -> LeaseShare:
        name = sched.leases.holder
        self.running.setdefault(name, set())

        async def start(key: str) -> None:
            assert key not in self.running[name]
            self.running[name].add(key)
            self.log.append((name, "start", key))

        async def stop(key: str) -> None:
            self.running[name].remove(key)
            self.log.append((name, "stop", key))

        return sched.leases.share("shards", keys, start=start, stop=stop, ttl=TTL, ready=ready)

    def everywhere(self) -> set[str]:
        return set().union(*self.running.values())

    def counts(self) -> dict[str, int]:
        return {name: len(keys) for name, keys in self.running.items()}

    def twice(self) -> set[str]:
        seen: set[str] = set()
        dup: set[str] = set()
        for keys in self.running.values():
            dup |= seen & keys
            seen |= keys
        return dup


async def settle(work: Work, shares: list[LeaseShare], rounds: int = 6) -> None:
    """Run every share's round in turn, checking after each that no key's work stopped
    running everywhere."""
    for _ in range(rounds):
        for share in shares:
            await share.round()
            assert work.everywhere() == set(KEYS), work.running


# --- single leases ------------------------------------------------------------------------------


async def test_a_lease_is_held_until_it_runs_out_then_free_for_another(
    procs: Procs, clock: FakeClock
) -> None:
    a, b = procs("a"), procs("b")
    assert await a.leases.take("k", ttl=TTL)
    assert await a.leases.take("k", ttl=TTL)  # ours already: taken again (renewed)
    assert not await b.leases.take("k", ttl=TTL)
    assert await b.leases.holders(["k", "other"]) == {"k": "a"}
    clock.advance(TTL - 1)
    assert await a.leases.renew(["k"], ttl=TTL) == {"k"}
    clock.advance(TTL - 1)
    assert not await b.leases.take("k", ttl=TTL)  # renewed: still a's
    clock.advance(2)
    assert await b.leases.holders(["k"]) == {}
    assert await b.leases.take("k", ttl=TTL)
    assert await a.leases.renew(["k"], ttl=TTL) == set()  # a learns it lost it
    await a.leases.release("k")  # not a's: nothing happens
    assert await a.leases.holders(["k"]) == {"k": "b"}
    await b.leases.release("k")
    assert await a.leases.take("k", ttl=TTL)


def test_fair_quotas_differ_by_at_most_one_and_add_up() -> None:
    assert quotas(["a", "b", "c"], 8) == {"a": 3, "b": 3, "c": 2}
    assert quotas(["a"], 8) == {"a": 8}
    assert quotas(["a", "b", "c", "d", "e"], 3) == {"a": 1, "b": 1, "c": 1, "d": 0, "e": 0}
    assert quotas([], 8) == {}


async def test_a_group_needs_distinct_keys(procs: Procs) -> None:
    work = Work()
    with pytest.raises(InvalidArgument):
        work.share(procs("a"), ["k", "k"])
    with pytest.raises(InvalidArgument):
        work.share(procs("a"), [])


# --- fair shares -----------------------------------------------------------------------------


async def test_one_member_runs_every_key(procs: Procs) -> None:
    work = Work()
    a = work.share(procs("a"))
    await a.round()
    assert work.running["a"] == set(KEYS)
    assert a.running == set(KEYS)


async def test_new_members_get_their_share_by_hand_over_and_no_key_ever_stops(
    procs: Procs,
) -> None:
    work = Work()
    a = work.share(procs("a"))
    await a.round()
    b = work.share(procs("b"))
    await settle(work, [b, a])
    assert work.counts() == {"a": 4, "b": 4}
    assert work.twice() == set()
    # b started each of its keys before a stopped it
    for key in work.running["b"]:
        b_start = work.log.index(("b", "start", key))
        a_stop = work.log.index(("a", "stop", key))
        assert b_start < a_stop, key
    c = work.share(procs("c"))
    await settle(work, [c, a, b])
    assert work.counts() == {"a": 3, "b": 3, "c": 2}
    assert work.twice() == set()
    d = work.share(procs("d"))
    await settle(work, [d, a, b, c])
    assert work.counts() == {"a": 2, "b": 2, "c": 2, "d": 2}
    assert work.twice() == set()


async def test_the_giver_runs_a_handed_key_until_the_taker_has_started_it(
    procs: Procs,
) -> None:
    """Each step of one hand-over, with the giver's rounds coming before the taker's."""
    work = Work()
    a = work.share(procs("a"), KEYS[:2])
    await a.round()
    b = work.share(procs("b"), KEYS[:2])
    await b.round()  # b is short of its share, and nothing is free: it asks for one
    assert work.running == {"a": set(KEYS[:2]), "b": set()}
    await a.round()  # a hands it over, and keeps running it
    await a.round()  # b has not started it yet: a still runs it
    assert work.running == {"a": set(KEYS[:2]), "b": set()}
    assert await b.leases.holders(KEYS[:2]) == {"shard:0": "b", "shard:1": "a"}
    await b.round()  # b starts it, then tells a
    assert work.running == {"a": set(KEYS[:2]), "b": {"shard:0"}}
    await a.round()  # now a stops it
    assert work.running == {"a": {"shard:1"}, "b": {"shard:0"}}


async def test_a_handed_key_is_confirmed_only_once_the_takers_work_is_ready(
    procs: Procs,
) -> None:
    """Work that comes up after ``start`` returns (a gateway session connecting): the giver
    keeps running it for as many rounds as the taker's ``ready`` says no."""
    work = Work()
    a = work.share(procs("a"), KEYS[:2])
    await a.round()
    up: set[str] = set()
    b = work.share(procs("b"), KEYS[:2], ready=up.__contains__)
    await b.round()  # asks
    await a.round()  # hands over
    await b.round()  # starts it: not ready yet, so not confirmed
    assert work.running == {"a": set(KEYS[:2]), "b": {"shard:0"}}
    for _ in range(2):
        await a.round()
        await b.round()
        assert work.running == {"a": set(KEYS[:2]), "b": {"shard:0"}}
    up.add("shard:0")
    await b.round()  # ready: confirmed
    await a.round()
    assert work.running == {"a": {"shard:1"}, "b": {"shard:0"}}


async def test_a_dead_members_keys_are_taken_over_once_their_leases_run_out(
    procs: Procs, clock: FakeClock
) -> None:
    work = Work()
    shares = [work.share(procs(n)) for n in ("a", "b", "c")]
    await settle(work, shares)
    assert work.counts() == {"a": 3, "b": 3, "c": 2}
    dead = work.running["c"]
    work.running["c"] = set()  # killed: its work is gone, and it renews nothing more
    alive = shares[:2]
    clock.advance(TTL / 3)
    for share in alive:
        await share.round()
    assert work.everywhere() == set(KEYS) - dead  # still c's until its leases run out
    for _ in range(3):  # the live members' rounds go on, every ttl / 3
        clock.advance(TTL / 3)
        for share in alive:
            await share.round()
    assert work.everywhere() == set(KEYS)
    assert work.counts() == {"a": 4, "b": 4, "c": 0}
    assert work.twice() == set()


async def test_a_member_that_leaves_hands_its_keys_over_first(
    procs: Procs, clock: FakeClock
) -> None:
    work = Work()
    a, b, c = (work.share(procs(n)) for n in ("a", "b", "c"))
    await settle(work, [a, b, c])
    # c leaves (a rolling deploy stopping it): it keeps its work until others took it
    leaving = asyncio.create_task(c.leave(within=TTL))
    while not leaving.done():
        await asyncio.sleep(0)
        await a.round()
        await b.round()
        assert work.everywhere() == set(KEYS), work.running
        clock.advance(TTL / 6)
    await leaving
    await settle(work, [a, b])
    assert work.counts() == {"a": 4, "b": 4, "c": 0}
    assert work.twice() == set()
    # every key c ran was started by its new holder before c stopped it
    for name, what, key in work.log:
        if name == "c" and what == "stop":
            stopped = work.log.index((name, what, key))
            assert any(
                w == "start" and k == key and i < stopped
                for i, (n, w, k) in enumerate(work.log)
                if n != "c"
            ), key


async def test_a_member_alone_that_leaves_releases_everything(procs: Procs) -> None:
    work = Work()
    a = work.share(procs("a"))
    await a.round()
    await a.leave(within=0)
    assert work.running["a"] == set()
    assert await procs("b").leases.holders(KEYS) == {}


async def test_the_only_member_leaves_at_once_whatever_it_would_wait(
    procs: Procs, clock: FakeClock
) -> None:
    """Nobody is left to hand to: waiting ``within`` would leave the keys held for nothing."""
    work = Work()
    a = work.share(procs("a"))
    await a.round()
    await asyncio.wait_for(a.leave(within=TTL), 5)  # the FakeClock never moves
    assert work.running["a"] == set()
    assert await procs("b").leases.holders(KEYS) == {}


async def next_rounds(*shares: LeaseShare, failed: bool = False) -> None:
    """Wait until each share's loop has finished one more round (or failed one more)."""

    def count(s: LeaseShare) -> int:
        return s.failed_rounds if failed else s.rounds

    before = [count(s) for s in shares]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while any(count(s) <= b for s, b in zip(shares, before, strict=True)):
        assert loop.time() < deadline, "a share's loop never ran its round"
        await asyncio.sleep(0.001)


async def test_rounds_run_by_the_clock_once_joined(procs: Procs, clock: FakeClock) -> None:
    work = Work()
    a, b = work.share(procs("a")), work.share(procs("b"))
    await a.join()
    assert work.running["a"] == set(KEYS)
    await b.join()
    for _ in range(4):
        clock.advance(TTL / 3)
        await next_rounds(a, b)
    assert work.counts() == {"a": 4, "b": 4}
    await b.leave(within=0)
    await a.leave(within=0)
    assert work.everywhere() == set()


async def test_a_member_cut_off_from_the_store_stops_what_it_may_have_lost(
    procs: Procs, clock: FakeClock
) -> None:
    """Its rounds fail; once a key's lease may have run out since its last renewal, its
    work stops (another member may have taken it by then)."""
    work = Work()
    a = work.share(procs("a"))
    await a.join()
    assert work.running["a"] == set(KEYS)
    await procs("a").store.close()  # every round fails from now on
    for _ in range(2):
        clock.advance(TTL / 3)
        await next_rounds(a, failed=True)
        assert work.running["a"] == set(KEYS)  # not yet: the leases may still hold
    clock.advance(TTL / 3)
    await next_rounds(a, failed=True)
    assert work.running["a"] == set()
    assert a._task is not None
    a._task.cancel()


async def test_a_round_due_while_its_sleep_was_starting_is_not_slept_past(
    procs: Procs, clock: FakeClock
) -> None:
    """The loop makes its sleep until the next round, and the clock moves before that sleep
    has started (a stepped FakeClock, a busy event loop): the sleep still ends when the
    round is due, not a full delay after the moved time."""
    work = Work()
    a = work.share(procs("a"))
    await a.join()
    due = a._monotonic() + TTL / 3
    sleeping = asyncio.ensure_future(a._sleep_or_poke(due))
    # One turn of the event loop (its ready queue is first in, first out): the task above
    # runs up to its wait, having made its sleep, which starts on the next turn; this test
    # runs before it, and steps the clock in between.
    await asyncio.sleep(0)
    clock.advance(TTL / 3)  # due now
    await asyncio.wait_for(sleeping, 5)  # a sleep measured before the step never ends
    assert not sleeping.result()  # it slept; it was not poked
    await a.leave(within=0)


# --- a calm start -------------------------------------------------------------------------------

SETTLE = 2.0


async def parked(clock: FakeClock, joins: list[asyncio.Task[None]]) -> None:
    """Wait until each of ``joins`` is done or waits on the clock in its calm start (a sleep
    of a quarter of SETTLE or less; nothing else sleeps less than 10 s here)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while sum(1 for s in clock.sleeping if s <= SETTLE / 4) < sum(1 for j in joins if not j.done()):
        assert loop.time() < deadline, clock.sleeping
        await asyncio.sleep(0.001)


async def test_members_starting_together_share_the_keys_out_before_starting_any(
    procs: Procs, clock: FakeClock
) -> None:
    work = Work()
    a, b, c = (
        procs(n).leases.share(
            "shards",
            KEYS,
            start=partial(started, work, n),
            stop=partial(stopped, work, n),
            ttl=TTL,
            settle=SETTLE,
        )
        for n in ("a", "b", "c")
    )
    joins = [asyncio.create_task(a.join())]
    await parked(clock, joins)
    clock.advance(SETTLE / 4)
    joins.append(asyncio.create_task(b.join()))
    await parked(clock, joins)
    clock.advance(SETTLE / 4)
    joins.append(asyncio.create_task(c.join()))
    while True:
        await parked(clock, joins)
        if all(j.done() for j in joins):
            break
        clock.advance(SETTLE / 4)
    await asyncio.gather(*joins)
    assert sorted(work.counts().values()) == [2, 3, 3]
    assert work.everywhere() == set(KEYS)
    assert [w for _, w, _ in work.log] == ["start"] * len(KEYS)  # none started twice
    assert c.settled_in == SETTLE  # quiet for SETTLE after the last arrival
    assert a.settled_in is not None
    assert a.settled_in >= SETTLE + SETTLE / 2  # it saw c arrive, a second after it began
    for share in (a, b, c):
        await share.leave(within=0)


def started(work: Work, name: str, key: str) -> Any:
    async def go() -> None:
        work.running.setdefault(name, set()).add(key)
        work.log.append((name, "start", key))

    return go()


def stopped(work: Work, name: str, key: str) -> Any:
    async def go() -> None:
        work.running[name].discard(key)
        work.log.append((name, "stop", key))

    return go()


async def test_a_lone_member_waits_the_settle_time_once(procs: Procs, clock: FakeClock) -> None:
    work = Work()
    a = work.share(procs("a"))
    a.settle = SETTLE
    join = asyncio.create_task(a.join())
    waited = 0.0
    while True:
        await parked(clock, [join])
        if join.done():
            break
        clock.advance(SETTLE / 4)
        waited += SETTLE / 4
    await join
    assert waited == SETTLE
    assert a.settled_in == SETTLE
    assert work.running["a"] == set(KEYS)
    await a.leave(within=0)


async def test_a_member_joining_a_group_whose_keys_are_all_held_does_not_wait(
    procs: Procs, clock: FakeClock
) -> None:
    work = Work()
    a = work.share(procs("a"))
    await a.join()
    b = work.share(procs("b"))
    b.settle = SETTLE
    await asyncio.wait_for(b.join(), 10)  # the FakeClock never moves
    assert b.settled_in is None
    await b.leave(within=0)
    await a.leave(within=0)


async def test_a_calm_start_waits_five_settle_times_at_most(procs: Procs, clock: FakeClock) -> None:
    """Members that keep arriving (one every three quarters of SETTLE) do not hold a
    starting member back for ever."""
    work = Work()
    a = work.share(procs("a"))
    a.settle = SETTLE
    join = asyncio.create_task(a.join())
    ops = procs("b")._engine.now()
    waited = 0.0
    arrivals = 0
    while True:
        await parked(clock, [join])
        if join.done():
            break
        if waited % (SETTLE * 0.75) < 1e-9:
            arrivals += 1
            await ops.run(partial(lease_ops.join, group="shards", holder=f"x{arrivals}", ttl=TTL))
        clock.advance(SETTLE / 4)
        waited += SETTLE / 4
    await join
    assert a.settled_in == 5 * SETTLE
    assert arrivals >= 5
    await a.leave(within=0)
