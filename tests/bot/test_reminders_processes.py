"""Reminders exactly once with real processes: ``python -m bot`` against the fake Discord,
on one SQLite file.

- SIGKILL in the middle of a group of DMs (the third member's DM made by Discord, its answer
  held back, the others recorded ``sending`` and not sent yet): the bot started again
  finishes the group, sending the third again with its nonce (Discord answers with the
  first message) and the others once: every member has exactly one DM.
- Two instances connected on the same shard (every interaction reaches both sessions): each
  member's ``/remindme`` takes effect once and is answered once, and each member gets
  exactly one reminder whichever instance's scheduler runs the job.

The bots run with a 2 s lease and a 0.5 s sweep; every wait is for a state (a DM at the
fake, a row in the database) with a deadline, never a fixed time.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

import pytest

from bot.models import reminder_nonce
from tests.bot.test_crash_bot import DEADLINE, HOLD, Harness
from tests.support.processes import Process, procs, until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from tests.bot.conftest import World
    from tests.fakediscord import Member

LEAD = 60
"""The shortest reminder lead (a minute): the announcement is due this long after its
reminders plus a few seconds."""


@pytest.fixture
async def bots() -> AsyncIterator[list[Process]]:
    async with procs() as started:
        yield started


@pytest.fixture
def harness(world: World, tmp_path: Path, bots: list[Process]) -> Harness:
    h = Harness(world, tmp_path, bots)
    h.env |= {"REMINDER_SPACING_SECONDS": "0.2"}
    return h


def dms(h: Harness, who: Member) -> list[Any]:
    return h.fake.bot_messages(h.fake.open_dm(who))


def reminder_rows(h: Harness) -> dict[int, str]:
    return {
        int(r["user_id"]): str(r["state"])
        for r in h.query("SELECT user_id, state FROM bot_reminders ORDER BY user_id")
    }


async def announcement_with_reminders(h: Harness, members: list[Member], ahead: int) -> int:
    """A one-off ``ahead`` seconds from now with a one-minute reminder, asked for by every
    one of ``members`` (each ``/remindme`` answered once); its number."""
    n = await h.schedule_at(int(time.time()) + ahead, "Game night")
    assert "Reminders" in await h.command("edit", id=n, reminder="1m")
    for m in members:
        handle = await h.fake.invoke_command(
            h.world.guild, h.world.general, m, "remindme", options={"id": n}
        )
        answer = (await handle.response(timeout=DEADLINE)).content or ""
        assert "You will be reminded of announcement" in answer, answer
    return n


async def test_sigkill_mid_group_then_restart_reminds_each_member_exactly_once(
    harness: Harness,
) -> None:
    h, fake, guild = harness, harness.fake, harness.world.guild
    first = await h.start_bot()
    members = sorted((guild.add_member(name=f"m{i}") for i in range(6)), key=lambda m: m.id)
    held = members[2]  # the third one's DM is made, its answer never comes back
    fake.faults.add(
        method="POST",
        path_regex=re.escape(f"/channels/{fake.open_dm(held).id}/messages"),
        after_effect=True,
        delay=HOLD,
    )
    await announcement_with_reminders(h, members, LEAD + 8)

    await until(lambda: len(dms(h, held)) == 1, DEADLINE, "the third member's DM, held")
    rows = reminder_rows(h)
    assert [rows[m.id] for m in members] == ["sent", "sent", "sending"] + ["queued"] * 3, rows
    assert [len(dms(h, m)) for m in members] == [1, 1, 1, 0, 0, 0]
    await h.kill(first)

    await h.start_bot()
    try:
        await until(
            lambda: set(reminder_rows(h).values()) == {"sent"}, DEADLINE, "every reminder sent"
        )
    except AssertionError:
        raise AssertionError(f"rows: {reminder_rows(h)}\n{h.logs()}") from None
    assert [len(dms(h, m)) for m in members] == [1] * 6
    [made] = dms(h, held)
    resent = [
        r.body["nonce"]
        for r in fake.requests
        if r.method == "POST" and r.path == f"/channels/{fake.open_dm(held).id}/messages"
    ]
    assert resent == [made.nonce, made.nonce]  # sent again with its nonce: one message
    [row] = h.query("SELECT DISTINCT announcement_id, fire_ts FROM bot_reminders")
    assert made.nonce == reminder_nonce(row["announcement_id"], row["fire_ts"], held.id)
    assert fake.nonce_dedup_hits == 1
    assert "Traceback" not in h.logs()


async def test_two_instances_on_one_shard_remind_each_member_once(harness: Harness) -> None:
    h, guild = harness, harness.world.guild
    await h.start_bot()
    await h.start_bot()
    await h.fake.wait_until(
        lambda: len(h.fake.gateway.connected_sessions) == 2, DEADLINE, what="both sessions"
    )
    members = [guild.add_member(name=f"m{i}") for i in range(12)]
    await announcement_with_reminders(h, members, LEAD + 10)
    subscribed = h.query("SELECT COUNT(*) AS n FROM bot_reminder_subscribers")
    assert subscribed == [{"n": 12}]
    try:
        await until(
            lambda: all(len(dms(h, m)) == 1 for m in members), DEADLINE, "a DM to each member"
        )
    except AssertionError:
        raise AssertionError(f"rows: {reminder_rows(h)}\n{h.logs()}") from None
    await until(
        lambda: set(reminder_rows(h).values()) == {"sent"}, DEADLINE, "every reminder recorded"
    )
    assert [len(dms(h, m)) for m in members] == [1] * 12
    logs = h.logs()
    assert "Traceback" not in logs
    assert "40060" not in logs
