"""The command surface end to end: /schedule, /cancel, /list, /settings and autocomplete,
through the real discord.py client against the fake Discord, on a FakeClock.

Every bad input must be answered ephemerally with what was wrong and an example, and must
write nothing (checked against a snapshot of every table the bot and the scheduler keep)."""

from __future__ import annotations

import asyncio
import zoneinfo
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.app import Crier
from tests.bot.conftest import (
    NOW,
    World,
    announcement_schedules,
    db_snapshot,
    restore_discord_endpoints,
    run_command,
    settings_for,
)
from tests.fakediscord import InteractionHandle
from tests.fakediscord import Permissions as P
from tests.fakediscord.interactions import (
    CB_AUTOCOMPLETE_RESULT,
    CB_CHANNEL_MESSAGE,
    CB_MODAL,
    CB_UPDATE_MESSAGE,
    iter_components,
)
from tests.scheduler.stores import postgres_dsn

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from bot.announcements import Announcement
    from scheduler.testing import FakeClock

NEW_YORK = "America/New_York"  # NOW (12:00 UTC, March 1st 2030) is 07:00 EST there


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def stamp(dt: datetime) -> str:
    """How a confirmation shows a time: absolute and relative Discord timestamps."""
    n = int(dt.timestamp())
    return f"<t:{n}:F> (<t:{n}:R>)"


async def announcements(app: Crier, world: World) -> list[Announcement]:
    listing = await app.bot.announcements.listing(world.guild.id, 0, 1000)
    return sorted(listing.items, key=lambda a: a.local_id)


async def only_announcement(app: Crier, world: World) -> Announcement:
    rows = await announcements(app, world)
    assert len(rows) == 1, rows
    return rows[0]


async def text_input_id(h: InteractionHandle) -> str:
    """The custom id of the modal the bot answered with: its text input's (discord.py
    generates it)."""
    assert (await h.response()).type == CB_MODAL
    assert h.modal is not None
    inputs = [
        c
        for c in iter_components(h.modal["components"])
        if c["type"] == 4 and c["label"] == "Message"
    ]
    assert len(inputs) == 1, h.modal
    return str(inputs[0]["custom_id"])


def herald(world: World) -> Any:
    """A member with Manage Server and Mention @everyone, @here and All Roles."""
    role = world.guild.add_role("heralds", P.MANAGE_GUILD | P.MENTION_EVERYONE)
    return world.guild.add_member(name="herald", roles=[role])


async def advance(app: Crier, clock: FakeClock, delta: timedelta) -> None:
    clock.advance(delta)
    await app.sched.wait_idle()


# --- /schedule: happy paths ---------------------------------------------------------------------


async def test_one_off_confirmation_and_what_is_written(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    cb = await run_command(
        world, "schedule", when="in 10m", message="Standup at ten!", channel=world.news
    )
    assert cb.type == CB_CHANNEL_MESSAGE
    assert cb.ephemeral
    first = NOW + timedelta(minutes=10)
    content = cb.content or ""
    assert f"Scheduled announcement **#1** in <#{world.news.id}>" in content
    assert f"**First:** {stamp(first)}" in content
    assert "**Repeats:** no (posted once)" in content
    assert content.endswith("**Preview:**\n> Standup at ten!")

    a = await only_announcement(crier, world)
    assert (a.local_id, a.channel_id, a.author_id) == (1, world.news.id, world.admin.user.id)
    assert (a.content, a.state, a.timezone, a.repeat_kind) == (
        "Standup at ten!",
        "scheduled",
        "UTC",
        None,
    )
    jobs = await crier.sched.list_jobs()
    assert [(j.id, j.state, j.next_ts) for j in jobs] == [(a.job_id, "pending", first.timestamp())]
    assert await announcement_schedules(crier) == []

    await advance(crier, clock, timedelta(minutes=9, seconds=59))
    assert world.fake.bot_messages(world.news) == []
    await advance(crier, clock, timedelta(seconds=1))
    assert [m.content for m in world.fake.bot_messages(world.news)] == ["Standup at ten!"]


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        ("in 90m", NOW + timedelta(minutes=90)),
        ("2h30m", NOW + timedelta(hours=2, minutes=30)),
        ("18:00", utc(2030, 3, 1, 23)),  # 18:00 EST today
        ("06:00", utc(2030, 3, 2, 11)),  # 06:00 EST has passed today (it is 07:00): tomorrow
        ("tomorrow 09:00", utc(2030, 3, 2, 14)),
        ("2030-12-24 18:00", utc(2030, 12, 24, 23)),
        ("2030-07-04 09:00", utc(2030, 7, 4, 13)),  # EDT in summer: the zone's rules apply
        (f"<t:{int(NOW.timestamp()) + 86400}>", NOW + timedelta(days=1)),
        (f"<t:{int(NOW.timestamp()) + 86400}:F>", NOW + timedelta(days=1)),
        (str(int(NOW.timestamp()) + 7200), NOW + timedelta(hours=2)),
    ],
)
async def test_when_forms_in_a_zone(
    world: World, crier: Crier, when: str, expected: datetime
) -> None:
    cb = await run_command(world, "schedule", when=when, message="hi", timezone=NEW_YORK)
    assert cb.ephemeral
    assert f"**First:** {stamp(expected)}" in (cb.content or ""), cb.content
    a = await only_announcement(crier, world)
    assert a.timezone == NEW_YORK
    assert a.first_ts == expected.timestamp()
    [job] = await crier.sched.list_jobs()
    assert job.next_ts == expected.timestamp()


