"""/info and the one id autocomplete, end to end: through the real discord.py client against
the fake Discord, on a FakeClock, with the database checked.

/info shows an announcement in full (its text as it will post, its next five times computed
from its rule, its last deliveries with links and reasons, its change history) within
Discord's 2000 characters, to the members who may manage it, never the text of a channel the
reader can't see, and never another guild's announcement. Every ``id`` option's autocomplete
offers this guild's announcements in the states its command accepts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import discord
import pytest
from discord import app_commands

from bot.commands.autocomplete import ACCEPTS, announcement_ids
from bot.db import BotDb
from bot.models import AnnouncementState, HistoryAction
from bot.render import HIDDEN
from tests.bot.conftest import (
    NOW,
    CrierFactory,
    World,
    announcement_schedules,
    db_snapshot,
    run_command,
)
from tests.bot.test_commands import any_db_crier  # noqa: F401  (a fixture: SQLite and PostgreSQL)
from tests.fakediscord import Permissions as P
from tests.fakediscord.interactions import CB_AUTOCOMPLETE_RESULT, CB_CHANNEL_MESSAGE

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock

NEED_MANAGER = "You need the **Manage Server** permission"


def stamp(dt: datetime) -> str:
    n = int(dt.timestamp())
    return f"<t:{n}:F> (<t:{n}:R>)"


def short(dt: datetime) -> str:
    return f"<t:{int(dt.timestamp())}:f>"


def section(page: str, title: str) -> list[str]:
    """The lines of the /info section ``title`` (up to the next bold heading)."""
    lines = page.split("\n")
    start = lines.index(f"**{title}:**") + 1
    out = []
    for line in lines[start:]:
        if line.startswith("**"):
            break
        out.append(line)
    return out


async def info(world: World, id: int, **kw: Any) -> str:
    cb = await run_command(world, "info", id=id, **kw)
    assert cb.type == CB_CHANNEL_MESSAGE
    assert cb.ephemeral
    # Nothing it shows may ping: not the mention, not a role or a member in the text.
    assert cb.data["allowed_mentions"]["parse"] == []
    assert not cb.data["allowed_mentions"].get("roles")
    assert not cb.data["allowed_mentions"].get("users")
    content = cb.content or ""
    assert len(content) <= 2000
    return content


async def advance(app: Crier, clock: FakeClock, delta: timedelta) -> None:
    clock.advance(delta)
    await app.sched.wait_idle()


async def row_id(app: Crier, world: World, local_id: int) -> int:
    return (await app.bot.announcements.get(world.guild.id, local_id)).id


# --- /info --------------------------------------------------------------------------------------


async def test_info_of_a_one_off_before_and_after_it_is_sent(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    role = world.guild.add_role("raiders", mentionable=True)
    await run_command(
        world, "schedule", when="in 10m", message="Raid at nine!\nBring potions.",
        channel=world.news, mention=role,
    )  # fmt: skip
    first = NOW + timedelta(minutes=10)
    page = await info(world, 1)
    lines = page.split("\n")
    assert lines[0] == (
        f"ℹ️ Announcement **#1** in <#{world.news.id}> · 🕒 scheduled · by <@{world.admin.user.id}>"
    )
    assert "**Repeats:** no (posted once)" in lines
    assert f"**Pings:** <@&{role.id}>" in lines
    assert section(page, "Next times") == [f"• {stamp(first)}"]
    assert section(page, "Last deliveries") == ["• none yet"]
    assert section(page, "History") == [f"• {short(NOW)} created by <@{world.admin.user.id}>"]
    # The text exactly as it will post: the mention first.
    assert page.endswith(
        f"**Text as it will post:**\n> <@&{role.id}> Raid at nine!\n> Bring potions."
    )

    await advance(crier, clock, timedelta(minutes=10))
    [posted] = world.fake.bot_messages(world.news)
    page = await info(world, 1)
    assert "· ✅ sent ·" in page.split("\n")[0]
    assert section(page, "Next times") == ["• none (it was posted)"]
    link = f"https://discord.com/channels/{world.guild.id}/{world.news.id}/{posted.id}"
    assert section(page, "Last deliveries") == [f"• {short(first)} — ✅ posted {link}"]


async def test_info_of_a_recurring_one_across_a_dst_change(world: World, crier: Crier) -> None:
    """Daily at 09:00 New York from Friday March 8th 2030: EST (UTC-5) until Sunday March
    10th 02:00, EDT (UTC-4) after it. The next five times follow the wall clock."""
    await run_command(
        world, "schedule", when="2030-03-08 09:00", message="Morning", repeat="daily",
        timezone="America/New_York",
    )  # fmt: skip
    expected = [
        datetime(2030, 3, 8, 14, tzinfo=UTC),  # Friday, EST
        datetime(2030, 3, 9, 14, tzinfo=UTC),  # Saturday, EST
        datetime(2030, 3, 10, 13, tzinfo=UTC),  # Sunday, EDT from 02:00
        datetime(2030, 3, 11, 13, tzinfo=UTC),
        datetime(2030, 3, 12, 13, tzinfo=UTC),
    ]
    page = await info(world, 1)
    assert "**Repeats:** every day at 09:00 (America/New_York)" in page.split("\n")
    assert section(page, "Next times") == [f"• {stamp(t)}" for t in expected]
    a = await crier.bot.announcements.get(world.guild.id, 1)
    [schedule] = await announcement_schedules(crier)
    assert schedule.name == a.schedule_name
    assert schedule.next_fire == expected[0]


async def test_info_of_a_recurring_one_after_its_first_posts(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await run_command(world, "schedule", when="in 1h", message="tick", repeat="every 2h")
    await advance(crier, clock, timedelta(hours=1))
    await advance(crier, clock, timedelta(hours=2))
    first, second = world.fake.bot_messages(world.general)
    page = await info(world, 1)
    assert section(page, "Next times") == [
        f"• {stamp(NOW + timedelta(hours=5 + 2 * k))}" for k in range(5)
    ]
    base = f"https://discord.com/channels/{world.guild.id}/{world.general.id}"
    assert section(page, "Last deliveries") == [  # newest first
        f"• {short(NOW + timedelta(hours=3))} — ✅ posted {base}/{second.id}",
        f"• {short(NOW + timedelta(hours=1))} — ✅ posted {base}/{first.id}",
    ]


async def test_info_says_how_late_a_post_was(
    world: World, crier_factory: CrierFactory, clock: FakeClock
) -> None:
    app = await crier_factory()
    await run_command(world, "schedule", when="in 10m", message="after downtime")
    await app.close()
    clock.advance(timedelta(minutes=15))  # the bot was down when it was due
    app = await crier_factory()
    await app.sched.wait_idle()
    [posted] = world.fake.bot_messages(world.general)
    page = await info(world, 1)
    link = f"https://discord.com/channels/{world.guild.id}/{world.general.id}/{posted.id}"
    assert section(page, "Last deliveries") == [
        f"• {short(NOW + timedelta(minutes=10))} — ✅ posted {link} · sent late by 5 minutes"
    ]


async def test_info_of_a_failed_delivery_says_why(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    doomed = world.guild.add_channel("doomed")
    await run_command(world, "schedule", when="in 10m", message="lost", channel=doomed)
    world.fake.delete_channel(doomed)
    await advance(crier, clock, timedelta(minutes=10))
    a = await crier.bot.announcements.get(world.guild.id, 1)
    assert a.state == AnnouncementState.FAILED
    reason = "Unknown Channel: the channel was deleted (10003)"
    assert a.failure == reason
    page = await info(world, 1)
    assert "· ❌ failed ·" in page.split("\n")[0]
    assert f"⚠️ {reason}" in page.split("\n")
    assert section(page, "Next times") == ["• none (it failed)"]
    assert section(page, "Last deliveries") == [
        f"• {short(NOW + timedelta(minutes=10))} — ❌ failed: {reason}"
    ]


async def test_info_of_a_recurring_one_paused_by_a_failure(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await run_command(
        world, "schedule", when="in 1h", message="hourly", repeat="hourly", channel=world.news
    )
    world.news.set_overwrite(world.guild.bot_member, deny=P.SEND_MESSAGES)
    await advance(crier, clock, timedelta(hours=1))
    page = await info(world, 1)
    assert "· ⏸️ paused ·" in page.split("\n")[0]
    assert section(page, "Next times") == ["• none while paused (see `/resume`)"]
    [line] = section(page, "Last deliveries")
    assert line.startswith(f"• {short(NOW + timedelta(hours=1))} — ❌ failed: Missing Permissions")


async def test_info_history_names_who_created_and_who_canceled(world: World, crier: Crier) -> None:
    role = world.guild.add_role("managers", P.MANAGE_GUILD)
    other_manager = world.guild.add_member(name="erin", roles=[role])
    await run_command(world, "schedule", when="in 1h", message="soon gone")
    await run_command(world, "cancel", id=1, by=other_manager)
    # The database keeps who did what.
    async with crier.sched.reader() as db:
        history = await BotDb(db).history(await row_id(crier, world, 1), 10)
    assert [(h.action, h.actor_id) for h in history] == [
        (HistoryAction.CREATED, world.admin.user.id),
        (HistoryAction.CANCELED, other_manager.user.id),
    ]
    page = await info(world, 1)
    assert section(page, "History") == [
        f"• {short(NOW)} created by <@{world.admin.user.id}>",
        f"• {short(NOW)} canceled by <@{other_manager.user.id}>",
    ]
    assert section(page, "Next times") == ["• none (it was canceled)"]


async def test_info_history_shows_the_bots_own_changes_and_details(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await run_command(world, "schedule", when="in 1h", message="x", repeat="hourly")
    ann_id = await row_id(crier, world, 1)
    later = NOW + timedelta(minutes=5)
    async with crier.sched.transaction() as ctx:
        await BotDb(ctx.db).add_history(
            ann_id, HistoryAction.POST_UPDATED, None, later.timestamp(), "message"
        )
    page = await info(world, 1)
    assert (
        section(page, "History")[-1]
        == f"• {short(later)} posted message updated by the bot — message"
    )


async def test_long_text_is_cut_to_fit_and_every_section_stays(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    lines = [f"line {n:03d} of the long one" for n in range(80)]
    text = "\n".join(lines)[:1990]
    await run_command(world, "schedule", when="in 1h", message=text, repeat="hourly")
    await advance(crier, clock, timedelta(hours=1))
    page = await info(world, 1)
    assert len(page) <= 2000
    assert section(page, "Next times") == [
        f"• {stamp(NOW + timedelta(hours=h))}" for h in range(2, 7)
    ]
    assert len(section(page, "Last deliveries")) == 1
    assert len(section(page, "History")) == 1
    shown = page.split("**Text as it will post:**\n", 1)[1].split("\n")
    note = shown.pop()
    assert note.startswith("*…cut to fit: ")
    assert note.endswith("characters are not shown here (they will be posted)*")
    assert all(line.startswith(">") for line in shown)
    kept = "\n".join(line[2:] for line in shown)
    assert text.startswith(kept)
    assert 300 <= len(kept) < len(text)
    left_out = int(note.removeprefix("*…cut to fit: ").split(" ", 1)[0])
    assert left_out == len(text) - len(kept)


async def test_info_hides_the_text_of_a_channel_the_reader_cannot_see(
    world: World, crier: Crier
) -> None:
    await run_command(world, "schedule", when="in 1h", message="Secret plans", channel=world.news)
    world.news.set_overwrite(world.admin, deny=P.VIEW_CHANNEL)
    page = await info(world, 1)
    assert "Secret plans" not in page
    assert page.endswith(f"**Text as it will post:**\n`{HIDDEN}`")
    assert section(page, "Next times") == [f"• {stamp(NOW + timedelta(hours=1))}"]
    # A manager who can see the channel gets the text.
    role = world.guild.add_role("managers", P.MANAGE_GUILD)
    seer = world.guild.add_member(name="seer", roles=[role])
    assert (await info(world, 1, by=seer)).endswith("> Secret plans")


async def test_info_of_another_guilds_id_is_not_found(
    world: World, other: World, crier: Crier
) -> None:
    await run_command(other, "schedule", when="in 1h", message="theirs one")
    await run_command(other, "schedule", when="in 2h", message="theirs two")
    await run_command(world, "schedule", when="in 1h", message="mine")
    cb = await run_command(world, "info", id=2)
    assert cb.ephemeral
    assert cb.content == (
        "announcement #2 not found. Use `/list` to see this server's announcements."
    )
    page = await info(world, 1)
    assert page.endswith("> mine")
    assert "theirs" not in page


async def test_info_needs_the_rights_to_manage_announcements(world: World, crier: Crier) -> None:
    await run_command(world, "schedule", when="in 1h", message="not for bob")
    before = await db_snapshot(crier)
    cb = await run_command(world, "info", id=1, by=world.member)
    assert cb.ephemeral
    assert cb.content == f"{NEED_MANAGER} to manage announcements."
    assert await db_snapshot(crier) == before
    # The manager role is enough, as for /cancel.
    role = world.guild.add_role("crew")
    await run_command(world, "settings", manager_role=role)
    world.member.add_role(role)
    assert (await info(world, 1, by=world.member)).endswith("> not for bob")


# --- the id autocomplete ------------------------------------------------------------------------


async def id_choices(
    w: World, command: str, typed: str = "", by: Any = None
) -> list[dict[str, Any]]:
    h = await w.fake.invoke_autocomplete(
        w.guild, w.general, by or w.admin, command, {"id": typed}, focused="id"
    )
    cb = await h.response()
    assert cb.type == CB_AUTOCOMPLETE_RESULT
    return cb.choices


async def values(w: World, command: str, typed: str = "", by: Any = None) -> list[int]:
    return [c["value"] for c in await id_choices(w, command, typed, by)]


async def test_info_autocomplete_offers_every_state_of_this_guild_only(
    world: World, other: World, crier: Crier, clock: FakeClock
) -> None:
    await run_command(world, "schedule", when="in 10m", message="Posted one")
    await run_command(world, "schedule", when="in 2h", message="Canceled one")
    await run_command(world, "cancel", id=2)
    await run_command(world, "schedule", when="in 3h", message="Still to come")
    await run_command(other, "schedule", when="in 1h", message="Elsewhere")
    await advance(crier, clock, timedelta(minutes=10))
    choices = await id_choices(world, "info")
    assert [c["value"] for c in choices] == [3, 2, 1]
    assert [c["name"] for c in choices] == [
        "#3 · Mar 01 15:00 UTC · Still to come",
        "#2 · canceled · Canceled one",
        "#1 · sent · Posted one",
    ]
    assert await values(world, "info", "one") == [2, 1]
    assert await values(world, "info", "elsewhere") == []
    assert await values(other, "info") == [1]


async def test_autocomplete_hides_the_text_of_channels_the_member_cannot_see(
    world: World, crier: Crier
) -> None:
    await run_command(world, "schedule", when="in 1h", message="Visible news")
    await run_command(world, "schedule", when="in 2h", message="Hidden plans", channel=world.news)
    world.news.set_overwrite(world.admin, deny=P.VIEW_CHANNEL)
    for command in ("info", "cancel"):
        choices = await id_choices(world, command)
        assert [c["name"] for c in choices] == [
            f"#2 · Mar 01 14:00 UTC · {HIDDEN}",
            "#1 · Mar 01 13:00 UTC · Visible news",
        ]
        # What is hidden can't be found by typing it either.
        assert await values(world, command, "plans") == []
        assert await values(world, command, "2") == [2]


async def test_info_autocomplete_caps_at_25_newest_first(world: World, crier: Crier) -> None:
    for n in range(30):
        await run_command(world, "schedule", when=f"in {n + 1}h", message=f"n{n}")
    for n in range(1, 31, 3):
        await run_command(world, "cancel", id=n)
    assert await values(world, "info") == list(range(30, 5, -1))
    assert await values(world, "info", "1") == [19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 1]


@pytest.fixture
async def probes(world: World, crier: Crier) -> None:
    """A command ``/ids-<name>`` per entry of ACCEPTS, its ``id`` option completed by the
    shared autocomplete, registered with the fake Discord: the filter of every command,
    whether or not the command itself is on this branch."""
    for name in ACCEPTS:

        async def probe(interaction: discord.Interaction, id: int) -> None:
            await interaction.response.send_message("ok", ephemeral=True)

        command = app_commands.Command(
            name=f"ids-{name}", description=f"ids of /{name}", callback=probe
        )
        command.autocomplete("id")(announcement_ids(name))
        for client in (crier.bot, *crier.clients):  # synced by one, answered by its shard's
            client.tree.add_command(command)
    await crier.bot.tree.sync()


async def test_autocomplete_is_filtered_to_the_states_each_command_accepts(
    world: World, crier: Crier, clock: FakeClock, probes: None
) -> None:
    locked = world.guild.add_channel("locked")
    doomed = world.guild.add_channel("doomed")
    await run_command(world, "schedule", when="in 5h", message="one-off scheduled")  # 1
    await run_command(world, "schedule", when="in 2h", message="recurring", repeat="hourly")  # 2
    await run_command(
        world, "schedule", when="in 10m", message="paused", repeat="hourly", channel=locked
    )  # 3: paused by a failure
    await run_command(world, "schedule", when="in 10m", message="posted")  # 4: sent
    await run_command(world, "schedule", when="in 3h", message="canceled")  # 5
    await run_command(world, "cancel", id=5)
    await run_command(world, "schedule", when="in 10m", message="failed", channel=doomed)  # 6
    await run_command(world, "schedule", when="in 4h", message="ended", repeat="daily")  # 7
    locked.set_overwrite(world.guild.bot_member, deny=P.SEND_MESSAGES)
    world.fake.delete_channel(doomed)
    await advance(crier, clock, timedelta(minutes=10))
    async with crier.sched.transaction() as ctx:  # an ended one (past its until)
        await BotDb(ctx.db).set_state(
            await row_id(crier, world, 7), AnnouncementState.DONE, ctx.now.timestamp()
        )
    states = {n: (await crier.bot.announcements.get(world.guild.id, n)).state for n in range(1, 8)}
    assert states == {
        1: "scheduled", 2: "scheduled", 3: "paused", 4: "sent", 5: "canceled", 6: "failed",
        7: "done",
    }  # fmt: skip

    expected = {
        "cancel": [3, 2, 1],
        "pause": [2, 1],
        "resume": [3],
        "skip": [3, 2],  # a paused one's dates may be skipped ahead
        "unskip": [3, 2],
        "edit": [7, 4, 3, 2, 1],  # what /edit accepts: live, sent, ended
        "info": [7, 6, 5, 4, 3, 2, 1],
        "postnow": [2, 1],  # the next post now, or as a test: scheduled ones
        "test": [2, 1],
    }
    assert set(expected) == set(ACCEPTS)
    for name, ids in expected.items():
        assert await values(world, f"ids-{name}") == ids, name
    for name in ("cancel", "pause", "resume", "skip", "unskip", "edit", "info", "postnow", "test"):
        assert await values(world, name) == expected[name], name
    # A recurring one's label shows its next time.
    [recurring] = [c for c in await id_choices(world, "ids-skip") if c["value"] == 2]
    assert recurring["name"] == "#2 · Mar 01 14:00 UTC · recurring"


async def test_a_long_history_gives_way_to_the_text_oldest_first(
    world: World, crier: Crier
) -> None:
    """Ten changes with long details and a long text: the oldest changes are left out (and
    said to be), the newest kept, and the text keeps room of its own."""
    text = "word " * 390
    await run_command(world, "schedule", when="in 1h", message=text.strip())
    ann_id = await row_id(crier, world, 1)
    async with crier.sched.transaction() as ctx:
        for n in range(1, 10):
            at = (NOW + timedelta(minutes=n)).timestamp()
            detail = f"change {n}: " + "x" * 140
            await BotDb(ctx.db).add_history(ann_id, HistoryAction.EDITED, None, at, detail)
    page = await info(world, 1)
    history = section(page, "History")
    assert history[0] == "• *(earlier changes not shown)*"
    kept = [int(line.split("change ", 1)[1].split(":", 1)[0]) for line in history[1:]]
    assert kept
    assert kept == list(range(10 - len(kept), 10))
    assert f"created by <@{world.admin.user.id}>" not in page  # the oldest went first
    shown = page.split("**Text as it will post:**\n", 1)[1]
    assert len(shown) >= 300
    assert "cut to fit" in shown
    assert section(page, "Next times") == [f"• {stamp(NOW + timedelta(hours=1))}"]


async def test_info_and_its_autocomplete_on_each_database(
    world: World,
    any_db_crier: Crier,  # noqa: F811
    clock: FakeClock,
) -> None:
    for n in range(1, 13):
        repeat = {"repeat": "daily"} if n % 2 else {}
        await run_command(world, "schedule", when=f"in {n}h", message=f"number {n}", **repeat)
    await run_command(world, "cancel", id=12)
    assert await values(world, "cancel", "1") == [11, 10, 1]
    assert await values(world, "info", "1") == [12, 11, 10, 1]
    assert await values(world, "cancel", "number 1") == [11, 10, 1]
    page = await info(world, 11)
    assert section(page, "Next times") == [
        f"• {stamp(NOW + timedelta(hours=11, days=d))}" for d in range(5)
    ]
    assert section(page, "History") == [f"• {short(NOW)} created by <@{world.admin.user.id}>"]


# --- with /pause, /resume, /skip, /edit and until -----------------------------------------------


async def test_info_leaves_out_a_skipped_time_and_says_it_is_skipped(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await run_command(world, "schedule", when="in 1h", message="tick", repeat="hourly")
    await run_command(world, "skip", id=1)  # skips NOW+1h
    await run_command(world, "skip", id=1)  # and NOW+2h
    page = await info(world, 1)
    hours = [NOW + timedelta(hours=h) for h in range(1, 8)]
    assert section(page, "Next times") == [f"• {stamp(t)}" for t in hours[2:7]]
    assert (
        "**Skipped dates** (UTC): Friday 1 March 2030 13:00; Friday 1 March 2030 14:00"
        in page.split("\n")
    )
    assert section(page, "Last deliveries") == ["• none yet"]
    admin = f"<@{world.admin.user.id}>"
    assert section(page, "History") == [
        f"• {short(NOW)} created by {admin}",
        f"• {short(NOW)} skipped by {admin} — 2030-03-01 13:00 (UTC)",
        f"• {short(NOW)} skipped by {admin} — 2030-03-01 14:00 (UTC)",
    ]
    # Once their time has passed, the skipped dates are no longer shown; nothing posted then.
    await advance(crier, clock, timedelta(hours=3))
    assert len(world.fake.bot_messages(world.general)) == 1  # 15:00 only
    page = await info(world, 1)
    assert "**Skipped dates**" not in page
    assert [line.split(" — ")[0] for line in section(page, "Last deliveries")] == [
        f"• {short(hours[2])}"
    ]


async def test_info_stops_the_next_times_at_until(world: World, crier: Crier) -> None:
    await run_command(
        world, "schedule", when="in 1h", message="tick", repeat="hourly", until="in 3h"
    )
    page = await info(world, 1)
    assert f"**Until:** {stamp(NOW + timedelta(hours=3))}" in page.split("\n")
    assert section(page, "Next times") == [
        f"• {stamp(NOW + timedelta(hours=h))}" for h in (1, 2, 3)
    ]


async def test_info_history_of_pause_and_resume_by_another_manager(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    role = world.guild.add_role("managers", P.MANAGE_GUILD)
    erin = world.guild.add_member(name="erin", roles=[role])
    await run_command(world, "schedule", when="in 1h", message="tick", repeat="hourly")
    await run_command(world, "pause", id=1, by=erin)
    page = await info(world, 1)
    assert section(page, "Next times") == ["• none while paused (see `/resume`)"]
    clock.advance(timedelta(minutes=90))
    await run_command(world, "resume", id=1, by=erin)
    page = await info(world, 1)
    resumed_at = NOW + timedelta(minutes=90)
    # Resumed with the next future time, not the one missed while paused.
    assert section(page, "Next times") == [
        f"• {stamp(NOW + timedelta(hours=h))}" for h in range(2, 7)
    ]
    lines = section(page, "History")
    assert lines[:2] == [
        f"• {short(NOW)} created by <@{world.admin.user.id}>",
        f"• {short(NOW)} paused by <@{erin.user.id}>",
    ]
    assert lines[2].startswith(f"• {short(resumed_at)} resumed by <@{erin.user.id}>")
    assert len(lines) == 3


async def test_info_after_an_edit_and_a_post_that_could_not_be_updated(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    role = world.guild.add_role("managers", P.MANAGE_GUILD)
    erin = world.guild.add_member(name="erin", roles=[role])
    await run_command(world, "schedule", when="in 10m", message="first words")
    await advance(crier, clock, timedelta(minutes=10))
    [posted] = world.fake.bot_messages(world.general)
    world.fake._delete(posted)  # a moderator deletes it
    await run_command(world, "edit", id=1, message="corrected", by=erin)
    await crier.sched.wait_idle()
    async with crier.sched.reader() as db:
        [delivery] = await BotDb(db).recent_deliveries(await row_id(crier, world, 1), 5)
        history = await BotDb(db).history(await row_id(crier, world, 1), 10)
    reason = delivery.update_error
    assert reason
    assert "Unknown Message" in reason
    assert [(h.action, h.actor_id) for h in history] == [
        (HistoryAction.CREATED, world.admin.user.id),
        (HistoryAction.EDITED, erin.user.id),
        (HistoryAction.POST_UPDATE_FAILED, None),
    ]

    page = await info(world, 1)
    link = f"https://discord.com/channels/{world.guild.id}/{world.general.id}/{posted.id}"
    assert section(page, "Last deliveries") == [
        f"• {short(NOW + timedelta(minutes=10))} — ✅ posted {link}",
        f"  ⚠️ the posted message could not be updated: {reason}",
    ]
    lines = section(page, "History")
    assert lines[0] == f"• {short(NOW)} created by <@{world.admin.user.id}>"
    assert lines[1].startswith(
        f"• {short(NOW + timedelta(minutes=10))} edited by <@{erin.user.id}>"
    )
    assert lines[2] == (
        f"• {short(NOW + timedelta(minutes=10))} posted message could not be updated by the bot "
        f"— {reason}"
    )
    assert page.endswith("**Text as it will post:**\n> corrected")
