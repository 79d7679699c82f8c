"""/edit's domain: an announcement changed into a new draft in one transaction (what changed
is worked out in :mod:`bot.announcements.diff`)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from scheduler import ScheduleNotFound, TransactionContext

from ..db import BotDb
from ..i18n import t
from ..models import (
    Announcement,
    AnnouncementState,
    DeliveryState,
    Draft,
    EventSpec,
    HistoryAction,
    PastDelivery,
    Tidy,
)
from .course import NotFound, change_until, end_if_past_until
from .diff import (
    SHOWN,
    TIMING,
    Change,
    Field,
    changes,
    event_change,
    history_detail,
    places_change,
    reminder_change,
    tidy_changes,
)
from .events import sync_events_later
from .guards import check_repeat
from .jobs import SEND_FN, enqueue_delivery, enqueue_post_update, schedule_name
from .lifecycle import Lifecycle
from .places import update_places_later
from .post_as import post_as_change, store_post_as
from .previous import edit_tidy
from .reading import Reading, as_edited
from .reminders import remind_later, take_back_reminders

if TYPE_CHECKING:
    from collections.abc import Collection


class NotEditable(ValueError):
    """The edit can't be made as asked; ``str(e)`` says why (shown to the member)."""


class PostedUpdate(StrEnum):
    """What an edit does to the message already posted for the announcement."""

    NONE = "none"
    """Nothing: no post, or nothing it shows changed."""
    QUEUED = "queued"
    """It is edited in place (a durable job)."""
    LEFT = "left"
    """It is left as it was (``update_posted: false``)."""
    AFTER_SEND = "after_send"
    """An occurrence is being posted right now; it is brought up to date once it is."""
    UNAVAILABLE = "unavailable"
    """It can no longer be updated (deleted, or the announcement moved to another channel)."""


@dataclass(frozen=True, slots=True)
class EditOutcome:
    before: Announcement
    after: Announcement
    changes: list[Change]
    next_fire: datetime | None
    posted: PostedUpdate
    message_id: int | None = None
    """The posted message concerned by ``posted``."""
    event_before: EventSpec | None = None
    event_after: EventSpec | None = None
    """The Discord event each occurrence got before the edit, and gets after it."""
    reminder_before: float | None = None
    reminder_after: float | None = None
    """How long before each occurrence members were reminded, and are (None: off)."""
    tidy_before: Tidy = field(default_factory=Tidy)
    tidy_after: Tidy = field(default_factory=Tidy)
    """What became of its posts before the edit (pin, replace, delete after), and does."""


MOVED = "the announcement moved to <#{}>: this post is no longer updated"


def being_posted(n: int) -> str:
    """The refusal of a new time for a one-off that is being posted right now."""
    return t(
        "Announcement #{id} is being posted right now, so its time can't change. Try again in "
        "a moment (its message can still be edited).", id=n,
    )  # fmt: skip


