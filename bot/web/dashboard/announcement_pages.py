"""A server's announcements: the list (filters, search, pages: the paged listing ``/list``
reads), one announcement (its next times, deliveries and history, as /info shows them), and
the changes /pause, /resume, /skip and /cancel make, through the same domain code, answered
with the same words. Every change re-reads the member from Discord first."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from aiohttp import web

from ...announcements import LIVE_STATES, AnnouncementState, ListFilter, feed_path
from ...i18n import t
from ...parsing.display import example_date
from ...parsing.placeholders import EVENT_LINK
from ...posting.reasons import said_reason
from ...render import canceled, info_facts, paused, resumed, skipped
from ...requests.checks import can_read, hidden_channels, require_readable
from .core import CONFIRMED, Confirmation
from .pages import ANNOUNCEMENT, GUILD, GuildPages, get, post

if TYPE_CHECKING:
    import discord

    from ...announcements import Details
    from .core import Viewer

log = logging.getLogger(__name__)

PAGE = 50
"""Announcements on one page of the list."""

FILTERS: dict[str, tuple[str, ListFilter]] = {
    "all": ("All", ListFilter()),
    "upcoming": ("Upcoming", ListFilter(states=(AnnouncementState.SCHEDULED,))),
    "recurring": ("Recurring", ListFilter(states=LIVE_STATES, recurring=True)),
    "paused": ("Paused", ListFilter(states=(AnnouncementState.PAUSED,))),
    "failed": ("Failed", ListFilter(failed=True)),
    "posted": ("Posted", ListFilter(posted=True)),
}
"""The list's filters: the name in the address, its label, the announcements it keeps."""


def filter_labels() -> dict[str, str]:
    """The filters' labels in the viewer's language."""
    return {
        "all": t("All"),
        "upcoming": t("Upcoming"),
        "recurring": t("Recurring"),
        "paused": t("Paused"),
        "failed": t("Failed"),
        "posted": t("Posted"),
    }


def page_number(raw: str) -> int:
    """The list page in the address (``?page=2``; from 1), as the listing's (from 0)."""
    return int(raw) - 1 if raw.isdigit() and 1 <= int(raw) <= 10**6 else 0


def list_url(show: str, query: str, page: int) -> str:
    """The address of list page ``page`` (from 0) with the same filter and search."""
    kept = {"show": "" if show == "all" else show, "q": query, "page": str(page + 1)}
    return "?" + urlencode({k: v for k, v in kept.items() if v})


def next_event_url(details: Details) -> str | None:
    """The link to the Discord event of the announcement's next occurrence, when it has been
    made (its post will carry a button to it)."""
    if not details.next_times:
        return None
    at = details.next_times[0].timestamp()
    for e in details.events:
        if e.fire_ts == at and e.state == "created" and e.event_id is not None:
            guild_id = details.announcement.guild_id
            return EVENT_LINK.format(guild_id=guild_id, event_id=e.event_id)
    return None


class AnnouncementPages(GuildPages):
    """The list, one announcement, and its pause, resume, skip and cancel."""

    @get(GUILD)
    async def listing(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """A page of the server's announcements in /list's order, filtered and searched."""
        who = await self.requester(request, viewer)
        show = request.query.get("show", "all")
        show = show if show in FILTERS else "all"
        query = request.query.get("q", "").strip()
        only = replace(FILTERS[show][1], text=query)
        found = await self.d.announcements.listing_page(
            who.guild.id, page_number(request.query.get("page", "")), PAGE, only
        )
        items = found.listing.items
        newer = list_url(show, query, found.page - 1) if found.page > 0 else None
        older = list_url(show, query, found.page + 1) if found.page + 1 < found.pages else None
        return self.d.render(
            "guild.html", viewer, guild=who.guild, items=items,
            next_fires=found.listing.next_fires, total=found.listing.total,
            hidden=hidden_channels(who.member, who.guild, (a.channel_id for a in items)),
            show=show, query=query, filters=filter_labels(),
            page=found.page + 1, pages=found.pages, newer=newer, older=older,
            flash=await self.d.flash(viewer), reason=said_reason,
            example_date=example_date(self.d.clock.now().astimezone(viewer.zone).date()),
        )  # fmt: skip

    @get(ANNOUNCEMENT)
    async def detail(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """One announcement, as /info shows it."""
        who = await self.requester(request, viewer)
        details = await self.d.announcements.info(who.guild.id, self.local_id(request))
        a = details.announcement
        hidden = not can_read(who.member, who.guild, a.channel_id)
        calendar = None
        if a.live and not hidden:
            calendar = await self._calendar(request, who.member, who.guild, a.local_id)
        return self.d.render(
            "announcement.html", viewer, guild=who.guild, a=a, facts=info_facts(details),
            shown=details.shown or a, hidden=hidden, flash=await self.d.flash(viewer),
            event_url=next_event_url(details), calendar=calendar,
        )  # fmt: skip

    async def _calendar(
        self, request: web.Request, member: discord.Member, guild: discord.Guild, local_id: int
    ) -> dict[str, str | None] | None:
        """The announcement's own calendar feed, for the page: its address (``url`` None:
        the server has none yet, ``/calendar`` makes it); None for a viewer who can't read
        every live announcement (the address opens the server's whole calendar)."""
        announcements = self.d.announcements
        live = await announcements.live(guild.id, 10**9)
        if hidden_channels(member, guild, (x.channel_id for x in live)):
            return None
        token = await announcements.calendar_token(guild.id)
        if token is None:
            return {"url": None}
        return {"url": self.d.public_url(request) + feed_path(token, local_id)}

    @post(ANNOUNCEMENT + "/{action:pause|resume|skip|cancel}", form=CONFIRMED)
    async def change(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """/pause, /resume, /skip or /cancel, answered with the command's words; a cancel
        only from its confirmation page (the first click asks, and changes nothing)."""
        who = await self.requester(request, viewer)
        guild_id, member_id, n = who.guild.id, who.member.id, self.local_id(request)
        announcements = self.d.announcements
        a = await announcements.get(guild_id, n)
        require_readable(who.member, who.guild, a)
        action = request.match_info["action"]
        if action == "cancel":
            ask = Confirmation(
                title=t("Cancel announcement #{id}?", id=n),
                question=t(
                    "Announcement #{id} in {channel} will not post again, and its coming "
                    "Discord events are canceled. A canceled announcement can't be brought "
                    "back.", id=n, channel=f"<#{a.channel_id}>",
                ),
                button=t("Cancel announcement #{id}", id=n),
                back=f"/g/{guild_id}/a/{n}",
                fields={},
            )  # fmt: skip
            asked = self.d.confirm_first(request, viewer, ask, who.guild)
            if asked is not None:
                return asked
        if action == "pause":
            answer = paused(await announcements.pause(guild_id, n, member_id))
        elif action == "resume":
            answer = resumed(*await announcements.resume(guild_id, n, member_id))
        elif action == "skip":
            answer = skipped(await announcements.skip(guild_id, n, member_id))
        else:
            answer = canceled(await announcements.cancel(guild_id, n, actor_id=member_id))
        log.info(
            "announcement #%d in guild %d: %s by %d on the dashboard", n, guild_id, action,
            member_id,
        )  # fmt: skip
        await self.d.sessions.set_flash(viewer.session, answer)
        raise web.HTTPSeeOther(f"/g/{guild_id}/a/{n}")
