"""The requests about channel webhooks, the bot's own: list a channel's, make one, change
its name and avatar (as the bot), execute one and edit its message (with its token).

Why not discord.py's: its ``Webhook`` adapter retries every 5xx answer by itself (an execute
has no nonce, so a 502 after Discord made the message would post it twice) and logs each
request's URL at DEBUG, and its bot client logs what it receives at DEBUG: a webhook's URL
holds its token, and making or listing webhooks answers with their tokens, a secret never
logged. These requests are made once each, and what they raise never carries a URL or an
answer: the failure comes back to the delivery job, whose re-run looks up what the attempt
made before it sends again (:mod:`bot.posting.webhooks`).

What they raise is what discord.py would: ``discord.RateLimited`` with Discord's
``retry_after`` on a 429 (Discord answers it before doing anything), and for other refusals
the ``discord.HTTPException`` subclass of the status (``Forbidden``, ``NotFound``,
``DiscordServerError``) with Discord's error code. A connection error or a timeout is
raised as :class:`WebhookRequestFailed` (an ``aiohttp.ClientError``) in words that name
no URL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import aiohttp
import discord
from discord.http import MultipartParameters

from .once import json_or_text

if TYPE_CHECKING:
    from ..db import ChannelWebhook

__all__ = ["WebhookRequestFailed", "WebhookRequests"]


class WebhookRequestFailed(aiohttp.ClientError):
    """A request with a webhook's token failed before an answer (the connection, a
    timeout); the words never hold the token."""


class WebhookRequests:
    """Channel webhooks through Discord's REST API at ``api_base``, as the bot ``token`` or
    with a webhook's own; its HTTP session is opened at the first request and closed by
    :meth:`close`; ``trace`` (e.g. the bot's 429 counter) is attached to it."""

    def __init__(
        self,
        api_base: str,
        token: str,
        *,
        user_agent: str,
        trace: aiohttp.TraceConfig | None = None,
    ) -> None:
        self.api_base = api_base.rstrip("/")
        self._headers = {"User-Agent": user_agent}
        self._bot = {"Authorization": f"Bot {token}"}
        self._trace = trace
        self._session: aiohttp.ClientSession | None = None

    async def channel_webhooks(self, channel_id: int) -> list[dict[str, Any]]:
        """``GET /channels/{id}/webhooks`` (Manage Webhooks): the channel's webhooks."""
        found = await self._call("GET", f"/channels/{channel_id}/webhooks", None, {}, self._bot)
        return [h for h in found if isinstance(h, dict)] if isinstance(found, list) else []

    async def create(self, channel_id: int, name: str, avatar: str | None) -> dict[str, Any]:
        """``POST /channels/{id}/webhooks``: a new webhook (with its token). ``avatar``: a
        data URI, or None."""
        body: dict[str, Any] = {"name": name}
        if avatar is not None:
            body["avatar"] = avatar
        made = await self._call("POST", f"/channels/{channel_id}/webhooks", body, {}, self._bot)
        return made if isinstance(made, dict) else {}

    async def modify(self, webhook_id: int, name: str, avatar: str | None) -> None:
        """``PATCH /webhooks/{id}``: its name and avatar (None: Discord's default)."""
        body = {"name": name, "avatar": avatar}
        await self._call("PATCH", f"/webhooks/{webhook_id}", body, {}, self._bot)

    async def execute(
        self,
        hook: ChannelWebhook,
        params: MultipartParameters,
        *,
        thread_id: int | None,
        components: bool,
    ) -> dict[str, Any]:
        """``POST /webhooks/{id}/{token}?wait=true``: the message made (its JSON)."""
        query = {"wait": "true"}
        if thread_id is not None:
            query["thread_id"] = str(thread_id)
        if components:
            query["with_components"] = "true"
        return await self._request("POST", hook, "", params, query)

    async def edit(
        self,
        hook: ChannelWebhook,
        message_id: int,
        params: MultipartParameters,
        *,
        thread_id: int | None,
        components: bool,
    ) -> dict[str, Any]:
        """``PATCH /webhooks/{id}/{token}/messages/{message_id}``: the message edited."""
        query = {}
        if thread_id is not None:
            query["thread_id"] = str(thread_id)
        if components:
            query["with_components"] = "true"
        return await self._request("PATCH", hook, f"/messages/{message_id}", params, query)

    async def delete(self, hook: ChannelWebhook, message_id: int, *, thread_id: int | None) -> None:
        """``DELETE /webhooks/{id}/{token}/messages/{message_id}``: the message deleted."""
        query = {} if thread_id is None else {"thread_id": str(thread_id)}
        path = f"/webhooks/{hook.webhook_id}/{hook.token}/messages/{message_id}"
        await self._call("DELETE", path, None, query, {}, webhook_id=hook.webhook_id)

    async def _request(
        self,
        method: str,
        hook: ChannelWebhook,
        tail: str,
        params: MultipartParameters,
        query: dict[str, str],
    ) -> dict[str, Any]:
        if self._session is None or self._session.closed:
            traces = [self._trace] if self._trace is not None else []
            self._session = aiohttp.ClientSession(trace_configs=traces)
        path = f"/webhooks/{hook.webhook_id}/{hook.token}{tail}"
        found = await self._call(method, path, params, query, {}, webhook_id=hook.webhook_id)
        if not isinstance(found, dict):
            raise WebhookRequestFailed(f"webhook {hook.webhook_id} answered without a message")
        return found

    async def _call(
        self,
        method: str,
        path: str,
        params: MultipartParameters | dict[str, Any] | None,
        query: dict[str, str],
        auth: dict[str, str],
        webhook_id: int | None = None,
    ) -> Any:
        """One request (never retried); its JSON answer, or what discord.py would raise."""
        if self._session is None or self._session.closed:
            traces = [self._trace] if self._trace is not None else []
            self._session = aiohttp.ClientSession(trace_configs=traces)
        url = self.api_base + path
        headers = self._headers | auth
        body: Any = None
        if isinstance(params, MultipartParameters) and params.multipart:
            form = aiohttp.FormData(quote_fields=False)
            for part in params.multipart:
                form.add_field(**part)
            body = form
        elif params is not None:
            payload = params.payload if isinstance(params, MultipartParameters) else params
            body = discord.utils._to_json(payload or {})
            headers = headers | {"Content-Type": "application/json"}
        what = f"webhook {webhook_id}" if webhook_id is not None else f"{method} {path}"
        try:
            async with self._session.request(
                method, url, data=body, params=query, headers=headers
            ) as response:
                if response.status == 204:
                    return None
                if 200 <= response.status < 300:
                    return await response.json(content_type=None)
                raise _refusal(response, await json_or_text(response))
        except (aiohttp.ClientError, ValueError) as exc:
            if isinstance(exc, WebhookRequestFailed):
                raise
            # aiohttp's words may hold the URL (and so the token): never passed on.
            raise WebhookRequestFailed(
                f"{type(exc).__name__}: the request to {what} failed"
            ) from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _refusal(response: aiohttp.ClientResponse, data: dict[str, Any] | str) -> Exception:
    """What discord.py would raise for this answer."""
    if response.status == 429:
        raw = data.get("retry_after") if isinstance(data, dict) else None
        try:
            retry_after = max(0.0, float(raw if raw is not None else 1.0))
        except (TypeError, ValueError):
            retry_after = 1.0
        return discord.RateLimited(retry_after)
    if response.status == 403:
        return discord.Forbidden(response, data)
    if response.status == 404:
        return discord.NotFound(response, data)
    if response.status >= 500:
        return discord.DiscordServerError(response, data)
    return discord.HTTPException(response, data)
