"""``/postnow``: an extra post of an announcement's next occurrence, made now.

The schedule is left as it is: the occurrence still posts at its time. The command records
the extra post (its row, keyed by the interaction's id) and the job that posts it
(``announcements:postnow``, :mod:`bot.posting.extra`) in one transaction, the one that takes
the interaction's once key: however many gateway sessions see the command, one row and one
job. The job posts like a delivery: its intent recorded before the send, the send carrying
the row's nonce on every attempt, the message recorded after.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..db import BotDb
from ..models import Announcement, AnnouncementState, Shown
from .course import NotPossible, Why, live_announcement, next_scheduled_fire
from .deliveries import FORGOTTEN, Attempt, Decision
from .jobs import POSTNOW_FN, PostNowArgs
from .previous import post_up
from .reading import Reading

if TYPE_CHECKING:
    from scheduler import TransactionContext

__all__ = [
    "ExtraPosts",
    "PostNow",
    "begin_extra_attempt",
    "extra_nonce",
    "next_post_time",
    "note_extra_error",
    "record_extra_failed",
    "record_extra_sent",
]


def extra_nonce(key: str) -> str:
    """The nonce of the extra post asked for with ``key`` (at most 25 characters), the
    same for every attempt at it."""
    return "x" + hashlib.blake2b(key.encode(), digest_size=12).hexdigest()[:24]


@dataclass(frozen=True, slots=True)
class PostNow:
    """What ``/postnow`` did: the announcement, and the occurrence whose text is posted now
    (it still posts at its own time)."""

    announcement: Announcement
    fire: datetime
    extra_id: int


async def next_post_time(ctx: TransactionContext, a: Announcement) -> datetime | None:
    """The time of the announcement's next post as its schedule has it (None: none)."""
    if a.state != AnnouncementState.SCHEDULED:
        return None
    if a.schedule_name is None:
        return datetime.fromtimestamp(a.first_ts, UTC)
    return await next_scheduled_fire(ctx, a)


class ExtraPosts(Reading):
    """Extra posts (``/postnow``)."""

    async def post_now(self, guild_id: int, local_id: int, actor_id: int, key: str) -> PostNow:
        """Post the next occurrence of the guild's announcement ``local_id`` now, as an extra
        post, once per ``key`` (the interaction's id): the row and its job, in one
        transaction. Refused (:class:`NotPossible`) unless it is scheduled with a next
        post."""
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            a = await live_announcement(rows, guild_id, local_id)
            if a.state != AnnouncementState.SCHEDULED:
                raise NotPossible(Why.NOT_SCHEDULED, a)
            await rows.lock_announcement(a.id)
            fire = await next_post_time(ctx, a)
            if fire is None:
                raise NotPossible(Why.NOTHING_NEXT, a)
            now = ctx.now.timestamp()
            extra_id = await rows.add_extra_post(
                announcement_id=a.id,
                guild_id=a.guild_id,
                key=key,
                fire_ts=fire.timestamp(),
                channel_id=a.channel_id,
                nonce=extra_nonce(key),
                actor_id=actor_id,
                now=now,
            )
            await ctx.scheduler.enqueue(
                POSTNOW_FN,
                PostNowArgs(extra_id),
                idempotency_key=f"postnow:{key}",
                name=f"post announcement {a.id} now",
                pace=self.pace(a.channel_id),
            )
        return PostNow(a, fire, extra_id)


def interrupted_too_long(since: float) -> str:
    """Why an interrupted attempt is not sent again (Discord no longer knows its nonce)."""
    return (
        f"may not have been delivered: an attempt was interrupted {since:.0f}s ago, longer "
        "than Discord remembers a nonce, so it was not sent again"
    )


async def begin_extra_attempt(
    ctx: TransactionContext,
    extra_id: int,
    *,
    now: float,
    nonce_window: float,
    locale: str | None,
) -> Attempt:
    """Decide what the job posting extra post ``extra_id`` does, and record it before
    anything is sent: a first attempt is recorded ``sending`` with what it shows (``locale``,
    the occurrence's event); an interrupted one is sent again with the same nonce while
    Discord still remembers it, else it is reported; one ended already, or whose
    announcement is no longer scheduled, is not sent."""
    rows = BotDb(ctx.db)
    extra = await rows.extra_post(extra_id)
    if extra is None or not await rows.lock_announcement(extra.announcement_id):
        return Attempt(Decision.DONE, reason=FORGOTTEN)
    if extra.state not in ("queued", "sending"):
        return Attempt(Decision.DONE, reason=f"{extra.state} (message {extra.message_id})")
    if extra.state == "sending":
        first = extra.first_attempt_at if extra.first_attempt_at is not None else now
        if now - first > nonce_window:
            return Attempt(Decision.UNKNOWN, reason=interrupted_too_long(now - first))
        return Attempt(
            Decision.SEND, nonce=extra.nonce, again=True, first_attempt_at=first, shown=extra.shown
        )
    a = await rows.announcement(extra.announcement_id)
    if a is None or a.state != AnnouncementState.SCHEDULED:
        state = "deleted" if a is None else str(a.state)
        why = f"not posted: the announcement was {state} before it went out"
        await rows.mark_extra_failed(extra.id, why)
        return Attempt(Decision.DONE, reason=why)
    event = await rows.event_at(extra.announcement_id, extra.fire_ts)
    event_id = None if event is None or event.state != "created" else event.event_id
    shown = Shown(locale, event_id)
    await rows.begin_extra_post(extra.id, now, shown)
    return Attempt(Decision.SEND, nonce=extra.nonce, shown=shown)


async def record_extra_sent(ctx: TransactionContext, extra_id: int, message_id: int) -> bool:
    """The extra post is up as ``message_id``, and a post of its announcement like any
    (:func:`bot.announcements.previous.post_up`: pinned, the one before replaced...). False:
    it was ended otherwise meanwhile."""
    rows = BotDb(ctx.db)
    if not await rows.mark_extra_sent(extra_id, message_id, ctx.now.timestamp()):
        return False
    extra = await rows.extra_post(extra_id)
    if extra is not None:
        await post_up(ctx, extra.announcement_id, extra.guild_id, extra.channel_id, message_id)
    return True


async def record_extra_failed(ctx: TransactionContext, extra_id: int, error: str) -> bool:
    """The extra post failed for good (False: it was recorded sent meanwhile)."""
    return await BotDb(ctx.db).mark_extra_failed(extra_id, error)


async def note_extra_error(ctx: TransactionContext, extra_id: int, error: str) -> None:
    """An attempt failed in a way that may pass (it is tried again)."""
    await BotDb(ctx.db).note_extra_error(extra_id, error)
