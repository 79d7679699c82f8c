"""Discord events on the dashboard, in a real browser (Chromium), against the real bot and the
fake Discord: the form's "Discord event" fields create one event per occurrence (once), an
edit of its place modifies that same event, unticking cancels it; a voice channel picked
from the server's; the bot's missing Create Events refused with the commands' words and
nothing saved; the announcement page shows the event and its link; an export uploaded into
a second server (dry run, then confirmed) keeps the event settings."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from tests.bot.conftest import NOW, add_world, db_snapshot
from tests.fakediscord import Permissions as P

from .conftest import browser_page, news_draft
from .test_dashboard_browser import advance, log_in

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from tests.fakediscord.events import ScheduledEvent
    from tests.fakediscord.state import Guild

    from .conftest import Site

pytestmark = pytest.mark.asyncio(loop_scope="module")

BASE = P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.EMBED_LINKS


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Any, site: Site) -> AsyncIterator[Any]:
    site.world.guild.set_bot_permissions(BASE | P.CREATE_EVENTS)
    async with browser_page(browser) as found:
        yield found


def events(site: Site, guild: Guild | None = None) -> list[ScheduledEvent]:
    """The server's scheduled or active events, oldest first."""
    return site.fake.scheduled_events.of(guild or site.world.guild)


def event_requests(site: Site, method: str) -> list[Any]:
    return [r for r in site.fake.requests if r.method == method and "scheduled-events" in r.path]


async def fill_new(page: Any, site: Site, message: str, **event: str) -> None:
    """The new-announcement form filled in: in #news in 2 hours, with the event fields
    given (``location``, ``minutes``, ``channel``: a voice channel's id), "Discord event"
    ticked."""
    world = site.world
    await page.goto(f"{site.url}/g/{world.guild.id}/new")
    await page.locator("textarea[name=message]").fill(message)
    await page.get_by_label("Channel").select_option(str(world.news.id))
    await page.get_by_label("When").fill("in 2h")
    await page.get_by_label("Create a Discord event for each occurrence").check()
    if "location" in event:
        await page.get_by_label("Event location").fill(event["location"])
    if "minutes" in event:
        await page.get_by_label("Event length (minutes)").fill(event["minutes"])
    if "channel" in event:
        await page.get_by_label("Event in voice or stage").select_option(event["channel"])


