"""Publishing a post in an announcement channel to the servers that follow it: its own job.

``crier.publish`` ({announcement_id, fire_ts, channel_id, message_id, posted_at, round}) is
enqueued in the transaction that records the post sent, so it runs after the post, and apart
from every delivery. Discord allows about 10 publishes an hour per channel, so each publish
job carries its channel's ``publish_pace`` (``PUBLISH_SPACING_SECONDS``, 360 s by default):
the scheduler starts one channel's publishes that far apart across every instance, and a
queue of them waits unclaimed for its turns instead of running into the limit. The request
is the bot's own (:mod:`bot.posting.crosspost`): discord.py, told not to wait out a long 429
(``max_ratelimit_timeout``), would refuse every publish after the first in an hour locally.
Should Discord refuse one anyway (another tool publishing in the channel, spacing set to 0),
the publish raises ``RateLimited`` here and is retried by a new job due when the limit
lifts: no delivery, no other channel, waits for it. It ends, on the occurrence's row:

- ``published``, or ``published_late`` when it went out more than ``LATE_AFTER`` after the
  post (it waited for the limit); "already crossposted" (40033) counts as published;
- ``failed`` (shown as ``not published: <why>``) on a permanent refusal (the message was
  deleted, the bot lost access) or when the limit kept it back longer than ``GIVE_UP_AFTER``.

Transient failures (5xx, timeouts) are retried by the job's own retry policy.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, timedelta
from typing import Any

import aiohttp
import discord

from scheduler import ActionContext, NonRetryable, Registry, Retry, RetryLater, TransactionContext

from ..announcements.jobs import PUBLISH_FN, enqueue_publish
from ..db import BotDb
from ..models import PublishState
from .crosspost import Crossposter
from .delivery import Delivery, describe, permanent
from .lease import hold_lease, keep_lease

log = logging.getLogger(__name__)

PUBLISH_RETRY = Retry(max_failures=20, initial_backoff=5.0, base=2.0)
ALREADY_CROSSPOSTED = 40033
LATE_AFTER = 60.0
"""A publish this long after its post is ``published late``."""
GIVE_UP_AFTER = 6 * 3600.0
"""A post kept from being published this long by the rate limit is ``not published``."""
MIN_WAIT = 1.0


class Publisher:
    """The ``crier.publish`` action, on the delivery's reports; publishes go out through
    ``crossposter`` (a request of the bot's own: see :mod:`bot.posting.crosspost` for why)."""

    def __init__(self, delivery: Delivery, crossposter: Crossposter) -> None:
        self.delivery = delivery
        self.crossposter = crossposter

    def register(self, registry: Registry) -> None:
        registry.action(PUBLISH_FN, idempotent=True, retry=PUBLISH_RETRY)(self.publish)

    async def publish(self, ctx: ActionContext, args: dict[str, Any]) -> dict[str, Any]:
        ann_id, fire_ts = int(args["announcement_id"]), float(args["fire_ts"])
        channel_id, message_id = int(args["channel_id"]), int(args["message_id"])
        d = self.delivery
        async with d.announcements.sched.reader() as db:
            posted = await BotDb(db).past_delivery(ann_id, fire_ts)
        if posted is None or posted.publish_state != PublishState.PENDING:
            return {"nothing": "not waiting to be published"}
        try:
            async with keep_lease(ctx, d.heartbeat_every):
                if d.ready is not None:
                    await d.ready.wait()
                await hold_lease(ctx, d.lease_needed)
                async with asyncio.timeout(d.send_timeout):
                    await self.crossposter.crosspost(channel_id, message_id)
        except discord.RateLimited as exc:
            return await self._wait_for_limit(ctx, args, exc.retry_after)
        except discord.HTTPException as exc:
            if exc.code != ALREADY_CROSSPOSTED:
                if permanent(exc):
                    await self._ended(ctx, args, PublishState.FAILED, describe(exc))
                    raise NonRetryable(describe(exc)) from exc
                raise RetryLater(describe(exc)) from exc
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise RetryLater(f"{type(exc).__name__}: {exc}") from exc
        late = ctx.now.timestamp() - float(args["posted_at"]) > LATE_AFTER
        state = PublishState.PUBLISHED_LATE if late else PublishState.PUBLISHED
        await self._ended(ctx, args, state, None)
        return {"published": message_id, "late": late}

    async def _wait_for_limit(
        self, ctx: ActionContext, args: dict[str, Any], retry_after: float
    ) -> dict[str, Any]:
        """Rate limited: a new job publishes when the limit lifts (or it gives up)."""
        now = ctx.now
        waited = now.timestamp() - float(args["posted_at"])
        if waited + retry_after > GIVE_UP_AFTER:
            why = f"the channel's publish limit kept it back for over {GIVE_UP_AFTER / 3600:g}h"
            await self._ended(ctx, args, PublishState.FAILED, why)
            return {"not_published": why}
        at = now + timedelta(seconds=max(MIN_WAIT, retry_after))
        nxt = {**args, "round": int(args["round"]) + 1}

        async def again(tx: TransactionContext, _: dict[str, Any]) -> int:
            return await enqueue_publish(tx, nxt, spacing=self.delivery.publish_spacing, at=at)

        await ctx.run_mutation(again, {})
        log.info(
            "announcement %s: publish rate limited in channel %s; retrying at %s",
            args["announcement_id"], args["channel_id"], at.astimezone(UTC).isoformat(),
        )  # fmt: skip
        return {"rate_limited_until": at.timestamp()}

    async def _ended(
        self, ctx: ActionContext, args: dict[str, Any], state: PublishState, error: str | None
    ) -> None:
        async def record(tx: TransactionContext, _: dict[str, Any]) -> None:
            await BotDb(tx.db).set_publish(
                int(args["announcement_id"]),
                float(args["fire_ts"]),
                state,
                error,
                tx.now.timestamp(),
            )

        await ctx.run_mutation(record, {})
        if state == PublishState.FAILED:
            self.delivery.stats.publishes_failed += 1
        else:
            self.delivery.stats.publishes += 1
        if state == PublishState.FAILED:
            log.warning(
                "announcement %s: post %s not published: %s",
                args["announcement_id"], args["message_id"], error,
            )  # fmt: skip
