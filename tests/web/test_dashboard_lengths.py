"""Every field of every form of the dashboard holds at most what the commands' option for it
holds (issue 32: the dashboard had no limit, and a 60,000-character template name to
``/templates/delete`` froze the bot for 11.5 s). A field one character too long is refused
before anything is parsed or rendered, naming the field (at the field, on the announcement
form), repeating nothing of it, and changing nothing; a field exactly as long as it may be
is not refused for its length. A page's parameters hold at most 100 characters."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import aiohttp
import pytest

from bot.announcements import MAX_TEMPLATE_NAME
from bot.limits import MAX_EMBED_TITLE, MAX_MESSAGE, MAX_TEXT_OPTION, MAX_ZONE_NAME
from bot.web.dashboard import PAGE_FAMILIES
from tests.bot.conftest import db_snapshot

from .conftest import news_draft, serve_dashboard, without_rate_limits
from .test_dashboard_guards import log_in
from .test_dashboard_http import database_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from bot.web.dashboard.core import Fields

TOO_LONG = "is too long: it may hold at most"
PARAMETER = re.compile(r"\{(\w+)(?::([^}]*))?\}")


def forms() -> dict[str, Fields]:
    """Every change's path and the form it declares."""
    return {
        r.path: r.form
        for family in PAGE_FAMILIES
        for _, r in family.marked
        if r.method == "POST" and r.form is not None
    }


def test_the_forms_hold_what_the_commands_options_hold() -> None:
    """The lengths are the commands' own (``bot.limits``, /template save's name), not copies."""
    new = forms()["/g/{guild_id}/new"].text
    assert new["message"] == MAX_MESSAGE
    assert new["title"] == MAX_EMBED_TITLE
    assert new["timezone"] == MAX_ZONE_NAME
    assert new["template_name"] == MAX_TEMPLATE_NAME
    for name in ("when", "repeat", "until", "mention", "event_location", "template"):
        assert new[name] == MAX_TEXT_OPTION, name
    assert forms()["/timezone"].text == {"zone": MAX_ZONE_NAME}


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as session:
        yield session


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_every_field_one_character_too_long_is_refused_naming_it(
    kind: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """Every declared field of every change, as the server's manager: one character past
    its length is refused (400) with its label's words, none of its text repeated, nothing
    written; at its length, not refused for its length."""
    async with (
        database_url(kind, tmp_path) as url,
        serve_dashboard(tmp_path, database_url=url) as site,
    ):
        without_rate_limits(site)
        announcement, _ = await site.crier.bot.announcements.create(
            news_draft(site, "Hello", site.clock.now().replace(year=2031))
        )
        values = {
            "guild_id": str(site.world.guild.id),
            "local_id": str(announcement.local_id),
            "job_id": str(announcement.job_id),
        }
        login = await log_in(site, http, site.world.admin)
        checked = 0
        for path, form in forms().items():
            url = site.url + PARAMETER.sub(
                lambda m: values.get(m[1]) or (m[2] or "").split("|")[0], path
            )
            # Nothing is written between one refusal and the next: the database as it was
            # before the form's first field is what every refusal of the form must leave.
            before = await db_snapshot(site.crier)
            for name, length in form.text.items():
                typed = "q" * (length + 1)
                async with http.post(
                    url, data={"csrf": login.csrf, name: typed}, cookies=login.cookies,
                    allow_redirects=False,
                ) as resp:  # fmt: skip
                    page = await resp.text()
                    assert resp.status == 400, (path, name, resp.status, page[-500:])
                assert TOO_LONG in page, (path, name)
                assert f"at most {length} characters" in page, (path, name)
                assert "q" * 61 not in page, (path, name)  # at most a clip, here none
                assert await db_snapshot(site.crier) == before, (path, name)
                checked += 1
            # Every field of the form at exactly its length, in one post: none is refused
            # for its length (each field's length is checked on its own, so one post with
            # all of them at their lengths proves it of each).
            at_length = {name: "q" * length for name, length in form.text.items()}
            async with http.post(
                url, data={"csrf": login.csrf, **at_length}, cookies=login.cookies,
                allow_redirects=False,
            ) as resp:  # fmt: skip
                assert resp.status != 413, path  # read whole, not refused for its size
                assert TOO_LONG not in await resp.text(), path
        assert checked >= 40  # the announcement form's fields, twice, and the others


async def test_the_issues_60000_character_template_name(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with serve_dashboard(tmp_path) as site:
        login = await log_in(site, http, site.world.admin)
        name = "*a " * 20_000
        async with http.post(
            f"{site.url}/g/{site.world.guild.id}/templates/delete",
            data={"csrf": login.csrf, "name": name}, cookies=login.cookies,
        ) as resp:  # fmt: skip
            page = await resp.text()
            assert resp.status == 400
        assert "<strong>Name</strong> is too long: it may hold at most 100 characters" in page
        assert len(page) < 10_000


async def test_the_announcement_form_shows_a_field_too_long_at_the_field(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """The form again, the refusal at the field (marked invalid, described by the words),
    the field left empty rather than repeated."""
    async with serve_dashboard(tmp_path) as site:
        login = await log_in(site, http, site.world.admin)
        async with http.post(
            f"{site.url}/g/{site.world.guild.id}/new",
            data={"csrf": login.csrf, "message": "Hi", "when": "in 1h " * 30},
            cookies=login.cookies,
        ) as resp:  # fmt: skip
            page = await resp.text()
            assert resp.status == 400
        field = re.search(r'<input name="when"[^>]*>', page)
        assert field is not None
        assert 'aria-invalid="true"' in field.group(0), field.group(0)
        assert 'value=""' in field.group(0)
        assert "<strong>When</strong> is too long: it may hold at most 100 characters" in page


@pytest.mark.parametrize("path", ["/g/{g}", "/g/{g}/new", "/ops/jobs"])
async def test_a_pages_parameter_past_100_characters_is_refused(
    path: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with serve_dashboard(tmp_path) as site:
        login = await log_in(site, http, site.world.admin)
        url = site.url + path.format(g=site.world.guild.id)
        for name in ("q", "template", "fn"):
            async with http.get(url, params={name: "z" * 101}, cookies=login.cookies) as resp:
                page = await resp.text()
                assert resp.status == 400, (path, name)
            assert "is too long: it may hold at most 100 characters" in page
            assert "z" * 61 not in page
