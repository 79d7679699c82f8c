"""/export and /import end to end through discord.py against the fake Discord, on SQLite and
PostgreSQL: an export of one server imported into another reproduces every announcement (the
same next times, paused ones paused) and its templates; a second import creates nothing; a
file with one bad row applies nothing and names that row; hostile files are refused in words;
the dry run's button applies once, for the member who ran it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bot.requests.export_doc import MAX_IMPORT_BYTES
from tests.bot.conftest import CrierFactory, World, db_snapshot, run_command
from tests.bot.conftest import schedule_id as schedule
from tests.bot.test_delivery import advance, advance_to
from tests.fakediscord import Member
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.fakediscord.state import Message


@pytest.fixture
def crier(crier_on_each_db: Crier) -> Crier:
    """On SQLite and PostgreSQL (every test here that takes it)."""
    return crier_on_each_db


async def export(world: World, by: Member | None = None) -> tuple[Message, bytes]:
    h = await world.fake.invoke_command(world.guild, world.general, by or world.admin, "export")
    msg = await h.final_message(timeout=20)
    assert msg.ephemeral
    [file] = msg.attachments
    assert file.filename.endswith(".json")
    return msg, file.data


async def import_file(
    world: World, data: bytes, by: Member | None = None, **options: Any
) -> tuple[Message, Any]:
    """/import with ``data`` as the file; the final answer and its interaction."""
    h = await world.fake.invoke_command(
        world.guild, world.general, by or world.admin, "import",
        {"file": ("export.json", data), **options},
    )  # fmt: skip
    return await h.final_message(timeout=30), h


def buttons(msg: Message) -> list[str]:
    return [
        c["custom_id"]
        for row in msg.components
        for c in row.get("components", [])
        if "custom_id" in c
    ]


async def listing(crier: Crier, guild_id: int) -> list[tuple[Any, ...]]:
    """What each of a server's announcements is, comparable across servers (channels and
    roles by name)."""
    found = await crier.bot.announcements.export_rows(guild_id)
    out = []
    for a in found.announcements:
        nxt = found.next_fires.get(a.id)
        out.append(
            (a.content, a.rich.title, a.rich.silent, a.state.value, a.timezone, a.repeat_words,
             a.until_ts, None if nxt is None else nxt.timestamp(), a.mention is not None)
        )  # fmt: skip
    return out


def ts(text: str) -> float:
    """Epoch seconds of a UTC ``YYYY-MM-DD HH:MM``."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC).timestamp()


SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "export.schema.json").read_text())
"""What docs/export.schema.json says an export is."""


def crew(world: World) -> Any:
    return world.guild.add_role("crew", mentionable=True)


