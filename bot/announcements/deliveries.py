"""The bookkeeping of an occurrence's delivery, its update and its publish: what the posting
jobs (:mod:`bot.posting`) record, each function one mutation written in the caller's
transaction (``await ctx.run_mutation(lambda tx, _: record_failure(tx, ...))``).

An occurrence's row in ``bot_deliveries`` is written (``sending``, with its deterministic
nonce) before its message is sent (:func:`begin_attempt`), and the message id after
(:func:`record_sent`); whatever ends it otherwise is recorded here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from ..db import BotDb
from ..models import (
    INTERRUPTED_AND_STOPPED,
    Announcement,
    AnnouncementState,
    DeliveryState,
    Destination,
    HistoryAction,
    PublishState,
    Shown,
    nonce_for,
)
from ..parsing.skips import holds
from .course import end_announcement, end_if_past_until
from .editing import MOVED
from .events import sync_events_later
from .jobs import PublishArgs, enqueue_post_update, enqueue_publish
from .places import plan_places, update_places_later
from .previous import post_up

if TYPE_CHECKING:
    from scheduler import TransactionContext
AWAY = "not posted: the bot was not in this server at the time"
"""Why an occurrence that came due while the bot was out of its server was not posted."""
FORGOTTEN = "not posted: the announcement was deleted with everything of its server"
"""Why a delivery found its announcement gone (its server forgotten while it was due)."""

__all__ = [
    "AWAY",
    "Attempt",
    "Decision",
    "begin_attempt",
    "close_interrupted",
    "end_past_until",
    "note_transient_error",
    "record_away",
    "record_failure",
    "record_post_update_failed",
    "record_post_updated",
    "record_publish",
    "record_sent",
]


class Decision(StrEnum):
    """What the bookkeeping before a send decided to do with the occurrence."""

    SEND = "send"
    """Post it (again, with the same nonce, if an attempt was interrupted)."""
    DONE = "done"
    """Nothing: it is already recorded sent (or failed)."""
    MISSED = "missed"
    """Report it missed: it was found later than the catch-up window."""
    UNKNOWN = "unknown"
    """Report it may not have been delivered: an attempt is older than the nonce window."""
    AWAY = "away"
    """Nothing, and no report: the bot is out of the announcement's server (recorded)."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """What the bookkeeping before a send decided."""

    action: Decision
    nonce: str = ""
    reason: str = ""
    again: bool = False
    """An earlier attempt at it was interrupted: it may have posted (see bot.posting.forums)."""
    first_attempt_at: float | None = None
    """When the first attempt was made (set when ``again``): a re-send says what it said."""
    shown: Shown | None = None
    """What the first attempt showed, recorded with it (its language, its event): every
    attempt shows it. None only for a re-send of an attempt recorded before it was kept
    (those read both again, as they did)."""