@pytest.mark.parametrize(
    ("repeat", "words", "first"),
    [
        # tomorrow 09:00 in Paris is Saturday March 2nd, 08:00 UTC
        ("daily", "every day at 09:00 (Europe/Paris)", utc(2030, 3, 2, 8)),
        ("weekly", "every Saturday at 09:00 (Europe/Paris)", utc(2030, 3, 2, 8)),
        ("monthly", "at 09:00 on day 2 of the month (Europe/Paris)", utc(2030, 3, 2, 8)),
        ("hourly", "every hour", utc(2030, 3, 2, 8)),
        ("every 2h", "every 2 hours", utc(2030, 3, 2, 8)),
        ("every 30 minutes", "every 30 minutes", utc(2030, 3, 2, 8)),
        # a cron rule fires at its own times from `when` on: Monday 09:00 Paris
        ("0 9 * * 1-5", "at 09:00, Monday through Friday (Europe/Paris)", utc(2030, 3, 4, 8)),
    ],
)
async def test_repeat_rules(
    world: World, crier: Crier, repeat: str, words: str, first: datetime
) -> None:
    cb = await run_command(
        world,
        "schedule",
        when="tomorrow 09:00",
        message="Weekly sync",
        repeat=repeat,
        timezone="Europe/Paris",
    )
    content = cb.content or ""
    assert cb.ephemeral
    assert f"**First:** {stamp(first)}" in content, content
    assert f"**Repeats:** {words}\n" in content
    assert "**Preview:**\n> Weekly sync" in content
    a = await only_announcement(crier, world)
    assert a.recurring
    assert a.repeat_words == words
    assert a.job_id is None
    [info] = await announcement_schedules(crier)
    assert info.name == a.schedule_name
    assert info.next_fire == first
    assert await crier.sched.list_jobs() == []  # nothing materialized before its time


async def test_repeat_once_is_a_one_off(world: World, crier: Crier) -> None:
    cb = await run_command(world, "schedule", when="in 1h", message="x", repeat="once")
    assert "**Repeats:** no (posted once)" in (cb.content or "")
    a = await only_announcement(crier, world)
    assert not a.recurring
    assert a.job_id is not None
    assert await announcement_schedules(crier) == []


