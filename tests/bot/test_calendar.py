"""The calendar feed (issue 35, item 5): ``/calendar`` end to end through the real
discord.py client against the fake Discord, and ``GET /calendar/<token>.ics`` from the bot's
own web server, parsed with a real iCalendar library (``icalendar``) and checked against the
times the scheduler fires (its schedule's trigger, and the posts themselves) in a zone with
clock changes."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import aiohttp
import icalendar
import pytest

from bot.announcements import FEED_DAYS, FEED_PER_ANNOUNCEMENT, Feed, FeedEvent
from bot.announcements import calendar as calendar_domain
from bot.models import nonce_for
from bot.web import calendar as web_calendar
from bot.web.calendar import FEED_LIMIT, write_feed
from scheduler.testing import FakeClock
from tests.bot.conftest import World, db_snapshot, run_command, schedule_id
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from bot.app import Crier
    from tests.bot.conftest import CrierFactory

BERLIN = ZoneInfo("Europe/Berlin")
URL = re.compile(r"(http://\S+/calendar/([A-Za-z0-9_-]+)\.ics)")


@pytest.fixture
async def served(crier_factory: CrierFactory) -> Crier:
    return await crier_factory(http_address=("127.0.0.1", 0))


@pytest.fixture
async def served_on_each_db(crier_factory: CrierFactory, db_url: str) -> Crier:
    """:func:`served` on SQLite, then on PostgreSQL (where the token table's statements
    differ)."""
    return await crier_factory(http_address=("127.0.0.1", 0), database_url=db_url)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=20)) as session:
        yield session


async def answer(world: World, name: str, **options: Any) -> str:
    cb = await run_command(world, name, **options)
    assert cb.ephemeral
    return cb.content or ""


async def address(world: World, **options: Any) -> str:
    """The feed's address /calendar answers with."""
    text = await answer(world, "calendar", **options)
    found = URL.search(text)
    assert found is not None, text
    return found[1]


async def fetch(
    http: aiohttp.ClientSession, url: str, **headers: str
) -> tuple[int, bytes, aiohttp.typedefs.LooseHeaders]:
    async with http.get(url, headers=headers) as resp:
        return resp.status, await resp.read(), resp.headers


async def feed(http: aiohttp.ClientSession, url: str) -> icalendar.Calendar:
    status, body, headers = await fetch(http, url)
    assert status == 200, body
    assert headers["Content-Type"] == "text/calendar; charset=utf-8"
    well_formed(body)
    return icalendar.Calendar.from_ical(body)


def well_formed(body: bytes) -> None:
    """RFC 5545's lines: CRLF each, none longer than 75 octets, continuation lines folded
    with a space, the whole in UTF-8."""
    body.decode("utf-8")
    assert body.endswith(b"\r\n")
    lines = body.split(b"\r\n")[:-1]
    assert all(b"\n" not in line and b"\r" not in line for line in lines)
    assert max(len(line) for line in lines) <= 75
    assert lines[0] == b"BEGIN:VCALENDAR"
    assert lines[-1] == b"END:VCALENDAR"


def starts(cal: icalendar.Calendar, announcement_id: int | None = None) -> list[datetime]:
    """Each VEVENT's start as an instant (UTC), in the feed's order; of one announcement
    (by its UID) if given."""
    out = []
    for e in cal.walk("VEVENT"):
        if announcement_id is not None and f"-{announcement_id}@" not in str(e["UID"]):
            continue
        start = e.decoded("DTSTART")
        assert start.tzinfo is not None, e
        out.append(start.astimezone(UTC))
    return out


async def trigger_times(
    crier: Crier, world: World, local: int, count: int = 10**6
) -> list[datetime]:
    """The fire times of the announcement's schedule, by its own trigger, from now to the
    feed's horizon (at most ``count``)."""
    a = await crier.bot.announcements.get(world.guild.id, local)
    info = await crier.sched.schedules.get(a.schedule_name or "")
    out: list[datetime] = []
    now = crier.sched.clock.now()
    t = info.next_fire
    assert t is not None
    while len(out) < count and t <= now + timedelta(days=FEED_DAYS):
        out.append(t)
        t = info.trigger.next_after(t)
    return out