async def begin_attempt(
    ctx: TransactionContext,
    ann_id: int,
    fire_ts: float,
    *,
    job_id: int,
    found_at: float,
    now: float,
    catch_up_window: float,
    nonce_window: float,
    guild_id: int | None = None,
    locale: str | None = None,
    spacing: float = 0.0,
) -> Attempt:
    """Decide what a delivery job found at ``found_at`` does with the occurrence at
    ``fire_ts`` and record it: a first attempt is recorded ``sending`` with its nonce; an
    interrupted one is sent again with the same nonce while Discord still remembers it
    (``nonce_window``), else reported; one found later than ``catch_up_window`` is missed;
    a time that came due while the announcement was paused is skipped; one that came due
    while the bot was out of the server (``guild_id``, recorded left) is missed, and a
    one-off then fails, with nothing sent nor reported; an announcement deleted meanwhile
    (its server forgotten) records nothing.

    A first attempt records what it shows besides the occurrence itself: ``locale`` (the
    server's language as the caller read it just before) and the occurrence's Discord
    event, read here, in the same transaction; a re-send gets the recorded ones back.

    A first attempt also plans the occurrence's posts in the announcement's other places
    (:func:`~bot.announcements.places.plan_places`, each paced by ``spacing`` in its channel),
    in this same transaction."""
    rows = BotDb(ctx.db)
    if not await rows.lock_announcement(ann_id):
        # Its server was forgotten since the job read it (the forget job, due at the same
        # time): nothing is recorded of an announcement that is no more. Locked, it stays
        # until this commits: the forget job waits, then deletes what this records.
        return Attempt(Decision.AWAY, reason=FORGOTTEN)
    record = await rows.delivery(ann_id, fire_ts)
    if record is None and guild_id is not None and await rows.left_guild(guild_id):
        await record_away(ctx, ann_id, fire_ts, AWAY)
        return Attempt(Decision.AWAY, reason=AWAY)
    if record is None and (reason := await _not_to_post(rows, ann_id, fire_ts)) is not None:
        # Skipped, or past its last post, by a change that committed after its job was made.
        await rows.record_skipped(ann_id, fire_ts, nonce_for(ann_id, fire_ts), now, reason)
        await _end_if_finished(ctx, ann_id)
        return Attempt(Decision.DONE, reason=reason)
    if record is None and await _due_while_paused(rows, ann_id, fire_ts):
        # It came due before the announcement was last resumed: a time missed while
        # paused is never posted late.
        reason = "due while the announcement was paused"
        await rows.record_skipped(ann_id, fire_ts, nonce_for(ann_id, fire_ts), now, reason)
        return Attempt(Decision.DONE, reason=reason)
    if record is not None:
        if record.state == DeliveryState.SKIPPED:
            await _end_if_finished(ctx, ann_id)
        if record.state != DeliveryState.SENDING:
            return Attempt(Decision.DONE, reason=f"{record.state} (message {record.message_id})")
        since = now - record.first_attempt_at
        if since > nonce_window:
            return Attempt(
                Decision.UNKNOWN,
                reason=(
                    "may not have been delivered: an attempt was interrupted "
                    f"{since:.0f}s ago, longer than Discord remembers a "
                    "nonce, so it was not sent again"
                ),
            )
        await rows.retry_delivery(ann_id, fire_ts, job_id)
        return Attempt(
            Decision.SEND,
            nonce=record.nonce,
            again=True,
            first_attempt_at=record.first_attempt_at,
            shown=record.shown,
        )
    late = found_at - fire_ts
    nonce = nonce_for(ann_id, fire_ts)
    if late > catch_up_window:
        reason = f"missed: it was due {late / 60:.0f} minutes earlier, while the bot was offline"
        await rows.record_missed(ann_id, fire_ts, job_id, nonce, now, reason)
        return Attempt(Decision.MISSED, reason=reason)
    event = await rows.event_at(ann_id, fire_ts)
    event_id = None if event is None or event.state != "created" else event.event_id
    shown = Shown(locale, event_id)
    await rows.begin_delivery(ann_id, fire_ts, job_id, nonce, now, shown)
    await plan_places(ctx, ann_id, fire_ts, spacing=spacing)
    return Attempt(Decision.SEND, nonce=nonce, shown=shown)


async def record_away(ctx: TransactionContext, ann_id: int, fire_ts: float, reason: str) -> None:
    """The occurrence at ``fire_ts`` was not posted because the bot is out of the server:
    recorded missed (an attempt already begun, failed), and a one-off fails; a recurring
    one goes on (its schedule is held while the bot is away). Nothing is reported."""
    rows = BotDb(ctx.db)
    now = ctx.now.timestamp()
    if await rows.delivery(ann_id, fire_ts) is None:
        await rows.record_missed(ann_id, fire_ts, None, nonce_for(ann_id, fire_ts), now, reason)
    elif not await rows.mark_delivery_failed(ann_id, fire_ts, reason):
        return  # recorded sent meanwhile
    ann = await rows.announcement(ann_id)
    if ann is not None and not ann.recurring and ann.state == AnnouncementState.SCHEDULED:
        await rows.set_failure(ann.id, AnnouncementState.FAILED, reason, now)
        await rows.add_history(ann.id, HistoryAction.FAILED, None, now, reason)
        await rows.drop_unreferenced_files(ann.id)


