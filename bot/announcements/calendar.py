"""A server's calendar feed (``/calendar``): its private address, and what the feed lists.

Each server has at most one secret token (``/calendar`` makes it, ``/calendar reset: true``
replaces it: the old address stops working). The feed lists every scheduled announcement's
occurrences of the next :data:`FEED_DAYS` days, read from the trigger its schedule fires
from (:func:`~bot.announcements.course.coming_fires`, as ``/info``, ``{next}``, the Discord
events and the reminders read them: its skipped dates left out, its ``until`` and its
``times`` respected), so it cannot disagree with the posts; a paused one is left out. Each
occurrence is named and described as its post says it (placeholders rendered for it, in the
posts' language). It is bounded: at most :data:`FEED_PER_ANNOUNCEMENT` occurrences of one
announcement and :data:`FEED_EVENTS` in all, the soonest first (the feed says which
announcements it cut). Turning it into iCalendar is the web server's
(:mod:`bot.web.calendar`)."""

from __future__ import annotations

import hashlib
import heapq
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..db import BotDb
from ..models import AnnouncementState
from .course import NotFound, coming_fires
from .events import shown_name
from .placeholders import (
    as_posted_at,
    counts_occurrences,
    event_url,
    occurrence_number,
    shows_event,
)
from .reading import Reading

if TYPE_CHECKING:
    from ..models import Announcement, EventSpec

FEED_DAYS = 90
"""How far ahead the feed lists occurrences."""
FEED_PER_ANNOUNCEMENT = 200
"""The most occurrences of one announcement the feed lists (the soonest): an announcement
every minute has 129,600 in 90 days."""
FEED_EVENTS = 1000
"""The most occurrences one feed lists in all (the soonest): with texts of 2,000
characters, about 4 MB of iCalendar and a second of writing."""
TOKEN_BYTES = 32
"""The secret's randomness (``secrets.token_urlsafe``: 43 characters)."""


def feed_path(token: str, local_id: int | None = None) -> str:
    """The path of the server's feed (``local_id``: of that announcement alone) on the web
    server."""
    if local_id is None:
        return f"/calendar/{token}.ics"
    return f"/calendar/{token}/{local_id}.ics"


def token_hash(token: str) -> str:
    """What a token is looked up by (SHA-256: the token is 256 random bits, so a fast hash
    is as strong as a slow one; the lookup never compares the token itself)."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class FeedEvent:
    """One occurrence in the feed, as its post shows it."""

    announcement_id: int
    local_id: int
    guild_id: int
    channel_id: int
    start: datetime
    """The occurrence's time (UTC), a fire time of its schedule's trigger."""
    zone: str
    """The announcement's time zone (the feed says the time in it)."""
    summary: str
    description: str
    minutes: int | None
    """How long its Discord event lasts (None: it has none; the entry is an instant)."""
    location: str | None
    sequence: int
    """How many times the announcement was edited (each edit raises it)."""
    changed: datetime
    """When the announcement last changed."""


@dataclass(frozen=True, slots=True)
class Feed:
    """What a server's (or one announcement's) feed lists, from ``start`` to ``end``."""

    guild_id: int
    local_id: int | None
    start: datetime
    end: datetime
    events: tuple[FeedEvent, ...]
    capped: tuple[int, ...]
    """The announcements (numbers) with more occurrences by ``end`` than
    :data:`FEED_PER_ANNOUNCEMENT`: only their soonest are listed."""
    cut: bool
    """The feed had more than :data:`FEED_EVENTS`: only the soonest are listed."""
    locale: str | None
    most: int = FEED_EVENTS
    """The bound it was held to (:data:`FEED_EVENTS`)."""
    most_each: int = FEED_PER_ANNOUNCEMENT
    """The bound each announcement was held to (:data:`FEED_PER_ANNOUNCEMENT`)."""


@dataclass(frozen=True, slots=True)
class CalendarAddress:
    """What ``/calendar`` answers: the server's token, and whether this call made it."""

    token: str
    new: bool
    replaced: bool = False
    """It replaced another (``reset``): the old address no longer works."""


