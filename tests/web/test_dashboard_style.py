"""The style on the dashboard's form (issue 36, items 1 and 2), against the real bot: the new
form's colour, footer, link, buttons and embed fields (rows added and removed without any
script, each refusal at its row's input), the edit form's thumbnail, what the preview shows,
and the whole in Chromium on a phone."""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest
import pytest_asyncio

from bot.models import Content, EmbedField, LinkButton, Style
from tests.bot.conftest import db_snapshot
from tests.fakediscord import Permissions as P

from .conftest import Site, browser_page, news_draft, serve_dashboard, without_rate_limits
from .test_dashboard_browser import log_in as browser_log_in
from .test_dashboard_field_errors import only_invalid_field, post_form
from .test_dashboard_list import log_in

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")

DOCS = Path(__file__).resolve().parents[2] / "docs"

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99"
    b"=\x1d\x00\x00\x00\x00IEND\xaeB`\x82"
)
"""A 1x1 PNG."""
TITLED = Content(title="Titled")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    async with serve_dashboard(tmp_path_factory.mktemp("style")) as s:
        without_rate_limits(s)
        s.world.guild.set_bot_permissions(
            P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.EMBED_LINKS
            | P.ATTACH_FILES
        )  # fmt: skip
        yield s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http(site: Site) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        await log_in(site, session, site.world.admin)
        yield session


def base(site: Site) -> dict[str, str]:
    return {"message": "Game night", "title": "Friday", "when": "in 2h",
            "channel": str(site.world.news.id)}  # fmt: skip


async def test_the_new_form_schedules_a_styled_post_with_fields_and_buttons(
    site: Site, http: aiohttp.ClientSession
) -> None:
    world, service = site.world, site.crier.bot.announcements
    fields = base(site) | {
        "color": "#ed4245",
        "footer": "See you {weekday}",
        "url": "https://example.org/game",
        "buttons": "Tickets | https://example.org/t\nRules | https://example.org/r",
        "fields_shown": "3",
        "field_name_1": "Where",
        "field_value_1": "Hall B",
        "field_inline_1": "on",
        "field_name_3": "Bring",  # row 2 left empty: the rows close up
        "field_value_3": "Snacks",
    }
    status, _ = await post_form(site, http, f"/g/{world.guild.id}/new", fields)
    assert status == 200
    [a] = (await service.listing(world.guild.id, 0, 10)).items
    assert a.rich.style == Style(
        color=0xED4245,
        footer="See you {weekday}",
        url="https://example.org/game",
        fields=(EmbedField("Where", "Hall B", True), EmbedField("Bring", "Snacks")),
        buttons=(
            LinkButton("Tickets", "https://example.org/t"),
            LinkButton("Rules", "https://example.org/r"),
        ),
    )
    # The announcement's page says it (with /info's words), the edit form holds it.
    async with http.get(f"{site.url}/g/{world.guild.id}/a/{a.local_id}") as resp:
        shown = await resp.text()
    assert "#ED4245" in shown
    assert "Tickets" in shown
    async with http.get(f"{site.url}/g/{world.guild.id}/a/{a.local_id}/edit") as resp:
        edit = await resp.text()
    assert 'name="color" maxlength="16" value="#ED4245"' in edit
    assert re.search(r'name="field_name_2"[^>]*value="Bring"', edit)
    assert "Tickets | https://example.org/t\nRules | https://example.org/r</textarea>" in edit
    # Posted as the form showed it.
    site.clock.advance(timedelta(hours=2))
    await site.crier.sched.wait_idle()
    [post] = site.fake.bot_messages(world.news)
    [embed] = post.embeds
    assert (embed["color"], embed["url"]) == (0xED4245, "https://example.org/game")
    assert embed["footer"]["text"] == "See you Friday"
    assert [(f["name"], f["value"], f.get("inline")) for f in embed["fields"]] == [
        ("Where", "Hall B", True),
        ("Bring", "Snacks", False),
    ]
    assert [b["label"] for row in post.components for b in row["components"]] == [
        "Tickets",
        "Rules",
    ]


async def test_a_template_saved_from_the_form_keeps_the_style_and_fills_it_in(
    site: Site, http: aiohttp.ClientSession
) -> None:
    world, service = site.world, site.crier.bot.announcements
    fields = base(site) | {
        "color": "#FEE75C", "buttons": "Map | https://example.org/map",
        "fields_shown": "1", "field_name_1": "Dress", "field_value_1": "Casual",
        "action": "save_template", "template_name": "styled",
    }  # fmt: skip
    status, _ = await post_form(site, http, f"/g/{world.guild.id}/new", fields)
    assert status == 200
    kept = await service.template(world.guild.id, "styled")
    assert kept.style == Style(
        color=0xFEE75C,
        fields=(EmbedField("Dress", "Casual"),),
        buttons=(LinkButton("Map", "https://example.org/map"),),
    )
    async with http.get(f"{site.url}/g/{world.guild.id}/new?template=styled") as resp:
        filled = await resp.text()
    assert 'name="color" maxlength="16" value="#FEE75C"' in filled
    assert re.search(r'name="field_value_1"[^>]*>Casual</textarea>', filled)


