"""``python -m bot import FILE --guild ID [--confirm]``: the operator's import, on SQLite and
PostgreSQL, against the fake Discord: a dry run writes nothing and names every row; a
confirmed import reproduces the exported server (the same next times) in another one, and
runs none of its jobs in the command's process; twice creates nothing; one refused row
applies nothing and is named; a file that is no export is refused in one line (status 2)."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest

from bot.announcements import EVENTS_FN
from bot.app import cli, guild_import
from scheduler import Scheduler
from tests.bot.conftest import CrierFactory, World, db_snapshot, run_command
from tests.bot.conftest import schedule_id as schedule
from tests.bot.test_delivery import idle
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from pathlib import Path

    from bot.app import Crier
    from scheduler.testing import FakeClock


@pytest.fixture
def operator(
    world: World, tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> Any:
    """Set the environment as an operator's shell has it (the bot's settings), the import's
    clock to the test's, and give ``await operator(db_url, *args)``: ``python -m bot
    ARGS`` run as the command line runs it (its own event loop), with its exit status."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(guild_import, "make_clock", lambda: clock)
    for name, value in world.fake.env().items():
        monkeypatch.setenv(name, value)

    async def run(db_url: str, *args: str) -> int:
        monkeypatch.setenv("DATABASE_URL", db_url)
        return await asyncio.to_thread(cli.main, list(args))

    return run


async def next_times(crier: Crier, guild_id: int) -> list[tuple[str, str, float | None]]:
    """Each live announcement of the server, oldest first: its text, its channel's name and
    its next time."""
    found = await crier.bot.announcements.export_rows(guild_id)
    guild = crier.bot.get_guild(guild_id)
    assert guild is not None
    out = []
    for a in found.announcements:
        channel = guild.get_channel(a.channel_id)
        nxt = found.next_fires.get(a.id)
        name = "?" if channel is None else channel.name
        out.append((a.content, name, None if nxt is None else nxt.timestamp()))
    return out


async def jobs_by_state(crier: Crier) -> dict[str, int]:
    async with crier.sched.reader() as db:
        cur = await db.execute("SELECT state, COUNT(*) AS n FROM scheduler_jobs GROUP BY state")
        return {str(r["state"]): int(r["n"]) for r in await cur.fetchall()}


async def test_a_dry_run_then_a_confirmed_import_reproduce_the_server_once(
    world: World,
    other: World,
    crier_factory: CrierFactory,
    db_url: str,
    tmp_path: Path,
    operator: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for w in (world, other):
        w.guild.set_bot_permissions(
            P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.EMBED_LINKS
        )
    crier = await crier_factory(database_url=db_url)
    await schedule(world, when="in 2h", message="One-off {time}", title="Heads up")
    await schedule(world, repeat="daily at 09:00", timezone="Europe/Paris", message="Standup")
    paused = await schedule(world, when="in 3h", repeat="weekly", message="paused one")
    assert "Paused" in ((await run_command(world, "pause", id=paused)).content or "")
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "template save", {"name": "daily", "from": 2}
    )
    assert "Saved" in ((await h.response()).content or "")
    out = tmp_path / "export.json"
    assert await operator(db_url, "export", "--guild", str(world.guild.id), "--out", str(out)) == 0
    capsys.readouterr()

    # The dry run: every row said, nothing written.
    before = await db_snapshot(crier)
    status = await operator(db_url, "import", str(out), "--guild", str(other.guild.id))
    said = capsys.readouterr()
    assert status == 0, said
    lines = said.out.splitlines()
    assert lines[0].startswith(
        f"Dry run of {out} into server 'Other Guild' ({other.guild.id}): 4 to create. Nothing "
        "was written; add --confirm to apply it."
    ), said.out
    assert lines[1].startswith("  create   row 1 (#1): in #news, once, first 2030-03-01 14:00 UTC")
    assert lines[2].startswith("  create   row 2 (#2): in #news, every day at 09:00")
    assert lines[3].endswith(", paused")
    assert lines[4] == "  create   template 1 (`daily`): a new template"
    assert said.err == ""
    assert await db_snapshot(crier) == before

    # Confirmed: the same announcements, at the same next times, in the other server.
    status = await operator(db_url, "import", str(out), "--guild", str(other.guild.id), "--confirm")
    said = capsys.readouterr()
    assert status == 0, said
    assert said.out.startswith(
        f"Imported 3 announcements and 1 template from {out} into server 'Other Guild' "
        f"({other.guild.id})."
    ), said.out
    source = await next_times(crier, world.guild.id)
    assert len(source) == 3
    assert await next_times(crier, other.guild.id) == source
    imported = await crier.bot.announcements.export_rows(other.guild.id)
    assert [a.state.value for a in imported.announcements] == ["scheduled", "scheduled", "paused"]
    assert [t.name for t in await crier.bot.announcements.templates(other.guild.id)] == ["daily"]

    # Twice: nothing more, and said so.
    before = await db_snapshot(crier)
    for confirm in ((), ("--confirm",)):
        status = await operator(db_url, "import", str(out), "--guild", str(other.guild.id),
                                *confirm)  # fmt: skip
        said = capsys.readouterr()
        assert status == 0, said
        assert said.out.startswith(
            f"Nothing to import from {out} into server 'Other Guild' ({other.guild.id}): all "
            "4 rows are already here."
        ), said.out
        assert "  already  row 3 (#3): already imported (as #3)" in said.out
        assert await db_snapshot(crier) == before


