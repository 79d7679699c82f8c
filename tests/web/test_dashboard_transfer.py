"""Templates, export and import on the dashboard, in a real browser (Chromium), against the
real bot and the fake Discord: a template saved from an announcement and deleted; the export
downloaded; the file uploaded, its dry run shown, confirmed once (all or nothing); a file
with a refused row or a second upload imports nothing."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from tests.bot.conftest import NOW, db_snapshot

from .conftest import Site, browser_page, news_draft
from .test_dashboard_browser import log_in

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Any, site: Site) -> AsyncIterator[Any]:
    async with browser_page(browser) as found:
        yield found


async def test_a_template_is_saved_from_an_announcement_and_deleted(page: Any, site: Site) -> None:
    world = site.world
    await site.crier.bot.announcements.create(
        news_draft(site, "Weekly sync {date}", NOW + timedelta(hours=1))
    )
    await log_in(page, site, world.admin)
    await page.goto(f"{site.url}/g/{world.guild.id}")
    await page.get_by_role("link", name="Templates").click()
    assert "No templates yet" in await page.content()
    await page.get_by_label("Name").fill("weekly")
    await page.get_by_label("Announcement number").fill("1")
    await page.get_by_role("button", name="Save template").click()
    flash = await page.locator(".flash").inner_text()
    assert "Saved announcement #1 as the template weekly" in flash, flash
    rows = page.locator("table.list tbody tr")
    assert await rows.count() == 1
    assert "Weekly sync {date}" in await rows.inner_text()
    [kept] = await site.crier.bot.announcements.templates(world.guild.id)
    assert (kept.name, kept.channel_id) == ("weekly", world.news.id)

    before = await db_snapshot(site.crier)
    await page.get_by_label("Name").fill("WEEKLY")
    await page.get_by_label("Announcement number").fill("1")
    await page.get_by_role("button", name="Save template").click()
    answer = await page.locator(".answer").inner_text()
    assert "already has a template named WEEKLY" in answer, answer
    assert await db_snapshot(site.crier) == before

    await page.goto(f"{site.url}/g/{world.guild.id}/templates")
    await page.get_by_role("button", name="Delete weekly").click()
    await page.get_by_role("button", name="Delete the template weekly").click()  # confirmed
    assert "Deleted the template weekly" in await page.locator(".flash").inner_text()
    assert await site.crier.bot.announcements.templates(world.guild.id) == []


async def test_export_download_then_upload_dry_run_confirm_once(
    page: Any, site: Site, tmp_path: Path
) -> None:
    world = site.world
    service = site.crier.bot.announcements
    await service.create(news_draft(site, "Exported {time}", NOW + timedelta(hours=2)))
    await log_in(page, site, world.admin)
    await page.goto(f"{site.url}/g/{world.guild.id}")
    async with page.expect_download() as found:
        await page.get_by_role("link", name="Export", exact=True).click()
    download = await found.value
    path = tmp_path / "export.json"
    await download.save_as(path)
    doc = json.loads(path.read_text())
    assert doc["version"] == 6
    assert [a["text"] for a in doc["announcements"]] == ["Exported {time}"]
    await service.cancel(world.guild.id, 1)

    await page.get_by_role("link", name="Import", exact=True).click()
    before = await db_snapshot(site.crier)
    await page.get_by_label("Export file (.json)").set_input_files(path)
    await page.get_by_role("button", name="Upload (dry run)").click()
    report = await page.locator(".report").inner_text()
    assert report.startswith("🔎 Dry run: 1 to create."), report
    assert "row 1 (#1): in #news, once" in report, report
    after = await db_snapshot(site.crier)  # only the dry run waiting for its confirmation
    waits = "bot_pending_imports"
    assert {k: v for k, v in after.items() if k != waits} == {
        k: v for k, v in before.items() if k != waits
    }
    token = await page.locator("input[name=token]").input_value()
    [(guild_id, user_id, kept_token, *_)] = after[waits]
    assert (guild_id, user_id, kept_token) == (world.guild.id, world.admin.id, token)
    csrf = await page.locator("input[name=csrf]").first.input_value()
    await page.get_by_role("button", name="Import all").click()
    flash = await page.locator(".flash").inner_text()
    assert flash.startswith("📥 Imported 1 announcement"), flash
    imported = await service.get(world.guild.id, 2)
    assert imported.content == "Exported {time}"
    assert imported.state.value == "scheduled"

    # The same confirmation posted again (a resubmitted form), and the file again.
    before = await db_snapshot(site.crier)
    again = await page.request.post(
        f"{site.url}/g/{world.guild.id}/import/confirm", form={"csrf": csrf, "token": token}
    )
    assert again.status == 403
    assert "already applied, or its dry run expired" in await again.text()
    await page.goto(f"{site.url}/g/{world.guild.id}/import")
    await page.get_by_label("Export file (.json)").set_input_files(path)
    await page.get_by_role("button", name="Upload (dry run)").click()
    report = await page.locator(".report").inner_text()
    assert report.startswith("Nothing to import: all 1 rows are already here."), report
    assert await page.get_by_role("button", name="Import all").count() == 0
    assert await db_snapshot(site.crier) == before


async def test_an_upload_with_a_refused_row_offers_nothing_to_confirm(
    page: Any, site: Site, tmp_path: Path, browser: Any
) -> None:
    world = site.world
    bad = {
        "version": 1,
        "announcements": [
            {"key": "a", "text": "fine", "first": "2030-03-01T13:00:00+00:00",
             "destination": {"name": "news"}},
            {"key": "b", "text": "lost", "first": "2030-03-01T13:00:00+00:00",
             "destination": {"name": "nowhere"}},
        ],
    }  # fmt: skip
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    await log_in(page, site, world.admin)
    before = await db_snapshot(site.crier)
    await page.goto(f"{site.url}/g/{world.guild.id}/import")
    await page.get_by_label("Export file (.json)").set_input_files(path)
    await page.get_by_role("button", name="Upload (dry run)").click()
    report = await page.locator(".report").inner_text()
    assert report.startswith("🚫 Nothing can be imported: 1 of the 2 rows"), report
    assert "row 2: this server has no channel named #nowhere" in report, report
    assert await page.get_by_role("button", name="Import all").count() == 0
    await page.get_by_role("button", name="Upload (dry run)").click()  # no file chosen
    assert "Choose the .json file" in await page.locator(".answer").inner_text()
    assert await db_snapshot(site.crier) == before

    # A member without the rights sees no server page at all.
    context = await browser.new_context()
    try:
        other = await context.new_page()
        await log_in(other, site, world.member)
        response = await other.goto(f"{site.url}/g/{world.guild.id}/export")
        assert response is not None
        assert response.status == 404
    finally:
        await context.close()
