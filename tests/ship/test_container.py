"""crier's container image and compose.yaml, run as a self-hoster runs them, against the fake
Discord: built from this tree with the Dockerfile as it is (see ``tests/ship/engine.py`` for
the engine and the stand-in base images), then

- the image alone on the host's network, its data in a volume: it runs as its own user,
  syncs its commands, answers ``/schedule``, serves ``/healthz`` and passes its own health
  check, stops on SIGTERM with status 0 within the stop timeout, and starts again on its
  data (the commands not synced again, the announcement posted once);
- compose.yaml with PostgreSQL, the file itself (copied beside a ``.env`` as the README
  says; an override names the images built here instead of building again and of the
  official PostgreSQL, and checks the bot's health every 2 s instead of 30): the bot
  starts once PostgreSQL's health check passes, publishes no port, restarts unless
  stopped, and keeps its announcements in PostgreSQL across a stop and a start.

They install packages and build images (a few minutes cold, about one warm), so they run in
``.ci/run``'s ``container`` step (``scripts/container-test``), which sets
``CRIER_CONTAINER_TEST=1``; elsewhere they are skipped."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import secrets
import shutil
import time
from typing import TYPE_CHECKING, Any, TypeVar

import aiohttp
import pytest

from tests.bot.conftest import add_world
from tests.fakediscord import FakeDiscord
from tests.scheduler.test_postgres_unavailable import free_port
from tests.ship.engine import Engine, engine
from tests.support.processes import ROOT, until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator
    from pathlib import Path

    from tests.bot.conftest import World

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("CRIER_CONTAINER_TEST") != "1",
        reason="the container tests run in .ci/run's container step (CRIER_CONTAINER_TEST=1): "
        "they install Docker from Debian and build images",
    ),
    # The first test builds the images (the base alone takes minutes the first time).
    pytest.mark.timeout(1800),
]

T = TypeVar("T")

STOP_TIMEOUT = "30"
"""docker stop's, and compose.yaml's stop_grace_period."""


@pytest.fixture(scope="module")
def images() -> Iterator[Engine]:
    """The daemon, the base images, and crier's image built from this tree."""
    with engine() as eng:
        eng.ensure_base()
        eng.ensure_postgres()
        tag = eng.build_crier(f"crier-test:{secrets.token_hex(4)}")
        size, base = (eng.inspect(image)["Size"] for image in (tag, eng.base))
        print(
            f"\ncontainer builds (s): {eng.timings}; crier's image: {size / 1e6:.0f} MB, "
            f"{(size - base) / 1e6:.0f} MB over its base"
        )
        try:
            yield eng
        finally:
            eng.docker("rmi", tag, check=False)


@pytest.fixture
def crier_image(images: Engine) -> str:
    tags = [t for t in images.docker("images", "--format", "{{.Repository}}:{{.Tag}}",
                                     "crier-test").split() if t]  # fmt: skip
    assert tags, "crier's image was not built"
    return tags[0]


