"""Slash commands are synced only when their definitions change, per target (global or the
dev guild): the hash of what was synced is kept in the database."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from bot import i18n
from bot.app import Crier
from bot.commands.schedule import AnnouncementCommands
from tests.bot.conftest import World, restore_discord_endpoints, run_command, settings_for

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from scheduler.testing import FakeClock

COMMANDS = {
    "schedule", "list", "cancel", "settings", "pause", "resume", "skip", "timezone", "edit",
    "info", "template", "export", "import", "remindme", "unskip", "style", "postnow", "test",
    "calendar",
}  # fmt: skip
MESSAGE_COMMANDS = {"Schedule a copy"}
"""The commands of a message's context menu (right-click → Apps)."""


@pytest.fixture
async def starts(world: World, tmp_path: Path, clock: FakeClock) -> AsyncIterator[Any]:
    """``await start(**settings)``: start a Crier on the same database and stop it again;
    returns whether it synced."""
    db = tmp_path / "crier.db"

    async def start(**overrides: Any) -> bool | None:
        app = Crier(
            settings_for(world.fake, db, **overrides), clock=clock, guild_ready_timeout=0.05
        )
        await app.start()
        try:
            return app.bot.synced_commands
        finally:
            await app.close()

    try:
        yield start
    finally:
        restore_discord_endpoints()


async def test_sync_once_not_on_every_start(world: World, starts: Any) -> None:
    calls = world.fake.command_sync_calls
    assert await starts() is True
    assert calls["global"] == 1
    assert {name for name, _ in world.fake.global_commands} == COMMANDS | MESSAGE_COMMANDS
    assert await starts() is False
    assert await starts() is False
    assert calls["global"] == 1
    assert sum(calls.values()) == 1


async def test_dev_guild_gets_its_own_sync_and_commands_live_in_one_place(
    world: World, starts: Any
) -> None:
    calls = world.fake.command_sync_calls
    gid = world.guild.id
    assert await starts() is True
    assert await starts(dev_guild_id=gid) is True
    assert calls[gid] == 1
    assert {name for name, _ in world.fake.guild_commands[gid]} == COMMANDS | MESSAGE_COMMANDS
    # The global registration is removed, so the dev guild doesn't show everything twice.
    assert calls["global"] == 2
    assert not world.fake.global_commands
    assert await starts(dev_guild_id=gid) is False
    assert (calls["global"], calls[gid]) == (2, 1)
    # Back to global: registered globally again, and removed from the dev guild.
    assert await starts() is True
    assert {name for name, _ in world.fake.global_commands} == COMMANDS | MESSAGE_COMMANDS
    assert not world.fake.guild_commands[gid]
    assert (calls["global"], calls[gid]) == (3, 2)
    assert await starts() is False


