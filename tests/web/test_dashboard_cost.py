"""What a request that is refused, or made by nobody logged in, costs Discord (issue 32):
nothing. The fake Discord records every request it gets; these tests count them.

- ``/auth/callback`` exchanges a code only for a ``state`` the dashboard made (signed, at
  most 10 minutes old, once): 60 anonymous callbacks with a made-up state made 60 calls to
  the token endpoint with the client secret; and at most 10 a minute come from one address.
- A member refused a change is refused from the read of their roles that refused them (200
  refused POSTs made 204 Discord calls in 4 s), and an address with 30 refused changes in a
  minute is refused at once (429) until the minute has passed.
- The addresses and members remembered expire: the tables shrink back.
- Behind a reverse proxy (``DASHBOARD_PUBLIC_URL`` set, the request from a loopback or
  private address), the address is the proxy's ``X-Forwarded-For``; otherwise that header
  is ignored.
- The operators: the owner, or a team's accepted Admins and Developers, read again after
  5 minutes; ``DASHBOARD_OPERATORS`` wins.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import aiohttp
import pytest

from bot.web.dashboard.access import OPERATORS_TTL, REFUSED_TTL
from bot.web.dashboard.auth_pages import STATE_SECONDS
from bot.web.dashboard.core import CALLBACK_LIMIT, LOGIN_LIMIT, REFUSED_LIMIT
from bot.web.dashboard.sessions import SESSION_COOKIE, STATE_COOKIE
from tests.bot.conftest import db_snapshot
from tests.fakediscord import ACCEPTED, INVITED, TeamMember

from .conftest import news_draft, serve_dashboard
from .test_dashboard_guards import log_in, sessions
from .test_dashboard_http import authorize, database_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from .conftest import Site


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as session:
        yield session


def discord_calls(site: Site) -> int:
    """Every request the fake Discord has had (REST and OAuth2's token endpoint)."""
    return len(site.fake.requests)


async def callback(
    site: Site, http: aiohttp.ClientSession, state: str, code: str = "made-up", **headers: str
) -> int:
    """``/auth/callback`` with ``state`` in the query and in the state cookie, as an
    attacker can send it."""
    async with http.get(
        f"{site.url}/auth/callback", params={"code": code, "state": state},
        cookies={STATE_COOKIE: state}, allow_redirects=False, headers=headers,
    ) as resp:  # fmt: skip
        return resp.status


async def test_a_callback_with_a_state_the_dashboard_did_not_make_asks_discord_nothing(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """60 anonymous callbacks, each with a state of its own in the query and the cookie (as
    the state was checked: the cookie against the query): every one refused, none asking
    Discord anything; 10 a minute from one address, the rest answered 429."""
    async with serve_dashboard(tmp_path) as site:
        count, per = CALLBACK_LIMIT
        before = discord_calls(site)
        statuses = [await callback(site, http, f"state-{n}") for n in range(60)]
        assert statuses == [400] * count + [429] * (60 - count)
        assert discord_calls(site) == before
        assert site.fake.oauth2.tokens == {}
        site.clock.advance(timedelta(seconds=per))
        assert await callback(site, http, "state-60") == 400


async def test_a_state_is_taken_once_and_for_ten_minutes(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """A state the dashboard made, more than 10 minutes old, is refused before its code is
    used; the code of a login then still works with a new state."""
    async with serve_dashboard(tmp_path) as site:
        site.fake.oauth_login_as(site.world.admin)
        state_cookie, code, state = await authorize(site, http)
        site.clock.advance(timedelta(seconds=STATE_SECONDS + 1))
        before = discord_calls(site)
        async with http.get(
            f"{site.url}/auth/callback", params={"code": code, "state": state},
            cookies={STATE_COOKIE: state_cookie}, allow_redirects=False,
        ) as resp:  # fmt: skip
            assert resp.status == 400
            assert "its state does not match" in await resp.text()
        assert discord_calls(site) == before
        assert await sessions(site) == 0


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_refused_changes_ask_discord_nothing_and_are_limited_per_address(
    kind: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """A member without the rights (bob) pauses an announcement again and again: Discord is
    asked for his roles once (the first refusal), not once per request; past 30 refused
    changes in a minute his address gets 429 at once; a minute later he is answered again,
    his roles read again (the refusal's read has expired)."""
    async with (
        database_url(kind, tmp_path) as url,
        serve_dashboard(tmp_path, database_url=url) as site,
    ):
        announcement, _ = await site.crier.bot.announcements.create(
            news_draft(site, "Hello", site.clock.now() + timedelta(hours=1))
        )
        login = await log_in(site, http, site.world.member)
        path = f"{site.url}/g/{site.world.guild.id}/a/{announcement.local_id}/pause"
        before = discord_calls(site)
        snapshot = await db_snapshot(site.crier)
        count, per = REFUSED_LIMIT
        statuses = []
        for _ in range(count + 20):
            async with http.post(
                path, data={"csrf": login.csrf}, cookies=login.cookies, allow_redirects=False
            ) as resp:
                statuses.append(resp.status)
        assert statuses == [403] * count + [429] * 20
        member = f"/guilds/{site.world.guild.id}/members/{site.world.member.id}"
        fetched = [r.path for r in site.fake.requests[before:]]
        assert fetched == [member]
        assert await db_snapshot(site.crier) == snapshot
        site.clock.advance(timedelta(seconds=max(per, REFUSED_TTL)))
        async with http.post(
            path, data={"csrf": login.csrf}, cookies=login.cookies, allow_redirects=False
        ) as resp:
            assert resp.status == 403  # answered again, his roles read again
        assert [r.path for r in site.fake.requests[before:]] == [member, member]


async def test_changes_by_nobody_logged_in_ask_discord_nothing(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with serve_dashboard(tmp_path) as site:
        before = discord_calls(site)
        for path in ("/logout", f"/g/{site.world.guild.id}/new", "/ops/limits"):
            async with http.post(
                site.url + path, data={"csrf": "x"}, cookies={SESSION_COOKIE: "forged"},
                allow_redirects=False,
            ) as resp:  # fmt: skip
                assert resp.status == 403
        assert discord_calls(site) == before


async def test_the_tables_of_addresses_shrink_back(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """1,000 addresses start a login (behind a proxy, each its own X-Forwarded-For): once
    their minute has passed, 1,000 more leave the table holding about the second thousand,
    not 2,000 (the login limit's table only grew)."""
    public = "http://127.0.0.1:9"
    async with serve_dashboard(tmp_path, dashboard_url=public) as site:
        logins = site.dashboard.logins
        for batch in range(2):
            for n in range(1000):
                address = f"10.{batch}.{n // 256}.{n % 256}"
                async with http.get(
                    site.url + "/login", headers={"X-Forwarded-For": address},
                    allow_redirects=False,
                ) as resp:  # fmt: skip
                    assert resp.status == 303
            if batch == 0:
                assert len(logins) >= 1000
                site.clock.advance(timedelta(seconds=LOGIN_LIMIT[1] + 1))
        assert len(logins) <= 1100, len(logins)


@pytest.mark.parametrize("behind_proxy", [False, True])
async def test_x_forwarded_for_counts_only_behind_a_proxy(
    behind_proxy: bool, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """Logins from one client that writes a new X-Forwarded-For each time: without
    DASHBOARD_PUBLIC_URL the header is ignored (the 11th is refused); with it, each address
    is counted apart, and one address is limited as the peer was."""
    overrides = {"dashboard_url": "http://127.0.0.1:9"} if behind_proxy else {}
    async with serve_dashboard(tmp_path, **overrides) as site:
        count, _ = LOGIN_LIMIT
        statuses = []
        for n in range(count + 1):
            async with http.get(
                site.url + "/login", headers={"X-Forwarded-For": f"203.0.113.7, 10.0.0.{n}"},
                allow_redirects=False,
            ) as resp:  # fmt: skip
                statuses.append(resp.status)
        assert statuses[-1] == (303 if behind_proxy else 429)
        for _ in range(count):
            async with http.get(
                site.url + "/login", headers={"X-Forwarded-For": "198.51.100.4"},
                allow_redirects=False,
            ) as resp:  # fmt: skip
                assert resp.status in (303, 429)
        async with http.get(
            site.url + "/login", headers={"X-Forwarded-For": "198.51.100.4"},
            allow_redirects=False,
        ) as resp:  # fmt: skip
            assert resp.status == 429


# --- the operators --------------------------------------------------------------------------------


async def is_operator(site: Site, http: aiohttp.ClientSession, who: object) -> bool:
    login = await log_in(site, http, who)  # type: ignore[arg-type]
    async with http.get(site.url + "/ops", cookies=login.cookies) as resp:
        return resp.status == 200


async def test_a_teams_accepted_admins_and_developers_are_the_operators(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """The team's owner and its accepted Admin and Developer are operators; its Read-only
    member and an Admin not yet accepted are not; a Developer removed from the team stops
    being one once the team is read again (5 minutes), not at the next restart."""
    async with serve_dashboard(tmp_path) as site:
        fake = site.fake
        owner = fake.add_user("team-owner")
        admin, developer, reader, invited = (
            fake.add_user(n) for n in ("admin", "developer", "reader", "invited")
        )
        fake.set_team(owner, [
            TeamMember(admin, "admin"), TeamMember(developer, "developer"),
            TeamMember(reader, "read_only"), TeamMember(invited, "admin", INVITED),
        ])  # fmt: skip
        site.dashboard.access._operators_until = float("-inf")  # read the team now
        for user, expected in [
            (owner, True), (admin, True), (developer, True), (reader, False), (invited, False),
            (fake.app_owner, False),
        ]:  # fmt: skip
            assert await is_operator(site, http, user) == expected, user.username
        fake.set_team(owner, [TeamMember(admin, "admin", ACCEPTED)])
        assert await is_operator(site, http, developer)  # read less than 5 minutes ago
        site.clock.advance(timedelta(seconds=OPERATORS_TTL))
        assert not await is_operator(site, http, developer)
        assert await is_operator(site, http, admin)


async def test_dashboard_operators_wins_over_the_team(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with serve_dashboard(tmp_path, dashboard_operators=(12345,)) as site:
        owner = site.fake.add_user("team-owner")
        site.fake.set_team(owner)
        before = discord_calls(site)
        assert not await is_operator(site, http, owner)
        assert not await is_operator(site, http, site.fake.app_owner)
        calls = [r.path for r in site.fake.requests[before:]]
        assert "/oauth2/applications/@me" not in calls
        assert "/applications/@me" not in calls
