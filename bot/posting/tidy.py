"""The previous post: the ``announcements:tidy`` action pins, unpins and deletes an
announcement's posts as its settings say (``/edit pin: replace: delete_after:``), from the
intents :mod:`bot.announcements.previous` recorded.

One job works on an announcement's posts at a time: a run first takes them for itself
(``bot_post_claims``; another job's run waits, retried shortly; a claim whose run died
lapses), then does, one request at a time and each through the posting guard (the lease made
sure of right before it):

1. the pins: a post to be pinned (``pin``) is pinned, then recorded ``pinned``;
2. the unpins: every earlier post to be unpinned, then recorded ``unpinned``;
3. the deletions: a post to be deleted (``replace``), or whose ``delete_after`` came (its
   intent recorded first), is deleted, then recorded ``deleted``.

So the new post is pinned before the old one is unpinned (never none), and an old post is
deleted only once the new one is up. A crash, a lost answer or a 5xx leaves the step recorded
as still to do: the job's re-run does it again, which Discord takes as done (a pinned
message pinned again changes nothing; an unpinned one unpinned, the same). A post a
moderator deleted first (10008 Unknown Message) is no error: it is recorded ``gone``. A
refusal (the bot lacks Pin Messages: 50013; the channel already has Discord's most pins,
30003) is recorded ``failed`` with why, shown in ``/info`` and reported to the log channel,
once; at the pin limit, the posts to unpin are unpinned first and the pin tried again.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scheduler import ActionContext, Registry, Retry, RetryLater, TransactionContext

from .. import i18n
from ..announcements.jobs import TIDY_FN, TidyArgs, enqueue_report, register_job
from ..announcements.previous import claim_posts, release_posts
from ..db import BotDb, PostRow
from ..db.posts import latest_in_each_channel
from .failures import REQUEST_ERRORS, RequestFailed, classify
from .reasons import DELETE_REFUSED, PIN_REFUSED

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import discord

    from ..announcements import Announcements
    from ..models import Announcement
    from .poster import Poster, SideEffect
    from .webhooks import WebhookSender

__all__ = ["MAX_PINS", "PIN_REFUSED", "TIDY_RETRY", "Tidying"]

log = logging.getLogger("crier.delivery")  # tests and operators filter on this name

TIDY_RETRY = Retry(max_failures=50, initial_backoff=2.0, base=2.0)
MAX_PINS = 30003
"""Discord's refusal of a pin past the channel's most pins (400)."""
UNKNOWN_CHANNEL, UNKNOWN_MESSAGE, MISSING_PERMISSIONS = 10003, 10008, 50013
GONE = frozenset({UNKNOWN_CHANNEL, UNKNOWN_MESSAGE})
"""The post (or its channel) was deleted: nothing left to pin, unpin or delete."""
MOST_STEPS = 50
"""Requests one run makes at most (a backlog is left to the next run)."""

_PIN = i18n.marked("⚠️ Announcement #{id}'s post in {channel} could not be pinned: {reason}.")
_UNPIN = i18n.marked(
    "⚠️ Announcement #{id}'s earlier post in {channel} could not be unpinned: {reason}."
)
_DELETE = i18n.marked("⚠️ Announcement #{id}'s post in {channel} could not be deleted: {reason}.")


def next_step(posts: list[PostRow], now: float) -> tuple[str, PostRow] | None:
    """What to do first among the announcement's posts (oldest first): pin, unpin, delete."""
    pins = [p for p in posts if p.pin_state == "pin"]
    if pins:
        return "pin", pins[-1]
    unpins = [p for p in posts if p.pin_state == "unpin"]
    if unpins:
        return "unpin", unpins[0]
    for p in posts:
        if p.remove_state == "delete" or (
            p.remove_state is None and p.delete_at is not None and p.delete_at <= now
        ):
            return "delete", p
    return None


