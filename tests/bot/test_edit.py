"""/edit end to end: the real bot (real discord.py client) against the fake Discord, on a
FakeClock, with the database checked.

A pending one-off gets a new text or time (posted once, at the new time); a posted one is
edited in place (one PATCH of the recorded message id, the allowed mentions as recorded, never
a second message) unless ``update_posted: false``; a deleted post is reported, not re-posted;
an edit that lands while an occurrence is being sent ends with the post showing the new
text; a recurring rule re-anchors across a DST night; refusals write nothing. The crash case
(SIGKILL between recording an edit and its PATCH) runs real processes, and the options are
fuzzed like /schedule's.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.announcements import SEND_FN, UPDATE_FN, Announcement
from scheduler import JobState
from tests.bot.conftest import NOW, CrierFactory, World, announcement_schedules, run_command
from tests.bot.conftest import schedule_id as schedule
from tests.bot.test_commands import any_db_crier  # noqa: F401  (a fixture used here)
from tests.bot.test_crash_bot import DEADLINE, HOLD, Harness
from tests.fakediscord import InteractionCallback
from tests.fakediscord import Permissions as P
from tests.fakediscord.interactions import CB_CHANNEL_MESSAGE, CB_MODAL, iter_components
from tests.proof.conftest import size
from tests.proof.test_schedule_fuzz import (
    CLIENT_REFUSALS,
    REFUSAL,
    messages,
    render_when,
    repeats,
    timezones,
    whens,
)
from tests.support.processes import Process, procs, until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.fakediscord.state import Member, Message

PARIS = "Europe/Paris"
TABLES = (
    "bot_announcements",
    "bot_deliveries",
    "bot_history",
    "scheduler_jobs",
    "scheduler_schedules",
)


def stamp(dt: datetime, style: str = "F") -> str:
    return f"<t:{int(dt.timestamp())}:{style}>"


async def snapshot(app: Crier) -> dict[str, list[tuple[Any, ...]]]:
    """Every row an edit could write, to assert that a refusal wrote nothing."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    async with app.sched.reader() as db:
        for table in TABLES:
            cur = await db.execute(f"SELECT * FROM {table}")
            out[table] = sorted(tuple(r) for r in await cur.fetchall())
    return out


async def edit(world: World, by: Member | None = None, **options: Any) -> str:
    cb = await run_command(world, "edit", by=by, **options)
    assert cb.type == CB_CHANNEL_MESSAGE, cb
    assert cb.ephemeral, cb
    assert "Something went wrong" not in (cb.content or ""), cb.content
    return cb.content or ""


async def advance(app: Crier, clock: FakeClock, delta: timedelta) -> None:
    clock.advance(delta)
    await app.sched.wait_idle()


async def get(app: Crier, world: World, local_id: int) -> Announcement:
    return await app.bot.announcements.get(world.guild.id, local_id)


async def rows(app: Crier, sql: str, *params: Any) -> list[dict[str, Any]]:
    async with app.sched.reader() as db:
        cur = await db.execute(sql, params)
        return [dict(r) for r in await cur.fetchall()]


async def history(app: Crier, ann: Announcement) -> list[tuple[str, int | None, str]]:
    found = await rows(
        app,
        "SELECT action, actor_id, detail FROM bot_history WHERE announcement_id = ? ORDER BY id",
        ann.id,
    )
    return [(r["action"], r["actor_id"], r["detail"]) for r in found]


def patches(world: World, message: Message) -> list[Any]:
    path = f"/channels/{message.channel_id}/messages/{message.id}"
    return [r for r in world.fake.requests if r.method == "PATCH" and r.path == path]


async def posted_one(
    world: World, crier: Crier, clock: FakeClock, text: str, **options: Any
) -> tuple[int, Message]:
    """A one-off in #news, posted: its number and the message."""
    local = await schedule(world, when="in 10m", message=text, **options)
    await advance(crier, clock, timedelta(minutes=10))
    [msg] = world.fake.bot_messages(world.news)
    return local, msg


# --- pending one-off ----------------------------------------------------------------------------


async def test_edit_text_of_a_pending_one_off(world: World, crier: Crier, clock: FakeClock) -> None:
    local = await schedule(world, when="in 1h", message="Standup at 10")
    content = await edit(world, id=local, message="Standup at 11")
    assert content.startswith(f"✏️ Edited announcement **#{local}** in <#{world.news.id}>.")
    assert "**Message:** changed (preview below)" in content
    assert f"**Next:** {stamp(NOW + timedelta(hours=1))}" in content
    assert content.endswith("**Preview:**\n> Standup at 11")
    a = await get(crier, world, local)
    assert (a.content, a.revision, a.state) == ("Standup at 11", 2, "scheduled")
    assert await history(crier, a) == [
        ("created", world.admin.user.id, ""),
        ("edited", world.admin.user.id, "message"),
    ]
    await advance(crier, clock, timedelta(hours=1))
    assert [m.content for m in world.fake.bot_messages(world.news)] == ["Standup at 11"]
    assert [r for r in world.fake.requests if r.method == "PATCH"] == []


