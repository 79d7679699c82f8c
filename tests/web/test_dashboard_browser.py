"""The dashboard in a real browser (Chromium), against the real bot and the fake Discord:
login, the list, creating, editing and canceling through the forms (and what the fake
Discord then sees posted), who may see and change what, CSRF, cookie flags, the operator's
scheduler views. Screenshots of the main pages are saved under the test run's tmp dir."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from bot.models import AnnouncementState
from tests.bot.conftest import World, add_world, db_snapshot

from .conftest import Site, browser_page, news_draft

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from tests.fakediscord import Member, User

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Any, site: Site) -> AsyncIterator[Any]:
    async with browser_page(browser, 5000) as found:
        yield found


async def log_in(page: Any, site: Site, who: Member | User) -> None:
    """Log in through the dashboard's button and the fake Discord's OAuth2 pages."""
    site.fake.oauth_login_as(who)
    await page.goto(site.url + "/")
    await page.get_by_role("link", name="Log in with Discord").click()
    await page.wait_for_url(site.url + "/")
    assert await page.get_by_role("button", name="Log out").is_visible()


async def advance(site: Site, delta: timedelta) -> None:
    site.clock.advance(delta)
    await site.crier.sched.wait_idle()


async def create_through_form(page: Any, site: Site, message: str, when: str = "in 10m") -> None:
    world = site.world
    await page.goto(f"{site.url}/g/{world.guild.id}/new")
    await page.locator("textarea[name=message]").fill(message)
    await page.get_by_label("Channel").select_option(str(world.news.id))
    await page.get_by_label("When").fill(when)
    await page.get_by_role("button", name="Schedule").click()
    await page.wait_for_selector(".flash")


async def test_login_list_create_and_see_it_posted_once(
    page: Any, site: Site, screenshots: Path
) -> None:
    world = site.world
    await log_in(page, site, world.admin)
    await page.screenshot(path=screenshots / "home.png")
    await page.get_by_role("link", name=world.guild.name).click()
    assert "No announcements yet" in await page.content()

    await page.goto(f"{site.url}/g/{world.guild.id}/new")
    await page.locator("textarea[name=message]").fill("Standup in **five** minutes!")
    await page.get_by_label("Channel").select_option(str(world.news.id))
    await page.get_by_label("When").fill("in 10m")
    await page.get_by_role("button", name="Preview").click()
    preview = page.locator(".preview")
    assert "Standup in five minutes!" in await preview.inner_text()
    assert await preview.locator("strong").inner_text() == "five"
    await page.screenshot(path=screenshots / "form.png", full_page=True)
    assert site.fake.bot_messages(world.news) == []  # a preview writes nothing
    await page.get_by_role("button", name="Schedule").click()
    flash = await page.locator(".flash").inner_text()
    assert "Scheduled announcement #1 in #news" in flash, flash
    await page.screenshot(path=screenshots / "announcement.png", full_page=True)

    await page.get_by_role("link", name=f"← {world.guild.name}").click()
    row = page.locator("table.list tbody tr")
    assert await row.count() == 1
    assert "Standup in five minutes!" in await row.inner_text()  # the text, not its markup
    await page.screenshot(path=screenshots / "list.png", full_page=True)
    await page.set_viewport_size({"width": 390, "height": 844})  # a phone
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390
    await page.screenshot(path=screenshots / "list-phone.png", full_page=True)
    await page.set_viewport_size({"width": 1100, "height": 800})

    await advance(site, timedelta(minutes=10))
    await advance(site, timedelta(minutes=10))
    [posted] = site.fake.bot_messages(world.news)
    assert posted.content == "Standup in **five** minutes!"
    await page.goto(f"{site.url}/g/{world.guild.id}?show=posted")
    assert await page.locator("table.list tbody tr").count() == 1
    await page.goto(f"{site.url}/g/{world.guild.id}?show=upcoming")
    assert await page.locator("table.list tbody tr").count() == 0


async def test_bad_input_gets_the_commands_answer_and_nothing_is_written(
    page: Any, site: Site
) -> None:
    await log_in(page, site, site.world.admin)
    before = await db_snapshot(site.crier)
    await page.goto(f"{site.url}/g/{site.world.guild.id}/new")
    await page.locator("textarea[name=message]").fill("hello")
    await page.get_by_label("When").fill("someday maybe")
    await page.get_by_role("button", name="Schedule").click()
    answer = await page.locator(".answer").inner_text()
    assert "I couldn't read that as a time" in answer, answer  # /schedule's own answer
    assert await page.locator("textarea[name=message]").input_value() == "hello"  # the form is kept
    assert await db_snapshot(site.crier) == before


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
)
"""A 1x1 PNG."""


async def test_a_title_and_an_image_preview_and_post_as_they_will(page: Any, site: Site) -> None:
    world = site.world
    await log_in(page, site, world.admin)
    await page.goto(f"{site.url}/g/{world.guild.id}/new")
    await page.locator("textarea[name=message]").fill("Doors open at 8.")
    await page.get_by_label("Title").fill("Game night")
    await page.get_by_label("Channel").select_option(str(world.news.id))
    await page.get_by_label("When").fill("in 10m")
    poster = {"name": "poster.png", "mimeType": "image/png", "buffer": PNG}
    await page.get_by_label("Image or file").set_input_files(poster)
    await page.get_by_role("button", name="Preview").click()
    assert await page.locator(".preview .embed-title").inner_text() == "Game night"
    assert await page.locator(".preview img.attached").get_attribute("alt") == "poster.png"
    await page.get_by_label("Image or file").set_input_files(poster)
    await page.get_by_role("button", name="Schedule").click()
    await page.wait_for_selector(".flash")
    await advance(site, timedelta(minutes=10))
    [posted] = site.fake.bot_messages(world.news)
    assert [e["title"] for e in posted.embeds] == ["Game night"]
    assert posted.files == {"poster.png": PNG}


async def test_times_are_in_the_viewers_zone_with_utc_on_hover(page: Any, site: Site) -> None:
    world = site.world
    a, _ = await schedule_directly(site, "Zoned")  # 2030-03-01 12:10 UTC
    await log_in(page, site, world.admin)
    await page.get_by_label("Your time zone").fill("Europe/Berlin")
    await page.get_by_role("button", name="Save").click()
    assert "Your time zone is now Europe/Berlin" in await page.locator(".flash").inner_text()
    assert await site.crier.bot.announcements.member_timezone(world.admin.id) == "Europe/Berlin"
    await page.goto(f"{site.url}/g/{world.guild.id}")
    shown = page.locator("table.list tbody tr time")
    assert await shown.inner_text() == "Fri 2030-03-01 13:10 CET"
    assert await shown.get_attribute("title") == "2030-03-01 12:10:00 UTC"
    await page.goto(f"{site.url}/g/{world.guild.id}/a/{a.local_id}/edit")
    assert await page.get_by_label("Time zone").get_attribute("placeholder") == "UTC"


async def test_edit_before_it_is_due_posts_the_new_text(page: Any, site: Site) -> None:
    world = site.world
    await log_in(page, site, world.admin)
    await create_through_form(page, site, "Old text", when="in 30m")
    await page.get_by_role("link", name="Edit").click()
    assert await page.locator("textarea[name=message]").input_value() == "Old text"
    await page.locator("textarea[name=message]").fill("New text")
    await page.get_by_role("button", name="Save changes").click()
    flash = await page.locator(".flash").inner_text()
    assert "Edited announcement #1" in flash, flash
    await advance(site, timedelta(minutes=30))
    await advance(site, timedelta(minutes=1))
    assert [m.content for m in site.fake.bot_messages(world.news)] == ["New text"]


async def test_cancel_posts_nothing(page: Any, site: Site) -> None:
    world = site.world
    await log_in(page, site, world.admin)
    await create_through_form(page, site, "Never posted")
    await page.get_by_role("button", name="Cancel announcement").click()
    await page.get_by_role("button", name="Cancel announcement #1").click()  # confirmed
    flash = await page.locator(".flash").inner_text()
    assert "Canceled announcement #1 for #news" in flash, flash
    a = await site.crier.bot.announcements.get(world.guild.id, 1)
    assert a.state == AnnouncementState.CANCELED
    await advance(site, timedelta(hours=1))
    assert site.fake.bot_messages(world.news) == []


async def test_a_member_without_rights_sees_nothing_and_a_forged_post_changes_nothing(
    page: Any, site: Site
) -> None:
    world = site.world
    a, _ = await schedule_directly(site, "Managers only")
    await log_in(page, site, world.member)
    assert "There is no server" in await page.content()
    assert await page.get_by_role("link", name=world.guild.name).count() == 0
    response = await page.goto(f"{site.url}/g/{world.guild.id}")
    assert response.status == 404
    response = await page.goto(f"{site.url}/g/{world.guild.id}/a/{a.local_id}")
    assert response.status == 404

    csrf = await csrf_token(page, site)
    before = await db_snapshot(site.crier)
    forged = await page.request.post(
        f"{site.url}/g/{world.guild.id}/a/{a.local_id}/cancel", form={"csrf": csrf}
    )
    assert forged.status == 403
    assert "Manage Server" in await forged.text()
    forged = await page.request.post(
        f"{site.url}/g/{world.guild.id}/new",
        form={"csrf": csrf, "message": "spam", "channel": str(world.news.id), "when": "in 1m"},
    )
    assert forged.status == 403
    assert await db_snapshot(site.crier) == before


async def test_no_id_of_another_server_is_usable(page: Any, site: Site) -> None:
    """The admin of one server gets "not found" for another server's pages and changes,
    whether or not the bot is there, and their own server's numbers stay their own."""
    world = site.world
    other = add_world(site.fake, "Other Guild", admin="carol", member="dave")
    theirs, _ = await schedule_directly(site, "Theirs", world=other)
    await log_in(page, site, world.admin)
    for url in (f"/g/{other.guild.id}", f"/g/{other.guild.id}/a/1", f"/g/{world.guild.id}/a/1"):
        response = await page.goto(site.url + url)
        assert response.status == 404, url
    csrf = await csrf_token(page, site)
    before = await db_snapshot(site.crier)
    for url in (f"/g/{other.guild.id}/a/1/cancel", f"/g/{world.guild.id}/a/1/cancel"):
        refused = await page.request.post(site.url + url, form={"csrf": csrf})
        assert refused.status == 404, url
    assert await db_snapshot(site.crier) == before
    assert (await site.crier.bot.announcements.get(other.guild.id, 1)).id == theirs.id


