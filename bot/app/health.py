"""``crier health``: ask the bot running here whether it is healthy (its ``GET /healthz``).

The container image's ``HEALTHCHECK`` (and anything else that checks by running a command:
a systemd timer, a monitoring agent). ``HTTP_ADDRESS`` is read from the environment and
``.env`` as the bot reads it; an address on every interface (``0.0.0.0``, ``::``) is asked on
loopback. Exit status 0 when ``/healthz`` answers 200, 1 otherwise (the reasons it gives, or
why it could not be asked, on standard error), 2 for an ``HTTP_ADDRESS`` that can't be read.

It runs every 30 s in a container: it imports the settings and the standard library only,
never the Discord client (see :mod:`bot.app`).
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from typing import TYPE_CHECKING

from ..config import ConfigError, load_setting

if TYPE_CHECKING:
    import argparse

TIMEOUT = 10.0
"""Seconds to wait for the answer (``/healthz`` answers within 2 s even while the database
hangs)."""

LOOPBACK = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}  # noqa: S104 (read, not bound)
"""Where to ask a server listening on every interface."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=float,
        default=TIMEOUT,
        metavar="SECONDS",
        help=f"how long to wait for the answer (default {TIMEOUT:g})",
    )


def healthz_url(address: tuple[str, int]) -> str:
    """Where the bot serving on ``address`` (``HTTP_ADDRESS``) answers ``/healthz``."""
    host, port = address
    host = LOOPBACK.get(host, host)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/healthz"


def run(args: argparse.Namespace) -> int:
    try:
        address: tuple[str, int] | None = load_setting("http_address")
    except ConfigError as exc:
        return _fail(str(exc), 2)
    if address is None:
        return _fail(
            "HTTP_ADDRESS is not set, so the bot serves no /healthz to ask: set it (e.g. "
            "127.0.0.1:8080)",
            1,
        )
    if address[1] == 0:
        return _fail("HTTP_ADDRESS has port 0 (any free one): give the bot a fixed port", 1)
    url = healthz_url(address)
    # Straight to the bot: never through an HTTP proxy the environment may name.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=args.timeout) as answer:
            print(answer.read().decode("utf-8", "replace").rstrip())
    except urllib.error.HTTPError as exc:
        reasons = exc.read().decode("utf-8", "replace").strip()
        return _fail(f"{url} answered {exc.code}: {reasons.replace(chr(10), '; ')}", 1)
    except (urllib.error.URLError, OSError) as exc:
        why = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        return _fail(f"no answer from {url}: {why}", 1)
    return 0


def _fail(message: str, status: int) -> int:
    print(f"crier: {message}", file=sys.stderr)
    return status
