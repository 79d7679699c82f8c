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
N instances hold an even share each; a dead one's shards are taken once their leases run out
(``SHARD_LEASE_SECONDS``) and then wait their IDENTIFY turn; a new one gets its share by
hand-over, the giver closing its session only after the taker's session is ready (for a
moment both receive the shard's interactions: each takes effect once, ``bot.commands.once``).
Instances that disagree on the count form separate groups, each serving every shard.

IDENTIFYs keep to Discord's limits across every instance (:class:`IdentifyGate`): one per
``max_concurrency`` bucket (``shard_id % max_concurrency``) per ``IDENTIFY_INTERVAL_SECONDS``
through ``sched.reserve_slot``, and never below ``SESSION_STARTS_KEPT`` of the daily budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from typing import TYPE_CHECKING, Any, Protocol

import discord

from scheduler import Clock, LeaseShare, Pace, Scheduler
from scheduler.clock import sleep_until

from ..config import ConfigError
from ..web.gateway import ShardState

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

__all__ = [
    "IdentifyGate",
    "IdentifyRefused",
    "SessionStartLimit",
    "ShardClient",
    "ShardingRequired",
    "Shards",
    "shard_key",
]

log = logging.getLogger("crier.shards")

SHARDING_REQUIRED = 4011

SessionStartLimit = dict[str, int]
"""``session_start_limit`` of ``GET /gateway/bot``: total, remaining, reset_after (ms),
max_concurrency."""


class ShardingRequired(ConfigError):
    """Discord closed a session with 4011: its shard holds too many servers."""


class IdentifyRefused(ConfigError):
    """The daily session start budget is down to what crier keeps: no IDENTIFY is sent."""


def shard_key(shard_id: int, count: int) -> str:
    """The lease key of a shard (the count is part of it: see the module's docstring)."""
    return f"shard:{shard_id}/{count}"


