"""The bot's HTTP server: one aiohttp application on ``HTTP_ADDRESS``, off by default.

Each part of the bot that serves pages hands its routes over with :meth:`WebServer.add_routes`
before the server starts: the health and metrics endpoints (``bot.web.observability``) and
the dashboard. The server is meant to sit on loopback or behind a reverse proxy.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from aiohttp import web

from ..config import ConfigError

if TYPE_CHECKING:
    from collections.abc import Iterable

log = logging.getLogger(__name__)


class WebServer:
    """An aiohttp application served at ``host:port`` (port 0: any free port; see
    :attr:`port` once started)."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.app = web.Application()
        self._runner: web.AppRunner | None = None

    def add_routes(self, routes: Iterable[web.AbstractRouteDef]) -> None:
        """Serve ``routes`` too (only before :meth:`start`)."""
        self.app.add_routes(routes)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        """Listen; an address that cannot be bound is a :class:`ConfigError` naming it."""
        runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise ConfigError(
                f"HTTP_ADDRESS {self.host}:{self.port} cannot be served: {exc.strerror or exc}"
            ) from None
        self._runner = runner
        self.port = site.port  # the port bound (another one than asked for port 0)
        log.info("serving /healthz and /metrics on %s", self.url)

    async def stop(self) -> None:
        """Stop listening and finish (or drop) the requests in flight. Idempotent."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
