"""Placeholders (``{occurrence}``, ``{date}``, ``{time}``, ``{weekday}``, ``{next}``,
``{until}``) end to end through discord.py against the fake Discord: rendered per
occurrence, across a DST night, in the text, an embed's title and a forum post's name; the
re-send of an interrupted attempt byte-identical; unknown names refused with the known list
at /schedule and /edit, writing nothing; /info showing the next occurrence rendered."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from bot.parsing import InputError, RepeatRule
from bot.parsing.placeholders import (
    KNOWN_PLACEHOLDERS,
    check_placeholders,
    occurrence,
    render,
    widest,
)
from tests.bot.conftest import CrierFactory, World, db_snapshot, run_command
from tests.bot.test_delivery import (
    advance,
    advance_to,
    messages_regex,
    posts,
    send_requests,
)
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock

PARIS = "Europe/Paris"
# Europe's clocks go forward on the night of Sunday 31 March 2030 (02:00 CET → 03:00 CEST).
EVE = datetime(2030, 3, 29, 12, 0, tzinfo=UTC)
KNOWN_LIST = "`{occurrence}`, `{date}`, `{time}`, `{weekday}`, `{next}`, `{until}`"


def t(text: str) -> int:
    """Epoch seconds of a UTC ``YYYY-MM-DD HH:MM``."""
    return int(datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC).timestamp())


async def schedule(world: World, **options: object) -> int:
    options.setdefault("channel", world.news)
    cb = await run_command(world, "schedule", **options)
    found = re.search(r"Scheduled announcement \*\*#(\d+)\*\*", cb.content or "")
    assert found is not None, cb.content
    return int(found[1])


# --- the text itself ------------------------------------------------------------------------


def test_every_placeholder_renders_from_the_occurrence() -> None:
    daily = RepeatRule("cron", "0 9 * * *", None, "every day at 09:00 (Europe/Paris)")
    first = t("2030-03-30 08:00")
    until = t("2030-04-01 10:00")
    text = "#{occurrence} {weekday} {date} {time} · next {next} · until {until} · {{x}}"
    # Saturday 09:00 CET, then Sunday 09:00 CEST: the same local time, an hour apart in UTC.
    sat = occurrence(daily, first, PARIS, first, until, 1)
    sun = occurrence(daily, first, PARIS, t("2030-03-31 07:00"), until, 2)
    mon = occurrence(daily, first, PARIS, t("2030-04-01 07:00"), until, 3)
    assert render(text, sat) == (
        f"#1 Saturday 30 March 2030 09:00 · next <t:{t('2030-03-31 07:00')}:F> · "
        f"until <t:{until}:F> · {{x}}"
    )
    assert render(text, sun) == (
        f"#2 Sunday 31 March 2030 09:00 · next <t:{t('2030-04-01 07:00')}:F> · "
        f"until <t:{until}:F> · {{x}}"
    )
    assert render(text, mon).startswith("#3 Monday 1 April 2030 09:00 · next none · until")


def test_an_interval_keeps_its_instants_so_its_local_time_moves_across_the_dst_night() -> None:
    every_12h = RepeatRule("interval", None, timedelta(hours=12), "every 12 hours")
    first = t("2030-03-30 19:00")  # 20:00 CET
    after = occurrence(every_12h, first, PARIS, t("2030-03-31 07:00"), None, 2)
    assert render("{time} {weekday}, then {next}; until {until}", after) == (
        f"09:00 Sunday, then <t:{t('2030-03-31 19:00')}:F>; until never"
    )


def test_a_one_off_is_the_first_with_no_next_and_no_until() -> None:
    once = occurrence(None, t("2030-03-01 12:05"), "UTC", t("2030-03-01 12:05"), None)
    assert render("{occurrence}|{next}|{until}|{ DATE }", once) == "1|none|never|1 March 2030"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("Hello {name}", "uses `{name}`, which is not a placeholder"),
        ("{events} soon", "uses `{events}`, which is not a placeholder"),
        ("a lone { brace", "has a lone `{`"),
        ("and } this", "has a lone `}`"),
        ("{{date}", "has a lone `}`"),
    ],
)
def test_unknown_names_and_lone_braces_are_refused_with_the_known_list(text: str, why: str) -> None:
    with pytest.raises(InputError) as refused:
        check_placeholders(text, "the message")
    assert why in str(refused.value)
    assert KNOWN_LIST in str(refused.value)


def test_braces_written_twice_and_known_names_pass() -> None:
    for name in KNOWN_PLACEHOLDERS:
        check_placeholders(f"{{{name}}} and {{{{literal}}}}", "the message")
    once = occurrence(None, 0.0, "UTC", 0.0, None)
    assert render("{{date}} is {date}", once) == "{date} is 1 January 1970"


def test_lengths_are_checked_at_the_longest_rendering() -> None:
    assert widest("{date}!") == "x" * len("28 de septiembre de 2030") + "!"  # es-ES: the longest
    assert widest("{{a}}") == "{a}"


def test_text_from_before_placeholders_is_posted_as_typed() -> None:
    """A text with braces of its own (not a valid placeholder text) is never changed."""
    once = occurrence(None, 0.0, "UTC", 0.0, None)
    assert render('json: {"a": 1} {date}', once) == 'json: {"a": 1} {date}'


# --- end to end -------------------------------------------------------------------------------


@pytest.fixture
def crier(crier_on_each_db: Crier) -> Crier:
    """On SQLite and PostgreSQL (every test here that takes it)."""
    return crier_on_each_db


async def test_a_recurring_announcement_renders_each_occurrence_across_the_dst_night(
    world: World, crier_factory: CrierFactory, clock: FakeClock, db_url: str
) -> None:
    """On SQLite and PostgreSQL."""
    crier = await crier_factory(database_url=db_url)
    await advance_to(crier, clock, EVE)
    await schedule(
        world,
        message="Day {occurrence}: {weekday} {date} at {time}. Next: {next}. Ends {until}.",
        repeat="daily at 09:00",
        timezone=PARIS,
        until="2030-04-01 12:00",  # 10:00 UTC: three occurrences
    )
    fires = ["2030-03-30 08:00", "2030-03-31 07:00", "2030-04-01 07:00"]
    for fire in fires:
        await advance_to(crier, clock, datetime.fromtimestamp(t(fire), UTC))
    until = f"<t:{t('2030-04-01 10:00')}:F>"
    assert [m.content for m in posts(world, world.news)] == [
        f"Day 1: Saturday 30 March 2030 at 09:00. Next: <t:{t(fires[1])}:F>. Ends {until}.",
        f"Day 2: Sunday 31 March 2030 at 09:00. Next: <t:{t(fires[2])}:F>. Ends {until}.",
        f"Day 3: Monday 1 April 2030 at 09:00. Next: none. Ends {until}.",
    ]


EVERY = "#{occurrence} {weekday} {date} {time} | next {next} | until {until}"


async def test_a_one_off_renders_every_placeholder_across_each_dst_night(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """On SQLite and PostgreSQL: one-offs scheduled the day before each of Paris's clock
    changes, for the hour they change: 03:00 on the spring night (the first time after the
    skipped hour, 01:00 UTC) and 02:30 on the autumn night (an hour that happens twice: the
    first, 00:30 UTC). Each posts at that instant, every placeholder rendered in Paris's
    time of it."""
    await advance_to(crier, clock, EVE)
    cb = await run_command(world, "schedule", channel=world.news, when="2030-03-31 03:00",
                           timezone=PARIS, message=EVERY)  # fmt: skip
    spring = "#1 Sunday 31 March 2030 03:00 | next none | until never"
    assert f"> {spring}" in (cb.content or ""), cb.content
    assert f"<t:{t('2030-03-31 01:00')}:F>" in (cb.content or "")
    await advance_to(crier, clock, datetime(2030, 3, 31, 0, 59, tzinfo=UTC))
    assert posts(world, world.news) == []
    await advance_to(crier, clock, datetime(2030, 3, 31, 1, 0, tzinfo=UTC))
    assert [m.content for m in posts(world, world.news)] == [spring]

    await advance_to(crier, clock, datetime(2030, 10, 26, 12, 0, tzinfo=UTC))
    cb = await run_command(world, "schedule", channel=world.news, when="2030-10-27 02:30",
                           timezone=PARIS, title="{weekday} {time}", message=EVERY)  # fmt: skip
    autumn = "#1 Sunday 27 October 2030 02:30 | next none | until never"
    assert f"<t:{t('2030-10-27 00:30')}:F>" in (cb.content or ""), cb.content
    await advance_to(crier, clock, datetime(2030, 10, 27, 0, 29, tzinfo=UTC))
    assert len(posts(world, world.news)) == 1
    await advance_to(crier, clock, datetime(2030, 10, 27, 0, 30, tzinfo=UTC))
    [_, post] = posts(world, world.news)
    assert [(e["title"], e["description"]) for e in post.embeds] == [("Sunday 02:30", autumn)]


async def test_a_skipped_date_is_not_an_occurrence(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """A skip is part of the rule (issue 35): the sessions of a course go on counting 1, 2
    after a skipped date (an occurrence that came due while paused still counts)."""
    local = await schedule(world, message="Round {occurrence}", when="in 1h", repeat="hourly")
    await advance(crier, clock, timedelta(hours=1))
    skipped = await run_command(world, "skip", id=local)
    assert "Skipping" in (skipped.content or ""), skipped.content
    for _ in range(2):
        await advance(crier, clock, timedelta(hours=1))
    assert [m.content for m in posts(world, world.news)] == ["Round 1", "Round 2"]


async def test_a_one_off_renders_its_time_and_no_next(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    cb = await run_command(
        world,
        "schedule",
        channel=world.news,
        when="2030-03-01 14:30",
        timezone=PARIS,
        message="#{occurrence} on {weekday} {date} {time}, then {next}, until {until}",
    )
    # The confirmation previews the post as it will be.
    assert "> #1 on Friday 1 March 2030 14:30, then none, until never" in (cb.content or "")
    await advance(crier, clock, timedelta(hours=1, minutes=30))  # 14:30 in Paris
    [post] = posts(world, world.news)
    assert post.content == "#1 on Friday 1 March 2030 14:30, then none, until never"


async def test_an_embed_title_and_a_forum_post_name_are_rendered(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    world.guild.set_bot_permissions(
        P.VIEW_CHANNEL | P.SEND_MESSAGES | P.EMBED_LINKS | P.CREATE_PUBLIC_THREADS
    )
    forum = world.guild.add_forum("board", tags=["news"])
    await schedule(world, message="body", title="Week {occurrence} ({date})", when="in 1h",
                   repeat="weekly")  # fmt: skip
    await schedule(world, channel=forum, message="minutes of {date}", title="Meeting {date}",
                   when="in 1h")  # fmt: skip
    await advance(crier, clock, timedelta(hours=1))
    await advance(crier, clock, timedelta(days=7))
    assert [e["title"] for m in posts(world, world.news) for e in m.embeds] == [
        "Week 1 (1 March 2030)",
        "Week 2 (8 March 2030)",
    ]
    [thread] = world.fake.forum_posts(forum)
    assert thread.name == "Meeting 1 March 2030"
    starter = world.fake.get_message(thread.id)
    assert starter is not None
    assert [e["description"] for e in starter.embeds] == ["minutes of 1 March 2030"]


async def test_an_interrupted_attempt_is_resent_byte_identical(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The message is created but its answer lost (a 503 after the effect): the retry,
    a backoff later, renders the same text (placeholders from the occurrence, not from the
    time of the attempt), so its nonce re-send is byte-identical and Discord dedups it."""
    await schedule(world, message="{occurrence}. {time} {weekday}; next {next}", when="in 5m",
                   repeat="daily")  # fmt: skip
    world.fake.faults.add(
        method="POST", path_regex=messages_regex(world.news), status=503, after_effect=True
    )
    await advance(crier, clock, timedelta(minutes=5))
    [created] = posts(world, world.news)
    # The retry (after its backoff) comes a minute later by the clock: the same text.
    await advance(crier, clock, timedelta(seconds=61))
    assert posts(world, world.news) == [created]
    first, again = send_requests(world, world.news)
    assert (first.status, again.status) == (503, 200)
    assert first.body == again.body
    assert created.content == f"1. 12:05 Friday; next <t:{t('2030-03-02 12:05')}:F>"
    assert world.fake.nonce_dedup_hits == 1


