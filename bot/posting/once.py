"""Requests that discord.py must not send twice: the ones without a nonce or an idempotent
meaning, kept out of its own retries.

discord.py's HTTP client retries a request that got a 500, 502, 504 or 524 (and, on macOS
and Windows, one whose connection was reset: errno 54 / 10054) by itself, before its caller
hears anything. For a message with a nonce that is harmless (Discord answers the retry with
the first message), but a request that creates something without a nonce (a thread, a forum
post, a scheduled event) may have been done by Discord when its answer is a 502: a retry
makes a second one. Such a request must reach Discord once per attempt of the job, and its
failure must come back to the job, whose durable re-run looks up what the attempt made
(:func:`bot.posting.forums.find_forum_post`) before it creates anything again.

discord.py has no per-request switch for its retries; the seam it offers is ``http_trace``,
an aiohttp trace its session calls for every request. :func:`keep_out_of_library_retries`
adds two callbacks to that trace: for a request in :data:`ONCE_ONLY` a 5xx answer is raised
at once as :class:`NotRetried` (a ``discord.DiscordServerError``, which discord.py does not
catch), and a connection reset as :class:`ConnectionResetNotRetried` (not an ``OSError``,
which is what discord.py retries). Everything else (429s, which Discord answers before
doing anything, and every other request) is left to discord.py as before. The bot's own
requests outside discord.py (:mod:`bot.posting.crosspost`) are never retried in the first
place.

To keep another request out of discord.py's retries (e.g. creating a guild scheduled event),
add its method and path to :data:`ONCE_ONLY`.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import aiohttp
import discord

if TYPE_CHECKING:
    from types import SimpleNamespace

__all__ = [
    "LIBRARY_RESET_ERRNOS",
    "ONCE_ONLY",
    "ConnectionResetNotRetried",
    "NotRetried",
    "json_or_text",
    "keep_out_of_library_retries",
    "once_only",
]

ONCE_ONLY: tuple[tuple[str, re.Pattern[str]], ...] = (
    # A thread (in a text or announcement channel) or a forum post: no nonce.
    ("POST", re.compile(r"/channels/\d+/threads")),
    # A thread started from a message: no nonce either.
    ("POST", re.compile(r"/channels/\d+/messages/\d+/threads")),
    # A publish (the bot makes it through its own request, never retried; listed so that
    # discord.py's ``publish()`` would not retry it either).
    ("POST", re.compile(r"/channels/\d+/messages/\d+/crosspost")),
    # A guild scheduled event: no nonce.
    ("POST", re.compile(r"/guilds/\d+/scheduled-events")),
)
"""The requests (method, path after ``/api/vN``) discord.py must send at most once."""

LIBRARY_RESET_ERRNOS = (54, 10054)
"""The ``errno`` of a connection reset that discord.py retries (ECONNRESET on macOS and on
Windows); on Linux (104) it already gives up."""

_API_PATH = re.compile(r"/api/v\d+(/.*)")


class NotRetried(discord.DiscordServerError):
    """A 5xx answer to a request in :data:`ONCE_ONLY`, raised instead of retried: Discord
    may have done it."""


class ConnectionResetNotRetried(aiohttp.ClientConnectionError):
    """The connection of a request in :data:`ONCE_ONLY` was reset: Discord may have done it
    (raised instead of discord.py's retry)."""


def once_only(method: str, url: str | Any) -> bool:
    """Whether the request ``method url`` is one discord.py must not retry."""
    path = getattr(url, "path", None)
    found = _API_PATH.fullmatch(path if isinstance(path, str) else str(url))
    if found is None:
        return False
    return any(m == method.upper() and p.fullmatch(found[1]) for m, p in ONCE_ONLY)


async def json_or_text(response: aiohttp.ClientResponse) -> dict[str, Any] | str:
    """A response's body: its JSON object, else its text."""
    text = await response.text(encoding="utf-8")
    if response.content_type == "application/json":
        try:
            data = json.loads(text)
        except ValueError:
            return text
        if isinstance(data, dict):
            return data
    return text


def keep_out_of_library_retries(trace: aiohttp.TraceConfig) -> aiohttp.TraceConfig:
    """Add to ``trace`` (the one given to discord.py as ``http_trace``) the callbacks that
    keep the requests of :data:`ONCE_ONLY` out of discord.py's retries; returns it."""

    async def on_request_end(
        session: aiohttp.ClientSession,
        context: SimpleNamespace,
        params: aiohttp.TraceRequestEndParams,
    ) -> None:
        response = params.response
        if response.status >= 500 and once_only(params.method, params.url):
            raise NotRetried(response, await json_or_text(response))

    async def on_request_exception(
        session: aiohttp.ClientSession,
        context: SimpleNamespace,
        params: aiohttp.TraceRequestExceptionParams,
    ) -> None:
        exc = params.exception
        if (
            isinstance(exc, OSError)
            and exc.errno in LIBRARY_RESET_ERRNOS
            and once_only(params.method, params.url)
        ):
            raise ConnectionResetNotRetried(
                f"the connection was reset (errno {exc.errno}); Discord may have done it"
            ) from exc

    trace.on_request_end.append(on_request_end)
    trace.on_request_exception.append(on_request_exception)
    return trace
