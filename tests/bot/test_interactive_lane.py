"""A slash command's database work goes ahead of background work queued in the store
(``scheduler.set_interactive`` in the command tree's check), end to end through the fake.

A command makes two writes: the count of the member's commands (in the tree's check), then
its own. Each goes ahead of every background transaction waiting when it asks; between the
two (while the command reads its options and checks permissions) one background transaction
may take the writer that the count's commit handed on."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tests.fakediscord.interactions import CB_CHANNEL_MESSAGE

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler._lanes import Lanes
    from tests.bot.conftest import World

QUEUED = 5


async def test_schedule_writes_before_background_transactions_queued_ahead_of_it(
    world: World, crier: Crier
) -> None:
    gate: Lanes = crier.sched.store._lock  # type: ignore[attr-defined]
    held, release = asyncio.Event(), asyncio.Event()
    seen: list[tuple[int, int]] = []
    """For each background transaction, in the order they ran: the command counts and the
    announcements it saw."""

    async def holder() -> None:
        async with crier.sched.transaction(interactive=False):
            held.set()
            await release.wait()

    async def background() -> None:
        async with crier.sched.transaction(interactive=False) as ctx:
            cur = await ctx.db.execute(
                "SELECT (SELECT count(*) FROM bot_command_counts), "
                "(SELECT count(*) FROM bot_announcements)"
            )
            row = await cur.fetchone()
            seen.append((int(row[0]), int(row[1])))

    hold = asyncio.create_task(holder())
    await held.wait()
    queued = [asyncio.create_task(background()) for _ in range(QUEUED)]
    await world.fake.wait_until(lambda: gate.waiting[1] >= QUEUED, what="background queued")
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "schedule", {"when": "in 1h", "message": "hi"}
    )
    await world.fake.wait_until(lambda: gate.waiting[0] == 1, what="the command's write queued")
    release.set()
    cb = await h.response()
    await asyncio.gather(hold, *queued)
    assert cb.type == CB_CHANNEL_MESSAGE
    assert "Scheduled announcement" in (cb.content or "")
    # Every one of them ran after the command's first write (queued behind all five, it was
    # handed the writer first). Between its two writes the command awaits Discord, and
    # background work queued meanwhile may run then (how many depends on that wait), but
    # none runs on a state older than one it ran after.
    assert [counted for counted, _ in seen] == [1] * QUEUED, seen
    made = [made for _, made in seen]
    assert made == sorted(made), seen
