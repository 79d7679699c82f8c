"""Two bot instances on one database, both connected on the same shard: Discord sends both
sessions every interaction, and every command, form and button must take effect once,
answered once, with nothing logged above DEBUG about the session that lost.

Both bots run in this process on one SQLite file and one FakeClock, through the real
discord.py client against the fake Discord (which, like Discord, gives every session of a
shard each event and refuses a second answer with 40060). Which session wins is left to
chance; every verdict holds whichever it is: after each interaction the test waits until
the other session has given up (``interactions_lost``), then looks at what was written.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

from bot.app import Crier
from tests.bot.conftest import CrierFactory, World, run_command
from tests.fakediscord.interactions import (
    CB_AUTOCOMPLETE_RESULT,
    CB_CHANNEL_MESSAGE,
    CB_MODAL,
    iter_components,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from scheduler.testing import FakeClock
    from tests.fakediscord import InteractionHandle

Pair = tuple[Crier, Crier]


@pytest.fixture
async def pair(crier_factory: CrierFactory, world: World) -> AsyncIterator[Pair]:
    # Both pin shard 0 of 1 (SHARD_IDS): with shard leases, only one would connect.
    a = await crier_factory(shard_count=1, shard_ids=(0,))
    b = await crier_factory(shard_count=1, shard_ids=(0,))
    await world.fake.wait_until(
        lambda: len(world.fake.gateway.connected_sessions) == 2, what="both sessions up"
    )
    return a, b


def lost(pair: Pair) -> int:
    return sum(app.bot.stats.interactions_lost for app in pair)


async def settled(world: World, pair: Pair, losses: int) -> None:
    """Wait until ``losses`` interactions in all were given up by the session that lost."""
    await world.fake.wait_until(lambda: lost(pair) >= losses, what=f"{losses} lost races")
    assert lost(pair) == losses
    for app in pair:
        await app.sched.wait_idle()


def quiet(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Every record of the bot's processes (not the fake Discord's, which logs what it
    refuses) that is about a failure: a warning, an error, a traceback."""
    return [
        f"{r.name}: {r.getMessage()}"
        for r in caplog.records
        if (r.levelno >= logging.WARNING or r.exc_info) and not r.name.startswith("fakediscord")
    ]


async def rows(app: Crier, world: World) -> list[tuple[int, str]]:
    listing = await app.bot.announcements.listing(world.guild.id, 0, 100)
    return sorted((a.local_id, a.state) for a in listing.items)


async def advance(pair: Pair, clock: FakeClock, delta: timedelta) -> None:
    clock.advance(delta)
    for app in pair:
        await app.sched.wait_idle()


