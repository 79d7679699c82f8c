"""Pause, resume and until: a live announcement's timing changed without an edit
(their helpers are in :mod:`bot.announcements.course`)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from scheduler import JobState, ScheduleNotFound

from ..db import BotDb
from ..models import Announcement, AnnouncementState, HistoryAction
from .course import (
    NotPossible,
    Why,
    at,
    change_until,
    end_if_past_until,
    live_announcement,
    next_scheduled_fire,
)
from .diff import stamp
from .events import sync_events_later
from .jobs import enqueue_delivery
from .reading import Reading
from .reminders import remind_later, take_back_reminders

if TYPE_CHECKING:
    from datetime import datetime


class Pausing(Reading):
    """Pause and resume announcements, and set when they stop (skips:
    :mod:`bot.announcements.skipping`)."""

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
            await sync_events_later(ctx, a.id)  # its coming events are canceled
            await take_back_reminders(ctx, a.id)  # and the reminders not sent yet
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
                    job_id = await enqueue_delivery(
                        ctx, a.id, a.first_ts, self.pace(a.channel_id), again="resumed"
                    )
                    await rows.set_job(a.id, job_id)
            await rows.set_resumed(a.id, now)
            detail = "" if nxt is None else f"next: {stamp(nxt.timestamp())}"
            await rows.add_history(a.id, HistoryAction.RESUMED, actor_id, now, detail)
            await sync_events_later(ctx, a.id)  # its coming events are made again
            await remind_later(ctx, a.id)  # and its reminders planned again
        return a, nxt

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
        if after is None:
            raise RuntimeError("announcements are never deleted")
        return after