class Tidying:
    """The ``announcements:tidy`` action."""

    def __init__(
        self, poster: Poster, announcements: Announcements, webhooks: WebhookSender | None = None
    ) -> None:
        self.poster = poster
        self.announcements = announcements
        self.webhooks = webhooks
        """Deletes the posts made as someone through their webhook (they are not the bot's
        own messages: deleting them as the bot would need Manage Messages)."""

    def register(self, registry: Registry) -> None:
        register_job(registry, TIDY_FN, TidyArgs, self.tidy, retry=TIDY_RETRY)

    async def tidy(self, ctx: ActionContext, args: TidyArgs) -> dict[str, object]:
        ann_id, job_id, attempt = args.announcement_id, ctx.job.id, ctx.job.attempt
        if not await ctx.run_mutation(lambda tx, _: claim_posts(tx, ann_id, job_id, attempt)):
            raise RetryLater(f"another job is working on announcement {ann_id}'s posts")
        try:
            async with self.poster.holding(ctx):
                return await self._work(ctx, ann_id)
        except RequestFailed as failed:  # a transient one (refusals are recorded per step)
            raise RetryLater(failed.reason) from failed
        finally:
            await ctx.run_mutation(lambda tx, _: release_posts(tx, ann_id, job_id, attempt))

    async def _work(self, ctx: ActionContext, ann_id: int) -> dict[str, object]:
        done: dict[str, int] = {}
        ann = await self.announcements.by_id(ann_id)
        if ann is None:
            return {"nothing": "no announcement"}
        for _ in range(MOST_STEPS):
            posts = await self._posts(ann_id)
            step = next_step(posts, ctx.now.timestamp())
            if step is None:
                break
            kind, post = step
            if kind == "pin":
                outcome = await self._pin(ctx, ann, post, posts)
            elif kind == "unpin":
                outcome = await self._unpin(ctx, ann, post)
            else:
                outcome = await self._delete(ctx, ann, post)
            done[outcome] = done.get(outcome, 0) + 1
        await ctx.run_mutation(lambda tx, _: _prune(tx, ann_id))
        return {outcome: n for outcome, n in done.items()}

    async def _posts(self, ann_id: int) -> list[PostRow]:
        async with self.announcements.sched.reader() as db:
            return await BotDb(db).posts_of(ann_id)

    async def _request(
        self, ctx: ActionContext, call: Callable[[], Awaitable[None]], before: SideEffect
    ) -> RequestFailed | None:
        """Make the request through the guard: None when it went through, else what went
        wrong if Discord refused it for good; a transient failure is raised (the run ends,
        retried)."""
        try:
            await self.poster.request(ctx, call, before=before)
        except REQUEST_ERRORS as exc:
            failed = classify(exc)
            if failed.code in GONE or failed.permanent:
                return failed
            raise
        return None

    def _message(self, post: PostRow) -> discord.PartialMessage:
        return self.poster.client.get_partial_messageable(post.channel_id).get_partial_message(
            post.message_id
        )

    async def _pin(
        self, ctx: ActionContext, ann: Announcement, post: PostRow, posts: list[PostRow]
    ) -> str:
        failed = await self._request(ctx, self._message(post).pin, "pin")
        if failed is not None and failed.code == MAX_PINS:
            # The channel is full: what this announcement is to unpin goes first, then the
            # pin is tried again.
            for old in (p for p in posts if p.pin_state == "unpin"):
                await self._unpin(ctx, ann, old)
            failed = await self._request(ctx, self._message(post).pin, "pin")
        if failed is None:
            await self._done(ctx, post, "pin_state", "pin", "pinned")
            return "pinned"
        if failed.code in GONE:
            await self._done(ctx, post, "pin_state", "pin", "gone")
            return "gone"
        reason = PIN_REFUSED if failed.code == MISSING_PERMISSIONS else failed.reason
        await self._failed(ctx, ann, post, "pin_state", "pin", reason, _PIN)
        return "failed"

    async def _unpin(self, ctx: ActionContext, ann: Announcement, post: PostRow) -> str:
        failed = await self._request(ctx, self._message(post).unpin, "unpin")
        if failed is None or failed.code in GONE:
            await self._done(ctx, post, "pin_state", "unpin", "unpinned")
            return "unpinned"
        reason = PIN_REFUSED if failed.code == MISSING_PERMISSIONS else failed.reason
        await self._failed(ctx, ann, post, "pin_state", "unpin", reason, _UNPIN)
        return "failed"

    async def _delete(self, ctx: ActionContext, ann: Announcement, post: PostRow) -> str:
        if post.remove_state is None:  # its time came: the intent first
            now = ctx.now.timestamp()
            ann_id, msg_id = post.announcement_id, post.message_id
            await ctx.run_mutation(lambda tx, _: BotDb(tx.db).deleted_due(ann_id, msg_id, now))
        failed = await self._request(ctx, lambda: self._delete_post(post), "delete")
        if failed is None:
            await self._done(ctx, post, "remove_state", "delete", "deleted")
            return "deleted"
        if failed.code in GONE:
            await self._done(ctx, post, "remove_state", "delete", "gone")
            return "gone"
        reason = DELETE_REFUSED if failed.code == MISSING_PERMISSIONS else failed.reason
        await self._failed(ctx, ann, post, "remove_state", "delete", reason, _DELETE)
        return "failed"

    async def _delete_post(self, post: PostRow) -> None:
        """Delete the post: through the webhook that made it, when it was made as someone
        (and the webhook is still there), else as the bot."""
        if self.webhooks is not None:
            through = await self.webhooks.target(post.message_id)
            if through is not None and await self.webhooks.delete(through):
                return
        await self._message(post).delete()

    async def _done(
        self, ctx: ActionContext, post: PostRow, column: str, was: str, now_state: str
    ) -> None:
        ann_id, msg_id = post.announcement_id, post.message_id
        await ctx.run_mutation(
            lambda tx, _: BotDb(tx.db).step_done(ann_id, msg_id, column, was, now_state)
        )

    async def _failed(
        self,
        ctx: ActionContext,
        ann: Announcement,
        post: PostRow,
        column: str,
        was: str,
        reason: str,
        message: str,
    ) -> None:
        """Record the step refused for good, and report it (once: with the record)."""
        values = {"id": str(ann.local_id), "channel": f"<#{post.channel_id}>", "reason": reason}
        ann_id, msg_id = post.announcement_id, post.message_id
        gather = self.announcements.report_gather

        async def fail(tx: TransactionContext, _: object) -> bool:
            if not await BotDb(tx.db).step_done(ann_id, msg_id, column, was, "failed", reason):
                return False
            text = message.format(**values)
            await enqueue_report(tx, ann.guild_id, text, message, values, gather=gather)
            return True

        if await ctx.run_mutation(fail):
            log.error(
                "announcement %d (#%d): %s of message %d in channel %d refused: %s [job %d]",
                ann.id, ann.local_id, was, msg_id, post.channel_id, reason, ctx.job.id,
            )  # fmt: skip


async def _prune(ctx: TransactionContext, ann_id: int) -> None:
    rows = BotDb(ctx.db)
    posts = await rows.posts_of(ann_id)
    if posts:
        keep = [p.message_id for p in latest_in_each_channel(posts)]
        await rows.prune_posts(ann_id, keep=keep)
