"""The fake gateway (websocket) - HELLO, IDENTIFY/READY, RESUME/RESUMED, heartbeats, dispatches.

Protocol notes (Discord API v10, as discord.py 2.7 speaks it):

* The client connects to ``ws://host:port/?v=10&encoding=json&compress=zlib-stream`` (or
  ``zstd-stream`` when the ``zstandard`` module is importable on the client side). The fake honours
  ``zlib-stream`` (one shared deflate stream per connection, each message ending with the
  Z_SYNC_FLUSH suffix ``00 00 ff ff``) and ``zstd-stream`` when ``zstandard`` is importable here;
  otherwise it sends plain text frames, which discord.py accepts as well.
* HELLO -> client heartbeats immediately (op 1) -> fake answers HEARTBEAT_ACK (op 11).
* IDENTIFY (op 2): bad token -> close 4004; missing intents -> 4013; privileged intents not
  enabled for the fake application -> 4014; identifying twice -> 4005. Otherwise READY (with
  ``resume_gateway_url`` pointing back at the fake) followed by one GUILD_CREATE per guild.
* RESUME (op 6): the fake replays every dispatch after the client's ``seq`` and then sends
  RESUMED. An unknown / invalidated session gets INVALID_SESSION (op 9, ``d: false``).
* A client closing with 1000/1001 invalidates its session (as on Discord).
* Dispatches that happen while the client is disconnected are buffered for RESUME.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import zlib
from collections import deque
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

if TYPE_CHECKING:
    from .server import FakeDiscord

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


class GatewaySession:
    """A gateway session (what RESUME refers to). Survives disconnects until invalidated."""

    def __init__(self, gateway: Gateway, *, intents: int, shard: list[int] | None) -> None:
        self.gateway = gateway
        self.id = secrets.token_hex(16)
        self.intents = intents
        self.shard = shard
        self.seq = 0
        self.buffer: deque[tuple[int, str]] = deque(maxlen=gateway.replay_buffer)
        self.connection: GatewayConnection | None = None
        self.invalidated = False
        self.resumes = 0

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


class Gateway:
    """Owns the sessions and connections; :class:`FakeDiscord` exposes it as ``fake.gateway``."""

    def __init__(self, fake: FakeDiscord, *, heartbeat_interval: int, replay_buffer: int = 10000):
        self.fake = fake
        self.heartbeat_interval = heartbeat_interval
        self.replay_buffer = replay_buffer
        self.sessions: dict[str, GatewaySession] = {}
        self.connections: set[GatewayConnection] = set()
        self.identify_count = 0
        self.resume_count = 0
        self.invalid_session_count = 0
        self.connect_count = 0
        self.heartbeat_count = 0
        self.close_codes_from_client: list[int | None] = []
        self.dispatched: list[tuple[str, int, str]] = []
        self.compressions: list[str | None] = []
        self.refuse_connections = False
        """While true, every new gateway connection is refused (HTTP 503 instead of the
        websocket upgrade): the gateway is down, REST still works."""
        self.refused_count = 0

    # --- public helpers ---------------------------------------------------------------------------

    @property
    def live_sessions(self) -> list[GatewaySession]:
        return [s for s in self.sessions.values() if not s.invalidated]

    @property
    def connected_sessions(self) -> list[GatewaySession]:
        return [
            s for s in self.live_sessions if s.connection is not None and not s.connection.closing
        ]

    def dispatch(
        self,
        event: str,
        data: Any,
        *,
        guild_event: bool = True,
        self_event: bool = False,
        transform: Any = None,
    ) -> None:
        """Send a dispatch to every live session that subscribed (by intents) to it.
        ``transform(session, data)`` may tailor the payload per session."""
        for session in self.live_sessions:
            if not session.wants(event, guild_event=guild_event, self_event=self_event):
                continue
            payload = transform(session, data) if transform is not None else data
            session.dispatch(event, payload)
        self.fake._changed()

    async def drain(self) -> None:
        """Wait until every queued frame has been written to the sockets."""
        for conn in list(self.connections):
            await conn.drain()

    async def disconnect(self, code: int = 4000, *, invalidate: bool | None = None) -> int:
        """Close every gateway connection with ``code``. The session stays resumable unless
        ``invalidate`` (default: True for 4007 invalid seq / 4009 session timed out)."""
        if invalidate is None:
            invalidate = code in (4007, 4009)
        conns = [c for c in self.connections if not c.closing]
        for conn in conns:
            if invalidate and conn.session is not None:
                conn.session.invalidated = True
            conn.close(code, "fake disconnect")
        for conn in conns:
            await conn.drain()
        self.fake._changed()
        return len(conns)

    def send_reconnect(self) -> None:
        """Send op 7 RECONNECT to every connection (the client should reconnect and resume)."""
        for conn in self.connections:
            conn.enqueue_json({"op": RECONNECT, "d": None})

    def invalidate_sessions(self, resumable: bool = False) -> None:
        """Send op 9 INVALID_SESSION. With ``resumable=False`` the sessions are dropped, so the
        client has to IDENTIFY again."""
        for conn in self.connections:
            if conn.session is not None and not resumable:
                conn.session.invalidated = True
            conn.enqueue_json({"op": INVALID_SESSION, "d": resumable})
            self.invalid_session_count += 1

    async def close_all(self) -> None:
        for conn in list(self.connections):
            conn.close(1001, "fake shutting down")
        for conn in list(self.connections):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.drain(), 2.0)
            conn.writer.cancel()
            with contextlib.suppress(BaseException):
                await conn.writer

    # --- websocket handler ------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self.refuse_connections:
            self.refused_count += 1
            self.fake._changed()
            return web.Response(status=503, text="fake gateway: refusing connections")
        ws = web.WebSocketResponse(max_msg_size=0, autoping=True)
        if not ws.can_prepare(request).ok:
            return web.Response(status=400, text="fake gateway: websocket upgrade required")
        await ws.prepare(request)
        compress = request.query.get("compress")
        encoding = request.query.get("encoding", "json")
        self.connect_count += 1
        self.compressions.append(compress)
        conn = GatewayConnection(self, ws, compress)
        self.connections.add(conn)
        self.fake._changed()
        log.info("gateway connection (compress=%s, query=%s)", compress, dict(request.query))
        try:
            if encoding != "json":
                conn.close(4002, "fake gateway only speaks json")
            else:
                conn.enqueue_json(
                    {
                        "op": HELLO,
                        "d": {
                            "heartbeat_interval": self.heartbeat_interval,
                            "_trace": ['["fake-gateway",{"micros":0}]'],
                        },
                        "s": None,
                        "t": None,
                    }
                )
            async for msg in ws:
                if msg.type is WSMsgType.TEXT:
                    await self._on_frame(conn, msg.data)
                elif msg.type is WSMsgType.BINARY:
                    conn.close(4002, "Error while decoding payload.")
                elif msg.type is WSMsgType.ERROR:
                    break
        finally:
            code = ws.close_code
            if not conn.closing:
                self.close_codes_from_client.append(code)
                if code in (1000, 1001) and conn.session is not None:
                    conn.session.invalidated = True
            conn.close(1000)
            if conn.session is not None and conn.session.connection is conn:
                conn.session.connection = None
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(conn.writer), 2.0)
            self.connections.discard(conn)
            self.fake._changed()
        return ws

    async def _on_frame(self, conn: GatewayConnection, raw: str) -> None:
        try:
            msg = json.loads(raw)
            op = msg["op"]
        except (ValueError, KeyError, TypeError):
            conn.close(4002, "Error while decoding payload.")
            return
        data = msg.get("d")
        if op == HEARTBEAT:
            conn.heartbeats += 1
            self.heartbeat_count += 1
            conn.enqueue_json({"op": HEARTBEAT_ACK, "d": None, "s": None, "t": None})
        elif op == IDENTIFY:
            self._identify(conn, data or {})
        elif op == RESUME:
            self._resume(conn, data or {})
        elif op in (PRESENCE_UPDATE, VOICE_STATE_UPDATE):
            if conn.session is None:
                conn.close(4003, "Not authenticated.")
        elif op == REQUEST_GUILD_MEMBERS:
            if conn.session is None:
                conn.close(4003, "Not authenticated.")
            else:
                self._request_members(conn.session, data or {})
        else:
            conn.close(4001, "Unknown opcode.")
        self.fake._changed()

    def _identify(self, conn: GatewayConnection, data: dict[str, Any]) -> None:
        fake = self.fake
        if conn.session is not None:
            conn.close(4005, "Already authenticated.")
            return
        if data.get("token") != fake.token:
            log.warning("gateway IDENTIFY with a wrong token")
            conn.close(4004, "Authentication failed.")
            return
        intents = data.get("intents")
        if not isinstance(intents, int):
            conn.close(4013, "Invalid intent(s).")
            return
        disallowed = intents & PRIVILEGED_INTENTS & ~fake.privileged_intents
        if disallowed:
            log.warning(
                "gateway IDENTIFY asked for privileged intents not enabled: %#x", disallowed
            )
            conn.close(4014, "Disallowed intent(s).")
            return
        self.identify_count += 1
        session = GatewaySession(self, intents=intents, shard=data.get("shard"))
        self.sessions[session.id] = session
        session.connection = conn
        conn.session = session
        ready = {
            "v": 10,
            "user": fake.bot_user.to_dict() | {"verified": True, "mfa_enabled": False},
            "user_settings": {},
            "guilds": [{"id": str(g.id), "unavailable": True} for g in fake.guilds.values()],
            "session_id": session.id,
            "session_type": "normal",
            "resume_gateway_url": fake.gateway_url.rstrip("/"),
            "shard": data.get("shard") or [0, 1],
            "application": {"id": str(fake.application_id), "flags": fake.application_flags},
            "private_channels": [],
            "presences": [],
            "relationships": [],
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": [],
            "auth_session_id_hash": secrets.token_hex(8),
            "_trace": ['["fake-gateway",{"micros":0}]'],
        }
        session.dispatch("READY", ready)
        members = bool(intents & INTENT_GUILD_MEMBERS)
        for guild in fake.guilds.values():
            if session.wants("GUILD_CREATE"):
                session.dispatch("GUILD_CREATE", guild.to_gateway_dict(include_all_members=members))

    def _resume(self, conn: GatewayConnection, data: dict[str, Any]) -> None:
        if data.get("token") != self.fake.token:
            conn.close(4004, "Authentication failed.")
            return
        session = self.sessions.get(str(data.get("session_id")))
        seq = data.get("seq")
        can_resume = (
            session is not None
            and not session.invalidated
            and isinstance(seq, int)
            and seq <= session.seq
            and (not session.buffer or session.buffer[0][0] <= seq + 1 or seq == session.seq)
        )
        if not can_resume or session is None or not isinstance(seq, int):
            self.invalid_session_count += 1
            conn.enqueue_json({"op": INVALID_SESSION, "d": False, "s": None, "t": None})
            return
        old = session.connection
        if old is not None and old is not conn and not old.closing:
            old.close(4000, "session resumed elsewhere")
        session.connection = conn
        conn.session = session
        session.resumes += 1
        self.resume_count += 1
        for s, frame in session.buffer:
            if s > seq:
                conn.enqueue(frame)
        session.dispatch("RESUMED", {"_trace": ['["fake-gateway",{"micros":0}]']})

    def _request_members(self, session: GatewaySession, data: dict[str, Any]) -> None:
        guild = self.fake.guilds.get(int(data.get("guild_id", 0)))
        if guild is None:
            return
        wants_all = data.get("query") == "" or data.get("user_ids") is None
        if not session.intents & INTENT_GUILD_MEMBERS and wants_all:
            # Discord closes with 4013 when requesting all members without the intent.
            if session.connection is not None:
                session.connection.close(4013, "Invalid intent(s).")
            return
        members = list(guild.members.values())
        query = data.get("query")
        if data.get("user_ids"):
            wanted = {int(u) for u in data["user_ids"]}
            members = [m for m in members if m.user.id in wanted]
        elif query:
            members = [m for m in members if m.user.username.lower().startswith(query.lower())]
        limit = data.get("limit") or 0
        if limit:
            members = members[:limit]
        payload: dict[str, Any] = {
            "guild_id": str(guild.id),
            "members": [m.to_dict() for m in members],
            "chunk_index": 0,
            "chunk_count": 1,
        }
        if data.get("nonce"):
            payload["nonce"] = data["nonce"]
        session.dispatch("GUILD_MEMBERS_CHUNK", payload)
