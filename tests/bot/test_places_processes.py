"""Several places exactly once with real processes: ``python -m bot`` against the fake
Discord, SIGKILLed while an occurrence is being posted in its places, then started again on
the same SQLite file.

At the kill the occurrence is posted in its own channel and in one place; in a second place
Discord made the message but holds its answer back; in a third the request reached Discord's
edge and nothing was made. The bot started again finishes each place: the second is sent
again with its own nonce (Discord answers with the message it made), the third once. Every
channel ends with exactly one post, every place's row ``sent`` with its message.

The bots run with a 2 s lease and a 0.5 s sweep; every wait is for a state (a request at the
fake, a row in the database) with a deadline, never a fixed time.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

import pytest

from bot.models import place_nonce
from tests.bot.test_crash_bot import DEADLINE, HOLD, Harness
from tests.support.processes import Process, procs, until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from tests.bot.conftest import World
    from tests.fakediscord.state import Channel


@pytest.fixture
async def bots() -> AsyncIterator[list[Process]]:
    async with procs() as started:
        yield started


@pytest.fixture
def harness(world: World, tmp_path: Path, bots: list[Process]) -> Harness:
    return Harness(world, tmp_path, bots)


def place_rows(h: Harness) -> dict[int, dict[str, Any]]:
    return {
        int(r["channel_id"]): r
        for r in h.query(
            "SELECT p.*, j.state AS job_state FROM bot_place_deliveries p "
            "LEFT JOIN scheduler_jobs j ON j.id = p.job_id"
        )
    }


def sends_to(h: Harness, channel: Channel) -> list[Any]:
    path = f"/channels/{channel.id}/messages"
    return [r for r in h.fake.requests if r.method == "POST" and r.path == path]


async def test_a_kill_while_posting_in_the_places_leaves_one_post_in_each(
    harness: Harness,
) -> None:
    h, fake, world = harness, harness.fake, harness.world
    done_place, made, unmade = (world.guild.add_channel(n) for n in ("a", "b", "c"))
    first = await h.start_bot()
    local = await h.schedule_at(int(time.time()) + 4, "Everywhere once")
    answer = await h.command(
        "edit", id=local, also_in=f"<#{done_place.id}> <#{made.id}> <#{unmade.id}>"
    )
    assert "Also in" in answer, answer
    # b: Discord makes the message and holds the answer; c: the request is held unmade.
    fake.faults.add(method="POST", path_regex=re.escape(f"/channels/{made.id}/messages"),
                    after_effect=True, delay=HOLD)  # fmt: skip
    fake.faults.add(method="POST", path_regex=re.escape(f"/channels/{unmade.id}/messages"),
                    delay=HOLD, disconnect=True)  # fmt: skip

    def at_the_kill() -> bool:
        rows = place_rows(h)
        return (
            len(fake.bot_messages(world.news)) == 1
            and rows.get(done_place.id, {}).get("state") == "sent"
            and len(fake.bot_messages(made)) == 1
            and len(sends_to(h, unmade)) == 1
        )

    try:
        await until(at_the_kill, DEADLINE, "the posts in a, b (made) and c (held)")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; rows: {place_rows(h)}\n{h.logs()}") from None
    rows = place_rows(h)
    assert (rows[made.id]["state"], rows[unmade.id]["state"]) == ("sending", "sending")
    await h.kill(first)

    await h.start_bot()

    def finished() -> bool:
        rows = place_rows(h)
        return len(rows) == 3 and all(
            r["state"] == "sent" and r["job_state"] == "success" for r in rows.values()
        )

    try:
        await until(finished, DEADLINE, "every place posted after the restart")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; rows: {place_rows(h)}\n{h.logs()}") from None
    rows = place_rows(h)
    for channel in (world.news, done_place, made, unmade):
        posts = fake.bot_messages(channel)
        assert [m.content for m in posts] == ["Everywhere once"], channel.name
    for channel in (done_place, made, unmade):
        [post] = fake.bot_messages(channel)
        row = rows[channel.id]
        assert row["message_id"] == post.id
        assert (
            post.nonce
            == row["nonce"]
            == place_nonce(row["announcement_id"], row["fire_ts"], channel.id)
        )
    # a: never sent again; b: sent again with its nonce (Discord answered with the first);
    # c: sent again, made once.
    assert [len(sends_to(h, c)) for c in (done_place, made, unmade)] == [1, 2, 2]
    assert (rows[done_place.id]["attempts"], rows[made.id]["attempts"]) == (1, 2)
    assert fake.nonce_dedup_hits == 1
    assert len(sends_to(h, world.news)) == 1
