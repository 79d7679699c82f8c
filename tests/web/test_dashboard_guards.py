"""The dashboard's guards, asked over plain HTTP as an attacker would (no browser): every
scheduler action is refused to anyone but an operator and changes nothing; a logged-out or
expired session stops working on the server, not only in the browser; a callback without
our state cookie, or with Discord's ``error=``, logs nobody in; a failed login logs why,
never the client secret, the code or a token."""

from __future__ import annotations

import logging
import re
import socket
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

import aiohttp
import pytest

from bot.web.dashboard.sessions import SESSION_COOKIE, SESSION_SECONDS, STATE_COOKIE
from tests.bot.conftest import db_snapshot
from tests.bot.test_bulk_create import HOURLY

from .conftest import Site, news_draft, serve_dashboard
from .test_dashboard_http import authorize

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from bot.models import Announcement
    from tests.fakediscord import Member, User

LOGIN_PAGE = "Log in with Discord"
CSRF_FIELD = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass(frozen=True)
class Login:
    """A logged-in browser, as the server knows it: its session cookie and CSRF token."""

    session_id: str
    csrf: str

    @property
    def cookies(self) -> dict[str, str]:
        return {SESSION_COOKIE: self.session_id}


async def log_in(site: Site, http: aiohttp.ClientSession, who: Member | User) -> Login:
    """Log ``who`` in through /login, the fake Discord's authorize page and the callback."""
    site.fake.oauth_login_as(who)
    state_cookie, code, state = await authorize(site, http)
    async with http.get(
        f"{site.url}/auth/callback",
        params={"code": code, "state": state},
        cookies={STATE_COOKIE: state_cookie},
        allow_redirects=False,
    ) as resp:
        assert resp.status == 303, await resp.text()
        session_id = resp.cookies[SESSION_COOKIE].value
    async with http.get(site.url + "/", cookies={SESSION_COOKIE: session_id}) as resp:
        found = CSRF_FIELD.search(await resp.text())
    assert found is not None, "the home page has no CSRF field: not logged in?"
    return Login(session_id, found.group(1))


async def sessions(site: Site) -> int:
    async with site.crier.sched.reader() as db:
        cur = await db.execute("SELECT count(*) AS n FROM bot_dashboard_sessions")
        return int((await cur.fetchone())["n"])


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # No cookie jar: each request carries exactly the cookies the test gives it.
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as session:
        yield session


# --- the scheduler's actions: operators only -------------------------------------------------


async def announce(site: Site, text: str, *, recurring: bool = False) -> Announcement:
    changes = {"repeat": HOURLY} if recurring else {}
    draft = news_draft(site, text, site.clock.now() + timedelta(minutes=10), **changes)
    announcement, _ = await site.crier.bot.announcements.create(draft)
    return announcement


async def ops_targets(site: Site) -> dict[str, tuple[str, dict[str, str]]]:
    """Something for each scheduler action to act on, and the POST (path, form) doing it:
    a pending job to cancel, a canceled one to retry, a schedule to pause and trigger and a
    paused one to resume."""
    guild = site.world.guild.id
    pending = await announce(site, "Pending")
    canceled = await announce(site, "Canceled")
    await site.crier.bot.announcements.cancel(guild, canceled.local_id)
    running = await announce(site, "Hourly", recurring=True)
    paused = await announce(site, "Paused hourly", recurring=True)
    running = await site.crier.bot.announcements.get(guild, running.local_id)
    paused = await site.crier.bot.announcements.get(guild, paused.local_id)
    assert pending.job_id
    assert canceled.job_id
    assert running.schedule_name
    assert paused.schedule_name
    assert await site.crier.sched.schedules.pause(paused.schedule_name)
    return {
        "cancel": (f"/ops/jobs/{pending.job_id}/cancel", {"confirm": "yes"}),  # as confirmed
        "retry": (f"/ops/jobs/{canceled.job_id}/retry", {}),
        "pause": ("/ops/schedules/pause", {"name": running.schedule_name}),
        "trigger": ("/ops/schedules/trigger", {"name": running.schedule_name}),
        "resume": ("/ops/schedules/resume", {"name": paused.schedule_name}),
    }


