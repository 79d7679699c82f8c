"""Settings and start-up: the environment then ``.env``; every bad value is one clear line and
a non-zero exit (never a traceback); the token is never logged or echoed.

The subprocess tests run ``python -m bot`` exactly as a self-hoster would, in a temporary
working directory, with an environment that holds nothing of the caller's crier settings."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from bot.app import RedactingFormatter
from bot.config import (
    DEFAULT_API_BASE,
    DEFAULT_DATABASE_URL,
    ConfigError,
    load_settings,
)
from bot.config import (
    SETTINGS as SETTINGS_TABLE,
)
from tests.fakediscord import FakeDiscord
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GaBcDe.abcdefghijklmnopqrstuvwxyz0123456789AB"
SETTINGS = tuple(s.env for s in SETTINGS_TABLE)
"""Every crier setting (the subprocess tests run without any of the caller's)."""


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without any crier setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    lines: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.lines = [line for line in self.stderr.splitlines() if line.strip()]


async def run_bot(cwd: Path, env: Mapping[str, str], timeout: float = 30) -> Run:  # noqa: ASYNC109
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", cwd=cwd, env=dict(env),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return Run(proc.returncode, out.decode(), err.decode())


def assert_one_clear_line(run: Run, *needles: str) -> str:
    assert run.returncode != 0
    assert "Traceback" not in run.stderr + run.stdout
    assert run.stdout == ""
    assert len(run.lines) == 1, run.stderr
    [line] = run.lines
    assert line.startswith("crier: ")
    for needle in needles:
        assert needle in line, line
    return line


# --- load_settings ------------------------------------------------------------------------------


def test_defaults() -> None:
    s = load_settings({"DISCORD_TOKEN": TOKEN}, env_file=None)
    assert s.token == TOKEN
    assert s.database_url == DEFAULT_DATABASE_URL
    assert s.database == ("sqlite", "data/crier.db")
    assert s.dev_guild_id is None
    assert s.log_level == "INFO"
    assert s.api_base == DEFAULT_API_BASE
    assert s.send_spacing == 1.5
    assert s.catch_up_window == 3600.0


def test_values_are_read() -> None:
    s = load_settings(
        {
            "DISCORD_TOKEN": f"  {TOKEN}\n",
            "DATABASE_URL": "postgresql://crier@db.example/crier",
            "DEV_GUILD_ID": "123456789012345678",
            "LOG_LEVEL": "debug",
            "DISCORD_API_BASE": "http://127.0.0.1:9999/api/v10/",
            "DISCORD_GATEWAY_URL": "ws://127.0.0.1:9999/",
            "SEND_SPACING_SECONDS": "0.5",
            "CATCH_UP_WINDOW_MINUTES": "10",
        },
        env_file=None,
    )
    assert s.token == TOKEN
    assert s.database == ("postgres", "postgresql://crier@db.example/crier")
    assert s.dev_guild_id == 123456789012345678
    assert s.log_level == "DEBUG"
    assert s.api_base == "http://127.0.0.1:9999/api/v10"
    assert s.send_spacing == 0.5
    assert s.catch_up_window == 600.0


def test_the_token_is_not_in_the_settings_repr() -> None:
    s = load_settings({"DISCORD_TOKEN": TOKEN}, env_file=None)
    assert TOKEN not in repr(s)
    assert TOKEN not in str(s)


def test_log_lines_never_carry_the_token() -> None:
    """Whatever logs it (an exception text, a library's debug line), the token is masked."""
    fmt = RedactingFormatter(TOKEN, "%(levelname)s %(message)s")
    record = logging.LogRecord(
        "discord.http", logging.DEBUG, __file__, 1, "headers: Bot %s", (TOKEN,), None
    )
    assert fmt.format(record) == "DEBUG headers: Bot [token]"


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("DISCORD_TOKEN", "", "DISCORD_TOKEN is not set"),
        ("DISCORD_TOKEN", "   ", "DISCORD_TOKEN is not set"),
        ("DISCORD_TOKEN", "Bot " + TOKEN, "DISCORD_TOKEN does not look like a bot token"),
        ("DISCORD_TOKEN", "short", "DISCORD_TOKEN does not look like a bot token"),
        ("DEV_GUILD_ID", "abc", "DEV_GUILD_ID must be a whole number, got 'abc'"),
        ("DEV_GUILD_ID", "0", "DEV_GUILD_ID must be at least 1"),
        ("LOG_LEVEL", "LOUD", "LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
        ("DATABASE_URL", "mysql://x", "DATABASE_URL must be sqlite:///PATH"),
        ("DATABASE_URL", "sqlite:///", "DATABASE_URL must be sqlite:///PATH"),
        ("DATABASE_URL", "postgresql:///crier", "DATABASE_URL has no host"),
        ("SEND_SPACING_SECONDS", "-1", "SEND_SPACING_SECONDS must be between 0 and 60, got -1"),
        ("SEND_SPACING_SECONDS", "fast", "SEND_SPACING_SECONDS must be a number"),
        ("CATCH_UP_WINDOW_MINUTES", "0", "CATCH_UP_WINDOW_MINUTES must be between"),
        ("DISCORD_API_BASE", "discord.com/api", "DISCORD_API_BASE must be a http or https URL"),
        ("DISCORD_GATEWAY_URL", "https://x", "DISCORD_GATEWAY_URL must be a ws or wss URL"),
    ],
)
def test_malformed_values_name_the_setting(name: str, value: str, says: str) -> None:
    env = {"DISCORD_TOKEN": TOKEN, name: value}
    with pytest.raises(ConfigError) as caught:
        load_settings(env, env_file=None)
    message = str(caught.value)
    assert says in message
    assert "\n" not in message
    assert TOKEN not in message  # a bad token is never echoed back


