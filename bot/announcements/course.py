"""Changes to a live announcement's course, shared by the domain layer and the delivery:
why a change can't be made (:class:`NotPossible`), and an announcement's ``until`` (set,
cleared, reached). Every function here writes in the caller's transaction."""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from scheduler import ScheduleNotFound, Scheduler, TransactionContext

from ..db import BotDb
from ..models import Announcement, AnnouncementState, HistoryAction
from .diff import stamp

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterator

__all__ = [
    "NotFound",
    "NotPossible",
    "Skipped",
    "Why",
    "change_until",
    "coming_fires",
    "end_announcement",
    "end_if_past_until",
    "live_announcement",
    "next_scheduled_fire",
    "unrecorded_from",
]


class NotFound(LookupError):
    """No announcement of the guild has that number (another guild's ids are not found)."""

    def __init__(self, local_id: int) -> None:
        super().__init__(f"announcement #{local_id} not found")
        self.local_id = local_id


class Why(StrEnum):
    """Why a change can't be made as asked (the reply says what to do instead)."""

    SENT = "sent"
    CANCELED = "canceled"
    FAILED = "failed"
    DONE = "done"
    ALREADY_PAUSED = "already paused"
    NOT_PAUSED = "not paused"
    TIME_PASSED = "its time passed while it was paused"
    ONE_OFF = "one-off"
    PAUSED = "paused"
    NOTHING_LEFT = "nothing left before until"
    UNTIL_ONE_OFF = "until on a one-off"
    UNTIL_BEFORE_FIRST = "until before the first time"


class NotPossible(ValueError):
    """The change can't be made (nothing was written): ``why``, about ``announcement``, with
    the time it concerns (``at``: the passed time, the until, the first time)."""

    def __init__(
        self, why: Why, announcement: Announcement | None = None, at: datetime | None = None
    ) -> None:
        super().__init__(str(why))
        self.why = why
        self.announcement = announcement
        self.at = at


_NOT_LIVE = {
    AnnouncementState.SENT: Why.SENT,
    AnnouncementState.CANCELED: Why.CANCELED,
    AnnouncementState.FAILED: Why.FAILED,
    AnnouncementState.DONE: Why.DONE,
}


@dataclass(frozen=True, slots=True)
class Skipped:
    """What ``/skip`` did: the occurrence it skipped and the one that comes next (None when
    the announcement ends first, at its ``until``)."""

    announcement: Announcement
    skipped: datetime
    then: datetime | None


def at(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


async def coming_fires(
    sched: Scheduler, a: Announcement, now: datetime, skipped: Collection[float]
) -> Iterator[datetime]:
    """The occurrences of ``a`` still to come, earliest first, one at a time as the caller
    reads them: a one-off's time if it is after ``now``; a recurring one's from its
    schedule's next fire on, by its trigger, up to its ``until``, the ``skipped`` fire times
    left out. None for a paused or ended schedule. The caller stops reading when it has
    enough (a recurring one without ``until`` never ends)."""
    if a.schedule_name is None:
        first = at(a.first_ts)
        return iter([first] if first > now else [])
    try:
        schedule = await sched.schedules.get(a.schedule_name)
    except ScheduleNotFound:
        return iter([])
    if schedule.paused or schedule.next_fire is None:
        return iter([])
    return _walk(schedule.next_fire, schedule.trigger.next_after, a.until_ts, skipped)


def _walk(
    fire: datetime,
    after: Callable[[datetime], datetime],
    until_ts: float | None,
    skipped: Collection[float],
) -> Iterator[datetime]:
    while until_ts is None or fire.timestamp() <= until_ts:
        if fire.timestamp() not in skipped:
            yield fire
        fire = after(fire)


async def live_announcement(rows: BotDb, guild_id: int, local_id: int) -> Announcement:
    """The guild's announcement, if it is still live (scheduled or paused)."""
    a = await rows.announcement_by_local_id(guild_id, local_id)
    if a is None:
        raise NotFound(local_id)
    if not a.live:
        raise NotPossible(_NOT_LIVE[a.state], a)
    return a


async def next_scheduled_fire(ctx: TransactionContext, a: Announcement) -> datetime | None:
    if a.schedule_name is None:
        raise RuntimeError("a recurring announcement has a schedule")
    try:
        return (await ctx.scheduler.schedules.get(a.schedule_name)).next_fire
    except ScheduleNotFound:
        return None


async def unrecorded_from(
    rows: BotDb, a: Announcement, start: datetime | None, after: Callable[[datetime], datetime]
) -> datetime | None:
    """The first fire time from ``start`` on that has no delivery row yet (not skipped
    already), or None if there is none up to the announcement's ``until``."""
    t = start
    for _ in range(_SKIP_LOOKAHEAD):
        if t is None or (a.until_ts is not None and t.timestamp() > a.until_ts):
            return None
        if await rows.delivery(a.id, t.timestamp()) is None:
            return t
        t = after(t)
    return None


_SKIP_LOOKAHEAD = 1000
"""How many recorded (skipped) times in a row are looked past for the next free one."""


async def change_until(
    ctx: TransactionContext, a: Announcement, until: datetime | None
) -> tuple[Announcement, str]:
    """Set or clear (None) ``a``'s until in the caller's transaction (``/edit`` calls this
    in its own); returns the announcement as changed and the change in words for its
    history. A one-off is refused. Once the edit is recorded, the caller ends it if nothing
    is left to post before the new until: ``await end_if_past_until(ctx, changed)``."""
    if until is not None and not a.recurring:
        raise NotPossible(Why.UNTIL_ONE_OFF, a)
    until_ts = None if until is None else until.timestamp()
    await BotDb(ctx.db).set_until(a.id, until_ts, ctx.now.timestamp())
    detail = f"until: {stamp(a.until_ts)} → {stamp(until_ts)}"
    return dataclasses.replace(a, until_ts=until_ts), detail


async def end_if_past_until(ctx: TransactionContext, a: Announcement) -> bool:
    """End a scheduled recurring announcement whose next time is past its until (``done``,
    its schedule deleted, the bot's ``ended`` in its history); whether it ended."""
    if a.until_ts is None or a.schedule_name is None or a.state != AnnouncementState.SCHEDULED:
        return False
    nxt = await next_scheduled_fire(ctx, a)
    if nxt is not None and nxt.timestamp() <= a.until_ts:
        return False
    await end_announcement(ctx, a)
    return True


async def end_announcement(ctx: TransactionContext, a: Announcement) -> None:
    """A recurring announcement reached its until: ``done``, its schedule deleted."""
    if a.schedule_name is not None:
        with contextlib.suppress(ScheduleNotFound):
            await ctx.scheduler.schedules.delete(a.schedule_name)
    rows = BotDb(ctx.db)
    now = ctx.now.timestamp()
    await rows.set_state(a.id, AnnouncementState.DONE, now)
    detail = "" if a.until_ts is None else f"until {stamp(a.until_ts)} reached"
    await rows.add_history(a.id, HistoryAction.ENDED, None, now, detail)
