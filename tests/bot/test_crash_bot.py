"""Crash safety of delivery with real processes: ``python -m bot`` against the fake Discord,
SIGKILLed at a chosen point of a delivery, then started again on the same database.

The kill point is made deterministic by the fake (it holds the send request, with or without
having created the message) or by the bot's own per-channel spacing (a delivery waiting for its
slot has written its ``sending`` row but sent nothing). The parent then waits for concrete
conditions (a request at the fake, a row in the database) with deadlines, never a fixed time.

The bots run with a 2 s lease and a 0.5 s sweep, so a restarted bot takes over the killed
bot's delivery about 2 s after the kill.
"""

from __future__ import annotations

import re
import sqlite3
import time
from contextlib import closing
from typing import TYPE_CHECKING, Any

import pytest

from bot.posting.delivery import nonce_for
from tests.scheduler.crash_worker import connect
from tests.support.processes import Process, bot_env, procs, start_bot, until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from tests.bot.conftest import World
    from tests.fakediscord import FakeDiscord
    from tests.fakediscord.state import Channel, Message

DEADLINE = 20.0
HOLD = 60.0
"""How long the fake holds a send it was told to hold (far longer than any test waits)."""


@pytest.fixture
async def bots() -> AsyncIterator[list[Process]]:
    """Every bot process a test starts; all are killed and reaped afterwards."""
    async with procs() as started:
        yield started