async def test_an_export_imported_into_another_server_reproduces_it_and_twice_creates_nothing(
    world: World, other: World, crier_factory: CrierFactory, clock: FakeClock, db_url: str
) -> None:
    crier = await crier_factory(database_url=db_url)
    for w in (world, other):
        w.guild.set_bot_permissions(
            P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.EMBED_LINKS
        )
    role = crew(world)
    other_crew = crew(other)
    await schedule(world, when="in 2h", message="one-off {time}")
    await schedule(world, repeat="daily at 09:00", timezone="Europe/Paris",
                   until="2030-06-01 12:00", message="Standup #{occurrence}", title="Daily",
                   silent=True, mention=role)  # fmt: skip
    weekly = await schedule(world, when="in 3h", repeat="weekly", message="paused one")
    assert "Paused" in ((await run_command(world, "pause", id=weekly)).content or "")
    # #2 posts in #general too: exported by name, mapped to the other server's #general.
    await run_command(world, "edit", id=2, also_in=f"<#{world.general.id}>")
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "template save", {"name": "daily", "from": 2}
    )
    assert "Saved" in ((await h.response()).content or "")

    msg, data = await export(world)
    doc = json.loads(data)
    assert doc["version"] == 6
    assert [a["also_in"] for a in doc["announcements"]] == [
        [], [{"id": str(world.general.id), "name": "general"}], []
    ]  # fmt: skip
    assert doc["templates"][0]["also_in"] == doc["announcements"][1]["also_in"]
    assert doc["guild"]["id"] == str(world.guild.id)
    assert [a["destination"]["name"] for a in doc["announcements"]] == ["news"] * 3
    assert doc["announcements"][1]["mention"]["name"] == "crew"
    assert [t["name"] for t in doc["templates"]] == ["daily"]
    assert world.fake.token not in data.decode()  # never a secret
    assert "3 live announcements and 1 template" in msg.content

    before = await db_snapshot(crier)
    dry, _ = await import_file(other, data)
    assert dry.content.startswith("🔎 Dry run: 4 to create."), dry.content
    assert f"✅ row 1 (#1): in <#{other.news.id}>, once" in dry.content
    assert "✅ template 1 (`daily`): a new template" in dry.content
    # A dry run writes nothing but itself, waiting for its button.
    after = await db_snapshot(crier)
    waits = "bot_pending_imports"
    assert {k: v for k, v in after.items() if k != waits} == {
        k: v for k, v in before.items() if k != waits
    }
    [(guild_id, user_id, *_)] = after[waits]
    assert (guild_id, user_id) == (other.guild.id, other.admin.id)
    [confirm] = buttons(dry)
    clicked = await world.fake.click_button(dry, confirm, other.admin)
    done = await clicked.final_message(timeout=30)
    assert done.content.startswith("📥 Imported 3 announcements and 1 template"), done.content

    assert await listing(crier, other.guild.id) == await listing(crier, world.guild.id)
    [daily] = await crier.bot.announcements.templates(other.guild.id)
    assert daily.channel_id == other.news.id
    assert daily.also_in == (other.general.id,)
    assert daily.mention == f"role:{other_crew.id}"
    imported = await crier.bot.announcements.export_rows(other.guild.id)
    assert imported.announcements[1].mention == f"role:{other_crew.id}"
    assert imported.announcements[2].state.value == "paused"
    assert [p.channel_id for p in imported.places[imported.announcements[1].id]] == [
        other.general.id
    ]

    # The same file again, and the button again: nothing more is created.
    before = await db_snapshot(crier)
    again, _ = await import_file(other, data, confirm=True)
    assert again.content.startswith("Nothing to import: all 4 rows are already here."), again
    assert "⏭️ row 3 (#3): already imported (as #3)" in again.content
    assert "⏭️ template 1 (`daily`): already here, the same" in again.content
    twice = await world.fake.click_button(dry, confirm, other.admin)
    assert "already applied, or its dry run expired" in (await twice.final_content(timeout=10))
    assert await db_snapshot(crier) == before

    # The imported ones post in the other server, with their placeholders.
    await advance(crier, clock, timedelta(hours=2))
    assert [m.content for m in other.fake.bot_messages(other.news)] == ["one-off 14:00"]


async def test_a_file_a_forum_tag_and_step_and_nth_weekday_rules_survive_the_round_trip(
    world: World, other: World, crier: Crier, clock: FakeClock
) -> None:
    """An announcement with a file, a forum post with a tag, ``every 2 weeks`` and ``first
    monday of the month``: imported into another server (whose forum has its tags in
    another order, under other ids), each has the same next times there, occurrence after
    occurrence, and its file and tag are carried over."""
    for w in (world, other):
        w.guild.set_bot_permissions(
            P.VIEW_CHANNEL | P.SEND_MESSAGES | P.EMBED_LINKS | P.ATTACH_FILES
            | P.CREATE_PUBLIC_THREADS
        )  # fmt: skip
    board = world.guild.add_forum("board", tags=["news", "beta"])
    other_board = other.guild.add_forum("board", tags=["beta", "news"])
    await schedule(world, when="in 2h", message="see the file", image=("notes.txt", b"hello"))
    await schedule(world, channel=board, when="in 3h", title="Release", message="notes",
                   tags="beta")  # fmt: skip
    await schedule(world, when="2030-03-04 09:00", repeat="every 2 weeks", timezone="Europe/Paris",
                   message="Fortnightly #{occurrence}")  # fmt: skip
    await schedule(world, when="in 1h", repeat="first monday of the month at 10:00",
                   timezone="Europe/Paris", message="Monthly {date}")  # fmt: skip

    _, data = await export(world)
    doc = json.loads(data)
    [with_file, forum_post, fortnightly, monthly] = doc["announcements"]
    assert [f["filename"] for f in with_file["files"]] == ["notes.txt"]
    assert forum_post["tags"] == ["beta"]
    assert fortnightly["repeat"]["step"] == {"count": 2, "unit": "week", "since": "2030-03-04"}
    assert monthly["repeat"]["nth"] != []
    done, _ = await import_file(other, data, confirm=True)
    assert done.content.startswith("📥 Imported 4 announcements"), done.content

    mine = await listing(crier, world.guild.id)
    assert await listing(crier, other.guild.id) == mine
    assert [n for *_, n, _ in mine] == [
        ts("2030-03-01 14:00"),
        ts("2030-03-01 15:00"),
        ts("2030-03-04 08:00"),  # 09:00 in Paris
        ts("2030-03-04 09:00"),  # the first Monday of March, 10:00 in Paris
    ]
    # Occurrence after occurrence (across Paris's clock change, 31 March): the same times.
    seen = []
    for _ in range(5):
        nexts = [n for *_, n, _ in await listing(crier, world.guild.id) if n is not None]
        await advance_to(crier, clock, datetime.fromtimestamp(min(nexts), UTC))
        assert await listing(crier, other.guild.id) == await listing(crier, world.guild.id)
        seen.append(min(nexts))
    assert seen[2:] == [
        ts("2030-03-04 08:00"),
        ts("2030-03-04 09:00"),
        ts("2030-03-18 08:00"),
    ]
    # The one-offs are done; the rules go on at 09:00 and 10:00 in Paris, now CEST.
    assert [(text, n) for text, *_, n, _ in await listing(crier, other.guild.id)] == [
        ("Fortnightly #{occurrence}", ts("2030-04-01 07:00")),
        ("Monthly {date}", ts("2030-04-01 08:00")),
    ]

    [posted] = [m for m in other.fake.bot_messages(other.news) if m.attachments]
    assert [(a.filename, a.data) for a in posted.attachments] == [("notes.txt", b"hello")]
    [thread] = other.fake.forum_posts(other_board)
    assert (thread.name, thread.applied_tags) == ("Release", [other_board.tag_named("beta").id])
    [mine_thread] = world.fake.forum_posts(board)
    assert mine_thread.applied_tags == [board.tag_named("beta").id]


