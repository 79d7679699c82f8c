"""Delivery end to end: the real bot (real discord.py client) against the fake Discord.

Due times follow a FakeClock (move it, then ``await sched.wait_idle()``); spacing, rate limits
and discord.py's own retries run in real time. Announcements are created through ``/schedule``
and settings through ``/settings``, as a server admin would. Every outcome is read back from
the fake (messages, requests, nonces) and from the bot's own tables (``bot_deliveries``,
``bot_announcements``) and the scheduler (jobs, schedules).
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import sqlite3
import time
from contextlib import closing
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.announcements import SEND_FN, Announcement, schedule_name
from bot.models import INTERRUPTED_AND_STOPPED
from bot.posting.delivery import PERMANENT_CODES, nonce_for
from scheduler import JobState
from scheduler.testing import FakeClock
from tests.bot.conftest import NOW, CrierFactory, World
from tests.fakediscord import Permissions as P
from tests.support.processes import until

if TYPE_CHECKING:
    from pathlib import Path

    from bot.app import Crier
    from tests.fakediscord.state import Channel, Message

IDLE_DEADLINE = 30.0


# --- helpers -------------------------------------------------------------------------------------


async def schedule(world: World, channel: Channel, when: str, message: str, **options: Any) -> int:
    """``/schedule`` by the admin; returns the announcement's number (its local id)."""
    h = await world.fake.invoke_command(
        world.guild,
        world.general,
        world.admin,
        "schedule",
        options={"when": when, "message": message, "channel": channel, **options},
    )
    resp = await h.response(timeout=5)
    assert resp.content is not None
    found = re.search(r"Scheduled announcement \*\*#(\d+)\*\*", resp.content)
    assert found is not None, resp.content
    return int(found[1])


async def set_log_channel(world: World, channel: Channel) -> None:
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "settings", options={"log_channel": channel}
    )
    resp = await h.response(timeout=5)
    assert resp.content is not None
    assert f"**Log channel for failures:** <#{channel.id}>" in resp.content, resp.content


async def announcement(crier: Crier, world: World, local_id: int) -> Announcement:
    return await crier.bot.announcements.get(world.guild.id, local_id)


async def deliveries(crier: Crier) -> list[dict[str, Any]]:
    """Every ``bot_deliveries`` row, oldest occurrence first."""
    async with crier.sched.reader() as db:
        cur = await db.execute(
            "SELECT announcement_id, fire_ts, job_id, nonce, state, attempts, message_id, "
            "late_by, error FROM bot_deliveries ORDER BY fire_ts, id"
        )
        rows = await cur.fetchall()
    keys = ("ann", "fire_ts", "job", "nonce", "state", "attempts", "message_id", "late_by", "error")
    return [dict(zip(keys, tuple(r), strict=True)) for r in rows]


async def idle(crier: Crier) -> None:
    await asyncio.wait_for(crier.sched.wait_idle(), IDLE_DEADLINE)


async def advance(crier: Crier, clock: FakeClock, delta: timedelta | float) -> None:
    """Move the FakeClock and wait until everything that came due has finished."""
    clock.advance(delta)
    await idle(crier)


async def advance_to(crier: Crier, clock: FakeClock, when: datetime) -> None:
    clock.set(when)
    await idle(crier)


async def advance_to_retry(crier: Crier, clock: FakeClock, job_id: int) -> None:
    """Move the FakeClock to the job's next attempt (after its backoff) and run it."""
    job = await crier.sched.get_job(job_id)
    assert job is not None, job
    assert job.state == JobState.PENDING, job
    # A millisecond past it: next_at is next_ts cut to the microsecond, which may fall a
    # fraction of one before the float next_ts (the job would not be due yet).
    await advance_to(crier, clock, job.next_at + timedelta(milliseconds=1))


def posts(world: World, channel: Channel) -> list[Message]:
    return world.fake.bot_messages(channel)


def send_requests(world: World, channel: Channel) -> list[Any]:
    """Every message-create request the fake received for ``channel`` (429s included)."""
    path = f"/channels/{channel.id}/messages"
    return [r for r in world.fake.requests if r.method == "POST" and r.path == path]


def messages_regex(channel: Channel) -> str:
    return re.escape(f"/channels/{channel.id}/messages")


def ts(dt: datetime) -> float:
    return dt.timestamp()


# --- 1. on time, once ----------------------------------------------------------------------------


