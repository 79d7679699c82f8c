"""A refused form tells which field is wrong (issue 37), over plain HTTP against the real
bot: each refusal of the announcement form, from /schedule's own checks down to the form's,
is shown at the field it is about (``aria-invalid``, focused on load, described by the
refusal's words), named in the summary above the form, and the page's title starts with
"Error:"; a refusal of the form as a whole marks no field. Nothing is written."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import TYPE_CHECKING

import aiohttp
import pytest
import pytest_asyncio

from bot.announcements import LIVE_STATES, ListFilter
from tests.bot.conftest import db_snapshot

from .conftest import Site, news_draft, serve_dashboard, without_rate_limits
from .test_dashboard_list import log_in

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")


class Page(HTMLParser):
    """What a page says about its fields: each element's attributes by id, the invalid
    ones, the text of each element with an id, and the title."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.by_id: dict[str, dict[str, str]] = {}
        self.invalid: list[dict[str, str]] = []
        self.texts: dict[str, str] = {}
        self.links: list[str] = []
        self.title = ""
        self._open: list[tuple[str, str | None]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "a":
            self.links.append(found.get("href", ""))
        if "id" in found:
            self.by_id[found["id"]] = found | {"tag": tag}
        if found.get("aria-invalid") == "true":
            self.invalid.append(found | {"tag": tag})
        if tag not in ("input", "br", "meta", "link", "option"):
            self._open.append((tag, found.get("id")))

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            opened, _ = self._open.pop()
            if opened == tag:
                break

    def handle_data(self, data: str) -> None:
        for tag, element_id in self._open:
            if element_id is not None:
                self.texts[element_id] = self.texts.get(element_id, "") + data
            if tag == "title":
                self.title += data


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    """One bot for the module's many refusals (each writes nothing)."""
    async with serve_dashboard(tmp_path_factory.mktemp("fields")) as s:
        without_rate_limits(s)  # (the refusals per address: far more than a person's here)
        yield s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http(site: Site) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        await log_in(site, session, site.world.admin)
        yield session


async def post_form(
    site: Site, http: aiohttp.ClientSession, path: str, fields: dict[str, str]
) -> tuple[int, Page]:
    """The form at ``path`` posted with ``fields`` over what it shows (its CSRF token, its
    prefilled values); the status and the page answered."""
    async with http.get(site.url + path) as resp:
        assert resp.status == 200, path
        shown = await resp.text()
    csrf = re.search(r'name="csrf" value="([^"]+)"', shown)
    assert csrf is not None
    form = {"csrf": csrf[1], "action": "save", **fields}
    async with http.post(site.url + path, data=form) as resp:
        return resp.status, Page(await resp.text())


def only_invalid_field(page: Page) -> str:
    """The one field marked invalid, checked to be tied to the refusal: focused on load,
    described by the refusal's words (and its hint, if it has one), which the summary
    repeats after the field's name, linked to it."""
    [field] = page.invalid
    name, field_id = field["name"], field["id"]
    assert "autofocus" in field
    described = field["aria-describedby"].split()
    assert described[0] == f"{field_id}-error"
    assert all(d in page.by_id for d in described), described
    words = page.texts[f"{field_id}-error"].strip()
    summary = page.texts["form-error"]
    assert words
    assert words in " ".join(summary.split()), (words, summary)
    assert f"#{field_id}" in page.links
    assert page.title.startswith("Error: "), page.title
    return name


NEW_FORM = {"message": "Hello", "when": "in 1h"}

REFUSED_NEW = [
    ({"when": "someday maybe"}, "when", "I couldn't read that as a time"),
    ({"when": ""}, "when", "Please say when to post it"),
    ({"repeat": "every blue moon"}, "repeat", ""),
    ({"until": "tomorrow 9:00"}, "until", "until is for repeating announcements"),
    ({"repeat": "daily", "until": "in 5 minutes"}, "until", ""),
    ({"title": "x" * 300}, "title", "is too long: it may hold at most 256 characters"),
    ({"title": "{nope}"}, "title", "not a placeholder"),
    ({"message": "Hi {nope}"}, "message", "not a placeholder"),
    ({"message": "  "}, "message", "The message is empty"),
    ({"channel": ""}, "channel", "Pick the channel to post in."),
    ({"channel": "424242"}, "channel", "I can't find that channel"),
    ({"timezone": "Mars/Olympus_Mons"}, "timezone", ""),
    ({"mention": "no such role"}, "mention", "I can't find that role"),
    ({"event": "on", "event_minutes": "ninety"}, "event_minutes", "number of minutes"),
    ({"event": "on", "event_minutes": "0", "event_location": "Town hall"}, "event_minutes", ""),
    ({"event": "on"}, "event_location", ""),
    ({"event": "on", "event_location": "Hall", "event_channel": "1"}, "event_location", ""),
    ({"reminder": "soonish"}, "reminder", "isn't a length of time I can read"),
    ({"reminder": "30s"}, "reminder", "between 1 minute and 1 week"),
    ({"delete_after": "soonish"}, "delete_after", "isn't a length of time I can read"),
    ({"delete_after": "90 days"}, "delete_after", "between 1 minute and 30 days"),
    ({"pin": "on"}, "pin", "Pin Messages"),
    ({"action": "save_template", "template_name": " "}, "template_name", "needs a name"),
    ({"action": "save_template", "template_name": "n" * 41}, "template_name", "at most 40"),
]


@pytest.mark.parametrize(("fields", "field", "says"), REFUSED_NEW)
async def test_a_refusal_of_the_new_form_is_shown_at_its_field(
    site: Site, http: aiohttp.ClientSession, fields: dict[str, str], field: str, says: str
) -> None:
    world = site.world
    before = await db_snapshot(site.crier)
    status, page = await post_form(
        site, http, f"/g/{world.guild.id}/new",
        {**NEW_FORM, "channel": str(world.news.id), **fields},
    )  # fmt: skip
    assert status == 400
    assert only_invalid_field(page) == field
    assert says in page.texts[f"f-{field}-error"]
    assert await db_snapshot(site.crier) == before


async def test_a_refusal_of_the_edit_form_is_shown_at_its_field(
    site: Site, http: aiohttp.ClientSession
) -> None:
    world = site.world
    a, _ = await site.crier.bot.announcements.create(
        news_draft(site, "Edit me", site.clock.now().replace(year=2031))
    )
    path = f"/g/{world.guild.id}/a/{a.local_id}/edit"
    base = {"message": "Edit me", "channel": str(world.news.id), "update_posted": "on"}
    for fields, field in [
        ({"until": "tomorrow"}, "until"),
        ({"when": "yesterday 9:00"}, "when"),
        ({"event": "on"}, "event_location"),
        ({"reminder": "a fortnight-ish"}, "reminder"),
    ]:
        status, page = await post_form(site, http, path, base | fields)
        assert status == 400, fields
        assert only_invalid_field(page) == field, fields


async def test_a_refusal_of_the_whole_form_marks_no_field_and_is_focused_itself(
    site: Site, http: aiohttp.ClientSession
) -> None:
    """A refusal no field caused (here: the server's limit on announcements, reached) is
    shown above the form, focused, with no field marked."""
    world = site.world
    service = site.crier.bot.announcements
    await service.create(news_draft(site, "The only one", site.clock.now().replace(year=2031)))
    only_live = ListFilter(states=LIVE_STATES)
    live = (await service.listing_page(world.guild.id, 0, 1, only_live)).listing.total
    await service.change_guild_limits(world.guild.id, {"announcements": str(live)})
    try:
        status, page = await post_form(
            site, http, f"/g/{world.guild.id}/new", {**NEW_FORM, "channel": str(world.news.id)}
        )
    finally:
        await service.change_guild_limits(world.guild.id, {"announcements": "default"})
    assert status == 400
    assert page.invalid == []
    summary = page.by_id["form-error"]
    assert "autofocus" in summary
    assert summary["tabindex"] == "-1"
    assert page.title.startswith("Error: ")


async def test_a_refused_template_save_is_shown_at_its_field_with_what_was_typed(
    site: Site, http: aiohttp.ClientSession
) -> None:
    """The templates page's own form (save an announcement as a template) answers a
    refusal on the same page, at the field it is about, with what was typed kept: the
    name (empty, too long) or the announcement's number (not a number, not found)."""
    world = site.world
    a, _ = await site.crier.bot.announcements.create(
        news_draft(site, "Keep me", site.clock.now().replace(year=2031))
    )
    path = f"/g/{world.guild.id}/templates"
    before = await db_snapshot(site.crier)
    for fields, field, says in [
        ({"name": "weekly", "from": "twelve"}, "from", "Give the number of the announcement"),
        ({"name": "weekly", "from": "#9999"}, "from", "9999"),
        ({"name": " ", "from": str(a.local_id)}, "name", "needs a name"),
        ({"name": "n" * 41, "from": str(a.local_id)}, "name", "at most 40"),
    ]:
        status, page = await post_form(site, http, path, fields)
        assert status == 400, fields
        assert only_invalid_field(page) == field, fields
        assert says in page.texts[f"f-{field}-error"], (fields, page.texts[f"f-{field}-error"])
        for name, typed in fields.items():  # kept, but for a field too long (not repeated)
            kept = "" if len(typed) > 40 else typed
            assert page.by_id[f"f-{name}"]["value"] == kept, (name, page.by_id[f"f-{name}"])
    assert await db_snapshot(site.crier) == before
