"""FakeDiscord: a fake Discord (REST + gateway) served on 127.0.0.1 for end-to-end tests.

    async with FakeDiscord() as fake:
        guild = fake.add_guild(name="Test")
        channel = guild.add_channel("announcements")
        with pointing_discord_py_at(fake):
            ...  # run a real discord.py client with fake.token

See ``tests/fakediscord/__init__.py`` for the overview of the public API.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import copy
import json
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bot.web.server import stop_runner

from .apispec import SpecCheck, SpecViolation
from .attachments import (
    DEFAULT_UPLOAD_LIMIT,
    Attachment,
    AttachmentStore,
    Upload,
    read_multipart,
    resolve_embed_urls,
)
from .crosspost import CrosspostRoutes
from .errors import ERROR_MESSAGES, ApiError, form_error
from .events import EventRoutes
from .faults import Fault, FaultInjector
from .forums import ForumRoutes, check_thread_send
from .gateway import INTENT_GUILD_MEMBERS, INTENT_MESSAGE_CONTENT, Gateway, GatewaySession
from .holds import MessageHold, MessageHolds, ParkedSend, Stage, StartBarrier
from .interactions import (
    ALLOWED_CALLBACKS,
    APPLICATION_COMMAND,
    APPLICATION_COMMAND_AUTOCOMPLETE,
    CB_AUTOCOMPLETE_RESULT,
    CB_CHANNEL_MESSAGE,
    CB_DEFERRED_CHANNEL_MESSAGE,
    CB_DEFERRED_UPDATE_MESSAGE,
    CB_MODAL,
    CB_UPDATE_MESSAGE,
    MESSAGE_COMMAND,
    MESSAGE_COMPONENT,
    MODAL_SUBMIT,
    CommandNotAvailable,
    InteractionCallback,
    InteractionHandle,
    build_base_payload,
    build_command_options,
    build_modal_components,
    find_component,
    resolve_selects,
)
from .oauth2 import OAuth2
from .permissions import Permissions as P
from .pins import CHANNEL_PINNED_MESSAGE, PinRoutes
from .ratelimit import Decision, RateLimiter
from .shards import DEFAULT_MAX_GUILDS_PER_SHARD, IdentifyAttempt, Sharding
from .state import (
    DM,
    FLAG_EPHEMERAL,
    FLAG_LOADING,
    FLAG_SUPPRESS_EMBEDS,
    FLAG_SUPPRESS_NOTIFICATIONS,
    TEXT_CAPABLE_TYPES,
    THREAD_ONLY_TYPES,
    ApplicationCommand,
    Channel,
    Guild,
    Member,
    Message,
    Pings,
    Role,
    SnowflakeGenerator,
    User,
    _id_of,
    compute_pings,
    poll_object,
)
from .webhooks import WebhookRoutes

log = logging.getLogger("fakediscord")

FLAG_IS_COMPONENTS_V2 = 1 << 15
_SETTABLE_MESSAGE_FLAGS = FLAG_SUPPRESS_EMBEDS | FLAG_SUPPRESS_NOTIFICATIONS | FLAG_IS_COMPONENTS_V2
BUTTON, LINK_STYLE = 2, 5
MAX_BUTTON_LABEL, MAX_BUTTON_URL = 80, 512
MAX_ACTION_ROWS = 5
"""Action rows in one message (Discord's limit for messages without the newer layout)."""


TEAM_ROLES = ("admin", "developer", "read_only")
"""A team member's roles (Discord's Admin, Developer and Read-only; the owner is the team's)."""
INVITED, ACCEPTED = 1, 2
"""A team member's ``membership_state``: invited (not yet accepted), accepted."""


@dataclass
class TeamMember:
    """A member of the team owning the application (``fake.set_team``)."""

    user: User
    role: str = "admin"
    membership_state: int = ACCEPTED


@dataclass
class Team:
    """The developer team owning the application: its owner and members."""

    id: int
    owner: User
    members: list[TeamMember] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "icon": None,
            "name": f"team {self.id}",
            "owner_user_id": str(self.owner.id),
            "members": [
                {
                    "membership_state": m.membership_state,
                    "permissions": ["*"],
                    "team_id": str(self.id),
                    "user": m.user.to_dict(),
                    "role": m.role,
                }
                for m in self.members
            ],
        }


