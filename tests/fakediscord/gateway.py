"""The fake gateway (websocket) - HELLO, IDENTIFY/READY, RESUME/RESUMED, heartbeats, dispatches.

Protocol notes (Discord API v10, as discord.py 2.7 speaks it):

* The client connects to ``ws://host:port/?v=10&encoding=json&compress=zlib-stream`` (or
  ``zstd-stream`` when the ``zstandard`` module is importable on the client side). The fake honours
  ``zlib-stream`` (one shared deflate stream per connection, each message ending with the
  Z_SYNC_FLUSH suffix ``00 00 ff ff``) and ``zstd-stream`` when ``zstandard`` is importable here;
  otherwise it sends plain text frames, which discord.py accepts as well.
* HELLO -> client heartbeats immediately (op 1) -> fake answers HEARTBEAT_ACK (op 11).
* IDENTIFY (op 2): bad token -> close 4004; missing intents -> 4013; privileged intents not
  enabled for the fake application -> 4014; identifying twice -> 4005; then the sharding rules
  of ``shards.py`` (4010, 4011, op 9 over the IDENTIFY rate). Otherwise READY (with
  ``resume_gateway_url`` pointing back at the fake) followed by one GUILD_CREATE per guild of
  the session's shard.
* Every dispatch goes to the live sessions whose shard holds its guild (DMs: shard 0).
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
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

from .gateway_session import (
    HEARTBEAT,
    HEARTBEAT_ACK,
    HELLO,
    IDENTIFY,
    INTENT_GUILD_MEMBERS,
    INTENT_GUILD_PRESENCES,
    INTENT_MESSAGE_CONTENT,
    INVALID_SESSION,
    PRESENCE_UPDATE,
    PRIVILEGED_INTENTS,
    RECONNECT,
    REQUEST_GUILD_MEMBERS,
    RESUME,
    VOICE_STATE_UPDATE,
    GatewayConnection,
    GatewaySession,
    guild_of,
)
from .shards import INVALID_SHARD, SHARDING_REQUIRED, Sharding, guilds_on, parse_shard

if TYPE_CHECKING:
    from .server import FakeDiscord

log = logging.getLogger("fakediscord.gateway")

__all__ = [
    "INTENT_GUILD_MEMBERS",
    "INTENT_GUILD_PRESENCES",
    "INTENT_MESSAGE_CONTENT",
    "Gateway",
    "GatewayConnection",
    "GatewaySession",
]


class Gateway:
    """Owns the sessions and connections; :class:`FakeDiscord` exposes it as ``fake.gateway``."""

    def __init__(
        self,
        fake: FakeDiscord,
        *,
        heartbeat_interval: int,
        sharding: Sharding | None = None,
        replay_buffer: int = 10000,
    ):
        self.fake = fake
        self.sharding = sharding or Sharding()
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
        return [s for s in self.live_sessions if s.connected]

    @property
    def identify_log(self) -> list[Any]:
        """Every IDENTIFY judged (:class:`~tests.fakediscord.shards.IdentifyAttempt`)."""
        return self.sharding.identify_log

    def connected_shards(self) -> list[tuple[int, int]]:
        """The shards with a connected session (once each, sorted)."""
        return sorted({s.shard for s in self.connected_sessions})

    def sessions_for(self, guild_id: int | None) -> list[GatewaySession]:
        """The live sessions that receive the events of ``guild_id`` (None: DMs)."""
        return [s for s in self.live_sessions if s.receives(guild_id)]

    def guild_counts(self) -> dict[str, int]:
        """Guilds per live session (session id -> how many it holds)."""
        return {s.id: len(s.guild_ids) for s in self.live_sessions}

    def dispatch(
        self,
        event: str,
        data: Any,
        *,
        guild_event: bool = True,
        self_event: bool = False,
        transform: Any = None,
        guild_id: int | None = None,
    ) -> list[GatewaySession]:
        """Send a dispatch to every live session on the shard of its guild (``guild_id``, or
        else read from ``data``; none: shard 0) that subscribed (by intents) to it; returns
        them. ``transform(session, data)`` may tailor the payload per session."""
        gid = guild_id if guild_id is not None else guild_of(event, data)
        sent: list[GatewaySession] = []
        for session in self.sessions_for(gid):
            if not session.wants(event, guild_event=guild_event, self_event=self_event):
                continue
            payload = transform(session, data) if transform is not None else data
            session.dispatch(event, payload)
            sent.append(session)
            if gid is not None and event == "GUILD_CREATE":
                session.guild_ids.add(gid)
            elif gid is not None and event == "GUILD_DELETE":
                session.guild_ids.discard(gid)
            elif event == "INTERACTION_CREATE":
                session.interactions.append(int(payload["id"]))
        self.fake._changed()
        return sent

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
        peername = request.transport.get_extra_info("peername") if request.transport else None
        conn.peer = f"{peername[0]}:{peername[1]}" if peername else None
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
        shard = parse_shard(data.get("shard"))
        guild_ids: list[int] = []

        def guilds_on_shard() -> int:
            guild_ids.extend(guilds_on(fake.guilds, shard or (0, 1)))
            return len(guild_ids)

        outcome = self.sharding.judge(shard, guilds_on_shard)
        if outcome == "invalid shard":
            conn.close(INVALID_SHARD, "Invalid shard.")
            return
        if outcome == "rate limited":
            self.invalid_session_count += 1
            conn.enqueue_json({"op": INVALID_SESSION, "d": False, "s": None, "t": None})
            return
        if outcome == "session start limit":
            self._terminate_for_session_starts(conn)
            return
        if outcome == "sharding required":
            conn.close(SHARDING_REQUIRED, "Sharding required.")
            return
        assert shard is not None
        self.identify_count += 1
        session = GatewaySession(
            self,
            intents=intents,
            shard=shard,
            peer=conn.peer,
            properties=data.get("properties"),
        )
        self.sessions[session.id] = session
        session.connection = conn
        conn.session = session
        session.guild_ids.update(guild_ids)
        ready = {
            "v": 10,
            "user": fake.bot_user.to_dict() | {"verified": True, "mfa_enabled": False},
            "user_settings": {},
            "guilds": [{"id": str(g), "unavailable": True} for g in guild_ids],
            "session_id": session.id,
            "session_type": "normal",
            "resume_gateway_url": fake.gateway_url.rstrip("/"),
            "shard": list(shard),
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
        if session.wants("GUILD_CREATE"):
            for gid in guild_ids:
                guild = fake.guilds[gid]
                session.dispatch("GUILD_CREATE", guild.to_gateway_dict(include_all_members=members))

    def _terminate_for_session_starts(self, conn: GatewayConnection) -> None:
        """The session start limit is used up: as Discord's docs say, every session of the bot
        is terminated and its token reset (the connections close with 4004)."""
        log.warning("gateway IDENTIFY over the session start limit: the token is reset")
        self.fake.reset_token()
        for other in list(self.connections):
            if other.session is not None:
                other.session.invalidated = True
            other.close(4004, "Authentication failed.")
        conn.close(4004, "Authentication failed.")

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
