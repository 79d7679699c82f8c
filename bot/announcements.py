"""Announcements: the bot's domain layer over the scheduler, with no Discord code and no SQL.

An announcement row and the job (one-off) or schedule (recurring) that delivers it are
written in one transaction. Every id a user sees is the per-guild ``local_id``; every lookup
is by ``(guild_id, local_id)``, so another guild's id is simply "not found". The rows are read
and written through :class:`bot.db.BotDb`, on the scheduler's own connection.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from scheduler import JobState, Pace, ScheduleNotFound, Scheduler, TransactionContext

from .changes import (
    NotFound,
    NotPossible,
    Skipped,
    Why,
    at,
    change_until,
    end_if_past_until,
    live_announcement,
    next_scheduled_fire,
    stamp,
    unrecorded_from,
)
from .config import default
from .db import BotDb
from .edit_changes import SHOWN, TIMING, Change, Field, changes, history_detail
from .models import (
    INTERRUPTED_AND_STOPPED,
    LIVE_STATES,
    Announcement,
    AnnouncementState,
    DeliveryState,
    Draft,
    GuildSettings,
    HistoryAction,
    HistoryEntry,
    PastDelivery,
    PublishState,
    mention_markup,
    nonce_for,
)
from .pacing import channel_pace

__all__ = [
    "LIVE_STATES",
    "SEND_FN",
    "UPDATE_FN",
    "Announcement",
    "AnnouncementState",
    "Announcements",
    "Details",
    "Draft",
    "EditOutcome",
    "GuildSettings",
    "IdChoices",
    "Listing",
    "NotEditable",
    "NotFound",
    "NotPossible",
    "PostedUpdate",
    "Skipped",
    "TooMuchStored",
    "Why",
    "check_editable",
    "enqueue_post_update",
    "mention_markup",
    "schedule_name",
]

SEND_FN = "announcements:send"
UPDATE_FN = "crier.update_posted"
"""The durable job that brings a posted message up to date with its announcement."""
_EPOCH = datetime.fromtimestamp(0, UTC)


def schedule_name(announcement_id: int, anchored_at: float | None = None) -> str:
    """The name of an announcement's schedule; one re-anchored by an edit (at
    ``anchored_at``) gets a name of its own, so none of its occurrences can be mistaken for
    one of the schedule it replaces."""
    if anchored_at is None:
        return f"announcement:{announcement_id}"
    return f"announcement:{announcement_id}@{round(anchored_at * 1000)}"


async def enqueue_post_update(
    ctx: TransactionContext, announcement_id: int, fire_ts: float, channel_id: int, revision: int
) -> int:
    """In ``ctx``'s transaction: bring the message posted for the occurrence at ``fire_ts``
    up to date with ``revision`` (one job per revision, whoever asks for it)."""
    return await ctx.scheduler.enqueue(
        UPDATE_FN,
        {"announcement_id": announcement_id, "fire_ts": fire_ts, "channel_id": channel_id},
        idempotency_key=f"post-update:{announcement_id}:{fire_ts!r}:{revision}",
        name=f"update the post of announcement {announcement_id}",
    )


class NotEditable(ValueError):
    """The edit can't be made as asked; ``str(e)`` says why (shown to the member)."""


class TooMuchStored(ValueError):
    """The server's announcements would keep more bytes in files than the limit allows;
    ``str(e)`` says so (shown to the member)."""


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


@dataclass(frozen=True, slots=True)
class Listing:
    items: list[Announcement]
    total: int
    next_fires: dict[int, datetime | None]
    published: dict[int, tuple[PublishState, str | None]] = field(default_factory=dict)
    """For a post to publish: how publishing its latest post stands, and why it failed."""


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


