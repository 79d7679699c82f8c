"""``GET /healthz`` and ``GET /metrics`` on ``HTTP_ADDRESS``: the real bot (real discord.py
client) against the fake Discord, asked over HTTP with aiohttp as any monitor would."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.announcements import SEND_FN
from bot.config import ConfigError, load_settings
from scheduler import JobState
from tests.bot.test_delivery import advance_to_retry, idle, messages_regex, posts, schedule
from tests.bot.test_destinations import announcement_channel
from tests.bot.test_destinations import schedule as schedule_in
from tests.bot.test_edit import edit

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.bot.conftest import CrierFactory, World

TOKEN = "x" * 24 + ".abcdef.ghijklmnopqrstu"


@pytest.fixture
async def served(crier_factory: CrierFactory) -> Crier:
    app = await crier_factory(http_address=("127.0.0.1", 0))
    assert app.web is not None
    assert app.web.port != 0
    return app


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        yield session


async def get(http: aiohttp.ClientSession, app: Crier, path: str) -> tuple[int, str, str]:
    assert app.web is not None
    async with http.get(app.web.url + path) as resp:
        return resp.status, await resp.text(), resp.headers.get("Content-Type", "")


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text page, by (name, sorted labels)."""
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def sample(page: dict[Any, float], name: str, **labels: str) -> float | None:
    return page.get((name, tuple(sorted(labels.items()))))


# --- /healthz ------------------------------------------------------------------------------------


async def test_healthz_is_ok_then_503_while_the_gateway_is_down_then_ok_again(
    world: World, served: Crier, http: aiohttp.ClientSession
) -> None:
    assert await get(http, served, "/healthz") == (200, "ok\n", "text/plain; charset=utf-8")

    gateway = world.fake.gateway
    gateway.refuse_connections = True
    assert await world.fake.disconnect_gateway() == 1
    await world.fake.wait_until(lambda: gateway.refused_count > 0, what="a refused reconnect")
    status, text, _ = await get(http, served, "/healthz")
    assert (status, text) == (503, "gateway not connected\n")

    gateway.refuse_connections = False
    await world.fake.wait_until(
        lambda: served.shards.problems() == [] and gateway.connected_sessions,
        timeout=30,
        what="the client to reconnect",
    )
    assert (await get(http, served, "/healthz"))[:2] == (200, "ok\n")


async def test_healthz_is_503_with_the_reason_when_the_database_cannot_be_read(
    served: Crier, http: aiohttp.ClientSession
) -> None:
    await served.sched.store.close()  # as if the database went away under the bot
    status, text, _ = await get(http, served, "/healthz")
    assert status == 503
    assert text.startswith("database unreachable: ")
    assert text.count("\n") == 1


async def test_healthz_says_when_the_scheduler_is_not_running(
    served: Crier, http: aiohttp.ClientSession
) -> None:
    await served.sched.stop(grace=0)
    status, text, _ = await get(http, served, "/healthz")
    assert status == 503
    assert text.splitlines()[0] == "scheduler not running"


async def test_the_server_is_off_unless_http_address_is_set(crier: Crier) -> None:
    assert crier.settings.http_address is None
    assert crier.web is None


def test_http_address_is_host_and_port() -> None:
    env = {"DISCORD_TOKEN": TOKEN}
    assert load_settings(env, env_file=None).http_address is None
    for raw, expected in (
        ("127.0.0.1:8080", ("127.0.0.1", 8080)),
        ("0.0.0.0:0", ("0.0.0.0", 0)),
        ("[::1]:9100", ("::1", 9100)),
    ):
        got = load_settings({**env, "HTTP_ADDRESS": raw}, env_file=None).http_address
        assert got == expected
    for bad in ("8080", "localhost", "127.0.0.1:http", "127.0.0.1:70000", ":8080"):
        with pytest.raises(ConfigError, match="HTTP_ADDRESS must be HOST:PORT"):
            load_settings({**env, "HTTP_ADDRESS": bad}, env_file=None)


async def test_an_address_in_use_is_one_clear_error(
    served: Crier, crier_factory: CrierFactory
) -> None:
    assert served.web is not None
    with pytest.raises(ConfigError, match=rf"HTTP_ADDRESS 127.0.0.1:{served.web.port} cannot"):
        await crier_factory(http_address=("127.0.0.1", served.web.port))


