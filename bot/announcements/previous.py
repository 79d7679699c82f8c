"""The previous post: what becomes of an announcement's posts once they are up (``/edit pin:
replace: delete_after:``), as bookkeeping the ``announcements:tidy`` job
(:mod:`bot.posting.tidy`) works from.

Every post of an announcement (an occurrence's, or an extra one of ``/postnow``) is recorded
in ``bot_posts`` by :func:`post_up`, in the transaction that records it up, together with
the steps it starts, each written as an intent before any request is made:

- ``pin``: the new post is to be pinned (``pin_state = 'pin'``) and every other post of the
  announcement pinned or to be pinned is to be unpinned (``'unpin'``);
- ``replace``: the post before it, if still up, is to be deleted (``remove_state =
  'delete'``), never the new one;
- ``delete_after``: the new post is deleted that long after it went up (``delete_at``; a job
  is enqueued for then).

The job takes the announcement's posts for itself (one job at a time per announcement,
:func:`claim_posts`), then works through what is due in order: pins first (the new post is
pinned before the old one is unpinned, so there is never none), then unpins, then deletions,
each recorded done after its request. A crash, a 5xx or a second instance only ever leaves a
step to do again (a pin, an unpin and a deletion are each idempotent at Discord: a second
pin of a pinned message changes nothing, a deleted message is 10008), never one done by two
jobs out of order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..db import BotDb, PostRow
from ..db.posts import latest_in_each_channel
from .jobs import enqueue_tidy
from .reading import Reading

if TYPE_CHECKING:
    from scheduler import TransactionContext

    from ..models import Tidy

__all__ = [
    "CLAIM_SECONDS",
    "MAX_DELETE_AFTER",
    "MIN_DELETE_AFTER",
    "PostCare",
    "claim_posts",
    "edit_tidy",
    "post_up",
    "release_posts",
]

CLAIM_SECONDS = 600.0
"""How long a job's claim on an announcement's posts holds if its run dies (longer than any
run: a few requests, each abandoned well before)."""
MIN_DELETE_AFTER = 60.0
"""The shortest ``delete_after``: a minute."""
MAX_DELETE_AFTER = 30 * 86400.0
"""The longest ``delete_after``: 30 days."""


async def post_up(
    ctx: TransactionContext,
    announcement_id: int,
    guild_id: int,
    channel_id: int,
    message_id: int,
) -> None:
    """In the transaction that records a post of the announcement up: record it, and what
    its settings ask (:mod:`this module's <bot.announcements.previous>` steps), each as an
    intent, with the job that does them. Then forget the posts with nothing left to do."""
    rows = BotDb(ctx.db)
    now = ctx.now.timestamp()
    tidy = await rows.tidy(announcement_id)
    kept = [p for p in await rows.posts_of(announcement_id) if p.message_id != message_id]
    # Each place (its own channel, each of also_in) has posts of its own: the one before
    # this post is the one before it in its channel.
    here = [p for p in kept if p.channel_id == channel_id]
    previous = here[-1] if here else None
    delete_at = None if tidy.delete_after is None else now + tidy.delete_after
    added = await rows.add_post(
        announcement_id, message_id, guild_id, channel_id, now, pin=tidy.pin, delete_at=delete_at
    )
    if not added:
        return  # recorded already (this transaction's work was done)
    steps = tidy.pin
    if tidy.pin:
        await rows.unpin_others(announcement_id, keep=message_id, channel_id=channel_id)
    if tidy.replace and previous is not None:
        steps = await rows.mark_delete(announcement_id, previous.message_id) or steps
    if steps:
        await enqueue_tidy(ctx, announcement_id, f"up:{message_id}")
    if delete_at is not None:
        await enqueue_tidy(ctx, announcement_id, f"at:{message_id}:{delete_at!r}", at=delete_at)
    others = [p.message_id for p in latest_in_each_channel(kept) if p.channel_id != channel_id]
    await rows.prune_posts(announcement_id, keep=[message_id, *others])


async def edit_tidy(
    ctx: TransactionContext, announcement_id: int, guild_id: int, before: Tidy, after: Tidy
) -> None:
    """In the transaction of an edit that changes what becomes of the announcement's posts:
    store it, and apply it to the posts already up: ``pin`` turned on pins the latest post
    in each of its places (off: unpins them); a new ``delete_after`` moves the deletion of
    every post still up (``none``: they stay); ``replace`` acts at the next post. Nothing
    when it is unchanged."""
    if after == before:
        return
    rows = BotDb(ctx.db)
    await rows.set_tidy(announcement_id, guild_id, after)
    posts = await rows.posts_of(announcement_id)
    now = ctx.now.timestamp()
    if after.pin != before.pin:
        for latest in _latest_up(posts) if after.pin else []:
            if latest.pin_state != "pinned":
                await rows.pin_again(announcement_id, latest.message_id)
        if not after.pin:
            await rows.unpin_others(announcement_id, keep=None)
        await enqueue_tidy(ctx, announcement_id, f"edit:{now!r}")
    if after.delete_after != before.delete_after:
        for post in await rows.set_delete_times(announcement_id, after.delete_after):
            if post.delete_at is not None:
                at = max(post.delete_at, now)
                await enqueue_tidy(ctx, announcement_id, f"at:{post.message_id}:{at!r}", at=at)


def _latest_up(posts: list[PostRow]) -> list[PostRow]:
    """The latest post not deleted (nor to be) in each channel it was posted in."""
    return latest_in_each_channel([p for p in posts if p.remove_state is None])


async def claim_posts(
    ctx: TransactionContext, announcement_id: int, job_id: int, attempt: int
) -> bool:
    """Take the announcement's posts for this run of job ``job_id`` (False: another job's
    run holds them)."""
    rows = BotDb(ctx.db)
    a = await rows.announcement(announcement_id)
    guild_id = 0 if a is None else a.guild_id
    now = ctx.now.timestamp()
    return await rows.claim_posts(
        announcement_id, guild_id, job_id, attempt, now, now + CLAIM_SECONDS
    )


async def release_posts(
    ctx: TransactionContext, announcement_id: int, job_id: int, attempt: int
) -> None:
    await BotDb(ctx.db).release_posts(announcement_id, job_id, attempt)


class PostCare(Reading):
    """What becomes of an announcement's posts, read."""

    async def tidy(self, announcement_id: int) -> Tidy:
        """Its pin, replace and delete-after settings (all off: the default)."""
        async with self.sched.reader() as db:
            return await BotDb(db).tidy(announcement_id)

    async def post_problem(self, announcement_id: int) -> PostRow | None:
        """Its latest post whose pin, unpin or deletion Discord refused (None: none)."""
        async with self.sched.reader() as db:
            return await BotDb(db).post_problem(announcement_id)
