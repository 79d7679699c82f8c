"""The publish job's name and how it is enqueued (its action is :mod:`bot.publishing`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from scheduler import TransactionContext

from .pacing import publish_pace

PUBLISH_FN = "crier.publish"
"""The durable job that publishes a post in an announcement channel, after the post."""


async def enqueue_publish(
    ctx: TransactionContext,
    args: dict[str, Any],
    *,
    spacing: float,
    at: datetime | None = None,
) -> int:
    """In ``ctx``'s transaction: publish the post ``args`` names (now, or ``at``), paced
    with the other publishes of its channel (:func:`~bot.pacing.publish_pace`: started at
    least ``spacing`` seconds apart, in due order, by every instance; 0: not paced)."""
    key = f"publish:{args['announcement_id']}:{args['fire_ts']!r}:{args['round']}"
    name = f"publish the post of announcement {args['announcement_id']}"
    pace = publish_pace(int(args["channel_id"]), spacing)
    if at is None:
        return await ctx.scheduler.enqueue(
            PUBLISH_FN, args, idempotency_key=key, name=name, pace=pace
        )
    return await ctx.scheduler.run_at(
        at, PUBLISH_FN, args, idempotency_key=key, name=name, pace=pace
    )
