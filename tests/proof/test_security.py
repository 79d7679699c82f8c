"""Security: who may do what, across guilds, channels and pings, beyond tests/bot/test_permissions.

``tests/bot/test_permissions.py`` covers the manager checks of /schedule, /cancel and
/settings one by one, another guild's id for /cancel and autocomplete, and the refusals of
an explicit ``mention``. Here:

* every command and component, by a member without rights: refused with nothing written,
  or (/list, autocomplete, page buttons) read-only, showing only what that member may see;
* a right lost between opening the /schedule form and submitting it;
* the /list page buttons (persistent custom ids ``crier:list:<page>``) clicked in another
  guild, including a page number only the first guild has: only the clicker's guild shows;
* mentions typed in the text by a member who may not ping @everyone, @here or a role: the
  posted message pings nothing of the kind (the fake Discord's ``pings``), while the same
  text from a member who may, does (so the check can fail);
* a channel the member cannot see: they can't schedule into it, and its announcements'
  text is not shown to them in /list or in /cancel's autocomplete;
* another guild's channel or role given as an option.

Every refusal writes nothing (all tables compared before and after). That the token never
reaches a log line is proven in ``tests/bot/test_config.py``
(``test_the_token_never_appears_in_debug_logs``, ``test_log_lines_never_carry_the_token``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from tests.bot.conftest import World, db_snapshot, run_command
from tests.fakediscord import CommandNotAvailable, Member
from tests.fakediscord import Permissions as P
from tests.fakediscord.interactions import (
    CB_AUTOCOMPLETE_RESULT,
    CB_CHANNEL_MESSAGE,
    CB_MODAL,
    CB_UPDATE_MESSAGE,
    iter_components,
)

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.fakediscord.state import Channel

NEED_MANAGER = "You need the **Manage Server** permission"


async def advance(crier: Crier, clock: FakeClock, delta: timedelta) -> None:
    clock.advance(delta)
    await crier.sched.wait_idle()


def modal_input(h: Any) -> str:
    assert h.modal is not None
    components = iter_components(h.modal["components"])
    [field] = [c for c in components if c["type"] == 4 and c["label"] == "Message"]
    return str(field["custom_id"])


def herald(world: World) -> Member:
    """A manager who may also ping @everyone, @here and every role."""
    role = world.guild.add_role("heralds", P.MANAGE_GUILD | P.MENTION_EVERYONE)
    return world.guild.add_member(name="herald", roles=[role])


# --- every command, no rights ----------------------------------------------------------------


async def test_every_command_and_button_by_a_member_without_rights(
    world: World, crier: Crier
) -> None:
    for n in range(1, 8):  # two pages, so /list has buttons
        await run_command(world, "schedule", when=f"in {n}h", message=f"visible {n}")
    who, fake = world.member, world.fake
    before = await db_snapshot(crier)

    async def refused(name: str, **options: Any) -> None:
        cb = await run_command(world, name, by=who, **options)
        assert cb.type == CB_CHANNEL_MESSAGE, cb.data
        assert cb.ephemeral, cb.data
        assert NEED_MANAGER in (cb.content or ""), cb.content
        assert await db_snapshot(crier) == before

    await refused("schedule", when="in 1h", message="mine now")
    await refused("schedule", when="in 1h")  # the form is refused before it is shown
    await refused("cancel", id=1)
    # /settings: Discord hides it from them; if an admin un-hides it, the handler refuses.
    try:
        await fake.invoke_command(
            world.guild, world.general, who, "settings", {"clear": "timezone"}
        )
        raise AssertionError("Discord offered /settings to a member without Manage Server")
    except CommandNotAvailable:
        pass
    h = await fake.invoke_command(
        world.guild, world.general, who, "settings", {"timezone": "Europe/Paris"},
        check_permissions=False,
    )  # fmt: skip
    cb = await h.response()
    assert cb.ephemeral
    assert "Only members with **Manage Server**" in (cb.content or "")
    assert await db_snapshot(crier) == before

    # Read-only for everyone: /list, its buttons, /cancel's autocomplete.
    h = await fake.invoke_command(world.guild, world.general, who, "list")
    cb = await h.response()
    assert cb.ephemeral
    assert "(7 in all)" in (cb.content or "")
    cb = await (await h.click("crier:list:1")).response()
    assert cb.type == CB_UPDATE_MESSAGE
    assert "page 2 of 2" in (cb.content or "")
    h = await fake.invoke_autocomplete(
        world.guild, world.general, who, "cancel", {"id": ""}, focused="id"
    )
    assert (await h.response()).type == CB_AUTOCOMPLETE_RESULT
    assert await db_snapshot(crier) == before
    assert {j.state for j in await crier.sched.list_jobs()} == {"pending"}


async def test_the_form_submitted_after_losing_the_right_is_refused(
    world: World, crier: Crier
) -> None:
    """A manager opens the /schedule form, loses the right while typing, then submits it:
    the right is checked again on submit."""
    announcers = world.guild.add_role("announcers")
    await run_command(world, "settings", manager_role=announcers)
    who = world.guild.add_member(name="eve", roles=[announcers])
    h = await world.fake.invoke_command(
        world.guild, world.general, who, "schedule", {"when": "in 1h"}
    )
    assert (await h.response()).type == CB_MODAL
    who.remove_role(announcers)  # demoted while the form is open
    before = await db_snapshot(crier)
    sub = await h.submit_modal({modal_input(h): "posted by someone who may no longer"})
    cb = await sub.response()
    assert cb.ephemeral, cb.content
    assert NEED_MANAGER in (cb.content or ""), cb.content
    assert await db_snapshot(crier) == before


# --- guilds ----------------------------------------------------------------------------------


async def test_list_buttons_clicked_in_another_guild_show_only_that_guild(
    world: World, other: World, crier: Crier
) -> None:
    for n in range(1, 14):  # three pages here
        await run_command(world, "schedule", when=f"in {n}h", message=f"first-guild secret {n}")
    for n in range(1, 8):  # two pages there
        await run_command(other, "schedule", when=f"in {n}h", message=f"second guild {n}")
    fake, who = other.fake, other.member  # a plain member of the second guild
    before = await db_snapshot(crier)

    h = await fake.invoke_command(other.guild, other.general, who, "list")
    cb = await h.response()
    assert (cb.content or "").startswith("**Announcements** — page 1 of 2 (7 in all)")
    h2 = await h.click("crier:list:1")
    page2 = (await h2.response()).content or ""
    assert page2.startswith("**Announcements** — page 2 of 2 (7 in all)")
    assert "second guild 7" in page2
    assert "first-guild" not in page2

    # The same custom ids on a message in the second guild, with a page number only the
    # first guild has (the custom id carries the page, never the guild): still only theirs.
    for page in ("2", "99", "0"):
        forged = fake._new_message(
            other.general, fake.bot_user,
            {"content": "pages", "components": [{"type": 1, "components": [
                {"type": 2, "style": 2, "label": page, "custom_id": f"crier:list:{page}"}
            ]}]},
            author_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES,
        )  # fmt: skip
        cb = await (await fake.click_button(forged, f"crier:list:{page}", who)).response()
        content = cb.content or ""
        assert cb.type == CB_UPDATE_MESSAGE, cb.data
        assert "(7 in all)" in content, content
        assert "first-guild" not in content, content
    assert await db_snapshot(crier) == before


async def test_another_guilds_channel_or_role_as_an_option_is_refused(
    world: World, other: World, crier: Crier
) -> None:
    before = await db_snapshot(crier)
    theirs = other.guild.add_role("theirs", mentionable=True)
    for options, says in (
        ({"channel": other.news}, "I can't find that channel in this server."),
        ({"mention": theirs}, "I can't find that role in this server."),
    ):
        cb = await run_command(world, "schedule", when="in 1h", message="x", **options)
        assert cb.ephemeral, cb.content
        assert says in (cb.content or ""), cb.content
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "settings", {"log_channel": other.news}
    )
    cb = await h.response()
    assert cb.ephemeral
    assert "I can't find that channel in this server." in (cb.content or "")
    assert await db_snapshot(crier) == before


# --- pings -----------------------------------------------------------------------------------


async def test_mentions_typed_in_the_text_never_ping_beyond_the_members_rights(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The admin may manage announcements but not ping @everyone, @here or unmentionable
    roles; the bot itself may (Mention Everyone). Whatever the admin types, the posted
    message pings only what the admin could have pinged: users and mentionable roles. The
    same text from a herald (who may) pings all of it."""
    g = world.guild
    quiet = g.add_role("quiet", mentionable=False)
    loud = g.add_role("loud", mentionable=True)
    text = (
        f"@everyone @here <@&{quiet.id}> <@&{loud.id}> <@&{g.id}> "
        f"<@{world.member.user.id}> @every\u200bone ＠here"
    )
    by_admin = await run_command(world, "schedule", when="in 10m", message=text)
    assert "will show but not ping" in (by_admin.content or "")
    h = await world.fake.invoke_command(
        g, world.general, world.admin, "schedule", {"when": "in 10m"}
    )
    await h.response()
    await (await h.submit_modal({modal_input(h): text})).response()  # the form path too
    by_herald = await run_command(world, "schedule", by=herald(world), when="in 10m", message=text)
    assert "Scheduled announcement **#3**" in (by_herald.content or "")
    await advance(crier, clock, timedelta(minutes=10))

    admins_1, admins_2, heralds = world.fake.bot_messages(world.general)
    for msg in (admins_1, admins_2):
        assert msg.content == text
        assert not msg.pings.everyone, msg.pings
        assert not msg.pings.here, msg.pings
        assert msg.pings.roles == frozenset({loud.id}), msg.pings
        assert msg.pings.users == frozenset({world.member.user.id}), msg.pings
    assert heralds.content == text
    assert heralds.pings.everyone, heralds.pings
    assert heralds.pings.here, heralds.pings
    assert {quiet.id, loud.id} <= heralds.pings.roles, heralds.pings