class Editing(Lifecycle, Reading):
    """Edit announcements."""

    async def anchor(self, a: Announcement) -> datetime:
        """Where a new rule starts when an edit changes how ``a`` repeats (or its zone) but
        not its ``when``: the occurrence that would have come next (a due one not yet posted
        included), else its first time. One indexed read, however many deliveries of other
        announcements are pending."""
        if a.schedule_name is not None:
            async with self.sched.reader() as db:
                first = await BotDb(db).next_occurrence(a.schedule_name, SEND_FN)
            if first is not None:
                return datetime.fromtimestamp(first, UTC)
        return datetime.fromtimestamp(a.first_ts, UTC)

    async def edit(
        self,
        before: Announcement,
        draft: Draft,
        *,
        when_given: bool,
        update_posted: bool,
        actor_id: int,
    ) -> EditOutcome:
        """Change ``before`` into ``draft`` in one transaction: the row, its job or schedule,
        the history entry and the update of its posted message. Raises :class:`NotEditable`
        (nothing written) when the change can't be made; an edit that changes nothing writes
        nothing."""
        next_before = await self.next_fire(before)
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            a = await _unchanged(rows, before)
            found = changes(a, draft, when_given=when_given, next_before=next_before)
            event_before = await rows.event_spec(a.id)
            event = event_change(event_before, draft.event)
            if event is not None:
                found.append(event)
            reminder_before = await rows.reminder_lead(a.id)
            reminder = reminder_change(reminder_before, draft.reminder)
            if reminder is not None:
                found.append(reminder)
            post_as = post_as_change(await rows.post_as(a.id), draft)
            if post_as is not None:
                found.append(post_as)
            places = places_change(await rows.places(a.id), draft.places)
            if places is not None:
                found.append(places)
            tidy_before = await rows.tidy(a.id)
            tidy_after = tidy_before if draft.tidy is None else draft.tidy
            found += tidy_changes(tidy_before, tidy_after)
            if not found:
                return EditOutcome(a, a, [], next_before, PostedUpdate.NONE)
            fields = {c.field for c in found}
            last = await rows.last_attempted_delivery(a.id)
            check_editable(
                a, fields, last_sending=last is not None and last.state == DeliveryState.SENDING
            )
            if Field.REPEAT in fields and draft.repeat is not None:
                limits = await self.limits_in(rows, a.guild_id)
                check_repeat(limits, draft.repeat, ZoneInfo(draft.timezone), draft.first)
            now = ctx.now.timestamp()
            revision = a.revision + (1 if fields & SHOWN else 0)
            await rows.update_announcement(a.id, draft, revision, now)
            await self._store_images(rows, a.id, draft, now)
            if Field.UNTIL in fields:  # the row as edited: it may have just become recurring
                await change_until(ctx, await _written(rows, a.id), draft.until)
            if fields & TIMING and a.live:
                await self._replan(ctx, a, draft, now)
            elif Field.CHANNEL in fields and a.live and self.send_spacing > 0:
                # The jobs carry their channel's pace: made again with the new channel's.
                await self._replan(ctx, a, draft, now, moving=True)
            if event is not None:
                await rows.set_event_spec(a.id, a.guild_id, draft.event)
            await sync_events_later(ctx, a.id, edited=True)  # moved, changed or canceled
            if reminder is not None:
                await rows.set_reminder_lead(a.id, a.guild_id, draft.reminder)
            if places is not None:
                await rows.set_places(a.id, a.guild_id, draft.places)
            if reminder is not None or fields & TIMING:
                await take_back_reminders(ctx, a.id)  # none sent for a time it left
            await remind_later(ctx, a.id)  # its next reminders, at their new times
            if post_as is not None:
                await store_post_as(self, rows, a.id, draft)
            await edit_tidy(ctx, a.id, a.guild_id, tidy_before, tidy_after)  # if changed
            detail = history_detail(found)
            await rows.add_history(a.id, HistoryAction.EDITED, actor_id, now, detail)
            # Nothing left before a new until: done.
            await end_if_past_until(ctx, await _written(rows, a.id))
            message_id = None if last is None else last.message_id
            posted = await _posted_update(
                ctx, a, draft, fields, last, update_posted, revision, quiet=self.edit_quiet
            )
            after = await _written(rows, a.id)
        return EditOutcome(
            a, after, found, await self.next_fire(after), posted, message_id,
            event_before, draft.event, reminder_before, draft.reminder, tidy_before, tidy_after,
        )  # fmt: skip

    async def as_edited_posted(
        self,
        a: Announcement,
        draft: Draft,
        *,
        when_given: bool,
        upcoming: tuple[datetime, ...],
    ) -> Announcement:
        """``a`` edited into ``draft`` as its next occurrence will post it (an edit's
        preview), rendered by :meth:`Reading.as_posted` as /info renders it: its real
        ``{occurrence}`` number and ``{event}`` link. The next occurrence is the one /info
        names when the edit leaves the timing as it is, else the first of ``upcoming`` (the
        edited draft's first times)."""
        now = self.sched.clock.now()
        next_before = await self.next_fire(a)
        found = changes(a, draft, when_given=when_given, next_before=next_before)
        times: list[datetime] = []
        if not TIMING.intersection(c.field for c in found):
            async with self.sched.reader() as db:
                skipped = await BotDb(db).skipped_fire_times(a.id, now.timestamp())
            times = await self._next_times(a, now, set(skipped))
        at = times[0] if times else upcoming[0] if upcoming else draft.first
        locale = await self.posts_language(a.guild_id)
        return await self.as_posted(as_edited(a, draft), at.timestamp(), locale=locale)

    async def _replan(
        self,
        ctx: TransactionContext,
        a: Announcement,
        draft: Draft,
        now: float,
        *,
        moving: bool = False,
    ) -> None:
        """Replace the job or schedule of a live announcement by one for ``draft``'s time and
        rule (``moving``: only its channel changed, so only the pace its jobs carry). An
        occurrence already in progress finishes and is not repeated: a re-anchored schedule
        has a name of its own, and the delivery records each time once."""
        rows = BotDb(ctx.db)
        if a.job_id is not None and not a.recurring:
            canceled = await ctx.scheduler.cancel(a.job_id)
            if not canceled and moving:
                return  # being posted (it posts where the announcement is when it starts)
            if not canceled and a.state == AnnouncementState.SCHEDULED:
                raise NotEditable(being_posted(a.local_id))
        if a.schedule_name is not None:
            with contextlib.suppress(ScheduleNotFound):
                await ctx.scheduler.schedules.delete(a.schedule_name)
        if draft.repeat is None:
            job_id = await enqueue_delivery(
                ctx, a.id, draft.first.timestamp(), self.pace(draft.channel_id), again="edited"
            )
            await rows.set_job(a.id, job_id)
            await rows.set_schedule(a.id, None)
            return
        name = schedule_name(a.id, now)
        await self.create_schedule(ctx, a.id, draft, name)
        await rows.set_job(a.id, None)
        if a.state == AnnouncementState.PAUSED:
            await ctx.scheduler.schedules.pause(name)


