"""The dashboard by keyboard, and its refusals as a screen reader meets them (issue 37), in
Chromium against the real bot and the fake Discord: a refused form puts the focus on the
field at fault, marked and described, under a title that starts with "Error:", and shows
the examples it gives as they are typed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from tests.bot.conftest import db_snapshot

from .conftest import Site, browser_page
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
