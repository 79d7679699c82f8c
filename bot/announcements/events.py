"""Discord scheduled events beside an announcement's posts: which occurrences have one,
and the job that makes Discord's events match (its action is
:class:`bot.posting.events.EventSync`).

Every change that may change an announcement's events (scheduled, edited, skipped,
canceled, paused, resumed) enqueues, in its own transaction, an ``announcements:events``
job (:func:`sync_events_later`). The job reads what the events should be now
(:meth:`EventPlans.event_plan`: one per occurrence from the next one on, the next one
whatever ``EVENT_LEAD_DAYS`` says and the later ones once they are within it, at most
``EVENTS_AHEAD`` of them: the next ones are made as those pass) and makes
Discord's match: creates the missing ones (the intent recorded first), edits the changed
ones, cancels those no longer wanted. Only one job works on one announcement's events at
a time (the scheduler's per-key concurrency, :func:`~.jobs.events_concurrency`): the others
wait for it, holding nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..config import default
from ..db import BotDb, EventRow
from ..models import Announcement, AnnouncementState, EventSpec
from .course import coming_fires
from .jobs import EVENTS_FN, EventsArgs, events_concurrency
from .placeholders import as_posted_at, occurrence_number
from .reading import Reading

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scheduler import TransactionContext


MAX_EVENT_NAME = 100
MAX_EVENT_DESCRIPTION = 1000
EVENTS_AHEAD = default("events_ahead")
"""The most future occurrences of one announcement that have an event at once
(``EVENTS_AHEAD``)."""


@dataclass(frozen=True, slots=True)
class EventShape:
    """What one occurrence's event shows."""

    name: str
    description: str
    start_ts: float
    end_ts: float
    spec: EventSpec

    @property
    def shows(self) -> str:
        """A fingerprint of all of it (kept with the event: an edit that changes it is sent)."""
        return json.dumps(
            [self.name, self.description, self.start_ts, self.end_ts, self.spec.location,
             self.spec.channel_id],
            separators=(",", ":"),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class EventPlan:
    """An announcement's events: what they should be, and what is recorded."""

    announcement: Announcement | None
    spec: EventSpec | None
    wanted: dict[float, EventShape]
    """The occurrences (fire times) that should have an event now, with what it shows."""
    rows: list[EventRow]
    later: float | None
    """When the next occurrence without an event comes within the lead time (None: none)."""


def event_shape(
    ann: Announcement, spec: EventSpec, fire_ts: float, number: int, locale: str | None = None
) -> EventShape:
    """The event of ``ann``'s occurrence at ``fire_ts``: named by its title, else the first
    line of its text (placeholders rendered in ``locale``, as its post says them; ``{event}``
    empty), described by its text."""
    shown = as_posted_at(ann, fire_ts, number, locale=locale)
    name = shown_name(shown)
    if len(name) > MAX_EVENT_NAME:
        name = name[: MAX_EVENT_NAME - 1] + "…"
    description = shown.content
    if len(description) > MAX_EVENT_DESCRIPTION:
        description = description[: MAX_EVENT_DESCRIPTION - 1] + "…"
    return EventShape(name, description, fire_ts, fire_ts + spec.minutes * 60.0, spec)


def shown_name(shown: Announcement) -> str:
    """What an occurrence is called (its Discord event, its calendar entry): the title it
    shows, else the first line of its text, else its number."""
    first_line = next((line.strip() for line in shown.content.splitlines() if line.strip()), "")
    return (shown.rich.title or first_line or f"Announcement #{shown.local_id}").strip()


async def sync_events_later(
    ctx: TransactionContext, announcement_id: int, *, edited: bool = False
) -> None:
    """In ``ctx``'s transaction (the change's): make the announcement's Discord events match
    it, by a job (none when it has no event settings and no events)."""
    rows = BotDb(ctx.db)
    if await rows.event_spec(announcement_id) is None and not await rows.events_of(announcement_id):
        return
    await ctx.scheduler.enqueue(
        EVENTS_FN,
        EventsArgs(announcement_id, edited=edited),
        name=f"events of announcement {announcement_id}",
        concurrency=events_concurrency(announcement_id),
    )


class EventPlans(Reading):
    """What an announcement's events should be."""

    async def event_spec(self, announcement_id: int) -> EventSpec | None:
        """The event each occurrence of the announcement gets (None: none)."""
        async with self.sched.reader() as db:
            return await BotDb(db).event_spec(announcement_id)

    async def events(self, announcement_id: int) -> list[EventRow]:
        """The announcement's events as recorded, by occurrence."""
        async with self.sched.reader() as db:
            return await BotDb(db).events_of(announcement_id)

    async def event_plan(
        self,
        announcement_id: int,
        lead: float,
        language: Callable[[int], Awaitable[str | None]] | None = None,
        ahead: int = EVENTS_AHEAD,
    ) -> EventPlan:
        """What the announcement's events should be now, named and described as its posts
        say them: in ``language(guild_id)`` (the posts' language as the poster finds it;
        None: :meth:`posts_language`); at most ``ahead`` of them, the occurrences soonest
        to come (when more are within the lead time, ``later`` is when the first of them
        passes: the next one's event is made then)."""
        now = self.sched.clock.now()
        async with self.sched.reader() as db:
            rows = BotDb(db)
            a = await rows.announcement(announcement_id)
            spec = await rows.event_spec(announcement_id)
            recorded = await rows.events_of(announcement_id)
            skipped = set(await rows.skipped_fire_times(announcement_id, now.timestamp()))
        if a is None or spec is None or a.state != AnnouncementState.SCHEDULED:
            return EventPlan(a, spec, {}, recorded, None)
        times = await self._event_times(a, now, skipped, lead, ahead)
        speaks = language if language is not None else self.posts_language
        locale = await speaks(a.guild_id)
        horizon = now.timestamp() + lead
        wanted: dict[float, EventShape] = {}
        later = None
        for i, fire in enumerate(times):
            ts = fire.timestamp()
            if i > 0 and ts > horizon:
                later = ts - lead
                break
            if i >= ahead:  # as many as it may have: the next once the first has passed
                later = times[0].timestamp()
                break
            async with self.sched.reader() as db:
                number = await occurrence_number(BotDb(db), a, ts)
            # Its number: the ones before it are not recorded yet (still to come).
            wanted[ts] = event_shape(a, spec, ts, number + i, locale)
        return EventPlan(a, spec, wanted, recorded, later)

    async def _event_times(
        self, a: Announcement, now: datetime, skipped: set[float], lead: float, ahead: int
    ) -> list[datetime]:
        """The occurrences from now on within ``lead``, at most ``ahead`` (the first always,
        and one more past the lead time or the count, which says when the next event is
        due), skipped ones left out."""
        out: list[datetime] = []
        horizon = now + timedelta(seconds=lead)
        for fire in await coming_fires(self.sched, a, now, skipped):
            if fire > now:
                out.append(fire)
                if fire > horizon or len(out) > ahead:
                    break
        return out
