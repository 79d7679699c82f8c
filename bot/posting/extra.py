"""Extra posts (``/postnow``): the ``announcements:postnow`` action.

The command recorded the extra post (``queued``) with this job, once per use of the command
(:mod:`bot.announcements.extra_posts`). The job posts it as a delivery posts an occurrence,
through the same guard and the same rendering (the next occurrence's text, embed, files and
buttons, in the server's language):

- before anything is sent, the attempt is recorded (``sending``, with what it shows), in a
  transaction of its own; the send carries the row's nonce (``enforce_nonce``), the same on
  every attempt, so a re-run after a crash, a lost answer or a 5xx gets the first message
  back from Discord instead of a second one, while Discord remembers the nonce; later, the
  post is reported as may not have been delivered, never sent blind;
- a forum post (no nonce) is looked up before a re-run creates one;
- an announcement that posts as someone makes it through its channel's webhook, exactly
  once as its occurrences are (:mod:`bot.posting.webhooks`; the intent keyed by
  :func:`~bot.posting.webhooks.extra_key`);
- permanent refusals fail it (reported to the log channel; nothing is paused: the schedule
  is not this post's); the message id is recorded once it is up.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scheduler import ActionContext, NonRetryable, Registry, RetryLater, TransactionContext

from .. import i18n
from ..announcements import POSTNOW_FN, Announcements, PostNowArgs
from ..announcements.deliveries import Attempt, Decision
from ..announcements.extra_posts import (
    begin_extra_attempt,
    note_extra_error,
    record_extra_failed,
    record_extra_sent,
)
from ..announcements.jobs import enqueue_report, register_job
from ..db import BotDb
from .delivery import SEND_ATTEMPTS, SEND_RETRY
from .failures import RequestFailed
from .payload import posting_locale
from .webhooks import extra_key

if TYPE_CHECKING:
    from ..models import Announcement
    from .delivery import Delivery
    from .webhooks import Posted

__all__ = ["ExtraPosting"]

log = logging.getLogger("crier.delivery")  # tests and operators filter on this name


class ExtraPosting:
    """The ``announcements:postnow`` action: makes one extra post, once."""

    def __init__(self, delivery: Delivery, *, nonce_window: float) -> None:
        self.delivery = delivery
        self.nonce_window = nonce_window

    @property
    def announcements(self) -> Announcements:
        return self.delivery.announcements

    def register(self, registry: Registry) -> None:
        register_job(registry, POSTNOW_FN, PostNowArgs, self.post, retry=SEND_RETRY)

    async def post(self, ctx: ActionContext, args: PostNowArgs) -> dict[str, object]:
        async with self.announcements.sched.reader() as db:
            extra = await BotDb(db).extra_post(args.extra_id)
        if extra is None:
            return {"nothing": "forgotten"}
        ann = await self.announcements.by_id(extra.announcement_id)
        if ann is None:
            return {"nothing": "forgotten"}
        poster = self.delivery.poster
        locale_now = await posting_locale(poster.client, self.announcements, ann.guild_id)
        window = self.nonce_window
        webhooks = self.delivery.webhooks
        post_as = await self.announcements.post_as(ann.id)  # None: as the bot
        key = extra_key(extra.id)
        posted: Posted | None = None
        try:
            async with poster.holding(ctx):
                now = ctx.now.timestamp()

                async def begin(tx: TransactionContext, _: object) -> Attempt:
                    began = await begin_extra_attempt(
                        tx, extra.id, now=now, nonce_window=window, locale=locale_now
                    )
                    # As someone: through the channel's webhook, its intent recorded with it.
                    if post_as is not None and began.action == Decision.SEND and not began.again:
                        await webhooks.begin(tx, ann, key)
                    return began

                attempt = await ctx.run_mutation(begin)
                if attempt.action == Decision.DONE:
                    return {"already": attempt.reason}
                if attempt.action == Decision.UNKNOWN:
                    await self._fail(ctx, ann, extra.id, attempt.reason)
                    raise NonRetryable(attempt.reason)
                shown, payload, _ = await self.delivery.render(
                    ann, extra.fire_ts, attempt, now, locale_now
                )
                posted = await webhooks.post(
                    ctx, shown, key, payload, again=attempt.again, post_as=post_as
                )
                if posted is not None:
                    message_id = posted.message_id
                else:
                    message_id = await poster.request(
                        ctx, lambda: self.delivery.post(shown, payload, attempt), before="send"
                    )
        except RequestFailed as failed:
            if failed.permanent:
                await self._fail(ctx, ann, extra.id, failed.reason)
                raise NonRetryable(failed.reason) from failed
            if ctx.job.attempt + 1 >= SEND_ATTEMPTS:
                tries = ctx.job.attempt + 1
                why = (
                    f"may not have been delivered: {failed.reason} (gave up after {tries} attempts)"
                )
                await self._fail(ctx, ann, extra.id, why)
                raise NonRetryable(why) from failed
            reason = failed.reason
            await ctx.run_mutation(lambda tx, _: note_extra_error(tx, extra.id, reason))
            raise RetryLater(reason) from failed

        async def sent(tx: TransactionContext, _: object) -> None:
            await record_extra_sent(tx, extra.id, message_id)
            if posted is not None:
                await BotDb(tx.db).set_webhook_message(
                    ann.id, key, ann.channel_id, message_id, posted.thread_id
                )

        await ctx.run_mutation(sent)
        log.info("announcement %d: extra post %d is up as message %d", ann.id, extra.id, message_id)
        return {"message_id": message_id}

    async def _fail(
        self, ctx: ActionContext, ann: Announcement, extra_id: int, reason: str
    ) -> None:
        """Record the extra post failed and report it to the log channel (a job of its own,
        enqueued with the record), unless it was recorded sent meanwhile."""
        message = i18n.marked(
            "⚠️ The extra post (`/postnow`) of announcement #{id} for {channel} could not be "
            "posted: {reason}."
        )
        values = {"id": str(ann.local_id), "channel": f"<#{ann.channel_id}>", "reason": reason}
        gather = self.announcements.report_gather

        async def fail(tx: TransactionContext, _: object) -> bool:
            if not await record_extra_failed(tx, extra_id, reason):
                return False
            text = message.format(**values)
            await enqueue_report(tx, ann.guild_id, text, message, values, gather=gather)
            return True

        if await ctx.run_mutation(fail):
            log.error(
                "announcement %d (#%d): extra post %d failed: %s [guild %d, channel %d, job %d]",
                ann.id, ann.local_id, extra_id, reason, ann.guild_id, ann.channel_id, ctx.job.id,
            )  # fmt: skip
