"""Stopping an HTTP server leaves none of its connections open (``bot.web.server.stop_runner``,
used by the bot's :class:`~bot.web.server.WebServer` and by the fake Discord).

aiohttp's own ``cleanup`` closes a connection gently: the socket stays open until the data
already written has gone out, which for a client that stopped reading is never. The socket
then outlives the server and its event loop, a file descriptor held until the garbage
collector finds it and warns (an "unclosed transport" ``ResourceWarning``, which the suite
turns into an error in whichever test is running then).

Which sockets are open is read from the kernel (``/proc/net/tcp``, ``/proc/self/fd``), not
from the server's own bookkeeping: a connection of this process on the server's port.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest
from aiohttp import web

from bot.web.server import WebServer
from tests.fakediscord import FakeDiscord

pytestmark = pytest.mark.skipif(
    not Path("/proc/net/tcp").exists(), reason="reads the kernel's sockets from /proc (Linux)"
)

CHUNK = 1 << 20


def sockets_serving(port: int) -> list[int]:
    """The TCP sockets of this process that have ``port`` as their own port and a peer (the
    server's side of its connections; the listening socket has none): the bytes each holds
    in the kernel not yet taken by the peer."""
    queued: dict[str, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, queues, inode = fields[1], fields[2], fields[4], fields[9]
            if int(local.rsplit(":", 1)[1], 16) == port and int(remote.rsplit(":", 1)[1], 16):
                queued[inode] = int(queues.split(":")[0], 16)
    mine = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed since it was listed
        if target.startswith("socket:[") and target[8:-1] in queued:
            mine.append(queued[target[8:-1]])
    return mine


def stalled_reader(port: int, path: str) -> socket.socket:
    """A client that asks for ``path`` and then reads nothing (its receive buffer small, so
    the server's writes back up into its own buffer soon)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    return sock


async def backed_up(port: int) -> None:
    """Wait until the server's side of its one connection holds bytes its client has not
    taken (checked every 20 ms, for at most 30 s)."""
    for _ in range(1500):
        if any(sockets_serving(port)):
            return
        await asyncio.sleep(0.02)
    raise TimeoutError("the server's writes never backed up")


async def test_stop_closes_the_connection_of_a_client_that_stopped_reading() -> None:
    """The handler writes without end; it yields only when its writes wait for the client,
    so once the kernel holds unsent bytes, the server's own buffer does too."""

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        while True:
            await response.write(b"x" * CHUNK)

    server = WebServer("127.0.0.1", 0, shutdown_timeout=0.05)
    server.add_routes([web.get("/endless", endless)])
    await server.start()
    client = stalled_reader(server.port, "/endless")
    try:
        await backed_up(server.port)
        assert len(sockets_serving(server.port)) == 1
        await server.stop()
        assert sockets_serving(server.port) == []
    finally:
        await server.stop()
        client.close()


async def test_the_fake_discord_stopped_leaves_no_connection_open() -> None:
    """The fake serves a file (an attachment's URL) to a client that stopped reading; once
    stopped, nothing of it is open. The file is written in one go: once the kernel holds
    bytes the client has not taken, the rest waits in the server's buffer."""
    fake = FakeDiscord(shutdown_timeout=0.05)
    await fake.start()
    attachment = fake.make_attachment("big.bin", b"\0" * (64 * CHUNK))
    path = attachment.url.split(str(fake.port), 1)[1]
    client = stalled_reader(fake.port, path)
    try:
        await backed_up(fake.port)
        await fake.stop()
        assert sockets_serving(fake.port) == []
    finally:
        await fake.stop()
        client.close()


async def test_stop_closes_a_connection_accepted_just_before_it() -> None:
    """A client connects (the kernel completes the handshake at once on loopback); the loop
    accepts it in its next round and makes its transport in the round after: stop() is
    called between the two, so the connection joins the server only once it is stopping."""
    server = WebServer("127.0.0.1", 0, shutdown_timeout=0.05)
    await server.start()
    client = socket.create_connection(("127.0.0.1", server.port))
    try:
        await asyncio.sleep(0)  # round 1: this task resumes first, then the accept runs
        await asyncio.sleep(0)  # round 2: this task resumes before the transport is made
        await server.stop()
        assert sockets_serving(server.port) == []
    finally:
        await server.stop()
        client.close()
