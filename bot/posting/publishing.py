"""Publishing a post in an announcement channel to the servers that follow it: its own job.

``announcements:publish`` (:class:`~bot.announcements.jobs.PublishArgs`) is enqueued in the
transaction that records the post sent, so it runs after the post, and apart from every
delivery. Discord allows about 10 publishes an hour per channel, so each publish job carries
its channel's ``publish_pace`` (``PUBLISH_SPACING_SECONDS``, 360 s by default): the
scheduler starts one channel's publishes that far apart across every instance, and a queue
of them waits unclaimed for its turns instead of running into the limit. The request is the
bot's own (:mod:`bot.posting.crosspost`): discord.py, told not to wait out a long 429
(``max_ratelimit_timeout``), would refuse every publish after the first in an hour locally.
Should Discord refuse one anyway (another tool publishing in the channel, spacing set to 0),
the publish is retried by a new job due when the limit lifts: no delivery, no other channel,
waits for it. It ends, on the occurrence's row:

- ``published``, or ``published_late`` when it went out more than ``LATE_AFTER`` after the
  post (it waited for the limit); "already crossposted" (40033) counts as published;
- ``failed`` (shown as ``not published: <why>``) on a permanent refusal (the message was
  deleted, the bot lost access) or when the limit kept it back longer than ``GIVE_UP_AFTER``.

Transient failures (5xx, timeouts) are retried by the job's own retry policy. The request is
guarded like every request that posts (:class:`bot.posting.poster.Poster`).
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import UTC, timedelta
from typing import TYPE_CHECKING

from scheduler import ActionContext, NonRetryable, Registry, Retry, RetryLater

from ..announcements import PUBLISH_FN, Announcements, PublishArgs
from ..announcements.deliveries import record_publish
from ..announcements.jobs import enqueue_publish, register_job
from ..db import BotDb
from ..models import PublishState
from .failures import RequestFailed

if TYPE_CHECKING:
    from ..metrics import BotStats
    from .crosspost import Crossposter
    from .poster import Poster

log = logging.getLogger(__name__)

PUBLISH_RETRY = Retry(max_failures=20, initial_backoff=5.0, base=2.0)
ALREADY_CROSSPOSTED = 40033
LATE_AFTER = 60.0
"""A publish this long after its post is ``published late``."""
GIVE_UP_AFTER = 6 * 3600.0
"""A post kept from being published this long by the rate limit is ``not published``."""
MIN_WAIT = 1.0


class Publisher:
    """The ``announcements:publish`` action; publishes go out through ``crossposter`` (a
    request of the bot's own: see :mod:`bot.posting.crosspost` for why)."""

    def __init__(
        self,
        poster: Poster,
        announcements: Announcements,
        crossposter: Crossposter,
        *,
        publish_spacing: float,
        stats: BotStats,
    ) -> None:
        self.poster = poster
        self.announcements = announcements
        self.crossposter = crossposter
        self.publish_spacing = publish_spacing
        """Seconds between the starts of two publishes in one announcement channel, across
        every instance (each publish job carries its channel's ``publish_pace``)."""
        self.stats = stats

    def register(self, registry: Registry) -> None:
        register_job(registry, PUBLISH_FN, PublishArgs, self.publish, retry=PUBLISH_RETRY)

    async def publish(self, ctx: ActionContext, args: PublishArgs) -> dict[str, object]:
        async with self.announcements.sched.reader() as db:
            posted = await BotDb(db).past_delivery(args.announcement_id, args.fire_ts)
        if posted is None or posted.publish_state != PublishState.PENDING:
            return {"nothing": "not waiting to be published"}
        try:
            async with self.poster.holding(ctx):
                await self.poster.request(
                    ctx,
                    lambda: self.crossposter.crosspost(args.channel_id, args.message_id),
                    before="publish",
                )
        except RequestFailed as failed:
            if failed.retry_after is not None:
                return await self._wait_for_limit(ctx, args, failed.retry_after)
            if failed.code != ALREADY_CROSSPOSTED:
                if failed.permanent:
                    await self._ended(ctx, args, PublishState.FAILED, failed.reason)
                    raise NonRetryable(failed.reason) from failed
                raise RetryLater(failed.reason) from failed
        late = ctx.now.timestamp() - args.posted_at > LATE_AFTER
        state = PublishState.PUBLISHED_LATE if late else PublishState.PUBLISHED
        await self._ended(ctx, args, state, None)
        return {"published": args.message_id, "late": late}

    async def _wait_for_limit(
        self, ctx: ActionContext, args: PublishArgs, retry_after: float
    ) -> dict[str, object]:
        """Rate limited: a new job publishes when the limit lifts (or it gives up)."""
        now = ctx.now
        waited = now.timestamp() - args.posted_at
        if waited + retry_after > GIVE_UP_AFTER:
            why = f"the channel's publish limit kept it back for over {GIVE_UP_AFTER / 3600:g}h"
            await self._ended(ctx, args, PublishState.FAILED, why)
            return {"not_published": why}
        at = now + timedelta(seconds=max(MIN_WAIT, retry_after))
        nxt = dataclasses.replace(args, round=args.round + 1)
        await ctx.run_mutation(
            lambda tx, _: enqueue_publish(tx, nxt, spacing=self.publish_spacing, at=at)
        )
        log.info(
            "announcement %s: publish rate limited in channel %s; retrying at %s",
            args.announcement_id, args.channel_id, at.astimezone(UTC).isoformat(),
        )  # fmt: skip
        return {"rate_limited_until": at.timestamp()}

    async def _ended(
        self, ctx: ActionContext, args: PublishArgs, state: PublishState, error: str | None
    ) -> None:
        await ctx.run_mutation(
            lambda tx, _: record_publish(tx, args.announcement_id, args.fire_ts, state, error)
        )
        if state == PublishState.FAILED:
            self.stats.publishes_failed += 1
            log.warning(
                "announcement %s: post %s not published: %s",
                args.announcement_id, args.message_id, error,
            )  # fmt: skip
        else:
            self.stats.publishes += 1
