"""``python -m bot export --guild ID``: the operator's export writes what ``/export`` writes
(events included), read from the database without starting a scheduler, on SQLite and
PostgreSQL; an unknown server is refused in words."""

from __future__ import annotations

import asyncio
import json
import re
from typing import TYPE_CHECKING, Any

from bot.app import cli
from tests.bot.conftest import CrierFactory, World, db_snapshot, run_command
from tests.bot.test_delivery import idle
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


async def schedule(world: World, **options: Any) -> None:
    cb = await run_command(world, "schedule", channel=world.news, **options)
    assert re.search(r"Scheduled announcement \*\*#(\d+)\*\*", cb.content or ""), cb.content


async def test_the_operators_export_is_what_export_writes(
    world: World,
    crier_factory: CrierFactory,
    db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world.guild.set_bot_permissions(
        P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.EMBED_LINKS | P.CREATE_EVENTS
    )
    crier = await crier_factory(database_url=db_url)
    await schedule(world, when="in 2h", message="One-off {time}", title="Heads up")
    await schedule(world, repeat="daily at 09:00", timezone="Europe/Paris", message="Standup",
                   event=True, event_location="Room 4", event_minutes=15)  # fmt: skip
    h = await world.fake.invoke_command(world.guild, world.general, world.admin, "export")
    [file] = (await h.final_message(timeout=20)).attachments
    from_discord = json.loads(file.data)
    await idle(crier)  # the event's job has run
    before = await db_snapshot(crier)

    monkeypatch.chdir(tmp_path)
    for name, value in {**world.fake.env(), "DATABASE_URL": db_url}.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "export.json"
    status = await asyncio.to_thread(
        cli.main, ["export", "--guild", str(world.guild.id), "--out", str(out)]
    )

    assert status == 0
    from_cli = json.loads(await asyncio.to_thread(out.read_bytes))
    for doc in (from_discord, from_cli):
        doc.pop("exported_at")
    assert from_cli == from_discord
    assert from_cli["announcements"][1]["event"] == {
        "minutes": 15, "location": "Room 4", "channel": None,
    }  # fmt: skip
    assert await db_snapshot(crier) == before  # it only read


async def test_an_unknown_server_is_refused_in_words(
    world: World,
    crier_factory: CrierFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await crier_factory()
    monkeypatch.chdir(tmp_path)
    for name, value in world.fake.env().items():
        monkeypatch.setenv(name, value)
    # No database there (a typo): refused, and none is made.
    typo = tmp_path / "typo.db"
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{typo}")
    status = await asyncio.to_thread(cli.main, ["export", "--guild", "123456789012345678"])
    assert status == 1
    assert f"no database at {typo}" in capsys.readouterr().err
    assert not await asyncio.to_thread(typo.exists)
    # The bot's database, but a server Discord does not know.
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'crier.db'}")
    status = await asyncio.to_thread(cli.main, ["export", "--guild", "123456789012345678"])
    assert status == 1
    assert "knows no server 123456789012345678" in capsys.readouterr().err
    assert not await asyncio.to_thread(lambda: list(tmp_path.glob("crier-*.json")))
