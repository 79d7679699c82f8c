"""The dashboard in the viewer's language (issue 24), in Chromium against the real bot and
the fake Discord: the browser's ``Accept-Language`` before login, the viewer's Discord
language (OAuth ``identify``) after it, and the language picker over both. The German list
is saved as ``docs/dashboard-de.png``."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.bot.conftest import NOW

from .conftest import Site, news_draft

pytestmark = pytest.mark.asyncio(loop_scope="module")

DOCS = Path(__file__).resolve().parents[2] / "docs"


async def context_page(browser: Any, locale: str) -> Any:
    """A new browser context whose ``Accept-Language`` is ``locale``, and a page in it."""
    context = await browser.new_context(viewport={"width": 1100, "height": 700}, locale=locale)
    context.set_default_timeout(5000)
    return context, await context.new_page()


async def test_the_dashboard_in_german_from_the_browser_then_french_from_the_picker(
    browser: Any, site: Site
) -> None:
    world = site.world
    await site.crier.bot.announcements.create(
        news_draft(site, "Standup in 5 Minuten!", NOW + timedelta(hours=2))
    )
    context, page = await context_page(browser, "de-DE")
    try:
        await page.goto(site.url + "/")
        assert await page.locator("html").get_attribute("lang") == "de"
        assert await page.locator("h1").inner_text() == "Geplante Ankündigungen"
        site.fake.oauth_login_as(world.admin)  # alice's Discord is in English (en-US)...
        await page.get_by_role("link", name="Mit Discord anmelden").click()
        await page.wait_for_url(site.url + "/")
        # ...which the login remembers: it comes before the browser's language.
        assert await page.locator("h1").inner_text() == "Your servers"
        await page.get_by_label("Language").select_option("de")
        await page.get_by_role("button", name="Change language").click()
        await page.wait_for_url(site.url + "/")
        assert await page.locator("h1").inner_text() == "Deine Server"
        assert await page.get_by_role("button", name="Abmelden").is_visible()

        await page.get_by_role("link", name=world.guild.name).click()
        assert await page.get_by_role("link", name="Neue Ankündigung").is_visible()
        headers = await page.locator("table.list th").all_inner_texts()
        assert headers == ["#", "Status", "Kanal", "Nächstes Mal", "Wiederholung", "Text"]
        row = await page.locator("table.list tbody tr").first.inner_text()
        assert "geplant" in row
        assert "einmal" in row
        options = await page.get_by_label("Anzeigen").locator("option").all_inner_texts()
        assert options == ["Alle", "Anstehend", "Wiederkehrend", "Pausiert",
                           "Fehlgeschlagen", "Gepostet"]  # fmt: skip
        DOCS.mkdir(exist_ok=True)
        await page.screenshot(path=DOCS / "dashboard-de.png", full_page=True)

        # An announcement's page and the form, in German too.
        await page.goto(f"{site.url}/g/{world.guild.id}/a/1")
        assert await page.locator("h1").inner_text() == "Ankündigung #1 geplant"
        assert await page.get_by_role("button", name="Pausieren").is_visible()
        await page.goto(f"{site.url}/g/{world.guild.id}/new")
        assert await page.locator("h1").inner_text() == "Neue Ankündigung"
        assert await page.get_by_label("Nachricht", exact=True).is_visible()
        assert await page.get_by_role("button", name="Planen").is_visible()

        # The picker: French, on the page it was picked on.
        here = page.url
        await page.get_by_label("Sprache").select_option("fr")
        await page.get_by_role("button", name="Sprache wechseln").click()
        await page.wait_for_url(here)
        assert await page.locator("h1").inner_text() == "Nouvelle annonce"
        assert await page.get_by_role("button", name="Programmer").is_visible()
        assert await page.locator("html").get_attribute("lang") == "fr"
    finally:
        await context.close()


async def test_the_viewers_discord_language_is_the_dashboards(browser: Any, site: Site) -> None:
    world = site.world
    world.member.user.locale = "pt-BR"  # bob's Discord is in Brazilian Portuguese
    context, page = await context_page(browser, "en-US")
    try:
        site.fake.oauth_login_as(world.member)
        await page.goto(site.url + "/")
        assert await page.locator("h1").inner_text() == "Scheduled announcements"
        await page.get_by_role("link", name="Log in with Discord").click()
        await page.wait_for_url(site.url + "/")
        assert await page.locator("h1").inner_text() == "Seus servidores"
        assert await page.get_by_role("button", name="Sair").is_visible()
    finally:
        await context.close()
