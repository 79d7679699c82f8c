from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.bot.conftest import World


async def test_schedule_then_post(world: World, crier: Crier, clock: FakeClock) -> None:
    h = await world.fake.invoke_command(
        world.guild,
        world.general,
        world.admin,
        "schedule",
        options={"when": "in 10m", "message": "Standup!", "channel": world.news},
    )
    resp = await h.response(timeout=5)
    print(resp.content)
    assert resp.ephemeral
    assert "Scheduled announcement **#1**" in resp.content
    clock.advance(timedelta(minutes=10))
    await crier.sched.wait_idle()
    msgs = world.fake.bot_messages(world.news)
    assert [m.content for m in msgs] == ["Standup!"]
