"""What went wrong with a request that posts, in one place for every posting job.

:func:`classify` turns what a request raised into a :class:`RequestFailed`: **permanent**
(Discord refused it and would again: Unknown Channel, Missing Access, Missing Permissions,
any other 4xx but 429) or **transient** (5xx, timeouts, connection errors, a rate limit
longer than discord.py waits out itself, which carries its ``retry_after``), with the reason
in words (:func:`describe`) and Discord's error code. The third case, a run that lost its
job's lease meanwhile, never reaches a job's own handling: the guard
(:class:`bot.posting.poster.Poster`) raises ``LeaseLost`` instead, and the run is discarded
without a word.
"""

from __future__ import annotations

import aiohttp
import discord

__all__ = [
    "KNOWN_CODES",
    "PERMANENT_CODES",
    "REQUEST_ERRORS",
    "UNKNOWN_MESSAGE",
    "RequestFailed",
    "classify",
    "describe",
    "permanent",
]

PERMANENT_CODES = {
    10003: "Unknown Channel: the channel was deleted",
    50083: "Thread archived or locked: nothing can be posted in it",
    160005: "Thread locked: nothing can be posted in it",
    50001: "Missing Access: the bot cannot see the channel",
    50013: "Missing Permissions: the bot may not post in the channel",
}
"""The refusals of a send that no retry can get past, in words."""
UNKNOWN_MESSAGE = 10008
MAX_PINS = 30003
KNOWN_CODES = {
    **PERMANENT_CODES,
    UNKNOWN_MESSAGE: "Unknown Message: the posted message was deleted",
    MAX_PINS: "Maximum pins reached: the channel has the most pinned messages Discord allows "
    "(250); unpin some",
}
"""Every Discord error code a reason is written in words for."""

REQUEST_ERRORS = (discord.RateLimited, discord.HTTPException, aiohttp.ClientError, OSError)
"""What a request that posts may raise when it fails (``TimeoutError`` is an ``OSError``)."""


class RequestFailed(Exception):
    """A request that posts failed: ``permanent`` or not, why (``reason``), Discord's
    error ``code`` if it gave one, and how long Discord asked to wait (``retry_after``,
    for a rate limit)."""

    def __init__(
        self,
        reason: str,
        *,
        permanent: bool,
        code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent
        self.code = code
        self.retry_after = retry_after


def classify(exc: BaseException) -> RequestFailed:
    """What ``exc`` (one of :data:`REQUEST_ERRORS`) means for the job that made the
    request; anything else is transient, described by its type."""
    if isinstance(exc, discord.RateLimited):  # a 429 longer than discord.py waits out itself
        return RequestFailed(
            f"rate limited for {exc.retry_after:.0f}s",
            permanent=False,
            retry_after=exc.retry_after,
        )
    if isinstance(exc, discord.HTTPException):
        return RequestFailed(describe(exc), permanent=permanent(exc), code=exc.code or None)
    return RequestFailed(f"{type(exc).__name__}: {exc}", permanent=False)


def permanent(exc: discord.HTTPException) -> bool:
    """Whether Discord would refuse the request again, however often it is retried."""
    if exc.code in PERMANENT_CODES:
        return True
    return 400 <= exc.status < 500 and exc.status != 429


def describe(exc: discord.HTTPException) -> str:
    """The refusal in words: a known code's meaning, else the status, code and text."""
    known = KNOWN_CODES.get(exc.code)
    if known:
        return f"{known} ({exc.code})"
    text = exc.text or exc.__class__.__name__
    return f"HTTP {exc.status}" + (f" code {exc.code}" if exc.code else "") + f": {text}"
