"""Publishing (crossposting) a message with a request of the bot's own, outside discord.py's
rate limiter.

Why not ``PartialMessage.publish()``: the bot gives discord.py a ``max_ratelimit_timeout``,
so that no long 429 is slept out inside a job. With it, discord.py refuses a call locally,
without a request, whenever the route's bucket resets further away than that timeout,
however many requests the bucket still has. Publishing is limited per channel per hour
(about 10), so after one publish the bucket resets up to an hour later, and discord.py
would refuse every other publish in that channel for the rest of the hour: one an hour,
not ten. The scheduler paces publishes instead (each job carries its channel's
``publish_pace``), so this request goes out as it is.

What it raises is what discord.py would: ``discord.RateLimited`` with Discord's
``retry_after`` on a 429 (another tool publishing in the channel, or no spacing), and for
other refusals the ``discord.HTTPException`` subclass of the status (``Forbidden``,
``NotFound``, ``DiscordServerError``), with Discord's error code. Connection errors and
timeouts are aiohttp's.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import discord

from .once import json_or_text

__all__ = ["Crossposter"]


class Crossposter:
    """Publishes messages through Discord's REST API at ``api_base`` as the bot ``token``.

    Its HTTP session is opened at the first publish and closed by :meth:`close`; ``trace``
    (e.g. the bot's 429 counter) is attached to it.
    """

    def __init__(
        self,
        api_base: str,
        token: str,
        *,
        user_agent: str,
        trace: aiohttp.TraceConfig | None = None,
    ) -> None:
        self.api_base = api_base.rstrip("/")
        self._headers = {"Authorization": f"Bot {token}", "User-Agent": user_agent}
        self._trace = trace
        self._session: aiohttp.ClientSession | None = None

    async def crosspost(self, channel_id: int, message_id: int) -> None:
        """Publish message ``message_id`` of announcement channel ``channel_id`` to the
        servers following it; raises as discord.py would (see the module's docstring)."""
        if self._session is None or self._session.closed:
            traces = [self._trace] if self._trace is not None else []
            self._session = aiohttp.ClientSession(trace_configs=traces)
        url = f"{self.api_base}/channels/{channel_id}/messages/{message_id}/crosspost"
        async with self._session.post(url, headers=self._headers) as response:
            if response.status < 300:
                await response.read()
                return
            data = await json_or_text(response)
            if response.status == 429:
                raise discord.RateLimited(_retry_after(response, data))
            if response.status == 403:
                raise discord.Forbidden(response, data)
            if response.status == 404:
                raise discord.NotFound(response, data)
            if response.status >= 500:
                raise discord.DiscordServerError(response, data)
            raise discord.HTTPException(response, data)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _retry_after(response: aiohttp.ClientResponse, data: dict[str, Any] | str) -> float:
    """Discord's ``retry_after`` (seconds), from the body, else the ``Retry-After`` header."""
    raw: Any = data.get("retry_after") if isinstance(data, dict) else None
    if raw is None:
        raw = response.headers.get("Retry-After")
    try:
        return max(0.0, float(raw))
    except (TypeError, ValueError):
        return 1.0