async def record_sent(
    ctx: TransactionContext,
    sent: Announcement,
    fire_ts: float,
    message_id: int,
    *,
    late_by: float,
    publish_spacing: float,
    edit_quiet: float,
) -> None:
    """Record the occurrence at ``fire_ts`` posted as ``message_id``, showing ``sent`` (the
    announcement as it was posted). A forum post's thread is recorded (an interrupted
    attempt's re-run finds it taken), and a post to publish gets its job, paced by
    ``publish_spacing``. If an edit landed while it was being posted, the posted message is
    brought up to date (a job, in this same transaction, ``edit_quiet`` seconds after the
    last of a burst of edits), unless the edit moved the announcement to another channel."""
    rows = BotDb(ctx.db)
    now = ctx.now.timestamp()
    ann_id = sent.id
    await rows.mark_sent(ann_id, fire_ts, message_id, now, late_by, sent.revision)
    await rows.record_posted(ann_id, message_id, now)
    await post_up(ctx, ann_id, sent.guild_id, sent.channel_id, message_id)
    if sent.rich.destination == Destination.FORUM:
        await rows.set_thread(ann_id, fire_ts, message_id)
    if sent.rich.publish:
        await rows.set_publish(ann_id, fire_ts, PublishState.PENDING, None, None)
        publish = PublishArgs(ann_id, fire_ts, sent.channel_id, message_id, now)
        await enqueue_publish(ctx, publish, spacing=publish_spacing)
    ann = await rows.announcement(ann_id)
    if ann is None:
        raise RuntimeError("announcements are never deleted")
    if ann.channel_id != sent.channel_id:
        await rows.set_update_error(ann_id, fire_ts, MOVED.format(ann.channel_id))
    elif ann.revision > sent.revision:
        await enqueue_post_update(ctx, ann_id, fire_ts, ann.channel_id, quiet=edit_quiet)
        await update_places_later(ctx, ann_id, fire_ts, ann.revision)
    await _end_if_finished(ctx, ann_id)


async def end_past_until(ctx: TransactionContext, ann_id: int) -> None:
    """An occurrence past the announcement's until came due: it ends, posting nothing."""
    ann = await BotDb(ctx.db).announcement(ann_id)
    if ann is not None and ann.state == AnnouncementState.SCHEDULED:
        await end_announcement(ctx, ann)


async def close_interrupted(
    ctx: TransactionContext, ann_id: int, fire_ts: float, state: AnnouncementState
) -> None:
    """An attempt a crash interrupted, and the announcement is no longer scheduled
    (``state``): its row must not stay ``sending`` for ever, and says it may not have
    been delivered."""
    reason = INTERRUPTED_AND_STOPPED.format(state=state)
    await BotDb(ctx.db).close_interrupted_delivery(ann_id, fire_ts, reason)


async def note_transient_error(
    ctx: TransactionContext, ann_id: int, fire_ts: float, error: str
) -> None:
    """A send failed in a way that may pass (it is retried): the row shows why."""
    await BotDb(ctx.db).note_delivery_error(ann_id, fire_ts, error)


