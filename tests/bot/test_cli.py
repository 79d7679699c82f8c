"""``python -m bot``'s command line: no subcommand (or ``run``) runs the bot; anything it does
not know is refused with the usage and exit status 2, before Discord or a database is touched.

Each refusal runs in an environment that would start a working bot (the fake Discord's token
and address, a database path): the control test shows that environment does start one."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import TYPE_CHECKING

import pytest

from bot.app import cli
from tests.bot.test_config import clean_env

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from tests.fakediscord import FakeDiscord

REFUSED = [
    pytest.param(["frobnicate"], id="unknown-subcommand"),
    pytest.param(["--verbose"], id="unknown-option"),
    pytest.param(["run", "--now"], id="unknown-option-of-run"),
    pytest.param(["backup"], id="backup-without-path"),
    pytest.param(["backup", "a.db", "b.db"], id="backup-with-two-paths"),
    pytest.param(["backup", "--all", "a.db"], id="unknown-option-of-backup"),
]


async def run_args(cwd: Path, env: dict[str, str], *argv: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *argv, cwd=cwd, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def files_in(folder: Path) -> list[Path]:
    return list(folder.iterdir())


@pytest.mark.parametrize("argv", REFUSED)
async def test_what_it_does_not_know_is_refused_with_the_usage_and_status_2(
    fake: FakeDiscord, tmp_path: Path, argv: list[str]
) -> None:
    db = tmp_path / "crier.db"
    env = clean_env(**fake.env()) | {"DATABASE_URL": f"sqlite:///{db}"}
    status, out, err = await run_args(tmp_path, env, *argv)
    assert status == 2, err
    assert err.startswith("usage: python -m bot"), err
    assert "error:" in err
    assert "Traceback" not in err
    assert out == ""
    assert not db.exists(), "the database was opened"
    assert files_in(tmp_path) == [], "something was written"
    assert fake.requests == [], "Discord was called"


async def test_no_subcommand_and_run_both_start_the_bot(fake: FakeDiscord, tmp_path: Path) -> None:
    """The control of the refusals above: the same environment starts a bot that logs in."""
    for argv in ([], ["run"]):
        workdir = tmp_path / ("-".join(argv) or "none")
        workdir.mkdir()
        db = workdir / "crier.db"
        env = clean_env(**fake.env()) | {"DATABASE_URL": f"sqlite:///{db}"}
        seen = len(fake.requests)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", *argv, cwd=workdir, env=env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            await fake.wait_until(
                lambda s=seen: len(fake.requests) > s, timeout=30, what="the bot's first request"
            )
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
        assert db.exists()


async def test_help_lists_every_subcommand_and_exits_0(tmp_path: Path) -> None:
    status, out, err = await run_args(tmp_path, clean_env(), "--help")
    assert status == 0, err
    for sub in cli.SUBCOMMANDS:
        assert sub.name in out


def test_a_subcommand_is_registered_by_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """What another subcommand (``limits``, say) adds: one :class:`cli.Subcommand`; its module's
    ``add_arguments`` and ``run`` are found by name and run with the parsed arguments."""
    import types

    seen: list[argparse.Namespace] = []
    module = types.ModuleType("tests_cli_fake_subcommand")

    def add_arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--guild", type=int, required=True)

    def run(args: argparse.Namespace) -> int:
        seen.append(args)
        return 7

    module.add_arguments = add_arguments  # type: ignore[attr-defined]
    module.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    extra = cli.Subcommand("fake", "a test's subcommand", "Only a test's.", module.__name__)
    monkeypatch.setattr(cli, "SUBCOMMANDS", (*cli.SUBCOMMANDS, extra))
    assert cli.main(["fake", "--guild", "42"]) == 7
    assert seen[0].guild == 42
    assert cli.main(["fake"]) == 2
    assert len(seen) == 1
    assert cli.main(["fake", "--guild", "x"]) == 2
    assert len(seen) == 1


async def test_run_is_what_the_command_line_runs_without_a_subcommand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The settings are read first (a start refused for them never imports the bot), then
    the bot runs with them."""
    import bot.app.crier as crier
    import bot.config

    settings = object()
    ran: list[object] = []
    monkeypatch.setattr(bot.config, "load_settings", lambda: settings)
    monkeypatch.setattr(
        crier, "main", lambda argv=None, *, settings=None: ran.append(settings) or 0
    )
    assert cli.main([]) == 0
    assert cli.main(["run"]) == 0
    assert ran == [settings, settings]


async def test_a_start_refused_for_its_settings_never_imports_the_bot(tmp_path: Path) -> None:
    """The settings are read before discord.py and the bot are imported: a start they refuse
    (one line, exit status 2) costs a fraction of the bot's imports (a second or more of
    CPU, which the suite's many refused starts paid each time)."""
    code = (
        "import sys; from bot.app import cli; status = cli.main([]); "
        "print(status, 'discord' in sys.modules, 'bot.app.crier' in sys.modules)"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, cwd=tmp_path, env=clean_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert out.decode() == "2 False False\n", err.decode()
    assert err.decode().startswith("crier: DISCORD_TOKEN"), err.decode()


async def test_importing_the_main_module_runs_nothing(tmp_path: Path) -> None:
    """The ``crier`` console script imports ``bot.__main__`` and calls its ``main``: the
    import alone must not run the command line (it would run with whatever arguments the
    importer has, and exit)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import bot.__main__; print('imported')", cwd=tmp_path,
        env=clean_env(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert (proc.returncode, out.decode(), err.decode()) == (0, "imported\n", "")


def test_the_console_script_names_itself_crier(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import bot.__main__

    monkeypatch.setattr(sys, "argv", ["/somewhere/bin/crier", "--help"])
    assert bot.__main__.main() == 0
    assert capsys.readouterr().out.startswith("usage: crier [-h] SUBCOMMAND ...")
