"""The scheduler jobs of an announcement, in one place: their names, their pace keys and how
they are enqueued (their actions are in :mod:`bot.posting`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from scheduler import Pace, TransactionContext

SEND_FN = "announcements:send"
UPDATE_FN = "crier.update_posted"
"""The durable job that brings a posted message up to date with its announcement."""
PUBLISH_FN = "crier.publish"
"""The durable job that publishes a post in an announcement channel, after the post."""


def channel_pace(channel_id: int, spacing: float) -> Pace | None:
    """The pace of the jobs that post to ``channel_id``: they start at least ``spacing``
    seconds apart, in due order, in every instance (None when sends are not spaced)."""
    return Pace(f"channel:{channel_id}", spacing) if spacing > 0 else None


def publish_pace(channel_id: int, spacing: float) -> Pace | None:
    """The pace of the jobs that publish (crosspost) messages of announcement channel
    ``channel_id``: a key of its own, since Discord limits publishes apart from sends."""
    return Pace(f"publish:{channel_id}", spacing) if spacing > 0 else None


def schedule_name(announcement_id: int, anchored_at: float | None = None) -> str:
    """The name of an announcement's schedule; one re-anchored by an edit (at
    ``anchored_at``) gets a name of its own, so none of its occurrences can be mistaken for
    one of the schedule it replaces."""
    if anchored_at is None:
        return f"announcement:{announcement_id}"
    return f"announcement:{announcement_id}@{round(anchored_at * 1000)}"


async def enqueue_post_update(
    ctx: TransactionContext, announcement_id: int, fire_ts: float, channel_id: int, revision: int
) -> int:
    """In ``ctx``'s transaction: bring the message posted for the occurrence at ``fire_ts``
    up to date with ``revision`` (one job per revision, whoever asks for it)."""
    return await ctx.scheduler.enqueue(
        UPDATE_FN,
        {"announcement_id": announcement_id, "fire_ts": fire_ts, "channel_id": channel_id},
        idempotency_key=f"post-update:{announcement_id}:{fire_ts!r}:{revision}",
        name=f"update the post of announcement {announcement_id}",
    )


async def enqueue_publish(
    ctx: TransactionContext,
    args: dict[str, Any],
    *,
    spacing: float,
    at: datetime | None = None,
) -> int:
    """In ``ctx``'s transaction: publish the post ``args`` names (now, or ``at``), paced
    with the other publishes of its channel (:func:`publish_pace`: started at
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
