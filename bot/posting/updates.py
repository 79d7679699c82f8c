"""Bringing a posted message up to date after its announcement was edited: a durable job.

``crier.update_posted`` ({announcement_id, fire_ts, channel_id}) is enqueued in the same
transaction as the edit that needs it (or as the record of a send an edit overtook). It reads
the announcement as it is NOW and the occurrence's record: when the posted message already
shows the announcement's revision there is nothing to do; otherwise it PATCHes the recorded
message id with the current text and the allowed mentions recorded when the announcement was
scheduled (never a new message), then records the revision it shows. A PATCH is idempotent,
so a retry after a crash or a lost response is safe: exactly one edit is in effect.

- 10008 Unknown Message (a moderator deleted it) and other permanent refusals: recorded on the
  occurrence (``update_error``), kept in the history, reported like a failed delivery (log and
  the guild's log channel), never re-posted;
- transient failures (5xx, timeouts): retried later (``RetryLater``).

Like a send, the PATCH goes out only while the run surely holds its job's lease, in its
channel's turn; in that turn the message is also recorded, so two updates of one message in
this process never cross.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp
import discord

from scheduler import ActionContext, NonRetryable, Registry, Retry, RetryLater, TransactionContext

from ..announcements import UPDATE_FN, Announcement
from ..db import BotDb
from ..models import DeliveryState, Destination, HistoryAction
from .delivery import LATE_NOTE_AFTER, Delivery, describe, permanent
from .lease import hold_lease, keep_lease
from .payload import PostPayload

log = logging.getLogger(__name__)

UNKNOWN_MESSAGE = 10008
UPDATE_RETRY = Retry(max_failures=50, initial_backoff=2.0, base=2.0)


class PostUpdates:
    """The ``crier.update_posted`` action, on the delivery's client, pacer and reports."""

    def __init__(self, delivery: Delivery) -> None:
        self.delivery = delivery

    def register(self, registry: Registry) -> None:
        registry.action(UPDATE_FN, idempotent=True, retry=UPDATE_RETRY)(self.update)

    async def update(self, ctx: ActionContext, args: dict[str, Any]) -> dict[str, Any]:
        ann_id, fire_ts = int(args["announcement_id"]), float(args["fire_ts"])
        channel_id = int(args["channel_id"])
        d = self.delivery
        try:
            async with keep_lease(ctx, d.heartbeat_every), d.pacer.slot(channel_id) as turn:
                if d.ready is not None:
                    await d.ready.wait()
                # Read in the channel's turn: an update queued behind another one of the same
                # message sends what is current when its turn comes.
                target = await self._target(ann_id, fire_ts)
                if isinstance(target, str):
                    return {"nothing": target}
                ann, message_id, late_by = target
                payload = await d.payload(ann, fire_ts if late_by >= LATE_NOTE_AFTER else None)
                await hold_lease(ctx, d.lease_needed)
                turn.sent = True
                # A forum post's first message is in its thread, whose id is the message's.
                where = message_id if ann.rich.destination == Destination.FORUM else channel_id
                async with asyncio.timeout(d.send_timeout):
                    await self._patch(where, message_id, payload)
                await ctx.run_mutation(
                    self._record_updated,
                    {"ann": ann_id, "fire_ts": fire_ts, "revision": ann.revision},
                )
                d.stats.edits += 1
                log.info(
                    "announcement %d: message %d updated to revision %d",
                    ann_id, message_id, ann.revision,
                )  # fmt: skip
                return {"message_id": message_id, "revision": ann.revision}
        except discord.HTTPException as exc:
            if exc.code == UNKNOWN_MESSAGE or permanent(exc):
                reason = describe(exc)
                if exc.code == UNKNOWN_MESSAGE:
                    reason = f"Unknown Message: the posted message was deleted ({UNKNOWN_MESSAGE})"
                await self._failed(ctx, ann_id, fire_ts, reason)
                raise NonRetryable(reason) from exc
            raise RetryLater(describe(exc)) from exc
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise RetryLater(f"{type(exc).__name__}: {exc}") from exc

    async def _patch(self, channel_id: int, message_id: int, payload: PostPayload) -> None:
        """Replace what the posted message shows (text, embed, files) by ``payload``."""
        channel = self.delivery.client.get_partial_messageable(channel_id)
        await channel.get_partial_message(message_id).edit(**payload.edit_options())

    async def _target(self, ann_id: int, fire_ts: float) -> tuple[Announcement, int, float] | str:
        """The announcement and the message to PATCH (with how late it was posted), or why
        there is nothing to do."""
        async with self.delivery.announcements.sched.reader() as db:
            rows = BotDb(db)
            ann = await rows.announcement(ann_id)
            posted = await rows.past_delivery(ann_id, fire_ts)
        if ann is None or posted is None or posted.state != DeliveryState.SENT:
            return "no posted message"
        if posted.message_id is None:
            return "no posted message"
        if posted.update_error is not None:
            return f"not updated: {posted.update_error}"
        if posted.revision is not None and posted.revision >= ann.revision:
            return f"already shows revision {posted.revision}"
        return ann, posted.message_id, posted.late_by or 0.0

    async def _record_updated(self, ctx: TransactionContext, args: dict[str, Any]) -> None:
        rows = BotDb(ctx.db)
        await rows.record_post_revision(args["ann"], args["fire_ts"], args["revision"])
        await rows.add_history(
            args["ann"],
            HistoryAction.POST_UPDATED,
            None,
            ctx.now.timestamp(),
            f"revision {args['revision']}",
        )

    async def _record_failed(self, ctx: TransactionContext, args: dict[str, Any]) -> None:
        rows = BotDb(ctx.db)
        await rows.set_update_error(args["ann"], args["fire_ts"], args["error"])
        await rows.add_history(
            args["ann"], HistoryAction.POST_UPDATE_FAILED, None, ctx.now.timestamp(), args["error"]
        )

    async def _failed(self, ctx: ActionContext, ann_id: int, fire_ts: float, reason: str) -> None:
        """Record and report that the posted message can't be brought up to date."""
        await ctx.run_mutation(
            self._record_failed, {"ann": ann_id, "fire_ts": fire_ts, "error": reason}
        )
        self.delivery.stats.edits_failed += 1
        ann = await self.delivery.announcements.by_id(ann_id)
        if ann is None:
            return
        log.error(
            "announcement %d (#%d): the posted message could not be updated: %s "
            "[guild %d, channel %d, job %d]; it is not posted again",
            ann.id, ann.local_id, reason, ann.guild_id, ann.channel_id, ctx.job.id,
        )  # fmt: skip
        await hold_lease(ctx, self.delivery.lease_needed)
        await self.delivery.tell_log_channel(
            ann.guild_id,
            f"⚠️ The posted message of announcement #{ann.local_id} in <#{ann.channel_id}> "
            f"could not be updated with its edit: {reason}. It was not posted again.",
        )
