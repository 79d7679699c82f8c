"""Several places on the dashboard (issue 36, item 4), against the real bot: the form's "Also
post in" group of boxes (one per channel the member can see) sets the other places of a new
announcement, the edit form shows them ticked and an edit changes or clears them (as
``/edit also_in:``), a refusal is shown at the group with the boxes kept as ticked and
nothing written, a template saved from the form keeps them and fills them in again; and the
whole in Chromium on a phone."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest
import pytest_asyncio

from tests.bot.conftest import db_snapshot

from .conftest import Site, browser_page, serve_dashboard, without_rate_limits
from .test_dashboard_browser import log_in as browser_log_in
from .test_dashboard_field_errors import Page, only_invalid_field
from .test_dashboard_list import log_in

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from bot.announcements import Announcement

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    async with serve_dashboard(tmp_path_factory.mktemp("places")) as s:
        without_rate_limits(s)
        for name in ("events", "raids"):
            s.world.guild.add_channel(name)
        yield s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http(site: Site) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        await log_in(site, session, site.world.admin)
        yield session


class Shown(Page):
    """A page, with its HTML (which boxes are ticked)."""

    def __init__(self, html: str) -> None:
        super().__init__(html)
        self.html = html


async def post(
    site: Site, http: aiohttp.ClientSession, path: str, fields: list[tuple[str, str]]
) -> tuple[int, Shown]:
    """The form at ``path`` posted with ``fields`` (a name may come once per box ticked)."""
    async with http.get(site.url + path) as resp:
        assert resp.status == 200, path
        csrf = re.search(r'name="csrf" value="([^"]+)"', await resp.text())
    assert csrf is not None
    action = [] if any(name == "action" for name, _ in fields) else [("action", "save")]
    form = [("csrf", csrf[1]), *action, *fields]
    async with http.post(site.url + path, data=form) as resp:
        return resp.status, Shown(await resp.text())


def ticked(page: Shown) -> list[str]:
    return re.findall(r'name="also_in" value="(\d+)" checked', page.html)


async def places_of(site: Site, a: Announcement) -> list[int]:
    return [p.channel_id for p in await site.crier.bot.announcements.places(a.id)]


async def test_the_forms_set_change_clear_and_refuse_the_other_places(
    site: Site, http: aiohttp.ClientSession
) -> None:
    world, service = site.world, site.crier.bot.announcements
    events, raids = (world.guild.channel_named(n) for n in ("events", "raids"))
    new = f"/g/{world.guild.id}/new"
    base = [("message", "Raid night"), ("when", "in 2h"), ("channel", str(world.news.id))]
    # The announcement's own channel ticked too: refused at the group, the boxes kept.
    before = await db_snapshot(site.crier)
    also = [("also_in", str(events.id)), ("also_in", str(world.news.id))]
    status, refused = await post(site, http, new, base + also)
    assert status == 400, refused.title
    assert only_invalid_field(refused) == "also_in"
    assert "already posts in #news" in refused.texts["f-also_in-error"]
    assert sorted(ticked(refused)) == sorted([str(events.id), str(world.news.id)])
    assert await db_snapshot(site.crier) == before

    status, _ = await post(site, http, new, [*base, ("also_in", str(events.id)),
                                             ("also_in", str(raids.id))])  # fmt: skip
    assert status == 200
    [a] = (await service.listing(world.guild.id, 0, 10)).items
    assert await places_of(site, a) == [events.id, raids.id]

    edit = f"/g/{world.guild.id}/a/{a.local_id}/edit"
    async with http.get(site.url + edit) as resp:
        assert sorted(ticked(Shown(await resp.text()))) == sorted([str(events.id), str(raids.id)])
    kept = [("message", "Raid night"), ("channel", str(world.news.id)), ("update_posted", "on")]
    await post(site, http, edit, [*kept, ("also_in", str(raids.id))])
    assert await places_of(site, a) == [raids.id]
    await post(site, http, edit, kept)  # every box unticked: its own channel only
    assert await places_of(site, a) == []

    status, _ = await post(
        site, http, new,
        [*base, ("also_in", str(raids.id)), ("action", "save_template"),
         ("template_name", "raids")],
    )  # fmt: skip
    assert status == 200
    assert (await service.template(world.guild.id, "raids")).also_in == (raids.id,)
    async with http.get(f"{site.url}{new}?template=raids") as resp:
        assert ticked(Shown(await resp.text())) == [str(raids.id)]


async def test_the_other_places_on_a_phone_in_chromium(site: Site, browser: Any) -> None:
    """At 390 px the boxes are one a line, nothing wider than the screen; ticked by their
    labels, the new announcement posts in those places."""
    world, service = site.world, site.crier.bot.announcements
    events = world.guild.channel_named("events")
    async with browser_page(browser) as page:
        await page.set_viewport_size({"width": 390, "height": 844})
        await browser_log_in(page, site, world.admin)
        await page.goto(f"{site.url}/g/{world.guild.id}/new")
        await page.locator("textarea[name=message]").fill("On a phone")
        await page.get_by_label("Channel", exact=True).select_option(str(world.general.id))
        await page.get_by_label("When", exact=True).fill("in 3h")
        group = page.get_by_role("group", name="Also post in")
        await group.get_by_label("#events").check()
        await group.get_by_label("#news").check()
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390
        await page.get_by_role("button", name="Schedule").click()
        await page.locator(".flash").wait_for()
    [a] = [x for x in (await service.listing(world.guild.id, 0, 20)).items
           if x.content == "On a phone"]  # fmt: skip
    assert await places_of(site, a) == [world.news.id, events.id]