class Calendars(Reading):
    """Each server's calendar feed: its address and what it lists."""

    async def calendar_address(
        self, guild_id: int, actor_id: int, *, reset: bool = False
    ) -> CalendarAddress:
        """The server's calendar token, made on the first call; ``reset``: a new one in
        place of the old, which stops working at once."""
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            found = await rows.calendar_token(guild_id)
            if found is not None and not reset:
                return CalendarAddress(found, new=False)
            token = secrets.token_urlsafe(TOKEN_BYTES)
            kept = await rows.set_calendar_token(
                guild_id, token, token_hash(token), actor_id, ctx.now.timestamp(), replace=reset
            )
        # Two first calls at once: one token, the first one's (the other finds it).
        return CalendarAddress(kept, new=kept == token, replaced=reset and found is not None)

    async def calendar_token(self, guild_id: int) -> str | None:
        """The server's calendar token, if one was made (nothing is made here)."""
        async with self.sched.reader() as db:
            return await BotDb(db).calendar_token(guild_id)

    async def calendar_guild(self, token: str) -> int | None:
        """The server whose feed ``token`` opens (None: none; one indexed read)."""
        async with self.sched.reader() as db:
            return await BotDb(db).calendar_guild(token_hash(token))

    async def calendar_version(self, guild_id: int) -> tuple[Any, ...]:
        """A value that changes whenever something the server's feed lists may have changed
        but the time (one indexed read)."""
        async with self.sched.reader() as db:
            return await BotDb(db).calendar_version(guild_id)

    async def calendar_feed(self, guild_id: int, local_id: int | None = None) -> Feed:
        """The server's feed (``local_id``: that announcement's alone; :class:`NotFound` if
        the server has no such number; one that is not scheduled lists nothing)."""
        now = self.sched.clock.now()
        end = now + timedelta(days=FEED_DAYS)
        async with self.sched.reader() as db:
            rows = BotDb(db)
            if local_id is None:
                found = await rows.live_announcements(guild_id, 10**9)
            else:
                one = await rows.announcement_by_local_id(guild_id, local_id)
                if one is None:
                    raise NotFound(local_id)
                found = [one]
            edits = await rows.edit_counts(guild_id)
        scheduled = [a for a in found if a.state == AnnouncementState.SCHEDULED]
        scheduled.sort(key=lambda a: a.local_id)
        kept: list[tuple[float, int, int]] = []  # (fire time, local number, announcement)
        capped: list[int] = []
        by_id = {a.id: a for a in scheduled}
        for a in scheduled:
            fires, more = await self._feed_fires(a, now, end)
            if more:
                capped.append(a.local_id)
            kept.extend((f.timestamp(), a.local_id, a.id) for f in fires)
            if len(kept) > 2 * FEED_EVENTS:
                kept = heapq.nsmallest(FEED_EVENTS + 1, kept)
        kept.sort()
        cut = len(kept) > FEED_EVENTS
        kept = kept[:FEED_EVENTS]
        locale = await self.posts_language(guild_id)
        events: list[FeedEvent] = []
        chosen: dict[int, list[float]] = {}
        for ts, _, ann_id in kept:
            chosen.setdefault(ann_id, []).append(ts)
        for ann_id, times in chosen.items():
            events += await self._feed_events(by_id[ann_id], times, edits.get(ann_id, 0), locale)
        events.sort(key=lambda e: (e.start, e.local_id))
        return Feed(
            guild_id, local_id, now, end, tuple(events), tuple(capped), cut, locale,
            FEED_EVENTS, FEED_PER_ANNOUNCEMENT,
        )  # fmt: skip

    async def _feed_fires(
        self, a: Announcement, now: datetime, end: datetime
    ) -> tuple[list[datetime], bool]:
        """Its occurrences after ``now`` up to ``end``, at most :data:`FEED_PER_ANNOUNCEMENT`
        (and whether it has more by then)."""
        async with self.sched.reader() as db:
            skipped = set(await BotDb(db).skipped_fire_times(a.id, now.timestamp()))
        out: list[datetime] = []
        for fire in await coming_fires(self.sched, a, now, skipped):
            if fire > end:
                break
            if len(out) >= FEED_PER_ANNOUNCEMENT:
                return out, True
            out.append(fire)
        return out, False

    async def _feed_events(
        self, a: Announcement, times: list[float], edits: int, locale: str | None
    ) -> list[FeedEvent]:
        """Its occurrences at ``times`` (its own, soonest first) as their posts show them."""
        shows = await self.with_end(a) if a.times is not None else a
        async with self.sched.reader() as db:
            rows = BotDb(db)
            spec = await rows.event_spec(a.id)
            first = 1
            if counts_occurrences(a):
                first = await occurrence_number(rows, a, times[0])
            links: dict[float, str] = {}
            if shows_event(a):
                links = {
                    e.fire_ts: event_url(a.guild_id, e.event_id)
                    for e in await rows.events_of(a.id)
                    if e.state == "created"
                }
        out = []
        changed = datetime.fromtimestamp(a.updated_at, UTC)
        for i, ts in enumerate(times):
            # Its number: the ones before it are not recorded yet (still to come).
            shown = as_posted_at(shows, ts, first + i, links.get(ts, ""), locale)
            out.append(
                FeedEvent(
                    announcement_id=a.id,
                    local_id=a.local_id,
                    guild_id=a.guild_id,
                    channel_id=a.channel_id,
                    start=datetime.fromtimestamp(ts, UTC),
                    zone=a.timezone,
                    summary=shown_name(shown),
                    description=shown.content,
                    minutes=None if spec is None else spec.minutes,
                    location=_location(a, spec),
                    sequence=edits,
                    changed=changed,
                )
            )
        return out


def _location(a: Announcement, spec: EventSpec | None) -> str | None:
    """Where its Discord event is: its location, or the link to its voice or stage channel."""
    if spec is None:
        return None
    if spec.location:
        return spec.location
    if spec.channel_id is not None:
        return f"https://discord.com/channels/{a.guild_id}/{spec.channel_id}"
    return None
