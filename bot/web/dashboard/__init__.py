"""The web dashboard: server managers manage their announcements in a browser, the
instance's operators see the scheduler's jobs and schedules.

Served by the bot process on the same aiohttp application as ``/healthz`` and ``/metrics``
(:func:`add_dashboard` adds its routes), when ``DISCORD_CLIENT_SECRET`` is set. Every change
goes through the same domain code and validation as the slash commands (the form is read
into the request :func:`bot.requests.validation.check_request` takes;
:class:`bot.announcements.Announcements`), and is answered with the same words. Pages are
rendered on the server (Jinja2, autoescaped) with plain forms; no script runs on them.

The package is put together here: the frame (:mod:`.core`), then each page family on it
(:mod:`.pages`; one class per family, its handlers marked with their routes), registered in
:func:`add_dashboard` alone. The frame imports no page, and no page imports another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler import Clock, Scheduler

from ...announcements import Announcements
from ...config import Settings
from .announcement_pages import AnnouncementPages
from .auth_pages import HomePages, NotFoundPages
from .core import Dashboard
from .form_pages import FormPages
from .operator_pages import OperatorPages
from .transfer_pages import TransferPages

if TYPE_CHECKING:
    import discord
    from aiohttp import web

    from scheduler import Clock, Scheduler

    from ...announcements import Announcements
    from ...config import Settings
    from ..gateway import GatewayStatus
    from .pages import Pages

__all__ = ["PAGE_FAMILIES", "Dashboard", "add_dashboard"]

PAGE_FAMILIES: tuple[type[Pages], ...] = (
    HomePages,
    AnnouncementPages,
    FormPages,
    OperatorPages,
    TransferPages,
    NotFoundPages,
)
"""Every page family the dashboard serves (the not-found page last: it takes any address)."""


def add_dashboard(
    app: web.Application,
    *,
    announcements: Announcements,
    sched: Scheduler,
    client: discord.Client,
    settings: Settings,
    clock: Clock,
    gateway: GatewayStatus | None = None,
) -> Dashboard:
    """Serve the dashboard on ``app`` (before it starts): the frame, and every page family's
    routes on it (``gateway``: the shards shown to operators)."""
    dashboard = Dashboard(
        announcements=announcements,
        sched=sched,
        client=client,
        settings=settings,
        clock=clock,
        gateway=gateway,
    )
    for family in PAGE_FAMILIES:
        app.add_routes(family(dashboard).routes())
    return dashboard
