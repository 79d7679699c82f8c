"""The requests discord.py must not retry (``bot.posting.once``): which they are, and a
connection reset of one of them, which discord.py retries on macOS and Windows (errno 54 /
10054) and Linux never produces, raised as one it does not retry. (A 5xx after a forum post
was made is proven end to end in ``test_forum_rerun``.)"""

from __future__ import annotations

from types import SimpleNamespace

import aiohttp
import pytest
from multidict import CIMultiDict
from yarl import URL

from bot.posting.once import ConnectionResetNotRetried, keep_out_of_library_retries, once_only

API = "http://127.0.0.1:1/api/v10"


@pytest.mark.parametrize(
    ("method", "path", "once"),
    [
        ("POST", "/channels/1/threads", True),
        ("POST", "/channels/1/messages/2/threads", True),
        ("POST", "/channels/1/messages/2/crosspost", True),
        ("POST", "/guilds/1/scheduled-events", True),
        ("POST", "/channels/1/messages", False),  # a send carries its nonce
        ("PATCH", "/channels/1/messages/2", False),  # an edit is idempotent
        ("GET", "/channels/1/threads/archived/public", False),
    ],
)
def test_the_requests_kept_out_of_discord_py_retries(method: str, path: str, once: bool) -> None:
    assert once_only(method, URL(API + path)) is once


async def reset(method: str, path: str, errno: int) -> None:
    """What the trace does when the request ``method path`` fails with a reset ``errno``."""
    trace = keep_out_of_library_retries(aiohttp.TraceConfig())
    trace.freeze()
    exc = aiohttp.ClientOSError(errno, "Connection reset by peer")
    params = aiohttp.TraceRequestExceptionParams(method, URL(API + path), CIMultiDict(), exc)
    async with aiohttp.ClientSession() as session:
        for callback in trace.on_request_exception:
            await callback(session, SimpleNamespace(), params)


@pytest.mark.parametrize("errno", [54, 10054])
async def test_a_reset_discord_py_would_retry_is_raised_for_a_create(errno: int) -> None:
    with pytest.raises(ConnectionResetNotRetried, match=f"errno {errno}"):
        await reset("POST", "/channels/1/threads", errno)
    assert not isinstance(ConnectionResetNotRetried("x"), OSError)  # discord.py retries those


async def test_a_reset_of_a_send_or_on_linux_is_left_as_it_is() -> None:
    await reset("POST", "/channels/1/messages", 54)  # a send: retried with its nonce
    await reset("POST", "/channels/1/threads", 104)  # Linux: discord.py gives up already