async def test_rights_are_read_again_from_discord_for_every_change(page: Any, site: Site) -> None:
    """A manager whose role is taken away after the page loaded can't change anything."""
    world = site.world
    await log_in(page, site, world.admin)
    await create_through_form(page, site, "Still mine?")
    world.admin.remove_role(world.guild.role_named("admins"))
    before = await db_snapshot(site.crier)
    await page.get_by_role("button", name="Cancel announcement").click()
    answer = await page.locator(".answer").inner_text()
    assert "You need the Manage Server permission" in answer, answer
    assert await db_snapshot(site.crier) == before


async def test_skip_pause_and_resume_answer_like_the_commands(page: Any, site: Site) -> None:
    world = site.world
    await log_in(page, site, world.admin)
    await page.goto(f"{site.url}/g/{world.guild.id}/new")
    await page.locator("textarea[name=message]").fill("Daily standup")
    await page.get_by_label("Channel").select_option(str(world.news.id))
    await page.get_by_label("Repeat").fill("daily at 13:00")
    await page.get_by_role("button", name="Schedule").click()
    assert "Repeats: every day at 13:00" in await page.locator(".flash").inner_text()
    await page.get_by_role("button", name="Skip next").click()
    assert "Skipping announcement #1 at" in await page.locator(".flash").inner_text()
    await page.get_by_role("button", name="Pause").click()
    assert "Paused announcement #1 for #news" in await page.locator(".flash").inner_text()
    await page.get_by_role("button", name="Resume").click()
    assert "Resumed announcement #1 for #news" in await page.locator(".flash").inner_text()
    await page.goto(f"{site.url}/g/{world.guild.id}?show=recurring")
    assert await page.locator("table.list tbody tr").count() == 1
    await advance(site, timedelta(hours=1, minutes=1))  # 13:00 today was skipped
    assert site.fake.bot_messages(world.news) == []


