"""Who may do what, decided in the handler: managers, channel rights, pings, and guild scoping.

Every refusal is ephemeral, says why, and writes nothing (a snapshot of every table)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.bot.conftest import World, db_snapshot, run_command
from tests.fakediscord import CommandNotAvailable
from tests.fakediscord import Permissions as P
from tests.fakediscord.interactions import CB_AUTOCOMPLETE_RESULT, CB_CHANNEL_MESSAGE

if TYPE_CHECKING:
    from bot.app import Crier

NEED_MANAGER = "You need the **Manage Server** permission"


async def refused(world: World, crier: Crier, name: str, says: str, **kw: Any) -> str:
    """Run a command that must be refused: ephemeral, says ``says``, nothing written."""
    before = await db_snapshot(crier)
    cb = await run_command(world, name, **kw)
    content = cb.content or ""
    assert cb.type == CB_CHANNEL_MESSAGE
    assert cb.ephemeral
    assert says in content, content
    assert await db_snapshot(crier) == before
    return content


# --- managers -----------------------------------------------------------------------------------


async def test_member_without_rights_cannot_schedule(world: World, crier: Crier) -> None:
    text = await refused(
        world, crier, "schedule", NEED_MANAGER, by=world.member, when="in 1h", message="hi"
    )
    assert text == f"{NEED_MANAGER} to manage announcements."
    # Nor through the modal: refused before it is shown.
    await refused(world, crier, "schedule", NEED_MANAGER, by=world.member, when="in 1h")


async def test_member_without_rights_cannot_cancel(world: World, crier: Crier) -> None:
    await run_command(world, "schedule", when="in 1h", message="keep me")
    await refused(world, crier, "cancel", NEED_MANAGER, by=world.member, id=1)
    [job] = await crier.sched.list_jobs()
    assert job.state == "pending"


async def test_list_is_open_to_every_member(world: World, crier: Crier) -> None:
    await run_command(world, "schedule", when="in 1h", message="visible")
    cb = await run_command(world, "list", by=world.member)
    assert cb.ephemeral
    assert "**#1**" in (cb.content or "")


async def test_manager_role_allows_schedule_and_cancel(world: World, crier: Crier) -> None:
    announcers = world.guild.add_role("announcers")
    cb = await run_command(world, "settings", manager_role=announcers)
    assert f"**Manager role:** <@&{announcers.id}>" in (cb.content or "")
    assert (await crier.bot.announcements.settings(world.guild.id)).manager_role_id == announcers.id

    # Without the role, still refused; the answer names the role that would do.
    text = await refused(
        world, crier, "schedule", NEED_MANAGER, by=world.member, when="in 1h", message="x"
    )
    assert f"or the <@&{announcers.id}> role" in text

    world.member.add_role(announcers)
    cb = await run_command(world, "schedule", by=world.member, when="in 1h", message="mine")
    assert "Scheduled announcement **#1**" in (cb.content or "")
    cb = await run_command(world, "cancel", by=world.member, id=1)
    assert "Canceled announcement **#1**" in (cb.content or "")

    # The role can be cleared again.
    await run_command(world, "settings", clear="manager_role")
    await refused(
        world, crier, "schedule", NEED_MANAGER, by=world.member, when="in 1h", message="x"
    )


async def test_settings_needs_manage_server_in_discord_and_in_the_handler(
    world: World, crier: Crier
) -> None:
    tz = "Europe/Paris"
    # Discord's UI hides /settings (default_member_permissions = Manage Server) ...
    with pytest.raises(CommandNotAvailable):
        await world.fake.invoke_command(
            world.guild, world.general, world.member, "settings", {"timezone": tz}
        )
    # ... but a server admin can override that under Server Settings → Integrations, so the
    # handler checks too: neither a plain member nor one with the manager role may change it.
    announcers = world.guild.add_role("announcers")
    await run_command(world, "settings", manager_role=announcers)
    for member in (world.member, world.guild.add_member(name="eve", roles=[announcers])):
        before = await db_snapshot(crier)
        h = await world.fake.invoke_command(
            world.guild, world.general, member, "settings", {"timezone": tz},
            check_permissions=False,
        )  # fmt: skip
        cb = await h.response()
        assert cb.ephemeral
        assert cb.content == "Only members with **Manage Server** can change these settings."
        assert await db_snapshot(crier) == before
    assert (await crier.bot.announcements.settings(world.guild.id)).timezone is None


async def test_settings_shows_and_validates(world: World, crier: Crier) -> None:
    cb = await run_command(world, "settings")
    assert cb.ephemeral
    assert cb.content == (
        "⚙️ **Settings**:\n**Default time zone:** UTC (not set)\n"
        "**Manager role:** none (Manage Server only)\n**Log channel for failures:** none\n"
        "**Language of posts for everyone:** the server's own"
    )
    await refused(
        world, crier, "settings", "The manager role can't be @everyone.",
        manager_role=world.guild.everyone_role,
    )  # fmt: skip
    await refused(
        world, crier, "settings", "I don't know the time zone `Nowhere`", timezone="Nowhere"
    )
    hidden = world.guild.add_channel("hidden")
    hidden.set_overwrite(world.guild.bot_role, deny=P.VIEW_CHANNEL)
    await refused(
        world, crier, "settings", f"I can't post in <#{hidden.id}>; give me View Channel",
        log_channel=hidden,
    )  # fmt: skip
    cb = await run_command(world, "settings", log_channel=world.news)
    assert f"**Log channel for failures:** <#{world.news.id}>" in (cb.content or "")


# --- channel rights -----------------------------------------------------------------------------


async def test_member_who_cannot_post_in_the_channel_is_refused(world: World, crier: Crier) -> None:
    world.news.set_overwrite(world.admin, deny=P.SEND_MESSAGES)
    await refused(
        world, crier, "schedule",
        f"You can't post in <#{world.news.id}> yourself, so you can't schedule",
        when="in 1h", message="x", channel=world.news,
    )  # fmt: skip
    world.news.set_overwrite(world.admin, deny=P.VIEW_CHANNEL)
    await refused(
        world, crier, "schedule", f"You can't post in <#{world.news.id}> yourself",
        when="in 1h", message="x", channel=world.news,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("deny", "says"),
    [
        (P.VIEW_CHANNEL, "I need **View Channel** and **Send Messages** in <#{id}> to post there"),
        (P.SEND_MESSAGES, "I need **Send Messages** in <#{id}> to post there"),
    ],
)
async def test_channel_the_bot_cannot_use_is_refused(
    world: World, crier: Crier, deny: int, says: str
) -> None:
    world.news.set_overwrite(world.guild.bot_role, deny=deny)
    text = await refused(
        world, crier, "schedule", says.format(id=world.news.id),
        when="in 1h", message="x", channel=world.news,
    )  # fmt: skip
    assert "Ask an admin to grant it" in text


async def test_a_voice_channel_is_refused(world: World, crier: Crier) -> None:
    voice = world.guild.add_channel("lounge", type=2)
    await refused(
        world,
        crier,
        "schedule",
        "Announcements can go to text channels, announcement channels, threads or forum "
        "channels only.",
        where=voice,
        when="in 1h",
        message="x",
    )


# --- pings --------------------------------------------------------------------------------------


async def test_everyone_needs_mention_everyone(world: World, crier: Crier) -> None:
    await refused(
        world, crier, "schedule",
        f"You don't have **Mention @everyone** in <#{world.general.id}>, so you can't "
        "schedule an @everyone ping there.",
        when="in 1h", message="x", mention=world.guild.everyone_role,
    )  # fmt: skip


async def test_everyone_needs_the_bot_to_have_mention_everyone(world: World, crier: Crier) -> None:
    heralds = world.guild.add_role("heralds", P.MANAGE_GUILD | P.MENTION_EVERYONE)
    who = world.guild.add_member(name="herald", roles=[heralds])
    world.guild.set_bot_permissions(P.VIEW_CHANNEL | P.SEND_MESSAGES)
    await refused(
        world, crier, "schedule", "I need **Mention @everyone** in",
        by=who, when="in 1h", message="x", mention=world.guild.everyone_role,
    )  # fmt: skip


async def test_role_pings(world: World, crier: Crier) -> None:
    quiet = world.guild.add_role("quiet", mentionable=False)
    await refused(
        world, crier, "schedule",
        f"<@&{quiet.id}> can't be mentioned by you (it isn't mentionable and you don't have "
        "**Mention @everyone, @here and All Roles**)",
        when="in 1h", message="x", mention=quiet,
    )  # fmt: skip
    # Someone with Mention @everyone may ping a role that isn't mentionable.
    heralds = world.guild.add_role("heralds", P.MANAGE_GUILD | P.MENTION_EVERYONE)
    who = world.guild.add_member(name="herald", roles=[heralds])
    cb = await run_command(world, "schedule", by=who, when="in 1h", message="x", mention=quiet)
    assert f"**Pings:** <@&{quiet.id}>" in (cb.content or "")


async def test_role_typed_in_the_text_pings_only_if_allowed(world: World, crier: Crier) -> None:
    quiet = world.guild.add_role("quiet", mentionable=False)
    loud = world.guild.add_role("loud", mentionable=True)
    cb = await run_command(
        world, "schedule", when="in 1h", message=f"<@&{quiet.id}> and <@&{loud.id}>"
    )
    assert f"<@&{quiet.id}> in the text will show but not ping." in (cb.content or "")
    [a] = (await crier.bot.announcements.listing(world.guild.id, 0, 10)).items
    assert a.allowed_mentions["roles"] == [str(loud.id)]


# --- guild scoping ------------------------------------------------------------------------------


async def test_ids_are_numbered_per_guild(world: World, other: World, crier: Crier) -> None:
    for w, text in ((world, "here one"), (other, "there one"), (world, "here two")):
        await run_command(w, "schedule", when="in 1h", message=text)
    mine = (await crier.bot.announcements.listing(world.guild.id, 0, 10)).items
    theirs = (await crier.bot.announcements.listing(other.guild.id, 0, 10)).items
    assert sorted((a.local_id, a.content) for a in mine) == [(1, "here one"), (2, "here two")]
    assert [(a.local_id, a.content) for a in theirs] == [(1, "there one")]


async def test_cancel_with_another_guilds_id_is_not_found(
    world: World, other: World, crier: Crier
) -> None:
    await run_command(other, "schedule", when="in 1h", message="theirs")
    await run_command(other, "schedule", when="in 2h", message="theirs too")
    await run_command(world, "schedule", when="in 1h", message="mine")
    text = await refused(world, crier, "cancel", "announcement #2 not found", id=2)
    assert "/list" in text
    # #1 here is this guild's own; the other guild's #1 stays scheduled.
    cb = await run_command(world, "cancel", id=1)
    assert "Canceled announcement **#1**" in (cb.content or "")
    theirs = (await crier.bot.announcements.listing(other.guild.id, 0, 10)).items
    assert {a.state for a in theirs} == {"scheduled"}


async def test_list_shows_only_this_guilds(world: World, other: World, crier: Crier) -> None:
    await run_command(world, "schedule", when="in 1h", message="mine only")
    await run_command(other, "schedule", when="in 1h", message="theirs only")
    await run_command(other, "schedule", when="in 2h", message="theirs again")
    content = (await run_command(world, "list")).content or ""
    assert "(1 in all)" in content
    assert "mine only" in content
    assert "theirs" not in content
    content = (await run_command(other, "list")).content or ""
    assert "(2 in all)" in content
    assert "mine" not in content


async def cancel_choices(w: World, typed: str) -> list[dict[str, Any]]:
    h = await w.fake.invoke_autocomplete(
        w.guild, w.general, w.admin, "cancel", {"id": typed}, focused="id"
    )
    cb = await h.response()
    assert cb.type == CB_AUTOCOMPLETE_RESULT
    return cb.choices


async def test_cancel_autocomplete_lists_this_guilds_live_ones(
    world: World, other: World, crier: Crier
) -> None:
    await run_command(world, "schedule", when="in 1h", message="Standup")
    await run_command(world, "schedule", when="in 2h", message="Release party")
    await run_command(world, "schedule", when="in 3h", message="Standup reminder")
    await run_command(world, "schedule", when="in 4h", message="Gone")
    await run_command(world, "cancel", id=4)
    await run_command(other, "schedule", when="in 1h", message="Standup elsewhere")

    choices = await cancel_choices(world, "")
    assert [c["value"] for c in choices] == [3, 2, 1]  # live only, newest first
    assert choices[0]["name"].startswith("#3 · Mar 01 15:00 UTC · Standup reminder")
    assert [c["value"] for c in await cancel_choices(world, "stand")] == [3, 1]
    assert [c["value"] for c in await cancel_choices(world, "#2")] == [2]
    assert [c["value"] for c in await cancel_choices(world, "elsewhere")] == []
    assert [c["value"] for c in await cancel_choices(other, "")] == [1]
    assert "Standup elsewhere" in (await cancel_choices(other, ""))[0]["name"]


async def test_cancel_autocomplete_caps_at_25(world: World, crier: Crier) -> None:
    for n in range(30):
        await run_command(world, "schedule", when=f"in {n + 1}h", message=f"n{n}")
    choices = await cancel_choices(world, "")
    assert [c["value"] for c in choices] == list(range(30, 5, -1))