async def test_rows_are_added_and_removed_by_buttons_and_nothing_is_written(
    site: Site, http: aiohttp.ClientSession
) -> None:
    world = site.world
    path = f"/g/{world.guild.id}/new"
    before = await db_snapshot(site.crier)
    status, page = await post_form(site, http, path, base(site) | {"action": "add_field"})
    assert status == 200
    assert "f-field_name_1" in page.by_id
    assert "f-field_name_2" not in page.by_id
    rows = base(site) | {
        "fields_shown": "2", "field_name_1": "A", "field_value_1": "1",
        "field_name_2": "B", "field_value_2": "2", "field_inline_2": "on",
    }  # fmt: skip
    status, page = await post_form(site, http, path, rows | {"action": "remove_field_1"})
    assert status == 200
    assert page.by_id["f-field_name_1"]["value"] == "B"  # the second moved up, inline kept
    assert "f-field_name_2" not in page.by_id
    assert await db_snapshot(site.crier) == before


REFUSED_STYLE = [
    ({"color": "red"}, "color", "is not a colour"),
    ({"url": "http://example.org"}, "url", "Give one that starts with https://"),
    ({"buttons": "Tickets"}, "buttons", "is not a button"),
    ({"color": "#5865F2", "title": ""}, "color", "an embed only with a title"),
    (
        {"fields_shown": "2", "field_name_1": "A", "field_value_1": "1", "field_name_2": "B"},
        "field_value_2",
        "Field 2 needs both a name and a value",
    ),
    (
        {"fields_shown": "3", "field_name_1": "A", "field_value_1": "1", "field_name_3": "C"},
        "field_value_2",  # the empty row 2 taken out: the third row is now the second
        "Field 2 needs both a name and a value",
    ),
    (
        {"field_name_1": "When", "field_value_1": "{next} " * 60},
        "field_value_1",
        "Placeholders are counted at their longest",
    ),
    ({"field_name_1": "{nope}", "field_value_1": "x"}, "field_name_1", "not a placeholder"),
    ({"field_name_1": "n" * 257, "field_value_1": "x"}, "field_name_1", "is too long"),
    (
        {
            "message": "m" * 2000,
            "footer": "f" * 2000,
            **{f"field_{part}_{n}": "v" * 200 for n in range(1, 11) for part in ("name", "value")},
        },
        "field_value_10",
        "Discord allows 6000 in all",
    ),
]


@pytest.mark.parametrize(("fields", "field", "says"), REFUSED_STYLE)
async def test_a_refused_style_is_shown_at_its_field_and_writes_nothing(
    site: Site, http: aiohttp.ClientSession, fields: dict[str, str], field: str, says: str
) -> None:
    world = site.world
    before = await db_snapshot(site.crier)
    status, page = await post_form(site, http, f"/g/{world.guild.id}/new", base(site) | fields)
    assert status == 400
    assert only_invalid_field(page) == field
    assert says in " ".join(page.texts[f"f-{field}-error"].split())
    assert await db_snapshot(site.crier) == before
    typed = page.by_id[f"f-{field}"]
    if typed["tag"] == "input" and "is too long" not in says:  # what was typed is kept
        assert typed["value"] == fields[field]
    if fields.get("field_name_3") == "C":  # the refused row is the one shown as row 2
        assert page.by_id["f-field_name_2"]["value"] == "C"