# --- the times: the scheduler's own, across clock changes --------------------------------------


async def test_each_event_starts_when_the_scheduler_fires_across_the_march_change(
    world: World, served: Crier, clock: FakeClock, http: aiohttp.ClientSession
) -> None:
    """A daily 02:30 in Berlin (the hour that 31 March 2030 skips), seen in the feed: every
    VEVENT's start is the schedule's next fire time, in order, for the 90 days, in the
    Europe/Berlin zone (TZID with its VTIMEZONE); a skipped day is absent; and the posts
    the scheduler then makes are the feed's first events."""
    clock.set(datetime(2030, 3, 27, 12, tzinfo=UTC))
    local = await schedule_id(
        world, when="02:30", repeat="daily", timezone="Europe/Berlin", message="Standup"
    )
    url = await address(world)
    before = starts(await feed(http, url))
    assert before == await trigger_times(served, world, local)
    assert len(before) >= FEED_DAYS - 1  # the one 02:30 that does not exist left out
    assert await answer(world, "skip", id=local, date="2030-04-02")
    cal = await feed(http, url)
    assert starts(cal) == await trigger_times(served, world, local)
    skipped = datetime(2030, 4, 2, 2, 30, tzinfo=BERLIN).astimezone(UTC)
    assert skipped in before
    assert skipped not in starts(cal)
    # Written in the announcement's zone, which the feed describes.
    first = next(iter(cal.walk("VEVENT")))
    assert first["DTSTART"].params["TZID"] == "Europe/Berlin"
    assert [str(z["TZID"]) for z in cal.walk("VTIMEZONE")] == ["Europe/Berlin"]
    assert {e.decoded("DTSTART").astimezone(BERLIN).time() for e in cal.walk("VEVENT")} == {
        time(2, 30)
    } | ({time(3, 30)} if len(before) == FEED_DAYS else set())

    # The posts: the clock moved to each of the feed's first times in turn, the scheduler
    # posts each one then, and nothing in between.
    a = await served.bot.announcements.get(world.guild.id, local)
    by_nonce = {nonce_for(a.id, t.timestamp()): t for t in before}
    coming = [t for t in starts(cal) if t < datetime(2030, 4, 5, tzinfo=UTC)]
    for t in coming:
        clock.set(t - timedelta(minutes=1))
        await served.sched.wait_idle()
        clock.set(t)
        await served.sched.wait_idle()
    posted = [by_nonce[m.nonce] for m in world.fake.bot_messages(world.news)]
    assert posted == coming
    assert len(posted) >= 6  # 28 Mar to 4 Apr, the 2nd skipped


async def test_the_hour_the_october_change_repeats_names_each_instant_once(
    world: World, served: Crier, clock: FakeClock, http: aiohttp.ClientSession
) -> None:
    """Every half hour in Berlin across 27 October 2030, when 02:00-03:00 comes twice: the
    second pass of each local time is written in UTC (a TZID time means the first), so all
    four instants of that hour are in the feed, each once, at the trigger's times; the feed
    lists the first FEED_PER_ANNOUNCEMENT and says it cut the rest."""
    clock.set(datetime(2030, 10, 26, 12, tzinfo=UTC))
    local = await schedule_id(
        world, when="2030-10-26 18:00", repeat="every 30m", timezone="Europe/Berlin",
        message="tick",
    )  # fmt: skip
    cal = await feed(http, await address(world))
    expected = await trigger_times(served, world, local, FEED_PER_ANNOUNCEMENT)
    assert starts(cal) == expected
    hour = [
        datetime(2030, 10, 27, 0, tzinfo=UTC) + timedelta(minutes=30 * i) for i in range(4)
    ]  # 02:00 and 02:30 CEST, then 02:00 and 02:30 CET
    assert all(starts(cal).count(t) == 1 for t in hour)
    written = {e.decoded("DTSTART").astimezone(UTC): e["DTSTART"] for e in cal.walk("VEVENT")}
    assert [written[t].params.get("TZID") for t in hour] == [
        "Europe/Berlin", "Europe/Berlin", None, None,
    ]  # fmt: skip
    assert f"#{local}" in str(cal["X-WR-CALDESC"])
    assert str(FEED_PER_ANNOUNCEMENT) in str(cal["DESCRIPTION"])


