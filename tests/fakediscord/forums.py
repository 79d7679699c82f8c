"""Threads and forum posts: ``POST /channels/{channel}/threads`` and sending into a thread.

Faithful details (Discord's "Start Thread in Forum or Media Channel" / "Start Thread without
Message", and discord.py's ``ForumChannel.create_thread`` which sends ``use_nested_fields=1``):

* In a forum (15) or media (16) channel the body is ``{name, auto_archive_duration,
  rate_limit_per_user, applied_tags, message: {content, embeds, flags, allowed_mentions,
  attachments, ...}}`` (as JSON, or as ``payload_json`` with ``files[n]``). The thread is a
  public thread (11) and its starter message has the thread's id. The answer is the thread
  channel with a ``message`` key; the client gets THREAD_CREATE (``newly_created``) then
  MESSAGE_CREATE. A forum post has no nonce: a retried create makes a second post.
* Needs VIEW_CHANNEL (50001) and SEND_MESSAGES (50013); ``applied_tags`` are at most 5 of the
  forum's ``available_tags``; a moderated tag needs MANAGE_THREADS; a forum with the REQUIRE_TAG
  flag refuses a post without tags (400, 40067).
* In a text (0) or announcement (5) channel the same route starts a thread without a message
  (CREATE_PUBLIC_THREADS; type 11, or 10 in an announcement channel).
* Sending into a thread needs SEND_MESSAGES_IN_THREADS; a send to an archived thread unarchives
  it (THREAD_UPDATE); a locked thread refuses members without MANAGE_THREADS: 400 160005 when
  it is open, 400 50083 when it is also archived.
* Sends into a forum or media channel itself are refused with 400 40058.

Listing threads (Discord's "List Active Guild Threads" and "List Public Archived Threads"):

* ``GET /guilds/{guild}/threads/active``: every active (not archived) thread of the guild in a
  channel the bot can view, newest first, as ``{threads, members}``.
* ``GET /channels/{channel}/threads/archived/public?before=&limit=``: the channel's archived
  public threads in decreasing ``archive_timestamp``, those archived before ``before`` (an ISO
  8601 time) when given, at most ``limit`` (2 to 100, 50 by default), as ``{threads, members,
  has_more}``. Needs VIEW_CHANNEL (50001) and READ_MESSAGE_HISTORY (50013).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import ApiError, form_error
from .holds import ParkedSend
from .permissions import Permissions as P
from .state import (
    ANNOUNCEMENT_THREAD,
    GUILD_ANNOUNCEMENT,
    GUILD_TEXT,
    PRIVATE_THREAD,
    PUBLIC_THREAD,
    THREAD_ONLY_TYPES,
    Channel,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from aiohttp import web

    from .server import FakeDiscord, _Body

MAX_APPLIED_TAGS = 5
ARCHIVE_DURATIONS = (60, 1440, 4320, 10080)


def check_thread_send(channel: Channel, perms: int) -> bool:
    """Refuse a send into a locked thread; True when the send will unarchive the thread."""
    if not channel.is_thread:
        return False
    if channel.locked and not perms & P.MANAGE_THREADS:
        raise ApiError(400, 50083 if channel.archived else 160005)
    return channel.archived


class ForumRoutes:
    """``POST /channels/{channel_id}/threads`` and the thread listings on a
    :class:`FakeDiscord`."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake

    def install(self, add: Callable[..., None]) -> None:
        add("POST", "/channels/{channel_id}/threads", self._start_thread, major="channel_id")
        add("GET", "/guilds/{guild_id}/threads/active", self._active_threads, major="guild_id")
        add(
            "GET",
            "/channels/{channel_id}/threads/archived/public",
            self._archived_public_threads,
            major="channel_id",
        )

    async def _active_threads(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        fake = self.fake
        guild = fake._guild_or_404(params["guild_id"])
        threads = []
        for thread in sorted(guild.threads.values(), key=lambda t: t.id, reverse=True):
            if thread.deleted or thread.archived or thread.parent_id is None:
                continue
            parent = guild.channels.get(thread.parent_id)
            if parent is None or not fake._bot_perms(parent) & P.VIEW_CHANNEL:
                continue
            threads.append(thread.to_dict())
        return {"threads": threads, "members": []}

    async def _archived_public_threads(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        fake = self.fake
        parent = fake._channel_or_404(params["channel_id"])
        perms = fake._require_view(parent)
        if not perms & P.READ_MESSAGE_HISTORY:
            raise ApiError(403, 50013)
        try:
            limit = int(request.query.get("limit", "50"))
        except ValueError:
            raise form_error("limit", "NUMBER_TYPE_COERCE", "Value is not int.") from None
        if not 2 <= limit <= 100:
            raise form_error("limit", "NUMBER_TYPE_MAX", "Must be between 2 and 100.")
        before: float | None = None
        if "before" in request.query:
            try:
                before = datetime.datetime.fromisoformat(request.query["before"]).timestamp()
            except ValueError:
                raise form_error("before", "DATE_TIME_TYPE_PARSE", "Could not parse.") from None
        guild = parent.guild
        archived = sorted(
            (
                t
                for t in (guild.threads.values() if guild is not None else ())
                if t.parent_id == parent.id
                and t.archived
                and not t.deleted
                and t.type in (PUBLIC_THREAD, ANNOUNCEMENT_THREAD)
                and (before is None or t.archive_timestamp < before)
            ),
            key=lambda t: t.archive_timestamp,
            reverse=True,
        )
        page = archived[:limit]
        return {
            "threads": [t.to_dict() for t in page],
            "members": [],
            "has_more": len(archived) > limit,
        }

    async def _start_thread(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        fake = self.fake
        try:
            hold = fake.holds.take(int(params["channel_id"]))
        except ValueError:
            hold = None
        if hold is None:
            return self._start_thread_now(params, body)
        send = ParkedSend(nonce=None)
        if hold.stage == "before":
            await hold.park(send)
        payload = self._start_thread_now(params, body)
        if hold.stage == "after":
            send.message_id = int(payload["id"])
            await hold.park(send)
        return payload

    def _start_thread_now(self, params: dict[str, str], body: _Body) -> Any:
        fake = self.fake
        parent = fake._channel_or_404(params["channel_id"])
        if parent.guild is None:
            raise ApiError(400, 50003, "Cannot execute action on a DM channel")
        perms = fake._require_view(parent)
        data = body.json if isinstance(body.json, dict) else {}
        name = data.get("name")
        if not isinstance(name, str) or not name.strip():
            raise form_error("name", "BASE_TYPE_REQUIRED", "This field is required")
        if len(name) > 100:
            raise form_error("name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
        duration = int(data.get("auto_archive_duration") or 1440)
        if duration not in ARCHIVE_DURATIONS:
            raise form_error(
                "auto_archive_duration",
                "BASE_TYPE_CHOICES",
                f"Value must be one of {ARCHIVE_DURATIONS}.",
            )
        if parent.type in THREAD_ONLY_TYPES:
            return self._forum_post(parent, perms, name, duration, data, body)
        if parent.type not in (GUILD_TEXT, GUILD_ANNOUNCEMENT):
            raise ApiError(400, 50024)
        kind = int(data.get("type") or PUBLIC_THREAD)
        if parent.type == GUILD_ANNOUNCEMENT:
            kind = ANNOUNCEMENT_THREAD
        needed = P.CREATE_PRIVATE_THREADS if kind == PRIVATE_THREAD else P.CREATE_PUBLIC_THREADS
        if not perms & needed:
            raise ApiError(403, 50013)
        thread = self._new_thread(parent, kind, name, duration, applied_tags=[])
        return thread.to_dict()

    def _forum_post(
        self,
        forum: Channel,
        perms: int,
        name: str,
        duration: int,
        data: dict[str, Any],
        body: _Body,
    ) -> Any:
        fake = self.fake
        if not perms & P.SEND_MESSAGES:
            raise ApiError(403, 50013)
        message = data.get("message")
        if not isinstance(message, dict):
            raise form_error("message", "BASE_TYPE_REQUIRED", "This field is required")
        tags = self._applied_tags(forum, perms, data.get("applied_tags"))
        if forum.require_tag and not tags:
            raise ApiError(400, 40067)
        from .server import _SETTABLE_MESSAGE_FLAGS, _Body

        msg_body = _Body(message, body.uploads)
        fields = fake._validate_message_fields(msg_body, creating=True)
        if fields.get("embeds") and not perms & P.EMBED_LINKS:
            raise ApiError(403, 50013)
        if body.uploads and not perms & P.ATTACH_FILES:
            raise ApiError(403, 50013)
        fields.pop("message_reference", None)
        flags = fields.get("flags", 0) & _SETTABLE_MESSAGE_FLAGS
        thread_id = fake.snowflakes.next()
        attachments = fake.attachments.resolve(
            message.get("attachments"),
            body.uploads,
            channel_id=thread_id,
            field_path="message.attachments",
        )
        thread = self._new_thread(
            forum, PUBLIC_THREAD, name, duration, applied_tags=tags, thread_id=thread_id
        )
        starter = fake._new_message(
            thread,
            fake.bot_user,
            fields,
            author_permissions=perms,
            flags=flags,
            attachments=attachments,
            message_id=thread.id,
        )
        forum.last_message_id = thread.id
        return thread.to_dict() | {"message": fake._message_payload(starter)}

    def _applied_tags(self, forum: Channel, perms: int, raw: Any) -> list[int]:
        if raw is None:
            return []
        if not isinstance(raw, list):
            raise form_error("applied_tags", "BASE_TYPE_LIST", "Must be a list.")
        if len(raw) > MAX_APPLIED_TAGS:
            raise form_error(
                "applied_tags",
                "BASE_TYPE_MAX_LENGTH",
                f"Must be {MAX_APPLIED_TAGS} or fewer in length.",
            )
        by_id = {t.id: t for t in forum.available_tags}
        tags: list[int] = []
        for i, value in enumerate(raw):
            try:
                tag = by_id.get(int(value))
            except (TypeError, ValueError):
                tag = None
            if tag is None:
                raise form_error(f"applied_tags.{i}", "TAG_INVALID", "Unknown tag.")
            if tag.moderated and not perms & P.MANAGE_THREADS:
                raise ApiError(403, 50013)
            if tag.id not in tags:
                tags.append(tag.id)
        return tags

    def _new_thread(
        self,
        parent: Channel,
        kind: int,
        name: str,
        duration: int,
        *,
        applied_tags: list[int],
        thread_id: int | None = None,
    ) -> Channel:
        fake = self.fake
        guild = parent.guild
        assert guild is not None
        thread = Channel(
            id=thread_id or fake.snowflakes.next(),
            type=kind,
            name=name,
            guild=guild,
            parent_id=parent.id,
            owner_id=fake.bot_user.id,
            applied_tags=applied_tags,
            auto_archive_duration=duration,
        )
        guild.threads[thread.id] = thread
        fake._thread_created(thread, newly_created=True)
        return thread
