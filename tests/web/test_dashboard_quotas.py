"""The dashboard's side of issue 32, over plain HTTP as a hostile manager would (no browser):
its changes count toward ``COMMANDS_PER_MINUTE`` with the commands (the same counter); an
upload's dry run is one per member (ten uploads keep one) and asks Discord for the server's
events once, as does its confirmation; a time out of range in the file is refused in words
(it was a 500); save as template counts the template's file toward ``GUILD_FILES_MAX_MB``.
(The commands' side: tests/bot/test_quotas.py and test_import_cost.py.)"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from tests.bot.conftest import db_snapshot, run_command
from tests.bot.test_import_cost import ROWS, event_rows, events_asked
from tests.fakediscord import Permissions as P

from .conftest import serve_dashboard
from .test_dashboard_guards import Login, log_in
from .test_dashboard_http import database_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from .conftest import Site


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as session:
        yield session


async def post(
    site: Site, http: aiohttp.ClientSession, login: Login, path: str, form: Any
) -> tuple[int, str, Any]:
    """POST ``form`` (a dict, or :data:`Parts` with a file: sent as multipart, the CSRF
    token first, as the forms send it) with the login's CSRF token."""
    if isinstance(form, list):
        parts = aiohttp.FormData()
        parts.add_field("csrf", login.csrf)
        for name, value, options in form:
            parts.add_field(name, value, **options)
        form = parts
    else:
        form = form | {"csrf": login.csrf}
    async with http.post(
        site.url + path, data=form, cookies=login.cookies, allow_redirects=False
    ) as resp:
        return resp.status, await resp.text(), resp.headers


Parts = list[tuple[str, Any, dict[str, str]]]
"""A multipart form's parts: name, value, and the file's ``filename`` and ``content_type``."""


def upload(data: bytes) -> Parts:
    return [("file", data, {"filename": "export.json", "content_type": "application/json"})]


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_dashboard_changes_count_toward_commands_per_minute(
    kind: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """A limit of 2: a create and a cancel on the dashboard use it up; the third change
    (another create) is refused with 429 and writes nothing, and so is a command in the same
    minute (one counter); the next minute, both work again. (6 creates in a minute passed a
    limit of 2.)"""
    async with (
        database_url(kind, tmp_path) as url,
        serve_dashboard(tmp_path, database_url=url, commands_per_minute=2) as site,
    ):
        world, guild = site.world, site.world.guild.id
        login = await log_in(site, http, world.admin)
        new = {"message": "hello", "channel": str(world.news.id), "when": "in 1h"}
        status, _, _ = await post(site, http, login, f"/g/{guild}/new", new)
        assert status == 303
        status, _, _ = await post(site, http, login, f"/g/{guild}/a/1/cancel", {"confirm": "yes"})
        assert status == 303
        before = await db_snapshot(site.crier)
        status, text, headers = await post(site, http, login, f"/g/{guild}/new", new)
        assert status == 429, text
        assert "more than 2 commands in this server this minute" in text
        assert 1 <= int(headers["Retry-After"]) <= 60
        cb = await run_command(world, "list")
        assert "Slow down" in (cb.content or ""), cb.content
        assert await db_snapshot(site.crier) == before
        site.clock.advance(timedelta(minutes=1))
        status, _, _ = await post(site, http, login, f"/g/{guild}/new", new)
        assert status == 303


async def test_uploads_keep_one_dry_run_per_member_and_ask_for_events_once(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """Ten uploads of a file of 40 rows with events: one dry run kept (the last one: an
    older token is refused), and each upload lists the server's events once; so does the
    confirmation, which imports all 40. (Ten uploads kept 73 MiB; 300 rows made 306 Discord
    calls.)"""
    async with serve_dashboard(tmp_path) as site:
        world, guild = site.world, site.world.guild.id
        world.guild.set_bot_permissions(P.VIEW_CHANNEL | P.SEND_MESSAGES | P.CREATE_EVENTS)
        login = await log_in(site, http, world.admin)
        data = event_rows(world)
        tokens = []
        for _ in range(10):
            before = events_asked(world)
            status, text, _ = await post(site, http, login, f"/g/{guild}/import", upload(data))
            assert status == 200, text
            assert events_asked(world) - before == 1
            found = re.search(r'name="token" value="([0-9a-f]+)"', text)
            assert found is not None, text
            tokens.append(found[1])
        async with site.crier.sched.reader() as db:
            cur = await db.execute("SELECT user_id, token FROM bot_pending_imports")
            assert [tuple(r) for r in await cur.fetchall()] == [(world.admin.id, tokens[-1])]
        status, text, _ = await post(
            site, http, login, f"/g/{guild}/import/confirm", {"token": tokens[0]}
        )
        assert status == 403
        assert "or was replaced by your newer one" in text
        before = events_asked(world)
        status, text, _ = await post(
            site, http, login, f"/g/{guild}/import/confirm", {"token": tokens[-1]}
        )
        assert status == 303, text
        assert events_asked(world) - before == 1
        assert len(await site.crier.bot.announcements.live(guild)) == ROWS


async def test_an_upload_with_a_time_out_of_range_is_refused_in_words(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with serve_dashboard(tmp_path) as site:
        world, guild = site.world, site.world.guild.id
        login = await log_in(site, http, world.admin)
        row = {"key": "k", "text": "hi", "first": "9999-12-31T23:59:59-23:59",
               "timezone": "UTC", "destination": {"name": "news"}}  # fmt: skip
        data = json.dumps({"version": 2, "announcements": [row]}).encode()
        before = await db_snapshot(site.crier)
        status, text, _ = await post(site, http, login, f"/g/{guild}/import", upload(data))
        assert status == 200, text
        assert "<code>first</code> is out of range" in text, text
        assert 'name="token"' not in text
        assert await db_snapshot(site.crier) == before


async def test_save_as_template_counts_its_file_toward_the_servers_files(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """Under a quota of 3000 bytes: a template saved from the form with a 2000-byte file,
    then a second one: refused in words, nothing written. (5 templates kept 35 MiB under a
    1 MiB quota.)"""
    async with serve_dashboard(
        tmp_path, file_max_bytes=2000.0, guild_files_max_bytes=3000.0
    ) as site:
        world, guild = site.world, site.world.guild.id
        world.guild.set_bot_permissions(P.VIEW_CHANNEL | P.SEND_MESSAGES | P.ATTACH_FILES)
        login = await log_in(site, http, world.admin)

        def form(name: str) -> Parts:
            fields = {"message": "m", "channel": str(world.news.id), "when": "",
                      "template_name": name, "action": "save_template"}  # fmt: skip
            image = ("image", b"p" * 2000, {"filename": "p.png", "content_type": "image/png"})
            return [*((k, v, {}) for k, v in fields.items()), image]

        status, text, _ = await post(site, http, login, f"/g/{guild}/new", form("first"))
        assert status == 200, text
        assert [t.name for t in await site.crier.bot.announcements.templates(guild)] == ["first"]
        before = await db_snapshot(site.crier)
        status, text, _ = await post(site, http, login, f"/g/{guild}/new", form("second"))
        assert "announcements and templates already keep" in text, text
        assert await db_snapshot(site.crier) == before
