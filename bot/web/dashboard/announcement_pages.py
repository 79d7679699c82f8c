"""A server's announcements: the list (filters, search), one announcement (its next times,
deliveries and history, as /info shows them), and every change /schedule, /edit, /pause,
/resume, /skip and /cancel make, through the same domain code and validation, answered with
the same words.

A server's pages are for its managers only: any other viewer gets "not found", so no id of
one server is usable from another. Every change re-reads the member from Discord first."""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

import discord
from aiohttp import web

from ...announcements import Announcement, AnnouncementState, Draft
from ...limits import MAX_ANNOUNCEMENT_ID
from ...models import mention_markup
from ...parsing import InputError, resolve_timezone
from ...render import (
    canceled,
    confirmation,
    edit_reply,
    expected_answer,
    info_page,
    paused,
    resumed,
    skipped,
)
from ...requests.checks import can_read, require_manager
from ...requests.editing import EditOptions, edit_request, mention_option
from ...requests.validation import EMPTY_MESSAGE, ScheduleRequest, check_member_request
from .core import Dashboard, Form, Viewer, form_of

log = logging.getLogger(__name__)

FILTERS = {
    "all": "All",
    "upcoming": "Upcoming",
    "recurring": "Recurring",
    "paused": "Paused",
    "failed": "Failed",
    "posted": "Posted",
}
ZONES = sorted(available_timezones())
FORM_FIELDS = ("message", "title", "channel", "when", "repeat", "timezone", "mention", "until")


def shown(a: Announcement, show: str, query: str) -> bool:
    """Whether ``a`` is in the list filtered by ``show`` and searched for ``query``."""
    if query and query.lower() not in a.content.lower():
        return False
    if show == "upcoming":
        return a.state == AnnouncementState.SCHEDULED
    if show == "recurring":
        return a.recurring and a.live
    if show == "paused":
        return a.state == AnnouncementState.PAUSED
    if show == "failed":
        return a.state == AnnouncementState.FAILED or a.failure is not None
    if show == "posted":
        return a.last_message_id is not None
    return True


def title_change(current: str | None, typed: str) -> str | None:
    """The edit's ``title`` option from the form's field, prefilled with ``current``: None
    (kept) when unchanged, ``none`` (removed) when emptied."""
    typed = typed.strip()
    if typed == (current or ""):
        return None
    return typed or "none"


def locale_of(request: web.Request) -> str | None:
    """The browser's first language (``en-US``): how dates like ``24/12`` are read."""
    first = request.headers.get("Accept-Language", "").split(",")[0].split(";")[0].strip()
    return first or None


@dataclass(frozen=True, slots=True)
class PreviewFile:
    filename: str
    inline: str | None
    """A ``data:`` URL showing the image itself (small images only)."""


INLINE_IMAGE = 2 * 1024 * 1024
"""Images up to this size are shown in the preview itself."""


@dataclass(frozen=True, slots=True)
class Preview:
    channel: str
    text: str
    title: str | None
    """Set: the post is an embed with this title and ``text`` as its description."""
    silent: bool
    files: list[PreviewFile]
    notes: list[str]
    upcoming: tuple[datetime, ...]


