"""The previous post on the dashboard (issue 35, item 2), over plain HTTP against the real
bot: the new form's "Its posts" group (pin, replace, delete after) sets them, the edit form
shows them and changes or clears them (as ``/edit pin: replace: delete_after:`` does), a
template saved from the form keeps them and fills them in again, and the announcement's
page says them (with /info's words). Each refusal at its field: test_dashboard_field_errors."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import aiohttp
import pytest
import pytest_asyncio

from bot.models import Tidy
from tests.fakediscord import Permissions as P

from .conftest import Site, serve_dashboard
from .test_dashboard_field_errors import post_form
from .test_dashboard_list import log_in

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    async with serve_dashboard(tmp_path_factory.mktemp("previous")) as s:
        s.world.guild.set_bot_permissions(
            P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.PIN_MESSAGES
        )
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


def ticked(html: str, name: str) -> bool:
    found = re.search(rf'<input type="checkbox" name="{name}"([^>]*)>', html)
    assert found is not None, name
    return " checked" in found[1]


async def test_the_forms_set_change_and_clear_what_becomes_of_the_posts(
    site: Site, http: aiohttp.ClientSession
) -> None:
    world, service = site.world, site.crier.bot.announcements
    status, _ = await post_form(
        site, http, f"/g/{world.guild.id}/new",
        {"message": "Raid", "when": "in 2h", "repeat": "daily", "channel": str(world.news.id),
         "pin": "on", "delete_after": "24h"},
    )  # fmt: skip
    assert status == 200  # (followed to the announcement's page)
    [a] = (await service.listing(world.guild.id, 0, 10)).items
    assert await service.tidy(a.id) == Tidy(pin=True, delete_after=86400.0)
    shown = await page(site, http, f"/g/{world.guild.id}/a/{a.local_id}")
    assert "Its posts:" in shown
    assert "each deleted 1 day after it went up" in shown

    edit = f"/g/{world.guild.id}/a/{a.local_id}/edit"
    form = await page(site, http, edit)
    assert (ticked(form, "pin"), ticked(form, "replace")) == (True, False)
    assert field_value(form, "delete_after") == "1d"
    base = {"message": "Raid", "channel": str(world.news.id), "update_posted": "on"}
    await post_form(site, http, edit, base | {"pin": "on", "replace": "on", "delete_after": "1d"})
    assert await service.tidy(a.id) == Tidy(pin=True, replace=True, delete_after=86400.0)
    await post_form(site, http, edit, base)  # every box unticked, the field emptied
    assert await service.tidy(a.id) == Tidy()
    form = await page(site, http, edit)
    assert (ticked(form, "pin"), ticked(form, "replace")) == (False, False)
    assert field_value(form, "delete_after") == ""


async def test_a_template_saved_from_the_form_keeps_them_and_fills_them_in(
    site: Site, http: aiohttp.ClientSession
) -> None:
    world, service = site.world, site.crier.bot.announcements
    status, _ = await post_form(
        site, http, f"/g/{world.guild.id}/new",
        {"message": "Weekly", "channel": str(world.news.id), "replace": "on",
         "delete_after": "2d", "action": "save_template", "template_name": "tidy"},
    )  # fmt: skip
    assert status == 200
    kept = (await service.template(world.guild.id, "tidy")).tidy
    assert kept == Tidy(replace=True, delete_after=172800.0)
    filled = await page(site, http, f"/g/{world.guild.id}/new?template=tidy")
    assert (ticked(filled, "pin"), ticked(filled, "replace")) == (False, True)
    assert field_value(filled, "delete_after") == "2d"