async def test_changed_definitions_are_synced_again(
    world: World, starts: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upgrade that edits a command (here /list's description) syncs once, and so does
    going back; unchanged definitions never do."""
    calls = world.fake.command_sync_calls
    list_command = AnnouncementCommands.list_announcements  # what each bot's cog copies
    original = list_command.description
    edited = "List this server's announcements (edited)"

    def listed_description() -> str:
        return world.fake.global_commands[("list", 1)].description

    assert await starts() is True
    before = listed_description()
    assert before != edited
    monkeypatch.setattr(list_command, "description", edited)
    assert await starts() is True  # the definition changed: synced
    assert (calls["global"], listed_description()) == (2, edited)
    assert await starts() is False  # the edited definition's hash is the stored one now
    monkeypatch.setattr(list_command, "description", original)
    assert await starts() is True  # back to the original: a change again
    assert (calls["global"], listed_description()) == (3, before)
    assert await starts() is False
    assert calls["global"] == 3


async def test_the_stored_hash_is_what_sync_compares_with(
    world: World, starts: Any, tmp_path: Path, clock: FakeClock
) -> None:
    """With the definitions unchanged, a stored hash that no longer matches them (a database
    from another version) makes the next start sync, and only that one."""
    assert await starts() is True
    app = Crier(settings_for(world.fake, tmp_path / "crier.db"), clock=clock)
    await app.sched.start()
    try:
        async with app.sched.transaction() as ctx:
            await ctx.db.execute("UPDATE bot_meta SET value = 'old' WHERE key LIKE 'commands:%'")
    finally:
        await app.sched.stop()
    assert await starts() is True
    assert world.fake.command_sync_calls["global"] == 2
    assert await starts() is False


async def test_synced_commands_are_usable_after_a_restart_without_sync(
    world: World, tmp_path: Path, clock: FakeClock
) -> None:
    settings = settings_for(world.fake, tmp_path / "crier.db")
    try:
        for expected in (True, False):
            app = Crier(settings, clock=clock, guild_ready_timeout=0.05)
            await app.start()
            try:
                assert app.bot.synced_commands is expected
                cb = await run_command(world, "list")
                assert cb.ephemeral
                assert cb.content
            finally:
                await app.close()
    finally:
        restore_discord_endpoints()
    assert world.fake.command_sync_calls["global"] == 1


async def test_the_synced_definitions_have_what_the_commands_promise(
    world: World, crier: Crier
) -> None:
    """Server-only commands; /settings hidden from all but Manage Server; the options each
    command documents, with autocomplete for zones and for every command's id, and
    Discord's message limit on /schedule's text."""
    commands = world.fake.global_commands
    synced = {name: c for (name, kind), c in commands.items() if kind == 1}
    assert set(synced) == COMMANDS
    menus = {name: c for (name, kind), c in commands.items() if kind == 3}
    assert set(menus) == MESSAGE_COMMANDS
    for command in [*synced.values(), *menus.values()]:
        assert command.raw["contexts"] == [0]
        assert command.raw["dm_permission"] is False
        assert bool(command.description) == (command.type == 1)
    # Right-click a message → Apps → Schedule a copy: for managers (the manager role can't
    # be said in default permissions: the handler refuses the others), in every language.
    copy = menus["Schedule a copy"]
    assert (copy.options, copy.default_member_permissions) == ([], None)
    assert copy.raw["name_localizations"] == {
        "fr": "Programmer une copie", "de": "Kopie planen", "es-ES": "Programar una copia",
        "pt-BR": "Agendar uma cópia",
    }  # fmt: skip
    manage_guild = 1 << 5
    assert synced["settings"].default_member_permissions == str(manage_guild)
    assert {n: c.default_member_permissions for n, c in synced.items() if n != "settings"} == {
        "schedule": None,
        "list": None,
        "cancel": None,
        "pause": None,
        "resume": None,
        "skip": None,
        "unskip": None,
        "timezone": None,
        "edit": None,
        "info": None,
        "template": None,
        "export": None,
        "import": None,
        "remindme": None,
        "style": None,
        "postnow": None,
        "test": None,
        "calendar": None,
    }

    def options(name: str) -> dict[str, dict[str, Any]]:
        return {o["name"]: o for o in synced[name].options}

    schedule = options("schedule")
    assert list(schedule) == [
        "when",
        "message",
        "channel",
        "repeat",
        "timezone",
        "mention",
        "until",
        "title",
        "image",
        "silent",
        "publish",
        "tags",
        "template",
        "event",
        "event_location",
        "event_minutes",
        "event_channel",
    ]
    assert schedule["template"]["autocomplete"] is True
    # An event takes place in a voice (2) or stage (13) channel, or at a location.
    assert set(schedule["event_channel"]["channel_types"]) == {2, 13}
    assert (schedule["event_minutes"]["min_value"], schedule["event_minutes"]["max_value"]) == (
        1,
        10080,
    )
    # Every destination: text (0), announcement (5), threads (10, 11, 12), forums (15) and
    # media channels (16, forums of files).
    assert set(schedule["channel"]["channel_types"]) == {0, 5, 10, 11, 12, 15, 16}
    assert schedule["image"]["type"] == 11
    assert schedule["tags"]["autocomplete"] is True
    assert schedule["title"]["max_length"] == 256
    # `when` may be left out when `repeat` names a time of day (the rule's next time is first).
    assert [n for n, o in schedule.items() if o["required"]] == []
    assert schedule["message"]["max_length"] == 2000
    assert schedule["timezone"]["autocomplete"] is True
    assert all(o["description"] for o in schedule.values())
    for name in ("cancel", "pause", "resume", "skip", "unskip", "edit", "info", "postnow", "test"):
        assert options(name)["id"]["autocomplete"] is True
        assert options(name)["id"]["required"]
    for name in ("skip", "unskip"):  # the next one, a date (and time), or a range
        assert list(options(name)) == ["id", "date", "from", "to"]
        assert [n for n, o in options(name).items() if o["required"]] == ["id"]
    assert options("timezone")["zone"]["autocomplete"] is True
    assert not options("timezone")["zone"]["required"]
    settings = options("settings")
    assert list(settings) == ["timezone", "manager_role", "log_channel", "clear", "language"]
    assert settings["timezone"]["autocomplete"] is True
    assert [c["value"] for c in settings["clear"]["choices"]] == [
        "timezone",
        "manager_role",
        "log_channel",
        "language",
    ]
    assert [c["value"] for c in settings["language"]["choices"]] == [
        "en-US", "fr", "de", "es-ES", "pt-BR",
    ]  # fmt: skip
    assert synced["list"].options == []
    edit = options("edit")
    assert list(edit) == [
        "id", "message", "when", "repeat", "channel", "timezone", "mention", "until",
        "title", "image", "silent", "update_posted", "event", "event_location",
        "event_minutes", "event_channel", "reminder", "times", "as_name", "as_avatar",
        "also_in", "pin", "replace", "delete_after",
    ]  # fmt: skip
    assert (edit["times"]["min_value"], edit["times"]["max_value"]) == (0, 10_000)
    assert (edit["as_name"]["max_length"], edit["as_avatar"]["type"]) == (80, 11)
    assert [n for n, o in edit.items() if o["required"]] == ["id"]
    assert edit["message"]["max_length"] == 2000
    assert all(edit[n]["autocomplete"] is True for n in ("id", "timezone", "mention"))
    assert all(o["description"] for o in edit.values())
    # Any member asks for reminders: their own lead, or stop.
    remindme = options("remindme")
    assert list(remindme) == ["id", "before", "stop"]
    assert [n for n, o in remindme.items() if o["required"]] == ["id"]
    assert remindme["id"]["autocomplete"] is True
    # /style: the embed's colour, footer, thumbnail and link, the link buttons; clear takes
    # the thumbnail (an attachment takes no `none`) or the whole style away.
    style = options("style")
    assert list(style) == [
        "id", "color", "footer", "thumbnail", "url", "buttons", "clear", "update_posted",
    ]  # fmt: skip
    assert [n for n, o in style.items() if o["required"]] == ["id"]
    assert style["thumbnail"]["type"] == 11
    assert style["footer"]["max_length"] == 2048
    assert [c["value"] for c in style["clear"]["choices"]] == ["thumbnail", "all"]
    # An announcement's next post, now or as a test: its id alone.
    assert list(options("postnow")) == list(options("test")) == ["id"]


MAX_OPTIONS = 25
"""Options one command (or subcommand) may have: Discord refuses a command with more."""


async def test_no_command_or_subcommand_has_more_than_25_options(
    world: World, crier: Crier
) -> None:
    """Every command's and subcommand's options counted as synced (a group's subcommands
    each on their own): none past Discord's 25, so each may still grow or is refused here
    first. /schedule keeps its 17 (people know them); the new ones went to /edit and /style."""
    counts: dict[str, int] = {}

    def count(path: str, options: list[dict[str, Any]]) -> None:
        subs = [o for o in options if o["type"] in (1, 2)]  # subcommand, subcommand group
        if not subs:
            counts[path] = len(options)
        for sub in subs:
            count(f"{path} {sub['name']}", sub.get("options") or [])

    for (name, _), command in world.fake.global_commands.items():
        count(name, command.options)
    assert counts["schedule"] == 17
    assert counts["template save"] >= 2  # subcommands are counted on their own
    over = {path: n for path, n in counts.items() if n > MAX_OPTIONS}
    assert over == {}


async def test_synced_definitions_are_what_discords_api_spec_accepts(
    world: World, starts: Any
) -> None:
    """The command list the bot syncs passes Discord's OpenAPI spec; in particular the id
    options of /cancel, /pause, /resume, /skip, /edit and /info are bounded at 2**53 - 1, the
    spec's largest integer (2**53 was refused)."""
    assert await starts() is True
    (sync,) = [r for r in world.fake.requests if r.method == "PUT" and "/commands" in r.path]
    assert sync.status == 200
    assert sync.spec_violations == []
    bounds = {
        cmd["name"]: (option["min_value"], option["max_value"])
        for cmd in sync.body
        for option in cmd.get("options", [])
        if option["name"] == "id"
    }
    assert bounds == dict.fromkeys(
        [
            "cancel",
            "pause",
            "resume",
            "skip",
            "unskip",
            "edit",
            "info",
            "remindme",
            "style",
            "postnow",
            "test",
        ],
        (1, 2**53 - 1),
    )


async def test_a_changed_translation_is_synced_and_unchanged_catalogs_are_not(
    world: World, starts: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hash covers the localizations: a catalog whose French name for /list changes (an
    upgrade that corrects a translation) syncs once, and so does going back; the same
    catalogs on every start never do."""
    calls = world.fake.command_sync_calls
    french = i18n.catalogs()["fr"].entries

    def listed_in_french() -> str:
        return world.fake.global_commands[("list", 1)].raw["name_localizations"]["fr"]

    assert await starts() is True
    assert listed_in_french() == "liste"
    assert await starts() is False  # the catalogs, read again, are the same
    monkeypatch.setitem(french, ("command", "list"), "annonces")
    assert await starts() is True
    assert (calls["global"], listed_in_french()) == (2, "annonces")
    assert await starts() is False
    monkeypatch.setitem(french, ("command", "list"), "liste")
    assert await starts() is True
    assert (calls["global"], listed_in_french()) == (3, "liste")
    assert await starts() is False
    assert calls["global"] == 3
