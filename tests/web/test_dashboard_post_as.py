"""Posting as the community on the dashboard (issue 36, item 3), over plain HTTP against the
real bot: the forms' "Post as" field is refused at the field (what was typed kept) where the
bot can't manage the channel's webhooks, sets the name where it can, the edit form shows it
and an emptied field posts as the bot again (as ``/edit as_name: none``), and a template
saved from the form keeps it and fills it in again."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import aiohttp
import pytest
import pytest_asyncio

from bot.models import Image
from tests.fakediscord import Permissions as P

from .conftest import Site, serve_dashboard
from .test_dashboard_field_errors import Page, only_invalid_field, post_form
from .test_dashboard_list import log_in
from .test_dashboard_reminders import field_value, page
from .test_dashboard_style import PNG

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    async with serve_dashboard(tmp_path_factory.mktemp("post_as")) as s:
        s.world.guild.role_named("admins").edit(permissions=P.MANAGE_GUILD | P.MANAGE_WEBHOOKS)
        yield s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http(site: Site) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        await log_in(site, session, site.world.admin)
        yield session


async def test_the_forms_set_refuse_and_clear_the_name_posts_come_from(
    site: Site, http: aiohttp.ClientSession
) -> None:
    world, service = site.world, site.crier.bot.announcements
    new = f"/g/{world.guild.id}/new"
    fields = {"message": "Raid", "when": "in 2h", "channel": str(world.news.id),
              "as_name": "Town hall"}  # fmt: skip
    status, refused = await post_form(site, http, new, fields)  # no Manage Webhooks yet
    assert status == 400, refused.title
    assert only_invalid_field(refused) == "as_name"
    assert "I need Manage Webhooks in #news" in refused.texts["f-as_name-error"]
    assert refused.by_id["f-as_name"]["value"] == "Town hall"  # what was typed, kept
    assert (await service.listing(world.guild.id, 0, 10)).items == []

    world.guild.set_bot_permissions(
        P.VIEW_CHANNEL | P.SEND_MESSAGES | P.READ_MESSAGE_HISTORY | P.MANAGE_WEBHOOKS
    )
    await world.fake.wait_until(
        lambda: site.crier.bot.get_guild(world.guild.id).me.guild_permissions.manage_webhooks,
        what="the bot's new permissions in the cache",
    )
    status, _ = await post_form(site, http, new, fields)
    assert status == 200  # (followed to the announcement's page)
    [a] = (await service.listing(world.guild.id, 0, 10)).items
    assert await service.post_as_names([a.id]) == {a.id: "Town hall"}

    edit = f"/g/{world.guild.id}/a/{a.local_id}/edit"
    assert field_value(await page(site, http, edit), "as_name") == "Town hall"
    base = {"message": "Raid", "channel": str(world.news.id), "update_posted": "on"}
    await post_form(site, http, edit, base | {"as_name": "The Club"})
    assert await service.post_as_names([a.id]) == {a.id: "The Club"}
    await post_form(site, http, edit, base | {"as_name": ""})
    assert await service.post_as(a.id) is None

    status, _ = await post_form(
        site, http, new,
        {**fields, "action": "save_template", "template_name": "hall"},
    )  # fmt: skip
    assert status == 200
    kept = (await service.template(world.guild.id, "hall")).post_as
    assert kept is not None
    assert kept.name == "Town hall"
    filled = await page(site, http, f"/g/{world.guild.id}/new?template=hall")
    assert field_value(filled, "as_name") == "Town hall"


async def post_with_files(
    site: Site,
    http: aiohttp.ClientSession,
    path: str,
    fields: dict[str, str],
    files: dict[str, tuple[str, str, bytes]],
) -> tuple[int, Page]:
    """The form at ``path`` posted as multipart with ``fields`` and ``files`` (field:
    filename, type, bytes); the status and the page answered."""
    async with http.get(site.url + path) as resp:
        csrf = re.search(r'name="csrf" value="([^"]+)"', await resp.text())
    assert csrf is not None
    form = aiohttp.FormData()
    for name, value in {"csrf": csrf[1], "action": "save", **fields}.items():
        form.add_field(name, value)
    for name, (filename, kind, data) in files.items():
        form.add_field(name, data, filename=filename, content_type=kind)
    async with http.post(site.url + path, data=form) as resp:
        return resp.status, Page(await resp.text())


async def test_the_forms_upload_the_avatar_posts_come_with(
    site: Site, http: aiohttp.ClientSession
) -> None:
    """The "Avatar to post with" field (as ``/edit as_avatar:``): uploaded with a name on the
    new form (beside the announcement's own file) and on the edit form (the name kept), kept
    by a template saved from the form; refused at the field when it is not an image Discord
    takes, or comes without a name to post as."""
    world, service = site.world, site.crier.bot.announcements
    world.guild.set_bot_permissions(
        P.VIEW_CHANNEL | P.SEND_MESSAGES | P.READ_MESSAGE_HISTORY | P.MANAGE_WEBHOOKS
    )
    await world.fake.wait_until(
        lambda: site.crier.bot.get_guild(world.guild.id).me.guild_permissions.manage_webhooks,
        what="the bot's new permissions in the cache",
    )
    new = f"/g/{world.guild.id}/new"
    fields = {"message": "Market day", "when": "in 3h", "channel": str(world.news.id)}
    hall = ("hall.png", "image/png", PNG)

    status, refused = await post_with_files(site, http, new, fields, {"as_avatar": hall})
    assert status == 400, refused.title
    assert only_invalid_field(refused) == "as_avatar"
    assert "An avatar goes with a name" in refused.texts["f-as_avatar-error"]
    text_file = ("notes.txt", "text/plain", b"not an image")
    status, refused = await post_with_files(
        site, http, new, fields | {"as_name": "Market"}, {"as_avatar": text_file}
    )
    assert status == 400, refused.title
    assert only_invalid_field(refused) == "as_avatar"
    assert "is not an image Discord takes as an avatar" in refused.texts["f-as_avatar-error"]
    assert refused.by_id["f-as_name"]["value"] == "Market"  # what was typed, kept
    before = {a.id for a in (await service.listing(world.guild.id, 0, 50)).items}

    status, _ = await post_with_files(
        site, http, new, fields | {"as_name": "Market"},
        {"image": ("map.png", "image/png", PNG + b"map"), "as_avatar": hall},
    )  # fmt: skip
    assert status == 200
    [a] = [x for x in (await service.listing(world.guild.id, 0, 50)).items if x.id not in before]
    post_as = await service.post_as(a.id)
    assert post_as is not None
    assert post_as.name == "Market"
    assert post_as.avatar == Image("hall.png", "image/png", PNG)
    assert [i.filename for i in await service.images(a.id)] == ["map.png"]

    edit = f"/g/{world.guild.id}/a/{a.local_id}/edit"
    base = {"message": "Market day", "channel": str(world.news.id), "as_name": "Market"}
    square = ("square.webp", "image/webp", b"RIFF----WEBPVP8 ")
    status, _ = await post_with_files(site, http, edit, base, {"as_avatar": square})
    assert status == 200
    post_as = await service.post_as(a.id)
    assert post_as is not None
    assert (post_as.name, post_as.avatar) == ("Market", Image(*square))

    status, _ = await post_with_files(
        site, http, new, fields | {"as_name": "Market", "action": "save_template",
                                   "template_name": "market"},
        {"as_avatar": hall},
    )  # fmt: skip
    assert status == 200
    kept = (await service.template(world.guild.id, "market")).post_as
    assert kept is not None
    assert kept.avatar == Image("hall.png", "image/png", PNG)