async def test_one_schedule_makes_one_announcement_and_one_post(
    world: World, pair: Pair, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    cb = await run_command(world, "schedule", when="in 10m", message="Once!", channel=world.news)
    assert cb.type == CB_CHANNEL_MESSAGE
    assert "Scheduled announcement **#1**" in (cb.content or "")
    await settled(world, pair, 1)
    assert await rows(pair[0], world) == [(1, "scheduled")]
    await advance(pair, clock, timedelta(minutes=10))
    assert [m.content for m in world.fake.bot_messages(world.news)] == ["Once!"]
    assert quiet(caplog) == []
    assert "handled by another session" in caplog.text


async def test_schedule_then_cancel_posts_nothing(
    world: World, pair: Pair, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    await run_command(world, "schedule", when="in 10m", message="Never", channel=world.news)
    await settled(world, pair, 1)
    cb = await run_command(world, "cancel", id=1)
    assert "Canceled announcement **#1**" in (cb.content or "")
    await settled(world, pair, 2)
    assert await rows(pair[0], world) == [(1, "canceled")]
    await advance(pair, clock, timedelta(minutes=10))
    assert world.fake.bot_messages(world.news) == []
    assert quiet(caplog) == []


async def test_every_lifecycle_command_takes_effect_once(
    world: World, pair: Pair, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """pause, resume, skip and edit of a recurring announcement: each writes one change to
    its history (a second effect would add a second row, or refuse and answer twice)."""
    await run_command(
        world, "schedule", when="in 1h", repeat="daily", message="Daily", channel=world.news
    )
    losses = 1
    await settled(world, pair, losses)
    for name, options, answer in [
        ("pause", {"id": 1}, "Paused"),
        ("resume", {"id": 1}, "Resumed"),
        ("skip", {"id": 1}, "Skipping announcement"),
        ("edit", {"id": 1, "message": "Daily, edited"}, "Edited"),
    ]:
        cb = await run_command(world, name, **options)
        assert answer in (cb.content or ""), (name, cb.content)
        losses += 1
        await settled(world, pair, losses)
    details = await pair[1].bot.announcements.info(world.guild.id, 1)
    actions = [h.action for h in details.history]
    assert sorted(actions) == sorted(["created", "paused", "resumed", "skipped", "edited"])
    assert quiet(caplog) == []


async def test_the_form_path_makes_one_announcement(
    world: World, pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    """The form is opened by one session (the other's answer is refused); its submission
    reaches both sessions, and only the one that opened it knows the form."""
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "schedule", {"when": "in 1h"}
    )
    assert (await h.response()).type == CB_MODAL
    await settled(world, pair, 1)
    assert h.modal is not None
    inputs = [
        c
        for c in iter_components(h.modal["components"])
        if c["type"] == 4 and c["label"] == "Message"
    ]
    sub = await h.submit_modal({inputs[0]["custom_id"]: "From the form"})
    done = await sub.response()
    assert "Scheduled announcement **#1**" in (done.content or "")
    for app in pair:
        await app.sched.wait_idle()
    assert await rows(pair[0], world) == [(1, "scheduled")]
    assert quiet(caplog) == []


async def test_reads_and_page_buttons_are_answered_once_without_an_error(
    world: World, pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    for n in range(12):
        await run_command(world, "schedule", when=f"in {n + 1}h", message=f"#{n}")
    await settled(world, pair, 12)
    listed = await world.fake.invoke_command(world.guild, world.general, world.admin, "list", {})
    assert (await listed.response()).type == CB_CHANNEL_MESSAGE
    await settled(world, pair, 13)
    page = await listed.click("crier:list:1")
    await page.response()
    await settled(world, pair, 14)
    assert [cb.accepted for cb in page.callbacks].count(True) == 1
    assert quiet(caplog) == []


async def test_an_autocomplete_answered_by_both_logs_no_traceback(
    world: World, pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    await run_command(world, "schedule", when="in 1h", message="Something")
    await settled(world, pair, 1)
    h: InteractionHandle = await world.fake.invoke_autocomplete(
        world.guild, world.general, world.admin, "cancel", {"id": ""}, focused="id"
    )
    cb = await h.response()
    assert cb.type == CB_AUTOCOMPLETE_RESULT
    await h.wait_for(lambda x: len(x.callbacks) == 2, what="both sessions answered")
    assert [c.error_code for c in h.callbacks if not c.accepted] == [40060]
    assert quiet(caplog) == []


async def test_an_interaction_too_old_to_answer_is_ignored(
    world: World, crier: Crier, caplog: pytest.LogCaptureFixture
) -> None:
    """One that reaches a process long after Discord made it (the process was stopped, or
    cut off, with the event buffered) can't be answered: it must not act on it either, or
    it could act after the key that proves another session handled it is forgotten."""
    stale = await world.fake.invoke_command(
        world.guild,
        world.general,
        world.admin,
        "schedule",
        {"when": "in 1h", "message": "Late"},
        created_at=time.time() - 21 * 60,
    )
    fresh = await world.fake.invoke_command(
        world.guild,
        world.general,
        world.admin,
        "schedule",
        {"when": "in 1h", "message": "In time"},
        created_at=time.time() - 19 * 60,
    )
    await fresh.response()
    await crier.sched.wait_idle()
    assert stale.callbacks == []
    listing = await crier.bot.announcements.listing(world.guild.id, 0, 100)
    assert [a.content for a in listing.items] == ["In time"]
    assert f"ignored interaction {stale.id}" in caplog.text