async def test_an_event_made_from_the_form_then_moved_then_unticked(page: Any, site: Site) -> None:
    world = site.world
    await log_in(page, site, world.admin)
    await fill_new(page, site, "Town meeting", location="Town hall", minutes="90")
    await page.get_by_role("button", name="Preview").click()
    note = await page.locator(".preview").inner_text()
    assert "A Discord event for each occurrence: Town hall, 90 min" in note, note
    assert events(site) == []  # a preview makes nothing
    await page.get_by_role("button", name="Schedule").click()
    flash = await page.locator(".flash").inner_text()
    assert "Scheduled announcement #1 in #news" in flash, flash
    await advance(site, timedelta(seconds=1))
    [event] = events(site)
    assert (event.name, event.location, event.entity_type) == ("Town meeting", "Town hall", 3)
    assert len(event_requests(site, "POST")) == 1

    # The announcement page: the event's settings and its link.
    await page.reload()
    info = page.locator(".info")
    assert "Town hall, 90 min, for each occurrence" in await info.inner_text()
    url = f"https://discord.com/events/{world.guild.id}/{event.id}"
    assert await info.locator(f'a[href="{url}"]').count() == 1
    # The preview of its next post shows the post's button to the event.
    button = page.locator(".preview").get_by_role("link", name="Discord event")
    assert await button.get_attribute("href") == url

    # Edited: the same event moves (modified, not made again).
    await page.get_by_role("link", name="Edit").click()
    assert await page.get_by_label("Create a Discord event for each occurrence").is_checked()
    assert await page.get_by_label("Event location").input_value() == "Town hall"
    assert await page.get_by_label("Event length (minutes)").input_value() == "90"
    await page.get_by_label("Event location").fill("Library")
    await page.get_by_role("button", name="Save changes").click()
    await page.wait_for_selector(".flash")
    await advance(site, timedelta(seconds=1))
    [moved] = events(site)
    assert (moved.id, moved.location) == (event.id, "Library")
    assert len(event_requests(site, "POST")) == 1
    assert [r.status for r in event_requests(site, "PATCH")] == [200]
    spec = await site.crier.bot.announcements.event_spec((await announcement(site, 1)).id)
    assert spec is not None
    assert (spec.location, spec.minutes) == ("Library", 90)

    # Both places emptied, still ticked: refused like an event without a place, nothing saved.
    await page.get_by_role("link", name="Edit").click()
    before = await db_snapshot(site.crier)
    await page.get_by_label("Event location").fill("")
    await page.get_by_role("button", name="Save changes").click()
    answer = await page.locator(".answer").inner_text()
    assert "A Discord event needs a place" in answer, answer
    assert await db_snapshot(site.crier) == before

    # Unticked: the coming event is canceled, and no more are made.
    await page.goto(f"{site.url}/g/{world.guild.id}/a/1")
    await page.get_by_role("link", name="Edit").click()
    await page.get_by_label("Create a Discord event for each occurrence").uncheck()
    await page.get_by_role("button", name="Save changes").click()
    await page.wait_for_selector(".flash")
    await advance(site, timedelta(seconds=1))
    assert events(site) == []
    [gone] = site.fake.scheduled_events.of(world.guild, live_only=False)
    assert (gone.id, gone.status) == (event.id, 4)  # canceled
    assert await site.crier.bot.announcements.event_spec((await announcement(site, 1)).id) is None
    await page.reload()
    assert "Discord event" not in await page.locator(".info").inner_text()


async def announcement(site: Site, local_id: int) -> Any:
    return await site.crier.bot.announcements.get(site.world.guild.id, local_id)


async def test_an_event_in_a_voice_channel_picked_on_the_form(page: Any, site: Site) -> None:
    world = site.world
    lounge = world.guild.add_channel("Lounge", type=2)
    await log_in(page, site, world.admin)
    await fill_new(page, site, "Voice hangout", channel=str(lounge.id))
    await page.get_by_role("button", name="Preview").click()
    note = await page.locator(".preview").inner_text()
    assert "A Discord event for each occurrence: 🔊 Lounge, 60 min" in note, note
    await page.get_by_role("button", name="Schedule").click()
    await page.wait_for_selector(".flash")
    await advance(site, timedelta(seconds=1))
    [event] = events(site)
    assert (event.entity_type, event.channel_id, event.location) == (2, lounge.id, None)

    # Edited: a location typed, the channel picker left as it was: the new place wins (as
    # `/edit event_location:` does), the same event moves there.
    await page.get_by_role("link", name="Edit").click()
    picker = page.get_by_label("Event in voice or stage")
    assert await picker.input_value() == str(lounge.id)
    await page.get_by_label("Event location").fill("Rooftop")
    await page.get_by_role("button", name="Save changes").click()
    await page.wait_for_selector(".flash")
    await advance(site, timedelta(seconds=1))
    [moved] = events(site)
    assert (moved.id, moved.entity_type, moved.location) == (event.id, 3, "Rooftop")


