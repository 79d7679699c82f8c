"""The dashboard's edit form over plain HTTP: it changes what it says it changes and nothing
else: the files an announcement posts are kept (the form has no file field), as /edit keeps
them when no new ``image`` is given."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

from bot.models import HistoryAction, Image

from .conftest import Site, news_draft
from .test_dashboard_list import http, log_in  # noqa: F401  (http is a fixture used here)

if TYPE_CHECKING:
    import aiohttp

pytestmark = pytest.mark.asyncio(loop_scope="module")  # the loop the site fixture runs in

PNG = Image("poster.png", "image/png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 32)


async def test_an_edit_on_the_dashboard_keeps_the_files(
    site: Site,
    http: aiohttp.ClientSession,  # noqa: F811
) -> None:
    world = site.world
    announcements = site.crier.bot.announcements
    a, _ = await announcements.create(
        news_draft(site, "Doors open at 8.", site.clock.now() + timedelta(hours=1), images=(PNG,))
    )
    await log_in(site, http, world.admin)
    edit_url = f"{site.url}/g/{world.guild.id}/a/{a.local_id}/edit"
    async with http.get(edit_url) as resp:
        form = await resp.text()
    csrf = re.search(r'name="csrf" value="([^"]+)"', form)
    assert csrf is not None
    fields = {
        "csrf": csrf[1],
        "message": "Doors open at 9.",
        "channel": str(world.news.id),
        "update_posted": "on",
        "action": "save",
        **{k: "" for k in ("title", "when", "repeat", "timezone", "mention", "until")},
    }
    async with http.post(edit_url, data=fields, allow_redirects=False) as resp:
        assert resp.status == 303, await resp.text()

    assert await announcements.image_names(a.id) == [("poster.png", len(PNG.data))]
    details = await announcements.info(world.guild.id, a.local_id)
    assert details.files == ("poster.png",)
    [edited] = [h for h in details.history if h.action == HistoryAction.EDITED]
    assert edited.detail == "message", edited  # the text changed; the file did not
