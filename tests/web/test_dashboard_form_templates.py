"""The announcement form with templates and placeholders, in a real browser (Chromium),
against the real bot and the fake Discord: a template saved on the templates page fills the
new-announcement form (as ``/schedule template:name`` fills its options, its file included),
what the member changes wins; an unknown template is answered and the form still works (in
German too, with a template whose channel the member can't post in, or whose role is gone,
said so); a template deleted after it filled the form is answered, and the form then saves
without it; and
an edit's preview shows the next occurrence as it will post (its real ``{occurrence}``
number and ``{event}`` link, as /info shows them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from bot.models import Content, Image, Template
from tests.bot.conftest import NOW
from tests.fakediscord import Permissions as P

from .conftest import browser_page, news_draft, role_the_bot_sees
from .test_dashboard_browser import advance, log_in
from .test_dashboard_language import german_viewer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from .conftest import Site

pytestmark = pytest.mark.asyncio(loop_scope="module")

BASE = P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.EMBED_LINKS
PNG = Image("poster.png", "image/png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 32)


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Any, site: Site) -> AsyncIterator[Any]:
    site.world.guild.set_bot_permissions(BASE | P.CREATE_EVENTS)
    async with browser_page(browser) as found:
        yield found


async def test_a_template_fills_the_new_form_and_what_is_changed_wins(
    page: Any, site: Site
) -> None:
    world = site.world
    announcements = site.crier.bot.announcements
    raiders = await role_the_bot_sees(site, "raiders")
    await announcements.create(
        news_draft(
            site, "Raid night {date}", NOW + timedelta(hours=1), mention=f"role:{raiders.id}",
            allowed_mentions={"everyone": False, "roles": [raiders.id], "users": True},
            rich=Content(title="Raid", silent=True), images=(PNG,),
        )
    )  # fmt: skip
    await log_in(page, site, world.admin)
    await page.goto(f"{site.url}/g/{world.guild.id}/templates")
    await page.get_by_label("Name").fill("raid")
    await page.get_by_label("Announcement number").fill("1")
    await page.get_by_role("button", name="Save template").click()
    assert "as the template raid" in await page.locator(".flash").inner_text()
    use = page.get_by_role("link", name="Use raid for a new announcement")
    assert await use.get_attribute("href") == f"/g/{world.guild.id}/new?template=raid"

    await page.goto(f"{site.url}/g/{world.guild.id}/new")
    await page.get_by_label("Start from a template").select_option("raid")
    await page.get_by_role("button", name="Fill the form from it").click()
    await page.locator("#started").wait_for()  # the form again, what was typed kept
    form = page.locator("form.announcement")
    assert await form.locator("textarea[name=message]").input_value() == "Raid night {date}"
    assert await page.get_by_label("Title").input_value() == "Raid"
    assert await page.get_by_label("Channel").input_value() == str(world.news.id)
    assert await page.get_by_label("Mention").input_value() == str(raiders.id)
    assert await page.get_by_label("Post silently").is_checked()
    note = await page.locator("p.note").first.inner_text()
    assert "Started from the template raid" in note, note
    assert "no longer exists" not in note, note
    assert "poster.png is uploaded with every post" in note, note

    # Changed by the member: the message and the silence; the rest is the template's.
    await form.locator("textarea[name=message]").fill("Raid tonight, bring snacks")
    await page.get_by_label("Post silently").uncheck()
    await page.get_by_label("When").fill("in 3h")
    await page.get_by_role("button", name="Preview").click()
    preview = await page.locator(".preview").inner_text()
    assert "Raid tonight, bring snacks" in preview, preview
    assert "poster.png is uploaded with every post." in preview, preview
    await page.get_by_role("button", name="Schedule").click()
    flash = await page.locator(".flash").inner_text()
    assert "Scheduled announcement #2 in #news" in flash, flash

    made = await announcements.get(world.guild.id, 2)
    assert made.content == "Raid tonight, bring snacks"
    assert (made.rich.title, made.mention, made.channel_id) == (
        "Raid",
        f"role:{raiders.id}",
        world.news.id,
    )
    assert made.rich.silent is False
    assert await announcements.image_names(made.id) == [("poster.png", len(PNG.data))]


async def test_an_unknown_template_is_answered_and_the_form_still_works(
    page: Any, site: Site
) -> None:
    world = site.world
    await log_in(page, site, world.admin)
    await page.goto(f"{site.url}/g/{world.guild.id}/new?template=nope")
    answer = await page.locator(".answer").inner_text()
    assert "This server has no template named nope" in answer, answer
    await page.locator("textarea[name=message]").fill("Still works")
    await page.get_by_label("Channel").select_option(str(world.news.id))
    await page.get_by_label("When").fill("in 1h")
    await page.get_by_role("button", name="Schedule").click()
    flash = await page.locator(".flash").inner_text()
    assert "Scheduled announcement #1 in #news" in flash, flash
    made = await site.crier.bot.announcements.get(world.guild.id, 1)
    assert (made.content, made.rich.title, made.mention) == ("Still works", None, None)

    # Deleted after it filled the form: the save is answered, then works without it.
    announcements = site.crier.bot.announcements
    await announcements.save_template(Template(world.guild.id, "brief", "Short one"))
    await page.goto(f"{site.url}/g/{world.guild.id}/new?template=brief")
    await announcements.delete_template(world.guild.id, "brief")
    await page.get_by_label("When").fill("in 2h")
    await page.get_by_role("button", name="Schedule").click()
    answer = await page.locator(".answer").inner_text()
    assert "This server has no template named brief" in answer, answer
    assert await page.locator("textarea[name=message]").input_value() == "Short one"
    await page.get_by_role("button", name="Schedule").click()
    flash = await page.locator(".flash").inner_text()
    assert "Scheduled announcement #2" in flash, flash
    assert (await announcements.get(world.guild.id, 2)).content == "Short one"


async def test_in_german_the_template_choice_and_its_answers(browser: Any, site: Site) -> None:
    world = site.world
    await site.crier.bot.announcements.save_template(
        Template(world.guild.id, "elsewhere", "Hallo zusammen", channel_id=1, mention="role:2")
    )  # a channel the member can't post in and a role that is gone (none, here)
    context, page = await german_viewer(browser, site, world.admin.user)
    try:
        await page.goto(f"{site.url}/g/{world.guild.id}/new")
        await page.get_by_label("Mit einer Vorlage beginnen").select_option("elsewhere")
        await page.get_by_role("button", name="Formular damit ausfüllen").click()
        await page.locator("#started").wait_for()
        assert await page.locator("textarea[name=message]").input_value() == "Hallo zusammen"
        note = await page.locator("p.note").first.inner_text()
        assert "Mit der Vorlage elsewhere ausgefüllt" in note, note
        assert "Ihr Kanal ist keiner, in dem du hier posten kannst" in note, note
        assert "Die Rolle, die sie erwähnt, gibt es nicht mehr" in note, note

        await page.goto(f"{site.url}/g/{world.guild.id}/new?template=nope")
        answer = await page.locator(".answer").inner_text()
        assert "Dieser Server hat keine Vorlage namens nope" in answer, answer
        assert await page.locator("textarea[name=message]").is_editable()
    finally:
        await context.close()


async def test_the_edit_preview_shows_the_next_occurrence_as_it_will_post(
    page: Any, site: Site
) -> None:
    world = site.world
    await log_in(page, site, world.admin)
    await page.goto(f"{site.url}/g/{world.guild.id}/new")
    await page.locator("textarea[name=message]").fill("Meetup #{occurrence} {event}")
    await page.get_by_label("Channel").select_option(str(world.news.id))
    await page.get_by_label("When").fill("in 1h")  # 13:00, then 15:00, 17:00…
    await page.get_by_label("Repeat").fill("every 2h")
    await page.get_by_label("Create a Discord event for each occurrence").check()
    await page.get_by_label("Event location").fill("Park")
    await page.get_by_role("button", name="Schedule").click()
    await page.wait_for_selector(".flash")
    await advance(site, timedelta(seconds=1))
    await advance(site, timedelta(hours=1))  # posted once (13:00)
    await advance(site, timedelta(hours=2))  # twice (15:00)
    await advance(site, timedelta(seconds=1))
    posts = [m.content for m in site.fake.channel_messages(world.news)]
    assert [p.split(" ")[1] for p in posts] == ["#1", "#2"], posts

    third = NOW + timedelta(hours=5)
    [event] = [
        e
        for e in site.fake.scheduled_events.of(world.guild, live_only=False)
        if datetime.fromisoformat(e.start).astimezone(UTC) == third
    ]
    link = f"https://discord.com/events/{world.guild.id}/{event.id}"
    await page.goto(f"{site.url}/g/{world.guild.id}/a/1/edit")
    await page.get_by_role("button", name="Preview").click()
    shown = await page.locator(".preview .message").inner_text()
    assert shown.strip() == f"Meetup #3 {link}", shown

    # An edited text is previewed the same way.
    await page.locator("textarea[name=message]").fill("Meetup number {occurrence}: {event}")
    await page.get_by_role("button", name="Preview").click()
    shown = await page.locator(".preview .message").inner_text()
    assert shown.strip() == f"Meetup number 3: {link}", shown
