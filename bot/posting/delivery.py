"""Posting announcements: one scheduler action per occurrence, each posted at most once.

The occurrence's row in ``bot_deliveries`` is written (state ``sending``, with its
deterministic nonce) before the message is sent, and the message id after. So:

- a job that finds a message id recorded for its occurrence does nothing more;
- a re-run after a crash or a transient error re-sends with the same nonce, which Discord
  answers with the first message instead of a second one (``enforce_nonce``), but only
  while Discord still remembers the nonce; later, it is reported as "may not have been
  delivered" instead of risking a duplicate;
- permanent errors (Unknown Channel, Missing Access, Missing Permissions, other 4xx) fail
  the occurrence at once, pause a recurring announcement and are reported.

discord.py handles 429s itself (it sleeps and retries); nothing here catches one. Sends to
one channel are spaced by the scheduler, in due order and across every instance: each
occurrence job carries its channel's pace (``bot.announcements.jobs.channel_pace``), so a
job waiting for its channel's turn is not claimed yet and holds nothing. The job keeps its
lease with heartbeats while it waits for the client and sends.

Right before every request that posts something, the job makes sure it still holds its lease
for longer than that request may take (``hold_lease``): a process that was paused (a VM
migration, ``docker pause``, a suspended laptop) while another one took its job over must not
post it again when it wakes up, after Discord has forgotten the nonce.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import aiohttp
import discord

from scheduler import (
    ActionContext,
    NonRetryable,
    Registry,
    Retry,
    RetryLater,
    TransactionContext,
)

from ..announcements import MOVED, SEND_FN, Announcement, Announcements, enqueue_post_update
from ..announcements.course import end_announcement, end_if_past_until
from ..announcements.jobs import enqueue_publish
from ..db import BotDb
from ..metrics import BotStats
from ..models import (
    INTERRUPTED_AND_STOPPED,
    AnnouncementState,
    DeliveryState,
    Destination,
    HistoryAction,
    PublishState,
    nonce_for,
)
from .forums import create_forum_post, find_forum_post
from .lease import hold_lease, keep_lease
from .pacer import ChannelPacer
from .payload import PostPayload, allowed_mentions, post_payload, with_late_note

__all__ = [
    "PERMANENT_CODES",
    "SEND_RETRY",
    "Delivery",
    "allowed_mentions",
    "describe",
    "nonce_for",
    "permanent",
    "with_late_note",
]

log = logging.getLogger("crier.delivery")  # tests and operators filter on this name

PERMANENT_CODES = {
    10003: "Unknown Channel: the channel was deleted",
    50083: "Thread archived or locked: nothing can be posted in it",
    160005: "Thread locked: nothing can be posted in it",
    50001: "Missing Access: the bot cannot see the channel",
    50013: "Missing Permissions: the bot may not post in the channel",
}
LATE_NOTE_AFTER = 60.0
SEND_ATTEMPTS = 5
"""Sends of one occurrence that may fail with a transient error before it is reported."""
SEND_RETRY = Retry(max_failures=400, initial_backoff=2.0, base=2.0)
"""The job's own budget is far larger than SEND_ATTEMPTS because the scheduler also spends it
when a crash interrupts a delivery (its lease expires): a crash loop must not use it up and
drop the occurrence without a word. An interrupted delivery is re-sent with the same nonce
until it is recorded, or reported by ``_begin_attempt`` once its first attempt is older than
the nonce window (at most 300 s; with leases of at least 1 s that is fewer than 400
re-dispatches)."""


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


@dataclass(frozen=True, slots=True)
class Attempt:
    """What the bookkeeping before a send decided."""

    action: Decision
    nonce: str = ""
    reason: str = ""
    again: bool = False
    """An earlier attempt at it was interrupted: it may have posted (see bot.posting.forums)."""


class Delivery:
    def __init__(
        self,
        client: discord.Client,
        announcements: Announcements,
        *,
        pacer: ChannelPacer,
        catch_up_window: float,
        nonce_window: float,
        heartbeat_every: float,
        lease_needed: float,
        publish_spacing: float,
        ready: asyncio.Event | None = None,
        stats: BotStats | None = None,
    ) -> None:
        self.client = client
        self.stats = stats if stats is not None else BotStats()
        """What this process's deliveries and edits did (``/metrics``)."""
        self.ready = ready
        """Set once the client is logged in (sends wait for it)."""
        self.announcements = announcements
        self.pacer = pacer
        """Spaces what this process posts to one channel outside a delivery job (log-channel
        reports, edits of posted messages); deliveries are paced by the scheduler."""
        self.catch_up_window = catch_up_window
        self.nonce_window = nonce_window
        self.heartbeat_every = heartbeat_every
        self.publish_spacing = publish_spacing
        """Seconds between the starts of two publishes in one announcement channel, across
        every instance (each publish job carries its channel's ``publish_pace``)."""
        self.send_timeout = nonce_window / 3
        """How long one send may take before it is abandoned (and retried with the same
        nonce): well inside the nonce window, so the retry can still be deduplicated."""
        self.lease_needed = lease_needed
        """How long the lease must surely last when a send starts (see ``lease_needed``)."""

    def register(self, registry: Registry) -> None:
        registry.action(SEND_FN, idempotent=True, retry=SEND_RETRY)(self.send)

    # --- the action ------------------------------------------------------------------------

    async def send(self, ctx: ActionContext, args: dict[str, Any]) -> dict[str, Any]:
        ann = await self.announcements.by_id(int(args["announcement_id"]))
        fire_ts = float(args.get("fire_ts") or ctx.job.fire_ts or 0.0)
        if ann is None or ann.state != AnnouncementState.SCHEDULED:
            state = str(AnnouncementState.CANCELED if ann is None else ann.state)
            if ann is not None:
                # An attempt a crash interrupted, then the announcement was canceled (or
                # paused, or ended): it is not sent again, and its row must not stay
                # "sending" for ever. Whether the interrupted attempt reached Discord can't
                # be known without sending again, so the row says so.
                await ctx.run_mutation(
                    self._close_interrupted,
                    {"ann": ann.id, "fire_ts": fire_ts, "state": state},
                )
            return {"skipped": state}
        if ann.until_ts is not None and fire_ts > ann.until_ts:
            await ctx.run_mutation(self._end, {"ann": ann.id})
            return {"skipped": "past until"}
        found_at = ctx.now.timestamp()
        # Late means found late (after downtime), not queued behind this channel's others.
        late = found_at - fire_ts >= LATE_NOTE_AFTER
        try:
            async with keep_lease(ctx, self.heartbeat_every):
                if self.ready is not None:
                    await self.ready.wait()
                now = ctx.now.timestamp()
                attempt: Attempt = await ctx.run_mutation(
                    self._begin_attempt,
                    {
                        "ann": ann.id,
                        "fire_ts": fire_ts,
                        "job": ctx.job.id,
                        "found_at": found_at,
                        "now": now,
                    },
                )
                if attempt.action == Decision.DONE:
                    return {"already": attempt.reason}
                if attempt.action in (Decision.MISSED, Decision.UNKNOWN):
                    await self._fail(ctx, ann, fire_ts, attempt.reason, pause=False)
                    raise NonRetryable(attempt.reason)
                late_by = max(0.0, now - fire_ts)
                payload = await self.payload(ann, fire_ts if late else None)
                # Nothing may post for a run that could have lost its job meanwhile.
                await hold_lease(ctx, self.lease_needed)
                if attempt.again and ann.rich.destination != Destination.FORUM:
                    self.stats.nonce_resends += 1  # (a forum post has no nonce)
                # A send that hangs is abandoned well inside the nonce window, so its retry
                # can still be deduplicated by Discord.
                async with asyncio.timeout(self.send_timeout):
                    message_id = await self.post(ann, payload, attempt)
        except discord.RateLimited as exc:  # a 429 longer than discord.py waits out itself
            reason = f"rate limited for {exc.retry_after:.0f}s"
            await self._transient(ctx, ann, fire_ts, reason)
            raise RetryLater(reason) from exc
        except discord.HTTPException as exc:
            if permanent(exc):
                reason = describe(exc)
                await self._fail(ctx, ann, fire_ts, reason, pause=ann.recurring)
                raise NonRetryable(reason) from exc
            reason = describe(exc)
            await self._transient(ctx, ann, fire_ts, reason)
            raise RetryLater(reason) from exc
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            await self._transient(ctx, ann, fire_ts, reason)
            raise RetryLater(reason) from exc
        await ctx.run_mutation(
            self._record_sent,
            {
                "ann": ann.id,
                "fire_ts": fire_ts,
                "message": message_id,
                "late_by": late_by,
                "revision": ann.revision,
                "channel": ann.channel_id,
                "destination": ann.rich.destination.value,
                "publish": ann.rich.publish,
            },
        )
        self._count_sent(late=late, again=attempt.again)
        return {"message_id": message_id, "late_by": round(late_by, 3)}

    # --- what is posted, and where (see bot.posting.payload, bot.requests.destinations) ---

    async def payload(self, ann: Announcement, late_for: float | None) -> PostPayload:
        """The post of ``ann`` as it is now, with its stored files."""
        async with self.announcements.sched.reader() as db:
            images = await BotDb(db).images(ann.id)
        return post_payload(ann, images, late_for)

    async def post(self, ann: Announcement, payload: PostPayload, attempt: Attempt) -> int:
        """Post ``payload`` where ``ann`` goes (a channel or thread: a message with the
        occurrence's nonce; a forum: a new post, unless an interrupted attempt made it);
        returns the message's id."""
        if ann.rich.destination == Destination.FORUM:
            if attempt.again:
                found = await find_forum_post(self.client, self.announcements.sched, ann)
                if found is not None:
                    log.info("announcement %d: found forum post %d made earlier", ann.id, found)
                    return found
            return await create_forum_post(self.client, ann, payload)
        channel = self.client.get_partial_messageable(ann.channel_id)
        message = await channel.send(nonce=attempt.nonce, **payload.send_options())
        return message.id

    async def _after_post(self, ctx: TransactionContext, args: dict[str, Any]) -> None:
        """In the transaction that records the post: a forum post's thread is recorded (an
        interrupted attempt's re-run finds it taken), and a post to publish gets its job."""
        rows = BotDb(ctx.db)
        ann_id, fire_ts, message_id = int(args["ann"]), float(args["fire_ts"]), args["message"]
        if args.get("destination") == Destination.FORUM:
            await rows.set_thread(ann_id, fire_ts, int(message_id))
        if args.get("publish"):
            await rows.set_publish(ann_id, fire_ts, PublishState.PENDING, None, None)
            await enqueue_publish(
                ctx,
                {
                    "announcement_id": ann_id,
                    "fire_ts": fire_ts,
                    "channel_id": int(args["channel"]),
                    "message_id": int(message_id),
                    "posted_at": ctx.now.timestamp(),
                    "round": 0,
                },
                spacing=self.publish_spacing,
            )

    def _count_sent(self, *, late: bool, again: bool) -> None:
        stats = self.stats
        stats.deliveries_sent += 1
        stats.deliveries_late += late
        stats.deliveries_resent += again

    async def _transient(
        self, ctx: ActionContext, ann: Announcement, fire_ts: float, reason: str
    ) -> None:
        """A failure that may pass. The next attempt re-sends with the same nonce; on the
        last one, give up and report it. A run that lost its job meanwhile (a send in flight
        when the process was paused times out as it wakes) says nothing: it is discarded."""
        await hold_lease(ctx, 0.0)
        if ctx.job.attempt + 1 >= SEND_ATTEMPTS:
            tries = ctx.job.attempt + 1
            why = f"may not have been delivered: {reason} (gave up after {tries} attempts)"
            await self._fail(ctx, ann, fire_ts, why, pause=False)
            raise NonRetryable(why)
        log.warning(
            "announcement %d (guild %d, channel %d, job %d): %s; will retry",
            ann.id, ann.guild_id, ann.channel_id, ctx.job.id, reason,
        )  # fmt: skip
        # (The job's failed attempt is then logged by the scheduler, in one line.)
        await ctx.run_mutation(
            self._record_transient_error, {"ann": ann.id, "fire_ts": fire_ts, "error": reason}
        )

    async def _fail(
        self, ctx: ActionContext, ann: Announcement, fire_ts: float, reason: str, *, pause: bool
    ) -> None:
        recorded: bool = await ctx.run_mutation(
            self._record_failure,
            {"ann": ann.id, "fire_ts": fire_ts, "error": reason, "pause": pause},
        )
        if not recorded:
            return  # another run delivered it meanwhile: there is no failure to report
        self.stats.deliveries_failed += 1
        await hold_lease(ctx, self.lease_needed)
        await self.report(ann, ctx.job.id, reason, paused=pause)

    # --- reporting -------------------------------------------------------------------------

    async def report(self, ann: Announcement, job_id: int, reason: str, *, paused: bool) -> None:
        """Log the failure with every id, and post it to the guild's log channel if set."""
        log.error(
            "announcement %d (#%d) failed: %s [guild %d, channel %d, job %d]%s",
            ann.id, ann.local_id, reason, ann.guild_id, ann.channel_id, job_id,
            "; recurring announcement paused" if paused else "",
        )  # fmt: skip
        text = (
            f"⚠️ Announcement #{ann.local_id} for <#{ann.channel_id}> could not be posted: "
            f"{reason}."
            + (" It is paused; schedule it again once this is fixed." if paused else "")
        )
        await self.tell_log_channel(ann.guild_id, text)

    async def tell_log_channel(self, guild_id: int, text: str) -> None:
        """Post ``text`` (pinging no one) to the guild's log channel, if it has one."""
        settings = await self.announcements.settings(guild_id)
        if settings.log_channel_id is None:
            return
        try:
            async with self.pacer.slot(settings.log_channel_id) as turn:
                turn.sent = True
                await self.client.get_partial_messageable(settings.log_channel_id).send(
                    text, allowed_mentions=discord.AllowedMentions.none()
                )
        except discord.HTTPException as exc:
            log.warning(
                "could not post the failure report to log channel %d of guild %d: %s",
                settings.log_channel_id, guild_id, describe(exc),
            )  # fmt: skip

    # --- bookkeeping mutations ---------------------------------------------------------------

    async def _begin_attempt(self, ctx: TransactionContext, args: dict[str, Any]) -> Attempt:
        rows = BotDb(ctx.db)
        ann_id, fire_ts, job_id = int(args["ann"]), float(args["fire_ts"]), int(args["job"])
        now = float(args["now"])
        record = await rows.delivery(ann_id, fire_ts)
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
                return Attempt(
                    Decision.DONE, reason=f"{record.state} (message {record.message_id})"
                )
            since = now - record.first_attempt_at
            if since > self.nonce_window:
                return Attempt(
                    Decision.UNKNOWN,
                    reason=(
                        "may not have been delivered: an attempt was interrupted "
                        f"{since:.0f}s ago, longer than Discord remembers a "
                        "nonce, so it was not sent again"
                    ),
                )
            await rows.retry_delivery(ann_id, fire_ts, job_id)
            return Attempt(Decision.SEND, nonce=record.nonce, again=True)
        late = float(args["found_at"]) - fire_ts
        nonce = nonce_for(ann_id, fire_ts)
        if late > self.catch_up_window:
            reason = (
                f"missed: it was due {late / 60:.0f} minutes earlier, while the bot was offline"
            )
            await rows.record_missed(ann_id, fire_ts, job_id, nonce, now, reason)
            return Attempt(Decision.MISSED, reason=reason)
        await rows.begin_delivery(ann_id, fire_ts, job_id, nonce, now)
        return Attempt(Decision.SEND, nonce=nonce)

    async def _record_sent(self, ctx: TransactionContext, args: dict[str, Any]) -> None:
        """Record the occurrence sent, showing the revision it was sent with; if an edit
        landed while it was being sent, bring the posted message up to date (a job, in this
        same transaction), unless the edit moved the announcement to another channel."""
        rows = BotDb(ctx.db)
        now = ctx.now.timestamp()
        ann_id, fire_ts, sent_revision = args["ann"], args["fire_ts"], int(args["revision"])
        await rows.mark_sent(ann_id, fire_ts, args["message"], now, args["late_by"], sent_revision)
        await rows.record_posted(ann_id, args["message"], now)
        await self._after_post(ctx, args)
        ann = await rows.announcement(ann_id)
        assert ann is not None  # announcements are never deleted
        if ann.channel_id != int(args["channel"]):
            await rows.set_update_error(ann_id, fire_ts, MOVED.format(ann.channel_id))
        elif ann.revision > sent_revision:
            await enqueue_post_update(ctx, ann_id, fire_ts, ann.channel_id, ann.revision)
        await _end_if_finished(ctx, int(ann_id))

    async def _end(self, ctx: TransactionContext, args: dict[str, Any]) -> None:
        """An occurrence past the announcement's until came due: it ends, posting nothing."""
        ann = await BotDb(ctx.db).announcement(int(args["ann"]))
        if ann is not None and ann.state == AnnouncementState.SCHEDULED:
            await end_announcement(ctx, ann)

    async def _close_interrupted(self, ctx: TransactionContext, args: dict[str, Any]) -> None:
        await BotDb(ctx.db).close_interrupted_delivery(
            args["ann"],
            args["fire_ts"],
            INTERRUPTED_AND_STOPPED.format(state=args["state"]),
        )

    async def _record_transient_error(self, ctx: TransactionContext, args: dict[str, Any]) -> None:
        await BotDb(ctx.db).note_delivery_error(args["ann"], args["fire_ts"], args["error"])

    async def _record_failure(self, ctx: TransactionContext, args: dict[str, Any]) -> bool:
        """Record the occurrence failed (and its announcement failed or paused); False when
        it was recorded sent meanwhile (by a run that took the job over), so nothing is."""
        rows = BotDb(ctx.db)
        if not await rows.mark_delivery_failed(args["ann"], args["fire_ts"], args["error"]):
            return False
        ann = await rows.announcement(args["ann"])
        assert ann is not None  # announcements are never deleted
        if not ann.recurring:
            new_state = AnnouncementState.FAILED
        elif args["pause"]:
            new_state = AnnouncementState.PAUSED
            if ann.schedule_name is not None:
                await ctx.scheduler.schedules.pause(ann.schedule_name)
        else:
            new_state = ann.state  # one occurrence lost; the recurrence goes on
        now = ctx.now.timestamp()
        await rows.set_failure(ann.id, new_state, args["error"], now)
        if new_state != ann.state:  # the bot's own change, kept in the history
            detail = args["error"] + ("; paused" if new_state == AnnouncementState.PAUSED else "")
            await rows.add_history(ann.id, HistoryAction.FAILED, None, now, detail)
        return True


async def _due_while_paused(rows: BotDb, ann_id: int, fire_ts: float) -> bool:
    resumed_at = await rows.last_change_at(ann_id, HistoryAction.RESUMED)
    return resumed_at is not None and fire_ts < resumed_at


async def _end_if_finished(ctx: TransactionContext, ann_id: int) -> None:
    """After an occurrence (posted or skipped): end the announcement now if its next time
    is past its until, so that /list shows it ended."""
    ann = await BotDb(ctx.db).announcement(ann_id)
    if ann is not None:
        await end_if_past_until(ctx, ann)


def permanent(exc: discord.HTTPException) -> bool:
    if exc.code in PERMANENT_CODES:
        return True
    return 400 <= exc.status < 500 and exc.status != 429


def describe(exc: discord.HTTPException) -> str:
    known = PERMANENT_CODES.get(exc.code)
    if known:
        return f"{known} ({exc.code})"
    text = exc.text or exc.__class__.__name__
    return f"HTTP {exc.status}" + (f" code {exc.code}" if exc.code else "") + f": {text}"
