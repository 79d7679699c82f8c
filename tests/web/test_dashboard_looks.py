"""The dashboard's main pages as a first-time manager sees them (issue 37), in Chromium
against the real bot and the fake Discord: the list, the new-announcement form and an
announcement, in the light and the dark theme, on a desktop (1280 px) and a phone
(390 px); none scrolls sideways.

Each is saved as a screenshot: in ``docs/`` with ``CRIER_SCREENSHOTS=1``
(``scripts/screenshots``): ``dashboard-<page>-<theme>-<desktop|phone>.png``; under the test
run's tmp dir otherwise."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pytest
import pytest_asyncio

from bot.models import Template
from bot.parsing import parse_repeat
from tests.bot.conftest import NOW
from tests.fakediscord import Permissions as P

from .conftest import Site, browser_page, news_draft, role_the_bot_sees, serve_dashboard
from .test_dashboard_browser import log_in

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")

DOCS = Path(__file__).resolve().parents[2] / "docs"
WIDTHS = {"desktop": (1280, 800), "phone": (390, 844)}
THEMES = ("light", "dark")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    """A server with what a manager would have after a week: a one-off pinging a role, a
    daily standup, a weekly one paused, one that failed, and a template."""
    async with serve_dashboard(tmp_path_factory.mktemp("looks")) as s:
        world = s.world
        service = s.crier.bot.announcements
        role = await role_the_bot_sees(s, "Raiders")
        start = int((NOW + timedelta(hours=26)).timestamp())
        await service.create(
            news_draft(
                s,
                f"Raid night **before Thursday**: sign up in <#{world.general.id}>, we "
                f"start <t:{start}:R>.",
                NOW + timedelta(hours=2),
                mention=f"role:{role.id}",
                allowed_mentions={"everyone": False, "roles": [role.id], "users": True},
            )
        )
        utc = ZoneInfo("UTC")
        first = NOW + timedelta(hours=1)
        await service.create(
            news_draft(s, "Standup in 5 minutes!", first, repeat=parse_repeat("daily", first, utc))
        )
        weekly, _ = await service.create(
            news_draft(
                s, "Weekly sync notes: *see the pinned agenda*", first,
                repeat=parse_repeat("weekly", first, utc),
            )
        )  # fmt: skip
        await service.pause(world.guild.id, weekly.local_id, world.admin.id)
        # One that failed: the bot may not post in #general.
        world.general.set_overwrite(world.guild.bot_member, deny=P.SEND_MESSAGES)
        await service.create(
            news_draft(
                s, "Polls close tonight", NOW + timedelta(minutes=1),
                channel_id=world.general.id,
            )
        )  # fmt: skip
        s.clock.advance(timedelta(minutes=2))
        await s.crier.sched.wait_idle()
        await service.save_template(
            Template(world.guild.id, "weekly", "Weekly sync {date}", channel_id=world.news.id)
        )
        yield s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def page(browser: Any, site: Site) -> AsyncIterator[Any]:
    async with browser_page(browser) as found:
        await log_in(found, site, site.world.admin)
        yield found


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("CRIER_SCREENSHOTS") == "1":
        DOCS.mkdir(exist_ok=True)
        return DOCS
    return tmp_path_factory.mktemp("looks-screenshots")


@pytest.mark.parametrize("name", ["list", "form", "announcement"])
async def test_the_main_pages_fit_a_phone_in_both_themes(
    page: Any, site: Site, shots: Path, name: str
) -> None:
    guild = site.world.guild.id
    path = {"list": f"/g/{guild}", "form": f"/g/{guild}/new", "announcement": f"/g/{guild}/a/1"}
    await page.emulate_media(color_scheme="light")
    await page.set_viewport_size({"width": 1280, "height": 800})
    response = await page.goto(site.url + path[name])
    assert response.status == 200
    for theme in THEMES:
        await page.emulate_media(color_scheme=theme)
        for device, (width, height) in WIDTHS.items():
            await page.set_viewport_size({"width": width, "height": height})
            wide = await page.evaluate("document.documentElement.scrollWidth")
            assert wide <= width, (theme, device, wide)
            await page.screenshot(
                path=shots / f"dashboard-{name}-{theme}-{device}.png", full_page=True
            )