async def test_edit_time_of_a_pending_one_off_posts_once_at_the_new_time(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, when="in 1h", message="moved")
    before = await get(crier, world, local)
    content = await edit(world, id=local, when="in 3h")
    old, new = NOW + timedelta(hours=1), NOW + timedelta(hours=3)
    assert f"**When:** {stamp(old, 'f')} → {stamp(new, 'f')}" in content
    assert f"**Next:** {stamp(new)}" in content
    a = await get(crier, world, local)
    assert a.first_ts == new.timestamp()
    assert a.job_id != before.job_id
    assert before.job_id is not None
    assert a.job_id is not None
    assert (await crier.sched.get_job(before.job_id)).state == "canceled"  # type: ignore[union-attr]
    job = await crier.sched.get_job(a.job_id)
    assert job is not None
    assert (job.state, job.next_ts) == ("pending", new.timestamp())
    assert (await history(crier, a))[-1] == (
        "edited",
        world.admin.user.id,
        f"when: {stamp(old, 'f')} → {stamp(new, 'f')}",
    )
    await advance(crier, clock, timedelta(hours=2, minutes=59))
    assert world.fake.bot_messages(world.news) == []  # not at the old time
    await advance(crier, clock, timedelta(minutes=1))
    assert [m.content for m in world.fake.bot_messages(world.news)] == ["moved"]
    await advance(crier, clock, timedelta(days=1))
    assert len(world.fake.bot_messages(world.news)) == 1


async def test_edit_without_options_opens_the_form_prefilled(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, when="in 1h", message="line one\nline two")
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "edit", {"id": local}
    )
    assert (await h.response()).type == CB_MODAL
    assert h.modal is not None
    assert h.modal["title"] == f"Edit announcement #{local}"
    [field] = [
        c
        for c in iter_components(h.modal["components"])
        if c["type"] == 4 and c["label"] == "Message"
    ]
    assert field["value"] == "line one\nline two"
    sub = await h.submit_modal({field["custom_id"]: "line one\nline 2"})
    assert "✏️ Edited announcement" in ((await sub.response()).content or "")
    assert (await get(crier, world, local)).content == "line one\nline 2"


async def test_repeat_none_and_a_new_repeat(world: World, crier: Crier, clock: FakeClock) -> None:
    local = await schedule(world, when="in 1h", message="tick")
    content = await edit(world, id=local, repeat="every 2h")
    assert "**Repeats:** no (posted once) → every 2 hours" in content
    a = await get(crier, world, local)
    assert a.recurring
    assert a.job_id is None
    assert a.schedule_name is not None
    [info] = await announcement_schedules(crier)
    assert info.name == a.schedule_name
    assert info.next_fire == NOW + timedelta(hours=1)
    assert [j.state for j in await crier.sched.list_jobs()] == ["canceled"]
    await advance(crier, clock, timedelta(hours=1))
    await advance(crier, clock, timedelta(hours=2))
    assert len(world.fake.bot_messages(world.news)) == 2
    content = await edit(world, id=local, repeat="none")
    assert "**Repeats:** every 2 hours → no (posted once)" in content
    assert f"**Next:** {stamp(NOW + timedelta(hours=5))}" in content
    assert await announcement_schedules(crier) == []
    await advance(crier, clock, timedelta(hours=2))
    await advance(crier, clock, timedelta(hours=6))
    assert len(world.fake.bot_messages(world.news)) == 3
    assert (await get(crier, world, local)).state == "sent"


# --- posted -------------------------------------------------------------------------------------


