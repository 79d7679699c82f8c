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
from ..models import Announcement, AnnouncementState, DeliveryState, HistoryAction
from ..parsing.skips import Skip
from .diff import stamp
from .jobs import SEND_FN

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterator, Mapping

__all__ = [
    "NotFound",
    "NotPossible",
    "Skipped",
    "Why",
    "change_until",
    "coming_fires",
    "end_announcement",
    "end_if_past_until",
    "last_post",
    "live_announcement",
    "next_scheduled_fire",
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
    NO_OCCURRENCE = "no occurrence then"
    ALREADY_SKIPPED = "already skipped"
    NOT_SKIPPED = "not skipped"
    TOO_MANY_SKIPS = "too many skips"
    BEING_POSTED = "being posted"
    TIMES_ONE_OFF = "times on a one-off"
    NOT_SCHEDULED = "not scheduled"
    """Paused: it has no next post to post now, or to show."""
    NOTHING_NEXT = "no next post"


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
    """What ``/skip`` (or ``/unskip``) did: the first occurrence it skipped (or brought
    back), how many (``count``, at most ``COUNTED``; more: ``COUNTED + 1``), the span
    named (None: the next occurrence), and the one that comes next (None when the
    announcement ends first)."""

    announcement: Announcement
    skipped: datetime
    then: datetime | None
    count: int = 1
    span: Skip | None = None


COUNTED = 999
"""The most occurrences a skip's answer counts (a per-minute rule skipped for a week has
thousands)."""


def at(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


async def coming_fires(
    sched: Scheduler, a: Announcement, now: datetime, skipped: Collection[float]
) -> Iterator[datetime]:
    """The occurrences of ``a`` still to come (after ``now``), earliest first, one at a
    time as the caller reads them: a one-off's time if it is after ``now``; a recurring
    one's by its schedule's trigger (the one the scheduler fires from, its skipped dates
    excluded), from its first occurrence not yet run on, up to its ``until`` and its
    ``times``-th post, the ``skipped`` fire times (recorded skipped ahead) left out. None
    for a paused or ended schedule. The caller stops reading when it has enough (a
    recurring one without an end never ends)."""
    if a.schedule_name is None:
        first = at(a.first_ts)
        return iter([first] if first > now else [])
    return (fire for fire in await _fires(sched, a, skipped) if fire > now)


async def _fires(
    sched: Scheduler, a: Announcement, skipped: Collection[float]
) -> Iterator[datetime]:
    """:func:`coming_fires` of a recurring announcement, from its first occurrence not yet
    run on, ``now`` or not."""
    if a.schedule_name is None:
        raise RuntimeError("a recurring announcement has a schedule")
    try:
        schedule = await sched.schedules.get(a.schedule_name)
    except ScheduleNotFound:
        return iter([])
    if schedule.paused or schedule.next_fire is None:
        return iter([])
    start = schedule.next_fire
    left: int | None = None
    recorded: dict[float, DeliveryState] = {}
    async with sched.reader() as db:
        rows = BotDb(db)
        # An occurrence already due whose job has not run yet is still to come.
        pending = await rows.next_occurrence(a.schedule_name, SEND_FN)
        if pending is not None:
            start = min(start, at(pending))
        if a.times is not None:
            left = a.times - await rows.posts_made(a.id)
            recorded = await rows.states_from(a.id, start.timestamp())
    return _walk(start, schedule.trigger.next_after, a.until_ts, skipped, left, recorded)


_POSTED = (DeliveryState.SENT, DeliveryState.SENDING)


def _walk(
    fire: datetime,
    after: Callable[[datetime], datetime],
    until_ts: float | None,
    skipped: Collection[float],
    left: int | None = None,
    recorded: Mapping[float, DeliveryState] | None = None,
) -> Iterator[datetime]:
    """The fire times from ``fire`` on, up to ``until_ts`` and ``left`` more posts (one
    ``recorded`` posted already counts among those made), ``skipped`` ones left out."""
    while until_ts is None or fire.timestamp() <= until_ts:
        ts = fire.timestamp()
        if ts not in skipped:
            if recorded and recorded.get(ts) in _POSTED:
                yield fire  # being posted: counted among the posts made already
            elif left is not None and left <= 0:
                return
            else:
                yield fire
                if left is not None:
                    left -= 1
        fire = after(fire)


async def last_post(sched: Scheduler, a: Announcement) -> datetime | None:
    """When a recurring announcement with ``times`` posts for the last time (one being
    posted, or due and not yet run, included; None: it has no ``times``, or nothing is
    left to post)."""
    if a.times is None or a.schedule_name is None:
        return None
    last = None
    for fire in await _fires(sched, a, ()):
        last = fire
    if last is None:  # its posts are made: the last is the latest one
        async with sched.reader() as db:
            latest = await BotDb(db).latest_post(a.id)
        last = None if latest is None else at(latest)
    return last


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
    """End a scheduled recurring announcement that made its ``times`` posts, or whose next
    time is past its until (``done``, its schedule deleted, the bot's ``ended`` in its
    history); whether it ended."""
    if a.schedule_name is None or a.state != AnnouncementState.SCHEDULED:
        return False
    if a.times is not None and await BotDb(ctx.db).posts_made(a.id) >= a.times:
        await end_announcement(ctx, a, f"{a.times} posts made")
        return True
    if a.until_ts is None:
        return False
    nxt = await next_scheduled_fire(ctx, a)
    if nxt is not None and nxt.timestamp() <= a.until_ts:
        return False
    await end_announcement(ctx, a)
    return True


async def end_announcement(
    ctx: TransactionContext, a: Announcement, detail: str | None = None
) -> None:
    """A recurring announcement reached its until (or made its ``times`` posts: ``detail``
    says so): ``done``, its schedule deleted."""
    if a.schedule_name is not None:
        with contextlib.suppress(ScheduleNotFound):
            await ctx.scheduler.schedules.delete(a.schedule_name)
    rows = BotDb(ctx.db)
    now = ctx.now.timestamp()
    await rows.set_state(a.id, AnnouncementState.DONE, now)
    if detail is None:
        detail = "" if a.until_ts is None else f"until {stamp(a.until_ts)} reached"
    await rows.add_history(a.id, HistoryAction.ENDED, None, now, detail)
