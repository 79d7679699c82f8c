"""Every command that names an announcement, run by a manager who cannot see its channel
(issue 32): it shows its times and state (``/info``), never its text, and refuses to change
or copy it (``/edit`` could move it to a channel they see, then post its text there).

The table lists each command with an announcement number among its options (found in the
command tree: a new one not in the table fails the test) and what must come of it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import discord
import pytest
from discord import app_commands

from bot.limits import MAX_ANNOUNCEMENT_ID
from bot.render import HIDDEN
from tests.bot.conftest import World, db_snapshot, schedule_id
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from bot.app import Crier

SECRET = "SECRET-7391"
CANT_SEE = "is for a channel you can't see, so you can't change or copy it."

COMMANDS: dict[str, tuple[dict[str, Any], str]] = {
    "info": ({}, HIDDEN),
    "cancel": ({}, CANT_SEE),
    "pause": ({}, CANT_SEE),
    "resume": ({}, CANT_SEE),
    "skip": ({}, CANT_SEE),
    "unskip": ({"date": "tomorrow"}, CANT_SEE),
    "remindme": ({}, "is for a channel you can't see"),
    "style": ({"color": "#5865F2"}, CANT_SEE),
    "postnow": ({}, CANT_SEE),
    "test": ({}, CANT_SEE),
    "edit": ({"channel": "general"}, CANT_SEE),
    "template save": ({"name": "copied"}, "is for a channel you can't see, so you can't save"),
}
"""Each command naming an announcement: its other options (a channel by its world name) and
what its answer says."""


@pytest.fixture
def crier(crier_on_each_db: Crier) -> Crier:
    return crier_on_each_db  # on SQLite and on PostgreSQL


def announcement_commands(crier: Crier) -> dict[str, str]:
    """The commands with an announcement number among their options, and that option's name."""
    found = {}
    for command in crier.bot.tree.walk_commands():
        if not isinstance(command, app_commands.Command):
            continue
        for p in command.parameters:
            if p.type == discord.AppCommandOptionType.integer and (
                p.max_value == MAX_ANNOUNCEMENT_ID
            ):
                found[command.qualified_name] = p.display_name
    return found


async def test_a_manager_who_cannot_see_the_channel_changes_and_copies_nothing_of_it(
    world: World, crier: Crier
) -> None:
    options = announcement_commands(crier)
    assert set(options) == set(COMMANDS)
    n = await schedule_id(world, when="in 1h", repeat="hourly", message=f"{SECRET} text")
    carol = world.guild.add_member(name="carol", roles=world.admin.roles)  # a manager
    world.news.set_overwrite(carol, deny=P.VIEW_CHANNEL)
    for name, (extra, says) in COMMANDS.items():
        given = {k: getattr(world, v) if k == "channel" else v for k, v in extra.items()}
        before = await db_snapshot(crier)
        handle = await world.fake.invoke_command(
            world.guild, world.general, carol, name, {options[name]: n, **given}
        )
        cb = await handle.response(timeout=5)
        content = cb.content or ""
        assert cb.ephemeral, name
        assert says in content, (name, content)
        assert SECRET not in content, name
        assert await db_snapshot(crier) == before, name