async def test_edit_of_a_posted_one_patches_the_same_message(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    role = world.guild.add_role("events", mentionable=True)
    local, msg = await posted_one(world, crier, clock, "Game night at 8", mention=role)
    sent_with = msg.allowed_mentions
    assert sent_with is not None
    assert sent_with["roles"] == [role.id]
    content = await edit(world, id=local, message="Game night at 9")
    link = f"https://discord.com/channels/{world.guild.id}/{world.news.id}/{msg.id}"
    assert f"The posted message {link} is being edited in place." in content
    assert "**State:** sent" in content
    await crier.sched.wait_idle()

    assert world.fake.bot_messages(world.news) == [msg]  # no second message
    assert msg.content == f"<@&{role.id}> Game night at 9"
    [patch] = patches(world, msg)
    assert patch.status == 200
    assert patch.body["allowed_mentions"] == sent_with  # as recorded
    assert msg.history[0]["content"] == f"<@&{role.id}> Game night at 8"
    a = await get(crier, world, local)
    [row] = await rows(crier, "SELECT * FROM bot_deliveries WHERE announcement_id = ?", a.id)
    assert (row["message_id"], row["revision"], row["update_error"]) == (msg.id, 2, None)
    assert [h[0] for h in await history(crier, a)] == ["created", "edited", "post_updated"]
    [job] = await crier.sched.list_jobs(fn=UPDATE_FN)
    assert job.state == "success"


async def test_edit_time_and_posted_text_on_every_database(
    world: World,
    any_db_crier: Crier,  # noqa: F811  (the fixture imported above)
    clock: FakeClock,
) -> None:
    """The edit's writes (row, job, history, update job) on SQLite and PostgreSQL."""
    crier = any_db_crier
    pending = await schedule(world, when="in 1h", message="later")
    await edit(world, id=pending, when="in 2h", message="even later")
    local, msg = await posted_one(world, crier, clock, "posted")
    assert "being edited in place" in await edit(world, id=local, message="fixed")
    await crier.sched.wait_idle()
    assert msg.content == "fixed"
    assert len(patches(world, msg)) == 1
    await advance(crier, clock, timedelta(hours=1, minutes=50))  # 2 h after the edit
    assert [m.content for m in world.fake.bot_messages(world.news)] == ["fixed", "even later"]
    a = await get(crier, world, local)
    assert [h[0] for h in await history(crier, a)] == ["created", "edited", "post_updated"]


async def test_a_burst_of_edits_is_one_patch_with_the_last_text(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    """Five edits of a posted announcement, each within the quiet period of the one before:
    its message is edited once, after the last, with the fifth text (the scheduler's
    debounce of the update, per message)."""
    crier = await crier_factory(edit_quiet=10.0)
    local, msg = await posted_one(world, crier, clock, "v0")
    for n in range(1, 6):
        assert "being edited in place" in await edit(world, id=local, message=f"v{n}")
        await advance(crier, clock, timedelta(seconds=4))  # less than the quiet period
    assert patches(world, msg) == []  # still within the quiet period of the last edit
    assert msg.content == "v0"
    await advance(crier, clock, timedelta(seconds=6))  # 10 s after the fifth edit
    [patch] = patches(world, msg)
    assert (patch.status, patch.body["content"]) == (200, "v5")
    assert msg.content == "v5"
    assert world.fake.bot_messages(world.news) == [msg]
    [job] = await crier.sched.list_jobs(fn=UPDATE_FN)
    assert job.state == "success"
    a = await get(crier, world, local)
    [row] = await rows(crier, "SELECT revision FROM bot_deliveries WHERE announcement_id = ?", a.id)
    assert row["revision"] == a.revision  # it shows the last edit


async def test_a_transient_error_on_the_patch_is_retried(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local, msg = await posted_one(world, crier, clock, "v1")
    path = re.escape(f"/channels/{world.news.id}/messages/{msg.id}")
    world.fake.faults.add(method="PATCH", path_regex=path, status=503)
    await edit(world, id=local, message="v2")
    await crier.sched.wait_idle()
    assert msg.content == "v1"  # the PATCH met a 503: the job waits to retry
    [job] = await crier.sched.list_jobs(fn=UPDATE_FN)
    assert job.state == "pending"
    assert job.attempts == 1
    await advance(crier, clock, timedelta(seconds=3))
    assert msg.content == "v2"
    assert world.fake.bot_messages(world.news) == [msg]
    [job] = await crier.sched.list_jobs(fn=UPDATE_FN)
    assert job.state == "success"


async def test_update_posted_false_leaves_the_post(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local, msg = await posted_one(world, crier, clock, "first words")
    content = await edit(world, id=local, message="second words", update_posted=False)
    assert "is left as it was (`update_posted: false`)" in content
    await crier.sched.wait_idle()
    assert msg.content == "first words"
    assert patches(world, msg) == []
    assert await crier.sched.list_jobs(fn=UPDATE_FN) == []
    assert (await get(crier, world, local)).content == "second words"


async def test_a_deleted_post_is_reported_and_not_posted_again(
    world: World, crier: Crier, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="bot.posting.updates")
    await run_command(world, "settings", log_channel=world.general)
    local, msg = await posted_one(world, crier, clock, "to be deleted")
    world.fake._delete(msg)  # a moderator deletes it
    await edit(world, id=local, message="corrected")
    await crier.sched.wait_idle()

    assert world.fake.bot_messages(world.news) == []  # not re-posted
    [patch] = patches(world, msg)
    assert (patch.status, patch.code) == (404, 10008)
    a = await get(crier, world, local)
    [row] = await rows(crier, "SELECT * FROM bot_deliveries WHERE announcement_id = ?", a.id)
    assert row["revision"] == 1
    assert "Unknown Message" in row["update_error"]
    assert (await history(crier, a))[-1] == ("post_update_failed", None, row["update_error"])
    [report] = world.fake.bot_messages(world.general)
    assert report.content == (
        f"⚠️ The posted message of announcement #{local} in <#{world.news.id}> could not be "
        f"updated with its edit: {row['update_error']}. It was not posted again."
    )
    assert any(f"announcement {a.id} (#{local})" in r.getMessage() for r in caplog.records)
    # A later edit says so instead of trying again.
    content = await edit(world, id=local, message="corrected again")
    assert "can't be updated" in content
    await crier.sched.wait_idle()
    assert len(patches(world, msg)) == 1


@pytest.mark.parametrize("stage", ["before", "after"])
async def test_edit_racing_an_occurrence_mid_send_ends_with_the_new_text(
    world: World, crier: Crier, clock: FakeClock, stage: str
) -> None:
    local = await schedule(world, when="in 10m", message="old text")
    hold = world.fake.hold_messages(world.news, stage=stage)  # type: ignore[arg-type]
    clock.advance(timedelta(minutes=10))
    idle = asyncio.create_task(crier.sched.wait_idle())
    await world.fake.wait_until(lambda: hold.parked, what="the send to be held")
    content = await edit(world, id=local, message="new text")
    assert "It is being posted right now; the posted message will show the new text." in content
    hold.release()
    await idle
    await crier.sched.wait_idle()

    [msg] = world.fake.bot_messages(world.news)
    assert msg.content == "new text"
    assert len(patches(world, msg)) == 1
    a = await get(crier, world, local)
    [row] = await rows(crier, "SELECT * FROM bot_deliveries WHERE announcement_id = ?", a.id)
    assert (row["state"], row["revision"], a.revision) == ("sent", 2, 2)


async def test_channel_change_after_a_post_leaves_that_post(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, when="in 10m", message="here", repeat="daily")
    await advance(crier, clock, timedelta(minutes=10))
    [msg] = world.fake.bot_messages(world.news)
    content = await edit(world, id=local, channel=world.general, message="there")
    assert f"**Channel:** <#{world.news.id}> → <#{world.general.id}>" in content
    assert "can't be updated" in content
    await advance(crier, clock, timedelta(days=1))
    assert msg.content == "here"
    assert patches(world, msg) == []
    assert [m.content for m in world.fake.bot_messages(world.general)] == ["there"]


async def test_channel_change_mid_send_leaves_that_post(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The occurrence being sent goes to the channel it started in; that post is then no
    longer the announcement's to update (a later text edit does not PATCH it)."""
    local = await schedule(world, when="in 10m", message="here", repeat="daily")
    hold = world.fake.hold_messages(world.news, stage="after")
    clock.advance(timedelta(minutes=10))
    idle = asyncio.create_task(crier.sched.wait_idle())
    await world.fake.wait_until(lambda: hold.parked, what="the send to be held")
    await edit(world, id=local, channel=world.general)
    hold.release()
    await idle
    [msg] = world.fake.bot_messages(world.news)
    a = await get(crier, world, local)
    [row] = await rows(crier, "SELECT * FROM bot_deliveries WHERE announcement_id = ?", a.id)
    assert (
        row["update_error"]
        == f"the announcement moved to <#{world.general.id}>: this post is no longer updated"
    )
    assert "can't be updated" in await edit(world, id=local, message="there")
    await crier.sched.wait_idle()
    assert msg.content == "here"
    assert patches(world, msg) == []


@pytest.mark.parametrize("repeat", [None, "daily"], ids=["one-off", "recurring"])
async def test_channel_change_paces_the_deliveries_by_the_new_channel(
    world: World, crier_factory: CrierFactory, clock: FakeClock, repeat: str | None
) -> None:
    """Delivery jobs carry their channel's pace (spacing holds across instances): after a
    channel change, the announcement's next delivery is spaced with the new channel's."""
    crier = await crier_factory(send_spacing=0.2)
    options = {"when": "in 10m", "message": "moving"} | ({"repeat": repeat} if repeat else {})
    local = await schedule(world, **options)
    await edit(world, id=local, channel=world.general)
    await advance(crier, clock, timedelta(minutes=10))
    assert [m.content for m in world.fake.bot_messages(world.general)] == ["moving"]
    assert world.fake.bot_messages(world.news) == []
    [job] = [
        j for j in await crier.sched.list_jobs(state=JobState.SUCCESS, limit=20) if j.fn == SEND_FN
    ]
    assert (job.pace_key, job.pace_spacing) == (f"channel:{world.general.id}", 0.2)


async def test_channel_change_of_a_one_off_mid_send_leaves_that_post_with_spacing_on(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    """A one-off being posted keeps its job (it posts where it started): the channel change
    is taken, and no second delivery is planned for the new channel."""
    crier = await crier_factory(send_spacing=0.2)
    local = await schedule(world, when="in 10m", message="here")
    hold = world.fake.hold_messages(world.news, stage="after")
    clock.advance(timedelta(minutes=10))
    idle = asyncio.create_task(crier.sched.wait_idle())
    await world.fake.wait_until(lambda: hold.parked, what="the send to be held")
    content = await edit(world, id=local, channel=world.general)
    assert f"**Channel:** <#{world.news.id}> → <#{world.general.id}>" in content
    hold.release()
    await idle
    assert [m.content for m in world.fake.bot_messages(world.news)] == ["here"]
    assert world.fake.bot_messages(world.general) == []
    jobs = [j for j in await crier.sched.list_jobs(limit=20) if j.fn == SEND_FN]
    assert [(j.state, j.pace_key) for j in jobs] == [(JobState.SUCCESS, f"channel:{world.news.id}")]


# --- recurring ----------------------------------------------------------------------------------


async def test_recurring_rule_edit_across_a_dst_night(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Daily at 09:00 Paris; on Saturday March 30th 2030 (the night before clocks go
    forward), after that day's post, it becomes "weekdays at 10:00" from Monday: the rule
    re-anchors, Sunday's post is not made, and 10:00 is CEST (08:00 UTC) from then on."""
    local = await schedule(
        world, when="2030-03-29 09:00", message="daily", repeat="daily", timezone=PARIS
    )
    clock.advance(datetime(2030, 3, 29, 7, 59, tzinfo=UTC) - clock.now())
    await advance(crier, clock, timedelta(minutes=1))  # Friday 09:00 CET
    await advance(crier, clock, timedelta(days=1))  # Saturday 09:00 CET
    assert len(world.fake.bot_messages(world.news)) == 2
    before = await get(crier, world, local)

    content = await edit(world, id=local, repeat="0 10 * * 1-5", when="2030-04-01 10:00")
    monday = datetime(2030, 4, 1, 8, tzinfo=UTC)  # 10:00 CEST
    assert f"**Next:** {stamp(monday)}" in content
    assert "**Repeats:** every day at 09:00 (Europe/Paris) → " in content
    a = await get(crier, world, local)
    assert a.schedule_name != before.schedule_name
    assert a.first_ts == monday.timestamp()
    [info] = await announcement_schedules(crier)
    assert info.name == a.schedule_name
    assert info.next_fire == monday

    clock.advance(monday - timedelta(minutes=1) - clock.now())
    await crier.sched.wait_idle()
    assert len(world.fake.bot_messages(world.news)) == 2  # nothing on Sunday (or at 09:00)
    await advance(crier, clock, timedelta(minutes=1))
    await advance(crier, clock, timedelta(days=1))
    posts = world.fake.bot_messages(world.news)
    assert len(posts) == 4
    fired = [
        r["fire_ts"]
        for r in await rows(crier, "SELECT fire_ts FROM bot_deliveries ORDER BY fire_ts")
    ]
    assert fired == [
        datetime(2030, 3, 29, 8, tzinfo=UTC).timestamp(),
        datetime(2030, 3, 30, 8, tzinfo=UTC).timestamp(),
        monday.timestamp(),
        (monday + timedelta(days=1)).timestamp(),
    ]


async def test_timezone_change_keeps_the_rule_in_the_new_zone(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, when="tomorrow 09:00", message="m", repeat="daily")
    content = await edit(world, id=local, timezone="America/New_York")
    assert "**Time zone:** UTC → America/New_York" in content
    assert (
        "**Repeats:** every day at 09:00 (UTC) → every day at 09:00 (America/New_York)" in content
    )
    [info] = await announcement_schedules(crier)
    assert info.next_fire == datetime(2030, 3, 2, 14, tzinfo=UTC)  # 09:00 EST


async def test_an_nth_weekday_rule_survives_text_and_zone_edits(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """A rule five cron fields can't say (the 2nd and 4th Thursday) is kept exactly by an
    edit that leaves ``repeat`` alone, and follows a new zone."""
    local = await schedule(world, message="club", repeat="every 2nd and 4th thursday at 19:00")
    before = await get(crier, world, local)
    assert before.repeat_nth == (2, 4)
    [old] = await announcement_schedules(crier)
    await edit(world, id=local, message="book club")
    a = await get(crier, world, local)
    assert a.rule == before.rule
    assert a.schedule_name == before.schedule_name
    assert await announcement_schedules(crier) == [old]  # not re-planned
    content = await edit(world, id=local, timezone=PARIS)
    a = await get(crier, world, local)
    assert a.repeat_nth == (2, 4)
    assert a.repeat_words is not None
    assert a.repeat_words.endswith(f"({PARIS})"), a.repeat_words
    [info] = await announcement_schedules(crier)
    # March 14th 2030 is the 2nd Thursday: 19:00 in Paris (CET) is 18:00 UTC.
    assert info.next_fire == datetime(2030, 3, 14, 18, tzinfo=UTC)
    assert f"**Next:** {stamp(info.next_fire)}" in content


async def test_edit_while_an_occurrence_is_in_progress_does_not_repeat_or_skip_it(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, when="in 1h", message="hourly", repeat="hourly")
    hold = world.fake.hold_messages(world.news, stage="before")
    clock.advance(timedelta(hours=1))
    idle = asyncio.create_task(crier.sched.wait_idle())
    await world.fake.wait_until(lambda: hold.parked, what="the send to be held")
    content = await edit(world, id=local, repeat="every 2h")
    assert f"**Next:** {stamp(NOW + timedelta(hours=2))}" in content  # anchored on the next
    hold.release()
    await idle
    await advance(crier, clock, timedelta(hours=1))
    await advance(crier, clock, timedelta(hours=2))
    fired = [r["fire_ts"] for r in await rows(crier, "SELECT fire_ts FROM bot_deliveries")]
    assert sorted(fired) == [(NOW + timedelta(hours=h)).timestamp() for h in (1, 2, 4)]
    assert len(world.fake.bot_messages(world.news)) == 3


async def test_until_on_a_recurring_one_and_refused_on_a_one_off(
    world: World, crier: Crier
) -> None:
    local = await schedule(world, when="in 1h", message="r", repeat="daily")
    content = await edit(world, id=local, until="2030-03-10 00:00")
    end = datetime(2030, 3, 10, tzinfo=UTC)
    assert f"**Until:** none → {stamp(end, 'f')}" in content
    assert (await get(crier, world, local)).until_ts == end.timestamp()
    content = await edit(world, id=local, until="none")
    assert (await get(crier, world, local)).until_ts is None
    one = await schedule(world, when="in 1h", message="o")
    before = await snapshot(crier)
    content = await edit(world, id=one, until="2030-03-10 00:00")
    assert "`until` is for repeating announcements" in content
    assert await snapshot(crier) == before


async def test_a_one_off_made_recurring_with_until_in_one_edit(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, when="in 1h", message="r")
    content = await edit(world, id=local, repeat="daily", until="in 50h")
    assert "**Repeats:** no (posted once) → every day at 13:00 (UTC)" in content
    a = await get(crier, world, local)
    assert a.recurring
    assert a.until_ts == (NOW + timedelta(hours=50)).timestamp()
    await advance(crier, clock, timedelta(hours=1))
    for _ in range(3):
        await advance(crier, clock, timedelta(days=1))
    # 13:00 today, tomorrow and the day after (49 h from now); then it is done
    assert len(world.fake.bot_messages(world.news)) == 3
    a = await get(crier, world, local)
    assert a.state == "done"
    actions = [h[0] for h in await history(crier, a)]
    assert actions == ["created", "edited", "ended"]


# --- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"when": "whenever"}, "I couldn't read that as a time"),
        ({"when": "2020-01-01 10:00"}, "already passed"),
        ({"repeat": "sometimes"}, "I couldn't read that as a repeat rule"),
        ({"repeat": "every 30s"}, "too often"),
        ({"timezone": "Mars/Olympus"}, "I don't know the time zone `Mars/Olympus`"),
        ({"message": "   "}, "The message is empty"),
        ({"mention": "nosuchrole"}, "I can't find that role in this server."),
        ({"until": "in 30m", "repeat": "daily"}, "must be after the first time"),
    ],
)
async def test_a_refusal_writes_nothing(
    world: World, crier: Crier, options: dict[str, Any], says: str
) -> None:
    local = await schedule(world, when="in 1h", message="keep me")
    before = await snapshot(crier)
    content = await edit(world, id=local, **options)
    assert says in content, content
    assert "Edited" not in content
    assert await snapshot(crier) == before


async def test_a_member_without_rights_is_refused(world: World, crier: Crier) -> None:
    local = await schedule(world, when="in 1h", message="mine")
    before = await snapshot(crier)
    content = await edit(world, by=world.member, id=local, message="theirs")
    assert "You need the **Manage Server** permission" in content
    h = await world.fake.invoke_command(
        world.guild, world.general, world.member, "edit", {"id": local}
    )
    cb = await h.response()
    assert cb.type == CB_CHANNEL_MESSAGE
    assert "Manage Server" in (cb.content or "")
    assert await snapshot(crier) == before


async def test_mention_rights_on_edit(world: World, crier: Crier, clock: FakeClock) -> None:
    herald_role = world.guild.add_role("heralds", P.MANAGE_GUILD | P.MENTION_EVERYONE)
    herald = world.guild.add_member(name="herald", roles=[herald_role])
    cb = await run_command(
        world,
        "schedule",
        by=herald,
        when="in 1h",
        message="Big news",
        channel=world.news,
        mention=world.guild.everyone_role,
    )
    assert "Scheduled announcement **#1**" in (cb.content or "")
    # The admin (no Mention @everyone) edits the text: the recorded @everyone ping is kept.
    content = await edit(world, id=1, message="Bigger news")
    assert "Edited" in content
    a = await get(crier, world, 1)
    assert a.mention == "everyone"
    assert a.allowed_mentions["everyone"] is True
    # ...but may not set an @everyone mention of their own.
    before = await snapshot(crier)
    for typed in ("everyone", "@everyone"):
        content = await edit(world, id=1, mention=typed)
        assert "You don't have **Mention @everyone**" in content, content
    assert await snapshot(crier) == before
    quiet = world.guild.add_role("quiet", mentionable=False)
    content = await edit(world, id=1, mention=str(quiet.id))
    assert "can't be mentioned by you" in content
    assert await snapshot(crier) == before
    content = await edit(world, id=1, mention="none")
    assert "**Pings:** @everyone → none" in content
    a = await get(crier, world, 1)
    assert a.mention is None
    assert a.allowed_mentions["everyone"] is False
    await advance(crier, clock, timedelta(hours=1))
    [msg] = world.fake.bot_messages(world.news)
    assert msg.content == "Bigger news"
    assert not msg.pings.everyone


async def test_another_guilds_id_is_not_found(world: World, other: World, crier: Crier) -> None:
    await schedule(world, when="in 1h", message="ours")
    before = await snapshot(crier)
    cb = await other.fake.invoke_command(
        other.guild, other.general, other.admin, "edit", {"id": 1, "message": "theirs"}
    )
    content = (await cb.response()).content
    assert content == "announcement #1 not found. Use `/list` to see this server's announcements."
    h = await other.fake.invoke_autocomplete(
        other.guild, other.general, other.admin, "edit", {"id": ""}, focused="id"
    )
    assert (await h.response()).choices == []
    assert await snapshot(crier) == before


async def test_canceled_and_posted_ones_refuse_what_they_cant_take(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    gone = await schedule(world, when="in 1h", message="x")
    await run_command(world, "cancel", id=gone)
    local, _ = await posted_one(world, crier, clock, "posted")
    before = await snapshot(crier)
    assert "was canceled" in await edit(world, id=gone, message="y")
    content = await edit(world, id=local, when="in 2h")
    assert "has posted its last time; only its `message` and `mention`" in content
    assert await snapshot(crier) == before


async def test_id_autocomplete_offers_editable_ones(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await schedule(world, when="in 1h", message="pending one")
    gone = await schedule(world, when="in 1h", message="canceled one")
    await run_command(world, "cancel", id=gone)
    h = await world.fake.invoke_autocomplete(
        world.guild, world.general, world.admin, "edit", {"id": ""}, focused="id"
    )
    choices = (await h.response()).choices
    assert [c["value"] for c in choices] == [1]
    assert "pending one" in choices[0]["name"]


# --- SIGKILL between recording an edit and its PATCH --------------------------------------------


@pytest.fixture
async def bots() -> AsyncIterator[list[Process]]:
    async with procs() as started:
        yield started


@pytest.mark.parametrize("applied", [False, True], ids=["patch-not-applied", "patch-applied"])
async def test_kill_between_the_edit_and_its_patch_one_patch_in_effect(
    world: World, tmp_path: Path, bots: list[Process], applied: bool
) -> None:
    h = Harness(world, tmp_path, bots)
    fake, news = h.fake, world.news
    first = await h.start_bot()
    local = await h.schedule_soon("before the edit")
    rows_ = await h.until_delivery(lambda r: bool(r) and r[0]["state"] == "sent", "the post")
    [msg] = fake.bot_messages(news)
    path = re.escape(f"/channels/{news.id}/messages/{msg.id}")
    if applied:  # Discord edits the message; the bot never hears back
        fake.faults.add(method="PATCH", path_regex=path, after_effect=True, delay=HOLD)
    else:  # the request reaches Discord's edge only
        fake.faults.add(method="PATCH", path_regex=path, delay=HOLD, disconnect=True)

    reply = await h.command("edit", id=local, message="after the edit")
    assert "is being edited in place" in reply, reply

    def patched() -> list[Any]:
        return [r for r in fake.requests if r.method == "PATCH" and str(msg.id) in r.path]

    await until(lambda: bool(patched()), DEADLINE, "the PATCH to arrive")
    ann = h.query("SELECT revision FROM bot_announcements WHERE local_id = ?", (local,))
    assert ann == [{"revision": 2}]
    assert only_row(h)["revision"] == 1  # recorded edit, PATCH not recorded
    await h.kill(first)

    await h.start_bot()
    await until(
        lambda: (
            only_row(h)["revision"] == 2
            and h.query("SELECT state FROM scheduler_jobs WHERE fn = ?", (UPDATE_FN,))
            == [{"state": "success"}]
        ),
        DEADLINE,
        f"the restarted bot's PATCH; rows {h.deliveries()}\n{h.logs()}",
    )
    assert fake.bot_messages(news) == [msg]  # never a new message
    assert msg.content == "after the edit"
    assert len(patched()) == 2
    # One edit in effect: every PATCH that reached the message set the same text.
    assert [e["content"] for e in msg.history] == (
        ["before the edit", "after the edit"] if applied else ["before the edit"]
    )
    actions = h.query(
        "SELECT action FROM bot_history h JOIN bot_announcements a ON a.id = h.announcement_id "
        "WHERE a.local_id = ? ORDER BY h.id",
        (local,),
    )
    assert [r["action"] for r in actions] == ["created", "edited", "post_updated"]
    del rows_


def only_row(h: Harness) -> dict[str, Any]:
    [row] = h.deliveries()
    return row


# --- fuzz ---------------------------------------------------------------------------------------

EXAMPLES = size(60, 400)
GENERIC = "Something went wrong"

edit_cases = st.fixed_dictionaries(
    {},
    optional={
        "message": messages,
        "when": whens,
        "repeat": repeats.filter(lambda r: r is not None),
        "timezone": timezones.filter(lambda z: z is not None),
        "mention": st.sampled_from(["none", "everyone", "loud", "quiet", "nosuch", "@everyone"]),
        "until": st.one_of(whens, st.just(("lit", "none"))),
        "channel": st.sampled_from(["news", "voice", "other-guild"]),
        "update_posted": st.booleans(),
        "title": st.one_of(messages, st.just("none")),
        "silent": st.booleans(),
    },
)
bases = st.sampled_from(["one-off", "recurring", "posted"])


class EditFuzz:
    def __init__(self, world: World, crier: Crier, clock: FakeClock) -> None:
        self.world, self.crier, self.clock = world, crier, clock
        world.fake.ratelimits.set_message_limit(10_000, 1.0)
        self.loud = world.guild.add_role("loud", mentionable=True)
        self.quiet = world.guild.add_role("quiet", mentionable=False)
        self.lounge = world.guild.add_channel("lounge", type=2)
        elsewhere = world.fake.add_guild(name="Elsewhere", bot_permissions=P.DEFAULT_BOT)
        self.elsewhere = elsewhere.add_channel("elsewhere")
        self.outcomes: Counter[str] = Counter()

    async def base(self, kind: str) -> int:
        w = self.world
        if kind == "recurring":
            return await schedule(w, when="in 1h", message="base", repeat="daily")
        local = await schedule(w, when="in 1m", message="base")
        if kind == "posted":
            await advance(self.crier, self.clock, timedelta(minutes=1))
        return local

    def options(self, local: int, case: dict[str, Any]) -> dict[str, Any]:
        now = self.clock.time()
        out: dict[str, Any] = {"id": local}
        for key, value in case.items():
            if key in ("when", "until"):
                out[key] = render_when(value, now)
            elif key == "mention":
                roles = {"loud": str(self.loud.id), "quiet": str(self.quiet.id)}
                out[key] = roles.get(value, value)
            elif key == "channel":
                w = self.world
                out[key] = {"news": w.news, "voice": self.lounge, "other-guild": self.elsewhere}[
                    value
                ]
            else:
                out[key] = value
        return out

    async def run(self, kind: str, case: dict[str, Any]) -> None:
        outcome = await self._run(kind, case)
        self.outcomes[outcome] += 1
        if sum(self.outcomes.values()) == EXAMPLES:
            print(f"\n/edit fuzz: {dict(self.outcomes)}")

    async def _run(self, kind: str, case: dict[str, Any]) -> str:
        w = self.world
        local = await self.base(kind)
        options = self.options(local, case)
        before = await snapshot(self.crier)
        try:
            h = await w.fake.invoke_command(w.guild, w.general, w.admin, "edit", options)
        except ValueError as exc:  # Discord's client would not send it
            assert any(r in str(exc) for r in CLIENT_REFUSALS) or "channel type" in str(exc), exc  # noqa: PT017 (refusing is one allowed outcome)
            assert await snapshot(self.crier) == before
            return "refused by Discord's client"
        cb: InteractionCallback = await h.response(timeout=10)
        if cb.type == CB_MODAL:
            assert set(options) <= {"id", "update_posted"}, options
            return "form"
        assert cb.type == CB_CHANNEL_MESSAGE, (cb.type, cb.data)
        assert cb.ephemeral, (cb.type, cb.data)
        content = cb.content or ""
        assert GENERIC not in content, (options, content)
        if content.startswith("✏️ Edited announcement"):
            a = await get(self.crier, w, local)
            if "message" in options:
                assert a.content == options["message"]
            if "title" in options:
                typed = options["title"].strip()
                assert a.rich.title == (None if typed.lower() in ("", "none") else typed)
            if "silent" in options:
                assert a.rich.silent == options["silent"]
            await self.crier.sched.wait_idle()
            if kind == "posted" and "message" in options and options.get("update_posted", True):
                [msg] = [m for m in w.fake.bot_messages(w.news) if m.id == a.last_message_id]
                if a.rich.title is None:
                    assert msg.content == a.text
                else:  # an embed: the text is its description
                    assert [e["description"] for e in msg.embeds] == [a.content]
            return f"edited ({kind})"
        if content.startswith("Nothing to change"):
            assert await snapshot(self.crier) == before
            return "nothing to change"
        assert content.strip(), content
        assert REFUSAL.search(content), content
        assert await snapshot(self.crier) == before, (options, content)
        return "refused by the bot"


@pytest.fixture
def edit_fuzz(world: World, crier: Crier, clock: FakeClock) -> EditFuzz:
    return EditFuzz(world, crier, clock)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    print_blob=True,
)
@given(kind=bases, case=edit_cases)
async def test_edit_answers_every_input_and_refusals_write_nothing(
    edit_fuzz: EditFuzz, kind: str, case: dict[str, Any]
) -> None:
    await edit_fuzz.run(kind, case)
