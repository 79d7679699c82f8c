"""The fake gateway's sessions and connections: opcodes, intents, what a session subscribes
to and which shard's events it gets, and the ordered (optionally compressed) writer of one
websocket connection. :mod:`.gateway` runs the protocol on top of them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import zlib
from collections import deque
from typing import TYPE_CHECKING, Any

from .shards import shard_of

if TYPE_CHECKING:
    from aiohttp import web

    from .gateway import Gateway

log = logging.getLogger("fakediscord.gateway")

try:  # optional: only used if the client asks for zstd-stream
    import zstandard as _zstd  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the environment
    _zstd = None

# opcodes
DISPATCH = 0
HEARTBEAT = 1
IDENTIFY = 2
PRESENCE_UPDATE = 3
VOICE_STATE_UPDATE = 4
RESUME = 6
RECONNECT = 7
REQUEST_GUILD_MEMBERS = 8
INVALID_SESSION = 9
HELLO = 10
HEARTBEAT_ACK = 11

# intents
INTENT_GUILDS = 1 << 0
INTENT_GUILD_MEMBERS = 1 << 1
INTENT_GUILD_PRESENCES = 1 << 8
INTENT_GUILD_MESSAGES = 1 << 9
INTENT_DIRECT_MESSAGES = 1 << 12
INTENT_MESSAGE_CONTENT = 1 << 15
PRIVILEGED_INTENTS = INTENT_GUILD_MEMBERS | INTENT_GUILD_PRESENCES | INTENT_MESSAGE_CONTENT

_GUILDS_EVENTS = {
    "GUILD_CREATE",
    "GUILD_UPDATE",
    "GUILD_DELETE",
    "GUILD_ROLE_CREATE",
    "GUILD_ROLE_UPDATE",
    "GUILD_ROLE_DELETE",
    "CHANNEL_CREATE",
    "CHANNEL_UPDATE",
    "CHANNEL_DELETE",
    "CHANNEL_PINS_UPDATE",
    "THREAD_CREATE",
    "THREAD_UPDATE",
    "THREAD_DELETE",
}
_MEMBER_EVENTS = {"GUILD_MEMBER_ADD", "GUILD_MEMBER_UPDATE", "GUILD_MEMBER_REMOVE"}
_MESSAGE_EVENTS = {"MESSAGE_CREATE", "MESSAGE_UPDATE", "MESSAGE_DELETE", "MESSAGE_DELETE_BULK"}

_CLOSE = object()


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def guild_of(event: str, data: Any) -> int | None:
    """The guild a dispatch belongs to: its ``guild_id``, or for GUILD_CREATE / UPDATE /
    DELETE the guild's own ``id``; None for DMs and events of no guild."""
    if not isinstance(data, dict):
        return None
    gid = data.get("guild_id")
    if gid is None and event in ("GUILD_CREATE", "GUILD_UPDATE", "GUILD_DELETE"):
        gid = data.get("id")
    return int(gid) if gid is not None else None


class GatewaySession:
    """A gateway session (what RESUME refers to). Survives disconnects until invalidated.

    ``shard`` is ``(shard_id, num_shards)``; ``guild_ids`` the guilds it was given (READY, then
    GUILD_CREATE / GUILD_DELETE); ``interactions`` the ids of the interactions dispatched to it;
    ``peer`` the client's address at IDENTIFY and ``properties`` what it said it is."""

    def __init__(
        self,
        gateway: Gateway,
        *,
        intents: int,
        shard: tuple[int, int],
        peer: str | None = None,
        properties: Any = None,
    ) -> None:
        self.gateway = gateway
        self.id = secrets.token_hex(16)
        self.intents = intents
        self.shard = shard
        self.peer = peer
        self.properties = properties
        self.seq = 0
        self.buffer: deque[tuple[int, str]] = deque(maxlen=gateway.replay_buffer)
        self.connection: GatewayConnection | None = None
        self.invalidated = False
        self.resumes = 0
        self.guild_ids: set[int] = set()
        self.interactions: list[int] = []

    @property
    def connected(self) -> bool:
        return not self.invalidated and self.connection is not None and not self.connection.closing

    def receives(self, guild_id: int | None) -> bool:
        """Whether events of ``guild_id`` (None: a DM) go to this session's shard."""
        return shard_of(guild_id, self.shard[1]) == self.shard[0]

    def wants(self, event: str, *, guild_event: bool = True, self_event: bool = False) -> bool:
        if event in _GUILDS_EVENTS:
            return bool(self.intents & INTENT_GUILDS)
        if event in _MEMBER_EVENTS:
            return self_event or bool(self.intents & INTENT_GUILD_MEMBERS)
        if event in _MESSAGE_EVENTS:
            bit = INTENT_GUILD_MESSAGES if guild_event else INTENT_DIRECT_MESSAGES
            return bool(self.intents & bit)
        return True

    def dispatch(self, event: str, data: Any) -> int:
        self.seq += 1
        frame = _dumps({"op": DISPATCH, "t": event, "s": self.seq, "d": data})
        self.buffer.append((self.seq, frame))
        self.gateway.dispatched.append((self.id, self.seq, event))
        if self.connection is not None and not self.connection.closing:
            self.connection.enqueue(frame)
        return self.seq


class GatewayConnection:
    """One websocket connection. Frames go through a queue so they are written in order."""

    def __init__(self, gateway: Gateway, ws: web.WebSocketResponse, compress: str | None) -> None:
        self.gateway = gateway
        self.ws = ws
        self.peer: str | None = None
        self.session: GatewaySession | None = None
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.closing = False
        self.heartbeats = 0
        self.compress = compress
        self._zlib = zlib.compressobj() if compress == "zlib-stream" else None
        self._zstd = (
            _zstd.ZstdCompressor().compressobj()
            if compress == "zstd-stream" and _zstd is not None
            else None
        )
        self.writer = asyncio.create_task(self._write_loop(), name="fakediscord-gateway-writer")

    def enqueue(self, frame: str) -> None:
        if not self.closing:
            self.queue.put_nowait(frame)

    def enqueue_json(self, obj: Any) -> None:
        self.enqueue(_dumps(obj))

    def close(self, code: int, message: str = "") -> None:
        """Close after every frame queued so far has been written."""
        if not self.closing:
            self.closing = True
            self.queue.put_nowait((_CLOSE, code, message))

    async def _write_loop(self) -> None:
        while True:
            item = await self.queue.get()
            try:
                if isinstance(item, tuple) and item[0] is _CLOSE:
                    _, code, message = item
                    with contextlib.suppress(Exception):
                        await self.ws.close(code=code, message=message.encode())
                    while not self.queue.empty():  # nothing more will be written
                        self.queue.get_nowait()
                        self.queue.task_done()
                    return
                if self.ws.closed:
                    continue
                try:
                    await self._send(item)
                except (ConnectionResetError, RuntimeError) as exc:
                    log.debug("gateway write failed: %r", exc)
            finally:
                self.queue.task_done()

    async def _send(self, frame: str) -> None:
        if self._zlib is not None:
            raw = frame.encode()
            data = self._zlib.compress(raw) + self._zlib.flush(zlib.Z_SYNC_FLUSH)
            await self.ws.send_bytes(data)
        elif self._zstd is not None:
            raw = frame.encode()
            data = self._zstd.compress(raw) + self._zstd.flush(_zstd.COMPRESSOBJ_FLUSH_BLOCK)
            await self.ws.send_bytes(data)
        else:
            await self.ws.send_str(frame)

    async def drain(self) -> None:
        if not self.writer.done():
            await self.queue.join()
