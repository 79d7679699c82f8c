"""The calendar feeds on the bot's web server: ``GET /calendar/<token>.ics`` (every scheduled
announcement of the server whose token it is) and ``GET /calendar/<token>/<number>.ics``
(one announcement's), as iCalendar (RFC 5545), for calendar apps to subscribe to.

What a feed lists is the domain's (:meth:`bot.announcements.Announcements.calendar_feed`:
read from the triggers the scheduler fires from). Here it is written with the ``icalendar``
library: each occurrence a VEVENT at its time in the announcement's zone (``TZID``, with a
VTIMEZONE made from the zone's own rules for the feed's days; a local time the zone has
twice, or not at all, is written in UTC instead, so it names exactly one instant), its UID
stable (the announcement, the occurrence's instant, the server), its SEQUENCE the number of
edits of the announcement.

Anyone may ask, so every request is cheap until its token is known: at most
:data:`FEED_LIMIT` requests per address (429 past it), the token's form checked by the
route, then one indexed read of its hash; an unknown token is a 404 at that cost, with no
call to Discord. A known one is served from a short cache (:data:`CACHE_SECONDS`, or until
an announcement of the server changes), with an ``ETag`` (a 304 for a client that has it);
the writing runs in a worker thread, off the bot's event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import icalendar
from aiohttp import web

from .. import i18n
from ..announcements import FEED_DAYS, NotFound
from .dashboard.throttle import RateLimit, client_address

if TYPE_CHECKING:
    from collections.abc import Callable

    from scheduler import Clock

    from ..announcements import Announcements, Feed, FeedEvent

log = logging.getLogger(__name__)

ADDRESS_PART = r"[A-Za-z0-9_-]{16,64}"
"""What a token looks like (``secrets.token_urlsafe(32)``: 43 such characters)."""
FEED_PATH = "/calendar/{token:" + ADDRESS_PART + "}.ics"
ANNOUNCEMENT_FEED_PATH = "/calendar/{token:" + ADDRESS_PART + r"}/{local_id:\d{1,9}}.ics"
FEED_LIMIT = (30, 60.0)
"""Feed requests from one address: at most this many per this many seconds (a calendar app
asks every few minutes at most)."""
CACHE_SECONDS = 60.0
"""How long a feed written is served again (unless an announcement of its server changes
before): the next occurrences move on with the time, so it is written again after this."""
CACHE_BYTES = 32 * 2**20
"""The most bytes of feeds kept written at once (the least recently asked for go first; a
feed is at most about 4 MB: :data:`~bot.announcements.FEED_EVENTS` occurrences)."""
MAX_DESCRIPTION = 4000
"""The most characters of an occurrence's text in its DESCRIPTION (a post has at most 2000,
placeholders aside)."""
RETRY_AFTER = 60
HEADERS = {
    # A private address: not to be kept by a shared cache; the client asks again with the
    # ETag it has (and gets a 304 when nothing changed).
    "Cache-Control": "private, no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@dataclass(frozen=True, slots=True)
class _Written:
    version: tuple[Any, ...]
    body: bytes
    etag: str


class CalendarFeeds:
    """The feed routes, their rate limit and their cache."""

    def __init__(
        self,
        announcements: Announcements,
        clock: Clock,
        *,
        behind_proxy: bool,
        guild_name: Callable[[int], str | None] | None = None,
    ) -> None:
        self.announcements = announcements
        self.clock = clock
        self.behind_proxy = behind_proxy
        self.guild_name = guild_name or (lambda _: None)
        self.requests: RateLimit[str] = RateLimit(clock, *FEED_LIMIT)
        self._written: OrderedDict[tuple[int, int | None], tuple[float, _Written]] = OrderedDict()

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get(FEED_PATH, self.server_feed),
            web.get(ANNOUNCEMENT_FEED_PATH, self.announcement_feed),
        ]

    async def server_feed(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, None)

    async def announcement_feed(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, int(request.match_info["local_id"]))

    async def _serve(self, request: web.Request, local_id: int | None) -> web.StreamResponse:
        if not self.requests.allow(client_address(request, self.behind_proxy)):
            return _plain(
                "Too many requests from your address just now: ask again in a minute.\n",
                429,
                {"Retry-After": str(RETRY_AFTER)},
            )
        try:
            guild_id = await self.announcements.calendar_guild(request.match_info["token"])
            if guild_id is None:
                return _not_found()
            written = await self._feed(guild_id, local_id)
        except NotFound:
            return _not_found()
        except Exception:
            error_id = uuid.uuid4().hex[:8]
            log.exception("calendar feed %s failed (error id %s)", request.rel_url.path, error_id)
            return _plain(
                f"The calendar can't be read just now (error id {error_id}): ask again later.\n",
                503,
                {"Retry-After": str(RETRY_AFTER)},
            )
        headers = {**HEADERS, "ETag": written.etag}
        if written.etag in _etags(request.headers.get("If-None-Match", "")):
            return web.Response(status=304, headers=headers)
        return web.Response(
            body=written.body,
            content_type="text/calendar",
            charset="utf-8",
            headers=headers,
        )

    async def _feed(self, guild_id: int, local_id: int | None) -> _Written:
        """The feed written, from the cache while it is recent and its server unchanged."""
        key = (guild_id, local_id)
        version = await self.announcements.calendar_version(guild_id)
        now = self.clock.time()
        found = self._written.get(key)
        if found is not None and found[0] > now and found[1].version == version:
            self._written.move_to_end(key)
            return found[1]
        feed = await self.announcements.calendar_feed(guild_id, local_id)
        name = self._name(feed)
        with i18n.speaking(feed.locale):
            notes = feed_notes(feed)
        body = await asyncio.to_thread(write_feed, feed, name, notes)
        written = _Written(version, body, '"' + hashlib.sha256(body).hexdigest()[:32] + '"')
        self._keep(key, now + CACHE_SECONDS, written)
        return written

    def _keep(self, key: tuple[int, int | None], until: float, written: _Written) -> None:
        """Keep ``written`` until ``until``, the least recently asked for dropped while all
        of them hold more than :data:`CACHE_BYTES`."""
        self._written.pop(key, None)
        self._written[key] = (until, written)
        kept = sum(len(w.body) for _, w in self._written.values())
        while kept > CACHE_BYTES and self._written:
            _, (_, dropped) = self._written.popitem(last=False)
            kept -= len(dropped.body)

    def _name(self, feed: Feed) -> str:
        server = self.guild_name(feed.guild_id) or f"Discord server {feed.guild_id}"
        if feed.local_id is None:
            return server
        return f"#{feed.local_id} · {server}"


def _etags(header: str) -> set[str]:
    """The entity tags an ``If-None-Match`` lists (``W/`` taken off: a weak match is
    enough for a GET)."""
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}


def _plain(text: str, status: int, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(text=text, status=status, headers={**HEADERS, **(headers or {})})


def _not_found() -> web.Response:
    return _plain(
        "No calendar at this address: it may have been replaced (/calendar reset), or the "
        "announcement may not exist.\n",
        404,
    )


def feed_notes(feed: Feed) -> list[str]:
    """What the feed says about itself (in the language in effect): how far it looks, and
    what its bounds left out."""
    notes = [
        i18n.t(
            "The announcements of the next {days} days, from crier. Skipped and paused "
            "occurrences are not listed.",
            days=FEED_DAYS,
        )
    ]
    if feed.capped:
        notes.append(
            i18n.t(
                "Announcements {ids} post more often than this calendar lists: only their "
                "next {count} occurrences are in it.",
                ids=", ".join(f"#{n}" for n in feed.capped),
                count=feed.most_each,
            )
        )
    if feed.cut:
        notes.append(
            i18n.t(
                "This calendar lists the next {count} occurrences only: later ones are left out.",
                count=feed.most,
            )
        )
    return notes


_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
"""The control characters RFC 5545's TEXT may not hold (tab and line breaks aside: the
library writes a line break as ``\\n``)."""


def _text(value: str) -> icalendar.vText:
    """``value`` as a TEXT value: its forbidden control characters taken out (the library
    would write them as they are), escaped by the library."""
    return icalendar.vText(_CONTROLS.sub("", value))


def write_feed(feed: Feed, name: str, notes: list[str]) -> bytes:
    """``feed`` as an iCalendar object (RFC 5545; UTF-8, CRLF lines folded at 75 octets,
    text escaped: the library's)."""
    cal = icalendar.Calendar()
    cal.add("prodid", "-//crier//calendar feed//EN")
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("method", "PUBLISH")
    cal.add("name", _text(name))  # RFC 7986, and the name most apps read:
    cal.add("x-wr-calname", _text(name))  # (an X- property given as TEXT: escaped as such)
    description = "\n".join(notes)
    cal.add("description", _text(description))
    cal.add("x-wr-caldesc", _text(description))
    cal.add("refresh-interval", timedelta(hours=1), parameters={"VALUE": "DURATION"})
    cal.add("x-published-ttl", timedelta(hours=1))
    zones: dict[str, ZoneInfo] = {}
    for e in feed.events:
        cal.add_component(_event(e, zones))
    cal.add_missing_timezones(
        first_date=(feed.start - timedelta(days=2)).date(),
        last_date=(feed.end + timedelta(days=2)).date(),
    )
    body: bytes = cal.to_ical()
    return body


def _event(e: FeedEvent, zones: dict[str, ZoneInfo]) -> icalendar.Event:
    zone = zones.get(e.zone)
    if zone is None:
        try:
            zone = ZoneInfo(e.zone)
        except (ZoneInfoNotFoundError, ValueError):
            zone = ZoneInfo("UTC")
        zones[e.zone] = zone
    event = icalendar.Event()
    event.add("uid", occurrence_uid(e))
    event.add("dtstamp", e.changed.astimezone(UTC))
    event.add("dtstart", _local(e.start, zone))
    if e.minutes:
        event.add("dtend", _local(e.start + timedelta(minutes=e.minutes), zone))
    event.add("sequence", e.sequence)
    event.add("summary", _text(e.summary))
    text = e.description
    if len(text) > MAX_DESCRIPTION:
        text = text[: MAX_DESCRIPTION - 1] + "…"
    event.add("description", _text(text))
    if e.location:
        event.add("location", _text(e.location))
    event.add("url", f"https://discord.com/channels/{e.guild_id}/{e.channel_id}")
    event.add("transp", "TRANSPARENT")  # an announcement does not make anyone busy
    return event


def occurrence_uid(e: FeedEvent) -> str:
    """An occurrence's UID, the same in every feed and every time it is written: its instant,
    its announcement (the bot's own id, never reused) and its server."""
    return f"{e.start.astimezone(UTC):%Y%m%dT%H%M%SZ}-{e.announcement_id}@{e.guild_id}.crier"


def _local(instant: datetime, zone: ZoneInfo) -> datetime:
    """``instant`` as its local time in ``zone``, or in UTC when that local time names
    another instant too (the hour a clock change repeats: a TZID time means its first)."""
    local = instant.astimezone(zone)
    plain = local.replace(fold=0)
    if plain.astimezone(UTC) != instant.astimezone(UTC):
        return instant.astimezone(UTC)
    return plain