@dataclass
class RequestRecord:
    """One REST request the fake received, and what it answered."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    status: int = 0
    code: int | None = None
    at: float = field(default_factory=time.monotonic)
    fault: Fault | None = None
    ratelimited: bool = False
    authorized: bool = True
    body_read: bool = False
    spec_violations: list[SpecViolation] = field(default_factory=list)


@dataclass
class _Route:
    method: str
    pattern: re.Pattern[str]
    handler: Callable[..., Awaitable[Any]]
    bucket: str = "default"
    major: str | None = None
    auth: bool = True
    global_exempt: bool = False


class _Body:
    """Parsed request body: JSON (or ``payload_json`` of a multipart form) plus the uploaded
    ``files[n]`` by index (they become attachments once the handler knows where they go)."""

    def __init__(self, json_data: Any, uploads: Mapping[int, Upload] | None = None) -> None:
        self.json = json_data
        self.uploads: Mapping[int, Upload] = uploads or {}

    def get(self, key: str, default: Any = None) -> Any:
        if isinstance(self.json, dict):
            return self.json.get(key, default)
        return default


def _json_response(
    status: int, data: Any, headers: Mapping[str, str] | None = None
) -> web.Response:
    # Exactly "application/json": discord.py compares the header with == (no charset allowed).
    h = {"Content-Type": "application/json"}
    if headers:
        h.update(headers)
    return web.Response(status=status, body=json.dumps(data).encode(), headers=h)


def _make_token(user_id: int) -> str:
    head = base64.urlsafe_b64encode(str(user_id).encode()).decode().rstrip("=")
    return f"{head}.{secrets.token_urlsafe(4)[:6]}.{secrets.token_urlsafe(27)[:38]}"


class FakeDiscord:
    """A fake Discord API + gateway on 127.0.0.1. Use as ``async with FakeDiscord() as fake``.

    Constructor knobs:
      token / bot_name / application_id: identity of the bot (generated if omitted)
      heartbeat_interval: ms announced in HELLO (default 41250, like Discord)
      ratelimits: enforce rate limits (headers are always sent)
      message_limit, message_per: per-channel message-create bucket (default 5 per 5 s)
      global_limit, global_per: global limit (default 50 per 1 s)
      nonce_window: seconds during which ``enforce_nonce`` dedups (default 180)
      interaction_ack_timeout: seconds the bot has for the initial callback (default 3)
      interaction_token_ttl: seconds followups/edits are accepted (default 900)
      privileged_intents: intent bits enabled for the app (GUILD_MEMBERS 1<<1, PRESENCES 1<<8,
        MESSAGE_CONTENT 1<<15); IDENTIFY asking for others is closed with 4014. Default: none.
      identify_window, max_concurrency, max_guilds_per_shard, recommended_shards,
        session_start_total, session_start_reset_after, gateway_clock: the sharding rules (see
        ``shards.py``). ``identify_window`` is 0 by default (Discord's is 5 s: pass 5.0, or
        drive it with ``gateway_clock``) so that the suite's many restarts need not wait it out.
      spec_check: check every REST request against Discord's OpenAPI spec (``fake.spec``,
        see ``apispec.py``); under pytest a violation fails the test that sent it.
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        bot_name: str = "Crier",
        application_id: int | None = None,
        heartbeat_interval: int = 41250,
        ratelimits: bool = True,
        message_limit: int = 5,
        message_per: float = 5.0,
        global_limit: int = 50,
        global_per: float = 1.0,
        nonce_window: float = 180.0,
        interaction_ack_timeout: float = 3.0,
        interaction_token_ttl: float = 900.0,
        privileged_intents: int = 0,
        application_flags: int = 0,
        shutdown_timeout: float = 1.0,
        crosspost_limit: int = 10,
        crosspost_per: float = 3600.0,
        upload_limit: int = DEFAULT_UPLOAD_LIMIT,
        spec_check: bool = True,
        identify_window: float = 0.0,
        max_concurrency: int = 1,
        max_guilds_per_shard: int = DEFAULT_MAX_GUILDS_PER_SHARD,
        recommended_shards: int | None = None,
        session_start_total: int = 1000,
        session_start_reset_after: float = 86_400.0,
        gateway_clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.snowflakes = SnowflakeGenerator()
        self.bot_user = User(
            id=application_id or self.snowflakes.next(), username=bot_name, bot=True
        )
        self.application_id = self.bot_user.id
        self.bot_user_id = self.bot_user.id
        self.token = token or _make_token(self.bot_user.id)
        self.application_flags = application_flags
        self.app_owner = User(id=self.snowflakes.next(), username="app-owner")
        self.team: Team | None = None
        """The team owning the application (None: ``app_owner`` owns it; see set_team)."""
        self.privileged_intents = privileged_intents
        self.nonce_window = nonce_window
        self.interaction_ack_timeout = interaction_ack_timeout
        self.interaction_token_ttl = interaction_token_ttl
        self.dm_app_permissions = (
            P.VIEW_CHANNEL | P.SEND_MESSAGES | P.EMBED_LINKS | P.READ_MESSAGE_HISTORY
        )

        self.users: dict[int, User] = {
            self.bot_user.id: self.bot_user,
            self.app_owner.id: self.app_owner,
        }
        self.guilds: dict[int, Guild] = {}
        self._removed: dict[int, Guild] = {}
        """Guilds the bot was removed from (remove_guild), kept for readd_guild."""
        self.channels: dict[int, Channel] = {}
        self.messages: dict[int, Message] = {}
        self.message_log: list[Message] = []
        self._nonce_index: dict[tuple[int, int, str], tuple[Message, float]] = {}
        self.nonce_dedup_hits = 0
        self._dm_channels: dict[int, Channel] = {}

        self.global_commands: dict[tuple[str, int], ApplicationCommand] = {}
        self.guild_commands: dict[int, dict[tuple[str, int], ApplicationCommand]] = {}
        self.command_sync_calls: collections.Counter[Any] = collections.Counter()
        self._command_version = self.snowflakes.next()

        self.interactions: dict[int, InteractionHandle] = {}
        self._interactions_by_token: dict[str, InteractionHandle] = {}
        self._modals_shown: dict[tuple[int, str], dict[str, Any]] = {}

        self.ratelimits = RateLimiter(
            enabled=ratelimits,
            message_limit=message_limit,
            message_per=message_per,
            global_limit=global_limit,
            global_per=global_per,
        )
        self.ratelimits.set_bucket("crosspost", crosspost_limit, crosspost_per)
        self.attachments = AttachmentStore(
            lambda: f"http://{self.host}:{self.port}",
            self.snowflakes.next,
            upload_limit=upload_limit,
        )
        self.forum_routes = ForumRoutes(self)
        self.oauth2 = OAuth2(self)
        self.crossposts = CrosspostRoutes(self)
        self.webhooks = WebhookRoutes(self)
        """Channel webhooks (``fake.webhooks.of(channel)``, ``.delete(webhook)``)."""
        self.pins = PinRoutes(self)
        self.scheduled_events = EventRoutes(self)
        """Guild scheduled events (``fake.scheduled_events.of(guild)``)."""
        self.faults = FaultInjector()
        self.holds = MessageHolds(self._changed)
        self.start_barrier: StartBarrier | None = None
        self.requests: list[RequestRecord] = []
        self.spec = SpecCheck(enabled=spec_check)
        self.unknown_routes: list[tuple[str, str]] = []
        self.count_429 = 0
        self.invalid_request_count = 0

        self.gateway = Gateway(
            self,
            heartbeat_interval=heartbeat_interval,
            sharding=Sharding(
                clock=gateway_clock,
                identify_window=identify_window,
                max_concurrency=max_concurrency,
                max_guilds_per_shard=max_guilds_per_shard,
                recommended_shards=recommended_shards,
                session_start_total=session_start_total,
                session_start_reset_after=session_start_reset_after,
            ),
        )
        self._change_event = asyncio.Event()
        self._routes: list[_Route] = []
        self._install_routes()
        self._runner: web.AppRunner | None = None
        self._shutdown_timeout = shutdown_timeout
        self.host = "127.0.0.1"
        self.port = 0

    # --- lifecycle ---

    async def start(self) -> FakeDiscord:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        self.oauth2.install(app)
        app.router.add_route("*", r"/api/v{version:\d+}/{tail:.*}", self._handle_api)
        app.router.add_get("/", self.gateway.handle)
        for prefix in ("attachments", "ephemeral-attachments"):
            app.router.add_get(
                f"/{prefix}/{{owner_id}}/{{attachment_id}}/{{filename}}", self.attachments.serve
            )
        app.router.add_route("*", "/{tail:.*}", self._handle_stray)
        self._runner = web.AppRunner(
            app, access_log=None, shutdown_timeout=self._shutdown_timeout, handle_signals=False
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        server = site._server
        assert server is not None
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1]
        log.info("fake discord listening on %s", self.api_base)
        return self

    async def stop(self) -> None:
        self.holds.release_all()
        if self.start_barrier is not None:
            self.start_barrier.release()
        if self._runner is None:
            return
        runner, self._runner = self._runner, None
        # Not listening first: a bot that reconnects when its gateway is closed below finds
        # the door shut, not a connection that outlives this fake.
        await stop_runner(runner, before_cleanup=self.gateway.close_all)

    async def __aenter__(self) -> FakeDiscord:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def api_base(self) -> str:
        return f"http://{self.host}:{self.port}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://{self.host}:{self.port}/"

    @property
    def identify_log(self) -> list[IdentifyAttempt]:
        """Every IDENTIFY the gateway judged: ``at`` (``gateway_clock``), ``shard``, ``bucket``,
        ``outcome`` / ``accepted``."""
        return self.gateway.sharding.identify_log

    def reset_token(self) -> str:
        """Discord resets the bot's token (what an IDENTIFY over the session start limit does):
        the old one is refused from now on, on REST and the gateway. Returns the new one."""
        self.token = _make_token(self.bot_user.id)
        return self.token

    def env(self) -> dict[str, str]:
        """Environment variables pointing a bot subprocess at this fake (and spacing its
        IDENTIFYs by this gateway's window: none by default, so restarts need not wait)."""
        return {
            "DISCORD_API_BASE": self.api_base,
            "DISCORD_GATEWAY_URL": self.gateway_url,
            "DISCORD_TOKEN": self.token,
            "IDENTIFY_INTERVAL_SECONDS": f"{self.gateway.sharding.identify_window:g}",
        }

    # --- change waits ---

    def _changed(self) -> None:
        ev = self._change_event
        self._change_event = asyncio.Event()
        ev.set()

    async def wait_until(
        self,
        predicate: Callable[[], Any],
        timeout: float = 5.0,  # noqa: ASYNC109
        what: str = "condition",
    ) -> Any:
        """Wait until ``predicate()`` is truthy (re-checked on every change of the fake's state,
        and at least every 50 ms). Returns the predicate's value; raises TimeoutError."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            value = predicate()
            if value:
                return value
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
            ev = self._change_event
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ev.wait(), min(remaining, 0.05))

    # --- world building ---

    def add_user(
        self, name: str | None = None, *, user_id: int | None = None, bot: bool = False
    ) -> User:
        if user_id is not None and user_id in self.users:
            return self.users[user_id]
        uid = user_id or self.snowflakes.next()
        user = User(id=uid, username=name or f"user{len(self.users)}", bot=bot)
        self.users[uid] = user
        return user

    def add_guild(
        self,
        name: str = "Test Guild",
        owner_id: int | User | None = None,
        *,
        bot_permissions: int = P.DEFAULT_BOT,
        everyone_permissions: int = P.DEFAULT_EVERYONE,
        preferred_locale: str = "en-US",
        channels: Iterable[str] = (),
        shard: tuple[int, int] | None = None,
    ) -> Guild:
        """Create a guild the bot is a member of (with a managed role holding
        ``bot_permissions``). The owner is created if not given. ``shard=(k, n)`` gives it an
        id on shard k of n. If a client is connected (on its shard) it receives GUILD_CREATE."""
        if isinstance(owner_id, User):
            owner = owner_id
        elif owner_id is not None:
            owner = self.add_user(f"owner{owner_id}", user_id=owner_id)
        else:
            owner = self.add_user(f"{name.lower().replace(' ', '-')}-owner")
        guild = Guild(
            self,
            self.snowflakes.next_on_shard(*shard) if shard else self.snowflakes.next(),
            name,
            owner.id,
            everyone_permissions=everyone_permissions,
            preferred_locale=preferred_locale,
        )
        guild.members[owner.id] = Member(guild=guild, user=owner)
        bot_role = Role(
            id=self.snowflakes.next(),
            guild=guild,
            name=self.bot_user.username,
            permissions=bot_permissions,
            position=1,
            managed=True,
            bot_id=self.bot_user.id,
        )
        guild.roles[bot_role.id] = bot_role
        guild.bot_role = bot_role
        guild.bot_member = Member(guild=guild, user=self.bot_user, role_ids=[bot_role.id])
        guild.members[self.bot_user.id] = guild.bot_member
        for channel_name in channels:
            guild.add_channel(channel_name)
        self.guilds[guild.id] = guild
        self._dispatch_guild_create(guild)
        return guild

    def add_guilds(
        self, count: int, *, name: str = "Guild {i}", shards: int | None = None, **kwargs: Any
    ) -> list[Guild]:
        """``count`` guilds (``name`` formatted with ``i``), each as :meth:`add_guild` with
        ``kwargs``; with ``shards=n`` guild i is on shard ``i % n`` of n."""
        return [
            self.add_guild(
                name.format(i=i), shard=(i % shards, shards) if shards else None, **kwargs
            )
            for i in range(count)
        ]

    def remove_guild(self, guild: Guild | int, *, tell: bool = True) -> None:
        """The bot is removed from the guild (GUILD_DELETE without ``unavailable``; with
        ``tell=False`` no event: the bot was not connected when it happened). Its channels
        answer 404 10003 and the guild 404 10004 until :meth:`readd_guild`."""
        g = self.guilds.pop(_id_of(guild))
        self._removed[g.id] = g
        for ch in g.channels.values():
            ch.deleted = True
        if tell:
            self.gateway.dispatch("GUILD_DELETE", {"id": str(g.id)})

    def readd_guild(self, guild: Guild | int) -> Guild:
        """The bot is invited back to a guild it was removed from: the guild, its channels
        and its members as they were, and GUILD_CREATE (without ``unavailable``: discord.py
        fires ``on_guild_join``) to a connected client."""
        g = self._removed.pop(_id_of(guild))
        for ch in g.channels.values():
            ch.deleted = False
        self.guilds[g.id] = g
        self._dispatch_guild_create(g)
        return g

    def delete_channel(self, channel: Channel | int) -> None:
        """Delete a channel: later sends get 404 10003 and the client gets CHANNEL_DELETE."""
        ch = self.channels[_id_of(channel)]
        ch.deleted = True
        if ch.guild is not None:
            ch.guild.channels.pop(ch.id, None)
            ch.guild.threads.pop(ch.id, None)
            if self._guild_live(ch.guild):
                if ch.is_thread:
                    data = {"id": str(ch.id), "type": ch.type, "parent_id": str(ch.parent_id)}
                    data["guild_id"] = str(ch.guild.id)
                    self.gateway.dispatch("THREAD_DELETE", data)
                else:
                    self.gateway.dispatch("CHANNEL_DELETE", ch.to_dict())
        self._changed()

    def open_dm(self, user: User | Member | int) -> Channel:
        u = self.users[_id_of(user)]
        ch = self._dm_channels.get(u.id)
        if ch is None:
            ch = Channel(id=self.snowflakes.next(), type=DM, name=None, recipients=[u])
            self._dm_channels[u.id] = ch
            self.channels[ch.id] = ch
        return ch

    def _guild_live(self, guild: Guild) -> bool:
        return guild.id in self.guilds

    def _dispatch_guild_create(self, guild: Guild) -> None:
        def transform(session: GatewaySession, _data: Any) -> Any:
            data = guild.to_gateway_dict(
                include_all_members=bool(session.intents & INTENT_GUILD_MEMBERS)
            )
            # A guild the bot just joined comes without "unavailable" (discord.py then fires
            # on_guild_join); "unavailable": false means "a guild from READY became available".
            data.pop("unavailable", None)
            return data

        self.gateway.dispatch("GUILD_CREATE", None, transform=transform, guild_id=guild.id)

    # state callbacks (from state.py objects)

    def _channel_created(self, channel: Channel) -> None:
        self.channels[channel.id] = channel
        if channel.guild is not None and self._guild_live(channel.guild):
            self.gateway.dispatch("CHANNEL_CREATE", channel.to_dict())
        self._changed()

    def _channel_updated(self, channel: Channel) -> None:
        if channel.guild is not None and self._guild_live(channel.guild):
            event = "THREAD_UPDATE" if channel.is_thread else "CHANNEL_UPDATE"
            self.gateway.dispatch(event, channel.to_dict())
        self._changed()

    def _thread_created(self, thread: Channel, *, newly_created: bool) -> None:
        self.channels[thread.id] = thread
        if thread.guild is not None and self._guild_live(thread.guild) and not thread.archived:
            data = thread.to_dict()
            if newly_created:
                data["newly_created"] = True
            self.gateway.dispatch("THREAD_CREATE", data)
        self._changed()

    def _role_created(self, role: Role) -> None:
        if self._guild_live(role.guild):
            data = {"guild_id": str(role.guild.id), "role": role.to_dict()}
            self.gateway.dispatch("GUILD_ROLE_CREATE", data)
        self._changed()

    def _role_updated(self, role: Role) -> None:
        if self._guild_live(role.guild):
            data = {"guild_id": str(role.guild.id), "role": role.to_dict()}
            self.gateway.dispatch("GUILD_ROLE_UPDATE", data)
        self._changed()

    def _member_added(self, member: Member) -> None:
        if self._guild_live(member.guild):
            data = member.to_dict() | {"guild_id": str(member.guild.id)}
            self.gateway.dispatch("GUILD_MEMBER_ADD", data)
        self._changed()

    def _member_removed(self, member: Member) -> None:
        if self._guild_live(member.guild):
            data = {"guild_id": str(member.guild.id), "user": member.user.to_dict()}
            self.gateway.dispatch("GUILD_MEMBER_REMOVE", data)
        self._changed()

    def _member_updated(self, member: Member) -> None:
        if self._guild_live(member.guild):
            data = member.to_dict() | {"guild_id": str(member.guild.id)}
            is_self = member.user.id == self.bot_user.id
            self.gateway.dispatch("GUILD_MEMBER_UPDATE", data, self_event=is_self)
        self._changed()

    # --- gateway API ---

    async def disconnect_gateway(self, code: int = 4000, *, invalidate: bool | None = None) -> int:
        """Force-close the gateway connection(s); the client should reconnect and RESUME (or
        IDENTIFY again when ``invalidate``). Returns how many connections were closed."""
        return await self.gateway.disconnect(code, invalidate=invalidate)

    def dispatch(self, event: str, data: Any) -> None:
        """Send an arbitrary gateway dispatch to connected sessions."""
        self.gateway.dispatch(event, data)

    async def wait_for_connection(self, timeout: float = 5.0) -> None:  # noqa: ASYNC109
        """Wait until a client has an identified, connected gateway session."""
        await self.wait_until(lambda: self.gateway.connected_sessions, timeout, "gateway session")

    # --- messages API ---

    def channel_messages(
        self, channel: Channel | int, *, include_deleted: bool = False, include_ephemeral=False
    ) -> list[Message]:
        """Messages in a channel, oldest first."""
        cid = _id_of(channel)
        return [
            m
            for m in self.message_log
            if m.channel_id == cid
            and (include_deleted or not m.deleted)
            and (include_ephemeral or not m.ephemeral)
        ]

    def bot_messages(self, channel: Channel | int | None = None) -> list[Message]:
        """Non-deleted channel messages authored by the bot through the REST message endpoint."""
        return [
            m
            for m in self.message_log
            if m.author.id == self.bot_user.id
            and m.webhook_id is None
            and m.type != CHANNEL_PINNED_MESSAGE
            and not m.deleted
            and (channel is None or m.channel_id == _id_of(channel))
        ]

    def get_message(self, message_id: int) -> Message | None:
        return self.messages.get(message_id)

    def oauth_login_as(self, who: User | Member | int | None, *, approve: bool = True) -> None:
        """The user logged in to Discord in the browser that visits ``/oauth2/authorize``, and
        whether they authorize the application (see ``oauth2.py``)."""
        self.oauth2.login_as(who, approve=approve)

    def make_attachment(
        self, filename: str, data: bytes, *, content_type: str | None = None
    ) -> Attachment:
        """A file a user attaches to a slash command's ATTACHMENT option (pass it, or
        ``(filename, bytes)``, as the option's value). Its ``url`` is served by the fake
        (``/ephemeral-attachments/...``) until ``attachment.stop_serving(status=404)``."""
        return self.attachments.create(
            0,
            filename,
            data,
            content_type=content_type,
            ephemeral=True,
            application_id=self.application_id,
        )

    def forum_posts(self, forum: Channel | int) -> list[Channel]:
        """Threads created in ``forum`` (oldest first); each one's starter message is
        ``fake.get_message(thread.id)``."""
        fid = _id_of(forum)
        return sorted(
            (c for c in self.channels.values() if c.is_thread and c.parent_id == fid),
            key=lambda c: c.id,
        )

    def hold_messages(
        self, channel: Channel | int, *, stage: Stage = "before", skip: int = 0, count: int = 1
    ) -> MessageHold:
        """Park sends to ``channel`` until ``release()``: the first ``skip`` pass, the next
        ``count`` wait before the message is created (``stage="before"``) or after it was
        created, with the response held back (``"after"``). See ``holds.py``."""
        return self.holds.add(_id_of(channel), stage, skip, count)

    def start_together(self, parties: int) -> StartBarrier:
        """Park the first ``parties`` ``GET /gateway/bot`` requests until the test admits
        them (see ``holds.StartBarrier``): a cold start of that many instances at moments
        the test chooses."""
        if parties < 1:
            raise ValueError("parties must be at least 1")
        self.start_barrier = StartBarrier(parties, _changed=self._changed)
        return self.start_barrier

    def remembers_nonce(self, channel: Channel | int, nonce: str | int) -> bool:
        """True while a send with ``nonce`` and ``enforce_nonce`` to ``channel`` would be
        answered with the message it first made (within ``nonce_window`` of that send)."""
        hit = self._nonce_index.get((_id_of(channel), self.bot_user.id, str(nonce)))
        if hit is None:
            return False
        existing, at = hit
        now = asyncio.get_running_loop().time()
        return now - at <= self.nonce_window and not existing.deleted

    async def wait_for_message(
        self,
        predicate: Callable[[Message], bool] | None = None,
        *,
        channel: Channel | int | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109
        after: int = 0,
    ) -> Message:
        """Wait for a message (by anyone, including interaction responses) matching
        ``predicate`` in ``channel``; only messages created after the ``after``-th message
        in ``fake.message_log`` are considered."""

        def find() -> Message | None:
            for m in self.message_log[after:]:
                if channel is not None and m.channel_id != _id_of(channel):
                    continue
                if predicate is None or predicate(m):
                    return m
            return None

        return await self.wait_until(find, timeout, "message")

    def post_message(
        self,
        channel: Channel | int,
        author: Member | User,
        content: str,
        *,
        embeds: list[dict[str, Any]] | None = None,
        files: Sequence[tuple[str, bytes]] = (),
        components: list[dict[str, Any]] | None = None,
        stickers: Sequence[str] = (),
        poll: tuple[str, Sequence[str]] | None = None,
        flags: int = 0,
        type: int = 0,
        forwarded: Message | None = None,
    ) -> Message:
        """A user (or another app: an author with ``bot=True``) posts a message; the client
        gets MESSAGE_CREATE. ``files``: ``(filename, bytes)`` uploaded with it (each becomes
        an attachment served at its ``url``; an embed's ``attachment://name`` points at it);
        ``components``: an app's buttons or menus (a user can't send any); ``stickers``: the
        names of stickers sent with it; ``poll``: a question and its answers; ``flags``:
        e.g. IS_VOICE_MESSAGE (1 << 13); ``type``: a system message's (e.g. 6, a pin);
        ``forwarded``: the message this one forwards (a snapshot of it, no text of its own)."""
        ch = self.channels[_id_of(channel)]
        user = author.user if isinstance(author, Member) else author
        if components and not user.bot:
            raise ValueError("only an app's messages have components")
        perms = (
            ch.guild.permissions_for(user, ch)
            if ch.guild is not None and user.id in ch.guild.members
            else P.ALL
        )
        attachments = [self.attachments.create(ch.id, name, data) for name, data in files]
        fields: dict[str, Any] = {"content": content, "embeds": embeds or []}
        if components:
            fields["components"] = components
        if forwarded is not None:
            fields["message_reference"] = {
                "type": 1,
                "message_id": str(forwarded.id),
                "channel_id": str(forwarded.channel_id),
            }
        msg = self._new_message(
            ch,
            user,
            fields,
            author_permissions=perms,
            flags=flags,
            type=type,
            attachments=attachments,
            dispatch=False,
        )
        msg.sticker_items = [
            {"id": str(self.snowflakes.next()), "name": name, "format_type": 1} for name in stickers
        ]
        if poll is not None:
            question, answers = poll
            msg.poll = poll_object(question, answers, time.time() + 86400)
        if forwarded is not None:
            snapshot = {
                k: v
                for k, v in forwarded.to_dict().items()
                if k in ("type", "content", "embeds", "attachments", "timestamp",
                         "edited_timestamp", "flags", "mentions", "mention_roles",
                         "sticker_items", "components")
            }  # fmt: skip
            msg.message_snapshots = [{"message": snapshot}]
        self._dispatch_message("MESSAGE_CREATE", msg)
        return msg

    def _message_payload(self, msg: Message) -> dict[str, Any]:
        data = msg.to_dict()
        if msg.message_reference and msg.message_reference.get("message_id"):
            ref = self.messages.get(int(msg.message_reference["message_id"]))
            data["referenced_message"] = ref.to_dict() if ref and not ref.deleted else None
        return data

    def _new_message(
        self,
        channel: Channel,
        author: User,
        fields: Mapping[str, Any],
        *,
        author_permissions: int,
        flags: int = 0,
        type: int = 0,
        nonce: Any = None,
        enforce_nonce: bool = False,
        webhook_id: int | None = None,
        interaction_metadata: dict[str, Any] | None = None,
        attachments: list[Attachment] | None = None,
        dispatch: bool = True,
        pings: bool = True,
        message_id: int | None = None,
    ) -> Message:
        content = fields.get("content") or ""
        allowed_mentions = fields.get("allowed_mentions")
        guild = channel.guild
        known_users = guild.members.keys() if guild is not None else self.users.keys()
        if pings and not flags & FLAG_EPHEMERAL:
            computed, user_ids, role_ids = compute_pings(
                content,
                allowed_mentions,
                guild=guild,
                author_permissions=author_permissions,
                known_user_ids=known_users,
            )
        else:
            computed, user_ids, role_ids = Pings(suppressed=["no pings (ephemeral)"]), [], []
        # Typed rich as Discord does; a copy (the request recorded stays as it was sent).
        embeds = [{"type": "rich", **copy.deepcopy(e)} for e in fields.get("embeds") or []]
        resolve_embed_urls(embeds, list(attachments or []))
        msg = Message(
            id=message_id or self.snowflakes.next(),
            channel_id=channel.id,
            guild_id=channel.guild_id,
            author=author,
            content=content,
            embeds=embeds,
            components=list(fields.get("components") or []),
            attachments=list(attachments or []),
            flags=flags,
            tts=bool(fields.get("tts")),
            type=type,
            nonce=nonce,
            enforce_nonce=enforce_nonce,
            allowed_mentions=allowed_mentions,
            pings=computed,
            mention_users=[self.users[u] for u in user_ids if u in self.users],
            mention_role_ids=role_ids,
            message_reference=fields.get("message_reference"),
            webhook_id=webhook_id,
            application_id=self.application_id if webhook_id else None,
            interaction_metadata=interaction_metadata,
        )
        self.messages[msg.id] = msg
        self.message_log.append(msg)
        if not msg.ephemeral:
            channel.last_message_id = msg.id
        if dispatch and not msg.ephemeral:
            self._dispatch_message("MESSAGE_CREATE", msg)
        self._changed()
        return msg

    def _dispatch_message(self, event: str, msg: Message) -> None:
        guild = self.guilds.get(msg.guild_id) if msg.guild_id else None
        member = (
            guild.members.get(msg.author.id)
            if guild is not None and msg.webhook_id is None
            else None
        )
        base = self._message_payload(msg)
        if member is not None:
            base["member"] = member.to_dict(with_user=False)
        bot_id = self.bot_user.id

        def transform(session: GatewaySession, data: dict[str, Any]) -> dict[str, Any]:
            if (
                session.intents & INTENT_MESSAGE_CONTENT
                or msg.author.id == bot_id
                or bot_id in msg.mention_user_ids
                or msg.guild_id is None
            ):
                return data
            redacted = dict(data)
            redacted.update(content="", embeds=[], attachments=[], components=[])
            return redacted

        self.gateway.dispatch(
            event, base, guild_event=msg.guild_id is not None, transform=transform
        )

    # --- commands API ---

    def get_command(
        self, name: str, guild: Guild | int | None = None, *, type: int = 1
    ) -> ApplicationCommand | None:
        """The registered command a user would see in ``guild`` (guild command first)."""
        if guild is not None:
            cmd = self.guild_commands.get(_id_of(guild), {}).get((name, type))
            if cmd is not None:
                return cmd
        return self.global_commands.get((name, type))

    # --- interactions API ---

    def _member_for(
        self, guild: Guild | None, who: Member | User | int
    ) -> tuple[User, Member | None]:
        if isinstance(who, Member):
            return who.user, who
        user = who if isinstance(who, User) else self.users[int(who)]
        if guild is None:
            return user, None
        member = guild.get_member(user)
        if member is None:
            raise ValueError(f"{user.username} is not a member of {guild.name}")
        return user, member

    def _check_command_available(
        self,
        command: ApplicationCommand | None,
        guild: Guild | None,
        channel: Channel,
        member: Member | None,
    ) -> None:
        if guild is None or member is None:
            contexts = command.raw.get("contexts") if command is not None else None
            if command is not None and contexts is not None and not {1, 2} & set(contexts):
                raise CommandNotAvailable(f"/{command.name} is not available in DMs")
            return
        perms = guild.permissions_for(member, channel)
        if not perms & P.VIEW_CHANNEL:
            raise CommandNotAvailable(f"{member.user.username} cannot see #{channel.name}")
        if not perms & P.USE_APPLICATION_COMMANDS:
            raise CommandNotAvailable(
                f"{member.user.username} lacks USE_APPLICATION_COMMANDS in #{channel.name}"
            )
        if command is None:
            return
        contexts = command.raw.get("contexts")
        if contexts is not None and 0 not in contexts:
            raise CommandNotAvailable(f"/{command.name} is not available in guilds")
        required = command.default_member_permissions
        if required is not None:
            need = int(required)
            have = guild.permissions_for(member)
            if not have & P.ADMINISTRATOR and (have & need) != need:
                raise CommandNotAvailable(
                    f"/{command.name} needs {P.names(need) or ['ADMINISTRATOR']}; "
                    f"{member.user.username} has {P.names(have & need)}"
                )

    async def _deliver(self, handle: InteractionHandle, locale: str | None) -> InteractionHandle:
        guild_id = handle.guild.id if handle.guild is not None else None
        if not self.gateway.sessions_for(guild_id):
            raise RuntimeError(
                "no bot session on the fake gateway for this guild's shard: the interaction "
                "could not be delivered"
            )
        handle.payload = build_base_payload(self, handle, locale=locale or handle.user.locale)
        handle.created_at = time.monotonic()
        self.interactions[handle.id] = handle
        self._interactions_by_token[handle.token] = handle
        sessions = self.gateway.dispatch("INTERACTION_CREATE", handle.payload, guild_id=guild_id)
        handle.delivered_to = [s.id for s in sessions]
        await self.gateway.drain()
        return handle

    async def invoke_command(
        self,
        guild: Guild | None,
        channel: Channel,
        member: Member | User | int,
        name: str,
        options: Mapping[str, Any] | None = None,
        *,
        locale: str | None = None,
        check_permissions: bool = True,
        created_at: float | None = None,
    ) -> InteractionHandle:
        """A user runs ``/name`` (``"group sub"`` for subcommands) with ``options``.
        ``created_at`` (epoch seconds) dates the interaction's id earlier than now: one that
        reaches the bot that long after Discord created it.

        Option types come from the registered command (so sync first for fidelity); values may
        be python values or fake objects (Channel, Role, Member/User). Raises ValueError for
        input Discord's client would refuse and CommandNotAvailable when the member could not
        run the command there."""
        return await self._invoke(
            APPLICATION_COMMAND,
            guild,
            channel,
            member,
            name,
            options or {},
            locale=locale,
            check_permissions=check_permissions,
            focused=None,
            created_at=created_at,
        )

    async def invoke_autocomplete(
        self,
        guild: Guild | None,
        channel: Channel,
        member: Member | User | int,
        name: str,
        options: Mapping[str, Any] | None = None,
        *,
        focused: str,
        locale: str | None = None,
    ) -> InteractionHandle:
        """The user is typing option ``focused`` (its partial text is ``options[focused]``)."""
        return await self._invoke(
            APPLICATION_COMMAND_AUTOCOMPLETE,
            guild,
            channel,
            member,
            name,
            options or {},
            locale=locale,
            check_permissions=True,
            focused=focused,
        )

    async def invoke_message_command(
        self,
        guild: Guild | None,
        channel: Channel,
        member: Member | User | int,
        name: str,
        message: Message,
        *,
        locale: str | None = None,
        check_permissions: bool = True,
    ) -> InteractionHandle:
        """A user right-clicks ``message`` (in ``channel``) → Apps → ``name``: a MESSAGE
        command (type 3). As on Discord, the interaction's ``data`` has the command's
        ``target_id`` and the whole message in ``resolved.messages`` (its text, embeds and
        files whatever the app's intents). Raises ``ValueError`` when no such command is
        registered or the message can't be picked (deleted, ephemeral, elsewhere), and
        ``CommandNotAvailable`` as :meth:`invoke_command` does."""
        guild = guild if guild is not None else channel.guild
        user, mem = self._member_for(guild, member)
        command = self.get_command(name, guild, type=MESSAGE_COMMAND)
        if command is None:
            raise ValueError(f"no message command {name!r} is registered")
        if message.deleted or message.ephemeral or message.channel_id != channel.id:
            raise ValueError(f"message {message.id} can't be picked in #{channel.name}")
        if check_permissions:
            self._check_command_available(command, guild, channel, mem)
        data: dict[str, Any] = {
            "id": str(command.id),
            "name": command.name,
            "type": MESSAGE_COMMAND,
            "target_id": str(message.id),
            "resolved": {"messages": {str(message.id): self._message_payload(message)}},
        }
        if command.guild_id is not None:
            data["guild_id"] = str(command.guild_id)
        handle = InteractionHandle(
            self,
            type=APPLICATION_COMMAND,
            guild=guild,
            channel=channel,
            user=user,
            member=mem,
            data=data,
            command=command,
        )
        return await self._deliver(handle, locale)

    async def _invoke(
        self,
        itype: int,
        guild: Guild | None,
        channel: Channel,
        member: Member | User | int,
        name: str,
        options: Mapping[str, Any],
        *,
        locale: str | None,
        check_permissions: bool,
        focused: str | None,
        created_at: float | None = None,
    ) -> InteractionHandle:
        guild = guild if guild is not None else channel.guild
        user, mem = self._member_for(guild, member)
        root, *path = name.split()
        command = self.get_command(root, guild)
        if command is None:
            log.warning("invoking /%s which was never registered with the fake", root)
        if check_permissions:
            self._check_command_available(command, guild, channel, mem)
        opts, resolved = build_command_options(
            self,
            command=command,
            path=path,
            options=options,
            guild=guild,
            channel=channel,
            member=mem,
            focused=focused,
        )
        data: dict[str, Any] = {
            "id": str(command.id if command is not None else self.snowflakes.next()),
            "name": root,
            "type": 1,
            "options": opts,
        }
        if resolved:
            data["resolved"] = resolved
        if command is not None and command.guild_id is not None:
            data["guild_id"] = str(command.guild_id)
        handle = InteractionHandle(
            self,
            type=itype,
            guild=guild,
            channel=channel,
            user=user,
            member=mem,
            data=data,
            command=command,
        )
        if created_at is not None:
            handle.id = self.snowflakes.at(created_at)
        return await self._deliver(handle, locale)

    async def invoke_component(
        self,
        message: Message,
        custom_id: str,
        member: Member | User | int,
        *,
        values: list[str] | None = None,
        locale: str | None = None,
    ) -> InteractionHandle:
        """A user clicks a button / picks select values on ``message``."""
        channel = self.channels[message.channel_id]
        guild = channel.guild
        user, mem = self._member_for(guild, member)
        comp = find_component(message, custom_id)
        if comp.get("disabled"):
            raise ValueError(f"component {custom_id!r} is disabled; Discord would not send a click")
        if message.ephemeral and message.interaction_metadata is not None:
            owner = int(message.interaction_metadata["user"]["id"])
            if owner != user.id:
                raise ValueError(
                    "only the user who got an ephemeral message can use its components"
                )
        ctype = comp["type"]
        data: dict[str, Any] = {"custom_id": custom_id, "component_type": ctype}
        if ctype in (3, 5, 6, 7, 8):
            data["values"] = [str(v) for v in values or []]
        elif values:
            raise ValueError("values only make sense for select menus")
        handle = InteractionHandle(
            self,
            type=MESSAGE_COMPONENT,
            guild=guild,
            channel=channel,
            user=user,
            member=mem,
            data=data,
            message=message,
        )
        return await self._deliver(handle, locale)

    async def click_button(
        self, message: Message, custom_id: str, member: Member | User | int
    ) -> InteractionHandle:
        return await self.invoke_component(message, custom_id, member)

    async def submit_modal(
        self,
        guild: Guild | None,
        channel: Channel,
        member: Member | User | int,
        custom_id: str,
        values: Mapping[str, Any],
        *,
        modal: Mapping[str, Any] | None = None,
        message: Message | None = None,
        locale: str | None = None,
    ) -> InteractionHandle:
        """A user submits a modal. Uses the modal the bot showed this user with ``custom_id``
        (if any) to mirror its layout and check required inputs / lengths."""
        guild = guild if guild is not None else channel.guild
        user, mem = self._member_for(guild, member)
        if modal is None:
            modal = self._modals_shown.get((user.id, custom_id))
        components = build_modal_components(modal, values)
        data: dict[str, Any] = {"custom_id": custom_id, "components": components}
        resolved = resolve_selects(
            self, modal, components, guild=guild, channel=channel, member=mem
        )
        if resolved:
            data["resolved"] = resolved
        handle = InteractionHandle(
            self,
            type=MODAL_SUBMIT,
            guild=guild,
            channel=channel,
            user=user,
            member=mem,
            data=data,
            message=message,
        )
        return await self._deliver(handle, locale)

    # --- REST plumbing ---

    def _install_routes(self) -> None:
        def add(
            method: str,
            path: str,
            handler: Callable[..., Awaitable[Any]],
            *,
            bucket: str = "default",
            major: str | None = None,
            auth: bool = True,
            global_exempt: bool = False,
        ) -> None:
            regex = "^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path) + "$"
            self._routes.append(
                _Route(method, re.compile(regex), handler, bucket, major, auth, global_exempt)
            )

        add("GET", "/users/@me", self._get_me)
        add("GET", "/users/{user_id}", self._get_user)
        add("POST", "/users/@me/channels", self._create_dm)
        add("GET", "/applications/@me", self._get_application)
        add("GET", "/oauth2/applications/@me", self._get_application)
        add("GET", "/gateway", self._get_gateway, auth=False)
        add("GET", "/gateway/bot", self._get_gateway_bot)

        cmds = "/applications/{app_id}/commands"
        gcmds = "/applications/{app_id}/guilds/{guild_id}/commands"
        for base, major in ((cmds, None), (gcmds, "guild_id")):
            add("GET", base, self._list_commands, bucket="commands", major=major)
            add("PUT", base, self._bulk_overwrite_commands, bucket="commands", major=major)
            add("POST", base, self._create_command, bucket="commands", major=major)
            add("GET", base + "/{command_id}", self._get_command, bucket="commands", major=major)
            add("PATCH", base + "/{command_id}", self._edit_command, bucket="commands", major=major)
            add(
                "DELETE",
                base + "/{command_id}",
                self._delete_command,
                bucket="commands",
                major=major,
            )

        add("GET", "/channels/{channel_id}", self._get_channel, major="channel_id")
        add("GET", "/channels/{channel_id}/messages", self._list_messages, major="channel_id")
        add(
            "POST",
            "/channels/{channel_id}/messages",
            self._post_message,
            bucket="messages",
            major="channel_id",
        )
        add(
            "GET",
            "/channels/{channel_id}/messages/{message_id}",
            self._get_message,
            major="channel_id",
        )
        add(
            "PATCH",
            "/channels/{channel_id}/messages/{message_id}",
            self._edit_message,
            major="channel_id",
        )
        add(
            "DELETE",
            "/channels/{channel_id}/messages/{message_id}",
            self._delete_message,
            major="channel_id",
        )
        add("POST", "/channels/{channel_id}/typing", self._typing, major="channel_id")
        self.forum_routes.install(add)
        self.crossposts.install(add)
        self.webhooks.install(add)
        self.pins.install(add)
        self.scheduled_events.install(add)

        add("GET", "/guilds/{guild_id}", self._get_guild, major="guild_id")
        add("GET", "/guilds/{guild_id}/channels", self._get_guild_channels, major="guild_id")
        add("GET", "/guilds/{guild_id}/roles", self._get_guild_roles, major="guild_id")
        add("GET", "/guilds/{guild_id}/members", self._list_members, major="guild_id")
        add("GET", "/guilds/{guild_id}/members/{user_id}", self._get_member, major="guild_id")

        add(
            "POST",
            "/interactions/{interaction_id}/{token}/callback",
            self._interaction_callback,
            bucket="interactions",
            major="interaction_id",
            auth=False,
            global_exempt=True,
        )
        wh = "/webhooks/{app_id}/{token}"
        wh_kw: dict[str, Any] = {
            "bucket": "webhooks",
            "major": "webhook",
            "auth": False,
            "global_exempt": True,
        }
        add("POST", wh, self._followup_create, **wh_kw)
        add("GET", wh + "/messages/{message_id}", self._webhook_message_get, **wh_kw)
        add("PATCH", wh + "/messages/{message_id}", self._webhook_message_edit, **wh_kw)
        add("DELETE", wh + "/messages/{message_id}", self._webhook_message_delete, **wh_kw)

    def _match(self, method: str, path: str) -> tuple[_Route | None, dict[str, str]]:
        for route in self._routes:
            if route.method != method:
                continue
            m = route.pattern.match(path)
            if m:
                return route, m.groupdict()
        return None, {}

    async def _handle_stray(self, request: web.Request) -> web.StreamResponse:
        log.error("FAKE DISCORD: request outside /api/v*: %s %s", request.method, request.path)
        self.unknown_routes.append((request.method, request.path))
        return _json_response(404, {"message": "404: Not Found", "code": 0})

    async def _read_body(self, request: web.Request) -> _Body:
        if request.method in ("GET", "DELETE", "HEAD") or not request.can_read_body:
            return _Body(None)
        ctype = request.headers.get("Content-Type", "")
        if ctype.startswith("multipart/"):
            payload, uploads = await read_multipart(request)
            return _Body(payload, uploads)
        raw = await request.read()
        if not raw:
            return _Body(None)
        try:
            return _Body(json.loads(raw))
        except ValueError as exc:
            raise ApiError(400, 50109, "The request body contains invalid JSON.") from exc

    async def _handle_api(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["tail"]
        method = request.method
        record = RequestRecord(method, path, dict(request.query), None)
        self.requests.append(record)
        try:
            response = await self._process(request, path, record)
        except ApiError as exc:
            response = _json_response(exc.status, exc.body())
            record.code = exc.code
        record.status = response.status
        record.spec_violations = self.spec.check(
            method, path, record.query, record.body, body_read=record.body_read
        )
        if response.status in (401, 403) or (response.status == 429 and not record.fault):
            self.invalid_request_count += 1
        if response.status == 429:
            self.count_429 += 1
        self._changed()
        return response

    async def _process(
        self, request: web.Request, path: str, record: RequestRecord
    ) -> web.StreamResponse:
        method = request.method
        if self.oauth2.claims(request, path):
            return await self.oauth2.handle(request, path)
        route, params = self._match(method, path)
        if route is None:
            log.error(
                "FAKE DISCORD: UNHANDLED ROUTE %s %s - add it to tests/fakediscord/server.py",
                method,
                path,
            )
            self.unknown_routes.append((method, path))
            raise ApiError(404, 0, "404: Not Found")

        if route.auth and request.headers.get("Authorization") != f"Bot {self.token}":
            record.authorized = False
            raise ApiError(401, 0, "401: Unauthorized")

        body = await self._read_body(request)
        record.body = body.json
        record.body_read = True

        decision = self.ratelimits.check(
            bucket=route.bucket,
            major=_major_parameter(route, params),
            method=method,
            path=path,
            global_exempt=route.global_exempt,
        )
        if decision.limited:
            record.ratelimited = True
            return _json_response(429, decision.body(), decision.limited_headers())

        fault = self.faults.take(method, path)
        record.fault = fault
        if fault is not None and not fault.after_effect:
            faulted = await self._apply_fault(request, fault, decision)
            if faulted is not None:
                return faulted

        try:
            result = await route.handler(request, params, body)
            status, payload = result if isinstance(result, tuple) else (200, result)
            if status == 204:
                response: web.StreamResponse = web.Response(status=204, headers=decision.headers)
            else:
                response = _json_response(status, payload, decision.headers)
        except ApiError as exc:
            record.code = exc.code
            response = _json_response(exc.status, exc.body(), decision.headers)

        if fault is not None and fault.after_effect:
            faulted = await self._apply_fault(request, fault, decision)
            if faulted is not None:
                return faulted
        return response

    async def _apply_fault(
        self, request: web.Request, fault: Fault, decision: Decision
    ) -> web.StreamResponse | None:
        """Wait the fault's delay, then drop the connection or answer with the fault's
        status; None when the fault only delays (the real answer goes out)."""
        if fault.delay:
            await asyncio.sleep(fault.delay)
        if fault.disconnect:
            return self._drop_connection(request)
        if fault.status is not None:
            return self._fault_response(fault, decision)
        return None

    def _drop_connection(self, request: web.Request) -> web.StreamResponse:
        transport = request.transport
        if transport is not None:
            transport.abort()
        # aiohttp will not be able to write this; the client sees a dropped connection.
        return web.Response(status=500)

    def _fault_response(self, fault: Fault, decision: Decision) -> web.Response:
        status = fault.status
        assert status is not None
        headers = dict(decision.headers)
        headers.update(fault.headers)
        if status == 429:
            d = Decision(headers=headers, limited=True, retry_after=fault.retry_after)
            body = fault.body if fault.body is not None else d.body()
            return _json_response(429, body, d.limited_headers())
        if fault.body is not None:
            if isinstance(fault.body, (dict, list)):
                return _json_response(status, fault.body, headers)
            return web.Response(status=status, text=str(fault.body), headers=headers)
        if status in (502, 504) and fault.code is None:
            reason = "Bad Gateway" if status == 502 else "Gateway Time-out"
            html = (
                f"<html><head><title>{status} {reason}</title></head><body>{reason}</body></html>"
            )
            headers["Content-Type"] = "text/html"
            return web.Response(status=status, body=html.encode(), headers=headers)
        code = fault.code if fault.code is not None else 0
        default_message = (
            f"{status}: {'Internal Server Error' if status >= 500 else 'Fault'}"
            if code == 0
            else ERROR_MESSAGES.get(code, "Fault")
        )
        return _json_response(
            status, {"message": fault.message or default_message, "code": code}, headers
        )

    # --- lookups ---

    def _channel_or_404(self, channel_id: str | int) -> Channel:
        try:
            ch = self.channels.get(int(channel_id))
        except ValueError:
            ch = None
        if ch is None or ch.deleted:
            raise ApiError(404, 10003)
        return ch

    def _guild_or_404(self, guild_id: str | int) -> Guild:
        try:
            g = self.guilds.get(int(guild_id))
        except ValueError:
            g = None
        if g is None:
            raise ApiError(404, 10004)
        return g

    def _bot_perms(self, channel: Channel) -> int:
        if channel.guild is None:
            return self.dm_app_permissions
        return channel.guild.bot_permissions_in(channel)

    def _require_view(self, channel: Channel) -> int:
        perms = self._bot_perms(channel)
        if not perms & P.VIEW_CHANNEL:
            raise ApiError(403, 50001)
        return perms

    def _message_in_channel(self, channel: Channel, message_id: str) -> Message:
        try:
            msg = self.messages.get(int(message_id))
        except ValueError:
            msg = None
        if msg is None or msg.deleted or msg.channel_id != channel.id or msg.ephemeral:
            raise ApiError(404, 10008)
        return msg

    # --- validation ---

    def _validate_message_fields(
        self, body: _Body, *, creating: bool, allow_empty: bool = False
    ) -> dict[str, Any]:
        data = body.json if isinstance(body.json, dict) else {}
        fields: dict[str, Any] = {}
        if "content" in data:
            content = data["content"]
            if content is not None and not isinstance(content, str):
                raise form_error("content", "BASE_TYPE_STRING", "Must be a string.")
            content = content or ""
            if len(content) > 2000:
                raise form_error(
                    "content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length."
                )
            fields["content"] = content
        if "embeds" in data:
            embeds = data["embeds"] or []
            if len(embeds) > 10:
                raise form_error("embeds", "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length.")
            self._validate_embeds(embeds)
            fields["embeds"] = embeds
        if "components" in data:
            fields["components"] = data["components"] or []
            self._validate_buttons(fields["components"])
        if "allowed_mentions" in data and data["allowed_mentions"] is not None:
            fields["allowed_mentions"] = self._validate_allowed_mentions(data["allowed_mentions"])
        if data.get("message_reference"):
            fields["message_reference"] = data["message_reference"]
        if "tts" in data:
            fields["tts"] = bool(data["tts"])
        if "flags" in data and data["flags"] is not None:
            fields["flags"] = int(data["flags"])
        has_payload = (
            (fields.get("content") or "").strip()
            or fields.get("embeds")
            or fields.get("components")
            or body.uploads
            or data.get("sticker_ids")
            or data.get("poll")
        )
        if creating and not has_payload and not allow_empty:
            raise ApiError(400, 50006)
        return fields

    @staticmethod
    def _validate_buttons(components: list[dict[str, Any]]) -> None:
        """Discord's rules for buttons (type 2) in action rows: a link button (style 5) has a
        ``url`` and no ``custom_id``; the others a ``custom_id`` and no ``url``; a label is at
        most 80 characters, a url at most 512; a message has at most 5 action rows."""
        if len([row for row in components if row.get("type") == 1]) > MAX_ACTION_ROWS:
            raise form_error("components", "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length.")
        for r, row in enumerate(components):
            for c, comp in enumerate(row.get("components") or []):
                if comp.get("type") != BUTTON:
                    continue
                where = f"components.{r}.components.{c}"
                label = comp.get("label") or ""
                if len(label) > MAX_BUTTON_LABEL:
                    raise form_error(
                        f"{where}.label", "BASE_TYPE_MAX_LENGTH", "Must be 80 or fewer in length."
                    )
                url, custom_id = comp.get("url"), comp.get("custom_id")
                if comp.get("style") == LINK_STYLE:
                    if not isinstance(url, str) or not url or len(url) > MAX_BUTTON_URL:
                        raise form_error(
                            f"{where}.url", "BASE_TYPE_REQUIRED", "A link button needs a url."
                        )
                    if custom_id is not None:
                        raise form_error(
                            f"{where}.custom_id", "COMPONENT_LINK_CUSTOM_ID",
                            "A link button cannot have a custom id.",
                        )  # fmt: skip
                elif url is not None or not custom_id:
                    raise form_error(
                        f"{where}.custom_id", "BASE_TYPE_REQUIRED",
                        "A button that is not a link needs a custom id and no url.",
                    )  # fmt: skip

    @staticmethod
    def _validate_embeds(embeds: list[dict[str, Any]]) -> None:
        total = 0
        limits = {"title": 256, "description": 4096}
        for i, embed in enumerate(embeds):
            for key, limit in limits.items():
                value = embed.get(key) or ""
                total += len(value)
                if len(value) > limit:
                    raise form_error(
                        f"embeds.{i}.{key}",
                        "BASE_TYPE_MAX_LENGTH",
                        f"Must be {limit} or fewer in length.",
                    )
            fields = embed.get("fields") or []
            if len(fields) > 25:
                raise form_error(
                    f"embeds.{i}.fields", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."
                )
            for j, f in enumerate(fields):
                for key, limit in (("name", 256), ("value", 1024)):
                    value = f.get(key) or ""
                    total += len(value)
                    if not value:
                        raise form_error(
                            f"embeds.{i}.fields.{j}.{key}",
                            "BASE_TYPE_REQUIRED",
                            "This field is required",
                        )
                    if len(value) > limit:
                        raise form_error(
                            f"embeds.{i}.fields.{j}.{key}",
                            "BASE_TYPE_MAX_LENGTH",
                            f"Must be {limit} or fewer in length.",
                        )
            footer = (embed.get("footer") or {}).get("text") or ""
            author = (embed.get("author") or {}).get("name") or ""
            if len(footer) > 2048:
                raise form_error(
                    f"embeds.{i}.footer.text", "BASE_TYPE_MAX_LENGTH", "Must be 2048 or fewer."
                )
            if len(author) > 256:
                raise form_error(
                    f"embeds.{i}.author.name", "BASE_TYPE_MAX_LENGTH", "Must be 256 or fewer."
                )
            total += len(footer) + len(author)
        if total > 6000:
            raise form_error(
                "embeds", "MAX_EMBED_SIZE_EXCEEDED", "Embed size exceeds maximum size of 6000"
            )

    @staticmethod
    def _validate_allowed_mentions(am: Any) -> dict[str, Any]:
        if not isinstance(am, dict):
            raise form_error(
                "allowed_mentions", "DICT_TYPE_CONVERT", "Only dictionaries may be used"
            )
        parse = am.get("parse") or []
        for p in parse:
            if p not in ("users", "roles", "everyone"):
                raise form_error(
                    "allowed_mentions.parse", "ENUM_TYPE_COERCE", f"Value {p!r} is not valid"
                )
        for kind in ("users", "roles"):
            if kind in parse and am.get(kind):
                raise form_error(
                    "allowed_mentions",
                    "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                    f'parse:["{kind}"] and {kind}: [ids...] are mutually exclusive.',
                )
            if len(am.get(kind) or []) > 100:
                raise form_error(
                    f"allowed_mentions.{kind}",
                    "BASE_TYPE_MAX_LENGTH",
                    "Must be 100 or fewer in length.",
                )
        return am

    @staticmethod
    def _validate_nonce(nonce: Any) -> None:
        if nonce is None:
            return
        if isinstance(nonce, bool) or not isinstance(nonce, (str, int)):
            raise form_error("nonce", "BASE_TYPE_STRING", "Must be a string or an integer.")
        if isinstance(nonce, str) and len(nonce) > 25:
            raise form_error("nonce", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")

    # --- handlers: users/app ---

    async def _get_me(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        return self.bot_user.to_dict() | {
            "verified": True,
            "mfa_enabled": False,
            "locale": "en-US",
            "email": None,
        }

    async def _get_user(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        try:
            user = self.users.get(int(params["user_id"]))
        except ValueError:
            user = None
        if user is None:
            raise ApiError(404, 10013)
        return user.to_dict()

    async def _create_dm(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        rid = body.get("recipient_id")
        try:
            user = self.users.get(int(rid)) if rid is not None else None
        except (TypeError, ValueError):
            user = None
        if user is None:
            raise form_error("recipient_id", "NUMBER_TYPE_COERCE", "Value is not snowflake.")
        return self.open_dm(user).to_dict()

    async def _get_application(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        return {
            "id": str(self.application_id),
            "name": self.bot_user.username,
            "icon": None,
            "description": "",
            "summary": "",
            "type": None,
            "rpc_origins": [],
            "bot_public": True,
            "bot_require_code_grant": False,
            "verify_key": "0" * 64,
            "flags": self.application_flags,
            "owner": self._application_owner(),
            "team": None if self.team is None else self.team.to_dict(),
            "hook": True,
            "bot": self.bot_user.to_dict(),
            "redirect_uris": [],
            "interactions_endpoint_url": None,
            "role_connections_verification_url": None,
            "tags": [],
            "install_params": {"scopes": ["bot", "applications.commands"], "permissions": "0"},
            "integration_types_config": {"0": {}},
            "approximate_guild_count": len(self.guilds),
            "approximate_user_install_count": 0,
        }

    def _application_owner(self) -> dict[str, Any]:
        """The application's ``owner``: its owner, or for a team's application the team's
        pseudo-user (its id, ``team<id>``, the TEAM_PSEUDO_USER flag), as Discord gives it."""
        if self.team is None:
            return self.app_owner.to_dict()
        return {
            "id": str(self.team.id),
            "username": f"team{self.team.id}",
            "discriminator": "0000",
            "global_name": None,
            "avatar": None,
            "flags": 1 << 10,
            "public_flags": 1 << 10,
        }

    def set_team(self, owner: User, members: Iterable[TeamMember] = ()) -> Team:
        """The application belongs to a team from now on (``/oauth2/applications/@me`` and
        ``/applications/@me`` say so): ``owner`` owns it, ``members`` are its members (each
        with a role of TEAM_ROLES and a membership state, INVITED or ACCEPTED); the owner is
        a member too, accepted, as on Discord. Call again to change it."""
        listed = [TeamMember(owner, "admin", ACCEPTED), *members]
        self.team = Team(self.team.id if self.team else self.snowflakes.next(), owner, listed)
        return self.team

    async def _get_gateway(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        return {"url": self.gateway_url.rstrip("/")}

    async def _get_gateway_bot(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        if self.start_barrier is not None:
            await self.start_barrier.wait()
        return self.gateway.sharding.gateway_bot(self.gateway_url.rstrip("/"), len(self.guilds))

    # --- handlers: commands ---

    def _check_app(self, params: dict[str, str]) -> None:
        if params.get("app_id") != str(self.application_id):
            raise ApiError(403, 50001)

    def _command_store(self, params: dict[str, str]) -> dict[tuple[str, int], ApplicationCommand]:
        self._check_app(params)
        if "guild_id" in params:
            guild = self._guild_or_404(params["guild_id"])
            return self.guild_commands.setdefault(guild.id, {})
        return self.global_commands

    _NAME_RE = re.compile(r"^[-_\w]{1,32}$")

    def _validate_command(self, data: Any, index: int | None) -> dict[str, Any]:
        prefix = f"{index}." if index is not None else ""
        if not isinstance(data, dict):
            raise form_error(
                prefix.rstrip(".") or "_", "DICT_TYPE_CONVERT", "Only dictionaries may be used"
            )
        name = data.get("name")
        ctype = int(data.get("type") or 1)
        if ctype in (2, 3):  # a user or message command: any 1-32 characters, no options
            names = [name, *(data.get("name_localizations") or {}).values()]
            if not all(isinstance(n, str) and 1 <= len(n) <= 32 and n.strip() for n in names):
                raise form_error(
                    f"{prefix}name", "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid"
                )
            if data.get("description") or data.get("options"):
                raise form_error(
                    f"{prefix}description",
                    "APPLICATION_COMMAND_INVALID_DESCRIPTION",
                    "User and message commands have no description or options",
                )
            return data
        if (
            not isinstance(name, str)
            or not self._NAME_RE.match(name)
            or (ctype == 1 and name != name.lower())
        ):
            raise form_error(
                f"{prefix}name", "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid"
            )
        if ctype == 1:
            desc = data.get("description")
            if not isinstance(desc, str) or not 1 <= len(desc) <= 100:
                raise form_error(
                    f"{prefix}description",
                    "BASE_TYPE_BAD_LENGTH",
                    "Must be between 1 and 100 in length.",
                )
        self._validate_options(data.get("options") or [], f"{prefix}options")
        return data

    def _validate_options(self, options: list[dict[str, Any]], path: str) -> None:
        if len(options) > 25:
            raise form_error(path, "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
        seen_optional = False
        names = set()
        for i, opt in enumerate(options):
            name = opt.get("name")
            if not isinstance(name, str) or not self._NAME_RE.match(name) or name != name.lower():
                raise form_error(
                    f"{path}.{i}.name",
                    "APPLICATION_COMMAND_INVALID_NAME",
                    "Command name is invalid",
                )
            if name in names:
                raise form_error(
                    f"{path}.{i}.name",
                    "APPLICATION_COMMAND_OPTIONS_NAME_ALREADY_EXISTS",
                    "Option names must be unique",
                )
            names.add(name)
            desc = opt.get("description")
            if not isinstance(desc, str) or not 1 <= len(desc) <= 100:
                raise form_error(
                    f"{path}.{i}.description",
                    "BASE_TYPE_BAD_LENGTH",
                    "Must be between 1 and 100 in length.",
                )
            if opt.get("type") in (1, 2):
                self._validate_options(opt.get("options") or [], f"{path}.{i}.options")
                continue
            if opt.get("required"):
                if seen_optional:
                    raise form_error(
                        f"{path}.{i}.required",
                        "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID",
                        "Required options must be placed before non-required options",
                    )
            else:
                seen_optional = True
            if opt.get("autocomplete") and opt.get("choices"):
                raise form_error(
                    f"{path}.{i}.autocomplete",
                    "AUTOCOMPLETE_CHOICES",
                    "Autocomplete cannot be set with choices",
                )
            if len(opt.get("choices") or []) > 25:
                raise form_error(
                    f"{path}.{i}.choices", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."
                )

    def _make_command(
        self,
        data: dict[str, Any],
        guild_id: int | None,
        existing: ApplicationCommand | None,
    ) -> ApplicationCommand:
        raw = dict(data)
        raw.pop("id", None)
        dmp = raw.get("default_member_permissions")
        self._command_version = self.snowflakes.next()
        return ApplicationCommand(
            id=existing.id if existing is not None else self.snowflakes.next(),
            application_id=self.application_id,
            guild_id=guild_id,
            name=raw["name"],
            type=int(raw.get("type") or 1),
            description=raw.get("description") or "",
            options=list(raw.get("options") or []),
            default_member_permissions=str(dmp) if dmp is not None else None,
            raw=raw,
            version=self._command_version,
        )

    async def _list_commands(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        store = self._command_store(params)
        return [c.to_dict() for c in store.values()]

    async def _bulk_overwrite_commands(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        store = self._command_store(params)
        items = body.json
        if not isinstance(items, list):
            raise form_error("_", "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType")
        if len(items) > 100:
            raise form_error("_", "BASE_TYPE_MAX_LENGTH", "Must be 100 or fewer in length.")
        validated = [self._validate_command(item, i) for i, item in enumerate(items)]
        keys = [(d["name"], int(d.get("type") or 1)) for d in validated]
        if len(set(keys)) != len(keys):
            raise form_error(
                "_",
                "APPLICATION_COMMANDS_DUPLICATE_NAME",
                "Application command names must be unique",
            )
        guild_id = int(params["guild_id"]) if "guild_id" in params else None
        new = {}
        for key, d in zip(keys, validated, strict=True):
            new[key] = self._make_command(d, guild_id, store.get(key))
        store.clear()
        store.update(new)
        self.command_sync_calls["global" if guild_id is None else guild_id] += 1
        log.info("commands synced (%s): %s", guild_id or "global", [k[0] for k in keys])
        return [c.to_dict() for c in store.values()]

    async def _create_command(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        store = self._command_store(params)
        d = self._validate_command(body.json, None)
        key = (d["name"], int(d.get("type") or 1))
        guild_id = int(params["guild_id"]) if "guild_id" in params else None
        existing = store.get(key)
        store[key] = self._make_command(d, guild_id, existing)
        return (200 if existing else 201), store[key].to_dict()

    def _command_by_id(
        self, store: dict[tuple[str, int], ApplicationCommand], command_id: str
    ) -> tuple[tuple[str, int], ApplicationCommand]:
        for key, cmd in store.items():
            if str(cmd.id) == command_id:
                return key, cmd
        raise ApiError(404, 10063)

    async def _get_command(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        _, cmd = self._command_by_id(self._command_store(params), params["command_id"])
        return cmd.to_dict()

    async def _edit_command(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        store = self._command_store(params)
        key, cmd = self._command_by_id(store, params["command_id"])
        merged = dict(cmd.raw) | (body.json or {})
        d = self._validate_command(merged, None)
        del store[key]
        new_key = (d["name"], int(d.get("type") or 1))
        store[new_key] = self._make_command(d, cmd.guild_id, cmd)
        return store[new_key].to_dict()

    async def _delete_command(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        store = self._command_store(params)
        key, _ = self._command_by_id(store, params["command_id"])
        del store[key]
        return 204, None

    # --- handlers: channels ---

    async def _get_channel(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        ch = self._channel_or_404(params["channel_id"])
        self._require_view(ch)
        return ch.to_dict()

    async def _typing(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        ch = self._channel_or_404(params["channel_id"])
        perms = self._require_view(ch)
        if not perms & P.SEND_MESSAGES:
            raise ApiError(403, 50013)
        return 204, None

    async def _list_messages(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        ch = self._channel_or_404(params["channel_id"])
        perms = self._require_view(ch)
        if not perms & P.READ_MESSAGE_HISTORY:
            return []
        q = request.query
        limit = min(max(int(q.get("limit", 50)), 1), 100)
        msgs = [m for m in self.channel_messages(ch)]
        if "before" in q:
            msgs = [m for m in msgs if m.id < int(q["before"])]
        if "after" in q:
            msgs = [m for m in msgs if m.id > int(q["after"])]
            msgs = msgs[:limit]
        msgs = sorted(msgs, key=lambda m: m.id, reverse=True)[:limit]
        return [self._message_payload(m) for m in msgs]

    async def _get_message(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        ch = self._channel_or_404(params["channel_id"])
        perms = self._require_view(ch)
        if not perms & P.READ_MESSAGE_HISTORY:
            raise ApiError(403, 50001)
        return self._message_payload(self._message_in_channel(ch, params["message_id"]))

    async def _post_message(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        try:
            hold = self.holds.take(int(params["channel_id"]))
        except ValueError:
            hold = None
        if hold is None:
            return await self._post_message_now(request, params, body)
        send = ParkedSend(nonce=body.get("nonce"))
        if hold.stage == "before":
            await hold.park(send)
        payload = await self._post_message_now(request, params, body)
        if hold.stage == "after":
            send.message_id = int(payload["id"])
            await hold.park(send)
        return payload

    async def _post_message_now(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        ch = self._channel_or_404(params["channel_id"])
        perms = self._bot_perms(ch)
        _check_can_send(ch, perms)

        fields = self._validate_message_fields(body, creating=True)
        nonce = body.get("nonce")
        self._validate_nonce(nonce)
        enforce = bool(body.get("enforce_nonce"))
        if fields.get("embeds") and ch.guild is not None and not perms & P.EMBED_LINKS:
            raise ApiError(403, 50013)
        if body.uploads and ch.guild is not None and not perms & P.ATTACH_FILES:
            raise ApiError(403, 50013)
        unarchive = check_thread_send(ch, perms)
        if fields.get("tts") and not perms & P.SEND_TTS_MESSAGES:
            fields["tts"] = False

        mtype = self._resolve_reference(ch, perms, fields)

        now = asyncio.get_running_loop().time()
        if nonce is not None and enforce:
            key = (ch.id, self.bot_user.id, str(nonce))
            hit = self._nonce_index.get(key)
            if hit is not None:
                existing, at = hit
                if now - at <= self.nonce_window and not existing.deleted:
                    self.nonce_dedup_hits += 1
                    log.info("nonce %r dedup: returning existing message %s", nonce, existing.id)
                    return self._message_payload(existing)

        flags = fields.get("flags", 0) & _SETTABLE_MESSAGE_FLAGS
        msg = self._new_message(
            ch,
            self.bot_user,
            fields,
            author_permissions=perms,
            flags=flags,
            type=mtype,
            nonce=nonce,
            enforce_nonce=enforce,
            attachments=self._attachments_of(body.json, body.uploads, ch.id),
        )
        if nonce is not None:
            self._nonce_index[(ch.id, self.bot_user.id, str(nonce))] = (msg, now)
        if ch.is_thread:
            ch.message_count += 1
            if unarchive:
                ch.unarchive()
        return self._message_payload(msg)

    def _resolve_reference(self, ch: Channel, perms: int, fields: dict[str, Any]) -> int:
        """Check the new message's reply reference and write it as Discord stores it (or
        drop it, when a missing target is allowed); the message's type (19: a reply)."""
        ref = fields.get("message_reference")
        if not ref:
            return 0
        ref_id = ref.get("message_id")
        target = self.messages.get(int(ref_id)) if ref_id else None
        ok = target is not None and not target.deleted and target.channel_id == ch.id
        if ch.guild is not None and not perms & P.READ_MESSAGE_HISTORY:
            raise ApiError(403, 50013)
        if not ok:
            if ref.get("fail_if_not_exists", True):
                raise form_error(
                    "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message"
                )
            fields.pop("message_reference")
            return 0
        fields["message_reference"] = {
            "type": 0,
            "message_id": str(ref_id),
            "channel_id": str(ch.id),
            "guild_id": str(ch.guild_id) if ch.guild_id else None,
        }
        return 19

    def _attachments_of(
        self, payload: Any, uploads: Mapping[int, Upload], channel_id: int
    ) -> list[Attachment]:
        """The attachments a new message gets from ``payload["attachments"]`` + the uploads."""
        spec = payload.get("attachments") if isinstance(payload, dict) else None
        if spec is None and not uploads:
            return []
        return self.attachments.resolve(spec, uploads, channel_id=channel_id)

    def _edit_attachments(
        self, msg: Message, payload: Any, uploads: Mapping[int, Upload], fields: dict[str, Any]
    ) -> None:
        """Put the message's attachments after an edit into ``fields`` (when they change)."""
        has_spec = isinstance(payload, dict) and "attachments" in payload
        if not has_spec and not uploads:
            return
        spec = payload.get("attachments") if has_spec else None
        fields["attachments"] = self.attachments.resolve(
            [] if has_spec and spec is None else spec,
            uploads,
            channel_id=msg.channel_id,
            existing=msg.attachments,
        )

    def _apply_edit(self, msg: Message, fields: Mapping[str, Any], *, record_history: bool) -> None:
        if record_history:
            msg.history.append(
                {
                    "content": msg.content,
                    "embeds": msg.embeds,
                    "components": msg.components,
                    "attachments": msg.attachments,
                    "flags": msg.flags,
                    "edited_at": msg.edited_at,
                }
            )
            msg.edited_at = time.time()
        if "content" in fields:
            msg.content = fields["content"]
        if "attachments" in fields:
            msg.attachments = fields["attachments"]
        if "embeds" in fields:
            msg.embeds = [{"type": "rich", **copy.deepcopy(e)} for e in fields["embeds"]]
            resolve_embed_urls(msg.embeds, msg.attachments)
        if "components" in fields:
            msg.components = fields["components"]
        if "allowed_mentions" in fields:
            msg.allowed_mentions = fields["allowed_mentions"]
        if "flags" in fields:
            keep = msg.flags & ~FLAG_SUPPRESS_EMBEDS
            msg.flags = keep | (fields["flags"] & FLAG_SUPPRESS_EMBEDS)

    async def _edit_message(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        ch = self._channel_or_404(params["channel_id"])
        perms = self._require_view(ch)
        msg = self._message_in_channel(ch, params["message_id"])
        if msg.author.id != self.bot_user.id or msg.webhook_id is not None:
            if set(body.json or {}) - {"flags"}:
                raise ApiError(403, 50005)
            if not perms & P.MANAGE_MESSAGES:
                raise ApiError(403, 50013)
        fields = self._validate_message_fields(body, creating=False)
        if fields.get("embeds") and ch.guild is not None and not perms & P.EMBED_LINKS:
            raise ApiError(403, 50013)
        if body.uploads and ch.guild is not None and not perms & P.ATTACH_FILES:
            raise ApiError(403, 50013)
        if ch.is_thread and ch.archived:
            raise ApiError(400, 50083)
        self._edit_attachments(msg, body.json, body.uploads, fields)
        self._apply_edit(msg, fields, record_history=True)
        self._dispatch_message("MESSAGE_UPDATE", msg)
        self._changed()
        return self._message_payload(msg)

    async def _delete_message(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        ch = self._channel_or_404(params["channel_id"])
        perms = self._require_view(ch)
        msg = self._message_in_channel(ch, params["message_id"])
        if msg.author.id != self.bot_user.id and not perms & P.MANAGE_MESSAGES:
            raise ApiError(403, 50013)
        self._delete(msg)
        return 204, None

    def _delete(self, msg: Message) -> None:
        msg.deleted = True
        if not msg.ephemeral:
            data = {"id": str(msg.id), "channel_id": str(msg.channel_id)}
            if msg.guild_id:
                data["guild_id"] = str(msg.guild_id)
            self.gateway.dispatch("MESSAGE_DELETE", data, guild_event=msg.guild_id is not None)
        self._changed()

    # --- handlers: guilds ---

    async def _get_guild(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        g = self._guild_or_404(params["guild_id"])
        return g.to_dict(with_counts=request.query.get("with_counts") in ("true", "1", "True"))

    async def _get_guild_channels(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        g = self._guild_or_404(params["guild_id"])
        return [c.to_dict() for c in g.channels.values() if not c.deleted]

    async def _get_guild_roles(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        g = self._guild_or_404(params["guild_id"])
        return [r.to_dict() for r in g.roles.values()]

    async def _list_members(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        g = self._guild_or_404(params["guild_id"])
        if not self.privileged_intents & INTENT_GUILD_MEMBERS:
            raise ApiError(403, 50001)
        limit = min(max(int(request.query.get("limit", 1)), 1), 1000)
        after = int(request.query.get("after", 0))
        members = sorted(
            (m for m in g.members.values() if m.user.id > after), key=lambda m: m.user.id
        )
        return [m.to_dict() for m in members[:limit]]

    async def _get_member(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        g = self._guild_or_404(params["guild_id"])
        try:
            member = g.members.get(int(params["user_id"]))
        except ValueError:
            member = None
        if member is None:
            raise ApiError(404, 10007)
        return member.to_dict()

    # --- handlers: interactions ---

    def _interaction_metadata(self, handle: InteractionHandle) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "id": str(handle.id),
            "type": handle.type,
            "user": handle.user.to_dict(),
            "authorizing_integration_owners": handle.payload.get(
                "authorizing_integration_owners", {}
            ),
        }
        if handle.type == APPLICATION_COMMAND:
            meta["name"] = handle.data.get("name")
            meta["command_type"] = 1
        if handle.message is not None:
            meta["interacted_message_id"] = str(handle.message.id)
        return meta

    def _interaction_message(
        self,
        handle: InteractionHandle,
        fields: Mapping[str, Any],
        *,
        flags: int,
        attachments: list[Attachment],
        type: int,
    ) -> Message:
        return self._new_message(
            handle.channel,
            self.bot_user,
            fields,
            author_permissions=self._bot_perms(handle.channel),
            flags=flags,
            type=type,
            webhook_id=self.application_id,
            interaction_metadata=self._interaction_metadata(handle),
            attachments=attachments,
        )

    def _callback_refusal(self, handle: InteractionHandle, cb_type: Any) -> ApiError | None:
        """Why Discord refuses this callback before reading its data, or None: answered
        already, past the acknowledgement timeout, a type this interaction can't take."""
        if handle.acknowledged:
            return ApiError(400, 40060)
        if time.monotonic() - handle.created_at > self.interaction_ack_timeout:
            return ApiError(404, 10062)
        if cb_type not in ALLOWED_CALLBACKS.get(handle.type, set()):
            return form_error(
                "type",
                "INTERACTION_CALLBACK_TYPE_INVALID",
                "Invalid callback type for this interaction",
            )
        if cb_type in (CB_DEFERRED_UPDATE_MESSAGE, CB_UPDATE_MESSAGE) and handle.message is None:
            return form_error("type", "INTERACTION_CALLBACK_TYPE_INVALID", "No message to update")
        return None

    async def _interaction_callback(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        try:
            handle = self.interactions.get(int(params["interaction_id"]))
        except ValueError:
            handle = None
        if handle is None or handle.token != params["token"]:
            raise ApiError(404, 10062)
        data = body.json if isinstance(body.json, dict) else {}
        cb_type = data.get("type")
        cb_data = data.get("data") or {}
        record = InteractionCallback(
            type=cb_type if isinstance(cb_type, int) else -1, data=cb_data, status=0
        )

        def reject(exc: ApiError) -> ApiError:
            record.status = exc.status
            record.error_code = exc.code
            handle.callbacks.append(record)
            log.warning("interaction %s callback rejected: %s", handle.id, exc)
            return exc

        refusal = self._callback_refusal(handle, cb_type)
        if refusal is not None:
            raise reject(refusal)

        message_resource: Message | None = None
        try:
            if cb_type == CB_CHANNEL_MESSAGE:
                fields = self._validate_message_fields(_Body(cb_data, body.uploads), creating=True)
                flags = int(cb_data.get("flags") or 0) & (_SETTABLE_MESSAGE_FLAGS | FLAG_EPHEMERAL)
                msg_type = 20 if handle.type == APPLICATION_COMMAND else 0
                attachments = self._attachments_of(cb_data, body.uploads, handle.channel.id)
                handle.original = self._interaction_message(
                    handle, fields, flags=flags, attachments=attachments, type=msg_type
                )
                message_resource = handle.original
            elif cb_type == CB_DEFERRED_CHANNEL_MESSAGE:
                flags = (int(cb_data.get("flags") or 0) & FLAG_EPHEMERAL) | FLAG_LOADING
                msg_type = 20 if handle.type == APPLICATION_COMMAND else 0
                handle.original = self._interaction_message(
                    handle, {}, flags=flags, attachments=[], type=msg_type
                )
                message_resource = handle.original
            elif cb_type == CB_DEFERRED_UPDATE_MESSAGE:
                handle.original = handle.message
            elif cb_type == CB_UPDATE_MESSAGE:
                assert handle.message is not None
                fields = self._validate_message_fields(_Body(cb_data, body.uploads), creating=False)
                self._edit_attachments(handle.message, cb_data, body.uploads, fields)
                self._apply_edit(handle.message, fields, record_history=True)
                handle.original = handle.message
                message_resource = handle.message
                if not handle.message.ephemeral:
                    self._dispatch_message("MESSAGE_UPDATE", handle.message)
            elif cb_type == CB_AUTOCOMPLETE_RESULT:
                _check_choices(cb_data)
            elif cb_type == CB_MODAL:
                custom_id = _check_modal(cb_data)
                handle.modal = cb_data
                self._modals_shown[(handle.user.id, custom_id)] = cb_data
        except ApiError as exc:
            raise reject(exc) from None

        record.status = 200
        handle.callbacks.append(record)
        self._changed()

        if request.query.get("with_response") not in ("1", "true", "True"):
            return 204, None
        return self._callback_response(handle, cb_type, message_resource)

    def _callback_response(
        self, handle: InteractionHandle, cb_type: Any, message_resource: Message | None
    ) -> dict[str, Any]:
        """The body of a callback answered ``with_response``: the interaction, and the
        message the callback made or changed."""
        interaction_info: dict[str, Any] = {"id": str(handle.id), "type": handle.type}
        if handle.original is not None and cb_type in (
            CB_CHANNEL_MESSAGE,
            CB_DEFERRED_CHANNEL_MESSAGE,
            CB_UPDATE_MESSAGE,
            CB_DEFERRED_UPDATE_MESSAGE,
        ):
            interaction_info["response_message_id"] = str(handle.original.id)
            interaction_info["response_message_loading"] = handle.original.loading
            interaction_info["response_message_ephemeral"] = handle.original.ephemeral
        resource: dict[str, Any] = {"type": cb_type}
        if message_resource is not None:
            resource["message"] = self._message_payload(message_resource)
        return {"interaction": interaction_info, "resource": resource}

    def _interaction_for_webhook(self, params: dict[str, str]) -> InteractionHandle:
        if params.get("app_id") != str(self.application_id):
            raise ApiError(404, 10015)
        handle = self._interactions_by_token.get(params["token"])
        if handle is None:
            raise ApiError(404, 10015)
        if time.monotonic() - handle.created_at > self.interaction_token_ttl:
            raise ApiError(401, 50027)
        return handle

    def _webhook_target(self, handle: InteractionHandle, message_id: str) -> Message:
        if message_id == "@original":
            msg = handle.original
        else:
            try:
                mid = int(message_id)
            except ValueError as exc:
                raise ApiError(404, 10008) from exc
            candidates = [m for m in handle.followups] + (
                [handle.original] if handle.original is not None else []
            )
            msg = next((m for m in candidates if m.id == mid), None)
        if msg is None or msg.deleted:
            raise ApiError(404, 10008)
        return msg

    async def _followup_create(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        if self.webhooks.owns(params["app_id"]):
            return await self.webhooks.execute(request, params, body)
        handle = self._interaction_for_webhook(params)
        if not handle.acknowledged:
            raise ApiError(404, 10015)
        fields = self._validate_message_fields(body, creating=True)
        flags = fields.get("flags", 0)
        original = handle.original
        cb = handle.callback
        if (
            cb is not None
            and cb.type == CB_DEFERRED_CHANNEL_MESSAGE
            and original is not None
            and original.loading
            and not original.deleted
        ):
            # Discord: the first followup after a deferral edits the "thinking" message and
            # keeps the deferral's ephemeral setting (its files too: /export's answer). Editing
            # it does not ping anyone.
            self._edit_attachments(original, body.json, body.uploads, fields)
            self._apply_edit(original, fields, record_history=False)
            original.flags &= ~FLAG_LOADING
            original.pings = Pings(suppressed=["completing a deferred response does not ping"])
            msg = original
            if not msg.ephemeral:
                self._dispatch_message("MESSAGE_UPDATE", msg)
        else:
            msg = self._interaction_message(
                handle,
                fields,
                flags=flags & (_SETTABLE_MESSAGE_FLAGS | FLAG_EPHEMERAL),
                attachments=self._attachments_of(body.json, body.uploads, handle.channel.id),
                type=0,
            )
        handle.followups.append(msg)
        self._changed()
        if request.query.get("wait") in ("1", "true", "True"):
            return self._message_payload(msg)
        return 204, None

    async def _webhook_message_get(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        if self.webhooks.owns(params["app_id"]):
            return await self.webhooks.get_message(request, params, body)
        handle = self._interaction_for_webhook(params)
        return self._message_payload(self._webhook_target(handle, params["message_id"]))

    async def _webhook_message_edit(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        if self.webhooks.owns(params["app_id"]):
            return await self.webhooks.edit_message(request, params, body)
        handle = self._interaction_for_webhook(params)
        msg = self._webhook_target(handle, params["message_id"])
        fields = self._validate_message_fields(body, creating=False)
        self._edit_attachments(msg, body.json, body.uploads, fields)
        was_loading = msg.loading
        if was_loading and not (
            (fields.get("content") or "").strip()
            or fields.get("embeds")
            or fields.get("components")
        ):
            raise ApiError(400, 50006)
        self._apply_edit(msg, fields, record_history=not was_loading)
        if was_loading:
            msg.flags &= ~FLAG_LOADING
            msg.pings = Pings(suppressed=["completing a deferred response does not ping"])
        if not msg.ephemeral:
            self._dispatch_message("MESSAGE_UPDATE", msg)
        self._changed()
        return self._message_payload(msg)

    async def _webhook_message_delete(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        if self.webhooks.owns(params["app_id"]):
            return await self.webhooks.delete_message(request, params, body)
        handle = self._interaction_for_webhook(params)
        msg = self._webhook_target(handle, params["message_id"])
        self._delete(msg)
        if msg is handle.original:
            handle.deleted_original = True
        return 204, None


def _check_choices(cb_data: dict[str, Any]) -> None:
    """An autocomplete result's choices as Discord bounds them: 25 at most, names of 1 to
    100 characters, string values of 100 at most."""
    choices = cb_data.get("choices")
    if not isinstance(choices, list) or len(choices) > 25:
        raise form_error("data.choices", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
    for i, choice in enumerate(choices):
        cname = choice.get("name")
        if not isinstance(cname, str) or not 1 <= len(cname) <= 100:
            raise form_error(
                f"data.choices.{i}.name",
                "BASE_TYPE_BAD_LENGTH",
                "Must be between 1 and 100 in length.",
            )
        if isinstance(choice.get("value"), str) and len(choice["value"]) > 100:
            raise form_error(
                f"data.choices.{i}.value",
                "BASE_TYPE_MAX_LENGTH",
                "Must be 100 or fewer in length.",
            )


def _check_modal(cb_data: dict[str, Any]) -> str:
    """A modal as Discord bounds it (a custom id of 1 to 100 characters, a title of 1 to 45,
    1 to 5 rows); its custom id."""
    custom_id = cb_data.get("custom_id")
    title = cb_data.get("title")
    comps = cb_data.get("components") or []
    if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= 100:
        raise form_error(
            "data.custom_id",
            "BASE_TYPE_BAD_LENGTH",
            "Must be between 1 and 100 in length.",
        )
    if not isinstance(title, str) or not 1 <= len(title) <= 45:
        raise form_error(
            "data.title", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 45 in length."
        )
    if not 1 <= len(comps) <= 5:
        raise form_error(
            "data.components",
            "BASE_TYPE_BAD_LENGTH",
            "Must be between 1 and 5 in length.",
        )
    return custom_id


def _major_parameter(route: _Route, params: dict[str, str]) -> str:
    """The value of the route's major parameter, which rate limits are counted by (a
    webhook's is its application and token)."""
    if route.major == "webhook":
        return f"{params.get('app_id')}+{params.get('token')}"
    if route.major:
        return params.get(route.major, "")
    return ""


def _check_can_send(ch: Channel, perms: int) -> None:
    """Discord's refusals of a new message before its body is read: a guild channel the
    bot can't see, a forum or media channel, a channel without text, no send permission; a
    DM to a user who takes none."""
    if ch.guild is not None:
        if not perms & P.VIEW_CHANNEL:
            raise ApiError(403, 50001)
        if ch.type in THREAD_ONLY_TYPES:
            raise ApiError(400, 40058)
        if ch.type not in TEXT_CAPABLE_TYPES:
            raise ApiError(400, 50008)
        if not perms & (P.SEND_MESSAGES_IN_THREADS if ch.is_thread else P.SEND_MESSAGES):
            raise ApiError(403, 50013)
    elif ch.recipients and not ch.recipients[0].accepts_dms:
        raise ApiError(403, 50007)
