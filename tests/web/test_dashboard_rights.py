"""Every route of the dashboard, asked by a manager who cannot see an announcement's channel
(issue 32: the edit form and its "save as template" showed and copied such an announcement,
whose file was then posted in #general through the template).

The table lists each route of the dashboard's router (every page family's marks) with the
request that comes closest to the hidden announcement through it and what must come of it:
``refused`` (403 or 404, nothing written), ``shown`` (its times and state shown, never its
text) or ``unrelated`` (the route names no announcement). A route the table does not list
fails the test: a new route is classified when it is added."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Literal

import aiohttp
import pytest

from bot.web.dashboard import PAGE_FAMILIES
from tests.bot.conftest import db_snapshot
from tests.bot.test_bulk_create import HOURLY
from tests.fakediscord.permissions import P

from .conftest import news_draft, serve_dashboard, without_rate_limits
from .test_dashboard_guards import log_in
from .test_dashboard_http import database_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from .conftest import Site

SECRET = "SECRET-7391"
"""In the hidden announcement's text and title: in no answer to the member."""

Kind = Literal["refused", "shown", "unrelated"]


@dataclass(frozen=True)
class Ask:
    """One request: its method, its path (``{g}``: the server, ``{n}``: the hidden
    announcement's number, ``{job}``: its job, ``{schedule}``: its schedule), its form, and
    the statuses it may get."""

    method: str
    path: str
    kind: Kind
    statuses: tuple[int, ...]
    form: dict[str, str] = field(default_factory=dict)


ROUTES: dict[tuple[str, str], list[Ask]] = {
    ("GET", "/"): [Ask("GET", "/", "unrelated", (200,))],
    ("GET", "/login"): [Ask("GET", "/login", "unrelated", (303,))],
    ("GET", "/auth/callback"): [Ask("GET", "/auth/callback", "unrelated", (400,))],
    ("GET", "/language"): [Ask("GET", "/language?lang=de", "unrelated", (303,))],
    ("POST", "/logout"): [Ask("POST", "/logout", "unrelated", (303,))],
    ("POST", "/timezone"): [
        Ask("POST", "/timezone", "unrelated", (303,), {"zone": "Europe/Paris"})
    ],
    ("GET", "/static/dashboard.css"): [Ask("GET", "/static/dashboard.css", "unrelated", (200,))],
    ("GET", "/g/{guild_id}"): [Ask("GET", "/g/{g}", "shown", (200,))],
    ("GET", "/g/{guild_id}/a/{local_id}"): [Ask("GET", "/g/{g}/a/{n}", "shown", (200,))],
    ("POST", "/g/{guild_id}/a/{local_id}/{action:pause|resume|skip|cancel}"): [
        Ask("POST", f"/g/{{g}}/a/{{n}}/{action}", "refused", (403,))
        for action in ("pause", "resume", "skip", "cancel")
    ],
    ("GET", "/g/{guild_id}/new"): [Ask("GET", "/g/{g}/new", "unrelated", (200,))],
    ("POST", "/g/{guild_id}/new"): [
        Ask(
            "POST",
            "/g/{g}/new",
            "unrelated",
            (200,),
            {
                "message": "Hello",
                "channel": "{general}",
                "when": "in 1h",
                "action": "preview",
            },
        )
    ],
    ("GET", "/g/{guild_id}/a/{local_id}/edit"): [
        Ask("GET", "/g/{g}/a/{n}/edit", "refused", (403,))
    ],
    ("POST", "/g/{guild_id}/a/{local_id}/edit"): [
        Ask(
            "POST",
            "/g/{g}/a/{n}/edit",
            "refused",
            (403,),
            {
                "message": "Moved",
                "channel": "{general}",
                "action": "save",
            },
        ),
        Ask(
            "POST",
            "/g/{g}/a/{n}/edit",
            "refused",
            (403,),
            {
                "message": "",
                "channel": "{general}",
                "action": "save_template",
                "template_name": "copied",
            },
        ),
        Ask(
            "POST",
            "/g/{g}/a/{n}/edit",
            "refused",
            (403,),
            {
                "message": "x",
                "channel": "{general}",
                "action": "preview",
            },
        ),
    ],
    ("GET", "/g/{guild_id}/templates"): [Ask("GET", "/g/{g}/templates", "unrelated", (200,))],
    ("POST", "/g/{guild_id}/templates"): [
        Ask("POST", "/g/{g}/templates", "refused", (403,), {"name": "copied", "from": "{n}"})
    ],
    ("POST", "/g/{guild_id}/templates/delete"): [
        Ask("POST", "/g/{g}/templates/delete", "unrelated", (400,), {"name": "none"})
    ],
    ("GET", "/g/{guild_id}/export"): [Ask("GET", "/g/{g}/export", "shown", (200,))],
    ("GET", "/g/{guild_id}/import"): [Ask("GET", "/g/{g}/import", "unrelated", (200,))],
    ("POST", "/g/{guild_id}/import"): [Ask("POST", "/g/{g}/import", "unrelated", (403,))],
    ("POST", "/g/{guild_id}/import/confirm"): [
        Ask("POST", "/g/{g}/import/confirm", "unrelated", (403,), {"token": "abc"})
    ],
    ("GET", "/ops"): [Ask("GET", "/ops", "unrelated", (404,))],
    ("GET", "/ops/jobs"): [Ask("GET", "/ops/jobs", "unrelated", (404,))],
    ("GET", "/ops/jobs/{job_id}"): [Ask("GET", "/ops/jobs/{job}", "refused", (404,))],
    ("GET", "/ops/shards"): [Ask("GET", "/ops/shards", "unrelated", (404,))],
    ("GET", "/ops/runs"): [Ask("GET", "/ops/runs", "unrelated", (404,))],
    ("POST", "/ops/jobs/{job_id}/{action:cancel|retry}"): [
        Ask("POST", "/ops/jobs/{job}/cancel", "refused", (404,))
    ],
    ("GET", "/ops/schedules"): [Ask("GET", "/ops/schedules", "unrelated", (404,))],
    ("POST", "/ops/schedules/{action:pause|resume|trigger}"): [
        Ask("POST", "/ops/schedules/pause", "refused", (404,), {"name": "{schedule}"})
    ],
    ("GET", "/ops/limits"): [Ask("GET", "/ops/limits?guild={g}", "unrelated", (404,))],
    ("POST", "/ops/limits"): [
        Ask("POST", "/ops/limits", "unrelated", (404,), {"guild": "{g}", "announcements": "5"})
    ],
    ("*", "/{anything:.*}"): [Ask("GET", "/g/{g}/a/{n}/anything", "unrelated", (404,))],
}


