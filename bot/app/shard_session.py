"""One gateway shard's session in this process: its discord.py client, the task that keeps
the session, and how it starts and stops.

A session waits its first IDENTIFY's turn (:class:`~bot.app.identify.IdentifyGate`) outside
discord.py's 60 s connect limit, then connects; once ready it tells whoever waits
(``on_ready``: the lease share runs a round, so a shard handed over here is confirmed at
once). A session that fails for good reports it once (``on_failure``), 4011 as
:class:`ShardingRequired`. Stopping closes the session after the interactions it received
are handled (bounded by :data:`INTERACTIONS_WAIT`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any, Protocol

import discord

from scheduler.clock import sleep_until

from ..config import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable

    from scheduler import Clock

    from .identify import IdentifyGate

__all__ = ["INTERACTIONS_WAIT", "ShardClient", "ShardSession", "ShardingRequired"]

log = logging.getLogger("crier.shards")

SHARDING_REQUIRED = 4011

INTERACTIONS_WAIT = 10.0
"""How long a shard being stopped waits for the interactions it is still handling."""


class ShardingRequired(ConfigError):
    """Discord closed a session with 4011: its shard holds too many servers."""


class ShardClient(Protocol):
    """What :class:`Shards` needs of a shard's client (a ``CrierBot``)."""

    identify_deadline: float | None

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


class ShardSession:
    """Shard ``shard_id`` of ``count`` on ``client``: :meth:`start` logs in and starts the
    session in the background; :meth:`stop` ends it. ``on_ready`` is called once its session
    is ready, ``on_failure`` if it fails for good."""

    def __init__(
        self,
        shard_id: int,
        count: int,
        client: ShardClient,
        *,
        gate: IdentifyGate,
        clock: Clock,
        on_ready: Callable[[], None],
        on_failure: Callable[[BaseException], None],
    ) -> None:
        self.shard_id = shard_id
        self.count = count
        self.client = client
        self.gate = gate
        self.clock = clock
        self.on_ready = on_ready
        self.on_failure = on_failure
        self.task: asyncio.Task[None] | None = None
        self.stopping = False
        self.watch: asyncio.Task[None] | None = None
        """Calls ``on_ready`` once the session is ready."""
        self.waiting_first_turn = False
        """Waiting for its first IDENTIFY's turn."""

    @property
    def name(self) -> str:
        return f"shard {self.shard_id} of {self.count}"

    @property
    def waiting_turn(self) -> bool:
        """Waiting for an IDENTIFY's turn, its first or a later one (tests drive the clock
        until every session is ready or waiting)."""
        return self.waiting_first_turn or self.shard_id in self.gate.waiting

    @property
    def ready(self) -> bool:
        ws = self.client.ws
        return (
            not self.client.is_closed()
            and ws is not None
            and bool(ws.open)
            and self.client.is_ready()
        )

    async def start(self, token: str) -> None:
        """Log in (an error here is the caller's, the client closed), then keep the session
        in the background."""
        try:
            await self.client.login(token)
        except BaseException:
            with contextlib.suppress(Exception):
                await self.client.close()
            raise
        where = f"{self.shard_id}/{self.count}"
        self.task = asyncio.create_task(self._run(), name=f"discord gateway shard {where}")
        self.watch = asyncio.create_task(self._when_ready(), name=f"shard {where} ready")
        log.info("%s: starting", self.name)

    async def _when_ready(self) -> None:
        await self.client.wait_until_ready()
        self.on_ready()

    async def _run(self) -> None:
        try:
            # The first IDENTIFY's turn is waited here, outside discord.py's 60 s limit on
            # connecting (a shard far back in its bucket's queue would time out in it).
            turn = await self.gate.turn(self.shard_id)
            self.waiting_first_turn = True
            try:
                await sleep_until(self.clock, turn)
            finally:
                self.waiting_first_turn = False
            self.client.identify_deadline = turn + self.gate.margin
            await self.client.connect()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if not self.stopping:
                self.on_failure(self._failure(exc))

    def _failure(self, exc: BaseException) -> BaseException:
        failure = exc
        if isinstance(exc, discord.ConnectionClosed) and exc.code == SHARDING_REQUIRED:
            failure = ShardingRequired(
                f"Discord refused shard {self.shard_id} of {self.count} with 4011 (sharding "
                f"required): the bot is in more servers than one shard may hold (2,500). Set "
                f"SHARD_COUNT to a larger count (at least one shard per 2,500 servers; unset, "
                f"it is the number Discord recommends)"
            )
        log.error("%s stopped: %s", self.name, failure)
        return failure

    async def stop(self) -> None:
        """End the session: its loop first, then the interactions it is still handling
        (bounded), then the session itself."""
        self.stopping = True
        if self.watch is not None:
            self.watch.cancel()
        # The session's loop first: once closed, a client must not dispatch (discord.py
        # would make an event coroutine it can no longer schedule), then the session itself
        # (closed with 1000: Discord ends it, no RESUME is kept for it).
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(BaseException):
                await self.task
        # Then the interactions it received and is still handling (bounded): the other
        # sessions that received one stay silent when this one's effect came first, so
        # closing under it would lose the member's answer.
        left = await self.client.wait_interactions(INTERACTIONS_WAIT)
        if left:
            log.warning(
                "%s: closed with %d interaction(s) still being handled after %g s",
                self.name, left, INTERACTIONS_WAIT,
            )  # fmt: skip
        with contextlib.suppress(Exception):
            await self.client.close()
        log.info("%s: stopped here", self.name)