async def test_without_create_events_the_form_shows_the_refusal_and_saves_nothing(
    page: Any, site: Site
) -> None:
    world = site.world
    world.guild.set_bot_permissions(BASE)
    await log_in(page, site, world.admin)
    before = await db_snapshot(site.crier)
    await fill_new(page, site, "Town meeting", location="Town hall")
    await page.get_by_role("button", name="Schedule").click()
    answer = await page.locator(".answer").inner_text()
    assert "I need the Create Events permission in this server" in answer, answer
    assert await page.get_by_label("Event location").input_value() == "Town hall"  # kept
    assert await db_snapshot(site.crier) == before
    assert events(site) == []
    assert event_requests(site, "POST") == []

    # The edit form too: an announcement given an event without the permission.
    a, _ = await site.crier.bot.announcements.create(
        news_draft(site, "No event yet", NOW + timedelta(hours=3))
    )
    before = await db_snapshot(site.crier)
    await page.goto(f"{site.url}/g/{world.guild.id}/a/{a.local_id}/edit")
    await page.get_by_label("Create a Discord event for each occurrence").check()
    await page.get_by_label("Event location").fill("Town hall")
    await page.get_by_role("button", name="Save changes").click()
    answer = await page.locator(".answer").inner_text()
    assert "I need the Create Events permission in this server" in answer, answer
    assert await db_snapshot(site.crier) == before
    assert event_requests(site, "POST") == []

    # Options that make no sense are refused the same way: two places.
    world.guild.set_bot_permissions(BASE | P.CREATE_EVENTS)
    lounge = world.guild.add_channel("Lounge", type=2)
    await fill_new(page, site, "Town meeting", location="Town hall", channel=str(lounge.id))
    await page.get_by_role("button", name="Schedule").click()
    answer = await page.locator(".answer").inner_text()
    assert "not both: an event takes place in one" in answer, answer
    await fill_new(page, site, "Town meeting", location="Town hall", minutes="an hour")
    await page.get_by_role("button", name="Schedule").click()
    answer = await page.locator(".answer").inner_text()
    assert "The event's length is a number of minutes" in answer, answer
    assert await db_snapshot(site.crier) == before


async def test_an_export_uploaded_into_a_second_server_keeps_the_event(
    page: Any, site: Site, tmp_path: Path
) -> None:
    world = site.world
    # A second server, with a #news, where the same admin manages the server.
    second = add_world(site.fake, "Second Server", admin="carol", member="dave")
    second.guild.set_bot_permissions(BASE | P.CREATE_EVENTS)
    managers = second.guild.add_role("managers", P.MANAGE_GUILD)
    second.guild.add_member(world.admin.user, roles=[managers])
    await log_in(page, site, world.admin)
    await fill_new(page, site, "Quarterly review", location="Board room", minutes="45")
    await page.get_by_role("button", name="Schedule").click()
    await page.wait_for_selector(".flash")
    await page.goto(f"{site.url}/g/{world.guild.id}")
    async with page.expect_download() as found:
        await page.get_by_role("link", name="Export", exact=True).click()
    path = tmp_path / "export.json"
    await (await found.value).save_as(path)
    [row] = json.loads(path.read_text())["announcements"]
    assert row["event"] == {"location": "Board room", "minutes": 45, "channel": None}

    await page.goto(f"{site.url}/g/{second.guild.id}/import")
    before = await db_snapshot(site.crier)
    await page.get_by_label("Export file (.json)").set_input_files(path)
    await page.get_by_role("button", name="Upload (dry run)").click()
    report = await page.locator(".report").inner_text()
    assert report.startswith("🔎 Dry run: 1 to create."), report
    after = await db_snapshot(site.crier)
    kept = ("bot_meta", "bot_pending_imports")  # the dry run kept for its confirmation
    assert {k: v for k, v in after.items() if k not in kept} == {
        k: v for k, v in before.items() if k not in kept
    }
    assert events(site, second.guild) == []
    await page.get_by_role("button", name="Import all").click()
    flash = await page.locator(".flash").inner_text()
    assert flash.startswith("📥 Imported 1 announcement"), flash
    service = site.crier.bot.announcements
    imported = await service.get(second.guild.id, 1)
    assert (imported.content, imported.channel_id) == ("Quarterly review", second.news.id)
    spec = await service.event_spec(imported.id)
    assert spec is not None
    assert (spec.location, spec.minutes, spec.channel_id) == ("Board room", 45, None)
    await advance(site, timedelta(seconds=1))
    [event] = events(site, second.guild)
    assert (event.name, event.location) == ("Quarterly review", "Board room")
