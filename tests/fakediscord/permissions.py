"""Discord's permission bits and its permission-resolution algorithm.

The algorithm follows Discord's documented order:

1. The guild owner has every permission.
2. Base permissions = @everyone role permissions OR'd with every role the member has.
3. ADMINISTRATOR in the base permissions grants every permission (overwrites are ignored).
4. Channel overwrites are applied in this order:
   the @everyone overwrite (deny, then allow),
   all role overwrites of the member's roles aggregated (deny all, then allow all),
   the member-specific overwrite (deny, then allow).
5. Implicit rules: without VIEW_CHANNEL nothing else in the channel is usable; without
   SEND_MESSAGES (in a thread: SEND_MESSAGES_IN_THREADS) a member cannot mention @everyone,
   embed links, attach files or send TTS. A thread uses its parent channel's overwrites.
6. A timed-out member (communication_disabled_until in the future) keeps only VIEW_CHANNEL and
   READ_MESSAGE_HISTORY, unless they are the owner or an administrator.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .state import Channel, Guild, Member


class Permissions:
    """Permission bit values (Discord API v10)."""

    CREATE_INSTANT_INVITE = 1 << 0
    KICK_MEMBERS = 1 << 1
    BAN_MEMBERS = 1 << 2
    ADMINISTRATOR = 1 << 3
    MANAGE_CHANNELS = 1 << 4
    MANAGE_GUILD = 1 << 5
    ADD_REACTIONS = 1 << 6
    VIEW_AUDIT_LOG = 1 << 7
    PRIORITY_SPEAKER = 1 << 8
    STREAM = 1 << 9
    VIEW_CHANNEL = 1 << 10
    SEND_MESSAGES = 1 << 11
    SEND_TTS_MESSAGES = 1 << 12
    MANAGE_MESSAGES = 1 << 13
    EMBED_LINKS = 1 << 14
    ATTACH_FILES = 1 << 15
    READ_MESSAGE_HISTORY = 1 << 16
    MENTION_EVERYONE = 1 << 17
    USE_EXTERNAL_EMOJIS = 1 << 18
    VIEW_GUILD_INSIGHTS = 1 << 19
    CONNECT = 1 << 20
    SPEAK = 1 << 21
    MUTE_MEMBERS = 1 << 22
    DEAFEN_MEMBERS = 1 << 23
    MOVE_MEMBERS = 1 << 24
    USE_VAD = 1 << 25
    CHANGE_NICKNAME = 1 << 26
    MANAGE_NICKNAMES = 1 << 27
    MANAGE_ROLES = 1 << 28
    MANAGE_WEBHOOKS = 1 << 29
    MANAGE_GUILD_EXPRESSIONS = 1 << 30
    USE_APPLICATION_COMMANDS = 1 << 31
    REQUEST_TO_SPEAK = 1 << 32
    MANAGE_EVENTS = 1 << 33
    MANAGE_THREADS = 1 << 34
    CREATE_PUBLIC_THREADS = 1 << 35
    CREATE_PRIVATE_THREADS = 1 << 36
    USE_EXTERNAL_STICKERS = 1 << 37
    SEND_MESSAGES_IN_THREADS = 1 << 38
    USE_EMBEDDED_ACTIVITIES = 1 << 39
    MODERATE_MEMBERS = 1 << 40
    VIEW_CREATOR_MONETIZATION_ANALYTICS = 1 << 41
    USE_SOUNDBOARD = 1 << 42
    CREATE_GUILD_EXPRESSIONS = 1 << 43
    CREATE_EVENTS = 1 << 44
    USE_EXTERNAL_SOUNDS = 1 << 45
    SEND_VOICE_MESSAGES = 1 << 46
    SET_VOICE_CHANNEL_STATUS = 1 << 48
    SEND_POLLS = 1 << 49
    USE_EXTERNAL_APPS = 1 << 50
    PIN_MESSAGES = 1 << 51
    """Pin and unpin messages (split from MANAGE_MESSAGES in 2025; needed alone since
    2026-02-23)."""
    PIN_MESSAGES = 1 << 51
    BYPASS_SLOWMODE = 1 << 52

    ALL = 0  # filled in below

    # What a new guild's @everyone role typically has.
    DEFAULT_EVERYONE = (
        CREATE_INSTANT_INVITE
        | ADD_REACTIONS
        | STREAM
        | VIEW_CHANNEL
        | SEND_MESSAGES
        | EMBED_LINKS
        | ATTACH_FILES
        | READ_MESSAGE_HISTORY
        | USE_EXTERNAL_EMOJIS
        | CONNECT
        | SPEAK
        | USE_VAD
        | CHANGE_NICKNAME
        | USE_APPLICATION_COMMANDS
        | REQUEST_TO_SPEAK
        | CREATE_PUBLIC_THREADS
        | CREATE_PRIVATE_THREADS
        | USE_EXTERNAL_STICKERS
        | SEND_MESSAGES_IN_THREADS
        | USE_EMBEDDED_ACTIVITIES
        | SEND_VOICE_MESSAGES
        | SEND_POLLS
        | USE_EXTERNAL_APPS
    )

    # A sensible default for the bot's own managed role: enough to post announcements,
    # but notably NOT MENTION_EVERYONE.
    DEFAULT_BOT = VIEW_CHANNEL | SEND_MESSAGES | EMBED_LINKS | READ_MESSAGE_HISTORY

    @classmethod
    def names(cls, value: int) -> list[str]:
        """Names of the bits set in ``value`` (for readable assertion messages)."""
        out = []
        for name, bit in _BITS.items():
            if value & bit:
                out.append(name)
        return out


_BITS: dict[str, int] = {
    name: value
    for name, value in vars(Permissions).items()
    if name.isupper() and not name.startswith(("ALL", "DEFAULT")) and isinstance(value, int)
}
Permissions.ALL = 0
for _bit in _BITS.values():
    Permissions.ALL |= _bit

P = Permissions

_SEND_DEPENDENT = P.SEND_TTS_MESSAGES | P.MENTION_EVERYONE | P.EMBED_LINKS | P.ATTACH_FILES
_TIMEOUT_KEEP = P.VIEW_CHANNEL | P.READ_MESSAGE_HISTORY


def _is_timed_out(member: Member) -> bool:
    until = member.communication_disabled_until
    return until is not None and until > time.time()


def base_permissions(guild: Guild, member: Member) -> int:
    """Guild-level permissions of ``member`` (no channel overwrites)."""
    if member.user.id == guild.owner_id:
        return P.ALL
    perms = guild.everyone_role.permissions
    for role_id in member.role_ids:
        role = guild.roles.get(role_id)
        if role is not None:
            perms |= role.permissions
    if perms & P.ADMINISTRATOR:
        return P.ALL
    if _is_timed_out(member):
        perms &= _TIMEOUT_KEEP
    return perms


def channel_permissions(guild: Guild, channel: Channel, member: Member) -> int:
    """Effective permissions of ``member`` in ``channel``."""
    base = base_permissions(guild, member)
    if base & P.ADMINISTRATOR or member.user.id == guild.owner_id:
        return P.ALL

    perms = base
    # A thread has no overwrites of its own: it takes its parent channel's.
    parent = (
        guild.channels.get(channel.parent_id) if channel.is_thread and channel.parent_id else None
    )
    overwrites = parent.overwrites if parent is not None else channel.overwrites
    everyone = overwrites.get((0, guild.id))
    if everyone is not None:
        perms &= ~everyone.deny
        perms |= everyone.allow

    allow = deny = 0
    for role_id in member.role_ids:
        ow = overwrites.get((0, role_id))
        if ow is not None:
            allow |= ow.allow
            deny |= ow.deny
    perms &= ~deny
    perms |= allow

    ow = overwrites.get((1, member.user.id))
    if ow is not None:
        perms &= ~ow.deny
        perms |= ow.allow

    if not perms & P.VIEW_CHANNEL:
        return 0
    # In a thread, SEND_MESSAGES_IN_THREADS is what embeds, files, TTS and @everyone depend on.
    sends = P.SEND_MESSAGES_IN_THREADS if channel.is_thread else P.SEND_MESSAGES
    if not perms & sends:
        perms &= ~_SEND_DEPENDENT
    if _is_timed_out(member):
        perms &= _TIMEOUT_KEEP
    return perms