# --- the address: made, shown again, reset ------------------------------------------------------


async def test_reset_makes_a_new_address_and_the_old_one_stops_working(
    world: World, served_on_each_db: Crier, http: aiohttp.ClientSession
) -> None:
    """/calendar makes the address once and shows it again; reset: true makes a new one, and
    the old one is a 404 at once. An ordinary member gets none, and nothing is written;
    an unknown token is a 404 that costs no request to Discord."""
    await schedule_id(world, when="in 1h", message="hello")
    first = await address(world)
    assert await address(world) == first
    assert (await fetch(http, first))[0] == 200
    text = await answer(world, "calendar", reset=True)
    assert "The old address no longer works" in text
    second = URL.search(text)
    assert second is not None
    assert second[1] != first
    assert (await fetch(http, first))[0] == 404
    assert (await fetch(http, second[1]))[0] == 200
    assert await address(world) == second[1]

    before = await db_snapshot(served_on_each_db)
    refused = await answer(world, "calendar", by=world.member, reset=True)
    assert "Manage Server" in refused or "manager" in refused, refused
    assert await db_snapshot(served_on_each_db) == before

    calls = len(world.fake.requests)
    base = second[1].rsplit("/calendar/", 1)[0]
    for path in (
        "/calendar/" + "A" * 43 + ".ics",
        "/calendar/" + "A" * 43 + "/1.ics",
        "/calendar/x.ics",  # not a token's form
        "/calendar/" + "A" * 500 + ".ics",
        "/calendar/%00%0a.ics",
    ):
        status, body, _ = await fetch(http, base + path)
        assert status == 404, (path, body)
    assert len(world.fake.requests) == calls


async def test_a_manager_who_cannot_see_a_channel_gets_no_address(
    world: World, served: Crier
) -> None:
    """The feed shows every scheduled announcement to whoever has its address: a manager who
    can't see the channel of one of them is refused, and nothing is made."""
    await schedule_id(world, when="in 1h", message="SECRET plans")
    carol = world.guild.add_member(name="carol", roles=world.admin.roles)  # a manager
    world.news.set_overwrite(carol, deny=P.VIEW_CHANNEL)
    before = await db_snapshot(served)
    text = await answer(world, "calendar", by=carol)
    assert "1 of them is for a channel you can't see" in text, text
    assert "/calendar/" not in text
    assert await db_snapshot(served) == before


async def test_no_web_server_no_address(world: World, crier: Crier) -> None:
    """Without HTTP_ADDRESS nothing would serve it: /calendar says so and makes nothing."""
    before = await db_snapshot(crier)
    text = await answer(world, "calendar")
    assert "`HTTP_ADDRESS`" in text
    assert "/calendar/" not in text
    assert await db_snapshot(crier) == before


# --- what each event says -------------------------------------------------------------------------


