"""A fake Discord (REST + gateway) on 127.0.0.1 for end-to-end tests through real discord.py.

Quick tour::

    from tests.fakediscord import FakeDiscord, Permissions as P, overwrite, run_client

    async with FakeDiscord() as fake:
        guild = fake.add_guild(name="Test", bot_permissions=P.DEFAULT_BOT)
        mods = guild.add_role("mods", P.MANAGE_GUILD)
        alice = guild.add_member(name="alice", roles=[mods])
        news = [overwrite(guild.everyone_role, deny=P.SEND_MESSAGES)]
        chan = guild.add_channel("news", overwrites=news)

        client = discord.Client(intents=discord.Intents.default(), guild_ready_timeout=0.05)
        async with run_client(fake, client):          # or: with pointing_discord_py_at(fake): ...
            h = await fake.invoke_command(guild, chan, alice, "schedule", {"message": "hi"})
            cb = await h.response()                      # the callback (type, flags, content...)
            text = await h.final_content()               # what the user finally sees
            msg = await fake.wait_for_message(channel=chan)
            assert not msg.pings.everyone

Main modules: ``server`` (FakeDiscord, REST), ``gateway`` (with ``gateway_session`` and
``shards``: sharding), ``apispec`` (every request checked against Discord's OpenAPI spec),
``interactions`` (InteractionHandle),
``state`` (guild/channel/thread/role/member/message model), ``attachments`` (multipart uploads,
the fake's CDN), ``forums`` (threads, forum posts), ``crosspost`` (publishing), ``errors``,
``permissions``, ``ratelimit``, ``faults``, ``client`` (pointing discord.py at the fake); the
network guard is ``tests.support.netguard`` (the scheduler's tests use it without Discord).
"""

import warnings

# discord.py imports the stdlib ``audioop`` module (for voice), which is deprecated since Python
# 3.11; under the suite's ``filterwarnings = error`` a plain ``import discord`` would then fail at
# collection. Import it once here with just that warning silenced (the main conftest imports this
# package for the API spec check, so this happens before any test module imports discord).
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*audioop.*", category=DeprecationWarning)
    import discord  # noqa: F401

from tests.support.netguard import (
    NetworkAccessBlocked,
    NetworkGuard,
    install_network_guard,
    network_guard,
)

from .apispec import SpecCheck, SpecException, SpecViolation
from .attachments import Attachment
from .client import pointing_discord_py_at, run_client
from .errors import ApiError
from .faults import Fault, FaultInjector
from .gateway import (
    INTENT_GUILD_MEMBERS,
    INTENT_GUILD_PRESENCES,
    INTENT_MESSAGE_CONTENT,
    Gateway,
    GatewaySession,
)
from .holds import MessageHold, ParkedSend
from .interactions import CommandNotAvailable, InteractionCallback, InteractionHandle
from .permissions import Permissions, base_permissions, channel_permissions
from .ratelimit import RateLimiter, Storm
from .server import ACCEPTED, INVITED, FakeDiscord, RequestRecord, Team, TeamMember
from .shards import IdentifyAttempt, Sharding
from .state import (
    ANNOUNCEMENT_THREAD,
    CHANNEL_FLAG_REQUIRE_TAG,
    FLAG_CROSSPOSTED,
    FLAG_SUPPRESS_EMBEDS,
    FLAG_SUPPRESS_NOTIFICATIONS,
    GUILD_ANNOUNCEMENT,
    GUILD_CATEGORY,
    GUILD_FORUM,
    GUILD_MEDIA,
    GUILD_TEXT,
    GUILD_VOICE,
    PRIVATE_THREAD,
    PUBLIC_THREAD,
    ApplicationCommand,
    Channel,
    ForumTag,
    Guild,
    Member,
    Message,
    Overwrite,
    Pings,
    Role,
    User,
    overwrite,
)

__all__ = [
    "ACCEPTED",
    "ANNOUNCEMENT_THREAD",
    "CHANNEL_FLAG_REQUIRE_TAG",
    "FLAG_CROSSPOSTED",
    "FLAG_SUPPRESS_EMBEDS",
    "FLAG_SUPPRESS_NOTIFICATIONS",
    "GUILD_ANNOUNCEMENT",
    "GUILD_CATEGORY",
    "GUILD_FORUM",
    "GUILD_MEDIA",
    "GUILD_TEXT",
    "GUILD_VOICE",
    "INTENT_GUILD_MEMBERS",
    "INTENT_GUILD_PRESENCES",
    "INTENT_MESSAGE_CONTENT",
    "INVITED",
    "PRIVATE_THREAD",
    "PUBLIC_THREAD",
    "ApiError",
    "ApplicationCommand",
    "Attachment",
    "Channel",
    "CommandNotAvailable",
    "FakeDiscord",
    "Fault",
    "FaultInjector",
    "ForumTag",
    "Gateway",
    "GatewaySession",
    "Guild",
    "IdentifyAttempt",
    "InteractionCallback",
    "InteractionHandle",
    "Member",
    "Message",
    "MessageHold",
    "NetworkAccessBlocked",
    "NetworkGuard",
    "Overwrite",
    "ParkedSend",
    "Permissions",
    "Pings",
    "RateLimiter",
    "RequestRecord",
    "Role",
    "Sharding",
    "SpecCheck",
    "SpecException",
    "SpecViolation",
    "Storm",
    "Team",
    "TeamMember",
    "User",
    "base_permissions",
    "channel_permissions",
    "install_network_guard",
    "network_guard",
    "overwrite",
    "pointing_discord_py_at",
    "run_client",
]
