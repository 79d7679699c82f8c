"""What an import costs in Discord calls: a file whose rows each want a Discord event asks
Discord for the server's events once per dry run (and once at its confirmation), not once
per row, through /import, its button and ``python -m bot import``; a server at Discord's
limit of events still refuses every such row. (The dashboard's upload: tests/web/
test_dashboard_quotas.py.) On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.requests.events import EVENT_LIMIT
from tests.bot.conftest import NOW, CrierFactory, World
from tests.bot.test_export_import import buttons, import_file
from tests.bot.test_import_cli import operator  # noqa: F401 (a fixture used here)
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from pathlib import Path

    from bot.app import Crier

ROWS = 40


def events_asked(world: World) -> int:
    """How many times the bot listed the server's scheduled events."""
    path = f"/guilds/{world.guild.id}/scheduled-events"
    return sum(r.method == "GET" and r.path == path for r in world.fake.requests)


def event_rows(world: World, count: int = ROWS) -> bytes:
    """An export file of ``count`` one-offs in #news, each with a Discord event."""
    rows = [
        {
            "key": f"crier:1:{i}", "number": i, "text": f"meetup {i}",
            "first": (NOW + timedelta(hours=2, minutes=i)).isoformat(), "timezone": "UTC",
            "destination": {"name": world.news.name},
            "event": {"minutes": 60, "location": "Town hall"},
        }
        for i in range(1, count + 1)
    ]  # fmt: skip
    return json.dumps({"version": 2, "announcements": rows}).encode()


@pytest.fixture
async def crier(world: World, crier_factory: CrierFactory, db_url: str) -> Crier:
    world.guild.set_bot_permissions(P.VIEW_CHANNEL | P.SEND_MESSAGES | P.CREATE_EVENTS)
    return await crier_factory(database_url=db_url)


async def test_an_import_asks_for_the_servers_events_once_not_once_per_row(
    world: World, crier: Crier
) -> None:
    data = event_rows(world)
    before = events_asked(world)
    dry, _ = await import_file(world, data)
    assert dry.content.startswith(f"🔎 Dry run: {ROWS} to create"), dry.content
    assert events_asked(world) - before == 1
    [confirm] = buttons(dry)
    h = await world.fake.click_button(dry, confirm, world.admin)
    assert (await h.final_content(timeout=30)).startswith(f"📥 Imported {ROWS} announcements")
    assert events_asked(world) - before == 2  # the confirmation checks every row again, once


async def test_a_server_at_discords_limit_of_events_refuses_every_row_from_one_answer(
    world: World, crier: Crier
) -> None:
    tomorrow = (NOW + timedelta(days=1)).timestamp()
    for i in range(EVENT_LIMIT):
        world.fake.scheduled_events.add(world.guild, f"Other {i}", tomorrow)
    before = events_asked(world)
    answer, _ = await import_file(world, event_rows(world, 3), confirm=True)
    assert answer.content.count("already has 100 scheduled Discord events") == 3, answer.content
    assert "Imported" not in answer.content
    assert events_asked(world) - before == 1


async def test_the_operators_import_asks_for_the_servers_events_once(
    world: World,
    crier: Crier,
    db_url: str,
    tmp_path: Path,
    operator: Any,  # noqa: F811 (the fixture imported above)
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "events.json"
    out.write_bytes(event_rows(world))
    for confirm, said in (((), "Dry run of"), (("--confirm",), f"Imported {ROWS} announcements")):
        before = events_asked(world)
        status = await operator(db_url, "import", str(out), "--guild", str(world.guild.id),
                                *confirm)  # fmt: skip
        printed = capsys.readouterr()
        assert status == 0, printed
        assert printed.out.startswith(said), printed.out
        assert events_asked(world) - before == 1