async def test_sequence_rises_with_each_edit_and_uids_stay(
    world: World, served: Crier, http: aiohttp.ClientSession
) -> None:
    """An edit of the text raises every event's SEQUENCE and keeps its UID; the feed's ETag
    changes with it, and a client that has the current one gets a 304."""
    local = await schedule_id(
        world, when="in 2h", repeat="daily", message="Raid night, {date}", title="Raid"
    )
    url = await address(world)
    cal = await feed(http, url)
    before = {str(e["UID"]): e for e in cal.walk("VEVENT")}
    assert {int(e["SEQUENCE"]) for e in before.values()} == {0}
    assert {str(e["SUMMARY"]) for e in before.values()} == {"Raid"}
    _, _, headers = await fetch(http, url)
    etag = headers["ETag"]
    assert (await fetch(http, url, **{"If-None-Match": etag}))[0] == 304

    assert "Edited" in await answer(world, "edit", id=local, message="Raid night moved, {date}")
    status, body, headers = await fetch(http, url, **{"If-None-Match": etag})
    assert status == 200
    assert headers["ETag"] != etag
    after = {str(e["UID"]): e for e in icalendar.Calendar.from_ical(body).walk("VEVENT")}
    assert set(after) == set(before)
    assert {int(e["SEQUENCE"]) for e in after.values()} == {1}
    first = min(after.values(), key=lambda e: e.decoded("DTSTART"))
    start = first.decoded("DTSTART")
    assert str(first["DESCRIPTION"]).startswith("Raid night moved, ")
    assert str(first["DESCRIPTION"]) == f"Raid night moved, {start.day} March 2030"  # its date
    assert str(first["URL"]) == f"https://discord.com/channels/{world.guild.id}/{world.news.id}"

    # HISTORY_DAYS prunes the history: the edit it deleted still counts, and the next one
    # raises it again (a SEQUENCE that went down would be ignored by calendars).
    async with served.sched.transaction() as ctx:
        await ctx.db.execute("DELETE FROM bot_history WHERE action = 'edited'")
    assert "Edited" in await answer(world, "edit", id=local, message="Raid night, again")
    cal = await feed(http, url)
    assert {int(e["SEQUENCE"]) for e in cal.walk("VEVENT")} == {2}


async def test_times_until_paused_and_one_offs(
    world: World, served: Crier, http: aiohttp.ClientSession
) -> None:
    """`times` (ends after that many posts) and `until` are respected, a paused announcement
    is absent, a one-off is one event; an announcement's own feed lists it alone, and a
    number the server does not have is a 404."""
    three = await schedule_id(world, when="in 1h", repeat="daily", message="three")
    assert "3" in await answer(world, "edit", id=three, times=3)
    await schedule_id(world, when="in 1h", repeat="daily", message="until", until="in 4 days")
    paused = await schedule_id(world, when="in 1h", repeat="daily", message="paused")
    assert "Paused" in await answer(world, "pause", id=paused)
    once = await schedule_id(world, when="in 5h", message="once")
    url = await address(world)
    cal = await feed(http, url)
    counts: dict[str, int] = {}
    for e in cal.walk("VEVENT"):
        counts[str(e["SUMMARY"])] = counts.get(str(e["SUMMARY"]), 0) + 1
    assert counts == {"three": 3, "until": 4, "once": 1}

    own = url.removesuffix(".ics") + f"/{once}.ics"
    assert [str(e["SUMMARY"]) for e in (await feed(http, own)).walk("VEVENT")] == ["once"]
    assert list((await feed(http, own.replace(f"/{once}.ics", f"/{paused}.ics"))).walk(
        "VEVENT")) == []  # fmt: skip
    assert (await fetch(http, own.replace(f"/{once}.ics", "/999.ics")))[0] == 404


HOSTILE = (
    "Line one, with commas; semicolons: and a backslash \\ here\n"
    "Second line\r\nThird after CRLF\n\n"
    "Unicode: 日本語 ✅ 👩‍👩‍👧 é (e + combining) \u202eRTL\u202c ZWJ\u200d\n"
    "BEGIN:VEVENT\nEND:VCALENDAR\nA lone\rcarriage return, NUL\x00 and ESC\x1b\n"
)


