"""Every stored byte is counted and pruned (issue 32), through the commands against the fake
Discord, on SQLite and PostgreSQL: templates' files count toward ``GUILD_FILES_MAX_MB`` with
the announcements' (refused in words at /template save, /schedule and /import); an import's
dry run waiting for its button is one per member and server (a new one replaces the old)
and expires, deleted by the next dry run; the ``template:`` autocomplete any member uses
reads the templates' names, never their files. (Forgetting a server: test_leaving; the
dashboard's side: tests/web/test_dashboard_quotas.py.)"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.announcements import PENDING_FOR
from tests.bot.conftest import NOW, CrierFactory, World, db_snapshot, run_command
from tests.bot.conftest import schedule_id as schedule
from tests.bot.test_export_import import buttons, export, import_file
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock

SETTLED = "This server's announcements and templates already keep"


@pytest.fixture
async def crier(world: World, crier_factory: CrierFactory, db_url: str) -> Crier:
    world.guild.set_bot_permissions(P.VIEW_CHANNEL | P.SEND_MESSAGES | P.ATTACH_FILES)
    return await crier_factory(
        database_url=db_url, file_max_bytes=2000.0, guild_files_max_bytes=3000.0
    )


async def save_template(world: World, name: str, source: int) -> str:
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "template save", {"name": name, "from": source}
    )
    return (await h.response()).content or ""


async def test_templates_files_count_toward_the_servers_files(world: World, crier: Crier) -> None:
    """Under a quota of 3000 bytes: an announcement's 1000-byte file, then two templates
    keeping a copy each (3000); a third template, or a new announcement's 1500 bytes, would
    pass it: refused in words, nothing written."""
    first = await schedule(world, when="in 1h", message="m",
                           image=world.fake.make_attachment("a.png", b"a" * 1000))  # fmt: skip
    assert "Saved" in await save_template(world, "poster", first)
    assert "Saved" in await save_template(world, "poster 2", first)
    before = await db_snapshot(crier)
    said = await save_template(world, "poster 3", first)
    assert SETTLED in said, said
    assert "the server's limit of 0.0 MiB (GUILD_FILES_MAX_MB)" in said
    assert await db_snapshot(crier) == before
    cb = await run_command(world, "schedule", when="in 1h", message="m", channel=world.news,
                           image=world.fake.make_attachment("b.png", b"b" * 1500))  # fmt: skip
    assert SETTLED in (cb.content or ""), cb.content
    assert await db_snapshot(crier) == before


async def test_an_import_whose_templates_files_pass_the_quota_imports_nothing(
    world: World, other: World, crier: Crier
) -> None:
    """An announcement with a 1000-byte file and three templates with theirs (4000 bytes)
    into a server with a quota of 3000: refused in words, all of it or nothing."""
    first = await schedule(world, when="in 1h", message="m",
                           image=world.fake.make_attachment("a.png", b"a" * 1000))  # fmt: skip
    assert "Saved" in await save_template(world, "poster", first)
    _, data = await export(world)
    doc = json.loads(data)
    [template] = doc["templates"]
    assert template["file"] is not None
    doc["templates"] += [{**template, "name": "poster 2"}, {**template, "name": "poster 3"}]
    other.guild.set_bot_permissions(P.VIEW_CHANNEL | P.SEND_MESSAGES | P.ATTACH_FILES)
    before = await db_snapshot(crier)
    answer, _ = await import_file(other, json.dumps(doc).encode(), confirm=True)
    assert SETTLED in answer.content, answer.content
    assert "Imported" not in answer.content
    assert await db_snapshot(crier) == before


async def pending(crier: Crier) -> list[tuple[int, int, str]]:
    async with crier.sched.reader() as db:
        cur = await db.execute(
            "SELECT guild_id, user_id, token FROM bot_pending_imports ORDER BY user_id"
        )
        return [(int(r["guild_id"]), int(r["user_id"]), str(r["token"])) for r in
                await cur.fetchall()]  # fmt: skip


def one_row_file(key: str) -> bytes:
    row = {"key": key, "text": "hi", "first": (NOW + timedelta(days=1)).isoformat(),
           "timezone": "UTC", "destination": {"name": "news"}}  # fmt: skip
    return json.dumps({"version": 2, "announcements": [row]}).encode()


async def test_a_members_dry_runs_replace_each_other_and_expire(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Three dry runs by one member keep one (the last: the older buttons say so); another
    manager's is their own; once expired, a button says so, and the next dry run anywhere
    deletes the expired ones."""
    dries = []
    for i in range(3):
        dry, _ = await import_file(world, one_row_file(f"k{i}"))
        assert dry.content.startswith("🔎 Dry run: 1 to create"), dry.content
        dries.append(dry)
    [(guild_id, user_id, _)] = await pending(crier)
    assert (guild_id, user_id) == (world.guild.id, world.admin.id)
    h = await world.fake.click_button(dries[0], buttons(dries[0])[0], world.admin)
    assert "or was replaced by your newer one" in await h.final_content(timeout=10)

    helpers = world.guild.add_role("helpers", P.MANAGE_GUILD)
    manager = world.guild.add_member(name="erin", roles=[helpers])
    await import_file(world, one_row_file("m1"), by=manager)
    assert [u for _, u, _ in await pending(crier)] == sorted([world.admin.id, manager.id])

    clock.advance(timedelta(seconds=PENDING_FOR + 1))
    h = await world.fake.click_button(dries[2], buttons(dries[2])[0], world.admin)
    assert "its dry run expired (they wait 15 minutes)" in await h.final_content(timeout=10)
    await import_file(world, one_row_file("m2"), by=manager)  # prunes both expired ones
    [(_, user_id, token)] = await pending(crier)
    assert user_id == manager.id
    assert await crier.bot.announcements.pending(world.guild.id, token) is not None


async def test_the_template_autocomplete_reads_names_never_files(
    world: World, crier: Crier, db_url: str
) -> None:
    """Any member typing ``/schedule template:`` gets the names; the query reads no file:
    a template whose file can't even be read is still offered, and (on SQLite, where the
    statements can be traced) no statement run for it names the file's column."""
    first = await schedule(world, when="in 1h", message="m",
                           image=world.fake.make_attachment("a.png", b"a" * 1000))  # fmt: skip
    assert "Saved" in await save_template(world, "poster one", first)
    assert "Saved" in await save_template(world, "plain two", first)
    async with crier.sched.transaction() as ctx:  # a file that can't be read back
        await ctx.db.execute("UPDATE bot_templates SET image_data = NULL")
    statements: list[str] = []
    traced: list[Any] = []
    if db_url.startswith("sqlite"):
        store: Any = crier.sched.store
        traced = [c for c in (store._reader, store._writer) if c is not None]
        for conn in traced:
            await conn.set_trace_callback(statements.append)
    try:
        h = await world.fake.invoke_autocomplete(
            world.guild, world.general, world.member, "schedule", {"template": "o"},
            focused="template",
        )  # fmt: skip
        choices = [c["value"] for c in (await h.response()).choices]
    finally:
        for conn in traced:
            await conn.set_trace_callback(None)
    assert choices == ["plain two", "poster one"]
    if traced:
        read = [s for s in statements if "bot_templates" in s]
        assert read, statements
        assert not [s for s in read if "image_data" in s or "*" in s], read