async def test_interval_repeat_posts_every_period(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await run_command(world, "schedule", when="in 1h", message="tick", repeat="every 2h")
    for hours in (1, 2, 2):
        await advance(crier, clock, timedelta(hours=hours) - timedelta(seconds=1))
        before = len(world.fake.bot_messages(world.general))
        await advance(crier, clock, timedelta(seconds=1))
        assert len(world.fake.bot_messages(world.general)) == before + 1
    assert len(world.fake.bot_messages(world.general)) == 3


async def test_channel_option_picks_another_channel(world: World, crier: Crier) -> None:
    cb = await run_command(world, "schedule", channel=world.news, when="in 1h", message="here")
    assert f"in <#{world.news.id}>" in (cb.content or "")
    a = await only_announcement(crier, world)
    assert a.channel_id == world.news.id


async def test_channel_option_omitted_posts_where_the_command_was_used(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    h = await world.fake.invoke_command(
        world.guild, world.news, world.admin, "schedule", {"when": "in 5m", "message": "here"}
    )
    cb = await h.response()
    assert f"Scheduled announcement **#1** in <#{world.news.id}>" in (cb.content or "")
    assert (await only_announcement(crier, world)).channel_id == world.news.id
    await advance(crier, clock, timedelta(minutes=5))
    assert [m.content for m in world.fake.bot_messages(world.news)] == ["here"]
    assert world.fake.bot_messages(world.general) == []


async def test_timezone_option_guild_default_and_clear(world: World, crier: Crier) -> None:
    # No default: UTC.
    cb = await run_command(world, "schedule", when="18:00", message="a")
    assert stamp(utc(2030, 3, 1, 18)) in (cb.content or "")

    cb = await run_command(world, "settings", timezone="asia/tokyo")
    assert "**Default time zone:** Asia/Tokyo" in (cb.content or "")
    assert (await crier.bot.announcements.settings(world.guild.id)).timezone == "Asia/Tokyo"

    # 18:00 in Tokyo: it is 21:00 there now, so tomorrow 18:00 JST = 09:00 UTC.
    cb = await run_command(world, "schedule", when="18:00", message="b")
    assert stamp(utc(2030, 3, 2, 9)) in (cb.content or "")
    # The option wins over the guild default (and is matched without regard to case).
    cb = await run_command(world, "schedule", when="18:00", message="c", timezone="europe/berlin")
    assert stamp(utc(2030, 3, 1, 17)) in (cb.content or "")

    cb = await run_command(world, "settings", clear="timezone")
    assert "**Default time zone:** UTC (not set)" in (cb.content or "")
    cb = await run_command(world, "schedule", when="18:00", message="d")
    assert stamp(utc(2030, 3, 1, 18)) in (cb.content or "")

    zones = [(a.content, a.timezone) for a in await announcements(crier, world)]
    assert zones == [("a", "UTC"), ("b", "Asia/Tokyo"), ("c", "Europe/Berlin"), ("d", "UTC")]


async def test_mention_everyone(world: World, crier: Crier, clock: FakeClock) -> None:
    who = herald(world)
    cb = await run_command(
        world,
        "schedule",
        by=who,
        when="in 1m",
        message="Big news",
        mention=world.guild.everyone_role,
    )
    content = cb.content or ""
    assert "**Pings:** @everyone" in content
    assert "**Preview:**\n> @everyone Big news" in content
    a = await only_announcement(crier, world)
    assert a.mention == "everyone"
    assert a.allowed_mentions["everyone"] is True
    await advance(crier, clock, timedelta(minutes=1))
    [msg] = world.fake.bot_messages(world.general)
    assert msg.content == "@everyone Big news"
    assert msg.pings.everyone


async def test_mention_a_mentionable_role(world: World, crier: Crier, clock: FakeClock) -> None:
    role = world.guild.add_role("events", mentionable=True)
    cb = await run_command(world, "schedule", when="in 1m", message="Game night", mention=role)
    assert f"**Pings:** <@&{role.id}>" in (cb.content or "")
    a = await only_announcement(crier, world)
    assert a.mention == f"role:{role.id}"
    await advance(crier, clock, timedelta(minutes=1))
    [msg] = world.fake.bot_messages(world.general)
    assert msg.content == f"<@&{role.id}> Game night"
    assert msg.pings.roles == {role.id}
    assert not msg.pings.everyone


async def test_everyone_typed_in_the_text_does_not_ping_without_the_right(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    cb = await run_command(world, "schedule", when="in 1m", message="hey @everyone look")
    assert "@everyone/@here in the text will show but not ping anyone" in (cb.content or "")
    assert (await only_announcement(crier, world)).allowed_mentions["everyone"] is False
    await advance(crier, clock, timedelta(minutes=1))
    [msg] = world.fake.bot_messages(world.general)
    assert msg.content == "hey @everyone look"
    assert not msg.pings.everyone


async def test_modal_path_stores_multiline_text_verbatim(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    h = await world.fake.invoke_command(
        world.guild,
        world.general,
        world.admin,
        "schedule",
        {"when": "in 1h", "channel": world.news},
    )
    cb = await h.response()
    assert cb.type == CB_MODAL
    assert cb.title == "New announcement"
    assert (await db_snapshot(crier))["bot_announcements"] == []  # nothing until submitted

    text = "**Release 2.0** is out!\n\n  • faster\n  • `smaller`\n\nThanks, all 🎉  "
    sub = await h.submit_modal({await text_input_id(h): text})
    done = await sub.response()
    content = done.content or ""
    assert done.type == CB_CHANNEL_MESSAGE
    assert done.ephemeral
    assert f"Scheduled announcement **#1** in <#{world.news.id}>" in content
    assert f"**First:** {stamp(NOW + timedelta(hours=1))}" in content
    assert "> **Release 2.0** is out!\n>\n>   • faster" in content
    a = await only_announcement(crier, world)
    assert a.content == text
    await advance(crier, clock, timedelta(hours=1))
    assert [m.content for m in world.fake.bot_messages(world.news)] == [text]


async def test_modal_is_not_shown_for_bad_options(world: World, crier: Crier) -> None:
    before = await db_snapshot(crier)
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "schedule", {"when": "whenever"}
    )
    cb = await h.response()
    assert cb.type == CB_CHANNEL_MESSAGE
    assert cb.ephemeral
    assert "couldn't read that as a time" in (cb.content or "")
    assert await db_snapshot(crier) == before


async def test_modal_whitespace_only_text_is_refused(world: World, crier: Crier) -> None:
    before = await db_snapshot(crier)
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "schedule", {"when": "in 1h"}
    )
    sub = await h.submit_modal({await text_input_id(h): " \n\t\n "})
    cb = await sub.response()
    assert cb.ephemeral
    assert "The message is empty" in (cb.content or "")
    assert "e.g. `" in (cb.content or "")
    assert await db_snapshot(crier) == before


# --- /schedule: bad input -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "says"),
    [
        pytest.param(
            {"when": "whenever"},
            ["I couldn't read that as a time", "`in 90m`", "`tomorrow 09:00`"],
            id="unparseable-when",
        ),
        pytest.param(
            {"when": "tomorrow"},
            ["needs a time of day", "`tomorrow 09:00`"],
            id="day-without-time",
        ),
        pytest.param(
            {"when": "2020-01-01 10:00"},
            ["already passed", "<t:1577872800:F> (2020-01-01 10:00 UTC)", "`in 2h`"],
            id="past-utc",
        ),
        pytest.param(
            {"when": "06:30 today", "timezone": NEW_YORK},
            ["already passed", "(2030-03-01 06:30 America/New_York = 2030-03-01 11:30 UTC)"],
            id="past-in-zone",
        ),
        pytest.param(
            {"when": "2040-01-01 10:00"},
            ["too far ahead", "2040-01-01 10:00 UTC", "up to 5 years ahead"],
            id="too-far-ahead",
        ),
        pytest.param(
            {"when": "18:00", "timezone": "Mars/Olympus"},
            ["I don't know the time zone `Mars/Olympus`", "`Europe/London`"],
            id="unknown-timezone",
        ),
        pytest.param(
            {"when": "18:00", "timezone": "Europe/Lodnon"},
            ["I don't know the time zone `Europe/Lodnon`", "Did you mean", "`Europe/London`"],
            id="misspelt-timezone",
        ),
        pytest.param(
            {"when": "in 1h", "repeat": "sometimes"},
            ["I couldn't read that as a repeat rule", "`daily`", "`0 9 * * 1-5`"],
            id="bad-repeat",
        ),
        pytest.param(
            {"when": "in 1h", "repeat": "every 30s"},
            ["too often", "1 minute", "`every 5 minutes`"],
            id="repeat-too-often",
        ),
        pytest.param(
            {"when": "in 1h", "repeat": "0 25 * * *"},
            ["isn't a valid cron expression", "hour field", "out of range 0-23", "`0 9 * * 1-5`"],
            id="cron-hour",
        ),
        pytest.param(
            {"when": "in 1h", "repeat": "0 9 * 13 *"},
            ["isn't a valid cron expression", "month field", "`0 9 * * 1-5`"],
            id="cron-month",
        ),
        pytest.param(
            {"when": "in 1h", "message": "   "},
            ["The message is empty", "e.g. `Standup in 5 minutes!`"],
            id="whitespace-message",
        ),
    ],
)
async def test_bad_input_is_explained_and_nothing_is_written(
    world: World, crier: Crier, options: dict[str, Any], says: list[str]
) -> None:
    await run_command(world, "schedule", when="in 2h", message="an existing one")
    before = await db_snapshot(crier)
    options.setdefault("message", "hello")
    cb = await run_command(world, "schedule", **options)
    assert cb.type == CB_CHANNEL_MESSAGE
    assert cb.ephemeral
    content = cb.content or ""
    for part in says:
        assert part in content, (part, content)
    assert "Traceback" not in content
    assert "Scheduled" not in content
    assert await db_snapshot(crier) == before


@pytest.mark.parametrize("mention", ["everyone", "role"])
async def test_message_too_long_with_the_mention_prefix(
    world: World, crier: Crier, mention: str
) -> None:
    who = herald(world)
    role = world.guild.everyone_role if mention == "everyone" else world.guild.add_role("r")
    prefix = "@everyone " if mention == "everyone" else f"<@&{role.id}> "
    text = "x" * (2000 - len(prefix) + 1)  # fits alone (Discord's 2000), not with the mention
    before = await db_snapshot(crier)
    cb = await run_command(world, "schedule", by=who, when="in 1h", message=text, mention=role)
    content = cb.content or ""
    assert cb.ephemeral
    assert "The message is 2001 characters (with the mention); Discord allows 2000" in content
    assert await db_snapshot(crier) == before
    # One character less fits exactly.
    cb = await run_command(world, "schedule", by=who, when="in 1h", message=text[:-1], mention=role)
    assert "Scheduled announcement **#1**" in (cb.content or "")


async def test_the_client_refuses_a_message_over_2000_characters(
    world: World, crier: Crier
) -> None:
    """Discord's client enforces the option's max_length; the modal enforces it too."""
    with pytest.raises(ValueError, match="max_length=2000"):
        await world.fake.invoke_command(
            world.guild,
            world.general,
            world.admin,
            "schedule",
            {"when": "in 1h", "message": "x" * 2001},
        )
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "schedule", {"when": "in 1h"}
    )
    with pytest.raises(ValueError, match="longer than 2000"):
        await h.submit_modal({await text_input_id(h): "x" * 2001})


