"""Many instances, one bot, as real processes (issue 25): ``python -m bot`` processes on one
fresh PostgreSQL database, against the fake Discord served by this test on 127.0.0.1, through
the real discord.py client. The fake routes each guild's events and interactions to shard
``(guild_id >> 22) % count`` (every session of a shard gets each of them), answers a second
interaction callback with 40060, judges every IDENTIFY against its bucket's rate and counts
the day's session starts.

What each test asserts is observed, never timed against a guess: the test waits for states
(sessions connected at the fake, leases in the database, rows, messages) with generous
deadlines; the one bound it asserts, how long a dead instance's shards stay unserved, is
derived from the configured lease and IDENTIFY settings (``takeover_bound``).

Every test also asserts: no traceback and no 40060 in any process's log (a session that
loses an interaction's race stays silent, at DEBUG), and every IDENTIFY accepted by the fake
(none over its bucket's rate, across every instance).

Sizes: two and three instances, unsharded (all connected on one pinned shard) and on 4
leased shards, the 8-shard kill and take-over with 16 guilds, one rolling swap and the
restart loop; with ``CRIER_FULL=1``, 40 guilds for the 8-shard test and a rolling deploy of
both instances.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import TYPE_CHECKING, Any

import pytest

from tests.bot.test_shards import sharded_world
from tests.fakediscord import FakeDiscord
from tests.fakediscord.interactions import CB_MODAL, iter_components
from tests.proof.conftest import size
from tests.support.instances import Instances, Layout, takeover_bound
from tests.support.processes import Process, procs, until

asyncpg = pytest.importorskip("asyncpg")

from tests.scheduler.pg import fresh_test_database  # noqa: E402  (after the importorskip)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from tests.bot.conftest import World
    from tests.fakediscord import InteractionHandle

pytestmark = [pytest.mark.postgres]

DEADLINE = 90.0
"""The longest any observable state is waited for (a loaded 2-core machine)."""
IDENTIFY_WINDOW = 1.0
"""The fake's IDENTIFY window (Discord's is 5 s), and every instance's interval."""
MAX_CONCURRENCY = 2
LEAD = 8
"""Seconds ahead the announcements the tests schedule are due."""


@pytest.fixture
async def dsn() -> AsyncIterator[str]:
    async with fresh_test_database("the instance processes need a PostgreSQL server") as dsn:
        yield dsn


@pytest.fixture
async def started() -> AsyncIterator[list[Process]]:
    async with procs() as started:
        yield started


def discord_fake(**kwargs: Any) -> FakeDiscord:
    return FakeDiscord(
        ratelimits=False,
        identify_window=IDENTIFY_WINDOW,
        max_concurrency=MAX_CONCURRENCY,
        **kwargs,
    )


# --- helpers ------------------------------------------------------------------------------


async def wait(what: str, predicate: Callable[[], Any], cluster: Instances) -> None:
    """Wait for ``predicate`` (sync or async); fail with every process's log."""
    try:
        await until(predicate, DEADLINE, what, interval=0.05)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{cluster.logs()}") from None


async def evenly_served(cluster: Instances, instances: int) -> None:
    """Every shard has one connected session and the live instances hold an even share."""

    async def even() -> bool:
        return cluster.every_shard_served_once() and await cluster.shares() == cluster.even(
            instances
        )

    await wait(f"{instances} instances holding an even share", even, cluster)


async def command(
    world: World, name: str, options: dict[str, Any] | None = None
) -> InteractionHandle:
    return await world.fake.invoke_command(
        world.guild, world.general, world.admin, name, options or {}
    )


async def answered(h: InteractionHandle, expect: str) -> str:
    """The interaction's first accepted answer (within the deadline), which must say
    ``expect``."""
    cb = await h.response(timeout=DEADLINE)
    assert expect in (cb.content or ""), cb.content
    return cb.content or ""


def answered_once(handles: list[InteractionHandle]) -> None:
    counts = [[c.accepted for c in h.callbacks].count(True) for h in handles]
    assert counts == [1] * len(handles), counts


def due_in(seconds: float) -> str:
    return f"<t:{int(time.time() + seconds)}>"


async def rows(dsn: str, sql: str, *args: Any) -> list[dict[str, Any]]:
    conn = await asyncpg.connect(dsn)
    try:
        return [dict(r) for r in await conn.fetch(sql, *args)]
    finally:
        await conn.close()


async def deliveries_sent(dsn: str, n: int) -> bool:
    got = await rows(dsn, "SELECT count(*) AS n FROM bot_deliveries WHERE state = 'sent'")
    return bool(got[0]["n"] >= n)


