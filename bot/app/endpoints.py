"""Pointing discord.py at REST and gateway addresses other than Discord's own.

``DISCORD_API_BASE`` and ``DISCORD_GATEWAY_URL`` exist for deployments behind a REST or
gateway proxy, and for the tests, which run the real client against a fake Discord on
127.0.0.1. discord.py (2.x; checked on 2.7.1) has no supported setting for either address:

- ``Client(proxy=...)`` is a forward HTTP proxy: requests still name ``https://discord.com``
  (tunnelled through the proxy), so it cannot reach a REST proxy or a fake elsewhere;
- every REST request builds its URL from the class attribute ``discord.http.Route.BASE``
  when its ``Route`` is made: the client's own requests, and also interaction responses and
  webhooks, which go through ``discord.webhook``'s adapter rather than the client's
  ``HTTPClient``, so no per-client override could cover them all;
- the first gateway connection goes to ``DiscordWebSocket.DEFAULT_GATEWAY`` (after READY the
  client follows the ``resume_gateway_url`` the gateway sends).

So those two class attributes are the only switch there is. They are process-wide; this is
the one module of the bot that sets them.
"""

from __future__ import annotations

import discord.gateway
import discord.http
import yarl

from ..config import DEFAULT_API_BASE, DEFAULT_GATEWAY


def use_discord_endpoints(api_base: str, gateway_url: str) -> None:
    """Send discord.py's REST requests to ``api_base`` (e.g. ``https://discord.com/api/v10``)
    and its first gateway connection to ``gateway_url``, for the whole process."""
    discord.http.Route.BASE = api_base
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)


def use_discords_own_endpoints() -> None:
    """Undo :func:`use_discord_endpoints`: Discord's own addresses again."""
    use_discord_endpoints(DEFAULT_API_BASE, DEFAULT_GATEWAY)
