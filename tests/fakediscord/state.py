"""In-memory model of the fake Discord: users, guilds, roles, channels, members, messages, commands.

Objects here are plain Python objects the tests build and inspect. Every object knows how to render
itself as the JSON Discord would send (``to_dict``). Mutating helpers (``Channel.set_overwrite``,
``Member.add_role``...) notify the owning :class:`~tests.fakediscord.server.FakeDiscord` so the
matching gateway event (CHANNEL_UPDATE, GUILD_MEMBER_UPDATE...) reaches the connected client.
"""

from __future__ import annotations

import datetime
import itertools
import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .attachments import Attachment
from .permissions import Permissions, base_permissions, channel_permissions

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from .server import FakeDiscord

DISCORD_EPOCH_MS = 1420070400000

# Channel types
GUILD_TEXT = 0
DM = 1
GUILD_VOICE = 2
GUILD_CATEGORY = 4
GUILD_ANNOUNCEMENT = 5
ANNOUNCEMENT_THREAD = 10
PUBLIC_THREAD = 11
PRIVATE_THREAD = 12
GUILD_STAGE_VOICE = 13
GUILD_FORUM = 15
GUILD_MEDIA = 16

THREAD_TYPES = frozenset({ANNOUNCEMENT_THREAD, PUBLIC_THREAD, PRIVATE_THREAD})
THREAD_ONLY_TYPES = frozenset({GUILD_FORUM, GUILD_MEDIA})
TEXT_CAPABLE_TYPES = frozenset(
    {GUILD_TEXT, DM, GUILD_VOICE, GUILD_ANNOUNCEMENT, GUILD_STAGE_VOICE} | THREAD_TYPES
)

# Channel flags
CHANNEL_FLAG_PINNED = 1 << 1
CHANNEL_FLAG_REQUIRE_TAG = 1 << 4

# Message flags
FLAG_CROSSPOSTED = 1 << 0
FLAG_IS_CROSSPOST = 1 << 1
FLAG_SUPPRESS_EMBEDS = 1 << 2
FLAG_EPHEMERAL = 1 << 6
FLAG_LOADING = 1 << 7
FLAG_SUPPRESS_NOTIFICATIONS = 1 << 12


_PLACED_PROCESS = 0x1F  # the process field of the ids next_on_shard makes


class SnowflakeGenerator:
    """Generates Discord-style snowflakes (time-ordered 64-bit ids)."""

    def __init__(self, worker: int = 1, process: int = 1) -> None:
        self._lock = threading.Lock()
        self._last_ms = 0
        self._increment = 0
        self._worker = worker & 0x1F
        self._process = process & 0x1F
        self._placed: dict[int, int] = {}  # ms -> next increment, for next_on_shard

    def at(self, ts: float) -> int:
        """A snowflake whose time is ``ts`` (epoch seconds): an id made then, e.g. an
        interaction that reaches the bot long after Discord created it."""
        with self._lock:
            self._increment = (self._increment + 1) & 0xFFF
            return (
                ((int(ts * 1000) - DISCORD_EPOCH_MS) << 22)
                | (self._worker << 17)
                | (self._process << 12)
                | self._increment
            )

    def next(self) -> int:
        with self._lock:
            ms = max(int(time.time() * 1000), self._last_ms)
            if ms == self._last_ms:
                self._increment += 1
                if self._increment > 0xFFF:
                    ms += 1
                    self._increment = 0
            else:
                self._increment = 0
            self._last_ms = ms
            return (
                ((ms - DISCORD_EPOCH_MS) << 22)
                | (self._worker << 17)
                | (self._process << 12)
                | self._increment
            )

    def next_on_shard(self, shard_id: int, num_shards: int) -> int:
        """A snowflake whose guild is on shard ``shard_id`` of ``num_shards`` (``(id >> 22) %
        num_shards``): its time is now moved ahead by less than ``num_shards`` ms. These ids
        carry their own process field (so they never equal one of :meth:`next`) and count up
        within their millisecond, so many guilds on one shard share one."""
        with self._lock:
            ms = int(time.time() * 1000)
            ms += (shard_id - (ms - DISCORD_EPOCH_MS)) % num_shards
            while self._placed.get(ms, 0) > 0xFFF:
                ms += num_shards
            increment = self._placed.get(ms, 0)
            self._placed[ms] = increment + 1
            return (
                ((ms - DISCORD_EPOCH_MS) << 22)
                | (self._worker << 17)
                | (_PLACED_PROCESS << 12)
                | increment
            )