def clean(cluster: Instances) -> None:
    """No traceback or 40060 in any log; every IDENTIFY accepted (none over its bucket's
    rate), and none closer than the window to the previous one of its bucket."""
    problems = cluster.problems()
    assert problems == [], "\n\n".join(problems[:3])
    assert cluster.identify_problems() == []
    assert all(g >= IDENTIFY_WINDOW for g in cluster.bucket_gaps()), cluster.bucket_gaps()


# --- every interaction once ---------------------------------------------------------------

LAYOUTS = [
    # Unsharded: every session receives every interaction; what makes each take effect once
    # is the once key in the database, and the losers' silence.
    pytest.param(2, Layout(count=1, pinned=True), id="two-instances-one-shard-both-connected"),
    pytest.param(3, Layout(count=1, pinned=True), id="three-instances-one-shard-all-connected"),
    # Sharded: one session per shard (two during a hand-over), shards shared out by leases.
    pytest.param(2, Layout(count=4), id="two-instances-4-leased-shards"),
    pytest.param(3, Layout(count=4), id="three-instances-4-leased-shards"),
]


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("instances", "layout"), LAYOUTS)
async def test_every_command_form_and_button_takes_effect_once(
    dsn: str, started: list[Process], tmp_path: Path, instances: int, layout: Layout
) -> None:
    """In a guild of every shard: ``/schedule`` (due soon, then edited with ``/edit``; one
    post, with the edited text), ``/schedule`` then ``/cancel`` (nothing posted, one
    'canceled' in its history), the form path (one announcement), and in one guild a page
    button of ``/list``: each answered once, each effect once."""
    async with discord_fake() as fake:
        worlds = [sharded_world(fake, k, layout.count) for k in range(layout.count)]
        cluster = Instances(fake, dsn, tmp_path, started, layout)
        await asyncio.gather(*(cluster.start(f"bot{i}") for i in range(instances)))
        if layout.pinned:
            await wait(
                "every instance connected on every shard",
                lambda: set(cluster.served().values()) == {instances},
                cluster,
            )
        else:
            await evenly_served(cluster, instances)

        handles: list[InteractionHandle] = []

        async def in_guild(k: int, world: World) -> None:
            h = await command(
                world,
                "schedule",
                {"when": due_in(LEAD), "message": f"due {k}", "channel": world.news},
            )
            handles.append(h)
            await answered(h, "Scheduled announcement **#1**")
            h = await command(world, "schedule", {"when": "in 1h", "message": f"cancel {k}"})
            handles.append(h)
            await answered(h, "Scheduled announcement **#2**")
            h = await command(world, "cancel", {"id": 2})
            handles.append(h)
            await answered(h, "Canceled announcement **#2**")
            h = await command(world, "edit", {"id": 1, "message": f"due {k}, edited"})
            handles.append(h)
            await answered(h, "Edited")
            form = await command(world, "schedule", {"when": "in 2h"})
            handles.append(form)
            assert (await form.response(timeout=DEADLINE)).type == CB_MODAL
            assert form.modal is not None
            [text] = [
                c
                for c in iter_components(form.modal["components"])
                if c["type"] == 4 and c["label"] == "Message"
            ]
            sub = await form.submit_modal({text["custom_id"]: f"from the form {k}"})
            handles.append(sub)
            await answered(sub, "Scheduled announcement **#3**")

        await asyncio.gather(*(in_guild(k, w) for k, w in enumerate(worlds)))

        # A page button, in the first guild: 13 announcements, two pages.
        first = worlds[0]
        for n in range(10):
            h = await command(first, "schedule", {"when": f"in {n + 3}h", "message": f"#{n}"})
            handles.append(h)
            await answered(h, "Scheduled announcement")
        listed = await command(first, "list")
        handles.append(listed)
        await listed.response(timeout=DEADLINE)
        page = await listed.click("crier:list:1")
        handles.append(page)
        await page.response(timeout=DEADLINE)

        await wait(
            "every due announcement sent", lambda: deliveries_sent(dsn, len(worlds)), cluster
        )
        # Losers answer after the winner, if at all: wait until each instance has received
        # and dropped every interaction (every session got it; its log line is DEBUG).
        anns = await rows(
            dsn, "SELECT id, guild_id, local_id, state, content FROM bot_announcements"
        )
        history = await rows(dsn, "SELECT announcement_id, action FROM bot_history")
        messages = {w.guild.id: fake.bot_messages(w.news) for w in worlds}
        assert all(p.proc.returncode is None for p in started), cluster.logs()
        clean(cluster)  # (while the fake still answers: after it, every log fills with errors)

    answered_once(handles)
    for k, w in enumerate(worlds):
        mine = sorted(
            (a["local_id"], a["state"], a["content"]) for a in anns if a["guild_id"] == w.guild.id
        )
        expected = [
            (1, "sent", f"due {k}, edited"),
            (2, "canceled", f"cancel {k}"),
            (3, "scheduled", f"from the form {k}"),
        ]
        if k == 0:
            expected += [(4 + n, "scheduled", f"#{n}") for n in range(10)]
        assert mine == expected
        assert [m.content for m in messages[w.guild.id]] == [f"due {k}, edited"]
    by_id = {a["id"]: a for a in anns}
    actions: dict[tuple[int, int], list[str]] = {}
    for h in history:
        a = by_id[h["announcement_id"]]
        actions.setdefault((a["guild_id"], a["local_id"]), []).append(h["action"])
    for w in worlds:
        assert sorted(actions[(w.guild.id, 1)]) == ["created", "edited"]
        assert sorted(actions[(w.guild.id, 2)]) == ["canceled", "created"]
        assert actions[(w.guild.id, 3)] == ["created"]


