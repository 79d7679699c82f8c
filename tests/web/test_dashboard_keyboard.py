"""The dashboard by keyboard, and its refusals as a screen reader meets them (issue 37), in
Chromium against the real bot and the fake Discord: a refused form puts the focus on the
field at fault, marked and described, under a title that starts with "Error:", and shows
the examples it gives as they are typed; the skip link is every page's first stop; Enter in
a field does the form's main action (or saves the template whose name it holds), never the
preview; a cancel or a delete asks first, and the first click changes nothing; the event's
fields stay folded until it is ticked; a template picked after typing keeps what was
typed."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from bot.models import AnnouncementState, Template
from tests.bot.conftest import NOW, db_snapshot

from .conftest import Site, browser_page, news_draft
from .test_dashboard_browser import log_in

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Any, site: Site) -> AsyncIterator[Any]:
    async with browser_page(browser) as found:
        await log_in(found, site, site.world.admin)
        yield found


async def focused(page: Any) -> dict[str, Any]:
    """The focused element: its tag, name, id, and what describes it."""
    found: dict[str, Any] = await page.evaluate(
        """() => {
            const e = document.activeElement;
            const ids = (e.getAttribute('aria-describedby') || '').split(' ').filter(Boolean);
            return {tag: e.tagName.toLowerCase(), name: e.getAttribute('name'), id: e.id,
                    invalid: e.getAttribute('aria-invalid'),
                    described: ids.map(i => document.getElementById(i).innerText).join(' | ')};
        }"""
    )
    return found


async def test_a_refused_time_puts_the_focus_on_when_and_shows_its_example_as_typed(
    page: Any, site: Site
) -> None:
    world = site.world
    before = await db_snapshot(site.crier)
    await page.goto(f"{site.url}/g/{world.guild.id}/new")
    await page.locator("textarea[name=message]").fill("Hello")
    await page.get_by_label("When", exact=True).fill("someday maybe")
    await page.get_by_role("button", name="Schedule").click()
    await page.locator("[role=alert]").wait_for()

    assert (await page.title()).startswith("Error: New announcement")
    now = await focused(page)
    assert (now["tag"], now["name"], now["invalid"]) == ("input", "when", "true")
    assert "I couldn't read that as a time" in now["described"]
    # The example of a Discord timestamp is its syntax, not a date it stands for.
    assert "<t:1735000000>" in now["described"]
    summary = page.get_by_role("alert")
    assert "<t:1735000000>" in await summary.inner_text()
    assert await summary.get_by_role("link", name="When").get_attribute("href") == "#f-when"
    assert await page.get_by_label("When", exact=True).input_value() == "someday maybe"
    assert await db_snapshot(site.crier) == before


async def test_the_skip_link_is_the_first_stop_of_every_page_and_lands_in_the_content(
    page: Any, site: Site
) -> None:
    guild = site.world.guild.id
    a, _ = await site.crier.bot.announcements.create(
        news_draft(site, "Skip me", NOW + timedelta(hours=1))
    )
    for path in ("/", f"/g/{guild}", f"/g/{guild}/new", f"/g/{guild}/a/{a.local_id}"):
        await page.goto(site.url + path)
        await page.keyboard.press("Tab")
        first = page.locator(":focus")
        assert await first.inner_text() == "Skip to content", path
        assert await first.is_visible(), path  # shown once focused
        await page.keyboard.press("Enter")
        assert await page.evaluate("document.activeElement.id") == "main", path
        await page.keyboard.press("Tab")  # the next stop is in the content, past the header
        inside = await page.evaluate("!!document.activeElement.closest('main')")
        assert inside, path


async def test_enter_in_a_field_does_the_forms_main_action_not_the_preview(
    page: Any, site: Site
) -> None:
    world = site.world
    service = site.crier.bot.announcements
    # A template to pick: its button comes before the form's own ones.
    await service.save_template(Template(world.guild.id, "other", "Other text"))
    await page.goto(f"{site.url}/g/{world.guild.id}/new")
    await page.locator("textarea[name=message]").fill("Entered")
    await page.get_by_label("Channel").select_option(str(world.news.id))
    await page.get_by_label("When", exact=True).fill("in 10m")
    await page.get_by_label("When", exact=True).press("Enter")
    flash = await page.locator(".flash").inner_text()
    assert "Scheduled announcement #1 in #news" in flash, flash
    assert (await service.get(world.guild.id, 1)).content == "Entered"

    # On the edit form: Enter saves the changes.
    await page.goto(f"{site.url}/g/{world.guild.id}/a/1/edit")
    await page.get_by_label("Title").fill("Now with a title")
    await page.get_by_label("Title").press("Enter")
    flash = await page.locator(".flash").inner_text()
    assert "Edited announcement #1" in flash, flash
    assert (await service.get(world.guild.id, 1)).rich.title == "Now with a title"


async def test_enter_in_the_template_name_saves_the_template_and_schedules_nothing(
    page: Any, site: Site
) -> None:
    world = site.world
    service = site.crier.bot.announcements
    before = await db_snapshot(site.crier)
    await page.goto(f"{site.url}/g/{world.guild.id}/new")
    await page.locator("textarea[name=message]").fill("Weekly sync {date}")
    await page.get_by_label("When", exact=True).fill("in 10m")
    await page.get_by_label("Template name").fill("weekly")
    await page.get_by_label("Template name").press("Enter")
    saved = await page.locator(".flash").inner_text()
    assert "Template weekly saved from the form" in saved, saved
    assert (await service.template(world.guild.id, "weekly")).content == "Weekly sync {date}"
    after = await db_snapshot(site.crier)
    assert after["bot_announcements"] == before["bot_announcements"]  # nothing scheduled
    assert after["scheduler_jobs"] == before["scheduler_jobs"]
    # Saved, the name is cleared: Enter in a field now schedules, as the form shows.
    assert await page.get_by_label("Template name").input_value() == ""
    await page.get_by_label("When", exact=True).press("Enter")
    assert "Scheduled announcement" in await page.locator(".flash").inner_text()


async def test_cancel_asks_first_and_the_first_click_changes_nothing(page: Any, site: Site) -> None:
    world = site.world
    a, _ = await site.crier.bot.announcements.create(
        news_draft(site, "Keep or cancel", NOW + timedelta(hours=1))
    )
    await page.goto(f"{site.url}/g/{world.guild.id}/a/{a.local_id}")
    before = await db_snapshot(site.crier)
    await page.get_by_role("button", name="Cancel announcement").click()
    assert await page.locator("h1").inner_text() == f"Cancel announcement #{a.local_id}?"
    assert await db_snapshot(site.crier) == before  # asked, nothing changed
    await page.get_by_role("link", name="No, keep it").click()
    assert await page.locator("h1").inner_text() == f"Announcement #{a.local_id} scheduled"
    assert await db_snapshot(site.crier) == before

    await page.get_by_role("button", name="Cancel announcement").click()
    await page.get_by_role("button", name=f"Cancel announcement #{a.local_id}").click()
    assert "Canceled announcement" in await page.locator(".flash").inner_text()
    got = await site.crier.bot.announcements.get(world.guild.id, a.local_id)
    assert got.state == AnnouncementState.CANCELED


async def test_deleting_a_template_asks_first(page: Any, site: Site) -> None:
    world = site.world
    service = site.crier.bot.announcements
    await service.save_template(Template(world.guild.id, "raid", "Raid night"))
    await page.goto(f"{site.url}/g/{world.guild.id}/templates")
    before = await db_snapshot(site.crier)
    await page.get_by_role("button", name="Delete raid").click()
    assert await page.locator("h1").inner_text() == "Delete the template raid?"
    assert await db_snapshot(site.crier) == before
    await page.get_by_role("button", name="Delete the template raid").click()
    assert "Deleted the template raid" in await page.locator(".flash").inner_text()
    assert await service.templates(world.guild.id) == []


async def test_the_event_fields_are_folded_until_the_event_is_ticked(page: Any, site: Site) -> None:
    await page.goto(f"{site.url}/g/{site.world.guild.id}/new")
    location = page.get_by_label("Event location")
    assert await location.count() == 1  # in the page (a browser without the rule shows it)
    assert not await location.is_visible()
    await page.get_by_label("Create a Discord event for each occurrence").check()
    assert await location.is_visible()
    assert await page.get_by_label("Event length (minutes)").is_visible()
    await page.get_by_label("Create a Discord event for each occurrence").uncheck()
    assert not await location.is_visible()


async def test_a_template_picked_after_typing_keeps_what_was_typed(page: Any, site: Site) -> None:
    world = site.world
    await site.crier.bot.announcements.save_template(
        Template(world.guild.id, "sync", "Sync notes", title="Sync", channel_id=world.news.id)
    )
    await page.goto(f"{site.url}/g/{world.guild.id}/new")
    await page.locator("textarea[name=message]").fill("My own words")
    await page.get_by_label("When", exact=True).fill("tomorrow 9am")
    await page.get_by_label("Start from a template").select_option("sync")
    await page.get_by_role("button", name="Fill the form from it").click()
    note = await page.locator("#started").inner_text()
    assert "What you had typed is kept (Message)" in note, note
    assert await page.locator("textarea[name=message]").input_value() == "My own words"
    assert await page.get_by_label("When", exact=True).input_value() == "tomorrow 9am"
    assert await page.get_by_label("Title").input_value() == "Sync"  # was empty: filled
    assert await page.get_by_label("Channel").input_value() == str(world.news.id)
