"""The bot's HTTP server: one aiohttp application on ``HTTP_ADDRESS``, off by default.

Each part of the bot that serves pages hands its routes over with :meth:`WebServer.add_routes`
before the server starts: the health and metrics endpoints (``bot.web.observability``) and
the dashboard. The server is meant to sit on loopback or behind a reverse proxy.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web

from ..config import ConfigError

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT = 5.0
"""How long :meth:`WebServer.stop` lets a request in flight finish before it is dropped (a
client that stopped reading must not hold a shutdown for aiohttp's default minute)."""


async def stop_runner(
    runner: web.BaseRunner, before_cleanup: Callable[[], Awaitable[None]] | None = None
) -> None:
    """Stop ``runner`` with no connection left open: stop accepting, let every connection
    already accepted reach the server, close the listening sockets, run ``before_cleanup``,
    finish (or drop) the requests in flight as :meth:`~aiohttp.web.BaseRunner.cleanup` does,
    then abort whatever that left open.

    ``cleanup`` alone can leave a socket open for good, in two ways:

    - It closes a connection gently, which waits for the unsent data to go out: forever, for
      a client that stopped reading.
    - It closes the listening socket at once. On Python 3.11 a connection accepted in the
      event loop's round before then has its transport made a round later, and making it
      fails on the closed server (``Server._attach`` asserts it is open): the accepted
      socket belongs to nobody, open until the garbage collector finds it.

    Either is a file descriptor held past the server and its event loop, and an "unclosed
    transport" ``ResourceWarning`` whenever it is collected."""
    loop = asyncio.get_running_loop()
    server = runner.server
    sites = list(runner.sites)
    for site in sites:
        # aiohttp keeps the asyncio server of a site as _server (no public name for it).
        listening = getattr(site, "_server", None)
        for sock in getattr(listening, "sockets", None) or ():
            loop.remove_reader(sock.fileno())
    # Callbacks run in the order they were scheduled, one round after another. An accept
    # already due in this round runs after this task yields; the transports of what it
    # accepted are made in the next round, and join the server (connection_made) in the one
    # after. Three rounds yielded here come after all of that.
    for _ in range(3):
        await asyncio.sleep(0)
    for site in sites:
        await site.stop()
    opened: weakref.WeakSet[asyncio.Transport] = weakref.WeakSet()
    if server is not None:
        opened.update(h.transport for h in server.connections if h.transport is not None)
    if before_cleanup is not None:
        await before_cleanup()
    await runner.cleanup()
    for transport in list(opened):
        transport.abort()  # nothing for one closed already
    # abort() closes the socket in a callback scheduled now: yield once so it runs before
    # the caller goes on (and perhaps closes the loop).
    await asyncio.sleep(0)


OPEN_PATHS = ("/healthz", "/metrics")
"""What :meth:`WebServer.hold_while` lets through: they answer for a process that starts."""
HOLD_RETRY_AFTER = 5
"""Seconds a held request is told to wait before it asks again."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class WebServer:
    """An aiohttp application served at ``host:port`` (port 0: any free port; see
    :attr:`port` once started)."""

    def __init__(
        self,
        host: str,
        port: int,
        shutdown_timeout: float = SHUTDOWN_TIMEOUT,
        max_body: float = 10 * 1024 * 1024,
    ) -> None:
        self.host = host
        self.port = port
        self.shutdown_timeout = shutdown_timeout
        # A body read whole (a urlencoded form) is held to max_body: past it, aiohttp answers
        # 413 itself (the dashboard reads multipart bodies part by part, to the same limit).
        self.app = web.Application(client_max_size=int(max_body))
        self._runner: web.AppRunner | None = None

    def add_routes(self, routes: Iterable[web.AbstractRouteDef]) -> None:
        """Serve ``routes`` too (only before :meth:`start`)."""
        self.app.add_routes(routes)

    def hold_while(
        self, reason: Callable[[], str | None], *, open_paths: Iterable[str] = OPEN_PATHS
    ) -> None:
        """While ``reason()`` gives one (the process is starting: its database isn't open
        yet), every request but those of ``open_paths`` is answered 503 with it, and a
        ``Retry-After``, instead of reaching a handler that needs what isn't there yet
        (only before :meth:`start`)."""
        always = frozenset(open_paths)

        @web.middleware
        async def hold(request: web.Request, handler: Handler) -> web.StreamResponse:
            why = reason()
            if why is None or request.path in always:
                return await handler(request)
            return web.Response(
                status=503,
                text=f"crier is starting: {why}\n",
                headers={"Retry-After": str(HOLD_RETRY_AFTER)},
            )

        self.app.middlewares.append(hold)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        """Listen; an address that cannot be bound is a :class:`ConfigError` naming it."""
        runner = web.AppRunner(
            self.app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=self.shutdown_timeout,
        )
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
        """Stop listening, finish the requests in flight within :attr:`shutdown_timeout` and
        drop the rest: no connection is left open. Idempotent."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await stop_runner(runner)