# --- eight shards, a SIGKILL and a fourth instance ----------------------------------------

GUILDS = size(16, 40)
"""Spread over the 8 shards (guild ``g`` on shard ``g % 8``)."""


@pytest.mark.timeout(300)
async def test_eight_shards_a_sigkill_and_a_fourth_instance(
    dsn: str, started: list[Process], tmp_path: Path
) -> None:
    """Three instances share 8 shards (3, 3 and 2). A ``/schedule`` in every guild, due
    after the kill, is answered once. One instance holding 3 shards is SIGKILLed: its
    shards are served again within the bound the settings give (lease, a lease round, one
    IDENTIFY turn per shard); every announcement due meanwhile is posted once; a command in
    every guild of its shards is answered once. A fourth instance starts: 2 shards each."""
    layout = Layout(count=8)
    async with discord_fake() as fake:
        worlds = [sharded_world(fake, g % 8, 8) for g in range(GUILDS)]
        cluster = Instances(fake, dsn, tmp_path, started, layout)
        await asyncio.gather(*(cluster.start(f"bot{i}") for i in range(3)))
        await evenly_served(cluster, 3)

        handles = [
            await command(
                w, "schedule", {"when": due_in(LEAD), "message": f"g{g}", "channel": w.news}
            )
            for g, w in enumerate(worlds)
        ]
        for h in handles:
            await answered(h, "Scheduled announcement **#1**")

        holders = await cluster.holders()
        victim_name = next(n for n, s in holders.items() if len(s) == 3)
        lost = holders[victim_name]
        victim = cluster.by_name[victim_name]
        victim.kill()
        killed = time.monotonic()
        assert await victim.proc.wait() == -9
        await wait("the victim's shards served again", cluster.every_shard_served_once, cluster)
        took = time.monotonic() - killed
        bound = takeover_bound(
            lease=layout.shard_lease, interval=layout.identify_interval, shards=len(lost)
        )
        assert took <= bound, (took, bound, cluster.logs())

        again = [
            await command(w, "schedule", {"when": "in 1h", "message": f"after {g}"})
            for g, w in enumerate(worlds)
            if g % 8 in lost
        ]
        for h in again:
            await answered(h, "Scheduled announcement **#2**")

        await wait("every due announcement sent", lambda: deliveries_sent(dsn, GUILDS), cluster)

        await cluster.start("bot3")
        await evenly_served(cluster, 3)  # the two survivors and the fourth: 3, 3, 2
        later = [await command(w, "info", {"id": 1}) for w in worlds]
        for h in later:
            await answered(h, "g")
        messages = {w.guild.id: [m.content for m in fake.bot_messages(w.news)] for w in worlds}
        deliveries = await rows(dsn, "SELECT state, count(*) AS n FROM bot_deliveries GROUP BY 1")
        anns = await rows(dsn, "SELECT guild_id, count(*) AS n FROM bot_announcements GROUP BY 1")
        clean(cluster)

    answered_once(handles + again + later)
    assert messages == {w.guild.id: [f"g{g}"] for g, w in enumerate(worlds)}
    assert deliveries == [{"state": "sent", "n": GUILDS}]
    per_guild = {a["guild_id"]: a["n"] for a in anns}
    assert per_guild == {w.guild.id: 2 if g % 8 in lost else 1 for g, w in enumerate(worlds)}
    print(
        f"\nshards {lost} of the SIGKILLed instance served again after {took:.1f}s "
        f"(bound {bound:.1f}s)"
    )