def snowflake_time(snowflake: int) -> float:
    """Unix time (seconds) encoded in a snowflake."""
    return ((snowflake >> 22) + DISCORD_EPOCH_MS) / 1000.0


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.datetime.fromtimestamp(ts, tz=datetime.UTC).isoformat()


def poll_object(question: str, answers: Sequence[str], expiry: float) -> dict[str, Any]:
    """A poll as a message carries it (Discord's poll object, no votes yet)."""
    return {
        "question": {"text": question},
        "answers": [
            {"answer_id": i, "poll_media": {"text": text}} for i, text in enumerate(answers, 1)
        ],
        "expiry": iso(expiry),
        "allow_multiselect": False,
        "layout_type": 1,
        "results": {"is_finalized": False, "answer_counts": []},
    }


def _id_of(obj: Any) -> int:
    """Accept a model object, an int, or a numeric string; return the snowflake."""
    if isinstance(obj, int):
        return obj
    if isinstance(obj, str):
        return int(obj)
    if isinstance(obj, Member):
        return obj.user.id
    ident = getattr(obj, "id", None)
    if ident is None:
        raise TypeError(f"cannot take an id from {obj!r}")
    return int(ident)


@dataclass(eq=False)
class User:
    id: int
    username: str
    bot: bool = False
    global_name: str | None = None
    accepts_dms: bool = True
    locale: str = "en-US"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(self.id),
            "username": self.username,
            "discriminator": "0",
            "global_name": self.global_name,
            "avatar": None,
            "public_flags": 0,
            "flags": 0,
            "banner": None,
            "accent_color": None,
            "avatar_decoration_data": None,
        }
        if self.bot:
            data["bot"] = True
        return data

    @property
    def mention(self) -> str:
        return f"<@{self.id}>"


@dataclass(eq=False)
class Role:
    id: int
    guild: Guild
    name: str
    permissions: int = 0
    mentionable: bool = False
    position: int = 0
    hoist: bool = False
    color: int = 0
    managed: bool = False
    bot_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(self.id),
            "name": self.name,
            "color": self.color,
            "colors": {
                "primary_color": self.color,
                "secondary_color": None,
                "tertiary_color": None,
            },
            "hoist": self.hoist,
            "icon": None,
            "unicode_emoji": None,
            "position": self.position,
            "permissions": str(self.permissions),
            "managed": self.managed,
            "mentionable": self.mentionable,
            "flags": 0,
        }
        if self.bot_id is not None:
            data["tags"] = {"bot_id": str(self.bot_id)}
        return data

    @property
    def mention(self) -> str:
        if self.id == self.guild.id:
            return "@everyone"
        return f"<@&{self.id}>"

    def edit(
        self,
        *,
        permissions: int | None = None,
        mentionable: bool | None = None,
        name: str | None = None,
    ) -> Role:
        """Change the role and send GUILD_ROLE_UPDATE to the client."""
        if permissions is not None:
            self.permissions = permissions
        if mentionable is not None:
            self.mentionable = mentionable
        if name is not None:
            self.name = name
        self.guild._fake._role_updated(self)
        return self


@dataclass(eq=False)
class Overwrite:
    """A channel permission overwrite. ``type`` is 0 for a role, 1 for a member."""

    id: int
    type: int
    allow: int = 0
    deny: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "type": self.type,
            "allow": str(self.allow),
            "deny": str(self.deny),
        }


def overwrite(target: Role | Member | User | int, *, allow: int = 0, deny: int = 0) -> Overwrite:
    """Build an overwrite for a role or a member (an int is taken as a role id)."""
    if isinstance(target, (Member, User)):
        return Overwrite(id=_id_of(target), type=1, allow=allow, deny=deny)
    return Overwrite(id=_id_of(target), type=0, allow=allow, deny=deny)


@dataclass(eq=False)
class ForumTag:
    """A tag a forum offers (``available_tags``); ``moderated`` ones need MANAGE_THREADS."""

    id: int
    name: str
    moderated: bool = False
    emoji_name: str | None = None
    emoji_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "name": self.name,
            "moderated": self.moderated,
            "emoji_id": str(self.emoji_id) if self.emoji_id else None,
            "emoji_name": self.emoji_name,
        }


