"""The dashboard's login and session rules, over plain HTTP (no browser needed): the OAuth
``state`` check, Secure cookies behind https, login rate limiting, session ids kept only
hashed, the client secret never logged."""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlparse

import aiohttp
import pytest

from bot.app import Crier
from bot.web.dashboard.core import LOGIN_LIMIT
from bot.web.dashboard.sessions import SESSION_COOKIE, STATE_COOKIE, hash_id
from tests.bot.conftest import settings_for
from tests.fakediscord import FakeDiscord
from tests.scheduler.stores import require_postgres

from .conftest import Site, serve_dashboard

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path


async def authorize(site: Site, http: aiohttp.ClientSession) -> tuple[str, str, str]:
    """Start a login: the state cookie, and the code and state Discord sends back."""
    async with http.get(site.url + "/login", allow_redirects=False) as resp:
        assert resp.status == 303
        state_cookie = resp.cookies[STATE_COOKIE].value
        authorize_url = resp.headers["Location"]
    async with http.get(authorize_url, allow_redirects=False) as resp:
        assert resp.status == 302, await resp.text()
        query = parse_qs(urlparse(resp.headers["Location"]).query)
    return state_cookie, query["code"][0], query["state"][0]


async def test_a_callback_whose_state_is_not_ours_is_refused(tmp_path: Path) -> None:
    async with serve_dashboard(tmp_path) as site, aiohttp.ClientSession() as http:
        site.fake.oauth_login_as(site.world.admin)
        state_cookie, code, state = await authorize(site, http)
        assert state == state_cookie
        async with http.get(
            f"{site.url}/auth/callback",
            params={"code": code, "state": "forged"},
            cookies={STATE_COOKIE: state_cookie},
            allow_redirects=False,
        ) as resp:
            assert resp.status == 400
            assert SESSION_COOKIE not in resp.cookies
        async with site.crier.sched.reader() as db:
            cur = await db.execute("SELECT count(*) AS n FROM bot_dashboard_sessions")
            assert (await cur.fetchone())["n"] == 0


@contextlib.asynccontextmanager
async def database_url(kind: str, tmp_path: Path) -> AsyncIterator[str]:
    """A fresh database of ``kind`` (PostgreSQL only if a server is configured): on
    PostgreSQL a pooled one, at the head of the scheduler's and the bot's migrations and
    empty, as the bot leaves a new database when it starts (see ``tests/scheduler/pg.py``)."""
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'crier.db'}"
        return
    dsn = require_postgres()
    from bot.app.crier import bot_migrations
    from tests.scheduler.pg import pooled_database

    async with pooled_database(dsn, [bot_migrations()]) as url:
        yield url


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_behind_https_the_cookies_are_secure_and_the_session_id_is_kept_hashed(
    kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """On SQLite and PostgreSQL: the session is written, found and kept only hashed."""
    caplog.set_level(logging.DEBUG)
    public = "https://crier.example.org"
    async with (
        database_url(kind, tmp_path) as url,
        serve_dashboard(tmp_path, dashboard_url=public, database_url=url) as site,
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
    ):
        site.fake.oauth_login_as(site.world.admin)
        async with http.get(site.url + "/login", allow_redirects=False) as resp:
            assert "Secure" in resp.headers["Set-Cookie"]
            state_cookie = resp.cookies[STATE_COOKIE].value
            authorize_url = resp.headers["Location"]
        assert parse_qs(urlparse(authorize_url).query)["redirect_uri"] == [
            f"{public}/auth/callback"
        ]
        async with http.get(authorize_url, allow_redirects=False) as resp:
            query = parse_qs(urlparse(resp.headers["Location"]).query)
        async with http.get(
            f"{site.url}/auth/callback",
            params={"code": query["code"][0], "state": query["state"][0]},
            cookies={STATE_COOKIE: state_cookie},
            allow_redirects=False,
        ) as resp:
            assert resp.status == 303
            morsel = resp.cookies[SESSION_COOKIE]
            assert morsel["secure"]
            assert morsel["httponly"]
            assert morsel["samesite"] == "Lax"
            session_id = morsel.value
        async with site.crier.sched.reader() as db:
            cur = await db.execute("SELECT id_hash FROM bot_dashboard_sessions")
            assert [r["id_hash"] for r in await cur.fetchall()] == [hash_id(session_id)]
        async with http.get(
            site.url + "/", cookies={SESSION_COOKIE: session_id}, allow_redirects=False
        ) as resp:
            assert "Log out" in await resp.text()  # the login works on this database
        logged = caplog.text
        assert site.fake.oauth2.client_secret not in logged
        assert session_id not in logged
        assert site.fake.oauth2.tokens  # one was issued, and is in no log line
        for token in site.fake.oauth2.tokens:
            assert token not in logged


async def test_logins_from_one_address_are_rate_limited(tmp_path: Path) -> None:
    count, _ = LOGIN_LIMIT
    async with serve_dashboard(tmp_path) as site, aiohttp.ClientSession() as http:
        for _ in range(count):
            async with http.get(site.url + "/login", allow_redirects=False) as resp:
                assert resp.status == 303
        async with http.get(site.url + "/login", allow_redirects=False) as resp:
            assert resp.status == 429
            assert "Too many logins" in await resp.text()
        site.clock.advance(LOGIN_LIMIT[1])
        async with http.get(site.url + "/login", allow_redirects=False) as resp:
            assert resp.status == 303


async def test_the_dashboard_shares_the_bots_http_server_with_healthz(tmp_path: Path) -> None:
    async with serve_dashboard(tmp_path) as site, aiohttp.ClientSession() as http:
        async with http.get(site.url + "/healthz") as resp:
            assert resp.status == 200
        async with http.get(site.url + "/") as resp:
            assert resp.status == 200
            assert "Log in with Discord" in await resp.text()
            assert "frame-ancestors 'none'" in resp.headers["Content-Security-Policy"]


async def test_without_http_address_the_dashboard_is_not_served_and_a_warning_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with FakeDiscord() as fake:
        settings = settings_for(fake, tmp_path / "crier.db", client_secret="s" * 32)
        with caplog.at_level(logging.WARNING, logger="bot.app"):
            crier = Crier(settings)
        assert crier.web is None
        assert crier.dashboard is None
        assert "HTTP_ADDRESS is not: the dashboard is not served" in caplog.text
