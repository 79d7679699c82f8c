"""The dashboard's list over plain HTTP: a server's announcements in pages, read through the
same paged listing as ``/list`` (its order, its filters and search done by the database), so
every announcement is reachable however many there are (the list used to stop at the newest
200); and an unexpected error, on a page as in a command, answered with the id it is logged
under (one helper for both)."""

from __future__ import annotations

import html
import logging
import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest
import pytest_asyncio

from bot.web.dashboard.announcement_pages import PAGE

from .conftest import Site, news_draft
from .test_dashboard_http import authorize

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.fakediscord import Member

pytestmark = pytest.mark.asyncio(loop_scope="module")  # the loop the site fixture runs in

COUNT = 250
"""More than the 200 the list once stopped at, and five pages of 50."""


@pytest_asyncio.fixture(loop_scope="module")
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # unsafe: keep the cookies of an address like 127.0.0.1
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        yield session


async def log_in(site: Site, http: aiohttp.ClientSession, who: Member) -> None:
    site.fake.oauth_login_as(who)
    _, code, state = await authorize(site, http)
    async with http.get(
        f"{site.url}/auth/callback", params={"code": code, "state": state}, allow_redirects=False
    ) as resp:
        assert resp.status == 303, await resp.text()


async def seed(site: Site, count: int) -> None:
    """``count`` one-offs in #news, number ``n`` due ``n`` minutes from now (the listing's
    order is then their numbers); every third one's text says "every third"."""
    await site.crier.bot.announcements.create_many(
        [
            news_draft(
                site,
                f"Note {n}" + (" (every third)" if n % 3 == 0 else ""),
                site.clock.now() + timedelta(minutes=n),
            )
            for n in range(1, count + 1)
        ]
    )


async def list_pages(
    site: Site, http: aiohttp.ClientSession, query: str = ""
) -> tuple[list[list[int]], list[str]]:
    """Every page of the list from the first, following its "Older" link: the numbers on
    each page, and each page's pager line."""
    guild_id = site.world.guild.id
    url: str | None = f"{site.url}/g/{guild_id}{query}"
    pages: list[list[int]] = []
    pagers: list[str] = []
    while url is not None:
        async with http.get(url) as resp:
            assert resp.status == 200, url
            text = await resp.text()
        pages.append([int(n) for n in re.findall(rf'href="/g/{guild_id}/a/(\d+)"', text)])
        pager = re.search(r'<nav class="pager".*?</nav>', text, re.S)
        pagers.append(re.sub(r"<[^>]+>|\s+", " ", pager[0]).strip() if pager else "")
        older = re.search(r'<a href="([^"]+)" rel="next">', text)
        url = f"{site.url}/g/{guild_id}{html.unescape(older[1])}" if older else None
        assert len(pages) <= COUNT // PAGE + 2, "the pages never end"
    return pages, pagers


async def test_the_list_pages_through_every_announcement_past_200(
    site: Site, http: aiohttp.ClientSession
) -> None:
    await seed(site, COUNT)
    await log_in(site, http, site.world.admin)
    pages, pagers = await list_pages(site, http)
    assert [len(p) for p in pages] == [PAGE] * (COUNT // PAGE)
    assert [n for p in pages for n in p] == list(range(1, COUNT + 1))  # each once, in order
    assert "Page 1 of 5 · 250 announcements" in pagers[0]
    assert "Page 5 of 5" in pagers[-1]

    # The search is the database's too: every match, on pages of their own.
    pages, pagers = await list_pages(site, http, "?q=EVERY+THIRD")
    assert [n for p in pages for n in p] == list(range(3, COUNT + 1, 3))
    assert [len(p) for p in pages] == [50, 33]
    assert "Page 1 of 2 · 83 announcements" in pagers[0]

    # A page past the end is the last one.
    async with http.get(f"{site.url}/g/{site.world.guild.id}?page=99") as resp:
        text = await resp.text()
    assert "Page 5 of 5" in text
    assert re.findall(r'href="/g/\d+/a/(\d+)"', text)[0] == str(COUNT - PAGE + 1)


async def test_an_unexpected_error_is_answered_with_the_id_it_is_logged_under(
    site: Site,
    http: aiohttp.ClientSession,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """On a dashboard page and in a command alike: the answer names an error id, the log
    line with the traceback names the same one and where it happened; no traceback is
    shown."""
    await seed(site, 1)
    await log_in(site, http, site.world.admin)

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the details a member must not see")

    monkeypatch.setattr(site.crier.bot.announcements, "info", broken)
    caplog.set_level(logging.ERROR)
    answers = []
    async with http.get(f"{site.url}/g/{site.world.guild.id}/a/1") as resp:
        assert resp.status == 500
        answers.append(await resp.text())
    world = site.world
    handle = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "info", {"id": 1}
    )
    answers.append((await handle.response(timeout=5)).content or "")
    wheres = [f"dashboard GET /g/{world.guild.id}/a/1", "command info"]
    for answer, where in zip(answers, wheres, strict=True):
        assert "Something went wrong on my side" in answer
        assert "the details a member must not see" not in answer
        [error_id] = re.findall(r"error id <?\w*>?`?([0-9a-f]{8})", answer)
        [record] = [r for r in caplog.records if error_id in r.getMessage()]
        assert record.getMessage() == f"{where} failed (error id {error_id})"
        assert record.exc_info is not None
        assert "must not see" in str(record.exc_info[1])