@dataclass(eq=False)
class Channel:
    """A guild channel, a DM, or a thread (``type`` 10/11/12: ``parent_id`` is the channel it
    lives in, ``archived``/``locked``/``applied_tags`` its thread metadata). A forum (15) has
    ``available_tags`` and ``flags`` (``CHANNEL_FLAG_REQUIRE_TAG``)."""

    id: int
    type: int
    name: str | None
    guild: Guild | None = None
    position: int = 0
    parent_id: int | None = None
    topic: str | None = None
    nsfw: bool = False
    rate_limit_per_user: int = 0
    overwrites: dict[tuple[int, int], Overwrite] = field(default_factory=dict)
    recipients: list[User] = field(default_factory=list)
    last_message_id: int | None = None
    deleted: bool = False
    flags: int = 0
    available_tags: list[ForumTag] = field(default_factory=list)
    # thread metadata
    owner_id: int | None = None
    applied_tags: list[int] = field(default_factory=list)
    archived: bool = False
    locked: bool = False
    auto_archive_duration: int = 1440
    archive_timestamp: float = field(default_factory=time.time)
    created_at: float = field(default_factory=time.time)
    message_count: int = 0

    @property
    def is_thread(self) -> bool:
        return self.type in THREAD_TYPES

    @property
    def require_tag(self) -> bool:
        return bool(self.flags & CHANNEL_FLAG_REQUIRE_TAG)

    def tag_named(self, name: str) -> ForumTag:
        for tag in self.available_tags:
            if tag.name == name:
                return tag
        raise KeyError(name)

    @property
    def guild_id(self) -> int | None:
        return self.guild.id if self.guild is not None else None

    @property
    def mention(self) -> str:
        return f"<#{self.id}>"

    def to_dict(self) -> dict[str, Any]:
        if self.type == DM:
            return {
                "id": str(self.id),
                "type": DM,
                "last_message_id": str(self.last_message_id) if self.last_message_id else None,
                "recipients": [u.to_dict() for u in self.recipients],
                "flags": 0,
            }
        data: dict[str, Any] = {
            "id": str(self.id),
            "type": self.type,
            "guild_id": str(self.guild_id),
            "name": self.name,
            "position": self.position,
            "permission_overwrites": [ow.to_dict() for ow in self.overwrites.values()],
            "parent_id": str(self.parent_id) if self.parent_id else None,
            "nsfw": self.nsfw,
            "flags": 0,
        }
        data["flags"] = self.flags
        if self.type != GUILD_CATEGORY:
            data["topic"] = self.topic
            data["rate_limit_per_user"] = self.rate_limit_per_user
            data["last_message_id"] = str(self.last_message_id) if self.last_message_id else None
        if self.type == GUILD_VOICE:
            data["bitrate"] = 64000
            data["user_limit"] = 0
            data["rtc_region"] = None
        if self.type in THREAD_ONLY_TYPES:
            data["available_tags"] = [t.to_dict() for t in self.available_tags]
            data["default_reaction_emoji"] = None
            data["default_thread_rate_limit_per_user"] = 0
            data["default_sort_order"] = None
            data["default_forum_layout"] = 0
            data["default_auto_archive_duration"] = 1440
        if self.is_thread:
            for key in ("position", "permission_overwrites", "topic", "nsfw"):
                data.pop(key, None)
            data["owner_id"] = str(self.owner_id) if self.owner_id else None
            data["message_count"] = self.message_count
            data["total_message_sent"] = self.message_count
            data["member_count"] = 1
            data["applied_tags"] = [str(t) for t in self.applied_tags]
            data["thread_metadata"] = {
                "archived": self.archived,
                "auto_archive_duration": self.auto_archive_duration,
                "archive_timestamp": iso(self.archive_timestamp),
                "locked": self.locked,
                "create_timestamp": iso(self.created_at),
            }
            if self.type == PRIVATE_THREAD:
                data["thread_metadata"]["invitable"] = True
        return data

    # --- thread state (THREAD_UPDATE is sent) ---

    def archive(self, *, locked: bool | None = None) -> Channel:
        """Archive the thread (and lock it when ``locked``)."""
        self.archived = True
        if locked is not None:
            self.locked = locked
        self.archive_timestamp = time.time()
        self._notify()
        return self

    def unarchive(self) -> Channel:
        self.archived = False
        self.archive_timestamp = time.time()
        self._notify()
        return self

    def lock(self, locked: bool = True) -> Channel:
        self.locked = locked
        self._notify()
        return self

    def set_tags(self, tags: Iterable[ForumTag]) -> Channel:
        """Replace a forum's ``available_tags`` (CHANNEL_UPDATE)."""
        self.available_tags = list(tags)
        self._notify()
        return self

    def set_require_tag(self, required: bool = True) -> Channel:
        if required:
            self.flags |= CHANNEL_FLAG_REQUIRE_TAG
        else:
            self.flags &= ~CHANNEL_FLAG_REQUIRE_TAG
        self._notify()
        return self

    # --- mutation helpers (notify the client over the gateway) ---

    def set_overwrite(
        self, target: Role | Member | User | int, *, allow: int = 0, deny: int = 0
    ) -> Channel:
        ow = overwrite(target, allow=allow, deny=deny)
        self.overwrites[(ow.type, ow.id)] = ow
        self._notify()
        return self

    def remove_overwrite(self, target: Role | Member | User | int) -> Channel:
        key_id = _id_of(target)
        kind = 1 if isinstance(target, (Member, User)) else 0
        self.overwrites.pop((kind, key_id), None)
        self._notify()
        return self

    def set_overwrites(self, overwrites: Iterable[Overwrite]) -> Channel:
        self.overwrites = {(ow.type, ow.id): ow for ow in overwrites}
        self._notify()
        return self

    def _notify(self) -> None:
        if self.guild is not None:
            self.guild._fake._channel_updated(self)

    def delete(self) -> None:
        if self.guild is not None:
            self.guild._fake.delete_channel(self)


