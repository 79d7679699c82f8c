"""A busy installation, made the way its users make one (commands through the fake Discord, on
the FakeClock), and every row of a database read in a form two dialects can compare.

:func:`make_busy` leaves, at ``NOW + 15 min``: a one-off due at ``NOW + 1 h`` (pending), a
one-off already posted, an hourly one posted once (next at ``NOW + 70 min``), a paused hourly
one, a canceled one-off, and a one-off with a file due at ``NOW + 2 h``; with their history,
deliveries, jobs, schedules and runs. :data:`DUE_AFTER` says what posts after that, once each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from tests.bot.conftest import NOW, World, run_command, table_names

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock

STOPPED_AT = NOW + timedelta(minutes=15)
"""When :func:`make_busy` leaves the installation (the bot is then stopped)."""
LATER = NOW + timedelta(hours=2, minutes=5)
"""Past every due time of :data:`DUE_AFTER`."""
DUE_AFTER = ["One hour, edited", "Hourly", "Skipped once", "With a file"]
"""What posts in #news between :data:`STOPPED_AT` and :data:`LATER`, in order (at 1:00,
1:10, 1:40 and 2:00 after NOW; the paused one never, the skipped one not at 0:40)."""
POSTED_BEFORE = ["Soon", "Hourly"]
"""What posted in #news before :data:`STOPPED_AT`, in order."""


@dataclass
class Busy:
    ids: dict[str, int]
    """The announcements' numbers by their message."""


async def schedule(world: World, when: str, message: str, **options: Any) -> int:
    cb = await run_command(
        world, "schedule", when=when, message=message, channel=world.news, **options
    )
    found = re.search(r"Scheduled announcement \*\*#(\d+)\*\*", cb.content or "")
    assert found is not None, cb.content
    return int(found[1])


async def make_busy(app: Crier, world: World, clock: FakeClock) -> Busy:
    ids = {
        "One hour": await schedule(world, "in 1h", "One hour"),
        "Soon": await schedule(world, "in 5m", "Soon"),
        "Hourly": await schedule(world, "in 10m", "Hourly", repeat="every 1h"),
        "Paused": await schedule(world, "in 20m", "Paused", repeat="every 1h"),
        "Canceled": await schedule(world, "in 30m", "Canceled"),
        "With a file": await schedule(
            world,
            "in 2h",
            "With a file",
            image=world.fake.make_attachment("chart.png", b"\x89PNG" + bytes(range(256)) * 4),
        ),
    }
    ids["Skipped once"] = await schedule(world, "in 40m", "Skipped once", repeat="every 1h")
    cb = await run_command(
        world, "schedule", when="in 12m", message="Refused", channel=world.general
    )
    found = re.search(r"\*\*#(\d+)\*\*", cb.content or "")
    assert found is not None, cb.content
    ids["Refused"] = int(found[1])
    await run_command(world, "pause", id=ids["Paused"])
    await run_command(world, "cancel", id=ids["Canceled"])
    await run_command(world, "skip", id=ids["Skipped once"])
    await run_command(world, "edit", id=ids["One hour"], message="One hour, edited")
    world.fake.faults.add(
        method="POST",
        path_regex=re.escape(f"/channels/{world.general.id}/messages"),
        status=403,
        code=50013,
        message="Missing Permissions",
    )
    await step_to(app, clock, [NOW + timedelta(minutes=m) for m in (5, 10, 12, 15)])
    refused = await app.bot.announcements.get(world.guild.id, ids["Refused"])
    assert refused.state == "failed", refused
    assert posts(world) == POSTED_BEFORE, posts(world)
    return Busy(ids)


DUE_TIMES = [NOW + timedelta(minutes=m) for m in (40, 60, 70, 100, 120)] + [LATER]
"""The clock's steps from :data:`STOPPED_AT` to :data:`LATER` (each due time on time)."""


async def step_to(app: Crier, clock: FakeClock, times: list[Any]) -> None:
    """Move the clock to each of ``times`` in turn, letting the scheduler finish each."""
    for when in times:
        clock.set(when)
        await app.sched.wait_idle()


def posts(world: World) -> list[str]:
    return [m.content for m in world.fake.bot_messages(world.news)]


def _plain(v: Any) -> Any:
    if isinstance(v, memoryview):
        return bytes(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)  # SQLite hands back 5 for a REAL 5.0 written as an integer
    return v


async def every_row(app: Crier) -> dict[str, list[tuple[tuple[str, Any], ...]]]:
    """Every row of every table (the migrations' own version table aside: each dialect's
    files have their own checksums; the holders' table read as empty: see below), as
    sorted (column, value) pairs, in a sorted list."""
    out: dict[str, list[tuple[tuple[str, Any], ...]]] = {}
    async with app.sched.reader() as db:
        for table in await table_names(app):
            if table == "scheduler_migrations":
                continue
            if table == "scheduler_holders":
                # A running process's proof of life: its own row while it runs (the one
                # reading here), removed when it closes; never moved, never compared.
                out[table] = []
                continue
            cur = await db.execute(f"SELECT * FROM {table}")
            rows = await cur.fetchall()
            out[table] = sorted(
                (tuple(sorted((k, _plain(r[k])) for k in r.keys())) for r in rows),  # noqa: SIM118 (a Row iterates values)
                key=repr,
            )
    return out