async def test_one_bad_row_applies_nothing_and_is_named(
    world: World, other: World, crier: Crier
) -> None:
    events = world.guild.add_channel("events")
    await schedule(world, when="in 1h", message="fine")
    await schedule(world, when="in 1h", message="nowhere to go", channel=events)
    await schedule(world, when="in 1h", message="pings", mention=crew(world))
    _, data = await export(world)
    before = await db_snapshot(crier)
    answer, _ = await import_file(other, data, confirm=True)
    assert answer.content.startswith("🚫 Nothing can be imported: 2 of the 3 rows"), answer.content
    assert "❌ row 2 (#2): this server has no channel named `#events`" in answer.content
    assert "❌ row 3 (#3): this server has no role named `@crew`" in answer.content
    assert not buttons(answer)
    assert await db_snapshot(crier) == before

    # Two channels of that name: never guessed between.
    other.guild.add_channel("events")
    other.guild.add_channel("events")
    crew(other)
    answer, _ = await import_file(other, data, confirm=True)
    assert "this server has 2 channels named `#events`; rename all but one" in answer.content
    assert await db_snapshot(crier) == before


def hostile_documents(world: World) -> list[tuple[bytes, str]]:
    row = {
        "key": "crier:1:1", "number": 1, "text": "hi", "first": "2030-03-01T13:00:00+00:00",
        "timezone": "UTC", "destination": {"id": str(world.general.id), "name": "general"},
    }  # fmt: skip

    daily = {"kind": "cron", "cron": "0 9 * * *", "words": "every day at 09:00"}

    def doc(*rows: Any, **top: Any) -> bytes:
        return json.dumps({"version": 1, "announcements": list(rows), **top}).encode()

    return [
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"{not json", "is not valid JSON"),
        (b"\xff\xfe\x00", "is not text (UTF-8)"),
        (json.dumps([1, 2]).encode(), "its top level isn't an object"),
        (json.dumps({"version": "1"}).encode(), '`version` is "1"'),
        (json.dumps({"version": 1, "announcements": {}}).encode(), "must be lists"),
        (doc(*[row] * 10_001), "one import takes at most 10000"),
        (doc({**row, "text": 5}), "❌ row 1 (#1): `text` must be text, not a whole number"),
        (doc({**row, "destination": {"id": "1"}}), "`destination` has no `name`"),
        (doc({**row, "first": "tomorrow"}), "`first` must be a time like"),
        (doc({**row, "repeat": {"kind": "cron", "cron": "61 * * * *", "words": "x"}}), "❌ row 1"),
        (doc({**row, "files": [{"filename": "a", "data": "%%%"}]}), "not valid base64"),
        (doc({**row, "mention": {"kind": "role", "id": "5"}}), "`mention` has no `name`"),
        (doc(row, row), "❌ row 2 (#1): it has the same `key` as row 1 (#1)"),
        (doc({**row, "text": "{nope}"}), "uses `{nope}`, which is not a placeholder"),
        (doc({**row, "first": "2030-03-01T11:00:00+00:00"}), "has passed"),
        # Times out of range: refused in words, never an error (issue 32).
        (doc({**row, "first": "9999-12-31T23:59:59-23:59"}), "`first` is out of range"),
        (doc({**row, "first": "0001-01-01T00:00:00+23:59"}), "`first` is out of range"),
        (
            doc({**row, "first": "2035-03-03T12:00:00+00:00"}),
            "`next` (<t:2056536000:F>) is more than 5 years ahead",
        ),
        (doc({**row, "first": "9999-12-31T00:00:00+00:00", "repeat": daily}), "is more than 5"),
        (
            doc({**row, "repeat": daily, "until": "9999-12-31T23:59:59+00:00"}),
            "`until` (<t:253402300799:F>) is more than 5 years ahead",
        ),
        (
            doc({**row, "repeat": {**daily, "cron": "0 9 29 2 1"}, "next": "9999-12-27T00:00:00Z"}),
            "is more than 5 years ahead",
        ),
        (
            doc(
                {
                    **row,
                    "first": "2020-01-01T09:00:00Z",
                    "repeat": {
                        **daily,
                        "cron": "0 9 1 * *",
                        "step": {"count": 99999, "unit": "month", "since": "2020-01-01"},
                    },
                }
            ),
            "its `repeat` is not a rule I can use (cron '0 9 1 * *' every 99999 months",
        ),
        (doc(row, templates=[{"name": 3}]), "❌ template 1: `name` must be text, not a whole"),
    ]