@dataclass(eq=False)
class Member:
    guild: Guild
    user: User
    role_ids: list[int] = field(default_factory=list)
    nick: str | None = None
    joined_at: float = field(default_factory=time.time)
    communication_disabled_until: float | None = None

    @property
    def id(self) -> int:
        return self.user.id

    @property
    def mention(self) -> str:
        return f"<@{self.user.id}>"

    @property
    def roles(self) -> list[Role]:
        return [self.guild.roles[r] for r in self.role_ids if r in self.guild.roles]

    def to_dict(self, *, with_user: bool = True, permissions: int | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "roles": [str(r) for r in self.role_ids],
            "nick": self.nick,
            "avatar": None,
            "banner": None,
            "joined_at": iso(self.joined_at),
            "premium_since": None,
            "deaf": False,
            "mute": False,
            "flags": 0,
            "pending": False,
            "communication_disabled_until": iso(self.communication_disabled_until),
        }
        if with_user:
            data["user"] = self.user.to_dict()
        if permissions is not None:
            data["permissions"] = str(permissions)
        return data

    def add_role(self, role: Role | int) -> Member:
        rid = _id_of(role)
        if rid not in self.role_ids:
            self.role_ids.append(rid)
        self.guild._fake._member_updated(self)
        return self

    def remove_role(self, role: Role | int) -> Member:
        rid = _id_of(role)
        if rid in self.role_ids:
            self.role_ids.remove(rid)
        self.guild._fake._member_updated(self)
        return self

    def set_roles(self, roles: Iterable[Role | int]) -> Member:
        self.role_ids = [_id_of(r) for r in roles]
        self.guild._fake._member_updated(self)
        return self

    def permissions_in(self, channel: Channel) -> int:
        return channel_permissions(self.guild, channel, self)

    @property
    def guild_permissions(self) -> int:
        return base_permissions(self.guild, self)