def routes(d: Dashboard) -> list[web.RouteDef]:
    async def managed(request: web.Request, viewer: Viewer) -> tuple[discord.Guild, discord.Member]:
        """The server in the address and the viewer as its member, if they may manage its
        announcements (else 404). A change is checked against Discord now; a change by a
        member without the rights is refused with the command's answer."""
        raw = request.match_info["guild_id"]
        guild = d.client.get_guild(int(raw)) if raw.isdigit() else None
        if guild is None or guild.id not in viewer.session.guild_ids:
            raise web.HTTPNotFound()
        if request.method in ("GET", "HEAD"):
            found = await d.access.manager(viewer.session, guild.id, fresh=False)
            if found is None:
                raise web.HTTPNotFound()
            return found
        member = await d.access.member(guild, viewer.session.user_id, fresh=True)
        if member is None:
            raise web.HTTPNotFound()
        require_manager(member, await d.announcements.settings(guild.id))  # a Refusal: 403
        return guild, member

    def local_id(request: web.Request) -> int:
        raw = request.match_info["local_id"]
        if not raw.isdigit() or not 1 <= int(raw) <= MAX_ANNOUNCEMENT_ID:
            raise web.HTTPNotFound()
        return int(raw)

    async def listing(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        guild, member = await managed(request, viewer)
        show = request.query.get("show", "all")
        show = show if show in FILTERS else "all"
        query = request.query.get("q", "").strip()
        found = await d.announcements.choices(guild.id, None)
        items = [a for a in found.items if shown(a, show, query)]
        hidden = {a.channel_id for a in items if not can_read(member, guild, a.channel_id)}
        return d.render(
            "guild.html", viewer, guild=guild, items=items, next_fires=found.next_fires,
            hidden=hidden, show=show, query=query, filters=FILTERS, flash=await d.flash(viewer),
        )  # fmt: skip

    async def detail(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        guild, member = await managed(request, viewer)
        details = await d.announcements.info(guild.id, local_id(request))
        a = details.announcement
        hidden = not can_read(member, guild, a.channel_id)
        return d.render(
            "announcement.html", viewer, guild=guild, a=a, info=info_page(details, hidden),
            hidden=hidden, flash=await d.flash(viewer),
        )  # fmt: skip

    def form_page(
        viewer: Viewer,
        guild: discord.Guild,
        member: discord.Member,
        values: Mapping[str, str],
        *,
        editing: Announcement | None = None,
        error: str | None = None,
        preview: Preview | None = None,
    ) -> web.Response:
        postable: list[discord.TextChannel | discord.ForumChannel] = [
            *guild.text_channels,
            *guild.forums,
        ]
        channels: list[Any] = [c for c in postable if c.permissions_for(member).view_channel]
        if editing is not None and all(c.id != editing.channel_id for c in channels):
            current = guild.get_channel_or_thread(editing.channel_id)  # a thread, say
            if current is not None:
                channels.insert(0, current)
        roles = [r for r in reversed(guild.roles) if not r.is_default()]
        return d.render(
            "form.html", viewer, status=400 if error else 200, guild=guild, values=values,
            editing=editing, error=error, preview=preview, channels=channels, roles=roles,
            zones=ZONES,
        )  # fmt: skip

    def form_values(form: Form) -> dict[str, str]:
        return {k: form.get(k) for k in (*FORM_FIELDS, "silent", "update_posted")}

    def zone_of(text: str) -> ZoneInfo | None:
        return resolve_timezone(text.strip()) if text.strip() else None

    def channel_of(text: str) -> int:
        if not text.strip().isdigit():
            raise InputError("Pick the channel to post in.")
        return int(text)

    def preview_of(
        guild: discord.Guild, draft: Draft, notes: list[str], upcoming: tuple[datetime, ...]
    ) -> Preview:
        channel = guild.get_channel_or_thread(draft.channel_id)
        text = draft.content
        if draft.mention is not None:
            text = f"{mention_markup(draft.mention)} {text}"
        name = channel.name if channel else str(draft.channel_id)
        images = [
            PreviewFile(
                f.filename,
                f"data:{f.content_type};base64,{base64.b64encode(f.data).decode()}"
                if (f.content_type or "").startswith("image/") and len(f.data) <= INLINE_IMAGE
                else None,
            )
            for f in draft.images or ()
        ]
        return Preview(name, text, draft.rich.title, draft.rich.silent, images, notes, upcoming)

    async def new_form(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        guild, member = await managed(request, viewer)
        return form_page(
            viewer,
            guild,
            member,
            {"channel": str(guild.text_channels[0].id) if guild.text_channels else ""},
        )

    async def create(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        guild, member = await managed(request, viewer)
        form = form_of(request)
        values = form_values(form)
        image = form.files.get("image")
        try:
            message = values["message"]
            if not message.strip():
                raise InputError(EMPTY_MESSAGE)
            mention = values["mention"].strip()
            request_ = ScheduleRequest(
                when=values["when"].strip() or None,
                channel_id=channel_of(values["channel"]),
                repeat=values["repeat"].strip() or None,
                timezone=zone_of(values["timezone"]),
                mention_id=mention_option(guild, mention) if mention else None,
                until=values["until"].strip() or None,
                title=values["title"].strip() or None,
                silent=values["silent"] == "on",
                has_files=image is not None,
            )
            draft, notes, upcoming = await check_member_request(
                d.announcements, d.clock, guild, member, locale_of(request), request_, message
            )
            if image is not None:
                draft = replace(draft, images=(image,))
            if form.get("action") == "preview":
                return form_page(
                    viewer, guild, member, values, preview=preview_of(guild, draft, notes, upcoming)
                )
            announcement, first = await d.announcements.create(draft)
        except Exception as exc:
            known = expected_answer(exc)
            if known is None:
                raise
            return form_page(viewer, guild, member, values, error=known)
        log.info(
            "announcement %d (#%d) scheduled on the dashboard in guild %d channel %d by %d",
            announcement.id, announcement.local_id, guild.id, draft.channel_id, member.id,
        )  # fmt: skip
        await d.sessions.set_flash(
            viewer.session, confirmation(announcement, first, notes, upcoming)
        )
        raise web.HTTPSeeOther(f"/g/{guild.id}/a/{announcement.local_id}")

    async def edit_form(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        guild, member = await managed(request, viewer)
        a = await d.announcements.get(guild.id, local_id(request))
        values = {
            "message": a.content,
            "title": a.rich.title or "",
            "channel": str(a.channel_id),
            "silent": "on" if a.rich.silent else "",
            "update_posted": "on",
        }
        return form_page(viewer, guild, member, values, editing=a)

    async def edit(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        guild, member = await managed(request, viewer)
        current = await d.announcements.get(guild.id, local_id(request))
        form = form_of(request)
        values = form_values(form)
        try:
            message = values["message"]
            if not message.strip():
                raise InputError(EMPTY_MESSAGE)
            channel_id = channel_of(values["channel"])
            silent = values["silent"] == "on"
            options = EditOptions(
                when=values["when"].strip() or None,
                repeat=values["repeat"].strip() or None,
                channel_id=None if channel_id == current.channel_id else channel_id,
                timezone=zone_of(values["timezone"]),
                mention=values["mention"].strip() or None,
                until=values["until"].strip() or None,
                title=title_change(current.rich.title, values["title"]),
                silent=None if silent == current.rich.silent else silent,
            )
            request_, when_given = await edit_request(
                d.announcements, d.clock, guild, current, options
            )
            draft, notes, upcoming = await check_member_request(
                d.announcements, d.clock, guild, member, locale_of(request), request_, message
            )
            if form.get("action") == "preview":
                return form_page(
                    viewer,
                    guild,
                    member,
                    values,
                    editing=current,
                    preview=preview_of(guild, draft, notes, upcoming),
                )
            outcome = await d.announcements.edit(
                current, draft, when_given=when_given,
                update_posted=values["update_posted"] == "on", actor_id=member.id,
            )  # fmt: skip
        except Exception as exc:
            known = expected_answer(exc)
            if known is None:
                raise
            return form_page(viewer, guild, member, values, editing=current, error=known)
        if outcome.changes:
            log.info(
                "announcement %d (#%d) edited on the dashboard in guild %d by %d: %s",
                current.id, current.local_id, guild.id, member.id,
                ", ".join(c.field for c in outcome.changes),
            )  # fmt: skip
        await d.sessions.set_flash(viewer.session, edit_reply(outcome, notes))
        raise web.HTTPSeeOther(f"/g/{guild.id}/a/{current.local_id}")

    async def change(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        guild, member = await managed(request, viewer)
        n = local_id(request)
        action = request.match_info["action"]
        if action == "pause":
            answer = paused(await d.announcements.pause(guild.id, n, member.id))
        elif action == "resume":
            answer = resumed(*await d.announcements.resume(guild.id, n, member.id))
        elif action == "skip":
            answer = skipped(await d.announcements.skip(guild.id, n, member.id))
        elif action == "cancel":
            answer = canceled(await d.announcements.cancel(guild.id, n, actor_id=member.id))
        else:
            raise web.HTTPNotFound()
        log.info(
            "announcement #%d in guild %d: %s by %d on the dashboard",
            n,
            guild.id,
            action,
            member.id,
        )
        await d.sessions.set_flash(viewer.session, answer)
        raise web.HTTPSeeOther(f"/g/{guild.id}/a/{n}")

    g = "/g/{guild_id}"
    a = g + "/a/{local_id}"
    return [
        web.get(g, d.page(listing)),
        web.get(g + "/new", d.page(new_form)),
        web.post(g + "/new", d.page(create)),
        web.get(a, d.page(detail)),
        web.get(a + "/edit", d.page(edit_form)),
        web.post(a + "/edit", d.page(edit)),
        web.post(a + "/{action}", d.page(change)),
    ]
