"""Failure reports to the log channel: gathered per server into one message
(``announcements:reports``, a batch of the scheduler enqueued with the record of each
failure), so an outage's twenty failures are one digest in the server's language, cut to
what one Discord message holds; posted once, even when Discord's answer to it is lost; a
one-report job an earlier release stored (``announcements:report``) still posts."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING

from bot.announcements import REPORT_FN, REPORTS_FN, ReportArgs
from bot.posting.log_channel import DIGEST_LIMIT
from scheduler import JobState
from tests.bot.test_delivery import (
    advance,
    break_channel,
    deliveries,
    messages_regex,
    schedule,
    set_log_channel,
)

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.bot.conftest import CrierFactory, World


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
    [job] = await crier.sched.list_jobs(fn=REPORTS_FN)
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
    [job] = await crier.sched.list_jobs(fn=REPORTS_FN)
    assert job.state == JobState.SUCCESS


async def test_twenty_failures_in_an_outage_are_one_digest_in_the_servers_language(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    """Discord answers 503 to every post, in #news and in the log channel, while twenty
    announcements come due: each gives up after its attempts; their reports are gathered
    (two minutes after the first) and the digest waits out the outage too; once Discord is
    back, the log channel gets one message, in the server's language (German), with as many
    of the twenty as fit in one Discord message and the count of the others."""
    world.guild.preferred_locale = "de"
    crier = await crier_factory(report_gather=120.0)
    await set_log_channel(world, world.general)
    locals_ = [await schedule(world, world.news, "in 1m", f"Post {n}") for n in range(20)]
    world.fake.ratelimits.set_message_limit(1000, 5.0)  # 100 failed sends, no 429
    for channel in (world.news, world.general):
        world.fake.faults.add(
            method="POST", path_regex=messages_regex(channel), status=503, times=10_000
        )
    for _ in range(60):  # five minutes, five seconds at a time: attempts, failures, digest
        await advance(crier, clock, timedelta(seconds=5))
    assert {d["state"] for d in await deliveries(crier)} == {"failed"}
    [digest] = await crier.sched.list_jobs(fn=REPORTS_FN)
    assert (digest.state, digest.attempts > 0) == (JobState.PENDING, True)  # in the outage
    assert world.fake.bot_messages(world.general) == []

    world.fake.faults.clear()  # Discord is back
    await advance(crier, clock, timedelta(minutes=10))
    [message] = world.fake.bot_messages(world.general)
    text = message.content or ""
    assert len(text) <= DIGEST_LIMIT
    head, *lines = text.split("\n")
    assert head == "⚠️ 20 Probleme zu melden:"
    more = re.fullmatch(r"…und (\d+) weitere Meldungen?", lines[-1])
    assert more is not None, lines[-1]
    listed = lines[:-1]
    assert len(listed) + int(more[1]) == 20
    assert len(listed) >= 5
    shown = [int(m[1]) for line in listed if (m := re.search(r"Ankündigung #(\d+) ", line))]
    assert len(shown) == len(listed)
    assert len(set(shown)) == len(shown)
    assert set(shown) <= set(locals_)
    for line in listed:
        assert line.startswith("- Ankündigung #"), line
        assert "konnte nicht gepostet werden" in line, line
    [listed_job] = await crier.sched.list_jobs(fn=REPORTS_FN)
    digest = await crier.sched.get_job(listed_job.id)
    assert digest is not None
    assert digest.state == JobState.SUCCESS
    assert len(digest.args["items"]) == 20  # each report in it, once


async def test_a_report_job_an_earlier_release_stored_still_posts(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Before the digest, each report was a job of its own (``announcements:report``)."""
    await set_log_channel(world, world.general)
    message = "⚠️ Announcement #{id} for {channel} could not be posted: {reason}."
    values = {"id": "7", "channel": f"<#{world.news.id}>", "reason": "it broke"}
    async with crier.sched.transaction() as ctx:
        job_id = await ctx.scheduler.enqueue(
            REPORT_FN, ReportArgs(world.guild.id, message.format(**values), message, values)
        )
    await advance(crier, clock, timedelta(seconds=1))
    [report] = world.fake.bot_messages(world.general)
    assert report.content == message.format(**values)
    job = await crier.sched.get_job(job_id)
    assert job is not None
    assert job.state == JobState.SUCCESS
