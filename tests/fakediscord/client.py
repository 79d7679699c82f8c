"""Helpers for pointing the real discord.py client at a :class:`FakeDiscord`.

These do not mock anything in discord.py: they only change the two URLs discord.py itself reads
(``discord.http.Route.BASE`` for every REST and interaction/webhook call, and
``discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY`` for the first gateway connection; after
READY the client follows ``resume_gateway_url``, which the fake points back at itself).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    import discord

    from .server import FakeDiscord


@contextlib.contextmanager
def pointing_discord_py_at(fake: FakeDiscord) -> Iterator[None]:
    """Within the block, discord.py talks to ``fake`` (restored afterwards)."""
    import discord.gateway
    import discord.http
    import yarl

    old_base = discord.http.Route.BASE
    old_gateway = discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    discord.http.Route.BASE = fake.api_base
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(fake.gateway_url)
    try:
        yield
    finally:
        discord.http.Route.BASE = old_base
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = old_gateway


@contextlib.asynccontextmanager
async def run_client(
    fake: FakeDiscord,
    client: discord.Client,
    *,
    token: str | None = None,
    ready_timeout: float = 10.0,
) -> AsyncIterator[discord.Client]:
    """Start ``client`` against ``fake``, wait for ``on_ready``, and close it cleanly on exit.

    Tip: construct the client with ``guild_ready_timeout=0.05`` - discord.py waits that long
    (default 2 s) after the last GUILD_CREATE before firing ``on_ready``.
    """
    with pointing_discord_py_at(fake):
        task = asyncio.create_task(client.start(token or fake.token), name="discord-client")
        ready = asyncio.create_task(client.wait_until_ready())
        try:
            done, _ = await asyncio.wait(
                {task, ready}, timeout=ready_timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if task in done:
                task.result()  # raises the client's startup error
                raise RuntimeError("discord client stopped before becoming ready")
            if ready not in done:
                raise TimeoutError(f"discord client not ready after {ready_timeout}s")
            yield client
        finally:
            ready.cancel()
            with contextlib.suppress(BaseException):
                await ready
            await client.close()
            # connect() notices the close at its next await; it may be sleeping (discord.py waits
            # 5 s before a re-IDENTIFY), so give it a moment and then cancel it.
            await asyncio.wait({task}, timeout=2.0)
            if not task.done():
                task.cancel()
            with contextlib.suppress(BaseException):
                await task
