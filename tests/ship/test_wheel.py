"""The wheel, as a self-hoster installs it (``pipx install``, ``uv tool install``): built from
this tree, installed into a virtualenv of its own apart from the source, and its ``crier``
command run from another directory. ``crier --help`` names itself, and every subcommand the
README shows works: the bot itself against the fake Discord, ``limits``, ``backup``,
``export``, ``import`` and ``migrate`` (its last step, which needs a PostgreSQL server: the
test is skipped there without one, saying so).

Offline, as CI must be: the wheel is built with ``pip wheel --no-build-isolation --no-index``
(the build backend, hatchling, is in the dev virtualenv) and installed with its extras
(``postgres``, ``metrics``) by ``pip install --no-index --find-links`` from wheels of the dev
virtualenv's own distributions (``scripts/scheduler_alone.py`` makes them): pip resolves
what the wheel declares from those alone, so a dependency it forgot to declare is missing
there and the bot fails. Nothing of this tree is on the new environment's path (checked
below): ``bot`` and ``scheduler`` come from the wheel."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import signal
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from bot.app.cli import SUBCOMMANDS
from tests.fakediscord import Permissions as P
from tests.scheduler.pg import fresh_test_database
from tests.ship.conftest import outside_env
from tests.support.processes import ROOT, Process, procs, until

if TYPE_CHECKING:
    from types import ModuleType

    from tests.bot.conftest import World
    from tests.fakediscord import FakeDiscord


EXTRAS = ("postgres", "metrics")
"""What a self-hoster installs it with (README)."""


@dataclass(frozen=True)
class Installed:
    """The wheel built from this tree, and the virtualenv it is installed in."""

    wheel: Path
    venv: Path

    @property
    def crier(self) -> Path:
        return self.venv / "bin" / "crier"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def build(*argv: str | Path) -> None:
    done = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def scheduler_alone() -> ModuleType:
    """``scripts/scheduler_alone.py``, for its wheels of the dev virtualenv's distributions."""
    spec = importlib.util.spec_from_file_location(
        "scheduler_alone", ROOT / "scripts" / "scheduler_alone.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    alone = scheduler_alone()
    base = tmp_path_factory.mktemp("wheel")
    dist, wheels, venv = base / "dist", base / "wheels", base / "venv"
    pip = (sys.executable, "-m", "pip", "--disable-pip-version-check")
    build(*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", dist, ROOT)
    [wheel] = dist.glob("crier-*.whl")
    # Its dependencies as it declares them (with the extras), from the dev virtualenv.
    wheels.mkdir()
    roots = [(r, frozenset(EXTRAS)) for r in alone.requirements_of(wheel)]
    for needed in alone.needed(roots).values():
        alone.repack(needed, wheels)
    build(sys.executable, "-m", "venv", "--without-pip", venv)
    done = subprocess.run(
        [*pip, "--python", venv / "bin" / "python", "install", "--no-index",
         "--find-links", wheels, f"{wheel}[{','.join(EXTRAS)}]"],
        capture_output=True, text=True, timeout=300, check=False, env=alone.pip_env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return Installed(wheel, venv)


async def crier(installed: Installed, cwd: Path, *argv: str, **env: str) -> tuple[int, str, str]:
    """``crier ARGV`` in ``cwd``, with ``env`` as its only crier settings."""
    proc = await asyncio.create_subprocess_exec(
        installed.crier, *argv, cwd=cwd, env=outside_env(**env),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def tracked(*folders: str) -> list[str]:
    """The files git tracks under ``folders`` of this tree."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--", *folders],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [name for name in out.split("\0") if name]


def test_the_wheel_carries_every_file_of_both_packages_and_every_migration(
    installed: Installed,
) -> None:
    with zipfile.ZipFile(installed.wheel) as whl:
        names = set(whl.namelist())
        [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = whl.read(entry_points).decode()
    packaged = tracked("bot", "scheduler")
    migrations = tracked("migrations")
    # The packages' code, catalogs (.po), templates, static files and SQL.
    assert any(name.endswith(".po") for name in packaged)
    assert any("/templates/" in name for name in packaged)
    assert sorted(set(packaged) - names) == []
    # Each component's migrations, both dialects, inside its package.
    assert len(migrations) > 4
    inside = [m.replace("migrations/scheduler/", "scheduler/_migrations/", 1) for m in migrations]
    inside = [m.replace("migrations/bot/", "bot/_migrations/", 1) for m in inside]
    assert sorted(set(inside) - names) == []
    assert "crier = bot.__main__:main" in scripts


WHERE = "import sys, bot, scheduler; print(bot.__file__, scheduler.__file__, *sys.path, sep='\\n')"


async def test_crier_names_itself_and_runs_from_anywhere_off_the_wheel(
    installed: Installed, tmp_path: Path
) -> None:
    status, out, err = await crier(installed, tmp_path, "--help")
    assert status == 0, err
    assert out.startswith("usage: crier "), out
    for sub in SUBCOMMANDS:
        assert f"    {sub.name} " in out, sub.name
    status, out, err = await crier(installed, tmp_path, "limits", "--guild", "x")
    assert status == 2
    assert err.startswith("usage: crier limits"), err
    # What runs is the wheel's code: the source tree is nowhere on the path.
    proc = await asyncio.create_subprocess_exec(
        installed.python, "-c", WHERE, cwd=tmp_path, env=outside_env(),
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out_bytes, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0
    bot_file, scheduler_file, *path = out_bytes.decode().splitlines()
    assert Path(bot_file).is_relative_to(installed.venv)
    assert Path(scheduler_file).is_relative_to(installed.venv)
    assert str(ROOT) not in path


async def test_the_installed_bot_runs_and_every_subcommand_works(
    installed: Installed, world: World, tmp_path: Path
) -> None:
    fake = world.fake
    here = tmp_path / "elsewhere"
    here.mkdir()
    db = here / "crier.db"
    env = fake.env() | {"DATABASE_URL": f"sqlite:///{db}"}
    async with procs() as started:
        bot = await Process.spawn(
            [], program=installed.crier, log_path=tmp_path / "bot.log", label="crier",
            env=outside_env(**env), cwd=here, stdout_to_log=True,
        )  # fmt: skip
        started.append(bot)
        await connected_and_answering(fake, world, bot)
        assert await bot.terminate() == 0, bot.log
    guild = str(world.guild.id)

    status, out, err = await crier(installed, here, "limits", "--guild", guild,
                                   "--announcements", "7", **env)  # fmt: skip
    assert status == 0, err
    assert "announcements: 7 (set for this server)" in out

    status, out, err = await crier(installed, here, "backup", "copy.db", **env)
    assert status == 0, err
    assert (here / "copy.db").is_file()

    status, out, err = await crier(installed, here, "export", "--guild", guild, "--out", "-",
                                   **env)  # fmt: skip
    assert status == 0, err
    exported = json.loads(out)
    assert [a["text"] for a in exported["announcements"]] == ["From the wheel"]

    other = fake.add_guild(name="Other", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES)
    other.add_channel("news")
    (here / "export.json").write_text(out)
    status, out, err = await crier(installed, here, "import", "export.json", "--guild",
                                   str(other.id), "--confirm", **env)  # fmt: skip
    assert status == 0, err + out
    assert out.startswith("Imported 1 announcement and 0 templates from export.json"), out

    # The backup (a stopped installation's database) moved to PostgreSQL, and read there.
    async with fresh_test_database("migrate, the last step, needs a PostgreSQL server") as target:
        status, out, err = await crier(installed, here, "migrate", "--from",
                                       f"sqlite:///{here / 'copy.db'}", "--to", target)  # fmt: skip
        assert status == 0, err
        assert "The source was only read" in out
        # Each table counted and checksummed in the target: the announcement arrived.
        assert any(line.split()[:2] == ["bot_announcements", "1"] and line.endswith(" ok")
                   for line in out.splitlines()), out  # fmt: skip


async def connected_and_answering(fake: FakeDiscord, world: World, bot: Process) -> None:
    """The bot synced its commands, translated from the wheel's catalogs, and answers."""
    await until(lambda: " connected as " in bot.log or bot.proc.returncode is not None, 30,
                "the bot connected")  # fmt: skip
    assert bot.proc.returncode is None, bot.log
    command = fake.get_command("schedule")
    assert command is not None
    assert command.raw["name_localizations"]["de"] != "schedule"
    h = await fake.invoke_command(
        world.guild, world.general, world.admin, "schedule",
        {"when": "in 1h", "message": "From the wheel", "channel": world.news},
    )  # fmt: skip
    answer = await h.response(timeout=10)
    assert "Scheduled announcement **#1**" in (answer.content or ""), answer.content
    bot.proc.send_signal(signal.SIGTERM)
