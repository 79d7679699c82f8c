"""Pins: ``PUT``/``DELETE /channels/{channel_id}/messages/pins/{message_id}`` (what discord.py
2.7 sends) and the older ``PUT``/``DELETE /channels/{channel_id}/pins/{message_id}`` (marked
deprecated in Discord's docs; the same behaviour), and ``GET /channels/{channel_id}/messages/
pins`` (the pinned messages, newest pin first).

Faithful details (Discord's "Pin Message" and "Unpin Message"):

* The bot needs VIEW_CHANNEL (else 403 50001) and PIN_MESSAGES (``1 << 51``, split from
  MANAGE_MESSAGES in August 2025; since 2026-02-23 MANAGE_MESSAGES alone no longer grants it)
  (else 403 50013).
* A message that is not in the channel, or was deleted: 404 10008 Unknown Message.
* Pinning a pinned message changes nothing (204). Pinning one more than the channel holds
  (``fake.pin_limit``, 250 in Discord's docs today) is 400 30003 "Maximum number of pins
  reached for the channel (250)". Unpinning a message that isn't pinned is a 204.
* A pin posts a system message in the channel (type 6, CHANNEL_PINNED_MESSAGE, by whoever
  pinned, referencing the message), and both a pin and an unpin send MESSAGE_UPDATE (the
  message's ``pinned``) and CHANNEL_PINS_UPDATE.
* A deleted message is no longer pinned (it leaves the channel's pins).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .errors import ApiError
from .permissions import Permissions as P

if TYPE_CHECKING:
    from collections.abc import Callable

    from aiohttp import web

    from .server import FakeDiscord, _Body
    from .state import Channel, Message

PIN_LIMIT = 250
"""The most messages a channel keeps pinned (Discord's docs, today)."""
MAX_PINS = 30003
CHANNEL_PINNED_MESSAGE = 6


class PinRoutes:
    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake
        self.limit = PIN_LIMIT
        self.pinned_at: dict[int, float] = {}
        """When each pinned message was pinned (by message id)."""

    def install(self, add: Callable[..., None]) -> None:
        for base in ("/channels/{channel_id}/messages/pins", "/channels/{channel_id}/pins"):
            add("PUT", base + "/{message_id}", self._pin, major="channel_id")
            add("DELETE", base + "/{message_id}", self._unpin, major="channel_id")
        add("GET", "/channels/{channel_id}/messages/pins", self._list, major="channel_id")

    def pins(self, channel: Channel | int) -> list[Message]:
        """The channel's pinned messages (not deleted), oldest pin first."""
        channel_id = channel if isinstance(channel, int) else channel.id
        found = [
            m
            for m in self.fake.messages.values()
            if m.channel_id == channel_id and m.pinned and not m.deleted
        ]
        return sorted(found, key=lambda m: self.pinned_at.get(m.id, 0.0))

    def _message(self, params: dict[str, str]) -> tuple[Channel, Message]:
        fake = self.fake
        ch = fake._channel_or_404(params["channel_id"])
        perms = fake._require_view(ch)
        msg = fake._message_in_channel(ch, params["message_id"])
        if not perms & P.PIN_MESSAGES:
            raise ApiError(403, 50013)
        return ch, msg

    async def _pin(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        fake = self.fake
        ch, msg = self._message(params)
        if msg.pinned:
            return 204, None
        if len(self.pins(ch)) >= self.limit:
            raise ApiError(
                400, MAX_PINS, f"Maximum number of pins reached for the channel ({self.limit})"
            )
        msg.pinned = True
        self.pinned_at[msg.id] = time.time()
        reference = {"type": 0, "message_id": str(msg.id), "channel_id": str(ch.id)}
        if ch.guild_id is not None:
            reference["guild_id"] = str(ch.guild_id)
        fake._new_message(
            ch,
            fake.bot_user,
            {"content": "", "message_reference": reference},
            author_permissions=0,
            type=CHANNEL_PINNED_MESSAGE,
            pings=False,
        )
        self._updated(ch, msg)
        return 204, None

    async def _unpin(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        ch, msg = self._message(params)
        if msg.pinned:
            msg.pinned = False
            self.pinned_at.pop(msg.id, None)
            self._updated(ch, msg)
        return 204, None

    async def _list(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        fake = self.fake
        ch = fake._channel_or_404(params["channel_id"])
        fake._require_view(ch)
        items = [
            {
                "pinned_at": datetime.fromtimestamp(self.pinned_at.get(m.id, 0.0), UTC).isoformat(),
                "message": fake._message_payload(m),
            }
            for m in reversed(self.pins(ch))
        ]
        return {"items": items, "has_more": False}

    def _updated(self, ch: Channel, msg: Message) -> None:
        fake = self.fake
        fake._dispatch_message("MESSAGE_UPDATE", msg)
        data: dict[str, Any] = {"channel_id": str(ch.id)}
        if ch.guild_id is not None:
            data["guild_id"] = str(ch.guild_id)
        if msg.pinned:
            data["last_pin_timestamp"] = datetime.fromtimestamp(
                self.pinned_at[msg.id], UTC
            ).isoformat()
        fake.gateway.dispatch("CHANNEL_PINS_UPDATE", data, guild_event=ch.guild_id is not None)
        fake._changed()