async def in_thread(fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` (the engine's commands block) off the event loop the fake Discord runs on."""
    return await asyncio.to_thread(fn, *args)


async def logged(eng: Engine, container: str, text: str, count: int = 1) -> str:
    """The container's log once it holds ``text`` ``count`` times (fails if it stops)."""
    log = ""

    async def there() -> bool:
        nonlocal log
        log = await in_thread(eng.logs, container)
        state = (await in_thread(eng.inspect, container))["State"]
        assert state["Running"] or state["Restarting"], f"{container} stopped:\n{log}"
        return log.count(text) >= count

    try:
        await until(there, 120, f"{text!r} in {container}'s log", interval=0.5)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{log}") from None
    return log


async def healthy(eng: Engine, container: str) -> None:
    """The image's own health check (``crier health``) passed."""

    async def passed() -> bool:
        health = (await in_thread(eng.inspect, container))["State"]["Health"]
        assert health["Status"] != "unhealthy", health
        return bool(health["Status"] == "healthy")

    await until(passed, 120, f"{container} healthy", interval=0.5)


async def answered(world: World, message: str) -> None:
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "schedule",
        {"when": "in 20s", "message": message, "channel": world.news},
    )  # fmt: skip
    answer = await h.response(timeout=30)
    assert "Scheduled announcement **#1**" in (answer.content or ""), answer.content


async def posted_once(world: World, message: str) -> None:
    fake = world.fake
    await fake.wait_until(lambda: fake.bot_messages(world.news), timeout=120, what="the post")
    assert [m.content for m in fake.bot_messages(world.news)] == [message]


async def stopped_cleanly(eng: Engine, container: str) -> None:
    """``docker stop`` (SIGTERM, then SIGKILL after the timeout): it exits 0 by itself."""
    await in_thread(eng.docker, "stop", "--time", STOP_TIMEOUT, container)
    state = (await in_thread(eng.inspect, container))["State"]
    assert (state["Running"], state["ExitCode"], state["OOMKilled"]) == (False, 0, False), state
    assert "shutting down" in await in_thread(eng.logs, container)


ABSENT = (
    "for c in gcc cc make pip; do command -v $c >/dev/null || echo $c; done; "
    "python -c 'import pytest' 2>/dev/null || echo pytest; "
    "[ -e /run/secrets/ca ] || echo /run/secrets/ca"
)
"""Prints each of them the image has not."""


async def test_the_image_on_the_host_network_keeps_its_data_across_a_restart(
    images: Engine, crier_image: str, world: World
) -> None:
    eng, fake = images, world.fake
    name = f"crier-test-{secrets.token_hex(4)}"
    port = free_port()
    env = fake.env() | {"HTTP_ADDRESS": f"127.0.0.1:{port}", "LOG_LEVEL": "INFO"}
    settings = [arg for key, value in env.items() for arg in ("--env", f"{key}={value}")]
    await in_thread(lambda: eng.docker(
        "run", "--detach", "--name", name, "--network", "host",
        "--volume", f"{name}:/data", "--stop-timeout", STOP_TIMEOUT,
        "--health-interval", "2s", *settings, crier_image,
    ))  # fmt: skip
    try:
        log = await logged(eng, name, " connected as ")
        assert " slash commands synced " in log
        assert fake.get_command("schedule") is not None
        # Its own user; the database where the image says, in the volume.
        uid = await in_thread(eng.docker, "exec", name, "id", "-u")
        assert uid.strip() == "10001"
        listing = await in_thread(eng.docker, "exec", name, "ls", "-n", "/data")
        assert " 10001 10001 " in listing
        assert "crier.db" in listing
        # Small: no compiler, no pip, no test tool; the build's secret in no layer.
        absent = await in_thread(eng.docker, "exec", name, "sh", "-c", ABSENT)
        assert absent.split() == ["gcc", "cc", "make", "pip", "pytest", "/run/secrets/ca"]

        await answered(world, "From the container")
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{port}/healthz") as resp,
        ):
            assert (resp.status, await resp.text()) == (200, "ok\n")
        await healthy(eng, name)

        await stopped_cleanly(eng, name)
        await in_thread(eng.docker, "start", name)
        log = await logged(eng, name, " connected as ", count=2)
        assert "slash commands unchanged since the last sync" in log.split("shutting down")[1]
        await posted_once(world, "From the container")
        await healthy(eng, name)
        await stopped_cleanly(eng, name)
    finally:
        await in_thread(lambda: eng.docker("rm", "--force", "--volumes", name, check=False))
        await in_thread(lambda: eng.docker("volume", "rm", name, check=False))


def started_and_healthy(eng: Engine, project: str, since: str) -> dict[str, int]:
    """When each container of ``project`` first started and first became healthy since
    ``since`` (the daemon's events, in nanoseconds), by ``"<container>: <event>"``."""
    out = eng.docker(
        "events", "--since", since, "--until", str(int(time.time()) + 1),
        "--filter", "type=container",
        "--filter", f"label=com.docker.compose.project={project}",
        "--format", "{{.TimeNano}}\t{{.Actor.Attributes.name}}: {{.Action}}",
    )  # fmt: skip
    first: dict[str, int] = {}
    for line in out.splitlines():
        stamp, what = line.split("\t", 1)
        first.setdefault(what, int(stamp))
    return first


def bridge_gateway(network: dict[str, Any]) -> str:
    """This machine's address on a docker network: its IPAM gateway, or, where the daemon
    does not report one (Docker 28 leaves it out of the default bridge's IPAM config), the
    first address of its subnet, which is the one the daemon gives the bridge."""
    config = network["IPAM"]["Config"][0]
    gateway = config.get("Gateway")
    if gateway:
        return str(gateway)
    return str(next(ipaddress.ip_network(config["Subnet"]).hosts()))


@pytest.fixture
async def bridged_world(images: Engine) -> AsyncIterator[World]:
    """The fake Discord on the docker bridge's address of this machine, where containers on
    a compose network of their own reach it."""
    bridge = bridge_gateway(images.inspect("bridge"))
    fake = FakeDiscord()
    fake.host = bridge
    async with fake:
        yield add_world(fake, "Crier Compose", admin="alice", member="bob")


async def test_compose_with_postgresql(
    images: Engine, crier_image: str, bridged_world: World, tmp_path: Path
) -> None:
    eng, world = images, bridged_world
    project = f"crier-test-{secrets.token_hex(4)}"
    shutil.copy(ROOT / "compose.yaml", tmp_path / "compose.yaml")
    settings = world.fake.env() | {
        "POSTGRES_PASSWORD": secrets.token_hex(12),
        "LOG_LEVEL": "INFO",
    }
    (tmp_path / ".env").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    (tmp_path / "compose.override.yaml").write_text(
        f"services:\n"
        f"  db:\n    image: {eng.postgres}\n"
        f"  crier:\n    image: {crier_image}\n    healthcheck:\n      interval: 2s\n"
    )
    files = ("--file", "compose.yaml", "--file", "compose.override.yaml", "--project-name", project)
    since = str(int(time.time()) - 1)
    try:
        await in_thread(lambda: eng.compose(tmp_path, *files, "up", "--detach", "--no-build"))
        db, bot = f"{project}_db_1", f"{project}_crier_1"
        log = await logged(eng, bot, " connected as ")
        # Started once PostgreSQL's health check passed (the daemon's own record of both),
        # so it never had to wait.
        events = await in_thread(lambda: started_and_healthy(eng, project, since))
        assert events[f"{bot}: start"] > events[f"{db}: health_status: healthy"], events
        assert "waiting for the database" not in log
        for container in (db, bot):
            info = await in_thread(eng.inspect, container)
            assert info["HostConfig"]["RestartPolicy"]["Name"] == "unless-stopped"
            assert not info["HostConfig"]["PortBindings"], info["HostConfig"]["PortBindings"]
            assert all(v is None for v in info["NetworkSettings"]["Ports"].values())
        assert (await in_thread(eng.inspect, bot))["Config"]["User"] == "crier"

        await answered(world, "From compose")
        await healthy(eng, bot)
        await stopped_cleanly(eng, bot)
        await in_thread(lambda: eng.compose(tmp_path, *files, "start"))
        log = await logged(eng, bot, " connected as ", count=2)
        assert "slash commands unchanged since the last sync" in log.split("shutting down")[1]
        await posted_once(world, "From compose")
        await healthy(eng, bot)
    finally:
        await in_thread(lambda: eng.compose(
            tmp_path, *files, "down", "--volumes", "--timeout", STOP_TIMEOUT, check=False,
        ))  # fmt: skip
