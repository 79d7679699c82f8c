"""/template save, list and delete, and /schedule template:, end to end through discord.py
against the fake Discord: the template's fields as defaults, each overridable; no form
without a message; the same rights as scheduling; the limits, answered in words, writing
nothing."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

from tests.bot.conftest import CrierFactory, World, db_snapshot, run_command
from tests.bot.test_delivery import advance, posts
from tests.fakediscord import Member
from tests.fakediscord import Permissions as P
from tests.fakediscord.interactions import CB_CHANNEL_MESSAGE

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock

SUPPRESS_NOTIFICATIONS = 1 << 12


@pytest.fixture
def crier(crier_on_each_db: Crier) -> Crier:
    """On SQLite and PostgreSQL (every test here that takes it)."""
    return crier_on_each_db


async def schedule(world: World, **options: object) -> int:
    cb = await run_command(world, "schedule", **options)
    found = re.search(r"Scheduled announcement \*\*#(\d+)\*\*", cb.content or "")
    assert found is not None, cb.content
    return int(found[1])


async def save(world: World, name: str, source: int, by: Member | None = None) -> str:
    h = await world.fake.invoke_command(
        world.guild, world.general, by or world.admin, "template save",
        {"name": name, "from": source},
    )  # fmt: skip
    return (await h.response(timeout=5)).content or ""


async def delete(world: World, name: str, by: Member | None = None) -> str:
    h = await world.fake.invoke_command(
        world.guild, world.general, by or world.admin, "template delete", {"name": name}
    )
    return (await h.response(timeout=5)).content or ""


def embeds_ok(world: World) -> None:
    world.guild.set_bot_permissions(
        P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.EMBED_LINKS
    )


async def test_a_template_gives_every_default_and_each_option_overrides_it(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    embeds_ok(world)
    crew = world.guild.add_role("crew", mentionable=True)
    source = await schedule(world, channel=world.news, when="in 1d", title="Weekly {date}",
                            message="Standup notes", silent=True, mention=crew)  # fmt: skip
    answer = await save(world, "Weekly", source)
    assert "Saved announcement **#1** as the template `Weekly`" in answer, answer
    listed = (await run_command(world, "template list")).content or ""
    assert "`Weekly`" in listed
    assert "Standup notes" in listed
    assert f"<#{world.news.id}>" in listed

    # Only the template (any case of its name) and a time: no form opens, its text posts.
    cb = await run_command(world, "schedule", template="weekly", when="in 1h")
    assert cb.type == CB_CHANNEL_MESSAGE, cb
    # Overridden: the message, the channel and silence; the title and mention come from it.
    await schedule(world, template="Weekly", when="in 1h", message="Other text",
                   channel=world.general, silent=False)  # fmt: skip
    await advance(crier, clock, timedelta(hours=1))
    [from_template] = posts(world, world.news)
    assert from_template.content == f"<@&{crew.id}>"
    assert [(e["title"], e["description"]) for e in from_template.embeds] == [
        ("Weekly 1 March 2030", "Standup notes")
    ]
    assert from_template.flags & SUPPRESS_NOTIFICATIONS
    [overridden] = posts(world, world.general)
    assert [e["description"] for e in overridden.embeds] == ["Other text"]
    assert not overridden.flags & SUPPRESS_NOTIFICATIONS


async def test_a_template_keeps_the_file_and_an_attachment_replaces_it(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    world.guild.set_bot_permissions(P.VIEW_CHANNEL | P.SEND_MESSAGES | P.ATTACH_FILES)
    source = await schedule(world, channel=world.news, when="in 1d", message="see file",
                            image=("notes.txt", b"hello"))  # fmt: skip
    await save(world, "with file", source)
    await schedule(world, template="with file", when="in 1h")
    await schedule(world, template="with file", when="in 1h", image=("other.txt", b"bye"))
    await advance(crier, clock, timedelta(hours=1))
    assert sorted(a.filename for m in posts(world, world.news) for a in m.attachments) == [
        "notes.txt",
        "other.txt",
    ]


async def test_template_refusals_say_why_and_write_nothing(
    world: World, crier_factory: CrierFactory, db_url: str
) -> None:
    crier = await crier_factory(database_url=db_url, max_templates=1)
    source = await schedule(world, channel=world.news, when="in 1d", message="hello")
    await save(world, "one", source)
    before = await db_snapshot(crier)
    cases = [
        (await save(world, "ONE", source), "already has a template named `ONE`"),
        (
            await save(world, "two", source),
            "already has 1 templates, its limit is 1 (MAX_TEMPLATES_PER_GUILD)",
        ),
        (await save(world, "x", 99), "announcement #99 not found"),
        (await save(world, "two", source, by=world.member), "Manage Server"),
        (
            (await run_command(world, "schedule", template="nope", when="in 1h")).content,
            "no template named `nope`",
        ),
        (await delete(world, "nope"), "no template named `nope`; nothing was deleted"),
        (await delete(world, "one", by=world.member), "Manage Server"),
        (
            (await run_command(world, "schedule", template="one", by=world.member)).content,
            "Manage Server",
        ),
    ]
    for answer, why in cases:
        assert why in (answer or ""), answer
    assert await db_snapshot(crier) == before

    assert "Deleted the template `One`" in await delete(world, "One")
    assert "No templates yet" in ((await run_command(world, "template list")).content or "")
    assert "Saved" in await save(world, "two", source)  # room again


async def test_a_templates_mention_is_checked_against_who_uses_it(
    world: World, crier: Crier
) -> None:
    """A template saved by an admin pinging a role nobody may ping: a member who can't
    ping it is told so when they use it (the ping is not trusted from the template)."""
    staff = world.guild.add_role("staff")  # not mentionable
    helpers = world.guild.add_role("helpers", P.MANAGE_GUILD)
    bosses = world.guild.add_role("bosses", P.MANAGE_GUILD | P.MENTION_EVERYONE)
    boss = world.guild.add_member(name="bea", roles=[bosses])
    admin_only = await schedule(world, channel=world.news, when="in 1d", message="hi",
                                mention=staff, by=boss)  # fmt: skip
    assert "Saved" in await save(world, "staff ping", admin_only, by=boss)
    manager = world.guild.add_member(name="erin", roles=[helpers])
    before = await db_snapshot(crier)
    cb = await run_command(world, "schedule", template="staff ping", when="in 1h", by=manager)
    assert cb.content == (
        f"<@&{staff.id}> can't be mentioned by you (it isn't mentionable and you don't have "
        "**Mention @everyone, @here and All Roles**)."
    )
    assert await db_snapshot(crier) == before


async def test_a_templates_title_and_mention_are_each_overridden(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The template has a title and a mention; /schedule's ``title`` replaces only the
    title (the mention still comes from the template), ``mention`` only the mention."""
    embeds_ok(world)
    crew = world.guild.add_role("crew", mentionable=True)
    ops = world.guild.add_role("ops", mentionable=True)
    source = await schedule(world, channel=world.news, when="in 1d", title="Weekly {date}",
                            message="Standup notes", mention=crew)  # fmt: skip
    assert "Saved" in await save(world, "Weekly", source)
    await schedule(world, template="Weekly", when="in 1h", title="Retro {weekday}")
    await schedule(world, template="Weekly", when="in 2h", mention=ops)
    for _ in range(2):
        await advance(crier, clock, timedelta(hours=1))
    retitled, repinged = posts(world, world.news)
    assert retitled.content == f"<@&{crew.id}>"
    assert [(e["title"], e["description"]) for e in retitled.embeds] == [
        ("Retro Friday", "Standup notes")
    ]
    assert repinged.content == f"<@&{ops.id}>"
    assert [(e["title"], e["description"]) for e in repinged.embeds] == [
        ("Weekly 1 March 2030", "Standup notes")
    ]