# --- a rolling deploy ---------------------------------------------------------------------


@pytest.mark.timeout(300)
async def test_a_rolling_deploy_under_commands_and_due_announcements(
    dsn: str, started: list[Process], tmp_path: Path
) -> None:
    """Two instances share 4 shards while a stream of ``/schedule`` commands (each due a few
    seconds later) runs in guilds of every shard. A new instance starts and an old one is
    stopped with SIGTERM (it hands its shards over and exits 0), as many times as there were
    instances (one swap by default). Every command is answered once, every announcement
    written once and posted once."""
    layout = Layout(count=4, shard_lease=6.0)  # (a leaving instance waits up to two leases)
    swaps = size(1, 2)
    async with discord_fake() as fake:
        worlds = [sharded_world(fake, k, 4) for k in range(4)]
        cluster = Instances(fake, dsn, tmp_path, started, layout)
        await asyncio.gather(cluster.start("old0"), cluster.start("old1"))
        await evenly_served(cluster, 2)

        handles: list[InteractionHandle] = []
        stop = asyncio.Event()

        async def stream() -> None:
            i = 0
            while not stop.is_set():
                w = worlds[i % 4]
                h = await command(
                    w, "schedule", {"when": due_in(4), "message": f"stream {i}", "channel": w.news}
                )
                handles.append(h)
                i += 1
                await asyncio.sleep(0.1)  # the stream's own pace, not a wait for anything

        streaming = asyncio.create_task(stream())
        try:
            for n in range(swaps):
                await cluster.start(f"new{n}")
                await evenly_served(cluster, 3)
                old = cluster.by_name[f"old{n}"]
                assert await old.terminate(within=DEADLINE) == 0, old.log
                await evenly_served(cluster, 2)
        finally:
            stop.set()
            await streaming
        total = len(handles)
        for h in handles:
            await answered(h, "Scheduled announcement")
        await wait("every announcement sent", lambda: deliveries_sent(dsn, total), cluster)
        messages = [m.content for m in fake.bot_messages()]
        anns = await rows(dsn, "SELECT content, state FROM bot_announcements")
        clean(cluster)
        # Every shard handed over before its giver closed it (none released untaken):
        assert "not taken over within" not in cluster.logs(10**7)

    answered_once(handles)
    streamed = sorted(f"stream {i}" for i in range(total))
    assert sorted(a["content"] for a in anns) == streamed
    assert {a["state"] for a in anns} == {"sent"}
    assert sorted(messages) == streamed


# --- the daily session start budget -------------------------------------------------------

BUDGET, KEPT = 12, 10


@pytest.mark.timeout(300)
async def test_a_restart_loop_does_not_spend_the_session_start_budget(
    dsn: str, started: list[Process], tmp_path: Path
) -> None:
    """12 session starts a day, 10 kept: an instance killed and started again as soon as it
    connects (a crash loop) connects twice; the third start refuses to IDENTIFY, exits with
    a message naming SESSION_STARTS_KEPT, and Discord's budget is left at 10. The restarts'
    IDENTIFYs, each from a new process, keep to the bucket's rate."""
    layout = Layout(count=1, extra={"SESSION_STARTS_KEPT": str(KEPT)})
    async with discord_fake(session_start_total=BUDGET) as fake:
        sharded_world(fake, 0, 1)
        cluster = Instances(fake, dsn, tmp_path, started, layout)
        starts = 0
        for n in range(BUDGET):
            bot = await cluster.start(f"crashing{n}")
            await wait(
                "connected, or exited",
                lambda bot=bot: (
                    cluster.every_shard_served_once() or bot.proc.returncode is not None
                ),  # type: ignore[misc]
                cluster,
            )
            if bot.proc.returncode is not None:
                break
            starts += 1
            bot.kill()
            await bot.proc.wait()
            await wait("its session gone", lambda: not fake.gateway.connected_sessions, cluster)
        remaining = fake.gateway.sharding.remaining
        last = bot

    assert starts == BUDGET - KEPT
    assert last.proc.returncode not in (0, None)
    assert "SESSION_STARTS_KEPT" in last.log
    assert remaining == KEPT
    assert cluster.identify_problems() == []
    assert all(g >= IDENTIFY_WINDOW for g in cluster.bucket_gaps())
    assert re.search(r"session start budget is low", cluster.logs(10**6))