def test_the_body_limit_leaves_room_for_a_file_when_the_dashboard_is_served() -> None:
    """A request body no larger than a file an announcement may carry would refuse that
    file on the dashboard (413): said at start, naming both settings."""
    env = {"DISCORD_TOKEN": TOKEN, "FILE_MAX_MB": "12", "HTTP_MAX_BODY_MB": "10"}
    assert load_settings(env, env_file=None).http_max_body == 10 * 1024 * 1024  # no dashboard
    with pytest.raises(ConfigError) as caught:
        load_settings(env | {"DISCORD_CLIENT_SECRET": "s3cret-value"}, env_file=None)
    assert str(caught.value).startswith(
        "HTTP_MAX_BODY_MB (10) must be larger than FILE_MAX_MB (12)"
    )
    served = env | {"DISCORD_CLIENT_SECRET": "s3cret-value", "HTTP_MAX_BODY_MB": "13"}
    assert load_settings(served, env_file=None).http_max_body == 13 * 1024 * 1024


def test_env_file_is_read_and_the_environment_wins(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        f"# comment\nDISCORD_TOKEN={TOKEN}\nLOG_LEVEL=warning\nDEV_GUILD_ID=42\n"
        'DATABASE_URL="sqlite:///from/dotenv.db"\n'
    )
    s = load_settings({}, env_file=env_file)
    assert (s.token, s.log_level, s.dev_guild_id) == (TOKEN, "WARNING", 42)
    assert s.database == ("sqlite", "from/dotenv.db")
    s = load_settings({"LOG_LEVEL": "ERROR", "DEV_GUILD_ID": "7"}, env_file=env_file)
    assert (s.token, s.log_level, s.dev_guild_id) == (TOKEN, "ERROR", 7)
    # A missing .env is fine.
    assert load_settings({"DISCORD_TOKEN": TOKEN}, env_file=tmp_path / "nope").token == TOKEN


def test_the_example_env_file_loads_once_the_token_is_filled_in(tmp_path: Path) -> None:
    example = (ROOT / ".env.example").read_text()
    assert "\nDISCORD_TOKEN=\n" in example
    filled = example.replace("\nDISCORD_TOKEN=\n", f"\nDISCORD_TOKEN={TOKEN}\n")
    (tmp_path / ".env").write_text(filled)
    s = load_settings({}, env_file=tmp_path / ".env")
    assert s.token == TOKEN
    assert s.dev_guild_id is None
    assert s.database_url == DEFAULT_DATABASE_URL
    with pytest.raises(ConfigError, match="DISCORD_TOKEN is not set"):
        load_settings({}, env_file=ROOT / ".env.example")


def test_every_setting_is_in_the_example_env_file_with_its_default() -> None:
    """``.env.example`` lists each setting of the table once, set (or commented out) to the
    table's default, so the file and the code never disagree about a default."""
    lines = (ROOT / ".env.example").read_text().splitlines()
    for setting in SETTINGS_TABLE:
        written = [
            line.removeprefix("# ")
            for line in lines
            if line.removeprefix("# ").startswith(f"{setting.env}=")
        ]
        assert written == [f"{setting.env}={setting.default or ''}"], setting.env


# --- python -m bot: bad configuration -----------------------------------------------------------


async def test_missing_token_is_one_line_and_a_nonzero_exit(tmp_path: Path) -> None:
    run = await run_bot(tmp_path, clean_env())
    assert_one_clear_line(run, "DISCORD_TOKEN is not set", ".env")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DEV_GUILD_ID", "abc"),
        ("LOG_LEVEL", "LOUD"),
        ("DATABASE_URL", "mysql://x"),
        ("SEND_SPACING_SECONDS", "-1"),
    ],
)
async def test_malformed_setting_is_one_line_naming_it(
    tmp_path: Path, name: str, value: str
) -> None:
    run = await run_bot(tmp_path, clean_env(DISCORD_TOKEN=TOKEN, **{name: value}))
    line = assert_one_clear_line(run, name, value)
    assert TOKEN not in line
    assert not (tmp_path / "data").exists()  # nothing was created