# --- /cancel ------------------------------------------------------------------------------------


async def test_cancel_before_delivery(world: World, crier: Crier, clock: FakeClock) -> None:
    await run_command(world, "schedule", when="in 10m", message="never", channel=world.news)
    cb = await run_command(world, "cancel", id=1)
    assert cb.ephemeral
    assert cb.content == (
        f"🚫 Canceled announcement **#1** for <#{world.news.id}>. It will not be posted."
    )
    a = await only_announcement(crier, world)
    assert a.state == "canceled"
    assert a.job_id is not None
    job = await crier.sched.get_job(a.job_id)
    assert job is not None
    assert job.state == "canceled"
    await advance(crier, clock, timedelta(hours=1))
    assert world.fake.bot_messages() == []
    # A second cancel says so.
    cb = await run_command(world, "cancel", id=1)
    assert cb.content == "Announcement #1 was already canceled."


async def test_cancel_after_delivery(world: World, crier: Crier, clock: FakeClock) -> None:
    await run_command(world, "schedule", when="in 10m", message="posted")
    await advance(crier, clock, timedelta(minutes=10))
    assert len(world.fake.bot_messages(world.general)) == 1
    before = await db_snapshot(crier)
    cb = await run_command(world, "cancel", id=1)
    assert cb.ephemeral
    assert cb.content == "Announcement #1 was already posted; there is nothing to cancel."
    assert await db_snapshot(crier) == before
    assert (await only_announcement(crier, world)).state == "sent"