async def test_hostile_files_are_refused_in_words_writing_nothing(
    world: World, other: World, crier: Crier
) -> None:
    """Another server's file naming this server's… no: naming the other server's channel by
    id only, huge, deeply nested, of the wrong types: each refused with why."""
    before = await db_snapshot(crier)
    for data, why in hostile_documents(world):
        answer, _ = await import_file(other, data, confirm=True)
        assert why in answer.content, (why, answer.content)
        assert "Imported" not in answer.content
    huge = other.fake.make_attachment("big.json", b" " * (MAX_IMPORT_BYTES + 1))
    answer, _ = await import_file(other, b"", file=huge)
    assert "an import may be at most 8 MiB" in answer.content
    assert await db_snapshot(crier) == before


async def test_another_servers_channel_ids_are_never_used(
    world: World, other: World, crier: Crier
) -> None:
    """A file naming the other server's channel by its id (and a name this server lacks)
    is refused; one naming a channel of this server by name lands there whatever its id."""
    doc = {
        "version": 1,
        "announcements": [
            {"key": "k1", "text": "a", "first": "2030-03-01T13:00:00+00:00",
             "destination": {"id": str(world.news.id), "name": "elsewhere"}},
            {"key": "k2", "text": "b", "first": "2030-03-01T13:00:00+00:00",
             "destination": {"id": str(world.news.id), "name": "news"}},
        ],
    }  # fmt: skip
    answer, _ = await import_file(other, json.dumps(doc).encode())
    assert "❌ row 1: this server has no channel named `#elsewhere`" in answer.content
    assert f"✅ row 2: in <#{other.news.id}>" in answer.content


async def test_members_may_not_export_or_import_and_the_button_applies_once(
    world: World, crier: Crier
) -> None:
    await schedule(world, when="in 1h", message="x")
    _, data = await export(world)
    await run_command(world, "cancel", id=1)
    dry, _ = await import_file(world, data)
    assert dry.content.startswith("🔎 Dry run: 1 to create"), dry.content
    [confirm] = buttons(dry)
    # (Only the member who got the ephemeral dry run can click its button: Discord's rule.)
    before = await db_snapshot(crier)
    refused, _ = await import_file(world, data, by=world.member)
    assert "Manage Server" in refused.content
    h = await world.fake.invoke_command(world.guild, world.general, world.member, "export")
    assert "Manage Server" in ((await h.response()).content or "")
    assert await db_snapshot(crier) == before
    h = await world.fake.click_button(dry, confirm, world.admin)
    assert (await h.final_content(timeout=10)).startswith("📥 Imported 1 announcement")
    h = await world.fake.click_button(dry, confirm, world.admin)
    assert "already applied, or its dry run expired" in (await h.final_content(timeout=10))