# --- /metrics -----------------------------------------------------------------------------------


async def test_metrics_after_a_delivery_through_a_429(
    world: World, served: Crier, clock: FakeClock, http: aiohttp.ClientSession
) -> None:
    await schedule(world, world.news, "in 5m", "Counted")
    world.fake.ratelimits.inject_429(
        2, retry_after=0.05, method="POST", path_regex=messages_regex(world.news)
    )
    clock.advance(timedelta(minutes=5))
    await idle(served)
    assert [m.content for m in posts(world, world.news)] == ["Counted"]

    status, text, content_type = await get(http, served, "/metrics")
    assert status == 200
    assert content_type.startswith("text/plain")
    page = samples(text)
    assert sample(page, "crier_deliveries_sent_total") == 1
    assert sample(page, "crier_deliveries_late_total") == 0
    assert sample(page, "crier_deliveries_failed_total") == 0
    assert sample(page, "crier_nonce_resends_total") == 0
    assert sample(page, "crier_rate_limited_total") == 2
    assert sample(page, "crier_publishes_total") == 0
    assert sample(page, "crier_gateway_connected") == 1
    assert sample(page, "crier_guilds") == 1
    # the scheduler's side: the send action (and the bookkeeping it ran) claimed and completed
    assert sample(page, "scheduler_running") == 1
    assert (sample(page, "scheduler_claims_total", kind="action") or 0) >= 1
    assert (sample(page, "scheduler_completions_total") or 0) >= 1
    assert sample(page, "scheduler_failures_total") == 0
    assert sample(page, "scheduler_due_backlog") == 0
    assert sample(page, "scheduler_jobs", state="in_progress") == 0
    assert re.search(r"^# HELP crier_deliveries_sent_total .+", text, re.MULTILINE)


async def test_metrics_count_a_resend_with_the_same_nonce_and_a_failure(
    world: World, served: Crier, clock: FakeClock, http: aiohttp.ClientSession
) -> None:
    await schedule(world, world.news, "in 5m", "Second time lucky")
    await schedule(world, world.general, "in 5m", "Never allowed")
    # created, but the answer is a 503: the job's next attempt re-sends with the same nonce
    world.fake.faults.add(
        method="POST", path_regex=messages_regex(world.news), status=503, after_effect=True
    )
    world.fake.faults.add(
        method="POST", path_regex=messages_regex(world.general), status=403, code=50013
    )
    clock.advance(timedelta(minutes=5))
    await idle(served)
    [job] = [j for j in await served.sched.list_jobs(fn=SEND_FN) if j.state == JobState.PENDING]
    await advance_to_retry(served, clock, job.id)
    assert [m.content for m in posts(world, world.news)] == ["Second time lucky"]
    assert world.fake.nonce_dedup_hits == 1

    page = samples((await get(http, served, "/metrics"))[1])
    assert sample(page, "crier_deliveries_sent_total") == 1
    assert sample(page, "crier_deliveries_resent_total") == 1
    assert sample(page, "crier_nonce_resends_total") == 1
    assert sample(page, "crier_deliveries_failed_total") == 1
    assert sample(page, "scheduler_retries_total") == 1
    assert sample(page, "scheduler_failures_total") == 1


async def test_metrics_count_publishes_and_edits_of_posted_messages(
    world: World, served: Crier, clock: FakeClock, http: aiohttp.ClientSession
) -> None:
    news = announcement_channel(world)
    local = await schedule_in(world, news, when="in 1m", message="to followers")
    clock.advance(timedelta(minutes=1))
    await idle(served)
    [posted] = world.fake.bot_messages(news)
    assert posted.crossposted
    await edit(world, id=local, message="to followers, corrected")
    await idle(served)
    assert world.fake.bot_messages(news)[0].content == "to followers, corrected"

    page = samples((await get(http, served, "/metrics"))[1])
    assert sample(page, "crier_deliveries_sent_total") == 1
    assert sample(page, "crier_publishes_total") == 1
    assert sample(page, "crier_publishes_failed_total") == 0
    assert sample(page, "crier_edits_total") == 1
    assert sample(page, "crier_edits_failed_total") == 0