def check_editable(
    a: Announcement, fields: Collection[Field], *, last_sending: bool = False
) -> None:
    """Refuse an edit the announcement's state doesn't allow."""
    n = a.local_id
    if a.state == AnnouncementState.CANCELED:
        raise NotEditable(
            t("Announcement #{id} was canceled. Schedule a new one with `/schedule`.", id=n)
        )
    if a.state == AnnouncementState.FAILED:
        raise NotEditable(
            t("Announcement #{id} failed ({failure}). Schedule it again with `/schedule`.",
              id=n, failure=a.failure)
        )  # fmt: skip
    if a.state in (AnnouncementState.SENT, AnnouncementState.DONE) and set(fields) - SHOWN:
        raise NotEditable(
            t("Announcement #{id} has posted its last time; only its `message` and `mention` "
              "can still change (in the posted message). For a new time, use `/schedule`.", id=n)
        )  # fmt: skip
    if TIMING.intersection(fields) and not a.recurring and last_sending:
        raise NotEditable(being_posted(n))


async def _unchanged(rows: BotDb, before: Announcement) -> Announcement:
    """The announcement as stored, refused unless it is still the one the edit started from."""
    a = await rows.announcement(before.id)
    if a is None or a.guild_id != before.guild_id:
        raise NotFound(before.local_id)
    if (a.state, a.revision, a.updated_at) != (before.state, before.revision, before.updated_at):
        raise NotEditable(
            t("Announcement #{id} changed while you were editing it. Look at it again "
              "(`/list`) and repeat your edit.", id=a.local_id)
        )  # fmt: skip
    return a


async def _written(rows: BotDb, announcement_id: int) -> Announcement:
    """The announcement as this transaction has just written it."""
    a = await rows.announcement(announcement_id)
    if a is None:
        raise RuntimeError("the announcement written above, in this transaction, is gone")
    return a


async def _posted_update(
    ctx: TransactionContext,
    a: Announcement,
    draft: Draft,
    fields: set[Field],
    last: PastDelivery | None,
    update_posted: bool,
    revision: int,
    *,
    quiet: float,
) -> PostedUpdate:
    """What the edit does to the message the last occurrence posted: a moved announcement's
    old post is marked as no longer updatable, a shown change is queued (``update_posted``)
    or left, and one made while the occurrence is being sent lands after it."""
    if last is None:
        return PostedUpdate.NONE
    if last.state == DeliveryState.SENDING:
        return PostedUpdate.AFTER_SEND if fields & SHOWN else PostedUpdate.NONE
    if last.state != DeliveryState.SENT or not last.message_id:
        return PostedUpdate.NONE
    if Field.CHANNEL in fields and last.update_error is None:
        await BotDb(ctx.db).set_update_error(a.id, last.fire_ts, MOVED.format(draft.channel_id))
        return PostedUpdate.UNAVAILABLE if fields & SHOWN else PostedUpdate.NONE
    if not fields & SHOWN:
        return PostedUpdate.NONE
    if last.update_error is not None:
        return PostedUpdate.UNAVAILABLE
    if update_posted:
        await enqueue_post_update(ctx, a.id, last.fire_ts, a.channel_id, quiet=quiet)
        await update_places_later(ctx, a.id, last.fire_ts, revision)  # and in its other places
        return PostedUpdate.QUEUED
    return PostedUpdate.LEFT