@pytest.mark.parametrize("action", ["cancel", "retry", "pause", "resume", "trigger"])
async def test_only_an_operator_may_act_on_the_scheduler(
    action: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """A manager of a server and a plain member, each logged in with a valid CSRF token,
    get "not found" and change nothing; the operator's same request does what it says."""
    async with serve_dashboard(tmp_path) as site:
        path, form = (await ops_targets(site))[action]
        for who in (site.world.admin, site.world.member):
            login = await log_in(site, http, who)
            before = await db_snapshot(site.crier)
            async with http.post(
                site.url + path, data=form | {"csrf": login.csrf}, cookies=login.cookies,
                allow_redirects=False,
            ) as resp:  # fmt: skip
                assert resp.status == 404, (who.username, await resp.text())
            assert await db_snapshot(site.crier) == before, who.username
        operator = await log_in(site, http, site.fake.app_owner)
        before = await db_snapshot(site.crier)
        async with http.post(
            site.url + path, data=form | {"csrf": operator.csrf}, cookies=operator.cookies,
            allow_redirects=False,
        ) as resp:  # fmt: skip
            assert resp.status == 303, await resp.text()
        assert await db_snapshot(site.crier) != before


# --- sessions end on the server ----------------------------------------------------------------


async def logged_in(site: Site, http: aiohttp.ClientSession, login: Login) -> bool:
    """Whether the server takes ``login``'s cookie: for a page, and for a change."""
    async with http.get(site.url + "/", cookies=login.cookies) as resp:
        page = await resp.text()
    async with http.post(
        site.url + "/timezone", data={"csrf": login.csrf, "zone": "Europe/Paris"},
        cookies=login.cookies, allow_redirects=False,
    ) as resp:  # fmt: skip
        changed = resp.status == 303
        if not changed:
            assert resp.status == 403
            assert "You are not logged in." in await resp.text()
    assert (LOGIN_PAGE not in page) == changed, page  # the page and the change agree
    return changed


async def test_after_logout_the_old_session_cookie_no_longer_works(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with serve_dashboard(tmp_path) as site:
        login = await log_in(site, http, site.world.admin)
        assert await logged_in(site, http, login)
        async with http.post(
            site.url + "/logout", data={"csrf": login.csrf}, cookies=login.cookies,
            allow_redirects=False,
        ) as resp:  # fmt: skip
            assert resp.status == 303
        assert await sessions(site) == 0
        assert not await logged_in(site, http, login)  # a copy of the cookie is worth nothing


async def test_a_session_ends_on_the_server_when_it_expires(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with serve_dashboard(tmp_path) as site:
        login = await log_in(site, http, site.world.admin)
        site.clock.advance(timedelta(seconds=SESSION_SECONDS - 1))
        assert await logged_in(site, http, login)
        site.clock.advance(timedelta(seconds=1))
        assert not await logged_in(site, http, login)  # whatever the browser kept


# --- the OAuth callback ------------------------------------------------------------------------


async def test_a_callback_without_our_state_cookie_logs_nobody_in(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """A login link made for someone else's browser (no state cookie here), with its state
    or without one, is refused before its code is used: the code still works afterwards
    in the browser that started the login."""
    async with serve_dashboard(tmp_path) as site:
        site.fake.oauth_login_as(site.world.admin)
        state_cookie, code, state = await authorize(site, http)
        for params in ({"code": code, "state": state}, {"code": code}, {"code": code, "state": ""}):
            async with http.get(
                f"{site.url}/auth/callback", params=params, allow_redirects=False
            ) as resp:
                assert resp.status == 400, (params, await resp.text())
                assert "its state does not match" in await resp.text()
                assert SESSION_COOKIE not in resp.cookies
        assert await sessions(site) == 0
        assert site.fake.oauth2.tokens == {}  # the code was never exchanged
        async with http.get(
            f"{site.url}/auth/callback", params={"code": code, "state": state},
            cookies={STATE_COOKIE: state_cookie}, allow_redirects=False,
        ) as resp:  # fmt: skip
            assert resp.status == 303  # the browser that started it logs in with it
        assert await sessions(site) == 1


async def test_a_callback_with_discords_error_logs_nobody_in(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """The user pressed Cancel on Discord's page: Discord sends them back with
    ``error=access_denied`` (and our state); they are told so, and nothing is asked of
    Discord."""
    async with serve_dashboard(tmp_path) as site:
        site.fake.oauth_login_as(site.world.admin, approve=False)
        async with http.get(site.url + "/login", allow_redirects=False) as resp:
            state_cookie = resp.cookies[STATE_COOKIE].value
            authorize_url = resp.headers["Location"]
        async with http.get(authorize_url, allow_redirects=False) as resp:
            back = resp.headers["Location"]
        assert "error=access_denied" in back
        assert "code=" not in back
        async with http.get(
            back, cookies={STATE_COOKIE: state_cookie}, allow_redirects=False
        ) as resp:
            assert resp.status == 403
            assert "You did not authorize the login on Discord." in await resp.text()
            assert SESSION_COOKIE not in resp.cookies
        assert await sessions(site) == 0
        assert site.fake.oauth2.tokens == {}


# --- failed logins: why is logged, no secret is ------------------------------------------------


async def test_a_failed_login_logs_why_and_never_the_secret_the_code_or_a_token(
    tmp_path: Path, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    """Three ways a login fails after Discord sent the user back: the code was used already
    (a reload of the callback), Discord no longer knows the client secret (rotated in the
    developer portal), Discord can't be reached. Each is answered and logged with its
    reason; nothing logged, at any level, holds the secret, a code or a token."""
    caplog.set_level(logging.DEBUG)
    async with serve_dashboard(tmp_path) as site:
        secret = site.fake.oauth2.client_secret
        codes: list[str] = []

        async def callback(
            code: str | None = None, state: str = "", state_cookie: str = ""
        ) -> tuple[int, str]:
            """Back from Discord with ``code`` (None: a new login's)."""
            if code is None:
                site.fake.oauth_login_as(site.world.admin)
                state_cookie, code, state = await authorize(site, http)
            codes.append(code)
            async with http.get(
                f"{site.url}/auth/callback", params={"code": code, "state": state},
                cookies={STATE_COOKIE: state_cookie}, allow_redirects=False,
            ) as resp:  # fmt: skip
                return resp.status, await resp.text()

        # A reload of the callback: its state was taken by the first load, so it is refused
        # before Discord is asked; the same code with a new login's state is Discord's to
        # refuse (it was used).
        site.fake.oauth_login_as(site.world.admin)
        state_cookie, code, state = await authorize(site, http)
        assert (await callback(code, state, state_cookie))[0] == 303
        asked = len(site.fake.requests)
        status, page = await callback(code, state, state_cookie)
        assert status == 400
        assert "its state does not match" in page
        assert len(site.fake.requests) == asked
        async with http.get(site.url + "/login", allow_redirects=False) as resp:
            fresh_cookie = resp.cookies[STATE_COOKIE].value
        status, page = await callback(code, fresh_cookie, fresh_cookie)
        assert status == 502
        assert "invalid_grant" in page
        # The secret was rotated on Discord's side.
        site.fake.oauth2.client_secret = "rotated-" + secret
        status, page = await callback()
        assert status == 502
        assert "invalid_client" in page
        site.fake.oauth2.client_secret = secret
        # Discord can't be reached: a port held, never listened on, refuses connections.
        with socket.socket() as unreachable:
            unreachable.bind(("127.0.0.1", 0))
            port = unreachable.getsockname()[1]
            site.dashboard.oauth.api_base = f"http://127.0.0.1:{port}/api/v10"
            status, page = await callback()
        assert status == 502
        assert "Discord could not be reached" in page

    messages = [r.getMessage() for r in caplog.records]
    failures = [m for m in messages if m.startswith("dashboard login failed: ")]
    assert len(failures) == 3, failures
    assert "invalid_grant" in failures[0]
    assert "invalid_client" in failures[1]
    assert "could not be reached" in failures[2]
    logged = caplog.text
    assert site.fake.oauth2.tokens  # the first login got one
    tokens = site.fake.oauth2.tokens.values()
    for value in [
        secret,
        *codes,
        *(t.access_token for t in tokens),
        *(t.refresh_token for t in tokens),
    ]:
        assert value not in logged


# --- a server's limits: operators only -----------------------------------------------------------


async def test_an_operator_raises_a_servers_limits_on_the_dashboard(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """The operator's limits page shows a server's limits and sets them (a bad value
    changes nothing and says why); a manager of that server gets "not found" for both."""
    async with serve_dashboard(tmp_path) as site:
        guild = site.world.guild.id
        announcements = site.crier.bot.announcements
        manager = await log_in(site, http, site.world.admin)
        async with http.get(
            f"{site.url}/ops/limits?guild={guild}", cookies=manager.cookies
        ) as resp:
            assert resp.status == 404
        before = await db_snapshot(site.crier)
        async with http.post(
            site.url + "/ops/limits",
            data={"csrf": manager.csrf, "guild": str(guild), "announcements": "5000"},
            cookies=manager.cookies, allow_redirects=False,
        ) as resp:  # fmt: skip
            assert resp.status == 404
        assert await db_snapshot(site.crier) == before

        operator = await log_in(site, http, site.fake.app_owner)
        async with http.get(
            f"{site.url}/ops/limits?guild={guild}", cookies=operator.cookies
        ) as resp:
            page = await resp.text()
        assert "announcements: 1,000 (MAX_ANNOUNCEMENTS_PER_GUILD)" in page, page
        form = {"csrf": operator.csrf, "guild": str(guild)}
        async with http.post(
            site.url + "/ops/limits",
            data=form | {"announcements": "5000", "commands-per-minute": "", "files-mb": "200"},
            cookies=operator.cookies,
        ) as resp:  # fmt: skip
            page = await resp.text()
        assert "announcements: 5,000 (set for this server)" in page, page
        override, limits = await announcements.guild_limits(guild)
        assert override is not None
        assert override.max_announcements == 5000
        assert override.commands_per_minute is None  # empty: the instance's
        assert limits.files_max_bytes == 200 * 1024 * 1024
        before = await db_snapshot(site.crier)
        async with http.post(
            site.url + "/ops/limits", data=form | {"announcements": "lots"},
            cookies=operator.cookies,
        ) as resp:  # fmt: skip
            page = await resp.text()
        assert "Nothing was changed: announcements must be a whole number" in page, page
        assert await db_snapshot(site.crier) == before


# --- the gateway shards: operators only -----------------------------------------------------------


async def test_the_shards_page_shows_each_shard_and_its_holder_to_an_operator_only(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with serve_dashboard(tmp_path, shard_count=2) as site:
        member = await log_in(site, http, site.world.admin)
        async with http.get(site.url + "/ops/shards", cookies=member.cookies) as resp:
            assert resp.status == 404
        operator = await log_in(site, http, site.fake.app_owner)
        async with http.get(site.url + "/ops/shards", cookies=operator.cookies) as resp:
            assert resp.status == 200
            page = await resp.text()
        me = site.crier.shards.instance
        assert f"This instance: <code>{me}</code>" in page
        assert "Every shard it holds is connected." in page
        cell = r"\s*<td[^>]*>"
        rows = re.findall(rf"<tr>{cell}(\d+) of 2</td>{cell}([^<]*)</td>{cell}(\w+)</td>", page)
        assert rows == [("0", me, "ready"), ("1", me, "ready")]