async def test_a_template_name_too_long_or_blank_is_refused_in_words_writing_nothing(
    world: World, crier: Crier
) -> None:
    """/template save's name is at most 40 characters (Discord keeps a longer one out: the
    option says so); a blank one, and a longer one in an /import file (where nothing
    bounds it but the bot), are refused in words, writing nothing."""
    source = await schedule(world, channel=world.news, when="in 1d", message="hello")
    before = await db_snapshot(crier)
    with pytest.raises(ValueError, match="longer than max_length=40"):
        await save(world, "x" * 41, source)
    assert await save(world, "   ", source) == "A template needs a name, e.g. `name: weekly`."
    doc = {"version": 1, "announcements": [], "templates": [{"name": "n" * 41, "text": "hi"}]}
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "import",
        {"file": ("export.json", json.dumps(doc).encode()), "confirm": True},
    )  # fmt: skip
    answer = (await h.final_message(timeout=30)).content
    assert (
        f"❌ template 1 (`{'n' * 41}`): the template's name is 41 characters; at most 40, "
        "e.g. `name: weekly`." in answer
    ), answer
    assert "Imported" not in answer
    assert await db_snapshot(crier) == before
    # At the limit, and with its spaces collapsed: kept.
    assert "as the template `" + "x" * 40 + "`" in await save(world, "x" * 40, source)
    assert "as the template `a b`" in await save(world, "  a   b ", source)