def as_read_back(text: str) -> str:
    """``text`` as a feed gives it back: each line break one ``\\n``, the control
    characters TEXT may not hold left out."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").replace("\x1b", "")


async def test_hostile_text_stays_valid(
    world: World, served: Crier, http: aiohttp.ClientSession
) -> None:
    """Newlines, commas, semicolons, backslashes, lines that look like iCalendar, and
    unicode that folding could split, at the longest a post may be: the feed stays well
    formed and gives the text back exactly."""
    text = (HOSTILE * 40)[:2000]
    await schedule_id(world, when="in 1h", repeat="daily", message=text, title="T, ; \\ ✅")
    cal = await feed(http, await address(world))
    events = list(cal.walk("VEVENT"))
    assert len(events) == FEED_DAYS
    assert {str(e["DESCRIPTION"]) for e in events} == {as_read_back(text)}
    assert {str(e["SUMMARY"]) for e in events} == {"T, ; \\ ✅"}


def test_a_ten_thousand_character_text_is_cut_and_stays_valid() -> None:
    """Text longer than any post (placeholders can lengthen one): written within its bound,
    every line within 75 octets, read back as written up to the cut."""
    now = datetime(2030, 3, 1, tzinfo=UTC)
    long = (HOSTILE * 200)[:10_000]
    event = FeedEvent(
        announcement_id=1, local_id=1, guild_id=2, channel_id=3, start=now,
        zone="Europe/Berlin", summary=long[:300], description=long, minutes=60,
        location="Town hall, room 1; floor 2", sequence=4, changed=now,
    )  # fmt: skip
    feed_ = Feed(2, None, now, now + timedelta(days=90), (event,), (), False, None)
    body = write_feed(feed_, "Crier, test; server", ["note, one", "note; two"])
    well_formed(body)
    cal = icalendar.Calendar.from_ical(body)
    (e,) = cal.walk("VEVENT")
    assert str(e["DESCRIPTION"]) == as_read_back(long[:3999]) + "…"
    assert str(e["LOCATION"]) == "Town hall, room 1; floor 2"
    assert e.decoded("DTEND") - e.decoded("DTSTART") == timedelta(hours=1)
    # The calendar's name escaped as TEXT (the library reads these back as written).
    assert b"\r\nNAME:Crier\\, test\\; server\r\n" in body
    assert b"\r\nX-WR-CALNAME:Crier\\, test\\; server\r\n" in body
    assert date(2030, 3, 1) == e.decoded("DTSTART").date()


# --- bounds ---------------------------------------------------------------------------------------


async def test_past_its_rate_an_address_is_told_to_wait(
    world: World, served: Crier, http: aiohttp.ClientSession
) -> None:
    """Every address may ask FEED_LIMIT times a minute, a known token or not: then 429 with
    a Retry-After, until the minute has passed."""
    url = await address(world)
    count, seconds = FEED_LIMIT
    unknown = url.rsplit("/", 1)[0] + "/" + "B" * 43 + ".ics"
    for i in range(count):
        assert (await fetch(http, url if i % 2 else unknown))[0] in (200, 404)
    status, _, headers = await fetch(http, url)
    assert status == 429
    assert headers["Retry-After"] == "60"
    served.clock.advance(timedelta(seconds=seconds))
    assert (await fetch(http, url))[0] == 200


async def test_the_feed_keeps_the_soonest_occurrences_within_its_bound(
    world: World, served: Crier, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past FEED_EVENTS in all (made 100 here), the soonest are kept, whichever
    announcement they are of, and the feed says the later ones are left out."""
    monkeypatch.setattr(calendar_domain, "FEED_EVENTS", 100)
    for minutes in (60, 90, 120):
        await schedule_id(world, when="in 1h", repeat=f"every {minutes}m", message=f"{minutes}")
    cal = await feed(http, await address(world))
    every: list[datetime] = []
    for local in (1, 2, 3):
        every += await trigger_times(served, world, local)
    every.sort()
    assert starts(cal) == every[:100]
    assert "This calendar lists the next 100 occurrences only" in str(cal["X-WR-CALDESC"])


def test_the_cache_of_written_feeds_holds_a_bounded_number_of_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past CACHE_BYTES, the feeds asked for least recently are dropped (a feed is up to a
    few megabytes, and every server has its own)."""
    monkeypatch.setattr(web_calendar, "CACHE_BYTES", 100)
    feeds = web_calendar.CalendarFeeds(None, FakeClock(datetime(2030, 1, 1, tzinfo=UTC)),
                                       behind_proxy=False)  # type: ignore[arg-type]  # fmt: skip
    for guild in (1, 2, 3):
        feeds._keep((guild, None), 60.0, web_calendar._Written((), b"x" * 40, f'"{guild}"'))
    assert list(feeds._written) == [(2, None), (3, None)]
    feeds._keep((4, None), 60.0, web_calendar._Written((), b"x" * 500, '"4"'))
    assert list(feeds._written) == []  # larger than the bound: not kept either