async def test_an_export_leaves_out_what_the_member_cant_see(world: World, crier: Crier) -> None:
    secret = world.guild.add_channel("secret")
    helpers = world.guild.add_role("helpers", P.MANAGE_GUILD)
    manager = world.guild.add_member(name="erin", roles=[helpers])
    secret.set_overwrite(helpers, deny=P.VIEW_CHANNEL)
    await schedule(world, when="in 1h", message="hidden text", channel=secret)
    await schedule(world, when="in 1h", message="open text")
    msg, data = await export(world, by=manager)
    assert "hidden text" not in data.decode()
    assert "open text" in data.decode()
    assert "Left out: 1 announcement for a channel you can't see." in msg.content


def test_the_published_schema_describes_what_an_export_writes() -> None:
    import jsonschema

    schema = json.loads((Path(__file__).parents[2] / "docs" / "export.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    sample = {
        "version": 1, "generator": "crier", "exported_at": "2030-03-01T12:00:00+00:00",
        "guild": {"id": "1", "name": "g"},
        "announcements": [{
            "key": "crier:1:2", "number": 2, "text": "t", "title": None, "silent": False,
            "publish": False, "destination": {"id": "3", "name": "news", "kind": "text"},
            "tags": [], "mention": {"kind": "role", "id": "4", "name": "crew"},
            "first": "2030-03-01T12:00:00+00:00", "next": None, "timezone": "UTC",
            "repeat": {"kind": "cron", "cron": "0 9 * * *", "words": "w", "nth": [],
                       "step": {"count": 2, "unit": "week", "since": "2030-03-01"}},
            "until": None, "paused": True,
            "files": [{"filename": "a.png", "content_type": "image/png", "data": "AAAA"}],
        }],
        "templates": [{"name": "n", "text": "t", "title": None, "silent": False,
                       "mention": None, "channel": None, "file": None}],
    }  # fmt: skip
    jsonschema.validate(sample, schema)
    with_reminders = {
        **sample, "version": 3,
        "announcements": [{**sample["announcements"][0], "reminder_seconds": 900}],
        "templates": [{**sample["templates"][0], "reminder_seconds": None}],
    }  # fmt: skip
    jsonschema.validate(with_reminders, schema)
    avatar = {"filename": "hall.png", "content_type": "image/png", "data": "AAAA"}
    posting_as = {
        **with_reminders, "version": 4,
        "announcements": [{**with_reminders["announcements"][0],
                           "post_as": {"name": "Town hall", "avatar": avatar}}],
        "templates": [{**with_reminders["templates"][0], "post_as": {"name": "Club"}}],
    }  # fmt: skip
    jsonschema.validate(posting_as, schema)
    no_name = [{**sample["announcements"][0], "post_as": {"avatar": avatar}}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**posting_as, "announcements": no_name}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**sample, "version": 7}, schema)
    places = [{"id": "5", "name": "general"}, {"name": "weekly thread"}]
    with_places = {
        **posting_as, "version": 5,
        "announcements": [{**posting_as["announcements"][0], "also_in": places}],
        "templates": [{**posting_as["templates"][0], "also_in": []}],
    }  # fmt: skip
    jsonschema.validate(with_places, schema)
    with pytest.raises(jsonschema.ValidationError):  # each by name
        jsonschema.validate(
            {**with_places, "announcements": [{**sample["announcements"][0],
                                               "also_in": [{"id": "5"}]}]}, schema
        )  # fmt: skip
    style = {"color": 0xED4245, "footer": "f", "url": "https://example.org", "thumbnail": None,
             "fields": [{"name": "n", "value": "v", "inline": True}],
             "buttons": [{"label": "Tickets", "url": "https://example.org/t"}]}  # fmt: skip
    with_styles = {
        **with_reminders, "version": 4,
        "announcements": [{**with_reminders["announcements"][0], "style": style}],
        "templates": [{**with_reminders["templates"][0], "style": None}],
    }  # fmt: skip
    jsonschema.validate(with_styles, schema)
    plain = [{**sample["announcements"][0], "style": {**style, "url": "http://example.org"}}]
    with pytest.raises(jsonschema.ValidationError):  # https only
        jsonschema.validate({**with_styles, "announcements": plain}, schema)
    bad = [{**sample["announcements"][0], "reminder_seconds": 30}]  # under a minute
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**with_reminders, "announcements": bad}, schema)
    tidy = {"pin": True, "replace": False, "delete_after_seconds": 86400}
    with_tidy = {
        **with_places, "version": 6,
        "announcements": [{**with_places["announcements"][0], **tidy}],
        "templates": [{**with_places["templates"][0], **tidy, "delete_after_seconds": None}],
    }  # fmt: skip
    jsonschema.validate(with_tidy, schema)
    soon = [{**with_tidy["announcements"][0], "delete_after_seconds": 30}]  # under a minute
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**with_tidy, "announcements": soon}, schema)
