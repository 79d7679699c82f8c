"""A database that isn't there yet when the bot starts is waited for (``bot.app.waiting``):
one clear log line, tries again with a backoff, ``/healthz`` answers 503 with the reason,
and the bot carries on once the database comes; a SIGTERM meanwhile is a clean exit.
Settings the database refuses (an unknown role) or can't parse are still one line and exit
status 2, at once.

Real processes against the test PostgreSQL server: ``python -m bot`` pointed at a port where
nothing listens (then a relay to the server that the test starts on that port), or at a
database the test creates later (a unique name, dropped afterwards). A host name that does
not resolve can't be produced offline: the store classifies it as it classifies a refused
connection (``tests/scheduler/test_postgres_unavailable.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import signal
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import asyncpg
import pytest

from tests.bot.test_config import TOKEN, assert_one_clear_line, clean_env, run_bot
from tests.scheduler.pg import drop_database, with_database
from tests.scheduler.stores import require_postgres
from tests.scheduler.test_postgres_unavailable import free_port
from tests.support.processes import Process, procs, until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from tests.bot.conftest import World

WAITING = "waiting for the database"
SERVED = re.compile(r"serving /healthz and /metrics on (http://\S+)")


async def start(tmp_path: Path, world: World, database_url: str) -> Process:
    env = clean_env(**world.fake.env()) | {
        "DATABASE_URL": database_url,
        "HTTP_ADDRESS": "127.0.0.1:0",
        "LOG_LEVEL": "INFO",
    }
    return await Process.spawn(
        ["-m", "bot"], log_path=tmp_path / "bot.log", label="bot", env=env, cwd=tmp_path,
        stdout_to_log=True,
    )  # fmt: skip


async def served_at(bot: Process) -> str:
    await until(lambda: SERVED.search(bot.log) is not None or bot.proc.returncode is not None,
                30, "the HTTP server")  # fmt: skip
    found = SERVED.search(bot.log)
    assert found is not None, bot.log
    return found.group(1)


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        return resp.status, await resp.text()


async def waiting_page(base: str, bot: Process, tries: int) -> str:
    """``/healthz`` once the bot has found the database unavailable ``tries`` times."""
    page = ""

    async def tried() -> bool:
        nonlocal page
        assert bot.proc.returncode is None, bot.log
        status, page = await get(f"{base}/healthz")
        return status == 503 and f"(tried {times};" in page

    times = "once" if tries == 1 else f"{tries} times"

    await until(tried, 30, f"{tries} tries", interval=0.1)
    return page


def waiting_lines(bot: Process) -> list[str]:
    return [line for line in bot.log.splitlines() if f" {WAITING} " in line]


async def carries_on(world: World, bot: Process, base: str) -> None:
    """Connected to Discord, healthy, answering and writing to the database."""
    await until(lambda: " connected as " in bot.log or bot.proc.returncode is not None, 30,
                "the bot to connect")  # fmt: skip
    assert bot.proc.returncode is None, bot.log
    assert await get(f"{base}/healthz") == (200, "ok\n")
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "schedule",
        {"when": "in 1h", "message": "After the wait", "channel": world.news},
    )  # fmt: skip
    answer = await h.response(timeout=10)
    assert "Scheduled announcement **#1**" in (answer.content or ""), answer.content


@contextlib.asynccontextmanager
async def relay(port: int, to_host: str, to_port: int) -> AsyncIterator[None]:
    """A TCP relay on 127.0.0.1:``port`` to ``to_host:to_port`` (the database server, come
    up at last where the bot looks for it)."""
    links: list[asyncio.StreamWriter] = []

    async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        dst.close()

    async def link(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(to_host, to_port)
        links.extend((writer, up_writer))
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(link, "127.0.0.1", port)
    try:
        yield
    finally:
        server.close()
        for writer in links:
            writer.close()
        await server.wait_closed()


async def test_a_server_not_listening_yet_is_waited_for_then_used(
    world: World, tmp_path: Path
) -> None:
    server = require_postgres()
    name = f"crier_test_wait_{secrets.token_hex(6)}"
    real = urlsplit(server)
    port = free_port()  # where the bot looks for the server: nothing there yet
    elsewhere = f"{real.username}@127.0.0.1:{port}"
    url = urlunsplit(urlsplit(with_database(server, name))._replace(netloc=elsewhere))
    conn = await asyncpg.connect(server)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    try:
        async with procs() as started:
            bot = await start(tmp_path, world, url)
            started.append(bot)
            base = await served_at(bot)
            page = await waiting_page(base, bot, tries=2)
            assert page.startswith(f"{WAITING} {url}: "), page
            assert "Connect call failed" in page
            # One line said it; the second try said nothing more.
            [line] = waiting_lines(bot)
            assert " WARNING " in line
            assert f"{WAITING} {url}: " in line
            # Only /healthz and /metrics answer meanwhile; no request reached Discord.
            assert (await get(f"{base}/metrics"))[0] == 200
            status, text = await get(f"{base}/anything")
            assert (status, text.split(":")[0]) == (503, "crier is starting")
            assert world.fake.requests == []
            async with relay(port, real.hostname or "127.0.0.1", real.port or 5432):
                await carries_on(world, bot, base)
                assert len(waiting_lines(bot)) == 1
                assert f"the database {url} answers: carrying on" in bot.log
                assert await bot.terminate() == 0, bot.log
    finally:
        await drop_database(server, name)


async def test_a_database_not_created_yet_is_waited_for_then_used(
    world: World, tmp_path: Path
) -> None:
    server = require_postgres()
    name = f"crier_test_wait_{secrets.token_hex(6)}"
    url = with_database(server, name)
    try:
        async with procs() as started:
            bot = await start(tmp_path, world, url)
            started.append(bot)
            base = await served_at(bot)
            page = await waiting_page(base, bot, tries=2)
            assert page.startswith(f'{WAITING} {url}: database "{name}" does not exist'), page
            [line] = waiting_lines(bot)
            conn = await asyncpg.connect(server)
            try:
                await conn.execute(f'CREATE DATABASE "{name}"')
            finally:
                await conn.close()
            await carries_on(world, bot, base)
            assert waiting_lines(bot) == [line]
            assert await bot.terminate() == 0, bot.log
    finally:
        await drop_database(server, name)


async def test_sigterm_while_waiting_is_a_clean_exit(world: World, tmp_path: Path) -> None:
    url = f"postgresql://crier@127.0.0.1:{free_port()}/crier"
    async with procs() as started:
        bot = await start(tmp_path, world, url)
        started.append(bot)
        await waiting_page(await served_at(bot), bot, tries=1)
        bot.proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(bot.proc.wait(), 30) == 0, bot.log
    assert "stopped while waiting for the database" in bot.log
    assert "Traceback" not in bot.log
    assert world.fake.requests == []


async def test_a_role_the_database_refuses_is_one_line_and_status_2(tmp_path: Path) -> None:
    server = require_postgres()
    role = f"crier_no_such_role_{secrets.token_hex(4)}"
    url = server.replace(f"{urlsplit(server).username}@", f"{role}@", 1)
    assert role in url
    run = await run_bot(tmp_path, clean_env(DISCORD_TOKEN=TOKEN, DATABASE_URL=url))
    assert run.returncode == 2, run.stderr
    line = assert_one_clear_line(run, f'role "{role}" does not exist', "DATABASE_URL")
    assert TOKEN not in line


@pytest.mark.parametrize(
    "url",
    ["postgresql://crier:s3cret@db:port/crier", "postgresql://crier:s3cret@[::1/crier"],
)
async def test_a_url_that_cannot_be_parsed_is_one_line_and_status_2(
    tmp_path: Path, url: str
) -> None:
    run = await run_bot(tmp_path, clean_env(DISCORD_TOKEN=TOKEN, DATABASE_URL=url))
    assert run.returncode == 2
    line = assert_one_clear_line(run, "DATABASE_URL is not a valid URL")
    assert "s3cret" not in line