class IdentifyGate:
    """Waits each IDENTIFY's turn: at most one per bucket per ``interval`` across every
    instance sharing the database, and none once the day's session starts are down to
    ``kept``. ``fetch()`` reads ``session_start_limit`` afresh (``GET /gateway/bot``), so the
    budget counted is the bot's, every instance's starts included."""

    def __init__(
        self,
        sched: Scheduler,
        clock: Clock,
        fetch: Callable[[], Awaitable[SessionStartLimit]],
        *,
        interval: float,
        kept: int,
        max_concurrency: int,
    ) -> None:
        self.sched = sched
        self.clock = clock
        self.fetch = fetch
        self.interval = interval
        self.kept = kept
        self.max_concurrency = max(1, max_concurrency)
        self.identified = 0
        """IDENTIFY turns this process reserved."""

    def bucket(self, shard_id: int) -> int:
        return shard_id % self.max_concurrency

    def check_budget(self, limit: SessionStartLimit) -> None:
        """Refuse (:class:`IdentifyRefused`) at or below ``kept`` session starts left; warn
        once a quarter of the day's budget or less is left."""
        total, remaining = int(limit["total"]), int(limit["remaining"])
        hours = int(limit.get("reset_after", 0)) / 3_600_000
        if remaining <= self.kept:
            raise IdentifyRefused(
                f"Discord's session start budget is down to {remaining} of {total} (it resets "
                f"in {hours:.1f} h): crier keeps the last {self.kept} (SESSION_STARTS_KEPT) and "
                "does not connect, since spending them all makes Discord reset the token. "
                "Find what restarts the bot so often, then start it after the reset."
            )
        if remaining <= max(total // 4, 2 * self.kept):
            log.warning(
                "Discord's session start budget is low: %d of %d left (resets in %.1f h); at "
                "%d crier stops connecting. Is something restarting the bot in a loop?",
                remaining, total, hours, self.kept,
            )  # fmt: skip

    async def turn(self, shard_id: int) -> float:
        """When shard ``shard_id`` may IDENTIFY (a timestamp on the clock; now, or its
        bucket's next free slot, reserved), or raise :class:`IdentifyRefused`."""
        self.check_budget(await self.fetch())
        self.identified += 1
        if self.interval <= 0:
            return self.clock.time()
        pace = Pace(f"gateway:identify:{self.bucket(shard_id)}", self.spacing)
        return (await self.sched.reserve_slot(pace)).timestamp()

    @property
    def spacing(self) -> float:
        """How far apart two turns of one bucket are reserved: the interval and a margin
        (a fifth of it, at least 0.25 s). A turn is a time on this process's clock; the
        IDENTIFY reaches Discord after its connection is set up, which takes longer for one
        shard than for another (a loaded machine, a slow TLS handshake): without the margin
        the first of two IDENTIFYs may arrive late and the next on time, closer than Discord
        allows, and be refused with op 9."""
        return self.interval + max(self.interval / 5, 0.25)

    async def wait(self, shard_id: int) -> None:
        """Wait until shard ``shard_id`` may IDENTIFY (see :meth:`turn`)."""
        await sleep_until(self.clock, await self.turn(shard_id))


class ShardClient(Protocol):
    """What :class:`Shards` needs of a shard's client (a ``CrierBot``)."""

    identify_turn_taken: bool

    @property
    def ws(self) -> Any: ...
    @property
    def guilds(self) -> Any: ...
    @property
    def latency(self) -> float: ...
    def is_ready(self) -> bool: ...
    def is_closed(self) -> bool: ...
    async def login(self, token: str) -> None: ...
    async def connect(self, *, reconnect: bool = True) -> None: ...
    async def close(self) -> None: ...
    async def wait_until_ready(self) -> None: ...
    async def wait_interactions(self, within: float) -> int: ...


class _Runner:
    """One shard's client and the task that keeps its session."""

    def __init__(self, shard_id: int, client: ShardClient) -> None:
        self.shard_id = shard_id
        self.client = client
        self.task: asyncio.Task[None] | None = None
        self.stopping = False
        self.watch: asyncio.Task[None] | None = None
        """Pokes the lease share once the session is ready (see ``Shards._poke_when_ready``)."""
        self.waiting_turn = False
        """Waiting for its first IDENTIFY's turn (tests drive the clock until none is)."""

    @property
    def ready(self) -> bool:
        ws = self.client.ws
        return (
            not self.client.is_closed()
            and ws is not None
            and bool(ws.open)
            and self.client.is_ready()
        )


INTERACTIONS_WAIT = 10.0
"""How long a shard being stopped waits for the interactions it is still handling."""


GatewayInfo = tuple[int, SessionStartLimit]
"""``GET /gateway/bot``: the shards Discord recommends, and the session start limit."""


class Shards:
    """The shards this process runs (``pinned``, or by lease; see the module's docstring),
    each on a client made by ``make_client(shard_id, count)``. ``fetch()`` asks Discord's
    ``GET /gateway/bot``; ``count`` (``SHARD_COUNT``) unset, its recommendation is used."""

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
    ) -> None:
        self.sched = sched
        self.clock = clock
        self.fetch = fetch
        self.make_client = make_client
        self._token = token
        self.count = count or 0
        """The shard count (known once started)."""
        self._count_setting = count
        self.pinned = None if pinned is None else sorted(set(pinned))
        self.lease = lease
        self.identify_interval = identify_interval
        self.session_starts_kept = session_starts_kept
        self.gate: IdentifyGate | None = None
        self.runners: dict[int, _Runner] = {}
        self.share: LeaseShare | None = None
        self.started = False
        self._started = asyncio.Event()
        self.failure: BaseException | None = None
        self._failed = asyncio.Event()
        self.changed = asyncio.Event()
        """Set whenever a shard starts, stops or fails here (tests clear it and wait)."""
        self.started_total = 0
        self.stopped_total = 0

    @property
    def mode(self) -> str:
        return "pinned" if self.pinned is not None else "leased"

    @property
    def group(self) -> str:
        return f"gateway:{self.count}"

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

        self.gate = IdentifyGate(
            self.sched,
            self.clock,
            session_starts,
            interval=self.identify_interval,
            kept=self.session_starts_kept,
            max_concurrency=int(limit.get("max_concurrency", 1)),
        )
        self.gate.check_budget(limit)
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
                await self._start(shard_id)
            self.started = True
            self._started.set()
            return
        keys = [shard_key(i, self.count) for i in range(self.count)]
        self.share = self.sched.leases.share(
            self.group,
            keys,
            start=self._start_key,
            stop=self._stop_key,
            ttl=self.lease,
            ready=self._ready_key,
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
        failed = asyncio.ensure_future(self._failed.wait())
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
        while True:
            pending = [r for r in self.runners.values() if not r.ready]
            if self.failure is not None:
                raise self.failure
            if not pending:
                return
            changed = self.changed
            waits: set[asyncio.Future[Any]] = {
                asyncio.ensure_future(r.client.wait_until_ready()) for r in pending
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

    async def wait(self) -> None:
        """Until a shard fails for good (then raise its failure)."""
        await self._failed.wait()
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
        for shard_id in sorted(self.runners):
            await self._stop(shard_id)

    # --- one shard ---------------------------------------------------------------------------

    @staticmethod
    def _shard_of(key: str) -> int:
        return int(key.removeprefix("shard:").split("/", 1)[0])

    async def _start_key(self, key: str) -> None:
        await self._start(self._shard_of(key))

    async def _stop_key(self, key: str) -> None:
        await self._stop(self._shard_of(key))

    def _ready_key(self, key: str) -> bool:
        runner = self.runners.get(self._shard_of(key))
        return runner is not None and runner.ready

    async def _start(self, shard_id: int) -> None:
        if shard_id in self.runners:
            return
        client = self.make_client(shard_id, self.count)
        runner = _Runner(shard_id, client)
        try:
            await client.login(self._token)
        except BaseException:
            with contextlib.suppress(Exception):
                await client.close()
            raise
        self.runners[shard_id] = runner
        runner.task = asyncio.create_task(
            self._run(runner), name=f"discord gateway shard {shard_id}/{self.count}"
        )
        runner.watch = asyncio.create_task(
            self._poke_when_ready(runner), name=f"shard {shard_id}/{self.count} ready"
        )
        self.started_total += 1
        log.info("shard %d of %d: starting", shard_id, self.count)
        self.changed.set()

    async def _poke_when_ready(self, runner: _Runner) -> None:
        """Once the shard's session is ready, a lease round at once: a shard handed over to
        this instance is confirmed then, and its giver closes its own session on its next
        round, instead of a lease round later (a rolling deploy's SIGTERM waits for it)."""
        await runner.client.wait_until_ready()
        if self.share is not None:
            self.share.poke()

    async def _run(self, runner: _Runner) -> None:
        try:
            # The first IDENTIFY's turn is waited here, outside discord.py's 60 s limit on
            # connecting (a shard far back in its bucket's queue would time out in it).
            if self.gate is None:
                raise RuntimeError("expected self.gate is not None")
            turn = await self.gate.turn(runner.shard_id)
            runner.waiting_turn = True
            try:
                await sleep_until(self.clock, turn)
            finally:
                runner.waiting_turn = False
            runner.client.identify_turn_taken = True
            await runner.client.connect()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if runner.stopping:
                return
            self._fail(runner, exc)

    def _fail(self, runner: _Runner, exc: BaseException) -> None:
        failure = exc
        if isinstance(exc, discord.ConnectionClosed) and exc.code == SHARDING_REQUIRED:
            failure = ShardingRequired(
                f"Discord refused shard {runner.shard_id} of {self.count} with 4011 (sharding "
                f"required): the bot is in more servers than one shard may hold (2,500). Set "
                f"SHARD_COUNT to a larger count (at least one shard per 2,500 servers; unset, "
                f"it is the number Discord recommends)"
            )
        log.error("shard %d of %d stopped: %s", runner.shard_id, self.count, failure)
        if self.failure is None:
            self.failure = failure
            self._failed.set()
        self.changed.set()

    async def _stop(self, shard_id: int) -> None:
        runner = self.runners.pop(shard_id, None)
        if runner is None:
            return
        runner.stopping = True
        if runner.watch is not None:
            runner.watch.cancel()
        # The session's loop first: once closed, a client must not dispatch (discord.py
        # would make an event coroutine it can no longer schedule), then the session itself
        # (closed with 1000: Discord ends it, no RESUME is kept for it).
        if runner.task is not None:
            runner.task.cancel()
            with contextlib.suppress(BaseException):
                await runner.task
        # Then the interactions it received and is still handling (bounded): the other
        # sessions that received one stay silent when this one's effect came first, so
        # closing under it would lose the member's answer.
        left = await runner.client.wait_interactions(INTERACTIONS_WAIT)
        if left:
            log.warning(
                "shard %d of %d: closed with %d interaction(s) still being handled after "
                "%g s", shard_id, self.count, left, INTERACTIONS_WAIT,
            )  # fmt: skip
        with contextlib.suppress(Exception):
            await runner.client.close()
        self.stopped_total += 1
        log.info("shard %d of %d: stopped here", shard_id, self.count)
        self.changed.set()

    # --- what the web layer reads (bot.web.gateway.GatewayStatus) ----------------------------

    def states(self) -> list[ShardState]:
        out = []
        for shard_id in range(self.count):
            runner = self.runners.get(shard_id)
            ready = runner is not None and runner.ready
            latency = runner.client.latency if runner is not None and ready else None
            out.append(
                ShardState(
                    shard_id=shard_id,
                    count=self.count,
                    held=runner is not None,
                    ready=ready,
                    guilds=len(runner.client.guilds) if runner is not None else 0,
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
        return {self._shard_of(k): h for k, h in (await self.sched.leases.holders(keys)).items()}

    def settled(self) -> bool:
        """Every shard started here is ready or waiting for its IDENTIFY turn."""
        return self.started and all(r.ready or r.waiting_turn for r in self.runners.values())

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
