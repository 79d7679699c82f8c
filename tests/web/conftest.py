"""The dashboard served by the real bot on its own HTTP server (``HTTP_ADDRESS``, on
127.0.0.1): a real discord.py client against the fake Discord, its OAuth2 included; and one
Chromium per test module driven by Playwright.

Chromium is the distribution's package (``/usr/bin/chromium``), installed by
``scripts/test``; Playwright can't download browsers here. Without it the browser tests are
skipped, saying why, unless ``CRIER_REQUIRE_BROWSER=1`` (``.ci/run`` sets it): then they
fail, so a CI run that did not drive the browser never passes."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest
import pytest_asyncio

from bot.app import Crier
from bot.models import Draft
from bot.web.dashboard import Dashboard
from bot.web.dashboard.throttle import RateLimit
from scheduler.testing import FakeClock
from tests.bot.conftest import NOW, World, add_world, restore_discord_endpoints, settings_for
from tests.fakediscord import FakeDiscord

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from datetime import datetime

    from tests.fakediscord.state import Role

CHROMIUM = os.environ.get("CRIER_CHROMIUM", "/usr/bin/chromium")
HAVE_CHROMIUM = Path(CHROMIUM).exists()


@dataclass
class Site:
    """The bot, its dashboard's address and the world it sees."""

    crier: Crier
    dashboard: Dashboard
    url: str
    world: World
    clock: FakeClock

    @property
    def fake(self) -> FakeDiscord:
        return self.world.fake


def news_draft(
    site: Site, text: str, first: datetime, world: World | None = None, **changes: Any
) -> Draft:
    """A one-off in ``world``'s (default: the site's) #news by its admin, first at ``first``,
    in UTC, pinging nobody: for announcements made through the domain layer, not the pages."""
    world = world or site.world
    values: dict[str, Any] = {
        "guild_id": world.guild.id,
        "channel_id": world.news.id,
        "author_id": world.admin.id,
        "content": text,
        "mention": None,
        "allowed_mentions": {"everyone": False, "roles": [], "users": True},
        "first": first,
        "timezone": "UTC",
        "repeat": None,
        "until": None,
    }
    return Draft(**(values | changes))


async def role_the_bot_sees(site: Site, name: str) -> Role:
    """A mentionable role added to the site's server, once the bot's client has seen it."""
    role = site.world.guild.add_role(name, mentionable=True)
    seen = site.crier.bot.get_guild(site.world.guild.id)
    assert seen is not None
    await site.fake.wait_until(lambda: seen.get_role(role.id), what="the bot to see the role")
    return role


@contextlib.asynccontextmanager
async def serve_dashboard(tmp_path: Path, **overrides: Any) -> AsyncIterator[Site]:
    """Start the fake Discord, the bot and its dashboard; yield them; stop them all."""
    clock = FakeClock(NOW)
    async with FakeDiscord() as fake:
        world = add_world(fake, "Crier Test", admin="alice", member="bob")
        oauth_base = fake.oauth2.authorize_url.removesuffix("/oauth2/authorize")
        settings = settings_for(
            fake,
            tmp_path / "crier.db",
            client_secret=fake.oauth2.client_secret,
            oauth_base=oauth_base,
            http_address=("127.0.0.1", 0),
            **overrides,
        )
        crier = Crier(settings, clock=clock, guild_ready_timeout=0.05)
        await crier.start()
        try:
            assert crier.web is not None
            assert crier.dashboard is not None
            url = crier.web.url
            fake.oauth2.add_redirect_uri(f"{url}/auth/callback")
            if settings.dashboard_url:
                fake.oauth2.add_redirect_uri(f"{settings.dashboard_url}/auth/callback")
            yield Site(crier, crier.dashboard, url, world, clock)
        finally:
            await crier.close()
            restore_discord_endpoints()


def without_rate_limits(site: Site) -> None:
    """Lift the dashboard's limits on logins, callbacks and refused changes per address, for
    a test that logs in and is refused far more often than a person would (every request of
    a test comes from 127.0.0.1)."""
    d = site.dashboard
    d.logins = RateLimit(site.clock, 10**9, 60.0)
    d.callbacks = RateLimit(site.clock, 10**9, 60.0)
    d.refusals = RateLimit(site.clock, 10**9, 60.0)


@pytest_asyncio.fixture(loop_scope="module")
async def site(tmp_path: Path) -> AsyncIterator[Site]:
    """One dashboard for a module's tests: a module's worth of logins and refusals from one
    address is not a person's, so the limits per address are lifted (the tests of those
    limits serve a dashboard of their own)."""
    async with serve_dashboard(tmp_path) as s:
        without_rate_limits(s)
        yield s


REQUIRE_BROWSER = "CRIER_REQUIRE_BROWSER"


@contextlib.asynccontextmanager
async def browser_page(browser: Any, timeout_ms: float = 10_000) -> AsyncIterator[Any]:
    """A page of a new browser context (its own cookies), 1100 x 800, waiting at most
    ``timeout_ms`` for what it is asked; closed afterwards."""
    context = await browser.new_context(viewport={"width": 1100, "height": 800})
    context.set_default_timeout(timeout_ms)
    try:
        yield await context.new_page()
    finally:
        await context.close()


def without_browser(why: str) -> NoReturn:
    """Skip the browser test, saying ``why``; fail it instead when :data:`REQUIRE_BROWSER`
    is set (in CI)."""
    if os.environ.get(REQUIRE_BROWSER) == "1":
        pytest.fail(f"{why} ({REQUIRE_BROWSER}=1: the browser tests must run)", pytrace=False)
    pytest.skip(why)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Any]:
    """One headless Chromium for the module's tests (each test opens its own context)."""
    if not HAVE_CHROMIUM:
        without_browser(
            f"no Chromium at {CHROMIUM}: install the distribution's `chromium` package "
            "(scripts/test does, with apt-get) to run the dashboard's browser tests"
        )
    try:
        import playwright.async_api as playwright_api
    except ImportError:
        without_browser("playwright is not installed (pip install -e '.[dev]')")
    async with playwright_api.async_playwright() as p:
        found = await p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield found
        finally:
            await found.close()


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the browser tests save screenshots of the main pages."""
    return tmp_path_factory.mktemp("dashboard-screenshots")