def dashboard_routes() -> set[tuple[str, str]]:
    """Every route the dashboard serves: each page family's marked handlers."""
    return {(r.method, r.path) for family in PAGE_FAMILIES for _, r in family.marked}


def test_the_table_lists_every_route_of_the_dashboard() -> None:
    assert set(ROUTES) == dashboard_routes()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as session:
        yield session


async def watched(site: Site, announcement_id: int) -> tuple[object, ...]:
    """What must not change: the hidden announcement's row, its job and schedule, and the
    templates (none may hold its text)."""
    snapshot = await db_snapshot(site.crier)
    rows = [r for r in snapshot.get("bot_announcements", []) if r[0] == announcement_id]
    return (
        rows,
        snapshot.get("scheduler_jobs"),
        snapshot.get("scheduler_schedules"),
        snapshot.get("bot_templates"),
    )


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_a_manager_who_cannot_see_the_channel_gets_nothing_of_its_announcement(
    kind: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with (
        database_url(kind, tmp_path) as url,
        serve_dashboard(tmp_path, database_url=url) as site,
    ):
        world, bot = site.world, site.crier.bot
        without_rate_limits(site)
        secret = world.guild.add_channel("secret")
        seen = bot.get_guild(world.guild.id)
        assert seen is not None
        await site.fake.wait_until(lambda: seen.get_channel(secret.id), what="#secret")
        carol = world.guild.add_member(name="carol", roles=world.admin.roles)  # a manager
        secret.set_overwrite(carol, deny=P.VIEW_CHANNEL)
        await site.fake.wait_until(
            lambda: (ch := seen.get_channel(secret.id)) is not None and ch.overwrites,
            what="the overwrite",
        )
        draft = news_draft(
            site, f"{SECRET} text", site.clock.now() + timedelta(hours=1), channel_id=secret.id
        )
        hidden, _ = await bot.announcements.create(draft)
        recurring = news_draft(site, "Hourly", site.clock.now() + timedelta(hours=1), repeat=HOURLY)
        schedule = (await bot.announcements.create(recurring))[0].schedule_name
        assert hidden.job_id is not None
        assert schedule is not None
        values = {
            "g": str(world.guild.id),
            "n": str(hidden.local_id),
            "general": str(world.general.id),
            "job": str(hidden.job_id),
            "schedule": schedule,
        }
        asked: set[tuple[str, str]] = set()
        for route, asks in ROUTES.items():
            for ask in asks:
                login = await log_in(site, http, carol)
                path = ask.path.format(**values)
                form = {k: v.format(**values) for k, v in ask.form.items()}
                before = await watched(site, hidden.id)
                async with http.request(
                    ask.method, site.url + path, data=form | {"csrf": login.csrf},
                    cookies=login.cookies, allow_redirects=False,
                ) as resp:  # fmt: skip
                    body = await resp.text(errors="replace")
                    status = resp.status
                where = f"{ask.method} {path} {form}"
                assert status in ask.statuses, (where, status, body[-600:])
                assert SECRET not in body, where
                assert await watched(site, hidden.id) == before, where
                if ask.kind == "shown" and "/a/" in path:
                    assert f"/a/{hidden.local_id}/edit" not in body, where  # no Edit button
                    assert f"/a/{hidden.local_id}/pause" not in body, where
                asked.add(route)
        assert asked == dashboard_routes()