class Harness:
    def __init__(self, world: World, tmp_path: Path, bots: list[Process]) -> None:
        self.world = world
        self.fake: FakeDiscord = world.fake
        self.db = tmp_path / "crier.db"
        self.workdir = tmp_path
        self.bots = bots
        self.env = bot_env(
            self.fake.env(),
            database_url=f"sqlite:///{self.db}",
            lease="2",
            sweep="0.5",
            spacing="0.05",
        )

    def logs(self) -> str:
        return "\n".join(f"--- bot {i} ---\n{b.log}" for i, b in enumerate(self.bots))

    async def start_bot(self, **env: str) -> Process:
        bot = await start_bot(self.env | env, self.workdir)
        self.bots.append(bot)
        try:
            await self.fake.wait_until(
                lambda: (
                    self.fake.get_command("schedule") is not None
                    and self.fake.gateway.connected_sessions
                ),
                timeout=DEADLINE,
                what="the bot to connect with its commands synced",
            )
        except TimeoutError:
            raise AssertionError(f"the bot did not come up:\n{self.logs()}") from None
        return bot

    async def kill(self, bot: Process) -> None:
        bot.kill()
        await bot.proc.wait()
        await self.fake.wait_until(
            lambda: not self.fake.gateway.connected_sessions, what="the killed bot's gateway"
        )

    async def command(self, name: str, **options: Any) -> str:
        w = self.world
        h = await self.fake.invoke_command(w.guild, w.general, w.admin, name, options=options)
        content = (await h.response(timeout=DEADLINE)).content
        assert content is not None
        return content

    async def schedule_at(self, epoch: int, message: str, channel: Channel | None = None) -> int:
        text = await self.command(
            "schedule", when=str(epoch), message=message, channel=channel or self.world.news
        )
        found = re.search(r"Scheduled announcement \*\*#(\d+)\*\*", text)
        assert found is not None, text
        return int(found[1])

    async def schedule_soon(self, message: str, channel: Channel | None = None) -> int:
        return await self.schedule_at(int(time.time()) + 2, message, channel)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with closing(connect(self.db)) as conn:
            conn.row_factory = sqlite3.Row
            return [dict(r) for r in conn.execute(sql, params).fetchall()]

    def deliveries(self) -> list[dict[str, Any]]:
        return self.query(
            "SELECT d.*, a.local_id, a.state AS ann_state, a.failure, j.state AS job_state, "
            "j.run_count FROM bot_deliveries d "
            "JOIN bot_announcements a ON a.id = d.announcement_id "
            "LEFT JOIN scheduler_jobs j ON j.id = d.job_id ORDER BY d.fire_ts"
        )

    async def until_delivery(
        self, predicate: Callable[[list[dict[str, Any]]], bool], what: str
    ) -> list[dict[str, Any]]:
        try:
            await until(lambda: predicate(self.deliveries()), DEADLINE, what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; rows: {self.deliveries()}\n{self.logs()}") from None
        return self.deliveries()

    def sends(self, channel: Channel | None = None) -> list[Any]:
        ch = channel or self.world.news
        path = f"/channels/{ch.id}/messages"
        return [r for r in self.fake.requests if r.method == "POST" and r.path == path]

    def hold_sends(self, *, created: bool) -> None:
        """The fake holds the next send to #news: with the message created (the response is
        what is held back), or without it (the request reached Discord's edge only)."""
        path = re.escape(f"/channels/{self.world.news.id}/messages")
        if created:
            self.fake.faults.add(method="POST", path_regex=path, after_effect=True, delay=HOLD)
        else:
            self.fake.faults.add(method="POST", path_regex=path, delay=HOLD, disconnect=True)


@pytest.fixture
def harness(world: World, tmp_path: Path, bots: list[Process]) -> Harness:
    return Harness(world, tmp_path, bots)


def done(rows: list[dict[str, Any]]) -> bool:
    """The (first) occurrence is recorded as sent and its job has finished."""
    return bool(rows[0]["state"] == "sent" and rows[0]["job_state"] == "success")


def only(rows: list[dict[str, Any]]) -> dict[str, Any]:
    assert len(rows) == 1, rows
    return rows[0]


async def test_kill_after_discord_created_the_message_resends_same_nonce_one_message(
    harness: Harness,
) -> None:
    h, fake, news = harness, harness.fake, harness.world.news
    first = await h.start_bot()
    h.hold_sends(created=True)
    local = await h.schedule_soon("Exactly once, across a crash")

    msg: Message = await fake.wait_for_message(channel=news, timeout=DEADLINE)
    row = only(h.deliveries())
    # The bot wrote its row before sending; the message exists but the bot has not seen it.
    assert (row["state"], row["message_id"], row["attempts"]) == ("sending", None, 1)
    assert row["nonce"] == msg.nonce == nonce_for(row["announcement_id"], row["fire_ts"])
    await h.kill(first)

    await h.start_bot()
    rows = await h.until_delivery(done, "the restarted bot's send")

    row = only(rows)
    assert fake.bot_messages(news) == [msg]
    assert [r.body["nonce"] for r in h.sends()] == [msg.nonce, msg.nonce]
    assert fake.nonce_dedup_hits == 1
    assert (row["message_id"], row["attempts"], row["local_id"]) == (msg.id, 2, local)
    assert (row["ann_state"], row["job_state"], row["run_count"]) == ("sent", "success", 2)


async def test_kill_while_discord_held_the_request_uncreated_sends_once(
    harness: Harness,
) -> None:
    h, fake, news = harness, harness.fake, harness.world.news
    first = await h.start_bot()
    h.hold_sends(created=False)
    await h.schedule_soon("Sent once, after the crash")

    await fake.wait_until(lambda: h.sends(), timeout=DEADLINE, what="the send to arrive")
    assert fake.bot_messages(news) == []
    assert only(h.deliveries())["state"] == "sending"
    await h.kill(first)

    await h.start_bot()
    rows = await h.until_delivery(done, "the restarted bot's send")

    row = only(rows)
    [msg] = fake.bot_messages(news)
    assert msg.content == "Sent once, after the crash"
    assert [r.body["nonce"] for r in h.sends()] == [row["nonce"], row["nonce"]]
    assert fake.nonce_dedup_hits == 0
    assert (row["message_id"], row["attempts"], row["job_state"]) == (msg.id, 2, "success")


async def test_kill_while_waiting_for_the_channel_slot_sends_once(harness: Harness) -> None:
    """The second delivery to a channel waits for its spacing slot unclaimed: the scheduler
    starts it only in its channel's next slot, so while it waits (longer than the lease) it
    is pending, with no lease, no run and nothing sent. A kill then is followed by exactly
    one send after the restart, in its slot (kept in the database)."""
    h, fake, news = harness, harness.fake, harness.world.news
    first = await h.start_bot(SEND_SPACING_SECONDS="6")
    due = int(time.time()) + 2
    await h.schedule_at(due, "first in line")
    await h.schedule_at(due + 1, "second in line")

    def waiting() -> list[dict[str, Any]]:
        return h.query(
            "SELECT j.id, j.state, j.run_count, j.lease_expires_at FROM scheduler_jobs j "
            "WHERE j.fn = 'announcements:send' AND NOT EXISTS "
            "(SELECT 1 FROM bot_deliveries d WHERE d.job_id = j.id)"
        )

    await h.until_delivery(
        lambda r: len(r) == 1 and r[0]["state"] == "sent" and len(waiting()) == 1,
        "the second delivery to wait for its slot",
    )
    sent_at = time.time()
    # Due, and waiting past the 2 s lease, holding nothing.
    await until(lambda: time.time() > max(sent_at, due + 1) + 3.0, DEADLINE, "3 s")
    [job] = waiting()
    assert (job["state"], job["run_count"], job["lease_expires_at"]) == ("pending", 0, None)
    assert len(h.deliveries()) == 1
    assert len(h.sends()) == 1
    await h.kill(first)

    await h.start_bot(SEND_SPACING_SECONDS="6")
    rows = await h.until_delivery(
        lambda r: len(r) == 2 and all(done([x]) for x in r), "the restarted bot's send"
    )

    assert [m.content for m in fake.bot_messages(news)] == ["first in line", "second in line"]
    assert [m.id for m in fake.bot_messages(news)] == [r["message_id"] for r in rows]
    assert len(h.sends()) == 2  # the first was never sent again
    assert fake.nonce_dedup_hits == 0
    # The second's only run is the restarted bot's: the killed one never claimed it.
    assert [(r["attempts"], r["run_count"]) for r in rows] == [(1, 1), (1, 1)]
    messages = fake.bot_messages(news)
    assert messages[1].created_at - messages[0].created_at >= 6.0 - 0.5


async def test_restart_after_the_nonce_window_reports_instead_of_resending(
    harness: Harness,
) -> None:
    h, fake, world = harness, harness.fake, harness.world
    window = 1.0
    first = await h.start_bot(NONCE_WINDOW_SECONDS=str(window))
    reply = await h.command("settings", log_channel=world.general)
    assert f"<#{world.general.id}>" in reply, reply
    h.hold_sends(created=True)
    local = await h.schedule_soon("Maybe posted, maybe not")

    msg: Message = await fake.wait_for_message(channel=world.news, timeout=DEADLINE)
    row = only(h.deliveries())
    assert row["state"] == "sending"
    await h.kill(first)
    await until(
        lambda: time.time() > row["first_attempt_at"] + window, DEADLINE, "the nonce window"
    )

    await h.start_bot(NONCE_WINDOW_SECONDS=str(window))
    rows = await h.until_delivery(
        lambda r: r[0]["state"] == "failed" and r[0]["job_state"] == "failed", "the report"
    )

    row = only(rows)
    assert row["error"].startswith("may not have been delivered: an attempt was interrupted")
    assert "longer than Discord remembers a nonce, so it was not sent again" in row["error"]
    assert (row["ann_state"], row["failure"], row["job_state"]) == (
        "failed",
        row["error"],
        "failed",
    )
    assert len(h.sends()) == 1  # not re-sent
    assert fake.bot_messages(world.news) == [msg]
    await fake.wait_until(lambda: fake.bot_messages(world.general), what="the report")
    [report] = fake.bot_messages(world.general)
    assert report.content == (
        f"⚠️ Announcement #{local} for <#{world.news.id}> could not be posted: {row['error']}."
    )
