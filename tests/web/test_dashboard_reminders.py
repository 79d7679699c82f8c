"""Reminders on the dashboard (issue 35, item 1), over plain HTTP against the real bot: the
new form's "Reminders by DM" field turns them on, the edit form shows the lead and changes
or clears it (as ``/edit reminder:`` does), a template saved from the form keeps it and
fills it in again, and the announcement's page says it (with /info's words)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import aiohttp
import pytest
import pytest_asyncio

from .conftest import Site, serve_dashboard
from .test_dashboard_field_errors import post_form
from .test_dashboard_list import log_in

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    async with serve_dashboard(tmp_path_factory.mktemp("reminders")) as s:
        yield s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http(site: Site) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        await log_in(site, session, site.world.admin)
        yield session


async def page(site: Site, http: aiohttp.ClientSession, path: str) -> str:
    async with http.get(site.url + path) as resp:
        assert resp.status == 200, path
        return await resp.text()


def field_value(html: str, name: str) -> str:
    found = re.search(rf'<input name="{name}"[^>]*value="([^"]*)"', html)
    assert found is not None, name
    return found[1]


async def test_the_forms_turn_reminders_on_change_and_clear_them(
    site: Site, http: aiohttp.ClientSession
) -> None:
    world, service = site.world, site.crier.bot.announcements
    status, _ = await post_form(
        site, http, f"/g/{world.guild.id}/new",
        {"message": "Raid", "when": "in 2h", "channel": str(world.news.id), "reminder": "20m"},
    )  # fmt: skip
    assert status == 200  # (followed to the announcement's page)
    [a] = (await service.listing(world.guild.id, 0, 10)).items
    assert await service.reminder_lead(a.id) == 1200.0
    shown = await page(site, http, f"/g/{world.guild.id}/a/{a.local_id}")
    assert "Reminders:" in shown
    assert "20 minutes before each post, by DM" in shown

    edit = f"/g/{world.guild.id}/a/{a.local_id}/edit"
    assert field_value(await page(site, http, edit), "reminder") == "20m"
    base = {"message": "Raid", "channel": str(world.news.id), "update_posted": "on"}
    await post_form(site, http, edit, base | {"reminder": "1h30m"})
    assert await service.reminder_lead(a.id) == 5400.0
    assert field_value(await page(site, http, edit), "reminder") == "1h30m"
    await post_form(site, http, edit, base | {"reminder": ""})
    assert await service.reminder_lead(a.id) is None


async def test_a_template_saved_from_the_form_keeps_the_lead_and_fills_it_in(
    site: Site, http: aiohttp.ClientSession
) -> None:
    world, service = site.world, site.crier.bot.announcements
    status, _ = await post_form(
        site, http, f"/g/{world.guild.id}/new",
        {"message": "Weekly", "channel": str(world.news.id), "reminder": "45m",
         "action": "save_template", "template_name": "weekly"},
    )  # fmt: skip
    assert status == 200
    assert (await service.template(world.guild.id, "weekly")).reminder == 2700.0
    filled = await page(site, http, f"/g/{world.guild.id}/new?template=weekly")
    assert field_value(filled, "reminder") == "45m"