async def test_dotenv_in_the_working_directory_is_read_and_the_environment_wins(
    tmp_path: Path,
) -> None:
    (tmp_path / ".env").write_text(f"DISCORD_TOKEN={TOKEN}\nLOG_LEVEL=LOUD\n")
    # The token comes from .env (else: "not set"), and so does the bad LOG_LEVEL.
    run = await run_bot(tmp_path, clean_env())
    assert_one_clear_line(run, "LOG_LEVEL", "LOUD")
    # The environment's LOG_LEVEL wins over .env's, so the next bad value is the one reported.
    run = await run_bot(tmp_path, clean_env(LOG_LEVEL="INFO", DEV_GUILD_ID="abc"))
    line = assert_one_clear_line(run, "DEV_GUILD_ID", "abc")
    assert "LOG_LEVEL" not in line


async def test_unreachable_discord_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on (bound, then released)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = clean_env(
        DISCORD_TOKEN=TOKEN,
        DISCORD_API_BASE=f"http://127.0.0.1:{port}/api/v10",
        DISCORD_GATEWAY_URL=f"ws://127.0.0.1:{port}/",
        DATABASE_URL=f"sqlite:///{tmp_path / 'crier.db'}",
        LOG_LEVEL="WARNING",
    )
    run = await run_bot(tmp_path, env)
    line = assert_one_clear_line(run, f"cannot reach Discord at http://127.0.0.1:{port}/api/v10")
    assert TOKEN not in line


# --- python -m bot against the fake Discord -----------------------------------------------------


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as f:
        guild = f.add_guild(name="Subprocess", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES)
        guild.add_channel("general")
        yield f


async def test_rejected_token_is_one_line_without_the_token(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    wrong = TOKEN[:-6] + "WRONG1"
    env = clean_env(**fake.env()) | {
        "DISCORD_TOKEN": wrong,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'crier.db'}",
        "LOG_LEVEL": "WARNING",
    }
    run = await run_bot(tmp_path, env)
    assert run.returncode == 1
    assert_one_clear_line(run, "Discord rejected DISCORD_TOKEN", "401")
    assert wrong not in run.stdout + run.stderr
    assert any(r.status == 401 for r in fake.requests)


async def test_rejected_token_at_default_log_level_has_no_traceback(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    wrong = TOKEN[:-6] + "WRONG2"
    env = clean_env(**fake.env()) | {
        "DISCORD_TOKEN": wrong,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'crier.db'}",
    }
    run = await run_bot(tmp_path, env)
    assert run.returncode == 1
    assert "Traceback" not in run.stderr
    assert wrong not in run.stdout + run.stderr
    ours = [line for line in run.lines if line.startswith("crier: ")]
    assert len(ours) == 1
    assert "Discord rejected DISCORD_TOKEN" in ours[0]
    assert [line for line in run.lines if " ERROR " in line or " CRITICAL " in line] == []


async def test_the_token_never_appears_in_debug_logs(fake: FakeDiscord, tmp_path: Path) -> None:
    """Run the real bot at DEBUG, use it, stop it with SIGTERM: the token is in no output."""
    guild = next(iter(fake.guilds.values()))
    admins = guild.add_role("admins", P.MANAGE_GUILD)
    admin = guild.add_member(name="alice", roles=[admins])
    general = guild.channel_named("general")
    env = clean_env(**fake.env()) | {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'crier.db'}",
        "LOG_LEVEL": "DEBUG",
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", cwd=tmp_path, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    assert proc.stdout is not None
    err_lines: list[str] = []
    connected = asyncio.Event()

    async def read_stderr() -> None:
        assert proc.stderr is not None
        async for raw in proc.stderr:
            line = raw.decode()
            err_lines.append(line)
            if "connected as" in line:
                connected.set()

    reader = asyncio.create_task(read_stderr())
    try:
        await asyncio.wait(
            {asyncio.create_task(connected.wait()), reader},
            timeout=20,
            return_when=asyncio.FIRST_COMPLETED,
        )
        assert connected.is_set(), "".join(err_lines)
        h = await fake.invoke_command(
            guild, general, admin, "schedule", {"when": "in 1h", "message": "secret-free"}
        )
        cb = await h.response(timeout=10)
        assert "Scheduled announcement **#1**" in (cb.content or "")
        proc.send_signal(signal.SIGTERM)
        out = await asyncio.wait_for(proc.stdout.read(), 20)
        await asyncio.wait_for(reader, 20)
        assert await asyncio.wait_for(proc.wait(), 20) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
    output = out.decode() + "".join(err_lines)
    # The run really logged at DEBUG, including the command and the shutdown.
    assert " DEBUG " in output
    assert "announcement 1 (#1) scheduled" in output
    assert "shutting down" in output
    assert "Traceback" not in output
    assert fake.token not in output
    secret = fake.token.rsplit(".", 1)[1]
    assert secret not in output
