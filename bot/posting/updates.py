"""Bringing a posted message up to date after its announcement was edited: a durable job.

``announcements:update_post`` (:class:`~bot.announcements.jobs.UpdateArgs`) is enqueued in
the same transaction as the edit that needs it (or as the record of a send an edit
overtook). It reads the announcement as it is NOW and the occurrence's record: when the
posted message already shows the announcement's revision there is nothing to do; otherwise
it PATCHes the recorded message id with the current text, embed, files and buttons and the
allowed mentions recorded when the announcement was scheduled (never a new message), then
records the revision it shows. A PATCH is idempotent, so a retry after a crash or a lost
response is safe: exactly one edit is in effect.

A post made as someone (through the channel's webhook, :mod:`bot.posting.webhooks`) is
edited through that webhook; one whose webhook was deleted since can no longer be edited.

- 10008 Unknown Message (a moderator deleted it) and other permanent refusals: recorded on the
  occurrence (``update_error``), kept in the history, reported like a failed delivery (log and
  the guild's log channel), never re-posted;
- transient failures (5xx, timeouts): retried later (``RetryLater``).

Like a send, the PATCH goes out guarded (:class:`bot.posting.poster.Poster`), in its
channel's turn; in that turn the message is also recorded, so two updates of one message in
this process never cross.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scheduler import (
    ActionContext,
    NonRetryable,
    Registry,
    Retry,
    RetryLater,
    TransactionContext,
)

from .. import i18n
from ..announcements import UPDATE_FN, Announcement, Announcements, UpdateArgs
from ..announcements.deliveries import record_post_update_failed, record_post_updated
from ..announcements.jobs import enqueue_report, register_job
from ..db import BotDb
from ..models import DeliveryState, Destination
from .failures import RequestFailed
from .pacer import ChannelPacer
from .payload import LATE_NOTE_AFTER, PostPayload, posting_locale, stored_payload

if TYPE_CHECKING:
    from ..metrics import BotStats
    from .pacer import ChannelPacer
    from .poster import Poster
    from .webhooks import WebhookSender

log = logging.getLogger(__name__)

UPDATE_RETRY = Retry(max_failures=50, initial_backoff=2.0, base=2.0)


class PostEditor:
    """What an action that edits posted messages in place works with (:class:`PostUpdates`,
    and the places' ``PlaceUpdates``)."""

    def __init__(
        self,
        poster: Poster,
        announcements: Announcements,
        pacer: ChannelPacer,
        webhooks: WebhookSender,
        *,
        stats: BotStats,
    ) -> None:
        self.poster = poster
        self.announcements = announcements
        self.pacer = pacer
        """Spaces this process's edits of posted messages in one channel."""
        self.webhooks = webhooks
        """Edits the posts made through a webhook, through it."""
        self.stats = stats


class PostUpdates(PostEditor):
    """The ``announcements:update_post`` action."""

    def register(self, registry: Registry) -> None:
        register_job(registry, UPDATE_FN, UpdateArgs, self.update, retry=UPDATE_RETRY)

    async def update(self, ctx: ActionContext, args: UpdateArgs) -> dict[str, object]:
        ann_id, fire_ts, channel_id = args.announcement_id, args.fire_ts, args.channel_id
        try:
            async with self.poster.holding(ctx), self.pacer.slot(channel_id) as turn:
                # Read in the channel's turn: an update queued behind another one of the same
                # message sends what is current when its turn comes.
                target = await self._target(ann_id, fire_ts)
                if isinstance(target, str):
                    return {"nothing": target}
                ann, message_id, late_by = target
                late_for = fire_ts if late_by >= LATE_NOTE_AFTER else None
                # Its placeholders as this occurrence shows them, in the server's language.
                locale = await posting_locale(self.poster.client, self.announcements, ann.guild_id)
                shown = await self.announcements.as_posted(ann, fire_ts, locale=locale)
                with i18n.speaking(locale):  # the late note and buttons, in its language
                    # Its buttons sent again (links, its event's, Remind me) as they are now.
                    payload = await stored_payload(
                        self.announcements.sched, shown, late_for, event_at=fire_ts
                    )
                # A forum post's first message is in its thread, whose id is the message's.
                where = message_id if ann.rich.destination == Destination.FORUM else channel_id
                # A post made as someone is the webhook's: only it may edit it.
                through = await self.webhooks.target(message_id)

                async def patch() -> None:
                    turn.sent = True
                    if through is not None:
                        await self.webhooks.edit(through, payload)
                    else:
                        await self._patch(where, message_id, payload)

                await self.poster.request(ctx, patch, before="edit")
                revision = ann.revision
                await ctx.run_mutation(
                    lambda tx, _: record_post_updated(
                        tx, ann_id, fire_ts, revision, job_id=ctx.job.id
                    )
                )
                self.stats.edits += 1
                log.info(
                    "announcement %d: message %d updated to revision %d",
                    ann_id, message_id, revision,
                )  # fmt: skip
                return {"message_id": message_id, "revision": revision}
        except RequestFailed as failed:
            if failed.permanent:
                await self._failed(ctx, ann_id, fire_ts, failed.reason)
                raise NonRetryable(failed.reason) from failed
            raise RetryLater(failed.reason) from failed

    async def _patch(self, channel_id: int, message_id: int, payload: PostPayload) -> None:
        """Replace what the posted message shows (text, embed, files) by ``payload``."""
        channel = self.poster.client.get_partial_messageable(channel_id)
        await channel.get_partial_message(message_id).edit(**payload.edit_options())

    async def _target(self, ann_id: int, fire_ts: float) -> tuple[Announcement, int, float] | str:
        """The announcement and the message to PATCH (with how late it was posted), or why
        there is nothing to do."""
        async with self.announcements.sched.reader() as db:
            rows = BotDb(db)
            ann = await rows.announcement(ann_id)
            posted = await rows.past_delivery(ann_id, fire_ts)
            removed = (
                posted is not None
                and posted.message_id is not None
                and await rows.post_removed(ann_id, posted.message_id)
            )
        if ann is None or posted is None or posted.state != DeliveryState.SENT:
            return "no posted message"
        if posted.message_id is None:
            return "no posted message"
        if removed:  # replace: or delete_after: took it down, as asked: nothing to edit
            return "its post was deleted (replace, delete_after)"
        if posted.update_error is not None:
            return f"not updated: {posted.update_error}"
        if posted.revision is not None and posted.revision >= ann.revision:
            return f"already shows revision {posted.revision}"
        return ann, posted.message_id, posted.late_by or 0.0

    async def _failed(self, ctx: ActionContext, ann_id: int, fire_ts: float, reason: str) -> None:
        """Record and report (log, and the log channel by a job of its own enqueued with the
        record) that the posted message can't be brought up to date."""
        ann = await self.announcements.by_id(ann_id)

        async def failed(tx: TransactionContext, _: object) -> None:
            await record_post_update_failed(tx, ann_id, fire_ts, reason, job_id=ctx.job.id)
            if ann is not None:
                message = i18n.marked(
                    "⚠️ The posted message of announcement #{id} in {channel} could not be "
                    "updated with its edit: {reason}. It was not posted again."
                )
                values = {"id": str(ann.local_id), "channel": f"<#{ann.channel_id}>"}
                values["reason"] = reason
                text = message.format(**values)
                await enqueue_report(
                    tx, ann.guild_id, text, message, values, gather=self.announcements.report_gather
                )

        await ctx.run_mutation(failed)
        self.stats.edits_failed += 1
        if ann is None:
            return
        log.error(
            "announcement %d (#%d): the posted message could not be updated: %s "
            "[guild %d, channel %d, job %d]; it is not posted again",
            ann.id, ann.local_id, reason, ann.guild_id, ann.channel_id, ctx.job.id,
        )  # fmt: skip
