"""The read side: one announcement, a guild's listing, /info, an ``id`` option's choices,
and next delivery times."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from itertools import islice
from zoneinfo import ZoneInfo

from scheduler import ScheduleNotFound

from ..db import BotDb, EventRow, ReminderCounts
from ..db.listing import EVERY, ListFilter
from ..models import (
    Announcement,
    AnnouncementState,
    Draft,
    EventSpec,
    HistoryEntry,
    PastDelivery,
    Place,
    PlaceDelivery,
    PublishState,
    Tidy,
)
from ..parsing.placeholders import has_placeholders
from ..parsing.skips import Skip, still_to_come
from .course import NotFound, coming_fires, last_post
from .placeholders import (
    as_posted_at,
    counts_occurrences,
    event_link,
    occurrence_number,
    shown_texts,
    shows_event,
)
from .service import AnnouncementService


def coming_skips(a: Announcement, now: datetime) -> tuple[Skip, ...]:
    """A live recurring announcement's skipped dates still to come."""
    if not a.live or not a.repeat_skips:
        return ()
    return still_to_come(a.repeat_skips, ZoneInfo(a.timezone), now)


@dataclass(frozen=True, slots=True)
class Listing:
    items: list[Announcement]
    total: int
    next_fires: dict[int, datetime | None]
    published: dict[int, tuple[PublishState, str | None]] = field(default_factory=dict)
    """For a post to publish: how publishing its latest post stands, and why it failed."""
    skips: dict[int, tuple[Skip, ...]] = field(default_factory=dict)
    """A live recurring one's skipped dates still to come (none: left out)."""


@dataclass(frozen=True, slots=True)
class ListingPage:
    """One page of a guild's listing."""

    listing: Listing
    page: int
    """Its number, from 0 (the last page when the one asked for is past the end)."""
    pages: int
    """How many pages the listing has (at least one, empty)."""


@dataclass(frozen=True, slots=True)
class ReminderInfo:
    """What /info says of an announcement's reminders (:mod:`.reminders`)."""

    lead: float | None
    """How long before each occurrence (None: reminders are off)."""
    subscribers: int
    """The members who asked."""
    event: bool
    """Whether the members Interested in its Discord events are reminded too."""
    counts: tuple[ReminderCounts, ...]
    """How its latest occurrences' reminders went, newest first."""


async def reminder_info(rows: BotDb, announcement_id: int) -> ReminderInfo:
    return ReminderInfo(
        await rows.reminder_lead(announcement_id),
        await rows.subscriber_count(announcement_id),
        await rows.event_spec(announcement_id) is not None,
        tuple(await rows.reminder_counts(announcement_id, 1)),
    )


@dataclass(frozen=True, slots=True)
class Details:
    """Everything /info shows of one announcement."""

    announcement: Announcement
    next_times: list[datetime]
    """Its next delivery times (at most ``INFO_TIMES``), skipped occurrences left out."""
    skipped: list[datetime]
    """Occurrences still to come that were skipped (``/skip``)."""
    deliveries: list[PastDelivery]
    """Its latest recorded occurrences, newest first (at most ``INFO_DELIVERIES``)."""
    history: list[HistoryEntry]
    """Its latest changes, oldest first (at most ``INFO_HISTORY``)."""
    earlier_history: bool
    """Whether older changes than those in ``history`` exist."""
    files: tuple[str, ...] = ()
    """The names of the files uploaded with every post."""
    shown: Announcement | None = None
    """The announcement as its next occurrence will post it (placeholders rendered); None
    when none is to come."""
    event: EventSpec | None = None
    """The Discord event each occurrence gets (None: none)."""
    events: tuple[EventRow, ...] = ()
    """Its Discord events of occurrences still to come, made or being made, soonest first
    (and any Discord refused)."""
    reminders: ReminderInfo | None = None
    """Its reminders by DM: the lead, who asked, how the last ones went (None: not read)."""
    skips: tuple[Skip, ...] = ()
    """Its skipped dates still to come (``/skip``: part of its rule), in its zone."""
    posts_made: int = 0
    """How many posts it made (what ``times`` counts)."""
    posts_as: str | None = None
    """The name its posts come from (through a webhook; None: the bot)."""
    last_post: datetime | None = None
    """With ``times``: when it posts for the last time (None: nothing left, or no ``times``)."""
    places: tuple[Place, ...] = ()
    """The other places it posts in (``also_in``)."""
    place_deliveries: tuple[PlaceDelivery, ...] = ()
    """How the occurrences of ``deliveries`` went in the other places."""
    tidy: Tidy | None = None
    """What becomes of its posts (pin, replace, delete after; None: not read)."""
    post_problem: str | None = None
    """Why Discord last refused to pin, unpin or delete one of its posts (None: it didn't)."""