async def test_an_unknown_placeholder_is_refused_at_schedule_and_edit_writing_nothing(
    world: World, crier: Crier
) -> None:
    before = await db_snapshot(crier)
    cb = await run_command(
        world, "schedule", channel=world.news, when="in 1h", message="Hi {username}!"
    )
    assert cb.ephemeral
    assert "uses `{username}`, which is not a placeholder" in (cb.content or "")
    assert KNOWN_LIST in (cb.content or "")
    cb = await run_command(
        world, "schedule", channel=world.news, when="in 1h", message="ok", title="{weekday"
    )
    assert "The title has a lone `{`" in (cb.content or ""), cb.content
    assert await db_snapshot(crier) == before

    local = await schedule(world, message="fine {date}", when="in 1h")
    before = await db_snapshot(crier)
    cb = await run_command(world, "edit", id=local, message="now {dat}")
    assert "uses `{dat}`, which is not a placeholder" in (cb.content or ""), cb.content
    assert await db_snapshot(crier) == before


async def test_the_length_counts_placeholders_at_their_longest(world: World, crier: Crier) -> None:
    before = await db_snapshot(crier)
    text = "x" * (2000 - 24) + "{date}"  # 1982 typed; up to 2000 posted (es-ES)
    cb = await run_command(world, "schedule", channel=world.news, when="in 1h", message=text)
    assert "Scheduled announcement" in (cb.content or ""), cb.content
    before = await db_snapshot(crier)
    cb = await run_command(world, "schedule", channel=world.news, when="in 1h",
                           message="x" + text)  # fmt: skip
    assert "Placeholders are counted at their longest" in (cb.content or ""), cb.content
    assert await db_snapshot(crier) == before


async def test_info_shows_the_next_occurrence_rendered(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, message="Meetup #{occurrence} on {weekday} at {time}",
                           when="in 1h", repeat="daily")  # fmt: skip
    await advance(crier, clock, timedelta(hours=1))
    cb = await run_command(world, "info", id=local)
    assert "> Meetup #2 on Saturday at 13:00" in (cb.content or ""), cb.content
