"""``crier health``: the container's health check asks the running bot's ``/healthz`` at
``HTTP_ADDRESS`` (an address on every interface asked on loopback) and says so by its exit
status: 0 for 200, 1 for 503 (with the reasons) or no answer, 2 for an unreadable address.
It runs every 30 s: it loads the settings alone, never the Discord client."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

import pytest

from bot.app import health
from tests.bot.test_config import clean_env
from tests.scheduler.test_postgres_unavailable import free_port

if TYPE_CHECKING:
    from pathlib import Path

    from bot.app import Crier
    from tests.bot.conftest import CrierFactory, World


@pytest.fixture
async def served(crier_factory: CrierFactory) -> Crier:
    app = await crier_factory(http_address=("127.0.0.1", 0))
    assert app.web is not None
    return app


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="crier health")
    health.add_arguments(parser)
    return parser.parse_args(argv)


async def check(monkeypatch: pytest.MonkeyPatch, address: str | None, *argv: str) -> int:
    if address is None:
        monkeypatch.delenv("HTTP_ADDRESS", raising=False)
    else:
        monkeypatch.setenv("HTTP_ADDRESS", address)
    # The check blocks (it is a process of its own in a container): off the bot's loop.
    return await asyncio.to_thread(health.run, parse(*argv))


async def test_healthy_then_unhealthy_with_the_reason_then_healthy(
    world: World,
    served: Crier,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env
    assert served.web is not None
    # Served on 127.0.0.1; an HTTP_ADDRESS on every interface is asked on loopback.
    for address in (f"127.0.0.1:{served.web.port}", f"0.0.0.0:{served.web.port}"):
        assert await check(monkeypatch, address) == 0
        assert capsys.readouterr().out == "ok\n"

    gateway = world.fake.gateway
    gateway.refuse_connections = True
    assert await world.fake.disconnect_gateway() == 1
    await world.fake.wait_until(lambda: gateway.refused_count > 0, what="a refused reconnect")
    assert await check(monkeypatch, f"0.0.0.0:{served.web.port}") == 1
    err = capsys.readouterr().err
    url = f"http://127.0.0.1:{served.web.port}/healthz"
    assert err == f"crier: {url} answered 503: gateway not connected\n"

    gateway.refuse_connections = False
    await world.fake.wait_until(
        lambda: served.shards.problems() == [] and gateway.connected_sessions,
        timeout=30,
        what="the client to reconnect",
    )
    assert await check(monkeypatch, f"127.0.0.1:{served.web.port}") == 0


async def test_no_answer_no_address_and_a_bad_one_are_each_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env
    port = free_port()
    assert await check(monkeypatch, f"[::]:{port}", "--timeout", "5") == 1
    assert capsys.readouterr().err.startswith(f"crier: no answer from http://[::1]:{port}/healthz")
    assert await check(monkeypatch, None) == 1
    assert "HTTP_ADDRESS is not set" in capsys.readouterr().err
    assert await check(monkeypatch, "127.0.0.1:0") == 1
    assert "port 0" in capsys.readouterr().err
    assert await check(monkeypatch, "localhost") == 2
    assert "HTTP_ADDRESS must be HOST:PORT" in capsys.readouterr().err


async def test_it_never_loads_the_discord_client(tmp_path: Path) -> None:
    """It runs every 30 s in a container: the command line and the settings, nothing more
    (importing the bot's client costs about 1.5 s of CPU)."""
    script = (
        "import sys; from bot.app import cli; status = cli.main(['health'], prog='crier'); "
        "print(status, sorted(m for m in ('discord', 'aiohttp', 'bot.app.crier') "
        "if m in sys.modules))"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, cwd=tmp_path,
        env=clean_env(HTTP_ADDRESS=f"127.0.0.1:{free_port()}"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert out.decode() == "1 []\n", err.decode()