async def record_failure(
    ctx: TransactionContext, ann_id: int, fire_ts: float, error: str, *, pause: bool
) -> bool:
    """Record the occurrence failed with ``error``: a one-off announcement fails; a
    recurring one is paused when ``pause`` (its schedule too), else goes on. False when the
    occurrence was recorded sent meanwhile (by a run that took the job over): nothing is."""
    rows = BotDb(ctx.db)
    if not await rows.mark_delivery_failed(ann_id, fire_ts, error):
        return False
    ann = await rows.announcement(ann_id)
    if ann is None:
        raise RuntimeError("announcements are never deleted")
    if not ann.recurring:
        new_state = AnnouncementState.FAILED
    elif pause:
        new_state = AnnouncementState.PAUSED
        if ann.schedule_name is not None:
            await ctx.scheduler.schedules.pause(ann.schedule_name)
    else:
        new_state = ann.state  # one occurrence lost; the recurrence goes on
    now = ctx.now.timestamp()
    await rows.set_failure(ann.id, new_state, error, now)
    if new_state != ann.state:  # the bot's own change, kept in the history
        detail = error + ("; paused" if new_state == AnnouncementState.PAUSED else "")
        await rows.add_history(ann.id, HistoryAction.FAILED, None, now, detail)
        await sync_events_later(ctx, ann.id)  # paused by a failure: its coming events go
    await rows.drop_unreferenced_files(ann.id)  # a failed one-off never posts again
    return True


async def record_post_updated(
    ctx: TransactionContext,
    ann_id: int,
    fire_ts: float,
    revision: int,
    *,
    job_id: int | None = None,
) -> None:
    """The occurrence's posted message now shows ``revision`` (kept in the history); the
    files of a canceled announcement go with the last job (``job_id``, this one) needing them."""
    rows = BotDb(ctx.db)
    await rows.record_post_revision(ann_id, fire_ts, revision)
    now = ctx.now.timestamp()
    await rows.add_history(ann_id, HistoryAction.POST_UPDATED, None, now, f"revision {revision}")
    await rows.drop_unreferenced_files(ann_id, running_job=job_id)


async def record_post_update_failed(
    ctx: TransactionContext,
    ann_id: int,
    fire_ts: float,
    error: str,
    *,
    job_id: int | None = None,
) -> None:
    """The occurrence's posted message can't be brought up to date (kept in the history);
    no later edit tries again (files: see :func:`record_post_updated`)."""
    rows = BotDb(ctx.db)
    await rows.set_update_error(ann_id, fire_ts, error)
    now = ctx.now.timestamp()
    await rows.add_history(ann_id, HistoryAction.POST_UPDATE_FAILED, None, now, error)
    await rows.drop_unreferenced_files(ann_id, running_job=job_id)


async def record_publish(
    ctx: TransactionContext, ann_id: int, fire_ts: float, state: PublishState, error: str | None
) -> None:
    """How the publish of the occurrence's post ended."""
    await BotDb(ctx.db).set_publish(ann_id, fire_ts, state, error, ctx.now.timestamp())


SKIPPED_DATE = "skipped (/skip)"
TIMES_MADE = "not posted: it had made its {times} posts"


async def _not_to_post(rows: BotDb, ann_id: int, fire_ts: float) -> str | None:
    """Why the announcement's rule no longer posts the occurrence at ``fire_ts`` (its
    skipped dates hold it, or it made its ``times`` posts), or None."""
    ann = await rows.announcement(ann_id)
    if ann is None or not ann.recurring:
        return None
    if ann.repeat_skips and holds(
        ann.repeat_skips, datetime.fromtimestamp(fire_ts, UTC), ZoneInfo(ann.timezone)
    ):
        return SKIPPED_DATE
    if ann.times is not None and await rows.posts_made(ann_id) >= ann.times:
        return TIMES_MADE.format(times=ann.times)
    return None


async def _due_while_paused(rows: BotDb, ann_id: int, fire_ts: float) -> bool:
    resumed_at = await rows.last_change_at(ann_id, HistoryAction.RESUMED)
    return resumed_at is not None and fire_ts < resumed_at


async def _end_if_finished(ctx: TransactionContext, ann_id: int) -> None:
    """After an occurrence (posted or skipped): end the announcement now if its next time
    is past its until, so that /list shows it ended."""
    ann = await BotDb(ctx.db).announcement(ann_id)
    if ann is not None:
        await end_if_past_until(ctx, ann)