class Announcements:
    """Create, list and cancel announcements, and keep guild settings."""

    def __init__(
        self,
        sched: Scheduler,
        catch_up_window: float = default("catch_up_window"),
        *,
        send_spacing: float = default("send_spacing"),
        file_max_bytes: float = default("file_max_bytes"),
        guild_files_max_bytes: float = default("guild_files_max_bytes"),
    ) -> None:
        self.sched = sched
        self.catch_up_window = catch_up_window
        self.send_spacing = send_spacing
        """Seconds between the starts of two deliveries to one channel, in every instance."""
        self.file_max_bytes = file_max_bytes
        """The largest file one announcement may carry (checked as it is downloaded)."""
        self.guild_files_max_bytes = guild_files_max_bytes
        """The most one server's live announcements may keep in files together."""

    def pace(self, channel_id: int) -> Pace | None:
        """The pace of the delivery jobs (and schedules) that post to ``channel_id``."""
        return channel_pace(channel_id, self.send_spacing)

    # --- settings ------------------------------------------------------------------------------

    async def settings(self, guild_id: int) -> GuildSettings:
        async with self.sched.reader() as db:
            found = await BotDb(db).guild_settings(guild_id)
        return found or GuildSettings(guild_id)

    async def save_settings(self, new: GuildSettings) -> None:
        async with self.sched.transaction() as ctx:
            await BotDb(ctx.db).save_guild_settings(new, ctx.now.timestamp())

    # --- create --------------------------------------------------------------------------------

    async def create(self, draft: Draft) -> tuple[Announcement, datetime]:
        """Write the announcement and its job or schedule together; returns it with its first
        delivery time."""
        first_ts = draft.first.timestamp()
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            now = ctx.now.timestamp()
            # Lock the guild's settings row so that concurrent creates in one guild take their
            # numbers one after the other: on PostgreSQL (READ COMMITTED) two of them would
            # otherwise read the same max(local_id) and one would fail on UNIQUE (guild_id,
            # local_id).
            await rows.lock_guild(draft.guild_id, now)
            local_id = await rows.next_local_id(draft.guild_id)
            ann_id = await rows.insert_announcement(draft, local_id, now)
            await self._store_images(rows, ann_id, draft, now)
            await rows.add_history(ann_id, HistoryAction.CREATED, draft.author_id, now)
            rule = draft.repeat
            first = draft.first
            if rule is None:
                job_id = await ctx.scheduler.run_at(
                    draft.first,
                    SEND_FN,
                    {"announcement_id": ann_id, "fire_ts": first_ts},
                    idempotency_key=f"announcement:{ann_id}:{first_ts!r}",
                    name=f"announcement {ann_id}",
                    pace=self.pace(draft.channel_id),
                )
                await rows.set_job(ann_id, job_id)
            else:
                first = await self.create_schedule(ctx, ann_id, draft, schedule_name(ann_id))
                if draft.until is not None and first > draft.until:
                    raise NotPossible(Why.UNTIL_BEFORE_FIRST, at=first)  # rolls it all back
            ann = await rows.announcement(ann_id)
        assert ann is not None  # written above, in the same transaction
        return ann, first

    async def _store_images(self, rows: BotDb, ann_id: int, draft: Draft, now: float) -> None:
        """Keep ``draft``'s files for the announcement (None: leave its files as they are),
        refused when the server would then keep more than its limit."""
        if draft.images is None:
            return
        size = sum(len(image.data) for image in draft.images)
        if size:
            kept = await rows.guild_image_bytes(draft.guild_id, ann_id)
            if kept + size > self.guild_files_max_bytes:
                limit = self.guild_files_max_bytes / (1024 * 1024)
                raise TooMuchStored(
                    f"This server's announcements already keep {kept / (1024 * 1024):.1f} MiB "
                    f"of files; with this one ({size / (1024 * 1024):.1f} MiB) they would "
                    f"pass the server's limit of {limit:.1f} MiB. Cancel announcements with "
                    "files you no longer need, or attach a smaller one."
                )
        await rows.replace_images(ann_id, draft.guild_id, draft.images, now)

    async def image_names(self, announcement_id: int) -> list[tuple[str, int]]:
        """The names and sizes of the files an announcement posts (no bytes are read)."""
        async with self.sched.reader() as db:
            return await BotDb(db).image_names(announcement_id)

    async def create_schedule(
        self, ctx: TransactionContext, ann_id: int, draft: Draft, name: str
    ) -> datetime:
        """In ``ctx``'s transaction: the schedule that delivers a recurring announcement,
        from ``draft.first`` on; returns its first time."""
        rule = draft.repeat
        assert rule is not None  # only a recurring announcement has a schedule
        spec, tz = rule.schedule_spec(draft.timezone)
        info = await ctx.scheduler.schedules.create(
            name,
            spec,
            SEND_FN,
            {"announcement_id": ann_id},
            tz=tz,
            start=draft.first,
            catch_up="fire_once",
            catchup_window=timedelta(seconds=self.catch_up_window),
            overlap="skip",
            pace=self.pace(draft.channel_id),
        )
        await BotDb(ctx.db).set_schedule(ann_id, name)
        return info.next_fire or draft.first

    # --- read ----------------------------------------------------------------------------------

    async def get(self, guild_id: int, local_id: int) -> Announcement:
        async with self.sched.reader() as db:
            found = await BotDb(db).announcement_by_local_id(guild_id, local_id)
        if found is None:
            raise NotFound(f"announcement #{local_id} not found")
        return found

    async def by_id(self, announcement_id: int) -> Announcement | None:
        async with self.sched.reader() as db:
            return await BotDb(db).announcement(announcement_id)

    async def live(self, guild_id: int, limit: int = 200) -> list[Announcement]:
        async with self.sched.reader() as db:
            return await BotDb(db).live_announcements(guild_id, limit)

    async def listing(self, guild_id: int, offset: int, limit: int) -> Listing:
        """A page of the guild's announcements: failures (and paused ones) newest first, then
        the scheduled ones by their next time, then the rest (sent, canceled) newest first."""
        async with self.sched.reader() as db:
            rows = BotDb(db)
            total = await rows.count_announcements(guild_id)
            open_rows = await rows.open_announcements(guild_id)
        fires = await self._next_fires(open_rows)
        troubled = [a for a in open_rows if a.state != AnnouncementState.SCHEDULED]
        upcoming = sorted(
            (a for a in open_rows if a.state == AnnouncementState.SCHEDULED),
            key=lambda a: (fires.get(a.id) is None, fires.get(a.id) or _EPOCH, a.local_id),
        )
        head = troubled + upcoming
        items = head[offset : offset + limit]
        if len(items) < limit:
            async with self.sched.reader() as db:
                items += await BotDb(db).closed_announcements(
                    guild_id, limit - len(items), max(0, offset - len(head))
                )
        published = {}
        async with self.sched.reader() as db:
            for a in items:
                if a.rich.publish:
                    last = await BotDb(db).last_attempted_delivery(a.id)
                    if last is not None and last.publish_state is not None:
                        published[a.id] = (last.publish_state, last.publish_error)
        return Listing(items, total, {a.id: fires.get(a.id) for a in items}, published)

    async def _next_fires(self, rows: list[Announcement]) -> dict[int, datetime | None]:
        """Next delivery times, with one read of the schedules for the recurring ones."""
        recurring = {
            a.schedule_name
            for a in rows
            if a.schedule_name and a.state == AnnouncementState.SCHEDULED
        }
        schedules = (
            {s.name: s.next_fire for s in await self.sched.schedules.list()} if recurring else {}
        )
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
                raise NotFound(f"announcement #{local_id} not found")
            skipped_ts = await rows.skipped_fire_times(a.id, now.timestamp())
            # Skipped occurrences still to come are recorded too; they are not deliveries yet.
            recorded = await rows.recent_deliveries(a.id, INFO_DELIVERIES + len(skipped_ts))
            history = await rows.history(a.id, INFO_HISTORY + 1)
            files = tuple(name for name, _ in await rows.image_names(a.id))
        deliveries = [d for d in recorded if d.fire_ts not in skipped_ts][:INFO_DELIVERIES]
        skipped = [datetime.fromtimestamp(ts, UTC) for ts in skipped_ts]
        return Details(
            announcement=a,
            next_times=await self._next_times(a, now, set(skipped_ts)),
            skipped=skipped,
            deliveries=deliveries,
            history=history[-INFO_HISTORY:],
            earlier_history=len(history) > INFO_HISTORY,
            files=files,
        )

    async def _next_times(
        self, a: Announcement, now: datetime, skipped: set[float]
    ) -> list[datetime]:
        """The next ``INFO_TIMES`` delivery times: none unless scheduled; a one-off's one
        time if still to come; a recurring one's from its schedule's next fire on, by its
        trigger, leaving out skipped ones and stopping at ``until``."""
        if a.state != AnnouncementState.SCHEDULED:
            return []
        if a.schedule_name is None:
            return [datetime.fromtimestamp(a.first_ts, UTC)] if a.first_ts > now.timestamp() else []
        try:
            schedule = await self.sched.schedules.get(a.schedule_name)
        except ScheduleNotFound:
            return []
        if schedule.paused or schedule.next_fire is None:
            return []
        out: list[datetime] = []
        fire = schedule.next_fire
        # Bounded: every skipped occurrence is one more step, and there are few of them.
        for _ in range(INFO_TIMES + len(skipped)):
            if a.until_ts is not None and fire.timestamp() > a.until_ts:
                break
            if fire.timestamp() not in skipped:
                out.append(fire)
                if len(out) == INFO_TIMES:
                    break
            fire = schedule.trigger.next_after(fire)
        return out

    # --- cancel --------------------------------------------------------------------------------

    async def cancel(
        self, guild_id: int, local_id: int, actor_id: int | None = None
    ) -> Announcement:
        """Cancel a live announcement (its pending delivery or its schedule).

        Raises :class:`NotFound`; returns the row as it was if it was no longer live (the
        caller says why: already sent, failed or canceled)."""
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            a = await rows.announcement_by_local_id(guild_id, local_id)
            if a is None:
                raise NotFound(f"announcement #{local_id} not found")
            if not a.live:
                return a
            if a.job_id is not None and await ctx.scheduler.cancel(a.job_id):
                # Its job was waiting, so an attempt recorded "sending" was interrupted (a
                # crash, a stop) and will not be retried: say so instead of "sending" for ever.
                await rows.close_interrupted_delivery(
                    a.id,
                    a.first_ts,
                    INTERRUPTED_AND_STOPPED.format(state=AnnouncementState.CANCELED),
                )
            if a.schedule_name is not None:
                with contextlib.suppress(ScheduleNotFound):
                    await ctx.scheduler.schedules.delete(a.schedule_name)
            now = ctx.now.timestamp()
            await rows.set_state(a.id, AnnouncementState.CANCELED, now)
            await rows.add_history(a.id, HistoryAction.CANCELED, actor_id, now)
        return a

    # --- pause, resume, skip, until ------------------------------------------------------------

    async def pause(self, guild_id: int, local_id: int, actor_id: int) -> Announcement:
        """Stop a live announcement from posting until it is resumed (a recurring one's
        schedule stops ticking; a one-off's job, if it comes due, posts nothing). Returns the
        row as it was."""
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            a = await live_announcement(rows, guild_id, local_id)
            if a.state == AnnouncementState.PAUSED:
                raise NotPossible(Why.ALREADY_PAUSED, a)
            if a.schedule_name is not None:
                with contextlib.suppress(ScheduleNotFound):
                    await ctx.scheduler.schedules.pause(a.schedule_name)
            now = ctx.now.timestamp()
            await rows.set_state(a.id, AnnouncementState.PAUSED, now)
            await rows.add_history(a.id, HistoryAction.PAUSED, actor_id, now)
        return a

    async def resume(
        self, guild_id: int, local_id: int, actor_id: int
    ) -> tuple[Announcement, datetime | None]:
        """Post a paused announcement again (also one paused by a failure, whose reason is
        forgotten), from its next FUTURE time: a recurring one's schedule fires next at the
        first time after now (no time missed while paused is posted); a one-off whose time
        passed meanwhile is refused (it needs a new time). Returns the row as it was and the
        next time."""
        found = await self.get(guild_id, local_id)
        job_pending = True
        if found.job_id is not None:
            job = await self.sched.get_job(found.job_id)
            job_pending = job is not None and job.state == JobState.PENDING
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            a = await live_announcement(rows, guild_id, local_id)
            if a.state != AnnouncementState.PAUSED:
                raise NotPossible(Why.NOT_PAUSED, a)
            now = ctx.now.timestamp()
            nxt: datetime | None
            if a.schedule_name is not None:
                with contextlib.suppress(ScheduleNotFound):
                    await ctx.scheduler.schedules.resume(a.schedule_name)
                nxt = await next_scheduled_fire(ctx, a)
                if a.until_ts is not None and (nxt is None or nxt.timestamp() > a.until_ts):
                    raise NotPossible(Why.NOTHING_LEFT, a, at=at(a.until_ts))
            else:
                nxt = at(a.first_ts)
                if a.first_ts <= now:
                    raise NotPossible(Why.TIME_PASSED, a, at=nxt)
                if not job_pending or a.job_id != found.job_id:
                    # Its job came due while it was paused and posted nothing: a new one.
                    job_id = await ctx.scheduler.run_at(
                        nxt,
                        SEND_FN,
                        {"announcement_id": a.id, "fire_ts": a.first_ts},
                        idempotency_key=f"announcement:{a.id}:{a.first_ts!r}:resumed:{now!r}",
                        name=f"announcement {a.id}",
                        pace=self.pace(a.channel_id),
                    )
                    await rows.set_job(a.id, job_id)
            await rows.set_resumed(a.id, now)
            detail = "" if nxt is None else f"next: {stamp(nxt.timestamp())}"
            await rows.add_history(a.id, HistoryAction.RESUMED, actor_id, now, detail)
        return a, nxt

    async def skip(self, guild_id: int, local_id: int, actor_id: int) -> Skipped:
        """Skip the next occurrence of a scheduled recurring announcement: its time gets a
        ``skipped`` delivery row, so its job posts nothing. A second skip skips the one
        after."""
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            a = await live_announcement(rows, guild_id, local_id)
            if a.schedule_name is None:
                raise NotPossible(Why.ONE_OFF, a)
            if a.state == AnnouncementState.PAUSED:
                raise NotPossible(Why.PAUSED, a)
            try:
                info = await ctx.scheduler.schedules.get(a.schedule_name)
            except ScheduleNotFound:
                raise NotPossible(Why.NOTHING_LEFT, a) from None
            skipped = await unrecorded_from(rows, a, info.next_fire, info.trigger.next_after)
            if skipped is None:
                raise NotPossible(Why.NOTHING_LEFT, a, at=at(a.until_ts or 0))
            fire_ts = skipped.timestamp()
            now = ctx.now.timestamp()
            reason = f"skipped by <@{actor_id}>"
            await rows.record_skipped(a.id, fire_ts, nonce_for(a.id, fire_ts), now, reason)
            await rows.add_history(a.id, HistoryAction.SKIPPED, actor_id, now, stamp(fire_ts))
            then = await unrecorded_from(
                rows, a, info.trigger.next_after(skipped), info.trigger.next_after
            )
        return Skipped(a, skipped, then)

    async def set_until(
        self, guild_id: int, local_id: int, until: datetime | None, actor_id: int
    ) -> Announcement:
        """Set or clear (None) when a recurring announcement stops; returns it as it is
        now (``done`` already if nothing is left to post before the new ``until``)."""
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            a = await live_announcement(rows, guild_id, local_id)
            now = ctx.now.timestamp()
            changed, detail = await change_until(ctx, a, until)
            await rows.add_history(a.id, HistoryAction.EDITED, actor_id, now, detail)
            await end_if_past_until(ctx, changed)
            after = await rows.announcement(a.id)
        assert after is not None  # announcements are never deleted
        return after

    # --- members' own settings -----------------------------------------------------------------

    async def member_timezone(self, user_id: int) -> str | None:
        async with self.sched.reader() as db:
            return await BotDb(db).member_timezone(user_id)

    async def set_member_timezone(self, user_id: int, timezone: str) -> None:
        async with self.sched.transaction() as ctx:
            await BotDb(ctx.db).set_member_timezone(user_id, timezone, ctx.now.timestamp())

    # --- edit ----------------------------------------------------------------------------------

    async def anchor(self, a: Announcement) -> datetime:
        """Where a new rule starts when an edit changes how ``a`` repeats (or its zone) but
        not its ``when``: the occurrence that would have come next (a due one not yet posted
        included), else its first time."""
        if a.schedule_name is not None:
            pending = [
                j.fire_ts
                for j in await self.sched.list_jobs(state="pending", fn=SEND_FN, limit=1000)
                if j.schedule_name == a.schedule_name and j.fire_ts is not None
            ]
            nxt = None
            with contextlib.suppress(ScheduleNotFound):
                nxt = (await self.sched.schedules.get(a.schedule_name)).next_fire
            times = pending + ([] if nxt is None else [nxt.timestamp()])
            if times:
                return datetime.fromtimestamp(min(times), UTC)
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
            a = await rows.announcement(before.id)
            if a is None or a.guild_id != before.guild_id:
                raise NotFound(f"announcement #{before.local_id} not found")
            if (a.state, a.revision, a.updated_at) != (
                before.state,
                before.revision,
                before.updated_at,
            ):
                raise NotEditable(
                    f"Announcement #{a.local_id} changed while you were editing it. Look at it "
                    "again (`/list`) and repeat your edit."
                )
            found = changes(a, draft, when_given=when_given, next_before=next_before)
            if not found:
                return EditOutcome(a, a, [], next_before, PostedUpdate.NONE)
            fields = {c.field for c in found}
            last = await rows.last_attempted_delivery(a.id)
            check_editable(
                a, fields, last_sending=last is not None and last.state == DeliveryState.SENDING
            )
            now = ctx.now.timestamp()
            revision = a.revision + (1 if fields & SHOWN else 0)
            await rows.update_announcement(a.id, draft, revision, now)
            await self._store_images(rows, a.id, draft, now)
            if Field.UNTIL in fields:  # the row as edited: it may have just become recurring
                edited = await rows.announcement(a.id)
                assert edited is not None  # written above
                await change_until(ctx, edited, draft.until)
            if fields & TIMING and a.live:
                await self._replan(ctx, a, draft, now)
            elif Field.CHANNEL in fields and a.live and self.send_spacing > 0:
                # The jobs carry their channel's pace: made again with the new channel's.
                await self._replan(ctx, a, draft, now, moving=True)
            await rows.add_history(a.id, HistoryAction.EDITED, actor_id, now, history_detail(found))
            changed = await rows.announcement(a.id)
            assert changed is not None  # written above
            await end_if_past_until(ctx, changed)  # nothing left before a new until: done
            posted = PostedUpdate.NONE
            message_id = None if last is None else last.message_id
            if last is not None and last.state == DeliveryState.SENT and last.message_id:
                if Field.CHANNEL in fields and last.update_error is None:
                    await rows.set_update_error(a.id, last.fire_ts, MOVED.format(draft.channel_id))
                    posted = PostedUpdate.UNAVAILABLE if fields & SHOWN else posted
                elif not fields & SHOWN:
                    pass
                elif last.update_error is not None:
                    posted = PostedUpdate.UNAVAILABLE
                elif update_posted:
                    await enqueue_post_update(ctx, a.id, last.fire_ts, a.channel_id, revision)
                    posted = PostedUpdate.QUEUED
                else:
                    posted = PostedUpdate.LEFT
            elif last is not None and last.state == DeliveryState.SENDING and fields & SHOWN:
                posted = PostedUpdate.AFTER_SEND
            after = await rows.announcement(a.id)
        assert after is not None  # written above, in the same transaction
        return EditOutcome(a, after, found, await self.next_fire(after), posted, message_id)

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
                raise NotEditable(BEING_POSTED.format(a.local_id))
        if a.schedule_name is not None:
            with contextlib.suppress(ScheduleNotFound):
                await ctx.scheduler.schedules.delete(a.schedule_name)
        if draft.repeat is None:
            first_ts = draft.first.timestamp()
            job_id = await ctx.scheduler.run_at(
                draft.first,
                SEND_FN,
                {"announcement_id": a.id, "fire_ts": first_ts},
                idempotency_key=f"announcement:{a.id}:{first_ts!r}:edited:{now!r}",
                name=f"announcement {a.id}",
                pace=self.pace(draft.channel_id),
            )
            await rows.set_job(a.id, job_id)
            await rows.set_schedule(a.id, None)
            return
        name = schedule_name(a.id, now)
        await self.create_schedule(ctx, a.id, draft, name)
        await rows.set_job(a.id, None)
        if a.state == AnnouncementState.PAUSED:
            await ctx.scheduler.schedules.pause(name)


MOVED = "the announcement moved to <#{}>: this post is no longer updated"
BEING_POSTED = (
    "Announcement #{} is being posted right now, so its time can't change. Try again in a "
    "moment (its message can still be edited)."
)


def check_editable(
    a: Announcement, fields: Collection[Field], *, last_sending: bool = False
) -> None:
    """Refuse an edit the announcement's state doesn't allow."""
    n = a.local_id
    if a.state == AnnouncementState.CANCELED:
        raise NotEditable(f"Announcement #{n} was canceled. Schedule a new one with `/schedule`.")
    if a.state == AnnouncementState.FAILED:
        raise NotEditable(
            f"Announcement #{n} failed ({a.failure}). Schedule it again with `/schedule`."
        )
    if a.state in (AnnouncementState.SENT, AnnouncementState.DONE) and set(fields) - SHOWN:
        raise NotEditable(
            f"Announcement #{n} has posted its last time; only its `message` and `mention` "
            "can still change (in the posted message). For a new time, use `/schedule`."
        )
    if TIMING.intersection(fields) and not a.recurring and last_sending:
        raise NotEditable(BEING_POSTED.format(n))
