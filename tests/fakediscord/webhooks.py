"""Channel webhooks: made, listed, changed, deleted by the bot; executed with their token.

Faithful details (Discord's "Webhook" resource, incoming webhooks, type 1):

* ``POST /channels/{channel}/webhooks`` ``{name, avatar}`` needs VIEW_CHANNEL (50001) and
  MANAGE_WEBHOOKS (50013) in the channel, a text, announcement, forum or media channel (a
  thread is 400 50024); a name of 1 to 80 characters without "clyde" or "discord" (400
  50035); the 16th webhook of a channel is 400 30007 "Maximum number of webhooks reached
  (15)". ``avatar`` is a data URI (``data:image/png;base64,…``); the webhook keeps its
  hash. The answer carries the ``token`` and the ``application_id`` of the bot that made it.
* ``GET /channels/{channel}/webhooks`` (MANAGE_WEBHOOKS), ``GET``/``PATCH``/``DELETE
  /webhooks/{id}`` (MANAGE_WEBHOOKS in its channel; 404 10015 once deleted).
* ``POST /webhooks/{id}/{token}?wait=&thread_id=&with_components=`` executes it: an unknown
  or deleted webhook, or a wrong token, is 404 10015. No nonce: every execute is a new
  message, whose author is the webhook (its id; ``username`` overrides the name for this
  message, 1 to 80 characters, no "clyde" or "discord") and whose ``webhook_id`` is set.
  ``thread_id`` posts in a thread of the webhook's channel (10003 otherwise); in a forum or
  media channel a ``thread_name`` (with ``applied_tags``) makes a new post whose thread the
  webhook owns, and one without either is 400 220001; ``thread_name`` elsewhere is 400
  220003. ``components`` are kept only with ``with_components=true`` (the webhook of an
  application may then send interactive ones). Without ``wait`` the answer is 204. Holds
  (``fake.hold_messages(channel)``) park executes as they park sends (the channel: the
  thread, or for a new forum post the forum).
* ``GET``/``PATCH``/``DELETE /webhooks/{id}/{token}/messages/{message}?thread_id=``: only a
  message that webhook posted, in its channel or the thread given (404 10008 otherwise).
* ``fake.webhooks.delete(webhook)``: a moderator deletes it (WEBHOOKS_UPDATE to the bot);
  from then on it is 10015.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ApiError, form_error
from .forums import check_thread_send
from .holds import ParkedSend
from .permissions import Permissions as P
from .state import (
    GUILD_ANNOUNCEMENT,
    GUILD_TEXT,
    PUBLIC_THREAD,
    THREAD_ONLY_TYPES,
    Channel,
    Message,
    User,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from aiohttp import web

    from .server import FakeDiscord, _Body

MAX_WEBHOOKS_PER_CHANNEL = 15
MAX_WEBHOOK_NAME = 80
FORBIDDEN_IN_NAMES = ("clyde", "discord")
WEBHOOK_CHANNEL_TYPES = frozenset({GUILD_TEXT, GUILD_ANNOUNCEMENT, *THREAD_ONLY_TYPES})
TRUE = ("1", "true", "True")


@dataclass(eq=False)
class Webhook:
    id: int
    token: str
    channel_id: int
    guild_id: int
    name: str
    creator: User
    application_id: int | None
    avatar: str | None = None
    """The hash of its avatar (None: Discord's default)."""
    avatar_data: bytes | None = None
    deleted: bool = False
    executed: int = 0
    """How many executes made a message through it."""

    def to_dict(self, *, with_token: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(self.id),
            "type": 1,
            "guild_id": str(self.guild_id),
            "channel_id": str(self.channel_id),
            "name": self.name,
            "avatar": self.avatar,
            "application_id": None if self.application_id is None else str(self.application_id),
            "user": self.creator.to_dict(),
        }
        if with_token:
            data["token"] = self.token
        return data

    @property
    def author(self) -> User:
        return User(id=self.id, username=self.name, bot=True)


def avatar_hash(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


class WebhookRoutes:
    """The webhook routes of a :class:`FakeDiscord` and what they made."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake
        self.hooks: dict[int, Webhook] = {}

    def install(self, add: Callable[..., None]) -> None:
        add("POST", "/channels/{channel_id}/webhooks", self._create, major="channel_id")
        add("GET", "/channels/{channel_id}/webhooks", self._list, major="channel_id")
        add("GET", "/webhooks/{webhook_id}", self._get, major="webhook_id")
        add("PATCH", "/webhooks/{webhook_id}", self._modify, major="webhook_id")
        add("DELETE", "/webhooks/{webhook_id}", self._delete, major="webhook_id")

    # --- the test's side ----------------------------------------------------------------------

    def of(self, channel: Channel | int) -> list[Webhook]:
        """The channel's live webhooks, oldest first."""
        cid = channel if isinstance(channel, int) else channel.id
        return [w for w in self.hooks.values() if w.channel_id == cid and not w.deleted]

    def add(self, channel: Channel, name: str = "Someone's hook", *, owner: User) -> Webhook:
        """A webhook someone else made in ``channel`` (it counts toward the channel's 15)."""
        return self._new(channel, name, None, owner, application_id=None)

    def delete(self, webhook: Webhook) -> None:
        """A moderator deletes the webhook (WEBHOOKS_UPDATE); later executes are 10015."""
        webhook.deleted = True
        self.fake.gateway.dispatch(
            "WEBHOOKS_UPDATE",
            {"guild_id": str(webhook.guild_id), "channel_id": str(webhook.channel_id)},
        )
        self.fake._changed()

    def post(
        self,
        webhook: Webhook,
        content: str,
        *,
        username: str | None = None,
        at: float | None = None,
    ) -> Message:
        """Someone with the webhook's URL posts ``content`` through it (in its channel);
        ``at``: the message was made then (epoch seconds; its id says so)."""
        fake = self.fake
        channel = fake.channels[webhook.channel_id]
        author = User(id=webhook.id, username=username or webhook.name, bot=True)
        message_id = None if at is None else fake.snowflakes.at(at)
        msg = fake._new_message(
            channel,
            author,
            {"content": content},
            author_permissions=P.ALL,
            webhook_id=webhook.id,
            message_id=message_id,
        )
        msg.application_id = webhook.application_id
        return msg

    def messages_by(self, webhook: Webhook) -> list[Message]:
        """The live messages the webhook posted, oldest first."""
        return [m for m in self.fake.message_log if m.webhook_id == webhook.id and not m.deleted]

    # --- made, listed, changed, deleted by the bot -----------------------------------------------

    def _new(
        self,
        channel: Channel,
        name: str,
        avatar: bytes | None,
        creator: User,
        *,
        application_id: int | None,
    ) -> Webhook:
        assert channel.guild is not None
        hook = Webhook(
            id=self.fake.snowflakes.next(),
            token=secrets.token_urlsafe(48),
            channel_id=channel.id,
            guild_id=channel.guild.id,
            name=name,
            creator=creator,
            application_id=application_id,
            avatar=None if avatar is None else avatar_hash(avatar),
            avatar_data=avatar,
        )
        self.hooks[hook.id] = hook
        self.fake._changed()
        return hook

    def _managed_channel(self, channel_id: str) -> Channel:
        """A channel the bot may manage the webhooks of (or the refusal Discord gives)."""
        channel = self.fake._channel_or_404(channel_id)
        if channel.guild is None:
            raise ApiError(400, 50003, "Cannot execute action on a DM channel")
        perms = self.fake._require_view(channel)
        if not perms & P.MANAGE_WEBHOOKS:
            raise ApiError(403, 50013)
        return channel

    async def _create(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        channel = self._managed_channel(params["channel_id"])
        if channel.type not in WEBHOOK_CHANNEL_TYPES:
            raise ApiError(400, 50024)
        data = body.json if isinstance(body.json, dict) else {}
        name = _checked_name(data.get("name"), "name", required=True)
        assert name is not None
        avatar = _avatar(data.get("avatar"))
        if len(self.of(channel)) >= MAX_WEBHOOKS_PER_CHANNEL:
            raise ApiError(400, 30007)
        hook = self._new(
            channel, name, avatar, self.fake.bot_user, application_id=self.fake.application_id
        )
        return hook.to_dict()

    async def _list(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        channel = self._managed_channel(params["channel_id"])
        return [w.to_dict() for w in self.of(channel)]

    def _hook_managed(self, webhook_id: str) -> Webhook:
        hook = self._hook(webhook_id)
        self._managed_channel(str(hook.channel_id))
        return hook

    def _hook(self, webhook_id: str) -> Webhook:
        try:
            hook = self.hooks.get(int(webhook_id))
        except ValueError:
            hook = None
        if hook is None or hook.deleted:
            raise ApiError(404, 10015)
        return hook

    async def _get(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        return self._hook_managed(params["webhook_id"]).to_dict()

    async def _modify(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        hook = self._hook_managed(params["webhook_id"])
        data = body.json if isinstance(body.json, dict) else {}
        if "name" in data:
            name = _checked_name(data["name"], "name", required=True)
            assert name is not None
            hook.name = name
        if "avatar" in data:
            hook.avatar_data = _avatar(data["avatar"])
            hook.avatar = None if hook.avatar_data is None else avatar_hash(hook.avatar_data)
        if data.get("channel_id") is not None:
            hook.channel_id = self._managed_channel(str(data["channel_id"])).id
        self.fake._changed()
        return hook.to_dict()

    async def _delete(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        hook = self._hook_managed(params["webhook_id"])
        hook.deleted = True
        self.fake._changed()
        return 204, None

    # --- executed with the token -------------------------------------------------------------

    def owns(self, webhook_id: str) -> bool:
        """Whether ``/webhooks/{webhook_id}/…`` names a channel webhook (not the application,
        whose id and an interaction's token make the interaction's followups)."""
        return webhook_id != str(self.fake.application_id)

    def _hook_by_token(self, params: dict[str, str]) -> Webhook:
        hook = self._hook(params["app_id"])
        if not secrets.compare_digest(hook.token, params["token"]):
            raise ApiError(404, 10015)
        return hook

    def _thread_of(self, hook: Webhook, thread_id: str) -> Channel:
        """The thread ``thread_id`` of the webhook's channel."""
        try:
            thread = self.fake.channels.get(int(thread_id))
        except ValueError:
            thread = None
        if thread is None or thread.deleted or not thread.is_thread:
            raise ApiError(404, 10003)
        if thread.parent_id != hook.channel_id:
            raise ApiError(400, 10003, "Unknown Channel")
        return thread

    async def execute(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        hook = self._hook_by_token(params)
        channel = self.fake._channel_or_404(hook.channel_id)
        query = request.query
        target = channel
        if "thread_id" in query:
            target = self._thread_of(hook, query["thread_id"])
        data = body.json if isinstance(body.json, dict) else {}
        thread_name = data.get("thread_name")
        in_forum = target is channel and channel.type in THREAD_ONLY_TYPES
        if thread_name is not None and not in_forum:
            raise ApiError(400, 220003)
        if in_forum and not thread_name:
            raise ApiError(400, 220001)
        hold = self.fake.holds.take(target.id)
        send = ParkedSend(nonce=None)
        if hold is not None and hold.stage == "before":
            await hold.park(send)
        components = query.get("with_components") in TRUE
        msg = self._execute_now(hook, channel, target, data, body, with_components=components)
        if hold is not None and hold.stage == "after":
            send.message_id = msg.id
            await hold.park(send)
        if query.get("wait") in TRUE:
            return self.fake._message_payload(msg)
        return 204, None

    def _execute_now(
        self,
        hook: Webhook,
        channel: Channel,
        target: Channel,
        data: dict[str, Any],
        body: _Body,
        *,
        with_components: bool,
    ) -> Message:
        from .server import _SETTABLE_MESSAGE_FLAGS

        fake = self.fake
        username = _checked_name(data.get("username"), "username", required=False)
        fields = fake._validate_message_fields(body, creating=True)
        if not with_components:
            fields.pop("components", None)  # Discord ignores them without with_components
        fields.pop("message_reference", None)
        flags = fields.get("flags", 0) & _SETTABLE_MESSAGE_FLAGS
        author = User(id=hook.id, username=username or hook.name, bot=True)
        thread_name = data.get("thread_name")
        message_id = None
        if thread_name is not None:
            if not isinstance(thread_name, str) or not 1 <= len(thread_name) <= 100:
                raise form_error(
                    "thread_name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
                )
            tags = fake.forum_routes._applied_tags(channel, P.ALL, data.get("applied_tags"))
            if channel.require_tag and not tags:
                raise ApiError(400, 40067)
            thread = fake.forum_routes._new_thread(
                channel, PUBLIC_THREAD, thread_name, 4320, applied_tags=tags
            )
            thread.owner_id = hook.id
            target = thread
            message_id = thread.id
        elif target.is_thread and check_thread_send(target, 0):
            target.unarchive()
        attachments = fake._attachments_of(data, body.uploads, target.id)
        msg = fake._new_message(
            target,
            author,
            fields,
            author_permissions=P.ALL,
            flags=flags,
            webhook_id=hook.id,
            attachments=attachments,
            message_id=message_id,
        )
        msg.application_id = hook.application_id
        if target.is_thread:
            target.message_count += 1
        hook.executed += 1
        return msg

    def _message_of(self, hook: Webhook, request: web.Request, message_id: str) -> Message:
        where = hook.channel_id
        if "thread_id" in request.query:
            where = self._thread_of(hook, request.query["thread_id"]).id
        try:
            msg = self.fake.messages.get(int(message_id))
        except ValueError:
            msg = None
        if msg is None or msg.deleted or msg.webhook_id != hook.id or msg.channel_id != where:
            raise ApiError(404, 10008)
        return msg

    async def get_message(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        hook = self._hook_by_token(params)
        return self.fake._message_payload(self._message_of(hook, request, params["message_id"]))

    async def edit_message(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        fake = self.fake
        hook = self._hook_by_token(params)
        msg = self._message_of(hook, request, params["message_id"])
        fields = fake._validate_message_fields(body, creating=False)
        if request.query.get("with_components") not in TRUE:
            fields.pop("components", None)
        thread = fake.channels.get(msg.channel_id)
        if thread is not None and thread.is_thread and thread.archived:
            raise ApiError(400, 50083)
        fake._edit_attachments(msg, body.json, body.uploads, fields)
        fake._apply_edit(msg, fields, record_history=True)
        fake._dispatch_message("MESSAGE_UPDATE", msg)
        fake._changed()
        return fake._message_payload(msg)

    async def delete_message(
        self, request: web.Request, params: dict[str, str], body: _Body
    ) -> Any:
        hook = self._hook_by_token(params)
        self.fake._delete(self._message_of(hook, request, params["message_id"]))
        return 204, None


def _checked_name(value: Any, key: str, *, required: bool) -> str | None:
    """A webhook's name (or a message's ``username``) as Discord checks it."""
    if value is None and not required:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_WEBHOOK_NAME:
        raise form_error(key, "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 80 in length.")
    lowered = value.lower()
    for word in FORBIDDEN_IN_NAMES:
        if word in lowered:
            raise form_error(key, "USERNAME_INVALID_CONTAINS", f'Username cannot contain "{word}"')
    return value


def _avatar(value: Any) -> bytes | None:
    """The image a data URI carries (None: none)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith("data:image/") or ";base64," not in value:
        raise form_error("avatar", "IMAGE_INVALID", "Invalid image data")
    try:
        return base64.b64decode(value.split(";base64,", 1)[1], validate=True)
    except (binascii.Error, ValueError):
        raise form_error("avatar", "IMAGE_INVALID", "Invalid image data") from None