class Guild:
    """A guild. Build it with :meth:`FakeDiscord.add_guild`, then ``add_role`` / ``add_channel`` /
    ``add_member``. ``guild.bot_member`` is the bot, ``guild.bot_role`` its managed role."""

    def __init__(
        self,
        fake: FakeDiscord,
        guild_id: int,
        name: str,
        owner_id: int,
        *,
        everyone_permissions: int,
        preferred_locale: str = "en-US",
    ) -> None:
        self._fake = fake
        self.id = guild_id
        self.name = name
        self.owner_id = owner_id
        self.preferred_locale = preferred_locale
        self.roles: dict[int, Role] = {}
        self.channels: dict[int, Channel] = {}
        self.threads: dict[int, Channel] = {}
        self.members: dict[int, Member] = {}
        self.system_channel_id: int | None = None
        self.everyone_role = Role(
            id=guild_id, guild=self, name="@everyone", permissions=everyone_permissions
        )
        self.roles[guild_id] = self.everyone_role
        self.bot_role: Role
        self.bot_member: Member
        self.joined_at = time.time()
        self.available = True

    def __repr__(self) -> str:
        return f"<fake Guild id={self.id} name={self.name!r}>"

    # --- building ---

    def add_role(
        self,
        name: str,
        permissions: int = 0,
        mentionable: bool = False,
        *,
        hoist: bool = False,
        color: int = 0,
        position: int | None = None,
    ) -> Role:
        role = Role(
            id=self._fake.snowflakes.next(),
            guild=self,
            name=name,
            permissions=permissions,
            mentionable=mentionable,
            hoist=hoist,
            color=color,
            position=position if position is not None else len(self.roles),
        )
        self.roles[role.id] = role
        self._fake._role_created(role)
        return role

    def add_channel(
        self,
        name: str,
        *,
        type: int = GUILD_TEXT,
        overwrites: Iterable[Overwrite] = (),
        parent: Channel | int | None = None,
        topic: str | None = None,
        position: int | None = None,
    ) -> Channel:
        channel = Channel(
            id=self._fake.snowflakes.next(),
            type=type,
            name=name,
            guild=self,
            position=position if position is not None else len(self.channels),
            parent_id=_id_of(parent) if parent is not None else None,
            topic=topic,
            overwrites={(ow.type, ow.id): ow for ow in overwrites},
        )
        self.channels[channel.id] = channel
        if self.system_channel_id is None and type == GUILD_TEXT:
            self.system_channel_id = channel.id
        self._fake._channel_created(channel)
        return channel

    def add_announcement_channel(self, name: str, **kwargs: Any) -> Channel:
        """A GUILD_ANNOUNCEMENT (5) channel: its messages can be crossposted."""
        return self.add_channel(name, type=GUILD_ANNOUNCEMENT, **kwargs)

    def add_forum(
        self,
        name: str,
        *,
        tags: Iterable[str | ForumTag] = (),
        require_tag: bool = False,
        type: int = GUILD_FORUM,
        overwrites: Iterable[Overwrite] = (),
        parent: Channel | int | None = None,
        topic: str | None = None,
    ) -> Channel:
        """A forum (15, or media 16) channel offering ``tags`` (names, or ``ForumTag`` with
        ``moderated``/``emoji_name``); ``require_tag`` sets the REQUIRE_TAG flag (1 << 4)."""
        forum = Channel(
            id=self._fake.snowflakes.next(),
            type=type,
            name=name,
            guild=self,
            position=len(self.channels),
            parent_id=_id_of(parent) if parent is not None else None,
            topic=topic,
            overwrites={(ow.type, ow.id): ow for ow in overwrites},
            flags=CHANNEL_FLAG_REQUIRE_TAG if require_tag else 0,
        )
        for tag in tags:
            if isinstance(tag, str):
                tag = ForumTag(id=self._fake.snowflakes.next(), name=tag)
            forum.available_tags.append(tag)
        self.channels[forum.id] = forum
        self._fake._channel_created(forum)
        return forum

    def new_tag(
        self, name: str, *, moderated: bool = False, emoji_name: str | None = None
    ) -> ForumTag:
        """A ``ForumTag`` with a fresh id (for ``add_forum(tags=[...])`` / ``set_tags``)."""
        return ForumTag(
            id=self._fake.snowflakes.next(), name=name, moderated=moderated, emoji_name=emoji_name
        )

    def add_thread(
        self,
        parent: Channel | int,
        name: str,
        *,
        type: int | None = None,
        owner: User | Member | None = None,
        archived: bool = False,
        locked: bool = False,
        applied_tags: Iterable[ForumTag | int] = (),
        auto_archive_duration: int = 1440,
    ) -> Channel:
        """A thread in ``parent`` (public 11 by default; 10 in an announcement channel). The
        client gets THREAD_CREATE (an archived thread is not sent: Discord only tells a client
        about active threads)."""
        parent_ch = self.channels[_id_of(parent)]
        if type is None:
            type = ANNOUNCEMENT_THREAD if parent_ch.type == GUILD_ANNOUNCEMENT else PUBLIC_THREAD
        owner_user = owner.user if isinstance(owner, Member) else owner
        thread = Channel(
            id=self._fake.snowflakes.next(),
            type=type,
            name=name,
            guild=self,
            parent_id=parent_ch.id,
            owner_id=(owner_user or self.owner or self.bot_member).id,
            archived=archived,
            locked=locked,
            applied_tags=[_id_of(t) for t in applied_tags],
            auto_archive_duration=auto_archive_duration,
        )
        self.threads[thread.id] = thread
        self._fake._thread_created(thread, newly_created=False)
        return thread

    def add_member(
        self,
        user_id: int | User | None = None,
        name: str | None = None,
        roles: Iterable[Role | int] = (),
        *,
        nick: str | None = None,
        bot: bool = False,
    ) -> Member:
        if isinstance(user_id, User):
            user = user_id
        else:
            user = self._fake.add_user(name=name, user_id=user_id, bot=bot)
        member = Member(guild=self, user=user, role_ids=[_id_of(r) for r in roles], nick=nick)
        self.members[user.id] = member
        self._fake._member_added(member)
        return member

    def remove_member(self, member: Member | int) -> None:
        """The member leaves the server (or is kicked): GUILD_MEMBER_REMOVE is sent, and
        fetching them is 404 10007 Unknown Member."""
        user_id = _id_of(member)
        gone = self.members.pop(user_id, None)
        if gone is not None:
            self._fake._member_removed(gone)

    def set_bot_permissions(self, permissions: int) -> None:
        """Change the permissions of the bot's managed role (GUILD_ROLE_UPDATE is sent)."""
        self.bot_role.edit(permissions=permissions)

    # --- queries ---

    @property
    def owner(self) -> Member | None:
        return self.members.get(self.owner_id)

    def get_member(self, user: int | User | Member) -> Member | None:
        return self.members.get(_id_of(user))

    def get_channel(self, channel_id: int) -> Channel | None:
        return self.channels.get(channel_id)

    def role_named(self, name: str) -> Role:
        for role in self.roles.values():
            if role.name == name:
                return role
        raise KeyError(name)

    def channel_named(self, name: str) -> Channel:
        for channel in self.channels.values():
            if channel.name == name:
                return channel
        raise KeyError(name)

    def thread_named(self, name: str) -> Channel:
        for thread in self.threads.values():
            if thread.name == name:
                return thread
        raise KeyError(name)

    def permissions_for(self, member: Member | User | int, channel: Channel | None = None) -> int:
        m = member if isinstance(member, Member) else self.members[_id_of(member)]
        if channel is None:
            return base_permissions(self, m)
        return channel_permissions(self, channel, m)

    def bot_permissions_in(self, channel: Channel) -> int:
        return channel_permissions(self, channel, self.bot_member)

    # --- serialization ---

    def to_dict(self, *, with_counts: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(self.id),
            "name": self.name,
            "icon": None,
            "icon_hash": None,
            "splash": None,
            "discovery_splash": None,
            "banner": None,
            "description": None,
            "owner_id": str(self.owner_id),
            "region": "deprecated",
            "afk_channel_id": None,
            "afk_timeout": 300,
            "widget_enabled": False,
            "widget_channel_id": None,
            "verification_level": 0,
            "default_message_notifications": 1,
            "explicit_content_filter": 0,
            "roles": [r.to_dict() for r in self.roles.values()],
            "emojis": [],
            "stickers": [],
            "features": [],
            "mfa_level": 0,
            "application_id": None,
            "system_channel_id": str(self.system_channel_id) if self.system_channel_id else None,
            "system_channel_flags": 0,
            "rules_channel_id": None,
            "public_updates_channel_id": None,
            "safety_alerts_channel_id": None,
            "max_members": 500000,
            "vanity_url_code": None,
            "premium_tier": 0,
            "premium_subscription_count": 0,
            "preferred_locale": self.preferred_locale,
            "max_video_channel_users": 25,
            "max_stage_video_channel_users": 50,
            "nsfw_level": 0,
            "nsfw": False,
            "premium_progress_bar_enabled": False,
            "incidents_data": None,
        }
        if with_counts:
            data["approximate_member_count"] = len(self.members)
            data["approximate_presence_count"] = 0
        return data

    def to_gateway_dict(self, *, include_all_members: bool) -> dict[str, Any]:
        """The GUILD_CREATE payload. Without the GUILD_MEMBERS intent Discord only sends the
        bot's own member (plus members in voice), so that is what the fake does too."""
        data = self.to_dict()
        members = (
            list(self.members.values())
            if include_all_members
            else [m for m in self.members.values() if m.user.id == self.bot_member.user.id]
        )
        data.update(
            {
                "joined_at": iso(self.joined_at),
                "large": len(self.members) >= 250,
                "unavailable": False,
                "member_count": len(self.members),
                "voice_states": [],
                "members": [m.to_dict() for m in members],
                "channels": [c.to_dict() for c in self.channels.values() if not c.deleted],
                "threads": [
                    t.to_dict() for t in self.threads.values() if not t.deleted and not t.archived
                ],
                "presences": [],
                "stage_instances": [],
                "guild_scheduled_events": [],
                "soundboard_sounds": [],
                "lazy": True,
            }
        )
        for ch in data["channels"]:
            ch.pop("guild_id", None)
        return data


