"""A failure report to the log channel is posted once (``announcements:report``, a job of its
own enqueued with the record of the failure), even when Discord's answer to it is lost."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING

from bot.announcements import REPORT_FN
from scheduler import JobState
from tests.bot.test_delivery import (
    advance,
    break_channel,
    schedule,
    set_log_channel,
)

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.bot.conftest import World


async def test_a_report_whose_answer_was_lost_is_posted_once(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Discord posted the report and the connection dropped before its answer: the report
    job's next run re-sends it with the job's nonce, which Discord answers with the first
    report (discord.py's own nonce is new at every call)."""
    await set_log_channel(world, world.general)
    local = await schedule(world, world.news, "in 1m", "Never seen")
    break_channel(world, 50013)
    world.fake.faults.add(
        method="POST",
        path_regex=re.escape(f"/channels/{world.general.id}/messages"),
        disconnect=True,
        after_effect=True,
    )
    await advance(crier, clock, timedelta(minutes=1))
    [job] = await crier.sched.list_jobs(fn=REPORT_FN)
    assert job.state == JobState.PENDING, job
    assert job.attempts == 1, job

    await advance(crier, clock, timedelta(minutes=1))  # past the job's backoff: it runs again

    [report] = world.fake.bot_messages(world.general)
    assert (report.content or "").startswith(f"⚠️ Announcement #{local} for <#{world.news.id}>")
    sends = [
        r
        for r in world.fake.requests
        if r.method == "POST" and r.path == f"/channels/{world.general.id}/messages"
    ]
    assert len(sends) == 2
    assert world.fake.nonce_dedup_hits == 1
    [job] = await crier.sched.list_jobs(fn=REPORT_FN)
    assert job.state == JobState.SUCCESS