# --- channels --------------------------------------------------------------------------------


def private_channel(world: World, name: str, *members: Member) -> Channel:
    """A channel hidden from @everyone, open to ``members`` and the bot."""
    ch = world.guild.add_channel(name)
    ch.set_overwrite(world.guild.everyone_role, deny=P.VIEW_CHANNEL)
    for m in members:
        ch.set_overwrite(m, allow=P.VIEW_CHANNEL | P.SEND_MESSAGES)
    ch.set_overwrite(world.guild.bot_role, allow=P.VIEW_CHANNEL | P.SEND_MESSAGES)
    return ch


async def test_a_channel_the_member_cannot_see(world: World, crier: Crier) -> None:
    """A manager who can't see #staff can't schedule there; and the text of an announcement
    meant for #staff is shown neither in /list nor in /cancel's autocomplete to members who
    can't see #staff (Discord itself would never show them a message there)."""
    secret = "ban wave at 18:00, don't tell anyone"
    staff = private_channel(world, "staff", world.admin)
    manager = world.guild.add_member(
        name="mallory", roles=[world.guild.add_role("m", P.MANAGE_GUILD)]
    )
    before = await db_snapshot(crier)
    cb = await run_command(world, "schedule", by=manager, when="in 1h", message="x", channel=staff)
    assert cb.ephemeral
    assert f"You can't post in <#{staff.id}> yourself" in (cb.content or "")
    assert await db_snapshot(crier) == before

    await run_command(world, "schedule", when="in 1h", message=secret, channel=staff)
    await run_command(world, "schedule", when="in 2h", message="picnic on friday")
    for who in (world.member, manager):
        listing = (await run_command(world, "list", by=who)).content or ""
        assert "(2 in all)" in listing
        assert "picnic on friday" in listing
        assert "ban wave" not in listing, listing
        for typed in ("", "ban", "#1"):
            h = await world.fake.invoke_autocomplete(
                world.guild, world.general, who, "cancel", {"id": typed}, focused="id"
            )
            labels = [c["name"] for c in (await h.response()).choices]
            assert not any("ban wave" in label for label in labels), labels
        h = await world.fake.invoke_autocomplete(
            world.guild, world.general, who, "cancel", {"id": "ban"}, focused="id"
        )
        assert (await h.response()).choices == []  # no search by the hidden text either
    # Those who can see #staff see it.
    listing = (await run_command(world, "list")).content or ""
    assert "ban wave at 18:00" in listing
    h = await world.fake.invoke_autocomplete(
        world.guild, world.general, world.admin, "cancel", {"id": "ban"}, focused="id"
    )
    assert [c["value"] for c in (await h.response()).choices] == [1]