@dataclass
class Pings:
    """Which mentions of a message actually notify people.

    ``everyone``/``here``: the @everyone / @here mention pinged; ``roles``/``users``: ids pinged.
    ``suppressed`` explains each mention present in the content that did NOT ping and why.
    """

    everyone: bool = False
    here: bool = False
    roles: frozenset[int] = frozenset()
    users: frozenset[int] = frozenset()
    suppressed: list[str] = field(default_factory=list)

    @property
    def anything(self) -> bool:
        return self.everyone or self.here or bool(self.roles) or bool(self.users)


@dataclass(eq=False)
class Message:
    id: int
    channel_id: int
    guild_id: int | None
    author: User
    content: str = ""
    embeds: list[dict[str, Any]] = field(default_factory=list)
    components: list[dict[str, Any]] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    flags: int = 0
    tts: bool = False
    type: int = 0
    nonce: str | int | None = None
    enforce_nonce: bool = False
    allowed_mentions: dict[str, Any] | None = None
    pings: Pings = field(default_factory=Pings)
    mention_users: list[User] = field(default_factory=list)
    mention_role_ids: list[int] = field(default_factory=list)
    message_reference: dict[str, Any] | None = None
    webhook_id: int | None = None
    application_id: int | None = None
    interaction_metadata: dict[str, Any] | None = None
    created_at: float = field(default_factory=time.time)
    edited_at: float | None = None
    deleted: bool = False
    history: list[dict[str, Any]] = field(default_factory=list)
    pinned: bool = False
    sticker_items: list[dict[str, Any]] = field(default_factory=list)
    """The stickers sent with it (``id``, ``name``, ``format_type``)."""
    poll: dict[str, Any] | None = None
    """A poll, as Discord's message object carries it."""
    message_snapshots: list[dict[str, Any]] = field(default_factory=list)
    """A forwarded message's copy of the original (``[{"message": {...}}]``)."""

    @property
    def ephemeral(self) -> bool:
        return bool(self.flags & FLAG_EPHEMERAL)

    @property
    def loading(self) -> bool:
        return bool(self.flags & FLAG_LOADING)

    @property
    def crossposted(self) -> bool:
        """Published from an announcement channel (the CROSSPOSTED flag, 1 << 0)."""
        return bool(self.flags & FLAG_CROSSPOSTED)

    @property
    def silent(self) -> bool:
        """Sent with SUPPRESS_NOTIFICATIONS (1 << 12)."""
        return bool(self.flags & FLAG_SUPPRESS_NOTIFICATIONS)

    @property
    def suppress_embeds(self) -> bool:
        return bool(self.flags & FLAG_SUPPRESS_EMBEDS)

    @property
    def files(self) -> dict[str, bytes]:
        """The attachments' bytes by filename."""
        return {a.filename: a.data for a in self.attachments}

    @property
    def mention_user_ids(self) -> list[int]:
        return [u.id for u in self.mention_users]

    @property
    def edit_count(self) -> int:
        return len(self.history)

    def to_dict(self, *, gateway_member: Member | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(self.id),
            "type": self.type,
            "channel_id": str(self.channel_id),
            "author": self.author.to_dict(),
            "content": self.content,
            "timestamp": iso(self.created_at),
            "edited_timestamp": iso(self.edited_at),
            "tts": self.tts,
            "mention_everyone": self.pings.everyone or self.pings.here,
            "mentions": [u.to_dict() for u in self.mention_users],
            "mention_roles": [str(r) for r in self.mention_role_ids],
            "attachments": [a.to_dict() for a in self.attachments],
            "embeds": self.embeds,
            "pinned": self.pinned,
            "flags": self.flags,
            "components": self.components,
        }
        if self.nonce is not None:
            data["nonce"] = self.nonce
        if self.webhook_id is not None:
            data["webhook_id"] = str(self.webhook_id)
        if self.application_id is not None:
            data["application_id"] = str(self.application_id)
        if self.interaction_metadata is not None:
            data["interaction_metadata"] = self.interaction_metadata
        if self.message_reference is not None:
            data["message_reference"] = self.message_reference
        if self.guild_id is not None:
            data["guild_id"] = str(self.guild_id)
        if self.sticker_items:
            data["sticker_items"] = self.sticker_items
        if self.poll is not None:
            data["poll"] = self.poll
        if self.message_snapshots:
            data["message_snapshots"] = self.message_snapshots
        if gateway_member is not None:
            data["member"] = gateway_member.to_dict(with_user=False)
        return data