async def test_a_post_without_the_csrf_token_is_refused(page: Any, site: Site) -> None:
    world = site.world
    a, _ = await schedule_directly(site, "Keep me")
    await log_in(page, site, world.admin)
    before = await db_snapshot(site.crier)
    for form in ({}, {"csrf": "not-the-token"}):
        refused = await page.request.post(
            f"{site.url}/g/{world.guild.id}/a/{a.local_id}/cancel", form=form
        )
        assert refused.status == 403
        assert "nothing was changed" in await refused.text()
    assert await db_snapshot(site.crier) == before


async def test_cookie_flags_and_security_headers(page: Any, site: Site) -> None:
    await log_in(page, site, site.world.admin)
    [cookie] = [c for c in await page.context.cookies() if c["name"] == "crier_session"]
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Lax"
    assert cookie["secure"] is False  # served over http here; https makes it Secure
    response = await page.goto(f"{site.url}/g/{site.world.guild.id}")
    headers = response.headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert "script-src" not in headers["content-security-policy"]  # default-src 'none'
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "same-origin"
    await page.get_by_role("button", name="Log out").click()
    await page.wait_for_selector("text=Log in with Discord")
    assert [c for c in await page.context.cookies() if c["name"] == "crier_session"] == []


async def test_an_operator_sees_the_scheduler_and_a_manager_does_not(
    browser: Any, page: Any, site: Site, screenshots: Path
) -> None:
    a, _ = await schedule_directly(site, "A job to look at")
    await log_in(page, site, site.world.admin)
    assert await page.get_by_role("link", name="Jobs").count() == 0
    response = await page.goto(f"{site.url}/ops/jobs")
    assert response.status == 404

    context = await browser.new_context()
    context.set_default_timeout(5000)
    operator = await context.new_page()
    try:
        await log_in(operator, site, site.fake.app_owner)
        await operator.get_by_role("link", name="Jobs").click()
        rows = operator.locator("table.list tbody tr")
        assert await rows.count() == 1
        assert "announcements:send" in await rows.inner_text()
        await operator.screenshot(path=screenshots / "ops-jobs.png", full_page=True)
        await rows.get_by_role("link").click()
        await operator.get_by_role("button", name="Cancel").click()
        await operator.get_by_role("button", name=f"Cancel job {a.job_id}").click()
        assert "canceled" in await operator.locator(".flash").inner_text()
        assert a.job_id is not None
        job = await site.crier.sched.get_job(a.job_id)
        assert job is not None
        assert job.state.value == "canceled"
        await operator.get_by_role("button", name="Retry").click()
        assert "pending again" in await operator.locator(".flash").inner_text()
        await advance(site, timedelta(minutes=10))  # it runs: one success in its history
        await operator.get_by_role("link", name="Runs").click()
        runs = operator.locator("table.list tbody tr")
        assert await runs.count() == 1
        assert "success" in await runs.inner_text()
        await operator.goto(f"{site.url}/ops/jobs/{a.job_id}")
        assert "success" in await operator.locator("table.list").inner_text()
        await operator.get_by_role("link", name="Schedules").click()
        only = operator.locator("table.list tbody tr")  # the bot's own: the retention job's
        assert await only.count() == 1
        assert "crier:retention" in await only.inner_text()
        await page.goto(f"{site.url}/g/{site.world.guild.id}/new")
        await page.locator("textarea[name=message]").fill("Hourly")
        await page.get_by_label("When").fill("in 10m")
        await page.get_by_label("Repeat").fill("hourly")
        await page.get_by_role("button", name="Schedule").click()
        await page.wait_for_selector(".flash")
        await operator.reload()
        row = operator.locator("table.list tbody tr", has_text="announcement:2")
        assert await row.count() == 1
        await row.get_by_role("button", name="Pause").click()
        assert "paused." in await operator.locator(".flash").inner_text()
        await row.get_by_role("button", name="Resume").click()
        assert "resumed." in await operator.locator(".flash").inner_text()
        await row.get_by_role("button", name="Trigger").click()
        assert "triggered: job" in await operator.locator(".flash").inner_text()
    finally:
        await context.close()


async def schedule_directly(site: Site, text: str, world: World | None = None) -> Any:
    """A one-off in #news in 10 minutes, made through the domain layer (not the page)."""
    draft = news_draft(site, text, site.clock.now() + timedelta(minutes=10), world)
    return await site.crier.bot.announcements.create(draft)


async def csrf_token(page: Any, site: Site) -> str:
    await page.goto(site.url + "/")
    token = await page.locator("input[name=csrf]").first.get_attribute("value")
    assert token
    return str(token)
