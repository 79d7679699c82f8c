"""Posting announcements: one scheduler action per occurrence, each posted at most once.

The occurrence's row in ``bot_deliveries`` is written (state ``sending``, with its
deterministic nonce) before the message is sent, and the message id after (the bookkeeping
is :mod:`bot.announcements.deliveries`). So:

- a job that finds a message id recorded for its occurrence does nothing more;
- a re-run after a crash or a transient error re-sends with the same nonce, which Discord
  answers with the first message instead of a second one (``enforce_nonce``), but only
  while Discord still remembers the nonce; later, it is reported as "may not have been
  delivered" instead of risking a duplicate;
- permanent errors (Unknown Channel, Missing Access, Missing Permissions, other 4xx) fail
  the occurrence at once, pause a recurring announcement and are reported.

discord.py handles 429s itself (it sleeps and retries); nothing here catches one. Sends to
one channel are spaced by the scheduler, in due order and across every instance: each
occurrence job carries its channel's pace (``bot.announcements.jobs.channel_pace``), so a
job waiting for its channel's turn is not claimed yet and holds nothing. The send is guarded
like every request that posts (:class:`bot.posting.poster.Poster`): the lease kept and
checked right before it, a timeout well inside the nonce window.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

import discord

from scheduler import (
    ActionContext,
    NonRetryable,
    Registry,
    Retry,
    RetryLater,
    TransactionContext,
)

from .. import i18n
from ..announcements import SEND_FN, Announcement, Announcements, SendArgs
from ..announcements.deliveries import (
    AWAY,
    Attempt,
    Decision,
    begin_attempt,
    close_interrupted,
    end_past_until,
    note_transient_error,
    record_away,
    record_failure,
    record_sent,
)
from ..announcements.jobs import enqueue_report, register_job
from ..announcements.placeholders import event_url
from ..db import BotDb
from ..metrics import BotStats
from ..models import AnnouncementState, Destination, nonce_for
from .failures import PERMANENT_CODES, REQUEST_ERRORS, RequestFailed
from .forums import create_forum_post, find_forum_post
from .payload import LATE_NOTE_AFTER, PostPayload, posting_locale, render_post

if TYPE_CHECKING:
    from ..metrics import BotStats
    from .poster import Poster
    from .webhooks import Posted, WebhookSender

__all__ = ["PERMANENT_CODES", "SEND_ATTEMPTS", "SEND_RETRY", "Delivery", "nonce_for"]

log = logging.getLogger("crier.delivery")  # tests and operators filter on this name

UNKNOWN_CHANNEL, UNKNOWN_GUILD, MISSING_ACCESS = 10003, 10004, 50001
GONE_CODES = frozenset({UNKNOWN_CHANNEL, UNKNOWN_GUILD, MISSING_ACCESS})
"""The refusals of a send that may mean the bot is out of the channel's server: the server
is then asked for (10004 Unknown Guild or 50001 Missing Access: the bot left it)."""

SEND_ATTEMPTS = 5
"""Sends of one occurrence that may fail with a transient error before it is reported."""
SEND_RETRY = Retry(max_failures=400, initial_backoff=2.0, base=2.0)
"""The job's own budget is far larger than SEND_ATTEMPTS because the scheduler also spends it
when a crash interrupts a delivery (its lease expires): a crash loop must not use it up and
drop the occurrence without a word. An interrupted delivery is re-sent with the same nonce
until it is recorded, or reported by ``begin_attempt`` once its first attempt is older than
the nonce window (at most 300 s; with leases of at least 1 s that is fewer than 400
re-dispatches)."""


class Delivery:
    """The ``announcements:send`` action: posts one occurrence where its announcement goes."""

    def __init__(
        self,
        poster: Poster,
        announcements: Announcements,
        webhooks: WebhookSender,
        *,
        catch_up_window: float,
        nonce_window: float,
        publish_spacing: float,
        stats: BotStats,
    ) -> None:
        self.poster = poster
        self.announcements = announcements
        self.webhooks = webhooks
        """Posts the occurrences of announcements that post as someone."""
        self.catch_up_window = catch_up_window
        self.nonce_window = nonce_window
        self.publish_spacing = publish_spacing
        """Seconds between the starts of two publishes in one announcement channel, across
        every instance (each publish job carries its channel's ``publish_pace``)."""
        self.stats = stats
        """What this process's deliveries did (``/metrics``)."""

    def register(self, registry: Registry) -> None:
        register_job(registry, SEND_FN, SendArgs, self.send, retry=SEND_RETRY)

    async def send(self, ctx: ActionContext, args: SendArgs) -> dict[str, object]:
        """Post the occurrence ``args`` names, once: checked still due, its attempt recorded
        first (:meth:`_begin`), its post rendered as its first attempt showed it
        (:meth:`render`), sent through the guard, recorded sent (:meth:`_sent`); a refused
        request is handled by :meth:`_refused`."""
        ann = await self.announcements.by_id(args.announcement_id)
        fire_ts = args.fire_ts or ctx.job.fire_ts or 0.0
        if ann is None or ann.state != AnnouncementState.SCHEDULED:
            return {"skipped": await self._not_scheduled(ctx, ann, fire_ts)}
        if ann.until_ts is not None and fire_ts > ann.until_ts:
            await ctx.run_mutation(lambda tx, _: end_past_until(tx, ann.id))
            return {"skipped": "past until"}
        found_at = ctx.now.timestamp()
        # The language now: what a first attempt records and shows (a re-send shows its own).
        locale_now = await posting_locale(self.poster.client, self.announcements, ann.guild_id)
        post_as = await self.announcements.post_as(ann.id)  # None: as the bot
        posted: Posted | None = None
        try:
            async with self.poster.holding(ctx):
                now = ctx.now.timestamp()
                attempt = await self._begin(
                    ctx, ann, fire_ts, found_at, now, locale_now, webhook=post_as is not None
                )
                if attempt.action == Decision.DONE:
                    return {"already": attempt.reason}
                if attempt.action == Decision.AWAY:
                    return {"skipped": attempt.reason}
                if attempt.action in (Decision.MISSED, Decision.UNKNOWN):
                    await self._fail(ctx, ann, fire_ts, attempt.reason, pause=False)
                    raise NonRetryable(attempt.reason)
                shown, payload, late = await self.render(
                    ann, fire_ts, attempt, found_at, locale_now
                )
                # Through the channel's webhook when it posts as someone (its own guard).
                posted = await self.webhooks.post(
                    ctx, shown, fire_ts, payload, again=attempt.again, post_as=post_as
                )
                if posted is not None:
                    message_id = posted.message_id
                else:
                    # Nothing may post for a run that could have lost its job meanwhile.
                    message_id = await self.poster.request(
                        ctx, lambda: self.post(shown, payload, attempt), before="send"
                    )
        except RequestFailed as failed:
            return await self._refused(ctx, ann, fire_ts, failed)
        late_by = max(0.0, now - fire_ts)
        if posted is not None and posted.stale:  # it shows an earlier text: brought up to date
            shown = replace(shown, revision=shown.revision - 1)
        await self._sent(
            ctx, shown, fire_ts, message_id, attempt, late_by=late_by, late=late, webhook=posted
        )
        return {"message_id": message_id, "late_by": round(late_by, 3)}

    async def _begin(
        self,
        ctx: ActionContext,
        ann: Announcement,
        fire_ts: float,
        found_at: float,
        now: float,
        locale: str | None,
        *,
        webhook: bool,
    ) -> Attempt:
        """Record this attempt (``sending``, with its nonce) before anything is sent; what
        to do (see :func:`bot.announcements.deliveries.begin_attempt`). A first attempt of
        an announcement that posts as someone (``webhook``) records, in the same
        transaction, that it goes through the channel's webhook."""

        async def begin(tx: TransactionContext, _: object) -> Attempt:
            attempt = await begin_attempt(
                tx,
                ann.id,
                fire_ts,
                job_id=ctx.job.id,
                found_at=found_at,
                now=now,
                catch_up_window=self.catch_up_window,
                nonce_window=self.nonce_window,
                guild_id=ann.guild_id,
                locale=locale,
                spacing=self.announcements.send_spacing,
            )
            if webhook and attempt.action == Decision.SEND and not attempt.again:
                await self.webhooks.begin(tx, ann, fire_ts)
            return attempt

        return await ctx.run_mutation(begin)

    async def render(
        self,
        ann: Announcement,
        fire_ts: float,
        attempt: Attempt,
        found_at: float,
        locale_now: str | None,
    ) -> tuple[Announcement, PostPayload, bool]:
        """The occurrence as posted, its payload, and whether it is posted late: as its first
        attempt showed it (a re-send is the same request, even if the server's language or
        the occurrence's event changed since)."""
        if attempt.first_attempt_at is not None:
            # A re-send shows what the first attempt did: late only if that one was.
            late = attempt.first_attempt_at - fire_ts >= LATE_NOTE_AFTER
        else:
            # Late means found late (after downtime), not queued behind the channel's others.
            late = found_at - fire_ts >= LATE_NOTE_AFTER
        first = attempt.shown
        if first is None:  # an attempt recorded before this was kept: as it did
            locale, words, link = locale_now, None, None
        else:
            locale, words = first.locale, first.locale
            link = event_url(ann.guild_id, first.event_id)
        shown, payload = await render_post(
            self.announcements,
            ann,
            fire_ts,
            locale=locale,
            words=words,
            event=link,
            late_for=fire_ts if late else None,
        )
        return shown, payload, late

    async def _refused(
        self, ctx: ActionContext, ann: Announcement, fire_ts: float, failed: RequestFailed
    ) -> dict[str, object]:
        """The send was refused: the bot is out of the server (recorded away), or it failed
        for good (raise ``NonRetryable``), or it may pass (raise ``RetryLater``)."""
        if failed.code in GONE_CODES and await self._guild_gone(ann.guild_id):
            await ctx.run_mutation(lambda tx, _: record_away(tx, ann.id, fire_ts, AWAY))
            return {"skipped": AWAY}
        if failed.permanent:
            await self._fail(ctx, ann, fire_ts, failed.reason, pause=ann.recurring)
            raise NonRetryable(failed.reason) from failed
        await self._transient(ctx, ann, fire_ts, failed.reason)
        raise RetryLater(failed.reason) from failed

    async def _sent(
        self,
        ctx: ActionContext,
        ann: Announcement,
        fire_ts: float,
        message_id: int,
        attempt: Attempt,
        *,
        late_by: float,
        late: bool,
        webhook: Posted | None = None,
    ) -> None:
        """Record the occurrence sent (and its publish, in an announcement channel; the
        webhook post it is, when it went through one)."""
        spacing, quiet = self.publish_spacing, self.announcements.edit_quiet

        async def sent(tx: TransactionContext, _: object) -> None:
            await record_sent(
                tx,
                ann,
                fire_ts,
                message_id,
                late_by=late_by,
                publish_spacing=spacing,
                edit_quiet=quiet,
            )
            if webhook is not None:
                await BotDb(tx.db).set_webhook_message(
                    ann.id, fire_ts, ann.channel_id, message_id, webhook.thread_id
                )

        await ctx.run_mutation(sent)
        self.stats.deliveries_sent += 1
        self.stats.deliveries_late += late
        self.stats.deliveries_resent += attempt.again

    async def _guild_gone(self, guild_id: int) -> bool:
        """After a send refused as if the bot could not see its channel: whether that is
        because the bot is out of the server (removed while this process was not connected,
        or the server deleted). Then it is recorded left, as GUILD_DELETE would have."""
        if await self.announcements.left_guild(guild_id) is not None:
            return True
        try:
            await self.poster.client.fetch_guild(guild_id, with_counts=False)
        except discord.NotFound:
            gone = True  # 10004 Unknown Guild
        except discord.Forbidden as exc:
            gone = exc.code == MISSING_ACCESS
        except REQUEST_ERRORS:
            return False  # can't tell: the failure is handled as it is
        else:
            return False
        if gone:
            log.info("server %d: the bot is not in it any more (found at a send)", guild_id)
            await self.announcements.guild_left(guild_id)
        return gone

    async def _not_scheduled(
        self, ctx: ActionContext, ann: Announcement | None, fire_ts: float
    ) -> str:
        """The occurrence of an announcement no longer scheduled is not posted; why."""
        if ann is None:
            return str(AnnouncementState.CANCELED)
        # An attempt a crash interrupted, then the announcement was canceled (or paused, or
        # ended): it is not sent again, and its row must not stay "sending" for ever.
        await ctx.run_mutation(lambda tx, _: close_interrupted(tx, ann.id, fire_ts, ann.state))
        return str(ann.state)

    async def post(self, ann: Announcement, payload: PostPayload, attempt: Attempt) -> int:
        """Post ``payload`` where ``ann`` goes (a channel or thread: a message with the
        occurrence's nonce; a forum: a new post, unless an interrupted attempt made it);
        returns the message's id."""
        client = self.poster.client
        if ann.rich.destination == Destination.FORUM:  # (a forum post has no nonce)
            if attempt.again:
                found = await find_forum_post(client, self.announcements.sched, ann)
                if found is not None:
                    log.info("announcement %d: found forum post %d made earlier", ann.id, found)
                    return found
            return await create_forum_post(client, ann, payload)
        if attempt.again:
            self.stats.nonce_resends += 1
        channel = client.get_partial_messageable(ann.channel_id)
        message = await channel.send(nonce=attempt.nonce, **payload.send_options())
        return message.id

    async def _transient(
        self, ctx: ActionContext, ann: Announcement, fire_ts: float, reason: str
    ) -> None:
        """A failure that may pass. The next attempt re-sends with the same nonce; on the
        last one, give up and report it."""
        if ctx.job.attempt + 1 >= SEND_ATTEMPTS:
            tries = ctx.job.attempt + 1
            why = f"may not have been delivered: {reason} (gave up after {tries} attempts)"
            await self._fail(ctx, ann, fire_ts, why, pause=False)
            raise NonRetryable(why)
        log.warning(
            "announcement %d (guild %d, channel %d, job %d): %s; will retry",
            ann.id, ann.guild_id, ann.channel_id, ctx.job.id, reason,
        )  # fmt: skip
        # (The job's failed attempt is then logged by the scheduler, in one line.)
        await ctx.run_mutation(lambda tx, _: note_transient_error(tx, ann.id, fire_ts, reason))

    async def _fail(
        self, ctx: ActionContext, ann: Announcement, fire_ts: float, reason: str, *, pause: bool
    ) -> None:
        """Record the occurrence failed and report it (log, and the log channel by a job of
        its own enqueued with the record), unless another run delivered it meanwhile."""
        message = (
            i18n.marked(
                "⚠️ Announcement #{id} for {channel} could not be posted: {reason}. It is "
                "paused; schedule it again once this is fixed."
            )
            if pause
            else i18n.marked("⚠️ Announcement #{id} for {channel} could not be posted: {reason}.")
        )
        values = {"id": str(ann.local_id), "channel": f"<#{ann.channel_id}>", "reason": reason}
        text = message.format(**values)
        gather = self.announcements.report_gather

        async def fail(tx: TransactionContext, _: object) -> bool:
            if not await record_failure(tx, ann.id, fire_ts, reason, pause=pause):
                return False  # another run delivered it meanwhile: there is nothing to report
            await enqueue_report(tx, ann.guild_id, text, message, values, gather=gather)
            return True

        if not await ctx.run_mutation(fail):
            return
        self.stats.deliveries_failed += 1
        log.error(
            "announcement %d (#%d) failed: %s [guild %d, channel %d, job %d]%s",
            ann.id, ann.local_id, reason, ann.guild_id, ann.channel_id, ctx.job.id,
            "; recurring announcement paused" if pause else "",
        )  # fmt: skip
