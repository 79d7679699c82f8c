"""An announcement written with its job or schedule (and its files), and canceled."""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from scheduler import ScheduleNotFound, ScheduleRequest, TransactionContext

from ..db import BotDb
from ..models import (
    INTERRUPTED_AND_STOPPED,
    Announcement,
    AnnouncementState,
    Draft,
    HistoryAction,
    Image,
)
from .course import NotFound, NotPossible, Why
from .events import sync_events_later
from .guards import check_repeat, check_room
from .jobs import SEND_FN, SendArgs, delivery_job, enqueue_delivery, schedule_name
from .post_as import store_post_as
from .reminders import remind_later, take_back_reminders
from .service import AnnouncementService

if TYPE_CHECKING:
    from collections.abc import Sequence


class Lifecycle(AnnouncementService):
    """Create and cancel announcements."""

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
            await self._check_limits(rows, [draft])
            local_id = await rows.next_local_id(draft.guild_id)
            ann_id = await rows.insert_announcement(draft, local_id, now)
            await self._store_images(rows, ann_id, draft, now)
            await rows.add_history(ann_id, HistoryAction.CREATED, draft.author_id, now)
            rule = draft.repeat
            first = draft.first
            if rule is None:
                job_id = await enqueue_delivery(ctx, ann_id, first_ts, self.pace(draft.channel_id))
                await rows.set_job(ann_id, job_id)
            else:
                first = await self.create_schedule(ctx, ann_id, draft, schedule_name(ann_id))
                if draft.until is not None and first > draft.until:
                    raise NotPossible(Why.UNTIL_BEFORE_FIRST, at=first)  # rolls it all back
            if draft.event is not None:
                await rows.set_event_spec(ann_id, draft.guild_id, draft.event)
                await sync_events_later(ctx, ann_id)
            if draft.reminder is not None:
                await rows.set_reminder_lead(ann_id, draft.guild_id, draft.reminder)
                await remind_later(ctx, ann_id)
            await store_post_as(self, rows, ann_id, draft)
            if draft.places:
                await rows.set_places(ann_id, draft.guild_id, draft.places)
            if draft.tidy is not None and draft.tidy.on:
                await rows.set_tidy(ann_id, draft.guild_id, draft.tidy)
            ann = await rows.announcement(ann_id)
        if ann is None:
            raise RuntimeError("the announcement written above, in this transaction, is gone")
        return ann, first

    async def create_many(self, drafts: Sequence[Draft]) -> list[tuple[Announcement, datetime]]:
        """Write many announcements in one transaction, each exactly as :meth:`create` would
        (the same rows, numbered per guild in the order given, with the same checks), in a
        few statements per few hundred rows instead of several per announcement; returns each
        with its first delivery time, in the same order. All or nothing: a draft refused
        (:class:`TooMuchStored`, an ``until`` before its first time) writes none of them.

        For seeding and imports; a member's ``/schedule`` goes through :meth:`create`."""
        if not drafts:
            return []
        async with self.sched.transaction() as ctx:
            return await self.create_many_in(ctx, drafts)

    async def create_many_in(
        self, ctx: TransactionContext, drafts: Sequence[Draft]
    ) -> list[tuple[Announcement, datetime]]:
        """:meth:`create_many` in ``ctx``'s transaction (an import writes more with them)."""
        if not drafts:
            return []
        rows = BotDb(ctx.db)
        now = ctx.now.timestamp()
        guilds = sorted({d.guild_id for d in drafts})
        await rows.lock_guilds(guilds, now)  # in one order: see create
        await self._check_limits(rows, drafts)
        next_local = await rows.next_local_ids(guilds)
        numbered: list[tuple[Draft, int]] = []
        for draft in drafts:
            numbered.append((draft, next_local[draft.guild_id]))
            next_local[draft.guild_id] += 1
        ids = await rows.insert_announcements(numbered, now)
        for ann_id, draft in zip(ids, drafts, strict=True):
            if draft.images or draft.thumbnail:  # none: create's writes nothing either
                await self._store_images(rows, ann_id, draft, now)
        await rows.add_histories(
            [
                (ann_id, HistoryAction.CREATED, d.author_id)
                for ann_id, d in zip(ids, drafts, strict=True)
            ],
            now,
        )
        firsts = await self._deliver_many(ctx, list(zip(ids, drafts, strict=True)))
        for ann_id, draft in zip(ids, drafts, strict=True):
            if draft.event is not None:
                await rows.set_event_spec(ann_id, draft.guild_id, draft.event)
                await sync_events_later(ctx, ann_id)
            if draft.reminder is not None:
                await rows.set_reminder_lead(ann_id, draft.guild_id, draft.reminder)
                await remind_later(ctx, ann_id)
            await store_post_as(self, rows, ann_id, draft)
            if draft.places:
                await rows.set_places(ann_id, draft.guild_id, draft.places)
            if draft.tidy is not None and draft.tidy.on:
                await rows.set_tidy(ann_id, draft.guild_id, draft.tidy)
        made = await rows.announcements_by_ids(ids)
        return list(zip(made, firsts, strict=True))

    async def _deliver_many(
        self, ctx: TransactionContext, written: list[tuple[int, Draft]]
    ) -> list[datetime]:
        """In ``ctx``'s transaction: the jobs of the one-offs and the schedules of the
        recurring ones among ``written``, as :meth:`create` makes them; their first times."""
        one_offs = [(i, d) for i, d in written if d.repeat is None]
        job_ids = await ctx.scheduler.enqueue_many(
            delivery_job(ann_id, d.first.timestamp(), self.pace(d.channel_id))
            for ann_id, d in one_offs
        )
        rows = BotDb(ctx.db)
        await rows.set_jobs(
            [(ann_id, job_id) for (ann_id, _), job_id in zip(one_offs, job_ids, strict=True)]
        )
        recurring = [(i, d) for i, d in written if d.repeat is not None]
        fires = await ctx.scheduler.schedules.create_many(
            self._schedule_request(ann_id, d, schedule_name(ann_id)) for ann_id, d in recurring
        )
        for (_, d), first in zip(recurring, fires, strict=True):
            if d.until is not None and first > d.until:
                raise NotPossible(Why.UNTIL_BEFORE_FIRST, at=first)  # rolls it all back
        await rows.set_schedules([(ann_id, schedule_name(ann_id)) for ann_id, _ in recurring])
        first_of = {ann_id: first for (ann_id, _), first in zip(recurring, fires, strict=True)}
        return [first_of.get(ann_id, d.first) for ann_id, d in written]

    def _schedule_request(self, ann_id: int, draft: Draft, name: str) -> ScheduleRequest:
        """The schedule that delivers a recurring announcement, from ``draft.first`` on."""
        rule = draft.repeat
        if rule is None:
            raise RuntimeError("only a recurring announcement has a schedule")
        spec, tz = rule.schedule_spec(draft.timezone, draft.first)
        return ScheduleRequest(
            name,
            spec,
            SEND_FN,
            SendArgs(ann_id),
            tz=tz,
            start=draft.first,
            catch_up="fire_once",
            catchup_window=timedelta(seconds=self.catch_up_window),
            overlap="skip",
            pace=self.pace(draft.channel_id),
        )

    async def _store_images(self, rows: BotDb, ann_id: int, draft: Draft, now: float) -> None:
        """Keep ``draft``'s files and thumbnail for the announcement (None: leave its files,
        or its thumbnail, as they are; a style that names no thumbnail has none), refused
        when the server would then keep more than its limit (its templates' files count
        too)."""
        named = draft.rich.style.thumbnail is not None
        thumbnail = draft.thumbnail if named else None
        if draft.images is None and thumbnail is None:
            if not named:
                await rows.set_thumbnail(ann_id, draft.guild_id, None, now)
            return
        if draft.images is None:
            size = sum(s for _, s in await rows.image_names(ann_id))
        else:
            size = sum(len(image.data) for image in draft.images)
        if thumbnail is not None:
            size += len(thumbnail.data)
        elif named:
            size += await rows.thumbnail_size(ann_id)
        await self.check_room_for_files(rows, draft.guild_id, size, except_announcement=ann_id)
        if draft.images is not None:
            await rows.replace_images(ann_id, draft.guild_id, draft.images, now)
        if thumbnail is not None or not named:
            await rows.set_thumbnail(ann_id, draft.guild_id, thumbnail, now)

    async def images(self, announcement_id: int) -> list[Image]:
        """The files an announcement posts, bytes included."""
        async with self.sched.reader() as db:
            return await BotDb(db).images(announcement_id)

    async def thumbnail(self, announcement_id: int) -> Image | None:
        """The thumbnail an announcement's embed shows, bytes included (None: none)."""
        async with self.sched.reader() as db:
            return await BotDb(db).thumbnail(announcement_id)

    async def _check_limits(self, rows: BotDb, drafts: Sequence[Draft]) -> None:
        """Refuse ``drafts`` (nothing is written) if a server would pass its limit of live
        announcements, or one repeats more often than its server allows. Called with the
        servers' settings rows locked, so the count is not stale by the commit."""
        by_guild: dict[int, list[Draft]] = {}
        for draft in drafts:
            by_guild.setdefault(draft.guild_id, []).append(draft)
        for guild_id, its in sorted(by_guild.items()):
            limits = await self.limits_in(rows, guild_id)
            check_room(limits, await rows.live_count(guild_id), len(its))
            for draft in its:
                if draft.repeat is not None:
                    check_repeat(limits, draft.repeat, ZoneInfo(draft.timezone), draft.first)

    async def image_names(self, announcement_id: int) -> list[tuple[str, int]]:
        """The names and sizes of the files an announcement posts (no bytes are read)."""
        async with self.sched.reader() as db:
            return await BotDb(db).image_names(announcement_id)

    async def create_schedule(
        self, ctx: TransactionContext, ann_id: int, draft: Draft, name: str
    ) -> datetime:
        """In ``ctx``'s transaction: the schedule that delivers a recurring announcement,
        from ``draft.first`` on; returns its first time."""
        r = self._schedule_request(ann_id, draft, name)
        info = await ctx.scheduler.schedules.create(r.name, r.spec, r.fn, r.args, **r.options)
        await BotDb(ctx.db).set_schedule(ann_id, name)
        return info.next_fire or draft.first

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
                raise NotFound(local_id)
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
            await rows.drop_unreferenced_files(a.id)  # kept if an update still needs them
            await sync_events_later(ctx, a.id)  # its coming events are canceled
            await take_back_reminders(ctx, a.id)  # and the reminders not sent yet
        return a
