"""Posting an occurrence in each other place of its announcement (``also_in``): one job per
(occurrence, place), each exactly once (see :mod:`bot.announcements.places` for the
bookkeeping).

``announcements:send_place`` posts what the occurrence posts in the announcement's own
channel, as its first attempt there showed it (the same language, event and late note: the
post is rendered by :class:`~bot.posting.delivery.Delivery`'s own rendering), in the place,
with a nonce of the place's own; it is paced with the other posts to that channel (its job
carries the channel's pace), guarded like every request that posts
(:class:`~bot.posting.poster.Poster`), and:

- a permanent refusal (the bot can't see or post in the place, it was deleted) fails this
  place's post only, with a report to the server's log channel; the announcement goes on
  (the next occurrence tries the place again);
- a transient one is retried with the same nonce, then reported "may not have been
  delivered", as a delivery's is.

An announcement that posts as someone (``as_name``) posts in each place through that
place's webhook, exactly once as in its own channel (:mod:`bot.posting.webhooks`: the
intent recorded with the place's first attempt, looked up before any re-send).

``announcements:update_place`` brings the post in a place up to date after an edit, as
:mod:`bot.posting.updates` does for the post in the announcement's own channel (through the
webhook that made it, for a post made as someone).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from scheduler import ActionContext, NonRetryable, Registry, RetryLater, TransactionContext

from .. import i18n
from ..announcements.deliveries import Attempt, Decision
from ..announcements.jobs import enqueue_report, register_job
from ..announcements.places import (
    PLACE_SEND_FN,
    PLACE_UPDATE_FN,
    PlaceArgs,
    PlaceAttempt,
    PlaceDecision,
    begin_place_attempt,
    note_place_error,
    record_place_failed,
    record_place_sent,
)
from ..db import BotDb
from ..models import PlaceState
from .delivery import SEND_ATTEMPTS, SEND_RETRY
from .failures import RequestFailed
from .payload import LATE_NOTE_AFTER, posting_locale, stored_payload
from .updates import UPDATE_RETRY, PostEditor

if TYPE_CHECKING:
    from ..announcements import Announcement, Announcements
    from ..metrics import BotStats
    from .delivery import Delivery
    from .payload import PostPayload
    from .poster import Poster
    from .webhooks import Posted

log = logging.getLogger("crier.delivery")  # tests and operators filter on this name


class PlaceDelivery:
    """The ``announcements:send_place`` action."""

    def __init__(self, delivery: Delivery, *, nonce_window: float, stats: BotStats) -> None:
        self.delivery = delivery
        self.poster: Poster = delivery.poster
        self.announcements: Announcements = delivery.announcements
        self.nonce_window = nonce_window
        self.stats = stats

    def register(self, registry: Registry) -> None:
        register_job(registry, PLACE_SEND_FN, PlaceArgs, self.send, retry=SEND_RETRY)

    async def send(self, ctx: ActionContext, args: PlaceArgs) -> dict[str, object]:
        """Post the occurrence in the place, once."""
        ann = await self.announcements.by_id(args.announcement_id)
        if ann is None:
            return {"skipped": "the announcement is gone"}
        webhooks = self.delivery.webhooks
        post_as = await self.announcements.post_as(ann.id)  # None: as the bot
        posted: Posted | None = None
        try:
            async with self.poster.holding(ctx):
                now = ctx.now.timestamp()
                window = self.nonce_window
                # As someone: through the place's webhook, its intent recorded with the attempt.
                here = None if post_as is None else await webhooks.in_place(ann, args.channel_id)

                async def begin(tx: TransactionContext, _: object) -> PlaceAttempt:
                    began = await begin_place_attempt(
                        tx, args, job_id=ctx.job.id, now=now, nonce_window=window
                    )
                    if here is not None and began.action == PlaceDecision.SEND and not began.again:
                        await webhooks.begin(tx, here, args.fire_ts)
                    return began

                attempt = await ctx.run_mutation(begin)
                if attempt.action in (PlaceDecision.DONE, PlaceDecision.SKIP):
                    return {"nothing": attempt.reason}
                if attempt.action == PlaceDecision.UNKNOWN:
                    await self._fail(ctx, ann, args, attempt.reason)
                    raise NonRetryable(attempt.reason)
                shown, payload = await self._render(ann, args.fire_ts, now)
                if here is None:
                    here = await webhooks.in_place(ann, args.channel_id)
                posted = await webhooks.post(
                    ctx, here, args.fire_ts, payload, again=attempt.again, post_as=post_as
                )
                if posted is not None:
                    message_id = posted.message_id
                else:
                    if attempt.again:
                        self.stats.nonce_resends += 1
                    message_id = await self.poster.request(
                        ctx,
                        lambda: self._post(args.channel_id, attempt.nonce, payload),
                        before="send",
                    )
        except RequestFailed as failed:
            if failed.permanent:
                await self._fail(ctx, ann, args, failed.reason)
                raise NonRetryable(failed.reason) from failed
            await self._transient(ctx, ann, args, failed.reason)
            raise RetryLater(failed.reason) from failed
        late_by = max(0.0, now - args.fire_ts)
        if posted is not None and posted.stale:  # it shows an earlier text: brought up to date
            shown = replace(shown, revision=shown.revision - 1)

        async def sent(tx: TransactionContext, _: object) -> None:
            await record_place_sent(tx, shown, args, message_id, late_by=late_by)
            if posted is not None:
                await BotDb(tx.db).set_webhook_message(
                    ann.id, args.fire_ts, args.channel_id, message_id, posted.thread_id
                )

        await ctx.run_mutation(sent)
        self.stats.deliveries_sent += 1
        return {"message_id": message_id, "channel_id": args.channel_id}

    async def _render(
        self, ann: Announcement, fire_ts: float, now: float
    ) -> tuple[Announcement, PostPayload]:
        """The post as the occurrence's first attempt in the announcement's own channel
        showed it (its language, event and late note), else as it would show now."""
        async with self.announcements.sched.reader() as db:
            first = await BotDb(db).delivery(ann.id, fire_ts)
        locale = await posting_locale(self.poster.client, self.announcements, ann.guild_id)
        if first is None:
            attempt, found_at = Attempt(Decision.SEND), now
        else:
            attempt = Attempt(
                Decision.SEND,
                nonce=first.nonce,
                again=True,
                first_attempt_at=first.first_attempt_at,
                shown=first.shown,
            )
            found_at = first.first_attempt_at
        # (Delivery's rendering: every place shows what the announcement's channel does.)
        shown, payload, _ = await self.delivery.render(ann, fire_ts, attempt, found_at, locale)
        return shown, payload

    async def _post(self, channel_id: int, nonce: str, payload: PostPayload) -> int:
        channel = self.poster.client.get_partial_messageable(channel_id)
        message = await channel.send(nonce=nonce, **payload.send_options())
        return message.id

    async def _transient(
        self, ctx: ActionContext, ann: Announcement, args: PlaceArgs, reason: str
    ) -> None:
        """A failure that may pass: retried with the same nonce; on the last attempt,
        reported."""
        if ctx.job.attempt + 1 >= SEND_ATTEMPTS:
            tries = ctx.job.attempt + 1
            why = f"may not have been delivered: {reason} (gave up after {tries} attempts)"
            await self._fail(ctx, ann, args, why)
            raise NonRetryable(why)
        log.warning(
            "announcement %d (guild %d) in channel %d (job %d): %s; will retry",
            ann.id, ann.guild_id, args.channel_id, ctx.job.id, reason,
        )  # fmt: skip
        await ctx.run_mutation(lambda tx, _: note_place_error(tx, args, reason))

    async def _fail(
        self, ctx: ActionContext, ann: Announcement, args: PlaceArgs, reason: str
    ) -> None:
        """Record this place's post failed and report it (log, and the log channel by a job
        of its own enqueued with the record); the other places and the announcement go on."""
        message = i18n.marked(
            "⚠️ Announcement #{id} could not be posted in {channel}, one of its other "
            "places: {reason}. Its other places are not affected."
        )
        values = {"id": str(ann.local_id), "channel": f"<#{args.channel_id}>", "reason": reason}
        text = message.format(**values)

        async def fail(tx: TransactionContext, _: object) -> bool:
            if not await record_place_failed(tx, args, reason):
                return False  # another run ended it meanwhile
            gather = self.announcements.report_gather
            await enqueue_report(tx, ann.guild_id, text, message, values, gather=gather)
            return True

        if not await ctx.run_mutation(fail):
            return
        self.stats.deliveries_failed += 1
        log.error(
            "announcement %d (#%d) failed in channel %d: %s [guild %d, job %d]",
            ann.id, ann.local_id, args.channel_id, reason, ann.guild_id, ctx.job.id,
        )  # fmt: skip


class PlaceUpdates(PostEditor):
    """The ``announcements:update_place`` action: the post in a place edited in place."""

    def register(self, registry: Registry) -> None:
        register_job(registry, PLACE_UPDATE_FN, PlaceArgs, self.update, retry=UPDATE_RETRY)

    async def update(self, ctx: ActionContext, args: PlaceArgs) -> dict[str, object]:
        ann_id, fire_ts, channel_id = args.announcement_id, args.fire_ts, args.channel_id
        try:
            async with self.poster.holding(ctx), self.pacer.slot(channel_id) as turn:
                async with self.announcements.sched.reader() as db:
                    rows = BotDb(db)
                    ann = await rows.announcement(ann_id)
                    posted = await rows.place_delivery(ann_id, fire_ts, channel_id)
                    removed = (
                        posted is not None
                        and posted.message_id is not None
                        and await rows.post_removed(ann_id, posted.message_id)
                    )
                if ann is None or posted is None or posted.state != PlaceState.SENT:
                    return {"nothing": "no posted message"}
                if posted.message_id is None or posted.update_error is not None:
                    return {"nothing": f"not updated: {posted.update_error}"}
                if posted.revision is not None and posted.revision >= ann.revision:
                    return {"nothing": f"already shows revision {posted.revision}"}
                if removed:  # replace: or delete_after: took it down, as asked
                    return {"nothing": "its post was deleted (replace, delete_after)"}
                message_id = posted.message_id
                late_for = fire_ts if (posted.late_by or 0.0) >= LATE_NOTE_AFTER else None
                locale = await posting_locale(self.poster.client, self.announcements, ann.guild_id)
                shown = await self.announcements.as_posted(ann, fire_ts, locale=locale)
                with i18n.speaking(locale):
                    payload = await stored_payload(self.announcements.sched, shown, late_for)

                # A post made as someone is the webhook's: only it may edit it.
                through = await self.webhooks.target(message_id)

                async def patch() -> None:
                    turn.sent = True
                    if through is not None:
                        await self.webhooks.edit(through, payload)
                        return
                    channel = self.poster.client.get_partial_messageable(channel_id)
                    await channel.get_partial_message(message_id).edit(**payload.edit_options())

                await self.poster.request(ctx, patch, before="edit")
                revision = ann.revision
                await ctx.run_mutation(
                    lambda tx, _: BotDb(tx.db).record_place_revision(
                        ann_id, fire_ts, channel_id, revision
                    )
                )
                self.stats.edits += 1
                return {"message_id": message_id, "revision": revision}
        except RequestFailed as failed:
            if failed.permanent:
                await self._failed(ctx, args, failed.reason)
                raise NonRetryable(failed.reason) from failed
            raise RetryLater(failed.reason) from failed

    async def _failed(self, ctx: ActionContext, args: PlaceArgs, reason: str) -> None:
        """The post in the place can't be updated: recorded (no later edit tries again) and
        reported like the post in the announcement's own channel."""
        ann = await self.announcements.by_id(args.announcement_id)

        async def failed(tx: TransactionContext, _: object) -> None:
            await BotDb(tx.db).set_place_update_error(
                args.announcement_id, args.fire_ts, args.channel_id, reason
            )
            if ann is not None:
                message = i18n.marked(
                    "⚠️ The posted message of announcement #{id} in {channel} could not be "
                    "updated with its edit: {reason}. It was not posted again."
                )
                values = {"id": str(ann.local_id), "channel": f"<#{args.channel_id}>"}
                values["reason"] = reason
                text = message.format(**values)
                gather = self.announcements.report_gather
                await enqueue_report(tx, ann.guild_id, text, message, values, gather=gather)

        await ctx.run_mutation(failed)
        self.stats.edits_failed += 1