async def test_cancel_recurring_deletes_its_schedule(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await run_command(world, "schedule", when="in 1h", message="hourly ping", repeat="hourly")
    await advance(crier, clock, timedelta(hours=1))
    assert len(world.fake.bot_messages(world.general)) == 1
    cb = await run_command(world, "cancel", id=1)
    assert cb.content == (
        f"🚫 Canceled announcement **#1** for <#{world.general.id}>. Its schedule is deleted."
    )
    assert await announcement_schedules(crier) == []
    assert (await only_announcement(crier, world)).state == "canceled"
    await advance(crier, clock, timedelta(hours=5))
    assert len(world.fake.bot_messages(world.general)) == 1


async def test_cancel_unknown_id(world: World, crier: Crier) -> None:
    await run_command(world, "schedule", when="in 1h", message="one")
    before = await db_snapshot(crier)
    cb = await run_command(world, "cancel", id=2)
    assert cb.ephemeral
    assert cb.content == (
        "announcement #2 not found. Use `/list` to see this server's announcements."
    )
    assert await db_snapshot(crier) == before


# --- /list --------------------------------------------------------------------------------------


async def test_list_empty(world: World, crier: Crier) -> None:
    cb = await run_command(world, "list", by=world.member)
    assert cb.ephemeral
    assert cb.content == "No announcements yet. Create one with `/schedule`."
    assert cb.components == []


def button(components: list[dict[str, Any]], custom_id: str) -> dict[str, Any]:
    [found] = [c for c in iter_components(components) if c.get("custom_id") == custom_id]
    return found


async def test_list_pages_with_buttons(world: World, crier: Crier) -> None:
    for n in range(1, 9):  # 8 announcements: a page of 6 and a page of 2, soonest first
        await run_command(world, "schedule", when=f"in {n}h", message=f"number {n}")
    h = await world.fake.invoke_command(world.guild, world.general, world.admin, "list")
    cb = await h.response()
    assert cb.ephemeral
    content = cb.content or ""
    assert content.startswith("**Announcements** — page 1 of 2 (8 in all)")
    assert [f"**#{n}**" in content for n in range(1, 9)] == [True] * 6 + [False] * 2
    assert f"next: {stamp(NOW + timedelta(hours=1))}" in content
    assert f"by <@{world.admin.user.id}>" in content
    assert button(cb.components, "crier:list:0")["disabled"] is True
    older = button(cb.components, "crier:list:1")
    assert older["label"] == "Older ▶"
    assert older["disabled"] is False

    h2 = await h.click("crier:list:1")
    cb2 = await h2.response()
    assert cb2.type == CB_UPDATE_MESSAGE
    page2 = cb2.content or ""
    assert page2.startswith("**Announcements** — page 2 of 2 (8 in all)")
    assert [f"**#{n}**" in page2 for n in range(1, 9)] == [False] * 6 + [True] * 2
    assert button(cb2.components, "crier:list:2")["disabled"] is True
    newer = button(cb2.components, "crier:list:0")
    assert newer["label"] == "◀ Newer"
    assert newer["disabled"] is False
    # The ephemeral message itself now shows page 2; back to page 1 from it.
    h3 = await h2.click("crier:list:0")
    assert ((await h3.response()).content or "").startswith("**Announcements** — page 1 of 2")


async def test_list_buttons_survive_a_restart(
    world: World, tmp_path: Path, clock: FakeClock
) -> None:
    """The page is in the button's custom id, so a /list from before a restart still pages."""
    settings = settings_for(world.fake, tmp_path / "crier.db")
    first = Crier(settings, clock=clock, guild_ready_timeout=0.05)
    await first.start()
    try:
        for n in range(1, 8):
            await run_command(world, "schedule", when=f"in {n}h", message=f"n{n}")
        h = await world.fake.invoke_command(world.guild, world.general, world.admin, "list")
        await h.response()
    finally:
        await first.close()
    second = Crier(settings, clock=clock, guild_ready_timeout=0.05)
    await second.start()
    try:
        h2 = await h.click("crier:list:1")
        cb = await h2.response()
        assert cb.type == CB_UPDATE_MESSAGE
        assert (cb.content or "").startswith("**Announcements** — page 2 of 2 (7 in all)")
        assert "**#7**" in (cb.content or "")
    finally:
        await second.close()
        restore_discord_endpoints()


async def test_list_failures_first_newest_first_and_sent_links(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    doomed = world.guild.add_channel("doomed")
    await run_command(world, "schedule", when="in 10m", message="first doomed", channel=doomed)
    await run_command(world, "schedule", when="in 20m", message="will be sent")
    await run_command(world, "schedule", when="in 30m", message="second doomed", channel=doomed)
    await run_command(world, "schedule", when="in 5h", message="still to come")
    world.fake.delete_channel(doomed)
    await advance(crier, clock, timedelta(minutes=10))  # #1 fails
    await advance(crier, clock, timedelta(minutes=10))  # #2 is sent
    await advance(crier, clock, timedelta(minutes=10))  # #3 fails, later than #1
    rows = {a.local_id: a for a in await announcements(crier, world)}
    assert [rows[n].state for n in (1, 2, 3, 4)] == ["failed", "sent", "failed", "scheduled"]
    [sent] = world.fake.bot_messages(world.general)

    cb = await run_command(world, "list")
    content = cb.content or ""
    order = [content.index(f"**#{n}**") for n in (3, 1, 4, 2)]
    assert order == sorted(order), content
    reason = rows[1].failure
    assert reason
    assert "Unknown Channel" in reason
    entry1 = content[content.index("**#1**") : content.index("**#4**")]
    assert "failed" in entry1
    assert f"⚠️ {reason}" in entry1
    link = f"https://discord.com/channels/{world.guild.id}/{world.general.id}/{sent.id}"
    assert f"posted: {link}" in content


# --- autocomplete -------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["schedule", "settings"])
@pytest.mark.parametrize(
    ("typed", "must_include"),
    [
        ("", ["UTC", "Europe/London", "America/New_York"]),
        ("europe/b", ["Europe/Berlin", "Europe/Brussels", "Europe/Budapest"]),
        ("new", ["America/New_York"]),
        ("TOKYO", ["Asia/Tokyo"]),
        ("a", ["America/New_York"]),
    ],
)
async def test_timezone_autocomplete(
    world: World, crier: Crier, command: str, typed: str, must_include: list[str]
) -> None:
    options: dict[str, Any] = {"timezone": typed}
    h = await world.fake.invoke_autocomplete(
        world.guild, world.general, world.admin, command, options, focused="timezone"
    )
    cb = await h.response()
    assert cb.type == CB_AUTOCOMPLETE_RESULT
    names = [c["value"] for c in cb.choices]
    assert 0 < len(names) <= 25
    assert [c["name"] for c in cb.choices] == names
    known = zoneinfo.available_timezones()
    assert set(names) <= known
    assert all(typed.lower() in n.lower() for n in names), names
    for zone in must_include:
        assert zone in names, (zone, names)


async def test_timezone_autocomplete_nothing_matches(world: World, crier: Crier) -> None:
    h = await world.fake.invoke_autocomplete(
        world.guild,
        world.general,
        world.admin,
        "schedule",
        {"timezone": "xyzzy"},
        focused="timezone",
    )
    assert (await h.response()).choices == []


# --- concurrency --------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def any_db_crier(
    request: pytest.FixtureRequest, world: World, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[Crier]:
    """The bot on SQLite, and on a fresh PostgreSQL database if a server is configured."""
    url = f"sqlite:///{tmp_path / 'crier.db'}"
    cleanup = None
    if request.param == "postgres":
        dsn = postgres_dsn()
        if dsn is None:
            pytest.skip("needs CRIER_TEST_POSTGRES_DSN")
        from bot.app.crier import bot_migrations
        from tests.scheduler.pg import POOL

        db = await POOL.acquire(dsn, [bot_migrations()])  # at head and empty
        url = db.dsn

        async def cleanup() -> None:
            await POOL.release(db)

    settings = settings_for(world.fake, tmp_path / "unused.db", database_url=url)
    app = Crier(settings, clock=clock, guild_ready_timeout=0.05)
    await app.start()
    try:
        yield app
    finally:
        await app.close()
        restore_discord_endpoints()
        if cleanup is not None:
            await cleanup()


async def test_concurrent_schedules_in_one_guild_get_distinct_numbers(
    world: World, any_db_crier: Crier
) -> None:
    handles = await asyncio.gather(
        *(
            world.fake.invoke_command(
                world.guild,
                world.general,
                world.admin,
                "schedule",
                {"when": f"in {n}h", "message": f"n{n}"},
            )
            for n in range(1, 9)
        )
    )
    answers = [(await h.response()).content or "" for h in handles]
    assert all("✅ Scheduled announcement" in a for a in answers), answers
    rows = await announcements(any_db_crier, world)
    assert sorted(a.local_id for a in rows) == list(range(1, 9))
    assert len(await any_db_crier.sched.list_jobs()) == 8
