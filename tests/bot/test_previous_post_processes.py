"""The previous post with real processes: ``python -m bot`` against the fake Discord, on one
SQLite file, SIGKILLed between the pin of the new post and the unpin of the one before.

The fake holds the unpin request (it never answers), so the kill lands at a known point: the
new post pinned and recorded so, the old one recorded as to be unpinned, both pinned at
Discord. The bot started again takes the killed run's job over (its lease lapses: 2 s) and
unpins the old post: exactly one pinned post. The posts are ``/postnow``'s extra posts (a
post like any: pinned, the one before unpinned), so no test waits for a schedule's minute.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from tests.bot.test_crash_bot import DEADLINE, HOLD, Harness
from tests.fakediscord import Permissions as P
from tests.support.processes import Process, procs, until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from tests.bot.conftest import World
    from tests.fakediscord.state import Message

PINS = P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.PIN_MESSAGES


@pytest.fixture
async def bots() -> AsyncIterator[list[Process]]:
    async with procs() as started:
        yield started


@pytest.fixture
def harness(world: World, tmp_path: Path, bots: list[Process]) -> Harness:
    world.guild.set_bot_permissions(PINS)
    return Harness(world, tmp_path, bots)


def pinned(h: Harness) -> list[Message]:
    return h.fake.pins.pins(h.world.news)


def states(h: Harness) -> list[str | None]:
    return [r["pin_state"] for r in h.query("SELECT pin_state FROM bot_posts ORDER BY posted_at")]


async def test_sigkill_between_the_pin_and_the_unpin_then_restart_leaves_one_pinned_post(
    harness: Harness,
) -> None:
    h = harness
    first_bot = await h.start_bot()
    n = await h.schedule_at(int(time.time()) + 3600, "Standup")
    assert "Pin each post" in await h.command("edit", id=n, pin=True)
    assert "is being posted" in await h.command("postnow", id=n)
    await until(lambda: len(pinned(h)) == 1, DEADLINE, "the first post pinned")
    [first] = pinned(h)

    held = h.fake.faults.add(method="DELETE", path_regex=r"/channels/\d+/messages/pins/\d+",
                             delay=HOLD)  # fmt: skip
    assert "is being posted" in await h.command("postnow", id=n)
    await until(lambda: held.hits == 1, DEADLINE, "the unpin of the first post, held")
    [second] = [m for m in h.fake.bot_messages(h.world.news) if m.id != first.id]
    assert pinned(h) == [first, second]  # the new one pinned first: never none
    assert states(h) == ["unpin", "pinned"]  # each step's intent recorded before it
    await h.kill(first_bot)

    await h.start_bot()
    try:
        await until(lambda: pinned(h) == [second], DEADLINE, "the first post unpinned")
        await until(lambda: states(h) == ["pinned"], DEADLINE, "the unpin recorded")
    except AssertionError:
        raise AssertionError(f"pins: {pinned(h)}, rows: {states(h)}\n{h.logs()}") from None
    assert len(h.fake.bot_messages(h.world.news)) == 2  # nothing posted again
    assert "Traceback" not in h.logs()
