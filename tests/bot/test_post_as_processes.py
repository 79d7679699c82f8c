"""A post made as someone (through the channel's webhook, no nonce) is made once when the bot
process is killed with SIGKILL right after the execute took effect at Discord: a real
``python -m bot`` against the fake Discord, killed while the fake holds back the answer to
the execute that made the message, then started again on the same database. The restarted
bot's re-run looks up the channel's messages by the webhook and records the one it finds,
without executing again."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pytest

from tests.bot.test_crash_bot import DEADLINE, HOLD, Harness
from tests.bot.test_post_as import EXECUTE, PNG, can_post_as, executes
from tests.support.processes import Process, procs, until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from tests.bot.conftest import World


@pytest.fixture
async def bots() -> AsyncIterator[list[Process]]:
    async with procs() as started:
        yield started


def intents(h: Harness) -> list[dict[str, Any]]:
    return h.query("SELECT * FROM bot_webhook_posts")


async def test_sigkill_right_after_the_execute_took_effect_makes_one_message(
    world: World, tmp_path: Path, bots: list[Process]
) -> None:
    can_post_as(world)
    h = Harness(world, tmp_path, bots)
    fake = h.fake
    first = await h.start_bot()
    local = await h.schedule_at(int(time.time()) + 3600, "Doors open at six")
    avatar = fake.make_attachment("hall.png", PNG)
    said = await h.command("edit", id=local, as_name="Town hall", as_avatar=avatar)
    assert "**Town hall**" in said, said
    # The execute makes the message, then its answer is held back (the kill comes first).
    fake.faults.add(method="POST", path_regex=EXECUTE, after_effect=True, delay=HOLD)
    said = await h.command("edit", id=local, when=str(int(time.time()) + 2))
    assert "Edited" in said, said

    await until(lambda: bool(fake.webhooks.hooks), DEADLINE, "the channel's webhook")
    [hook] = fake.webhooks.of(world.news)
    await fake.wait_until(
        lambda: fake.webhooks.messages_by(hook), timeout=DEADLINE, what="the execute"
    )
    [made] = fake.webhooks.messages_by(hook)
    [row] = h.deliveries()
    assert (row["state"], row["message_id"]) == ("sending", None)
    [intent] = intents(h)  # recorded before the execute: the webhook and what it shows
    assert (intent["webhook_id"], intent["message_id"]) == (hook.id, None)
    assert intent["mark"]
    await h.kill(first)

    await h.start_bot()
    [row] = await h.until_delivery(
        lambda r: r[0]["state"] == "sent" and r[0]["job_state"] == "success", "the re-run"
    )

    assert fake.webhooks.messages_by(hook) == [made]  # one message, the first one
    assert (row["message_id"], row["attempts"]) == (made.id, 2)
    assert len(executes(world)) == 1  # never executed again
    assert fake.webhooks.of(world.news) == [hook]  # nor another webhook made
    [intent] = intents(h)
    assert intent["message_id"] == made.id
    # The webhook's token is a secret: in neither bot's log.
    assert hook.token not in h.logs()