@dataclass(eq=False)
class ApplicationCommand:
    id: int
    application_id: int
    guild_id: int | None
    name: str
    type: int
    description: str
    options: list[dict[str, Any]]
    default_member_permissions: str | None
    raw: dict[str, Any]
    version: int

    def to_dict(self) -> dict[str, Any]:
        data = dict(self.raw)
        data.update(
            {
                "id": str(self.id),
                "application_id": str(self.application_id),
                "version": str(self.version),
                "name": self.name,
                "type": self.type,
                "description": self.description,
                "options": self.options,
                "default_member_permissions": self.default_member_permissions,
                "dm_permission": self.raw.get("dm_permission", True),
                "nsfw": self.raw.get("nsfw", False),
                "contexts": self.raw.get("contexts"),
                "integration_types": self.raw.get("integration_types", [0]),
            }
        )
        if self.guild_id is not None:
            data["guild_id"] = str(self.guild_id)
        else:
            data.pop("guild_id", None)
        return data


# --- mention computation -----------------------------------------------------------------------

_USER_MENTION = re.compile(r"<@!?(\d{15,21})>")
_ROLE_MENTION = re.compile(r"<@&(\d{15,21})>")


def compute_pings(
    content: str,
    allowed_mentions: dict[str, Any] | None,
    *,
    guild: Guild | None,
    author_permissions: int,
    known_user_ids: Iterable[int],
) -> tuple[Pings, list[int], list[int]]:
    """Work out which mentions in ``content`` would notify anyone.

    Without ``allowed_mentions`` Discord parses every mention type. @everyone/@here only ping
    with MENTION_EVERYONE; a role pings if it is mentionable or the author has MENTION_EVERYONE.
    Returns (pings, mentioned user ids, mentioned role ids) - the two lists are what Discord puts
    in ``mentions`` / ``mention_roles``.
    """
    parse: set[str]
    allowed_users: set[int]
    allowed_roles: set[int]
    if allowed_mentions is None:
        parse = {"users", "roles", "everyone"}
        allowed_users = set()
        allowed_roles = set()
    else:
        parse = set(allowed_mentions.get("parse") or [])
        allowed_users = {int(u) for u in allowed_mentions.get("users") or []}
        allowed_roles = {int(r) for r in allowed_mentions.get("roles") or []}

    suppressed: list[str] = []
    known = set(known_user_ids)
    has_mention_everyone = bool(author_permissions & Permissions.MENTION_EVERYONE)

    everyone, here = _everyone_pings(
        content,
        parse,
        in_guild=guild is not None,
        allowed=has_mention_everyone,
        suppressed=suppressed,
    )

    user_ids: list[int] = []
    pinged_users: set[int] = set()
    for raw in _USER_MENTION.findall(content):
        uid = int(raw)
        if uid not in known:
            suppressed.append(f"<@{uid}>: unknown user")
            continue
        if uid not in user_ids:
            user_ids.append(uid)
        if "users" in parse or uid in allowed_users:
            pinged_users.add(uid)
        else:
            suppressed.append(f"<@{uid}>: not allowed by allowed_mentions")

    role_ids: list[int] = []
    pinged_roles: set[int] = set()
    for raw in _ROLE_MENTION.findall(content):
        rid = int(raw)
        role = guild.roles.get(rid) if guild is not None else None
        if role is None:
            suppressed.append(f"<@&{rid}>: unknown role")
            continue
        if not ("roles" in parse or rid in allowed_roles):
            suppressed.append(f"<@&{rid}>: not allowed by allowed_mentions")
            continue
        if not (role.mentionable or has_mention_everyone):
            suppressed.append(f"<@&{rid}>: role not mentionable and author lacks MENTION_EVERYONE")
            continue
        if rid not in role_ids:
            role_ids.append(rid)
        pinged_roles.add(rid)

    pings = Pings(
        everyone=everyone,
        here=here,
        roles=frozenset(pinged_roles),
        users=frozenset(pinged_users),
        suppressed=suppressed,
    )
    return pings, user_ids, role_ids


def _everyone_pings(
    content: str, parse: set[str], *, in_guild: bool, allowed: bool, suppressed: list[str]
) -> tuple[bool, bool]:
    """Whether ``content``'s @everyone and @here ping (each with ``parse`` "everyone", in a
    guild, from an author with MENTION_EVERYONE), each reason one doesn't in ``suppressed``."""
    everyone = here = False
    for word, is_here in (("@everyone", False), ("@here", True)):
        if word not in content:
            continue
        if "everyone" not in parse:
            suppressed.append(f"{word}: not in allowed_mentions.parse")
        elif not in_guild:
            suppressed.append(f"{word}: not in a guild")
        elif not allowed:
            suppressed.append(f"{word}: author lacks MENTION_EVERYONE")
        elif is_here:
            here = True
        else:
            everyone = True
    return everyone, here


_counter = itertools.count(1)


def next_name(prefix: str) -> str:
    return f"{prefix}{next(_counter)}"