def as_edited(a: Announcement, draft: Draft) -> Announcement:
    """``a`` as the edit ``draft`` would leave it: what it posts, where, when and how it
    repeats (its id, number, state and history stay ``a``'s). An edit's preview renders it
    with :meth:`Reading.as_posted`, as the occurrence will post it."""
    rule = draft.repeat
    return replace(
        a,
        channel_id=draft.channel_id,
        content=draft.content,
        mention=draft.mention,
        allowed_mentions=draft.allowed_mentions,
        first_ts=draft.first.timestamp(),
        timezone=draft.timezone,
        repeat_kind=None if rule is None else rule.kind,
        repeat_cron=None if rule is None else rule.cron,
        repeat_every=None if rule is None or rule.every is None else rule.every.total_seconds(),
        repeat_words=None if rule is None else rule.words,
        repeat_nth=() if rule is None else rule.nth,
        repeat_step=None if rule is None else rule.step,
        repeat_skips=() if rule is None else rule.skips,
        times=draft.times,
        until_ts=None if draft.until is None else draft.until.timestamp(),
        rich=draft.rich,
    )


@dataclass(frozen=True, slots=True)
class IdChoices:
    """Announcements an ``id`` option may offer, with their next delivery times."""

    items: list[Announcement]
    next_fires: dict[int, datetime | None]


INFO_TIMES = 5
INFO_DELIVERIES = 5
INFO_HISTORY = 10
CHOICES_SCANNED = 200
"""How many of a guild's newest matching announcements an autocomplete looks through."""


