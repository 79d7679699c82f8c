"""``GET /healthz`` and ``GET /metrics``: is this bot process working, and what has it done.

``/healthz`` answers ``200 ok`` when every gateway shard this process runs is connected
(:class:`~bot.web.gateway.GatewayStatus`; an instance whose shards others hold is still
healthy: it delivers), the database answers a read and the scheduler runs; otherwise
``503`` with every reason, one per line (for a load balancer, systemd or a container's
health check). It answers within
:data:`DATABASE_TIMEOUT` even while the database hangs. ``/metrics`` is the Prometheus text
format: the scheduler's metrics (``scheduler.metrics``) and the bot's own (``crier_*``,
:mod:`bot.metrics`). Both need no login: serve them on loopback or behind a proxy.

This module needs ``prometheus_client`` (the ``metrics`` extra): the bot imports it only
when ``HTTP_ADDRESS`` is set.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from scheduler.metrics import SchedulerCollector

from ..db import BotDb

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    import discord

    from scheduler import Scheduler

    from ..metrics import BotStats
    from .gateway import GatewayStatus


log = logging.getLogger(__name__)

DATABASE_TIMEOUT = 2.0
"""How long ``/healthz`` waits for the database's answer before calling it unreachable."""


class DatabaseProbe:
    """Whether the database answers a read: said within :data:`DATABASE_TIMEOUT`, however
    long the database takes.

    The read runs in a task of its own that a probe giving up on it does not cancel: a
    store may finish a call in flight before it lets a cancelled caller go (SQLite's does,
    so that its connection's state is known), so a cancelled read would hold the probe for
    as long as the database hangs. While that read has not answered, later probes wait on
    it (for the same time at most) instead of queueing more reads behind it, and say how
    long it has been waiting."""

    def __init__(self, sched: Scheduler) -> None:
        self.sched = sched
        self._read: asyncio.Task[None] | None = None
        self._started = 0.0

    async def problem(self) -> str | None:
        """Why the database is not healthy (None: it answered)."""
        loop = asyncio.get_running_loop()
        read = self._read
        earlier = read is not None and not read.done()
        if read is None or read.done():
            read = self._read = loop.create_task(self._ping())
            read.add_done_callback(_retrieved)
            self._started = loop.time()
        done, _ = await asyncio.wait({read}, timeout=DATABASE_TIMEOUT)
        if not done:
            waiting = f" (a read has waited {loop.time() - self._started:.1f}s)" if earlier else ""
            return f"database unreachable: no answer within {DATABASE_TIMEOUT:g}s{waiting}"
        exc = read.exception()
        if exc is not None:
            return f"database unreachable: {type(exc).__name__}: {exc}"
        return None

    async def _ping(self) -> None:
        async with self.sched.reader() as db:
            await BotDb(db).ping()


def _retrieved(task: asyncio.Task[None]) -> None:
    """Mark a read's failure as seen (no probe may be waiting on it any more)."""
    if not task.cancelled():
        task.exception()


async def problems(gateway: GatewayStatus, sched: Scheduler, database: DatabaseProbe) -> list[str]:
    """Why this process is not healthy (empty: it is)."""
    found = list(gateway.problems())
    if not sched.running:
        found.append("scheduler not running")
    problem = await database.problem()
    if problem is not None:
        found.append(problem)
    return found


def observability_routes(
    gateway: GatewayStatus,
    client: discord.Client,
    sched: Scheduler,
    stats: BotStats,
    *,
    waiting: Callable[[], str | None] = lambda: None,
) -> list[web.RouteDef]:
    """The ``/healthz`` and ``/metrics`` routes for this process (``client``: the one whose
    guild look-ups see every shard's). While ``waiting`` gives a reason (the start waits for
    the database), ``/healthz`` answers 503 with it alone, and ``/metrics`` serves the
    counters without asking the store for its gauges."""
    registry = CollectorRegistry()
    scheduler_metrics = SchedulerCollector(sched, registry=registry)
    registry.register(_BotCollector(gateway, client, stats))
    database = DatabaseProbe(sched)

    async def healthz(request: web.Request) -> web.Response:
        reason = waiting()
        found = [reason] if reason is not None else await problems(gateway, sched, database)
        if found:
            return web.Response(status=503, text="\n".join(found) + "\n")
        return web.Response(text="ok\n")

    async def metrics(request: web.Request) -> web.Response:
        if waiting() is not None:  # no store to ask yet: the counters alone
            scheduler_metrics.gauges = None
        else:
            try:
                await scheduler_metrics.refresh()
            except Exception as exc:  # the counters are still worth serving
                log.warning("/metrics: could not read the store's gauges: %s", exc)
                scheduler_metrics.gauges = None
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    return [web.get("/healthz", healthz), web.get("/metrics", metrics)]


class _BotCollector(Collector):
    """The bot's counters (:class:`BotStats`) and its gateway's state, as Prometheus
    metrics."""

    def __init__(self, gateway: GatewayStatus, client: discord.Client, stats: BotStats) -> None:
        self.gateway = gateway
        self.client = client
        self.stats = stats

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        for name, help_text, value in self.stats.counters():
            yield CounterMetricFamily(name, help_text, value=value)
        states = self.gateway.states()
        held = [s for s in states if s.held]
        connected = bool(held) and all(s.ready for s in held)
        yield GaugeMetricFamily(
            "crier_gateway_connected",
            "1 while every gateway shard this process runs is connected.",
            int(connected),
        )
        latencies = [s.latency for s in held if s.latency is not None]
        if connected and latencies and all(math.isfinite(x) for x in latencies):
            yield GaugeMetricFamily(
                "crier_gateway_latency_seconds",
                "Time between the gateway's last heartbeat and its acknowledgement (the "
                "slowest shard this process runs).",
                max(latencies),
            )
        shards = GaugeMetricFamily(
            "crier_shards",
            "Each gateway shard of the bot: held (1: this process runs it) and ready (1: its "
            "session is connected and has its servers).",
            labels=["shard", "state"],
        )
        for state in states:
            shards.add_metric([str(state.shard_id), "held"], int(state.held))
            shards.add_metric([str(state.shard_id), "ready"], int(state.ready))
        yield shards
        yield GaugeMetricFamily("crier_guilds", "Servers the bot is in.", len(self.client.guilds))
