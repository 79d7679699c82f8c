"""A member's request as the checks take it, built once at the door: a slash command's
interaction (:func:`bot.commands.door.requester`) or a dashboard form
(:mod:`bot.web.dashboard.forms`). Nothing past the door needs or passes a
``discord.Interaction``: the checks read who asks, where, in which locale, and the options.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import discord

from ..models import EventSpec, Style, Tidy
from ..parsing import RepeatRule
from ..parsing.skips import Skip


@dataclass(frozen=True, slots=True)
class Requester:
    """Who asks, and where: a member of a server (discord.py's objects, from the interaction
    or from the dashboard's cache and member fetch) and the locale that dates like ``24/12``
    are read by (``en-US``, ``fr``…; None when neither the member's nor the server's is
    known)."""

    guild: discord.Guild
    member: discord.Member
    locale: str | None = None


@dataclass(frozen=True, slots=True)
class KeptMentions:
    """An edit that leaves ``mention`` alone keeps what the announcement may ping, as it was
    decided when it was scheduled (a text edit never widens what it pings)."""

    mention: str | None
    allowed: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AnnouncementOptions:
    """The options of /schedule (or the dashboard's form) other than the message; kept while
    the form is open (the channel and role are looked up again when it is submitted).

    On /edit, an option left out carries the announcement's current value: ``when`` as a
    time already set (not parsed again), ``repeat`` as its rule, ``mention`` as
    :class:`KeptMentions`, ``until`` as its time."""

    when: str | datetime | None
    channel_id: int
    """Where to post (a command without ``channel``: where it was used)."""
    repeat: str | RepeatRule | None
    timezone: ZoneInfo | None
    mention_id: int | None
    kept_mentions: KeptMentions | None = None
    until: str | datetime | None = None
    title: str | None = None
    """Set: the post is an embed with this title (a forum post is named by it)."""
    silent: bool = False
    publish: bool | None = None
    """Publish the post (announcement channels; None: yes there)."""
    tags: str | tuple[int, ...] | None = None
    """A forum post's tags: names as typed (comma-separated), or on /edit the kept ids."""
    has_files: bool = False
    """A file is attached (the bot then needs Attach Files)."""
    event: bool | None = None
    """A Discord scheduled event for each occurrence: asked on or off (None: not said; on
    /edit, ``kept_event`` stays)."""
    event_location: str | None = None
    event_minutes: int | None = None
    event_channel_id: int | None = None
    kept_event: EventSpec | None = None
    """On /edit: the announcement's event as it is."""
    reminder: str | None = None
    """How long before each occurrence members are reminded, as typed (``15m``; ``none``:
    off; None: not said, ``kept_reminder`` stays)."""
    kept_reminder: float | None = None
    """On /edit: the announcement's reminder lead as it is (None: off)."""
    times: int | None = None
    """A repeating one ends after this many posts (None: no such end)."""
    skips: tuple[Skip, ...] = ()
    """The spans its rule does not post in (on /edit: the announcement's, kept when its
    rule changes, except those that hold no occurrence of the new rule)."""
    style: Style | None = None
    """Its embed's colour, footer, thumbnail, link and fields, and its link buttons, read
    (:mod:`bot.requests.style`) and still to be checked (None: none; on /edit, the
    announcement's as edited)."""
    as_name: str | None = None
    """The name its posts come from, as typed (``none``: the bot again; None: not said)."""
    as_avatar: bool = False
    """A new avatar for those posts is given (its bytes are read once everything passed)."""
    kept_as_name: str | None = None
    """On /edit: the name it posts as now (None: the bot)."""
    also_in: str | None = None
    """The other places it posts in, as typed (``#news #events``; ``none``: no other
    place; None: not said, ``kept_places`` stay)."""
    kept_places: tuple[int, ...] = ()
    """On /edit (and from a template): the other places it has, their channels' ids."""
    pin: bool | None = None
    """Pin each post (and unpin the one before): asked on or off (None: not said)."""
    replace: bool | None = None
    """Delete the post before once a new one is up (None: not said)."""
    delete_after: str | None = None
    """How long after it went up each post is deleted, as typed (``none``: kept; None: not
    said)."""
    kept_tidy: Tidy | None = None
    """On /edit (or from a template): what becomes of its posts as it is now."""


@dataclass(frozen=True, slots=True)
class AnnouncementRequest:
    """What :func:`bot.requests.validation.check_request` checks: who asks, the options, and
    the text to post (empty while the form to type it is still to be shown: everything else
    is checked first)."""

    requester: Requester
    options: AnnouncementOptions
    message: str = ""