class Reading(AnnouncementService):
    """Announcements found, listed and described, with their next times."""

    async def get(self, guild_id: int, local_id: int) -> Announcement:
        async with self.sched.reader() as db:
            found = await BotDb(db).announcement_by_local_id(guild_id, local_id)
        if found is None:
            raise NotFound(local_id)
        return found

    async def by_id(self, announcement_id: int) -> Announcement | None:
        async with self.sched.reader() as db:
            return await BotDb(db).announcement(announcement_id)

    async def live(self, guild_id: int, limit: int = 200) -> list[Announcement]:
        async with self.sched.reader() as db:
            return await BotDb(db).live_announcements(guild_id, limit)

    async def listing(
        self, guild_id: int, offset: int, limit: int, only: ListFilter = EVERY
    ) -> Listing:
        """A page of the guild's announcements (of those ``only`` keeps; ``total`` counts
        them): failures (and paused ones) newest first, then the scheduled ones by their next
        time, then the rest (sent, canceled) newest first.

        Each part is read a page at a time through its index, so a page costs about the same
        however many announcements the guild has (a ``text`` search reads the guild's rows)."""
        async with self.sched.reader() as db:
            rows = BotDb(db)
            counts = await rows.count_by_state(guild_id, only)
            troubled = sum(
                counts.get(s, 0) for s in (AnnouncementState.FAILED, AnnouncementState.PAUSED)
            )
            scheduled = counts.get(AnnouncementState.SCHEDULED, 0)
            items = []
            if offset < troubled:
                items = await rows.troubled_page(guild_id, limit, offset, only)
            fires: dict[int, datetime | None] = {a.id: None for a in items}
            if len(items) < limit and offset + len(items) < troubled + scheduled:
                upcoming_from = max(0, offset - troubled)
                upcoming = await rows.upcoming_page(
                    guild_id, limit - len(items), upcoming_from, only
                )
                for a, ts in upcoming:
                    items.append(a)
                    fires[a.id] = None if ts is None else datetime.fromtimestamp(ts, UTC)
            closed = sum(counts.values()) - troubled - scheduled
            if len(items) < limit and offset + len(items) < troubled + scheduled + closed:
                closed_from = max(0, offset - troubled - scheduled)
                for a in await rows.closed_page(guild_id, limit - len(items), closed_from, only):
                    items.append(a)
                    fires[a.id] = None
            published = {}
            for a in items:
                if a.rich.publish:
                    last = await rows.last_attempted_delivery(a.id)
                    if last is not None and last.publish_state is not None:
                        published[a.id] = (last.publish_state, last.publish_error)
        now = self.sched.clock.now()
        skips = {a.id: found for a in items if (found := coming_skips(a, now))}
        return Listing(items, sum(counts.values()), fires, published, skips)

    async def listing_page(
        self, guild_id: int, page: int, size: int, only: ListFilter = EVERY
    ) -> ListingPage:
        """Page ``page`` (from 0, of ``size`` announcements) of :meth:`listing`; one past
        the end is the last page."""
        found = await self.listing(guild_id, page * size, size, only)
        pages = max(1, -(-found.total // size))
        if page >= pages and page > 0:
            page = pages - 1
            found = await self.listing(guild_id, page * size, size, only)
        return ListingPage(found, page, pages)

    async def _next_fires(self, rows: list[Announcement]) -> dict[int, datetime | None]:
        """Next delivery times, with one read of the recurring ones' schedules (only theirs)."""
        recurring = {
            a.schedule_name
            for a in rows
            if a.schedule_name and a.state == AnnouncementState.SCHEDULED
        }
        found = await self.sched.schedules.get_many(recurring)
        schedules = {name: s.next_fire for name, s in found.items()}
        out: dict[int, datetime | None] = {}
        for a in rows:
            if a.state != AnnouncementState.SCHEDULED:
                out[a.id] = None
            elif a.schedule_name is None:
                out[a.id] = datetime.fromtimestamp(a.first_ts, UTC)
            else:
                out[a.id] = schedules.get(a.schedule_name)
        return out

    async def next_fire(self, a: Announcement) -> datetime | None:
        if a.state != AnnouncementState.SCHEDULED:
            return None
        if a.schedule_name is None:
            return datetime.fromtimestamp(a.first_ts, UTC)
        try:
            info = await self.sched.schedules.get(a.schedule_name)
        except ScheduleNotFound:
            return None
        return info.next_fire

    async def choices(
        self,
        guild_id: int,
        states: tuple[AnnouncementState, ...] | None,
        *,
        recurring: bool | None = None,
        id_prefix: str = "",
    ) -> IdChoices:
        """The guild's announcements in ``states`` (None: any), newest first, read at once;
        their next times come from one read of the schedules, and only if a recurring
        scheduled one is among them."""
        async with self.sched.reader() as db:
            rows = await BotDb(db).announcements_to_choose(
                guild_id, states, recurring=recurring, id_prefix=id_prefix,
                limit=CHOICES_SCANNED,
            )  # fmt: skip
        return IdChoices(rows, await self._next_fires(rows))

    async def info(self, guild_id: int, local_id: int) -> Details:
        """What /info shows: the announcement, its next times (from its schedule's trigger,
        or its one time if still to come), its latest deliveries and its change history.

        Raises :class:`NotFound` (also for another guild's number)."""
        now = self.sched.clock.now()
        async with self.sched.reader() as db:
            rows = BotDb(db)
            a = await rows.announcement_by_local_id(guild_id, local_id)
            if a is None:
                raise NotFound(local_id)
            skipped_ts = await rows.skipped_fire_times(a.id, now.timestamp())
            # Skipped occurrences still to come are recorded too; they are not deliveries yet.
            recorded = await rows.recent_deliveries(a.id, INFO_DELIVERIES + len(skipped_ts))
            history = await rows.history(a.id, INFO_HISTORY + 1)
            files = tuple(name for name, _ in await rows.image_names(a.id))
            event = await rows.event_spec(a.id)
            reminders = await reminder_info(rows, a.id)
            posts_as = (await rows.post_as_names([a.id])).get(a.id)
            tidy = await rows.tidy(a.id)
            problem = await rows.post_problem(a.id)
            events = tuple(
                e
                for e in await rows.events_of(a.id)
                if e.fire_ts > now.timestamp() and e.state in ("creating", "created", "failed")
            )
        deliveries = [d for d in recorded if d.fire_ts not in skipped_ts][:INFO_DELIVERIES]
        skipped = [datetime.fromtimestamp(ts, UTC) for ts in skipped_ts]
        next_times = await self._next_times(a, now, set(skipped_ts))
        skips = coming_skips(a, now)
        made = 0
        last = None
        if a.times is not None:
            async with self.sched.reader() as db:
                made = await BotDb(db).posts_made(a.id)
            if a.state == AnnouncementState.SCHEDULED:
                last = await last_post(self.sched, a)
        shown = None
        if next_times:
            locale = await self.posts_language(a.guild_id)
            shown = await self.as_posted(a, next_times[0].timestamp(), locale=locale)
        places, posted = await self._places_info(a.id, [d.fire_ts for d in deliveries])
        return Details(
            announcement=a,
            shown=shown,
            next_times=next_times,
            skipped=skipped,
            deliveries=deliveries,
            history=history[-INFO_HISTORY:],
            earlier_history=len(history) > INFO_HISTORY,
            files=files,
            event=event,
            events=events,
            reminders=reminders,
            skips=skips,
            posts_made=made,
            last_post=last,
            places=places,
            place_deliveries=posted,
            posts_as=posts_as,
            tidy=tidy,
            post_problem=None if problem is None else problem.error,
        )

    async def _places_info(
        self, ann_id: int, fire_times: list[float]
    ) -> tuple[tuple[Place, ...], tuple[PlaceDelivery, ...]]:
        """/info's other places: which, and how the occurrences shown went there."""
        async with self.sched.reader() as db:
            rows = BotDb(db)
            places = await rows.places(ann_id)
            posted = tuple(await rows.place_deliveries_of(ann_id, fire_times))
        return places, posted

    async def as_posted(
        self,
        a: Announcement,
        fire_ts: float,
        *,
        locale: str | None = None,
        event: str | None = None,
    ) -> Announcement:
        """``a`` as its occurrence at ``fire_ts`` posts it: its placeholders rendered in
        ``locale`` (None: English), ``{event}`` as ``event`` (the link its first attempt
        recorded; None: read now), the same for every attempt at that occurrence."""
        number, link = 1, event or ""
        if a.times is not None and has_placeholders(shown_texts(a)):
            a = await self.with_end(a)
        if counts_occurrences(a) or (event is None and shows_event(a)):
            async with self.sched.reader() as db:
                number = await occurrence_number(BotDb(db), a, fire_ts)
                if event is None and shows_event(a):
                    link = await event_link(BotDb(db), a, fire_ts)
        return as_posted_at(a, fire_ts, number, link, locale)

    async def with_end(self, a: Announcement) -> Announcement:
        """``a`` with its last post as its ``until`` when ``times`` ends it sooner (so that
        ``{next}`` says none after its last post, as the scheduler will post none)."""
        if a.times is None or not a.live:
            return a
        last = await last_post(self.sched, a)
        if last is None or (a.until_ts is not None and a.until_ts <= last.timestamp()):
            return a
        return replace(a, until_ts=last.timestamp())

    async def _next_times(
        self, a: Announcement, now: datetime, skipped: set[float]
    ) -> list[datetime]:
        """The next ``INFO_TIMES`` delivery times (none unless scheduled), skipped ones left
        out, stopping at ``until``."""
        if a.state != AnnouncementState.SCHEDULED:
            return []
        return list(islice(await coming_fires(self.sched, a, now, skipped), INFO_TIMES))