async def test_one_off_arrives_at_its_time_once(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    team = world.guild.add_role("team", 0, mentionable=True)
    local = await schedule(
        world, world.news, "in 10m", "Standup in the big room! @everyone", mention=team
    )
    due = NOW + timedelta(minutes=10)
    ann = await announcement(crier, world, local)

    await advance_to(crier, clock, due - timedelta(seconds=1))
    assert posts(world, world.news) == []
    assert send_requests(world, world.news) == []
    assert await deliveries(crier) == []

    await advance_to(crier, clock, due)
    [msg] = posts(world, world.news)
    assert msg.content == f"<@&{team.id}> Standup in the big room! @everyone"
    # Decided at scheduling time: the role may ping (it is mentionable), @everyone in the text
    # may not (the admin lacks Mention Everyone), users may.
    assert msg.allowed_mentions == {"parse": ["users"], "roles": [team.id]}
    assert msg.pings.roles == frozenset({team.id})
    assert not msg.pings.everyone
    assert msg.nonce == nonce_for(ann.id, ts(due))
    assert msg.enforce_nonce
    [row] = await deliveries(crier)
    assert row["ann"] == ann.id
    assert row["fire_ts"] == ts(due)
    assert row["state"] == "sent"
    assert row["message_id"] == msg.id
    assert row["nonce"] == msg.nonce
    assert row["attempts"] == 1
    assert row["late_by"] == 0.0
    assert row["error"] is None
    after = await announcement(crier, world, local)
    assert after.state == "sent"
    assert after.last_message_id == msg.id
    job = await crier.sched.get_job(row["job"])
    assert job is not None
    assert job.state == JobState.SUCCESS

    await advance(crier, clock, timedelta(days=2))
    assert len(posts(world, world.news)) == 1
    assert len(send_requests(world, world.news)) == 1


async def test_interval_repeat_arrives_at_each_time_once(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, world.news, "in 10m", "Stretch break", repeat="every 2h")
    ann = await announcement(crier, world, local)
    first = NOW + timedelta(minutes=10)
    times = [first + timedelta(hours=2 * i) for i in range(4)]
    for i, due in enumerate(times):
        await advance_to(crier, clock, due - timedelta(seconds=1))
        assert len(posts(world, world.news)) == i, f"occurrence {i} came early"
        await advance_to(crier, clock, due)
        assert len(posts(world, world.news)) == i + 1, f"occurrence {i} missing"

    msgs = posts(world, world.news)
    assert [m.content for m in msgs] == ["Stretch break"] * 4
    rows = await deliveries(crier)
    assert [r["fire_ts"] for r in rows] == [ts(t) for t in times]
    assert [r["message_id"] for r in rows] == [m.id for m in msgs]
    assert [r["state"] for r in rows] == ["sent"] * 4
    assert [m.nonce for m in msgs] == [nonce_for(ann.id, ts(t)) for t in times]
    assert len({m.nonce for m in msgs}) == 4
    assert (await announcement(crier, world, local)).state == "scheduled"
    assert len(send_requests(world, world.news)) == 4


async def test_cron_in_a_zone_follows_local_time_across_dst(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    # 09:00 in New York every day; clocks there go forward on Sunday 2030-03-10.
    local = await schedule(
        world,
        world.news,
        "09:00",
        "Good morning, New York",
        repeat="0 9 * * *",
        timezone="America/New_York",
    )
    assert local == 1
    world.fake.ratelimits.set_message_limit(1000, 5.0)  # 12 posts in a few real seconds
    expected = [
        datetime(2030, 3, d, 14 if d < 10 else 13, 0, tzinfo=UTC) for d in range(1, 13)
    ]  # 09:00 EST = 14:00 UTC; 09:00 EDT = 13:00 UTC
    for i, due in enumerate(expected):
        await advance_to(crier, clock, due - timedelta(seconds=1))
        assert len(posts(world, world.news)) == i, f"{due} came early"
        await advance_to(crier, clock, due)
        assert len(posts(world, world.news)) == i + 1, f"{due} missing"
    rows = await deliveries(crier)
    assert [r["fire_ts"] for r in rows] == [ts(t) for t in expected]
    assert [r["message_id"] for r in rows] == [m.id for m in posts(world, world.news)]
    assert len(send_requests(world, world.news)) == len(expected)


# --- 2. spacing ----------------------------------------------------------------------------------


async def test_one_channel_is_spaced_in_due_order_and_others_not_held_up(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    spacing = 0.2
    crier = await crier_factory(send_spacing=spacing)
    # Measure the bot's spacing, not Discord's per-channel limit (5 per 5 s).
    world.fake.ratelimits.set_message_limit(1000, 5.0)
    base = NOW + timedelta(minutes=30)
    seconds = list(range(25))
    random.Random(25).shuffle(seconds)  # created out of due order
    for s in seconds:
        when = str(int(ts(base)) + s)
        await schedule(world, world.general, when, f"general {s:02d}")
    await schedule(world, world.news, str(int(ts(base)) + 12), "news, due mid-queue")

    # The scheduler paces the channel's jobs on the injected clock: no time passes unless
    # the test moves it.
    clock.set(base + timedelta(seconds=24))  # all 26 due at once
    for i in range(1, 26):
        await until(lambda i=i: len(posts(world, world.general)) == i, 10, f"post {i} of #general")
        await idle(crier)
        if i == 1:
            # The other channel's announcement did not wait for #general's queue.
            assert [m.content for m in posts(world, world.news)] == ["news, due mid-queue"]
        assert len(posts(world, world.general)) == i  # nothing went early
        if i < 25:
            # The next send in #general waits for exactly the spacing, measured from the
            # previous one's start (the fake clock does not move in between): not a
            # millisecond before it, and then at once (the scheduler's own wake-up).
            clock.advance(spacing - 0.001)
            await idle(crier)
            assert len(posts(world, world.general)) == i
            clock.advance(0.002)
    await idle(crier)

    general = posts(world, world.general)
    assert [m.content for m in general] == [f"general {s:02d}" for s in range(25)]
    rows = await deliveries(crier)
    assert [r["state"] for r in rows] == ["sent"] * 26
    assert len(send_requests(world, world.general)) == 25
    jobs = [j for j in await crier.sched.list_jobs(limit=100) if j.fn == "announcements:send"]
    assert len(jobs) == 26, jobs
    assert all(j.run_count == 1 for j in jobs), jobs
    assert world.fake.count_429 == 0


# --- 3. transient errors -------------------------------------------------------------------------


async def test_502_after_the_message_was_created_yields_one_message(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, world.news, "in 5m", "Despite the proxy")
    world.fake.faults.add(
        method="POST", path_regex=messages_regex(world.news), status=502, after_effect=True
    )
    await advance(crier, clock, timedelta(minutes=5))

    [msg] = posts(world, world.news)
    sends = send_requests(world, world.news)
    assert [r.status for r in sends] == [502, 200]
    assert sends[0].body["nonce"] == sends[1].body["nonce"] == msg.nonce
    assert world.fake.nonce_dedup_hits == 1
    [row] = await deliveries(crier)
    assert (row["state"], row["message_id"], row["attempts"]) == ("sent", msg.id, 1)
    assert (await announcement(crier, world, local)).last_message_id == msg.id


async def test_5xx_burst_then_success_yields_one_message(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, world.news, "in 5m", "Third time lucky")
    path = messages_regex(world.news)
    # The first 503 comes after the message was created; discord.py raises a 503 at once,
    # so each one is a failed attempt of the job, retried with backoff by the scheduler.
    world.fake.faults.add(method="POST", path_regex=path, status=503, after_effect=True)
    world.fake.faults.add(method="POST", path_regex=path, status=503)
    await advance(crier, clock, timedelta(minutes=5))
    [created] = posts(world, world.news)
    [row] = await deliveries(crier)
    assert row["state"] == "sending"
    assert row["error"] is not None
    assert row["error"].startswith("HTTP 503")
    job = await crier.sched.get_job(row["job"])
    assert job is not None
    assert job.state == JobState.PENDING
    assert job.attempts == 1

    await advance_to_retry(crier, clock, row["job"])  # second attempt: 503, nothing created
    await advance_to_retry(crier, clock, row["job"])  # third: Discord dedups the nonce

    assert posts(world, world.news) == [created]
    sends = send_requests(world, world.news)
    assert [r.status for r in sends] == [503, 503, 200]
    assert {r.body["nonce"] for r in sends} == {created.nonce}
    assert world.fake.nonce_dedup_hits == 1
    [row] = await deliveries(crier)
    assert (row["state"], row["message_id"], row["attempts"], row["error"]) == (
        "sent",
        created.id,
        3,
        None,
    )
    job = await crier.sched.get_job(row["job"])
    assert job is not None
    assert job.state == JobState.SUCCESS
    assert (await announcement(crier, world, local)).state == "sent"


async def test_connection_dropped_after_the_message_was_created_yields_one_message(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The response is lost (as with a timeout): the next attempt re-sends the same nonce."""
    await schedule(world, world.news, "in 5m", "Lost in transit")
    world.fake.faults.add(
        method="POST", path_regex=messages_regex(world.news), disconnect=True, after_effect=True
    )
    await advance(crier, clock, timedelta(minutes=5))
    [created] = posts(world, world.news)
    [row] = await deliveries(crier)
    assert row["state"] == "sending"

    await advance_to_retry(crier, clock, row["job"])

    assert posts(world, world.news) == [created]
    assert world.fake.nonce_dedup_hits == 1
    [row] = await deliveries(crier)
    assert (row["state"], row["message_id"], row["attempts"]) == ("sent", created.id, 2)


async def test_5xx_until_the_budget_is_spent_is_reported_not_resent_forever(
    world: World, crier: Crier, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="crier.delivery")
    await set_log_channel(world, world.general)
    local = await schedule(world, world.news, "in 5m", "Never makes it")
    world.fake.ratelimits.set_message_limit(1000, 5.0)  # five sends in a few real seconds
    world.fake.faults.add(
        method="POST", path_regex=messages_regex(world.news), status=503, times=100
    )
    await advance(crier, clock, timedelta(minutes=5))
    [row] = await deliveries(crier)
    for _ in range(4):
        await advance_to_retry(crier, clock, row["job"])

    assert posts(world, world.news) == []
    assert len(send_requests(world, world.news)) == 5
    [row] = await deliveries(crier)
    assert row["state"] == "failed"
    assert row["error"].startswith("may not have been delivered: HTTP 503")
    assert row["error"].endswith("(gave up after 5 attempts)")
    ann = await announcement(crier, world, local)
    assert (ann.state, ann.failure) == ("failed", row["error"])
    [report] = posts(world, world.general)
    assert report.content == (
        f"⚠️ Announcement #{local} for <#{world.news.id}> could not be posted: {row['error']}."
    )
    job = await crier.sched.get_job(row["job"])
    assert job is not None
    assert job.state == JobState.FAILED
    retries = [
        r for r in caplog.records if r.name == "crier.delivery" and "will retry" in r.getMessage()
    ]
    assert len(retries) == 4


HANG = 60.0
"""How long the fake holds a send it was told to hang (far longer than any test waits)."""


@pytest.mark.parametrize("created", [False, True], ids=["hung-before-create", "created-unanswered"])
async def test_hung_send_is_abandoned_and_retried_with_the_same_nonce(
    world: World, crier_factory: CrierFactory, clock: FakeClock, created: bool
) -> None:
    """The fake accepts the first send and never answers it within the test, with or
    without having created the message. The bot gives up on it after a third of the nonce
    window, and its retry (same nonce, still inside the window) yields exactly one message:
    created by the retry, or the first one returned by Discord's nonce dedup."""
    window = 4.5  # the hung send is abandoned after 1.5 s
    crier = await crier_factory(nonce_window=window)
    local = await schedule(world, world.news, "in 5m", "Stuck, then through")
    world.fake.faults.add(
        method="POST", path_regex=messages_regex(world.news), delay=HANG, after_effect=created
    )
    due = NOW + timedelta(minutes=5)
    await advance(crier, clock, timedelta(minutes=5))  # returns once the send was abandoned

    [hung] = send_requests(world, world.news)
    assert hung.status == 0  # the fake has not answered it
    first = posts(world, world.news)
    assert len(first) == (1 if created else 0)
    [row] = await deliveries(crier)
    assert (row["state"], row["attempts"], row["error"]) == ("sending", 1, "TimeoutError: ")
    job = await crier.sched.get_job(row["job"])
    assert job is not None
    assert job.state == JobState.PENDING
    assert job.attempts == 1
    assert job.next_ts - ts(due) < window  # the retry comes while Discord knows the nonce

    await advance_to_retry(crier, clock, row["job"])

    [msg] = posts(world, world.news)
    if created:
        assert first == [msg]
    sends = send_requests(world, world.news)
    assert [r.status for r in sends] == [0, 200]  # the first one is still unanswered
    assert [r.body["nonce"] for r in sends] == [row["nonce"], row["nonce"]]
    assert msg.nonce == row["nonce"] == nonce_for(row["ann"], ts(due))
    assert world.fake.nonce_dedup_hits == (1 if created else 0)
    [row] = await deliveries(crier)
    assert (row["state"], row["message_id"], row["attempts"], row["error"]) == (
        "sent",
        msg.id,
        2,
        None,
    )
    job = await crier.sched.get_job(row["job"])
    assert job is not None
    assert job.state == JobState.SUCCESS
    after = await announcement(crier, world, local)
    assert (after.state, after.last_message_id) == ("sent", msg.id)


# --- 4. permanent errors -------------------------------------------------------------------------


def break_channel(world: World, code: int) -> None:
    if code == 10003:
        world.news.delete()
    elif code == 50013:
        world.news.set_overwrite(world.guild.bot_member, deny=P.SEND_MESSAGES)
    elif code == 50001:
        world.news.set_overwrite(world.guild.bot_member, deny=P.VIEW_CHANNEL)
    else:  # pragma: no cover
        raise AssertionError(code)


@pytest.mark.parametrize("code", [10003, 50013, 50001])
async def test_permanent_error_fails_pauses_logs_and_reports(
    world: World, crier: Crier, clock: FakeClock, caplog: pytest.LogCaptureFixture, code: int
) -> None:
    caplog.set_level(logging.ERROR, logger="crier.delivery")
    await set_log_channel(world, world.general)
    local = await schedule(world, world.news, "in 10m", "Weekly digest", repeat="every 1h")
    ann = await announcement(crier, world, local)
    break_channel(world, code)

    await advance(crier, clock, timedelta(minutes=10))

    reason = f"{PERMANENT_CODES[code]} ({code})"
    assert f"({code})" in reason
    assert reason.startswith(
        {10003: "Unknown Channel", 50013: "Missing Permissions", 50001: "Missing Access"}[code]
    )
    [row] = await deliveries(crier)
    assert (row["state"], row["error"], row["message_id"]) == ("failed", reason, None)
    [send] = send_requests(world, world.news)  # no retry
    assert send.code == code
    after = await announcement(crier, world, local)
    assert (after.state, after.failure) == ("paused", reason)
    info = await crier.sched.schedules.get(schedule_name(ann.id))
    assert info.paused
    job = await crier.sched.get_job(row["job"])
    assert job is not None
    assert job.state == JobState.FAILED
    assert job.attempts == 1

    [record] = [r for r in caplog.records if r.name == "crier.delivery"]
    text = record.getMessage()
    assert record.levelno == logging.ERROR
    for part in (
        f"announcement {ann.id} (#{local})",
        reason,
        f"guild {world.guild.id}",
        f"channel {world.news.id}",
        f"job {row['job']}",
        "paused",
    ):
        assert part in text, (part, text)

    [report] = posts(world, world.general)
    assert report.content == (
        f"⚠️ Announcement #{local} for <#{world.news.id}> could not be posted: {reason}. "
        "It is paused; schedule it again once this is fixed."
    )
    assert report.allowed_mentions == {"parse": []}

    await advance(crier, clock, timedelta(hours=5))
    assert len(send_requests(world, world.news)) == 1
    assert len(await deliveries(crier)) == 1
    assert posts(world, world.news) == []
    assert len(posts(world, world.general)) == 1


async def test_permanent_error_on_a_one_off_fails_it_without_a_log_channel(
    world: World, crier: Crier, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="crier.delivery")
    local = await schedule(world, world.news, "in 10m", "Into the void")
    world.news.delete()
    await advance(crier, clock, timedelta(minutes=10))

    reason = f"{PERMANENT_CODES[10003]} (10003)"
    [row] = await deliveries(crier)
    assert (row["state"], row["error"]) == ("failed", reason)
    after = await announcement(crier, world, local)
    assert (after.state, after.failure) == ("failed", reason)
    assert world.fake.bot_messages() == []  # no log channel: nothing posted anywhere
    [record] = [r for r in caplog.records if r.name == "crier.delivery"]
    assert f"channel {world.news.id}" in record.getMessage()
    assert "paused" not in record.getMessage()


# --- 6. late delivery after downtime -------------------------------------------------------------


async def test_late_within_the_catch_up_window_is_sent_with_a_note(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    crier = await crier_factory()
    local = await schedule(world, world.news, "in 10m", "Doors open")
    due = NOW + timedelta(minutes=10)
    await crier.close()  # the bot is down when it comes due

    clock.advance(timedelta(minutes=40))
    assert posts(world, world.news) == []
    crier = await crier_factory()
    await idle(crier)

    [msg] = posts(world, world.news)
    assert msg.content == (
        f"Doors open\n-# Sent late: this was scheduled for <t:{int(ts(due))}:F>."
    )
    [row] = await deliveries(crier)
    assert (row["state"], row["message_id"], row["late_by"]) == ("sent", msg.id, 30 * 60.0)
    assert (await announcement(crier, world, local)).state == "sent"


async def test_late_beyond_the_catch_up_window_is_missed_and_reported(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    crier = await crier_factory()
    await set_log_channel(world, world.general)
    local = await schedule(world, world.news, "in 10m", "Too late for this")
    await crier.close()

    clock.advance(timedelta(hours=2))  # 110 minutes late; the window is 60
    crier = await crier_factory()
    await idle(crier)

    assert posts(world, world.news) == []
    assert send_requests(world, world.news) == []
    reason = "missed: it was due 110 minutes earlier, while the bot was offline"
    [row] = await deliveries(crier)
    assert (row["state"], row["error"], row["message_id"]) == ("missed", reason, None)
    ann = await announcement(crier, world, local)
    assert (ann.state, ann.failure) == ("failed", reason)
    [report] = posts(world, world.general)
    assert report.content == (
        f"⚠️ Announcement #{local} for <#{world.news.id}> could not be posted: {reason}."
    )


async def test_recurring_after_downtime_fires_once_late_then_on_time(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    crier = await crier_factory()
    await schedule(world, world.news, "in 10m", "Hourly status", repeat="every 1h")
    first = NOW + timedelta(minutes=10)
    await advance_to(crier, clock, first)
    assert len(posts(world, world.news)) == 1
    await crier.close()

    # Down for 3h30m: 3 due times pass; catch-up fires the latest once (20 minutes late).
    clock.set(first + timedelta(hours=3, minutes=20))
    crier = await crier_factory()
    await idle(crier)
    latest = first + timedelta(hours=3)
    msgs = posts(world, world.news)
    assert [m.content for m in msgs] == [
        "Hourly status",
        f"Hourly status\n-# Sent late: this was scheduled for <t:{int(ts(latest))}:F>.",
    ]

    await advance_to(crier, clock, first + timedelta(hours=4))
    msgs = posts(world, world.news)
    assert [m.content for m in msgs[2:]] == ["Hourly status"]
    rows = await deliveries(crier)
    assert [r["fire_ts"] for r in rows] == [
        ts(first),
        ts(latest),
        ts(first + timedelta(hours=4)),
    ]
    assert [r["late_by"] for r in rows] == [0.0, 20 * 60.0, 0.0]


# --- 7. rate limits ------------------------------------------------------------------------------


@pytest.mark.parametrize("is_global", [False, True], ids=["route", "global"])
async def test_429_storm_is_waited_out_by_discord_py(
    world: World, crier: Crier, clock: FakeClock, is_global: bool
) -> None:
    await schedule(world, world.news, "in 5m", "Patience")
    world.fake.ratelimits.inject_429(
        3,
        retry_after=0.2,
        is_global=is_global,
        method="POST",
        path_regex=messages_regex(world.news),
    )
    started = time.monotonic()
    await advance(crier, clock, timedelta(minutes=5))

    [msg] = posts(world, world.news)
    sends = send_requests(world, world.news)
    assert [r.status for r in sends] == [429, 429, 429, 200]
    assert all(r.body["nonce"] == msg.nonce for r in sends)
    assert world.fake.count_429 == 3
    assert time.monotonic() - started >= 3 * 0.2  # it waited each retry_after
    [row] = await deliveries(crier)
    assert (row["state"], row["message_id"], row["attempts"]) == ("sent", msg.id, 1)

    # No crash: the bot is still connected and the next one goes out normally.
    assert not crier.bot.is_closed()
    await schedule(world, world.news, "in 5m", "Business as usual")
    await advance(crier, clock, timedelta(minutes=5))
    assert [m.content for m in posts(world, world.news)] == ["Patience", "Business as usual"]


# --- 8. gateway disconnect -----------------------------------------------------------------------


async def test_gateway_disconnect_mid_delivery(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    fake = world.fake
    await schedule(world, world.news, "in 5m", "Over REST")
    resumes = fake.gateway.resume_count
    # Hold the send in the fake for a moment, so the gateway drops while it is in flight.
    fake.faults.add(method="POST", path_regex=messages_regex(world.news), delay=1.0)
    clock.advance(timedelta(minutes=5))
    await fake.wait_until(lambda: send_requests(world, world.news), what="the send to arrive")
    assert posts(world, world.news) == []
    dropped_at = time.time()
    assert await fake.disconnect_gateway() == 1
    await idle(crier)

    [msg] = posts(world, world.news)
    assert msg.created_at > dropped_at
    assert len(send_requests(world, world.news)) == 1
    [row] = await deliveries(crier)
    assert (row["state"], row["message_id"]) == ("sent", msg.id)
    await fake.wait_until(
        lambda: fake.gateway.resume_count > resumes and fake.gateway.connected_sessions,
        timeout=15,
        what="the client to resume",
    )
    # Still fully working after the resume.
    await schedule(world, world.news, "in 5m", "And after")
    await advance(crier, clock, timedelta(minutes=5))
    assert [m.content for m in posts(world, world.news)] == ["Over REST", "And after"]


# --- graceful stop ------------------------------------------------------------------------------


async def stop_mid_delivery(
    world: World, crier: Crier, clock: FakeClock, *, hold: float = 1.0, grace: float | None = None
) -> Message:
    """Stop the bot (as on SIGTERM) while the fake holds, for ``hold`` seconds, the response
    to a send whose message it has created; returns that message. ``grace`` is how long the
    stop waits for in-flight work (default: the scheduler's, 10 s)."""
    await schedule(world, world.news, "in 5m", "Across a restart")
    world.fake.faults.add(
        method="POST", path_regex=messages_regex(world.news), after_effect=True, delay=hold
    )
    clock.advance(timedelta(minutes=5))
    await world.fake.wait_until(lambda: send_requests(world, world.news), what="the send")
    if grace is not None:
        await crier.sched.stop(grace=grace)
    await crier.close()
    [created] = posts(world, world.news)
    return created


async def test_graceful_stop_mid_delivery_then_restart_yields_one_message(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    """The held response (1 s) arrives within the stop's grace (10 s): the send is recorded
    before the bot exits, so the restarted bot has nothing left to send."""
    created = await stop_mid_delivery(world, await crier_factory(), clock)

    crier = await crier_factory()
    await idle(crier)
    [row] = await deliveries(crier)
    assert (row["state"], row["message_id"], row["attempts"]) == ("sent", created.id, 1)
    job = await crier.sched.get_job(row["job"])
    assert job is not None
    assert job.state == JobState.SUCCESS
    assert job.run_count == 1
    await advance(crier, clock, timedelta(hours=1))
    assert posts(world, world.news) == [created]
    assert len(send_requests(world, world.news)) == 1


async def test_stop_whose_grace_ends_mid_send_resends_the_same_nonce_after_restart(
    world: World, crier_factory: CrierFactory, clock: FakeClock, tmp_path: Path
) -> None:
    """The response is held past the stop's grace: the send is cancelled with its row still
    ``sending`` and the job handed back (no attempt counted); the restarted bot re-sends
    with the same nonce and Discord returns the message it had created."""
    created = await stop_mid_delivery(world, await crier_factory(), clock, hold=HANG, grace=0.2)
    with closing(sqlite3.connect(tmp_path / "crier.db")) as conn:
        [(state, message_id, attempts, job_id)] = conn.execute(
            "SELECT state, message_id, attempts, job_id FROM bot_deliveries"
        ).fetchall()
        [(job_state, job_attempts)] = conn.execute(
            "SELECT state, attempts FROM scheduler_jobs WHERE id = ?", (job_id,)
        ).fetchall()
    assert (state, message_id, attempts) == ("sending", None, 1)
    assert (job_state, job_attempts) == ("pending", 0)

    crier = await crier_factory()
    await idle(crier)

    assert posts(world, world.news) == [created]
    sends = send_requests(world, world.news)
    assert [r.body["nonce"] for r in sends] == [created.nonce, created.nonce]
    assert world.fake.nonce_dedup_hits == 1
    [row] = await deliveries(crier)
    assert (row["state"], row["message_id"], row["attempts"]) == ("sent", created.id, 2)
    job = await crier.sched.get_job(job_id)
    assert job is not None
    assert job.state == JobState.SUCCESS
    assert job.run_count == 2


async def test_graceful_stop_lets_an_in_flight_delivery_record_its_send(
    world: World, crier_factory: CrierFactory, clock: FakeClock, tmp_path: Path
) -> None:
    created = await stop_mid_delivery(world, await crier_factory(), clock)
    with closing(sqlite3.connect(tmp_path / "crier.db")) as conn:
        row = conn.execute("SELECT state, message_id FROM bot_deliveries").fetchone()
    assert tuple(row) == ("sent", created.id)


# --- a re-run of a delivery that was recorded ----------------------------------------------------


@pytest.mark.parametrize("recurring", [False, True], ids=["one-off", "recurring"])
async def test_rerun_after_the_message_id_was_recorded_sends_nothing(
    world: World,
    crier_factory: CrierFactory,
    clock: FakeClock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    recurring: bool,
) -> None:
    """The job's completion is lost after the ``sent`` row committed (the database refuses
    it, then the bot stops), so the restarted bot runs the same job again. Discord's nonce
    dedup is off here: only the bot's own records stand between that re-run and a second
    message. A one-off is stopped by its announcement's state (``sent``); a recurring one
    stays ``scheduled``, so only the message id recorded for the occurrence stops it."""
    caplog.set_level(logging.ERROR, logger="scheduler.driver")
    fake = world.fake
    fake.nonce_window = 0.0  # a re-send with the same nonce would be a second message
    crier = await crier_factory()
    options = {"repeat": "every 1h"} if recurring else {}
    local = await schedule(world, world.news, "in 5m", "Recorded once", **options)
    db = tmp_path / "crier.db"
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(
            "CREATE TRIGGER lose_completion BEFORE UPDATE OF state ON scheduler_jobs "
            f"WHEN NEW.fn = '{SEND_FN}' AND NEW.state = 'success' "
            "BEGIN SELECT RAISE(ABORT, 'completion lost'); END"
        )

    clock.advance(timedelta(minutes=5))
    await until(
        lambda: any("(completions failed:" in r.getMessage() for r in caplog.records),
        IDLE_DEADLINE,
        "the job's completion to be refused",
    )
    [created] = posts(world, world.news)
    [row] = await deliveries(crier)
    assert (row["state"], row["message_id"], row["attempts"]) == ("sent", created.id, 1)
    await crier.close()  # gives up on the completion: it is lost
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("DROP TRIGGER lose_completion")
        [(state, run_count)] = conn.execute(
            "SELECT state, run_count FROM scheduler_jobs WHERE id = ?", (row["job"],)
        ).fetchall()
    assert (state, run_count) == ("in_progress", 1)

    crier = await crier_factory()
    clock.advance(timedelta(seconds=crier.settings.lease + 1))  # the lost run's lease expires

    async def rerun_done() -> bool:
        job = await crier.sched.get_job(row["job"])
        return job is not None and job.state == JobState.SUCCESS

    await until(rerun_done, IDLE_DEADLINE, "the re-run of the job")
    await idle(crier)

    assert len(send_requests(world, world.news)) == 1
    assert posts(world, world.news) == [created]
    assert fake.nonce_dedup_hits == 0
    job = await crier.sched.get_job(row["job"])
    assert job is not None
    assert job.run_count == 2
    if recurring:
        assert job.result == {"already": f"sent (message {created.id})"}
    else:
        assert job.result == {"skipped": "sent"}
    assert await deliveries(crier) == [row]
    after = await announcement(crier, world, local)
    assert (after.state, after.last_message_id) == (
        "scheduled" if recurring else "sent",
        created.id,
    )


# --- an interrupted attempt whose announcement then stopped ----------------------------------


async def interrupt_a_send(world: World, crier: Crier, clock: FakeClock, **options: Any) -> int:
    """Schedule in 5 minutes, then stop the bot while the fake hangs on the send (which it has
    created): the attempt's row stays ``sending`` and its job is handed back."""
    local = await schedule(world, world.news, "in 5m", "Interrupted", **options)
    world.fake.faults.add(
        method="POST", path_regex=messages_regex(world.news), after_effect=True, delay=HANG
    )
    clock.advance(timedelta(minutes=5))
    await world.fake.wait_until(lambda: send_requests(world, world.news), what="the send")
    await crier.sched.stop(grace=0.2)
    await crier.close()
    return local


async def test_interrupted_attempt_of_an_announcement_paused_meanwhile_is_closed_not_left_sending(
    world: World, crier_factory: CrierFactory, clock: FakeClock, tmp_path: Path
) -> None:
    """The bot stops mid-send of a recurring occurrence; another instance pauses the
    announcement before this one comes back. The occurrence is not sent again, and its row
    says it may not have been delivered instead of staying ``sending`` for ever."""
    local = await interrupt_a_send(world, await crier_factory(), clock, repeat="every 1h")
    with closing(sqlite3.connect(tmp_path / "crier.db")) as conn:
        conn.execute("UPDATE bot_announcements SET state = 'paused' WHERE local_id = ?", (local,))
        conn.commit()
    world.fake.faults.clear()
    crier = await crier_factory()
    await idle(crier)
    [row] = await deliveries(crier)
    assert (row["state"], row["error"]) == (
        "failed",
        INTERRUPTED_AND_STOPPED.format(state="paused"),
    )
    assert len(send_requests(world, world.news)) == 1  # not sent again


async def test_canceling_a_one_off_whose_attempt_was_interrupted_closes_its_row(
    world: World, crier_factory: CrierFactory, clock: FakeClock, tmp_path: Path
) -> None:
    """The bot stopped mid-send; the announcement is canceled while its job waits to run
    again: the job is canceled and the attempt's row says it may not have been delivered."""
    from bot.announcements import Announcements
    from bot.app import bot_migrations
    from scheduler import Registry, Scheduler, SqliteStore

    local = await interrupt_a_send(world, await crier_factory(), clock)
    # A scheduler whose clock is before the job's time, so that nothing runs it meanwhile.
    sched = Scheduler(
        SqliteStore(tmp_path / "crier.db"),
        Registry(),
        clock=FakeClock(NOW),
        migrations=[bot_migrations()],
    )
    async with sched:
        before = await Announcements(sched).cancel(world.guild.id, local, actor_id=1)
        assert before.job_id is not None
        job = await sched.get_job(before.job_id)
        assert job is not None
        assert job.state == JobState.CANCELED
    with closing(sqlite3.connect(tmp_path / "crier.db")) as conn:
        [(state, error)] = conn.execute("SELECT state, error FROM bot_deliveries").fetchall()
    assert (state, error) == ("failed", INTERRUPTED_AND_STOPPED.format(state="canceled"))