async def test_the_edit_form_takes_a_thumbnail_previews_it_and_removes_it(
    site: Site, http: aiohttp.ClientSession
) -> None:
    world, service = site.world, site.crier.bot.announcements
    a, _ = await service.create(
        news_draft(site, "Edit me", site.clock.now() + timedelta(days=3), rich=TITLED)
    )
    path = f"{site.url}/g/{world.guild.id}/a/{a.local_id}/edit"
    async with http.get(path) as resp:
        csrf = re.search(r'name="csrf" value="([^"]+)"', await resp.text())
    assert csrf is not None
    form = aiohttp.FormData()
    for name, value in {"csrf": csrf[1], "action": "preview", "message": "Edit me",
                        "title": "Titled", "channel": str(world.news.id),
                        "update_posted": "on", "color": "#57F287"}.items():  # fmt: skip
        form.add_field(name, value)
    form.add_field("thumbnail", PNG, filename="logo.png", content_type="image/png")
    async with http.post(path, data=form) as resp:
        assert resp.status == 200
        previewed = await resp.text()
    assert 'class="embed-thumbnail" src="data:image/png;base64,' in previewed
    assert 'fill="#57F287"' in previewed
    assert (await service.get(world.guild.id, a.local_id)).rich.style == Style()  # a preview
    form = aiohttp.FormData()
    for name, value in {"csrf": csrf[1], "action": "save", "message": "Edit me",
                        "title": "Titled", "channel": str(world.news.id),
                        "update_posted": "on"}.items():  # fmt: skip
        form.add_field(name, value)
    form.add_field("thumbnail", PNG, filename="logo.png", content_type="image/png")
    async with http.post(path, data=form) as resp:
        assert resp.status == 200
    stored = await service.get(world.guild.id, a.local_id)
    assert stored.rich.style.thumbnail == "logo.png"
    thumbnail = await service.thumbnail(a.id)
    assert thumbnail is not None
    assert thumbnail.data == PNG
    status, _ = await post_form(
        site, http, path.removeprefix(site.url),
        {"message": "Edit me", "title": "Titled", "channel": str(world.news.id),
         "thumbnail_remove": "on"},
    )  # fmt: skip
    assert status == 200
    assert (await service.get(world.guild.id, a.local_id)).rich.style.thumbnail is None
    assert await service.thumbnail(a.id) is None


async def test_the_style_on_a_phone_in_chromium(site: Site, browser: Any, shots: Path) -> None:
    """At 390 px: the rows added and removed by their buttons (labelled by their number),
    the preview showing the embed as it will post (its colour, link, fields side by side,
    footer, buttons), nothing wider than the screen; saved, it posts that."""
    world, service = site.world, site.crier.bot.announcements
    async with browser_page(browser) as page:
        await page.set_viewport_size({"width": 390, "height": 844})
        await browser_log_in(page, site, world.admin)
        await page.goto(f"{site.url}/g/{world.guild.id}/new")
        await page.locator("textarea[name=message]").fill("Bring a friend: {date} at 8pm.")
        await page.get_by_label("Title", exact=True).fill("Game night")
        await page.get_by_label("Channel").select_option(str(world.news.id))
        await page.get_by_label("When", exact=True).fill("in 3h")
        await page.get_by_label("Colour").fill("#ED4245")
        await page.get_by_label("Footer").fill("Hosted by the games team")
        await page.get_by_label("Embed link").fill("https://example.org/game-night")
        await page.get_by_label("Link buttons").fill(
            "Tickets | https://example.org/tickets\nRules | https://example.org/rules"
        )
        for _ in range(3):
            await page.get_by_role("button", name="Add a field").click()
        rows = page.locator("fieldset.embed-field-row")
        assert await rows.count() == 3
        for n, (name, value) in enumerate([("Where", "Hall B"), ("x", "y"), ("Seats", "40")], 1):
            row = rows.nth(n - 1)
            await row.get_by_label("Name", exact=True).fill(name)
            await row.get_by_label("Value", exact=True).fill(value)
            await row.get_by_label("Side by side with its neighbours").check()
        await page.get_by_role("button", name="Remove field 2").click()
        assert await rows.count() == 2
        assert await rows.nth(1).get_by_label("Name", exact=True).input_value() == "Seats"
        await page.get_by_role("button", name="Preview").click()
        embed = page.locator(".preview .embed")
        await embed.wait_for()
        assert await embed.locator(".embed-title a").get_attribute("href") == (
            "https://example.org/game-night"
        )
        assert await embed.locator("svg.embed-bar rect").get_attribute("fill") == "#ED4245"
        assert await embed.locator(".embed-field.inline dt").all_inner_texts() == [
            "Where",
            "Seats",
        ]
        assert await embed.locator(".embed-footer").inner_text() == "Hosted by the games team"
        buttons = page.locator(".preview .link-buttons a")
        assert await buttons.all_inner_texts() == ["Tickets ↗", "Rules ↗"]
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390
        await page.locator(".preview").screenshot(path=str(shots / "styled-post.png"))
        await page.get_by_role("button", name="Schedule").click()
        await page.locator(".flash").wait_for()
    [a] = [x for x in (await service.listing(world.guild.id, 0, 20)).items
           if x.rich.title == "Game night"]  # fmt: skip
    assert [f.name for f in a.rich.style.fields] == ["Where", "Seats"]
    assert a.rich.style.color == 0xED4245


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the preview's screenshot goes: ``docs/styled-post.png`` with
    ``CRIER_SCREENSHOTS=1`` (``scripts/screenshots``), else a temporary directory."""
    if os.environ.get("CRIER_SCREENSHOTS") == "1":
        return DOCS
    return tmp_path_factory.mktemp("style-screenshots")