async def test_the_import_runs_no_job_in_its_own_process(
    world: World,
    other: World,
    crier_factory: CrierFactory,
    clock: FakeClock,
    db_url: str,
    tmp_path: Path,
    operator: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The command line writes the imported jobs and leaves them to the bot: with the bot
    stopped, the job that makes the Discord event (due at once) is still pending after the
    import, and no event was made; the bot started again makes it, once."""
    for w in (world, other):
        w.guild.set_bot_permissions(P.VIEW_CHANNEL | P.SEND_MESSAGES | P.CREATE_EVENTS)
    crier = await crier_factory(database_url=db_url)
    await schedule(world, when="in 2h", message="Meetup", event=True, event_location="Room 4")
    await idle(crier)
    assert len(world.fake.scheduled_events.of(world.guild)) == 1
    out = tmp_path / "export.json"
    assert await operator(db_url, "export", "--guild", str(world.guild.id), "--out", str(out)) == 0
    await crier.close()  # nothing of the bot's runs now

    drivers: list[Scheduler] = []
    real_start = Scheduler.start

    async def start(sched: Scheduler) -> None:
        drivers.append(sched)
        await real_start(sched)

    with monkeypatch.context() as patched:  # what the command line starts, if anything
        patched.setattr(Scheduler, "start", start)
        status = await operator(db_url, "import", str(out), "--guild", str(other.guild.id),
                                "--confirm")  # fmt: skip
    assert status == 0
    assert drivers == []  # its scheduler was only opened: no driver, in any timing
    [events_job] = await _jobs(db_url, EVENTS_FN)
    assert events_job == ("pending", clock.time())  # due now, and left to the bot
    assert world.fake.scheduled_events.of(other.guild) == []

    crier = await crier_factory(database_url=db_url)
    await idle(crier)
    assert (await _jobs(db_url, EVENTS_FN))[0] == ("success", clock.time())
    [made] = world.fake.scheduled_events.of(other.guild)
    assert made.name.startswith("Meetup")


async def _jobs(db_url: str, fn: str) -> list[tuple[str, float]]:
    """The state and due time of every job of ``fn`` written after the first one (the
    imported server's), read straight from the database."""
    from bot.app.crier import make_store
    from bot.config import Settings

    store = make_store(Settings(token="x" * 60, database_url=db_url))
    await store.open([])
    try:
        async with store.snapshot() as db:
            cur = await db.execute(
                "SELECT state, next_ts FROM scheduler_jobs WHERE fn = ? ORDER BY id", (fn,)
            )
            rows = await cur.fetchall()
    finally:
        await store.close()
    return [(str(r["state"]), float(r["next_ts"])) for r in rows[1:]]


async def test_one_refused_row_applies_nothing_and_every_refused_row_is_named(
    world: World,
    other: World,
    crier_factory: CrierFactory,
    db_url: str,
    tmp_path: Path,
    operator: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    crier = await crier_factory(database_url=db_url)
    events = world.guild.add_channel("events")
    await schedule(world, when="in 1h", message="fine")
    await schedule(world, when="in 1h", message="nowhere to go", channel=events)
    out = tmp_path / "export.json"
    assert await operator(db_url, "export", "--guild", str(world.guild.id), "--out", str(out)) == 0
    capsys.readouterr()
    before = await db_snapshot(crier)
    for confirm in ((), ("--confirm",)):
        status = await operator(db_url, "import", str(out), "--guild", str(other.guild.id),
                                *confirm)  # fmt: skip
        said = capsys.readouterr()
        assert status == 1, said
        lines = said.out.splitlines()
        assert lines[0].startswith(
            f"Nothing can be imported from {out} into server 'Other Guild' "
            f"({other.guild.id}): 1 of the 2 rows would be refused."
        ), said.out
        assert lines[1] == "  refused  row 2 (#2): this server has no channel named `#events`"
        assert lines[2].startswith("  create   row 1 (#1): in #news, once")
        assert said.err == "crier: nothing was imported: 1 row refused (above)\n"
        assert await db_snapshot(crier) == before


def bad_files(world: World) -> list[tuple[str, bytes | None, str]]:
    row = {
        "key": "crier:1:1", "number": 1, "text": "hi", "first": "2030-03-01T13:00:00+00:00",
        "timezone": "UTC", "destination": {"id": str(world.general.id), "name": "general"},
    }  # fmt: skip
    return [
        ("missing.json", None, "cannot read missing.json: No such file or directory"),
        ("not.json", b"{not json", "not.json: That file is not valid JSON"),
        ("v9.json", json.dumps({"version": 9, "announcements": [row]}).encode(),
         "v9.json: That file's `version` is 9; I read versions 1, "),
        ("deep.json", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        ("list.json", b"[1, 2]", "its top level isn't an object"),
        ("binary.json", b"\xff\xfe\x00", "is not text (UTF-8)"),
        ("huge.json", b" " * (8 * 1024 * 1024 + 1), "an import may be at most 8 MiB"),
    ]  # fmt: skip


async def test_a_file_that_is_no_export_is_refused_in_one_line_touching_nothing(
    world: World, tmp_path: Path, operator: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused before the database or Discord is reached: the database file is never even
    created."""
    db = tmp_path / "never.db"
    for name, data, why in bad_files(world):
        if data is not None:
            await asyncio.to_thread((tmp_path / name).write_bytes, data)
        status = await operator(f"sqlite:///{db}", "import", name, "--guild", str(world.guild.id),
                                "--confirm")  # fmt: skip
        said = capsys.readouterr()
        assert status == 2, (name, said)
        assert said.out == ""
        [line] = said.err.splitlines()
        assert line.startswith("crier: "), line
        assert why in line, (why, line)
    assert not await asyncio.to_thread(db.exists)


async def test_an_unknown_server_is_refused_in_words_touching_nothing(
    world: World, tmp_path: Path, operator: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Asked of Discord before the database is opened: the database file is left as it
    was (here empty: not even migrated)."""
    doc = tmp_path / "empty.json"
    await asyncio.to_thread(doc.write_text, json.dumps({"version": 2, "announcements": []}))
    db = tmp_path / "untouched.db"
    await asyncio.to_thread(db.write_bytes, b"")
    status = await operator(f"sqlite:///{db}", "import", str(doc), "--guild", "123456789012345678")
    said = capsys.readouterr()
    assert status == 1, said
    assert said.err == (
        "crier: Discord knows no server 123456789012345678 (or the bot is not in it)\n"
    )
    assert await asyncio.to_thread(db.read_bytes) == b""


async def test_a_database_that_is_not_there_is_refused_not_made(
    world: World, tmp_path: Path, operator: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A DATABASE_URL naming no file (a typo, a bot never started): refused in one line,
    for the dry run and the import alike, and no empty database is made there."""
    doc = tmp_path / "empty.json"
    await asyncio.to_thread(doc.write_text, json.dumps({"version": 2, "announcements": []}))
    db = tmp_path / "typo.db"
    for confirm in ((), ("--confirm",)):
        status = await operator(
            f"sqlite:///{db}", "import", str(doc), "--guild", str(world.guild.id), *confirm
        )
        said = capsys.readouterr()
        assert status == 1, said
        assert said.err.startswith(f"crier: no database at {db} (DATABASE_URL)"), said.err
    assert not await asyncio.to_thread(db.exists)
