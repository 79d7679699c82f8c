"""The gateway shards this process runs: one discord.py client per shard, shared out among
the instances on one database.

Discord splits a bot's gateway into ``SHARD_COUNT`` shards; a guild's events (and its
interactions) go to shard ``(guild_id >> 22) % count``. Each shard this process runs is a
discord.py client of its own (``shard_id=i, shard_count=n``), all of them on one scheduler
and one ``Announcements``; deliveries and everything not tied to a shard go through the
process's REST-only client, so nothing they need depends on which instance holds a guild's
shard.

Which shards: ``SHARD_IDS`` pins them (no leases: an operator's split). Otherwise every
instance joins the lease group of the count (``sched.leases.share``), keys ``shard:<i>/<n>``:
N instances hold an even share each; a dead one's shards are taken at once (the database can
tell a dead instance from a paused one: :mod:`scheduler._holders`), a paused one's once their
leases run out (``SHARD_LEASE_SECONDS``), and then wait their IDENTIFY turn; a new one gets
its share by hand-over, the giver closing its session only after the taker's session is
ready (for a moment both receive the shard's interactions: each takes effect once,
``bot.commands.once``). Instances that start together share the shards out before any
IDENTIFY (``SHARD_JOIN_WINDOW_SECONDS``: a starting instance that finds shards free waits
until no other has joined for that long), so a cold start of N instances IDENTIFYs each
shard once. Instances that disagree on the count form separate groups, each serving every
shard.

The parts: :class:`~bot.app.shard_session.ShardSession` runs one shard's session;
:class:`RunningShards` keeps this process's sessions and waits on them; :class:`Shards`
decides which shards run here (pinned, or by lease) and reports their state to the web.

IDENTIFYs keep to Discord's limits across every instance
(:class:`~bot.app.identify.IdentifyGate`): one per ``max_concurrency`` bucket (``shard_id %
max_concurrency``) per ``IDENTIFY_INTERVAL_SECONDS`` through ``sched.reserve_slot``, and
never below ``SESSION_STARTS_KEPT`` of the daily budget.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING, Any

from ..config import ConfigError
from ..web.gateway import ShardState
from .identify import IdentifyGate, IdentifyRefused, SessionStartLimit
from .shard_session import ShardClient, ShardingRequired, ShardSession

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    from scheduler import Clock, LeaseShare, Scheduler

__all__ = [
    "IdentifyGate",
    "IdentifyRefused",
    "RunningShards",
    "SessionStartLimit",
    "ShardClient",
    "ShardingRequired",
    "Shards",
    "shard_key",
]

log = logging.getLogger("crier.shards")


def shard_key(shard_id: int, count: int) -> str:
    """The lease key of a shard (the count is part of it: see the module's docstring)."""
    return f"shard:{shard_id}/{count}"


def shard_of(key: str) -> int:
    """The shard id of lease key ``key``."""
    return int(key.removeprefix("shard:").split("/", 1)[0])


GatewayInfo = tuple[int, SessionStartLimit]
"""``GET /gateway/bot``: the shards Discord recommends, and the session start limit."""


class RunningShards:
    """The shard sessions this process runs now (:attr:`sessions`, by shard id), each on a
    client made by ``make_client(shard_id, count)``, and what waits on them: until they
    are ready, until one fails for good."""

    def __init__(
        self, *, clock: Clock, make_client: Callable[[int, int], ShardClient], token: str
    ) -> None:
        self.clock = clock
        self.make_client = make_client
        self._token = token
        self.sessions: dict[int, ShardSession] = {}
        self.gate: IdentifyGate | None = None
        self.count = 0
        self.on_ready: Callable[[], None] = lambda: None
        """Called when a session becomes ready (the lease share pokes its round)."""
        self.failure: BaseException | None = None
        self._failed = asyncio.Event()
        self.changed = asyncio.Event()
        """Set whenever a shard starts, stops or fails here (tests clear it and wait)."""
        self.started_total = 0
        self.stopped_total = 0

    def ready(self, shard_id: int) -> bool:
        session = self.sessions.get(shard_id)
        return session is not None and session.ready

    async def start(self, shard_id: int) -> None:
        """Start shard ``shard_id``'s session (nothing if it runs here already)."""
        if shard_id in self.sessions:
            return
        if self.gate is None:
            raise RuntimeError("expected self.gate is not None")
        session = ShardSession(
            shard_id,
            self.count,
            self.make_client(shard_id, self.count),
            gate=self.gate,
            clock=self.clock,
            on_ready=lambda: self.on_ready(),
            on_failure=self._fail,
        )
        await session.start(self._token)
        self.sessions[shard_id] = session
        self.started_total += 1
        self.changed.set()

    async def stop(self, shard_id: int) -> None:
        """Stop shard ``shard_id``'s session (nothing if it does not run here)."""
        session = self.sessions.pop(shard_id, None)
        if session is None:
            return
        await session.stop()
        self.stopped_total += 1
        self.changed.set()

    async def stop_all(self) -> None:
        for shard_id in sorted(self.sessions):
            await self.stop(shard_id)

    def _fail(self, failure: BaseException) -> None:
        if self.failure is None:
            self.failure = failure
            self._failed.set()
        self.changed.set()

    async def wait_failed(self) -> None:
        await self._failed.wait()

    async def wait_ready(self) -> None:
        """Return once every session this process runs now is ready; raise the failure of
        one that cannot connect (a refused token, sharding required, the budget kept)."""
        while True:
            pending = [s for s in self.sessions.values() if not s.ready]
            if self.failure is not None:
                raise self.failure
            if not pending:
                return
            changed = self.changed
            waits: set[asyncio.Future[Any]] = {
                asyncio.ensure_future(s.client.wait_until_ready()) for s in pending
            }
            waits.add(asyncio.ensure_future(self._failed.wait()))
            waits.add(asyncio.ensure_future(changed.wait()))
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()
            if changed.is_set():
                changed.clear()

    def settled(self) -> bool:
        """Every session is ready or waiting for its IDENTIFY turn."""
        return all(s.ready or s.waiting_turn for s in self.sessions.values())


class Shards:
    """The shards this process runs (``pinned``, or by lease; see the module's docstring),
    each on a client made by ``make_client(shard_id, count)``. ``fetch()`` asks Discord's
    ``GET /gateway/bot``; ``count`` (``SHARD_COUNT``) unset, its recommendation is used.
    ``join_window``: a calm start's wait (see the module's docstring)."""

    def __init__(
        self,
        *,
        sched: Scheduler,
        clock: Clock,
        fetch: Callable[[], Awaitable[GatewayInfo]],
        make_client: Callable[[int, int], ShardClient],
        token: str,
        count: int | None = None,
        pinned: Iterable[int] | None = None,
        lease: float = 30.0,
        identify_interval: float = 5.0,
        session_starts_kept: int = 10,
        join_window: float = 0.0,
    ) -> None:
        self.sched = sched
        self.clock = clock
        self.fetch = fetch
        self.count = count or 0
        """The shard count (known once started)."""
        self._count_setting = count
        self.pinned = None if pinned is None else sorted(set(pinned))
        self.lease = lease
        self.identify_interval = identify_interval
        self.session_starts_kept = session_starts_kept
        self.join_window = join_window
        self.running = RunningShards(clock=clock, make_client=make_client, token=token)
        self.running.on_ready = self._session_ready
        self.share: LeaseShare | None = None
        self.started = False
        self._started = asyncio.Event()

    @property
    def mode(self) -> str:
        return "pinned" if self.pinned is not None else "leased"

    @property
    def group(self) -> str:
        return f"gateway:{self.count}"

    @property
    def gate(self) -> IdentifyGate | None:
        return self.running.gate

    @property
    def runners(self) -> dict[int, ShardSession]:
        """The sessions this process runs now, by shard id."""
        return self.running.sessions

    @property
    def failure(self) -> BaseException | None:
        return self.running.failure

    @property
    def changed(self) -> asyncio.Event:
        return self.running.changed

    def clients(self) -> list[ShardClient]:
        """The clients of the shards this process runs now, by shard id."""
        return [self.runners[i].client for i in sorted(self.runners)]

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Ask Discord for the shard count (unless set) and the session start budget (refused
        at once if it is down to what is kept), then start this process's shards: the pinned
        ones, or a first share of the leases."""
        recommended, limit = await self.fetch()
        self.count = self._count_setting or max(1, int(recommended))
        if self.pinned is not None and self.pinned[-1] >= self.count:
            raise ConfigError(f"SHARD_IDS lists shard {self.pinned[-1]} of {self.count}")

        async def session_starts() -> SessionStartLimit:
            return (await self.fetch())[1]

        gate = IdentifyGate(
            self.sched,
            self.clock,
            session_starts,
            interval=self.identify_interval,
            kept=self.session_starts_kept,
            max_concurrency=int(limit.get("max_concurrency", 1)),
        )
        gate.check_budget(limit)
        self.running.gate, self.running.count = gate, self.count
        log.info(
            "%d shard(s)%s; %s",
            self.count,
            "" if self._count_setting else " (as Discord recommends)",
            f"running shards {self.pinned} (SHARD_IDS)"
            if self.pinned is not None
            else "shared out among the instances through leases",
        )
        if self.pinned is not None:
            for shard_id in self.pinned:
                await self.running.start(shard_id)
        else:
            self.share = self.sched.leases.share(
                self.group,
                [shard_key(i, self.count) for i in range(self.count)],
                start=self._start_key,
                stop=self._stop_key,
                ttl=self.lease,
                ready=self._ready_key,
                settle=self.join_window,
            )
            await self.share.join()
        self.started = True
        self._started.set()

    async def identify(self, shard_id: int) -> None:
        """Wait shard ``shard_id``'s IDENTIFY turn (a re-IDENTIFY of a running shard)."""
        if self.gate is None:
            raise RuntimeError("expected self.gate is not None")
        await self.gate.wait(shard_id)

    async def wait_started(self) -> None:
        """Once the first shards are started, until they are ready (see :meth:`wait_ready`):
        what a delivery that reads a shard's cache waits for after a restart."""
        failed = asyncio.ensure_future(self.running.wait_failed())
        started = asyncio.ensure_future(self._started.wait())
        try:
            await asyncio.wait({failed, started}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            failed.cancel()
            started.cancel()
        await self.wait_ready()

    async def wait_ready(self) -> None:
        """Return once every shard this process runs now is ready; raise the failure of one
        that cannot connect (a refused token, sharding required, the budget kept)."""
        await self.running.wait_ready()

    async def wait(self) -> None:
        """Until a shard fails for good (then raise its failure)."""
        await self.running.wait_failed()
        if self.failure is None:
            raise RuntimeError("expected self.failure is not None")
        raise self.failure

    async def close(self, *, hand_over: bool = False) -> None:
        """Stop every shard: handed to the other instances first with ``hand_over`` (each
        session closed once its taker's is ready, within two leases; alone, at once)."""
        share, self.share = self.share, None
        if share is not None:
            if hand_over:
                # A taker notices the leave at its next round (a third of a lease), asks, is
                # handed the shard at the giver's next (a sixth), starts it at its own next,
                # waits its IDENTIFY turn and connects, then confirms at once: more than a
                # lease in the worst case, so the giver waits up to two.
                await share.leave(within=2 * self.lease)
            else:
                await share.leave(within=0)
        await self.running.stop_all()

    # --- the lease share's work -------------------------------------------------------------

    async def _start_key(self, key: str) -> None:
        await self.running.start(shard_of(key))

    async def _stop_key(self, key: str) -> None:
        await self.running.stop(shard_of(key))

    def _ready_key(self, key: str) -> bool:
        return self.running.ready(shard_of(key))

    def _session_ready(self) -> None:
        """A session became ready: a lease round at once, so a shard handed over to this
        instance is confirmed now, and its giver closes its own session on its next round,
        instead of a lease round later (a rolling deploy's SIGTERM waits for it)."""
        if self.share is not None:
            self.share.poke()

    # --- what the web layer reads (bot.web.gateway.GatewayStatus) ----------------------------

    def states(self) -> list[ShardState]:
        out = []
        for shard_id in range(self.count):
            session = self.runners.get(shard_id)
            ready = session is not None and session.ready
            latency = session.client.latency if session is not None and ready else None
            out.append(
                ShardState(
                    shard_id=shard_id,
                    count=self.count,
                    held=session is not None,
                    ready=ready,
                    guilds=len(session.client.guilds) if session is not None else 0,
                    latency=latency if latency is not None and math.isfinite(latency) else None,
                )
            )
        return out

    @property
    def instance(self) -> str:
        return self.sched.leases.holder

    async def holders(self) -> dict[int, str]:
        if self.pinned is not None:
            return {i: self.instance for i in self.pinned}
        if not self.count:
            return {}
        keys = [shard_key(i, self.count) for i in range(self.count)]
        return {shard_of(k): h for k, h in (await self.sched.leases.holders(keys)).items()}

    def settled(self) -> bool:
        """Every shard started here is ready or waiting for its IDENTIFY turn."""
        return self.started and self.running.settled()

    def problems(self) -> list[str]:
        if not self.started:
            return ["gateway not connected"]
        if self.failure is not None:
            return [f"gateway failed: {self.failure}"]
        down = [s for s in self.states() if s.held and not s.ready]
        if not down:
            if self.pinned is not None and not self.runners:
                return ["gateway not connected"]
            return []
        if self.count == 1:
            return ["gateway not connected"]
        return [f"gateway not connected ({', '.join(s.name for s in down)})"]
