"""Once keys (scheduler.once): work marked with a key takes effect once per key, across every
process sharing the store, and the key is taken in the same commit as the work's writes.

Each test runs on every store. "Two processes" are two schedulers on one database; who goes
first is arranged with events, never left to timing.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from scheduler import AlreadyDone, Registry, Scheduler, once, set_once
from scheduler.errors import InvalidArgument
from scheduler.testing import FakeClock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.scheduler.stores import StoreFactory

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


async def _notes_table(sched: Scheduler) -> None:
    async with sched.transaction() as ctx:
        await ctx.db.execute("CREATE TABLE IF NOT EXISTS notes (text TEXT NOT NULL)")


async def _note(sched: Scheduler, text: str) -> None:
    async with sched.transaction() as ctx:
        await ctx.db.execute(
            "INSERT INTO notes (text) VALUES (?)"
            if ctx.db.dialect == "sqlite"
            else "INSERT INTO notes (text) VALUES ($1)",
            [text],
        )


async def _notes(sched: Scheduler) -> list[str]:
    async with sched.reader() as db:
        rows = await (await db.execute("SELECT text FROM notes ORDER BY text")).fetchall()
    return [r[0] for r in rows]


async def _keys(sched: Scheduler) -> list[str]:
    async with sched.reader() as db:
        cur = await db.execute("SELECT once_key FROM scheduler_once ORDER BY once_key")
        return [r[0] for r in await cur.fetchall()]


@pytest.fixture
async def pair(stores: StoreFactory) -> AsyncIterator[tuple[Scheduler, Scheduler, FakeClock]]:
    """Two schedulers ("processes") on one database, on one fake clock."""
    clock = FakeClock(START)
    async with (
        Scheduler(stores.new(), Registry(), clock=clock, sweep_interval=3600) as a,
        Scheduler(stores.again(), Registry(), clock=clock, sweep_interval=3600) as b,
    ):
        await _notes_table(a)
        yield a, b, clock


async def test_the_second_process_with_the_same_key_writes_nothing(
    pair: tuple[Scheduler, Scheduler, FakeClock],
) -> None:
    a, b, _ = pair
    with once("interaction:1"):
        await _note(a, "from a")
    with once("interaction:1"), pytest.raises(AlreadyDone) as refused:
        await _note(b, "from b")
    assert refused.value.key == "interaction:1"
    assert await _notes(a) == ["from a"]
    # another key is work of its own
    with once("interaction:2"):
        await _note(b, "from b")
    assert await _notes(a) == ["from a", "from b"]


async def test_later_transactions_of_the_block_that_took_the_key_go_ahead(
    pair: tuple[Scheduler, Scheduler, FakeClock],
) -> None:
    a, _, _ = pair
    with once("interaction:1") as mark:
        await _note(a, "first")
        assert mark.taken
        await _note(a, "second")
    assert await _notes(a) == ["first", "second"]
    assert await _keys(a) == ["interaction:1"]


async def test_a_rolled_back_first_transaction_leaves_the_key_free(
    pair: tuple[Scheduler, Scheduler, FakeClock],
) -> None:
    a, b, _ = pair

    class Boom(Exception):
        pass

    with once("interaction:1") as mark, pytest.raises(Boom):  # noqa: PT012 (the body rolls back)
        async with a.transaction() as ctx:
            await ctx.db.execute("INSERT INTO notes (text) VALUES ('lost')")
            raise Boom
    assert not mark.taken
    assert await _keys(a) == []
    with once("interaction:1"):
        await _note(b, "from b")
    assert await _notes(a) == ["from b"]


async def test_a_taker_in_flight_wins_over_a_transaction_that_starts_before_it_commits(
    pair: tuple[Scheduler, Scheduler, FakeClock],
) -> None:
    """A holds the key in an open transaction; B's transaction with the same key starts
    and must wait for A's outcome: A commits, so B writes nothing."""
    a, b, _ = pair
    claimed = asyncio.Event()
    let_go = asyncio.Event()

    async def first() -> None:
        with once("interaction:1"):
            async with a.transaction() as ctx:
                await ctx.db.execute("INSERT INTO notes (text) VALUES ('from a')")
                claimed.set()
                await let_go.wait()

    async def second() -> None:
        await claimed.wait()
        with once("interaction:1"):
            await _note(b, "from b")

    taker = asyncio.create_task(first())
    loser = asyncio.create_task(second())
    await claimed.wait()
    let_go.set()
    await taker
    with pytest.raises(AlreadyDone):
        await loser
    assert await _notes(a) == ["from a"]


async def test_work_without_a_key_and_reads_are_untouched(
    pair: tuple[Scheduler, Scheduler, FakeClock],
) -> None:
    a, b, _ = pair
    await _note(a, "one")
    await _note(b, "two")
    with once("interaction:1"):
        assert await _notes(b) == ["one", "two"]  # a read takes no key
    assert await _keys(a) == []


async def test_set_once_marks_the_rest_of_the_task(
    pair: tuple[Scheduler, Scheduler, FakeClock],
) -> None:
    a, b, _ = pair

    async def handler(sched: Scheduler, text: str) -> None:
        set_once("interaction:7")
        await _note(sched, text)

    await asyncio.create_task(handler(a, "from a"))
    with pytest.raises(AlreadyDone):
        await asyncio.create_task(handler(b, "from b"))
    assert await _notes(a) == ["from a"]
    await _note(a, "unmarked")  # the mark ended with its task
    assert await _notes(a) == ["from a", "unmarked"]


async def test_keys_are_pruned_by_the_sweep_once_their_time_is_over(
    pair: tuple[Scheduler, Scheduler, FakeClock],
) -> None:
    a, b, clock = pair
    with once("interaction:1", ttl=timedelta(minutes=20)):
        await _note(a, "from a")
    clock.advance(timedelta(minutes=19))
    await a.sweep()
    assert await _keys(a) == ["interaction:1"]
    with once("interaction:1"), pytest.raises(AlreadyDone):
        await _note(b, "still refused")
    clock.advance(timedelta(minutes=2))
    await a.sweep()
    assert await _keys(a) == []


def test_a_bad_key_or_ttl_is_refused_before_anything_runs() -> None:
    with pytest.raises(InvalidArgument), once(""):
        pass
    with pytest.raises(InvalidArgument), once("x" * 201):
        pass
    with pytest.raises(InvalidArgument), once("k", ttl=0):
        pass


async def test_a_block_marked_longer_ago_than_half_its_ttl_may_not_take_its_key(
    pair: tuple[Scheduler, Scheduler, FakeClock],
) -> None:
    """A process stopped between receiving an event and acting on it: by then the key
    another process took may be forgotten, so it must not act."""
    a, _, _ = pair
    with once("interaction:1", ttl=600) as mark:
        mark.marked_at -= 301  # marked 301 s ago, by the process's monotonic clock
        with pytest.raises(AlreadyDone):
            await _note(a, "too late")
    assert await _notes(a) == []
    assert await _keys(a) == []
    with once("interaction:2", ttl=600) as mark:
        mark.marked_at -= 299
        await _note(a, "in time")
    assert await _notes(a) == ["in time"]
