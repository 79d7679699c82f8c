"""Publishing: ``POST /channels/{channel_id}/messages/{message_id}/crosspost``.

Faithful details (Discord's "Crosspost Message"):

* Only a message in an announcement channel (type 5) can be crossposted (else 400 50024).
* The bot's own message needs SEND_MESSAGES; anyone else's also MANAGE_MESSAGES (403 50013).
* It sets the message's CROSSPOSTED flag (1 << 0), answers the message and sends
  MESSAGE_UPDATE; a second crosspost of the same message is 400 40033 "This message has already
  been crossposted".
* Its own rate limit bucket, per channel: Discord allows about 10 publishes per hour per
  channel. The fake's ``crosspost`` bucket defaults to 10 per 3600 s
  (``FakeDiscord(crosspost_limit=, crosspost_per=)`` or
  ``fake.ratelimits.set_bucket("crosspost", n, per)``); over it a 429 with ``retry_after`` (the
  seconds until the window resets), ``Retry-After``, ``X-RateLimit-*`` and ``Via``, like every
  other bucket of the fake.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import ApiError
from .permissions import Permissions as P
from .state import FLAG_CROSSPOSTED, GUILD_ANNOUNCEMENT

if TYPE_CHECKING:
    from collections.abc import Callable

    from aiohttp import web

    from .server import FakeDiscord, _Body


class CrosspostRoutes:
    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake
        self.crossposted: list[int] = []  # message ids, in the order they were published

    def install(self, add: Callable[..., None]) -> None:
        add(
            "POST",
            "/channels/{channel_id}/messages/{message_id}/crosspost",
            self._crosspost,
            bucket="crosspost",
            major="channel_id",
        )

    async def _crosspost(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        fake = self.fake
        ch = fake._channel_or_404(params["channel_id"])
        perms = fake._require_view(ch)
        msg = fake._message_in_channel(ch, params["message_id"])
        if ch.type != GUILD_ANNOUNCEMENT:
            raise ApiError(400, 50024)
        needed = P.SEND_MESSAGES
        if msg.author.id != fake.bot_user.id or msg.webhook_id is not None:
            needed |= P.MANAGE_MESSAGES
        if perms & needed != needed:
            raise ApiError(403, 50013)
        if msg.crossposted:
            raise ApiError(400, 40033)
        msg.flags |= FLAG_CROSSPOSTED
        self.crossposted.append(msg.id)
        fake._dispatch_message("MESSAGE_UPDATE", msg)
        fake._changed()
        return fake._message_payload(msg)
