"""The announcement form's "Save as template", in a real browser (Chromium), against the real
bot and the fake Discord: what the new form holds (text, title, mention, silence, channel)
is kept as a template of the server and nothing is scheduled, the form coming back as it was
with what was saved; the template then fills the form again; a text too long is refused as
/schedule refuses it; the edit form saves the
announcement as edited on the form (its file too) and edits nothing; a name already taken
and a server at its limit of templates are answered with /template save's words, writing
nothing, as is a post without the page's CSRF token; a member without the rights can't save
one; in German, the button and the answers are German."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio
from playwright.async_api import expect

from bot.models import GuildLimits
from tests.bot.conftest import db_snapshot
from tests.fakediscord import Permissions as P

from .conftest import browser_page, news_draft, role_the_bot_sees
from .test_dashboard_browser import csrf_token, log_in
from .test_dashboard_form_templates import PNG
from .test_dashboard_language import german_viewer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from .conftest import Site

pytestmark = pytest.mark.asyncio(loop_scope="module")

BASE = P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.EMBED_LINKS


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Any, site: Site) -> AsyncIterator[Any]:
    site.world.guild.set_bot_permissions(BASE)
    async with browser_page(browser) as found:
        yield found


async def announcement_rows(site: Site) -> int:
    async with site.crier.sched.reader() as db:
        cur = await db.execute("SELECT count(*) FROM bot_announcements")
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def save_as(page: Any, name: str) -> None:
    await page.get_by_label("Template name").fill(name)
    await page.get_by_role("button", name="Save as template").click()


async def test_the_new_form_saves_a_template_and_schedules_nothing(page: Any, site: Site) -> None:
    world = site.world
    announcements = site.crier.bot.announcements
    raiders = await role_the_bot_sees(site, "raiders")
    await log_in(page, site, world.admin)
    await page.goto(f"{site.url}/g/{world.guild.id}/new")
    form = page.locator("form.announcement")
    await form.locator("textarea[name=message]").fill("Weekly meeting {date}")
    await page.get_by_label("Title").fill("Weekly")
    await page.get_by_label("Channel").select_option(str(world.news.id))
    await page.get_by_label("Mention").select_option(str(raiders.id))
    await page.get_by_label("Post silently").check()
    await page.get_by_label("When").fill("in 1h")  # ready to schedule: it still isn't
    await save_as(page, "weekly")

    saved = page.locator(".flash")
    await expect(saved).to_contain_text("Template weekly saved from the form")
    await expect(saved).to_contain_text("nothing was scheduled")
    # The form as it was.
    await expect(form.locator("textarea[name=message]")).to_have_value("Weekly meeting {date}")
    await expect(page.get_by_label("Title")).to_have_value("Weekly")
    await expect(page.get_by_label("Mention")).to_have_value(str(raiders.id))
    await expect(page.get_by_label("Post silently")).to_be_checked()
    await expect(page.get_by_label("When")).to_have_value("in 1h")
    assert await announcement_rows(site) == 0

    kept = await announcements.template(world.guild.id, "weekly")
    assert (kept.content, kept.title, kept.silent) == ("Weekly meeting {date}", "Weekly", True)
    assert (kept.mention, kept.channel_id) == (f"role:{raiders.id}", world.news.id)
    assert kept.author_id == world.admin.id
    await page.goto(f"{site.url}/g/{world.guild.id}/templates")
    row = page.get_by_role("row").filter(has_text="weekly")
    await expect(row).to_contain_text("#news")
    await expect(row).to_contain_text("Weekly")
    await expect(row).to_contain_text("Weekly meeting {date}")

    # It fills the form back.
    await page.goto(f"{site.url}/g/{world.guild.id}/new?template=weekly")
    await expect(form.locator("textarea[name=message]")).to_have_value("Weekly meeting {date}")
    await expect(page.get_by_label("Title")).to_have_value("Weekly")
    await expect(page.get_by_label("Channel")).to_have_value(str(world.news.id))
    await expect(page.get_by_label("Mention")).to_have_value(str(raiders.id))
    await expect(page.get_by_label("Post silently")).to_be_checked()

    # A name taken (whatever its case): refused, nothing written, the form as it was.
    before = await db_snapshot(site.crier)
    await form.locator("textarea[name=message]").fill("Something else")
    await save_as(page, "Weekly")
    answer = page.locator(".answer")
    await expect(answer).to_contain_text("already has a template named Weekly")
    await expect(form.locator("textarea[name=message]")).to_have_value("Something else")
    await expect(page.get_by_label("Template name")).to_have_value("Weekly")
    assert await db_snapshot(site.crier) == before
    assert (await announcements.template(world.guild.id, "weekly")).content == (
        "Weekly meeting {date}"
    )

    # A text too long for Discord (placeholders at their longest, as /schedule counts it).
    await page.get_by_label("Title").fill("")
    await form.locator("textarea[name=message]").fill("{date} " * 280)
    await save_as(page, "long")
    await expect(answer).to_contain_text("Discord allows 2000")
    await expect(answer).to_contain_text("Placeholders are counted at their longest")
    assert await db_snapshot(site.crier) == before


async def test_at_the_servers_limit_or_without_csrf_nothing_is_saved(page: Any, site: Site) -> None:
    world = site.world
    announcements = site.crier.bot.announcements
    await announcements.set_guild_limits(GuildLimits(world.guild.id, max_templates=1))
    await log_in(page, site, world.admin)
    await page.goto(f"{site.url}/g/{world.guild.id}/new")
    form = page.locator("form.announcement")
    await form.locator("textarea[name=message]").fill("First")
    await save_as(page, "first")
    await expect(page.locator(".flash")).to_contain_text("Template first saved")

    before = await db_snapshot(site.crier)
    await form.locator("textarea[name=message]").fill("Second")
    await save_as(page, "second")
    answer = page.locator(".answer")
    await expect(answer).to_contain_text(
        "This server already has 1 templates, its limit is 1 (MAX_TEMPLATES_PER_GUILD)"
    )
    await expect(form.locator("textarea[name=message]")).to_have_value("Second")
    assert await db_snapshot(site.crier) == before
    assert [x.name for x in await announcements.templates(world.guild.id)] == ["first"]

    # Like every form post, it needs the page's CSRF token.
    await announcements.set_guild_limits(GuildLimits(world.guild.id, max_templates=5))
    before = await db_snapshot(site.crier)
    for token in ({}, {"csrf": "not-the-token"}):
        refused = await page.request.post(
            f"{site.url}/g/{world.guild.id}/new",
            form=token | {"message": "Third", "template_name": "third", "action": "save_template"},
        )
        assert refused.status == 403
        assert "nothing was changed" in await refused.text()
    assert await db_snapshot(site.crier) == before


async def test_the_edit_form_saves_what_it_holds_and_edits_nothing(page: Any, site: Site) -> None:
    world = site.world
    announcements = site.crier.bot.announcements
    a, _ = await announcements.create(
        news_draft(site, "Movie night", site.clock.now() + timedelta(hours=1), images=(PNG,))
    )
    await log_in(page, site, world.admin)
    await page.goto(f"{site.url}/g/{world.guild.id}/a/{a.local_id}/edit")
    form = page.locator("form.announcement")
    await form.locator("textarea[name=message]").fill("Movie night, popcorn included")
    await page.get_by_label("Mention").select_option("everyone")
    before = await db_snapshot(site.crier)
    await save_as(page, "movies")
    await expect(page.locator(".flash")).to_contain_text("Template movies saved")
    await expect(form.locator("textarea[name=message]")).to_have_value(
        "Movie night, popcorn included"
    )
    after = await db_snapshot(site.crier)
    changed = {k for k in after if after[k] != before[k]}
    assert changed == {"bot_templates"}, changed  # the announcement is as it was
    assert (await announcements.get(world.guild.id, a.local_id)).content == "Movie night"
    kept = await announcements.template(world.guild.id, "movies")
    assert (kept.content, kept.mention) == ("Movie night, popcorn included", "everyone")
    assert kept.image is not None
    assert kept.image.filename == "poster.png"


async def test_a_member_without_rights_cannot_save_a_template(page: Any, site: Site) -> None:
    world = site.world
    await log_in(page, site, world.member)
    response = await page.goto(f"{site.url}/g/{world.guild.id}/new")
    assert response.status == 404
    csrf = await csrf_token(page, site)
    before = await db_snapshot(site.crier)
    forged = await page.request.post(
        f"{site.url}/g/{world.guild.id}/new",
        form={
            "csrf": csrf, "message": "spam", "channel": str(world.news.id),
            "template_name": "spam", "action": "save_template",
        },
    )  # fmt: skip
    assert forged.status == 403
    assert "Manage Server" in await forged.text()
    assert await db_snapshot(site.crier) == before
    assert await site.crier.bot.announcements.templates(world.guild.id) == []


async def test_in_german_the_button_and_the_answers_are_german(browser: Any, site: Site) -> None:
    world = site.world
    context, page = await german_viewer(browser, site, world.admin.user)
    try:
        await page.goto(f"{site.url}/g/{world.guild.id}/new")
        await page.locator("textarea[name=message]").fill("Hallo zusammen")
        await page.get_by_label("Name der Vorlage").fill("hallo")
        await page.get_by_role("button", name="Als Vorlage speichern").click()
        await expect(page.locator(".flash")).to_contain_text(
            "Vorlage hallo aus dem Formular gespeichert; nichts wurde geplant."
        )
        # Saved, the name is cleared (Enter does the main action again); typed again: taken.
        await expect(page.get_by_label("Name der Vorlage")).to_have_value("")
        await page.get_by_label("Name der Vorlage").fill("hallo")
        await page.get_by_role("button", name="Als Vorlage speichern").click()
        await expect(page.locator(".answer")).to_contain_text("hallo")
        await expect(page.locator(".answer")).not_to_contain_text("already has")
    finally:
        await context.close()
    assert (await site.crier.bot.announcements.template(world.guild.id, "hallo")).content == (
        "Hallo zusammen"
    )
