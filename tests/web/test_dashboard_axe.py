"""Every page of the dashboard checked by axe-core (Deque's accessibility engine, bundled for
Playwright by ``axe-playwright-python``) with the WCAG 2.0 A/AA and 2.1 AA rules, in Chromium
against the real bot and the fake Discord: in the light and the dark theme
(``prefers-color-scheme``), at a desktop's width (1280 px) and a phone's (390 px). No page
may have a serious or critical violation (contrast, names, labels, structure).

With ``CRIER_AXE_REPORT=<file>`` the counts of serious and critical violations (the
elements each rule flags, summed) are also written to ``<file>`` as a Markdown table, a row
per page and a column per theme and width: how the closing notes of accessibility work
report before and after."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
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
    from collections.abc import AsyncIterator, Awaitable, Callable

pytestmark = pytest.mark.asyncio(loop_scope="module")

RULES = ["wcag2a", "wcag2aa", "wcag21aa"]
"""The axe tags run: WCAG 2.0 level A and AA, and what 2.1 adds at AA."""
BLOCKING = {"serious", "critical"}
THEMES = ("light", "dark")
WIDTHS = {1280: 800, 390: 844}
"""Viewport widths and their heights: a desktop, and a phone (an iPhone 12-15's CSS px)."""
REPORT = "CRIER_AXE_REPORT"


@dataclass
class Seeded:
    """The site, and what the pages show: announcements of every kind, a template, a failed
    job (in the operators' history), an empty server."""

    site: Site
    empty_guild_id: int
    job_id: int
    counts: dict[tuple[str, str, int], int] = field(default_factory=dict)
    """(page, theme, width): serious and critical elements, for the report."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def seeded(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Seeded]:
    async with serve_dashboard(tmp_path_factory.mktemp("axe")) as site:
        world = site.world
        service = site.crier.bot.announcements
        role = await role_the_bot_sees(site, "Raiders")
        guild_id = world.guild.id
        # 1: a one-off with a mention and markup; 2: a daily one, paused; 3: failed.
        await service.create(
            news_draft(
                site,
                f"<@&{role.id}> **before Thursday**: sign up in <#{world.general.id}>, "
                "starts <t:1900000000:R>",
                NOW + timedelta(hours=2),
                mention=f"role:{role.id}",
                allowed_mentions={"everyone": False, "roles": [role.id], "users": True},
            )
        )
        first = NOW + timedelta(hours=1)
        daily_rule = parse_repeat("daily", first, ZoneInfo("UTC"))
        daily, _ = await service.create(news_draft(site, "Daily standup", first, repeat=daily_rule))
        await service.pause(guild_id, daily.local_id, world.admin.id)
        world.general.set_overwrite(world.guild.bot_member, deny=P.SEND_MESSAGES)
        failed, _ = await service.create(
            news_draft(
                site, "Never posted", NOW + timedelta(minutes=1), channel_id=world.general.id
            )
        )
        site.clock.advance(timedelta(minutes=2))
        await site.crier.sched.wait_idle()
        assert failed.job_id is not None
        await service.save_template(
            Template(guild_id=guild_id, name="weekly", content="Weekly sync {date}",
                     title="Sync", channel_id=world.news.id, author_id=world.admin.id)
        )  # fmt: skip
        await service.calendar_address(guild_id, world.admin.id)  # its pages link a feed
        empty = site.fake.add_guild("Quiet Guild")
        empty.add_member(world.admin.user, roles=[empty.add_role("admins", P.MANAGE_GUILD)])
        seen = site.crier.bot
        await site.fake.wait_until(lambda: seen.get_guild(empty.id), what="the bot to see it")
        found = Seeded(site, empty.id, failed.job_id)
        yield found
        if os.environ.get(REPORT):
            write_report(Path(os.environ[REPORT]), found.counts)


def write_report(path: Path, counts: dict[tuple[str, str, int], int]) -> None:
    """The counts as a Markdown table: a row per page, a column per theme and width."""
    columns = [(theme, width) for theme in THEMES for width in WIDTHS]
    pages = list(dict.fromkeys(page for page, _, _ in counts))
    lines = [
        "| page | " + " | ".join(f"{theme} {width}" for theme, width in columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for page in pages:
        cells = [str(counts.get((page, theme, width), "")) for theme, width in columns]
        lines.append(f"| {page} | " + " | ".join(cells) + " |")
    path.write_text("\n".join(lines) + "\n")


async def goto(page: Any, url: str, status: int = 200) -> None:
    response = await page.goto(url)
    assert response.status == status, (url, response.status)


def at(path: str, status: int = 200) -> Callable[[Any, Seeded], Awaitable[None]]:
    """A visit to ``path`` (``{g}``: the server's id, ``{e}``: the empty server's,
    ``{job}``: the failed job's)."""

    async def visit(page: Any, s: Seeded) -> None:
        url = path.format(g=s.site.world.guild.id, e=s.empty_guild_id, job=s.job_id)
        await goto(page, s.site.url + url, status)

    return visit


async def refused_form(page: Any, s: Seeded) -> None:
    """The new-announcement form refused: a time that can't be read."""
    await goto(page, f"{s.site.url}/g/{s.site.world.guild.id}/new")
    await page.locator("textarea[name=message]").fill("Hello")
    await page.get_by_label("When", exact=True).fill("someday maybe")
    await page.get_by_role("button", name="Schedule").click()
    await page.locator("[role=alert]").first.wait_for()


async def previewed_form(page: Any, s: Seeded) -> None:
    """The new-announcement form with its preview."""
    await goto(page, f"{s.site.url}/g/{s.site.world.guild.id}/new?template=weekly")
    await page.get_by_label("When", exact=True).fill("in 2 hours")
    await page.get_by_role("button", name="Preview").click()
    await page.locator(".preview").wait_for()


async def styled_form(page: Any, s: Seeded) -> None:
    """The new-announcement form with a style: two embed field rows, and its preview."""
    await goto(page, f"{s.site.url}/g/{s.site.world.guild.id}/new?template=weekly")
    await page.get_by_label("When", exact=True).fill("in 2 hours")
    await page.get_by_label("Colour").fill("#ED4245")
    await page.get_by_label("Footer").fill("Hosted by the games team")
    await page.get_by_label("Embed link").fill("https://example.org/game-night")
    await page.get_by_label("Link buttons").fill("Tickets | https://example.org/t")
    for n, (name, value) in enumerate([("Where", "Hall B"), ("Seats", "40")], 1):
        await page.get_by_role("button", name="Add a field").click()
        row = page.locator("fieldset.embed-field-row").nth(n - 1)
        await row.get_by_label("Name", exact=True).fill(name)
        await row.get_by_label("Value", exact=True).fill(value)
        await row.get_by_label("Side by side with its neighbours").check()
    await page.get_by_role("button", name="Preview").click()
    await page.locator(".preview .embed-fields").wait_for()


async def places_refused(page: Any, s: Seeded) -> None:
    """The new-announcement form refused at its other places (its own channel ticked)."""
    await goto(page, f"{s.site.url}/g/{s.site.world.guild.id}/new?template=weekly")
    await page.get_by_label("When", exact=True).fill("in 2 hours")
    news = s.site.world.news
    await page.get_by_label("Channel", exact=True).select_option(str(news.id))
    await page.get_by_role("group", name="Also post in").get_by_label("#news").check()
    await page.get_by_role("button", name="Schedule").click()
    await page.locator("[role=alert]").first.wait_for()


def clicked(path: str, button: str) -> Callable[[Any, Seeded], Awaitable[None]]:
    """A visit to ``path``, then a click on ``button`` (a page reached by a form)."""

    async def visit(page: Any, s: Seeded) -> None:
        await at(path)(page, s)
        await page.get_by_role("button", name=button, exact=True).click()
        await page.locator("h1").wait_for()

    return visit


ANONYMOUS_PAGES: dict[str, Callable[[Any, Seeded], Awaitable[None]]] = {
    "login": at("/"),
}
MANAGER_PAGES: dict[str, Callable[[Any, Seeded], Awaitable[None]]] = {
    "server list": at("/"),
    "list": at("/g/{g}"),
    "list, filtered to nothing": at("/g/{g}?show=posted&q=nothing"),
    "list of an empty server": at("/g/{e}"),
    "announcement (one-off)": at("/g/{g}/a/1"),
    "announcement (paused)": at("/g/{g}/a/2"),
    "announcement (failed)": at("/g/{g}/a/3"),
    "new form": at("/g/{g}/new"),
    "new form from a template, previewed": previewed_form,
    "new form, refused": refused_form,
    "new form with a style, previewed": styled_form,
    "new form, its other places refused": places_refused,
    "edit form": at("/g/{g}/a/1/edit"),
    "cancel, asked first": clicked("/g/{g}/a/1", "Cancel announcement"),
    "templates": at("/g/{g}/templates"),
    "template delete, asked first": clicked("/g/{g}/templates", "Delete weekly"),
    "import": at("/g/{g}/import"),
    "not found": at("/g/{g}/a/99", 404),
}
OPERATOR_PAGES: dict[str, Callable[[Any, Seeded], Awaitable[None]]] = {
    "ops: jobs": at("/ops/jobs"),
    "ops: a job": at("/ops/jobs/{job}"),
    "ops: job cancel, asked first": clicked("/ops/jobs/{job}", "Cancel"),
    "ops: schedules": at("/ops/schedules"),
    "ops: runs": at("/ops/runs"),
    "ops: limits": at("/ops/limits?guild={g}"),
}


async def blocking_violations(page: Any) -> list[tuple[str, int, list[str]]]:
    """axe's serious and critical violations of the page: (rule, elements, their selectors)."""
    from axe_playwright_python.async_playwright import Axe

    results = await Axe().run(
        page,
        options={"runOnly": {"type": "tag", "values": RULES}, "resultTypes": ["violations"]},
    )
    return [
        (v["id"], len(v["nodes"]), [" ".join(map(str, n["target"])) for n in v["nodes"]][:4])
        for v in results.response["violations"]
        if v["impact"] in BLOCKING
    ]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def viewers(browser: Any, seeded: Seeded) -> AsyncIterator[dict[str, Any]]:
    """A page for each kind of viewer: nobody logged in, the server's manager, the
    instance's operator."""
    site = seeded.site
    async with (
        browser_page(browser) as anonymous,
        browser_page(browser) as manager,
        browser_page(browser) as operator,
    ):
        await log_in(manager, site, site.world.admin)
        await log_in(operator, site, site.fake.app_owner)
        yield {"anonymous": anonymous, "manager": manager, "operator": operator}


PAGES = {
    **{name: ("anonymous", visit) for name, visit in ANONYMOUS_PAGES.items()},
    **{name: ("manager", visit) for name, visit in MANAGER_PAGES.items()},
    **{name: ("operator", visit) for name, visit in OPERATOR_PAGES.items()},
}


@pytest.mark.parametrize("name", list(PAGES))
async def test_no_serious_or_critical_accessibility_violation_in_either_theme_or_width(
    viewers: dict[str, Any], seeded: Seeded, name: str
) -> None:
    """The page visited once, then checked in each theme at each width (the media and the
    viewport emulated on the page as it is)."""
    who, visit = PAGES[name]
    page = viewers[who]
    await page.emulate_media(color_scheme="light")
    await page.set_viewport_size({"width": 1280, "height": WIDTHS[1280]})
    await visit(page, seeded)
    found = []
    for theme in THEMES:
        await page.emulate_media(color_scheme=theme)
        for width, height in WIDTHS.items():
            await page.set_viewport_size({"width": width, "height": height})
            violations = await blocking_violations(page)
            seeded.counts[(name, theme, width)] = sum(count for _, count, _ in violations)
            found += [
                f"{theme}, {width} px: {rule} x{count} {where}" for rule, count, where in violations
            ]
    assert found == [], "\n".join(found)


TABLE_PAGES = ["list", "templates", "ops: jobs", "ops: schedules", "ops: runs"]
"""The pages that show a table of rows: on a phone each row is a card."""


@pytest.mark.parametrize("name", TABLE_PAGES)
async def test_on_a_phone_every_value_of_a_table_says_its_column(
    viewers: dict[str, Any], seeded: Seeded, name: str
) -> None:
    """At 390 px a table's header row is hidden and each row is a card: every cell that
    shows a value carries its column's name before it (``data-label``), so "once" or
    "scheduled" never stands unlabelled. A cell of buttons, of one link, or the row's
    number (``#3``: the card's heading) needs none."""
    who, visit = PAGES[name]
    page = viewers[who]
    await page.emulate_media(color_scheme="light")
    await page.set_viewport_size({"width": 390, "height": WIDTHS[390]})
    await visit(page, seeded)
    unlabelled = await page.evaluate(
        """() => [...document.querySelectorAll("table.list tbody td")]
            .filter(td => td.innerText.trim() !== "" && !td.querySelector("form, button")
                    && !td.classList.contains("number")
                    && !(td.children.length === 1 && td.children[0].tagName === "A"
                         && td.innerText.trim() === td.children[0].innerText.trim()))
            .filter(td => {
                const before = getComputedStyle(td, "::before").content;
                return before === "none" || before === "normal" || before === '""';
            })
            .map(td => td.cellIndex + ": " + td.innerText.trim().slice(0, 30))"""
    )
    rows = await page.locator("table.list tbody tr").count()
    assert rows > 0, f"{name}: the page shows no table to check"
    assert unlabelled == [], f"{name}: values without their column's name: {unlabelled}"
