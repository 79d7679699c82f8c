"""The calendar feed on the dashboard (issue 35, item 5), over plain HTTP against the real
bot: a live announcement's page links its own feed once the server has a calendar address
(``/calendar`` makes it; until then the page says so), the link opens that announcement's
events alone, and a viewer who can't see the channel of some live announcement gets no link
(the address opens the whole server's calendar). The page's accessibility is checked with
the others in ``test_dashboard_axe``."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import aiohttp
import icalendar
import pytest
import pytest_asyncio

from bot.parsing import parse_repeat
from tests.fakediscord import Permissions as P

from .conftest import NOW, Site, news_draft, serve_dashboard
from .test_dashboard_list import log_in

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")

LINK = re.compile(r'<a href="([^"]+\.ics)" type="text/calendar" aria-describedby="calendar-hint">')


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    async with serve_dashboard(tmp_path_factory.mktemp("calendar")) as s:
        yield s


async def page(site: Site, http: aiohttp.ClientSession, path: str) -> str:
    async with http.get(site.url + path) as resp:
        assert resp.status == 200, path
        return await resp.text()


async def test_a_live_announcements_page_links_its_own_feed(site: Site) -> None:
    world, service = site.world, site.crier.bot.announcements
    first = NOW + timedelta(hours=1)
    daily, _ = await service.create(
        news_draft(
            site, "Daily standup", first, repeat=parse_repeat("daily", first, ZoneInfo("UTC"))
        )
    )
    await service.create(news_draft(site, "Once", NOW + timedelta(hours=3)))
    path = f"/g/{world.guild.id}/a/{daily.local_id}"
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        await log_in(site, http, world.admin)
        shown = await page(site, http, path)
        assert "/calendar in Discord" in shown  # none made yet: nothing is made by a page
        assert LINK.search(shown) is None
        assert await service.calendar_token(world.guild.id) is None

        made = await service.calendar_address(world.guild.id, world.admin.id)
        found = LINK.search(await page(site, http, path))
        assert found is not None
        url = html.unescape(found[1])
        assert url == f"{site.url}/calendar/{made.token}/{daily.local_id}.ics"
        async with http.get(url) as resp:
            assert resp.status == 200
            cal = icalendar.Calendar.from_ical(await resp.read())
        summaries = {str(e["SUMMARY"]) for e in cal.walk("VEVENT")}
        assert summaries == {"Daily standup"}  # its own events alone
        assert len(list(cal.walk("VEVENT"))) == 90

    # A manager who can't see a channel of a live announcement: no link on any page.
    carol = world.guild.add_member(name="carol", roles=world.admin.roles)
    hidden = world.guild.add_channel("staff")
    hidden.set_overwrite(carol, deny=P.VIEW_CHANNEL)
    await service.create(news_draft(site, "Staff only", NOW + timedelta(hours=2),
                                    channel_id=hidden.id))  # fmt: skip
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        await log_in(site, http, carol)
        shown = await page(site, http, path)
        assert "Daily standup" in shown  # the page itself is shown
        assert made.token not in shown
        assert 'id="calendar-head"' not in shown
