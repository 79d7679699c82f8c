"""``python -m bot limits``: an operator raises, shows and resets one server's limits on the
database the running bot uses (never Discord); the bot's next check follows. A bad value is
refused with the reason and writes nothing."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

import pytest

from bot.app import guild_limits
from tests.bot.conftest import World, db_snapshot
from tests.bot.test_leaving import make_crier  # noqa: F401 (a fixture)
from tests.bot.test_limits import schedule_answer, scheduled

if TYPE_CHECKING:
    from pathlib import Path

    from tests.bot.test_leaving import MakeCrier

# ruff: noqa: F811 (make_crier: the fixture, as each test's argument)


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bot limits")
    guild_limits.add_arguments(parser)
    return parser.parse_args(argv)


async def limits_command(*argv: str) -> int:
    # The command runs its own event loop, as it does in its own process.
    return await asyncio.to_thread(guild_limits.run, parse(*argv))


async def test_an_operator_raises_shows_and_resets_a_servers_limits(
    world: World,
    make_crier: MakeCrier,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    crier = await make_crier(max_announcements=1)
    monkeypatch.chdir(tmp_path)  # no .env
    monkeypatch.setenv("DATABASE_URL", crier.settings.database_url)
    monkeypatch.setenv("MAX_ANNOUNCEMENTS_PER_GUILD", "1")
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)  # not needed
    guild = str(world.guild.id)

    assert await limits_command("--guild", guild, "--announcements", "3", "--files-mb", "75") == 0
    out = capsys.readouterr().out
    assert f"Limits of server {guild} set:" in out
    assert "announcements: 3 (set for this server)" in out
    assert "files-mb: 75 MiB (set for this server)" in out
    assert "commands-per-minute: 20 (COMMANDS_PER_MINUTE)" in out
    for _ in range(3):  # the running bot's next checks follow
        assert scheduled((await schedule_answer(world))[0])
    assert "limit of 3" in (await schedule_answer(world))[0]

    before = await db_snapshot(crier)
    assert await limits_command("--guild", guild, "--announcements", "lots") == 2
    err = capsys.readouterr().err
    assert "announcements must be a whole number, got 'lots'; nothing was changed" in err, err
    assert await db_snapshot(crier) == before

    assert await limits_command("--guild", guild, "--announcements", "default") == 0
    out = capsys.readouterr().out
    assert "announcements: 1 (MAX_ANNOUNCEMENTS_PER_GUILD)" in out
    assert "files-mb: 75 MiB (set for this server)" in out  # the others kept
    assert await limits_command("--guild", guild) == 0  # shows them, writes nothing
    assert f"Limits of server {guild} are:" in capsys.readouterr().out
    assert "limit of 1" in (await schedule_answer(world))[0]


def test_a_bad_guild_id_is_refused_with_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse("--guild", "general")
    assert exit_.value.code == 2
    assert "--guild must be a whole number" in capsys.readouterr().err


def test_a_missing_sqlite_file_is_refused_not_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo in DATABASE_URL (or a bot never started) is refused as export and import refuse
    it, instead of a new empty database holding the limits the bot never reads."""
    monkeypatch.chdir(tmp_path)  # no .env
    db = tmp_path / "typo.db"
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{db}")
    assert guild_limits.run(parse("--guild", "123456789012345678", "--announcements", "5")) == 1
    err = capsys.readouterr().err
    assert f"crier: no database at {db} (DATABASE_URL)" in err, err
    assert list(tmp_path.iterdir()) == []
