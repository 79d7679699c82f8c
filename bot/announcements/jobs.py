"""The scheduler jobs that deliver an announcement and bring its posts up to date."""

from __future__ import annotations

from scheduler import TransactionContext

SEND_FN = "announcements:send"
UPDATE_FN = "crier.update_posted"
"""The durable job that brings a posted message up to date with its announcement."""


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
