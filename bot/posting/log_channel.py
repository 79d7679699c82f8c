"""Reports to a guild's log channel (failures to post, posts that can't be updated).

A job that fails an occurrence (or finds a posted message it can't update) records the
failure and, in the same transaction, adds its report
(:class:`~bot.announcements.jobs.ReportArgs`) to the guild's open digest, a batch of the
scheduler (:func:`~bot.announcements.jobs.enqueue_report`): ``announcements:reports`` runs
``REPORT_DIGEST_SECONDS`` after the first report of the digest, with every report of the
guild made meanwhile, and posts them as one message in the guild's language (one report: as
it is; several: a heading and one line each, cut to what fits in one Discord message with
"…and N more"). So a burst of failures, such as an outage's, is one message per guild
instead of one per failure; each report is in exactly one digest.

The digest is posted by a job of its own, guarded like every request that posts
(:class:`bot.posting.poster.Poster`), so it goes out exactly once however the failing run
ends. A run paused or killed right after the record leaves its report to the job, which
another run posts; a run that lost its job's lease meanwhile posts nothing. A digest that
can't reach Discord is retried whole, with the same reports. It carries a nonce of its job's,
so a re-run after a crash mid-send is answered with the first message instead of a second
one (while Discord remembers the nonce). ``announcements:report`` (one report a job) still
runs the jobs that releases before the digest stored.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord

from scheduler import ActionContext, NonRetryable, Registry, Retry, RetryLater

from .. import i18n
from ..announcements import REPORT_FN, REPORTS_FN, Announcements, ReportArgs, ReportDigest
from ..announcements.jobs import register_job
from .failures import RequestFailed, describe, permanent
from .payload import posting_locale
from .reasons import said_reason

if TYPE_CHECKING:
    from .pacer import ChannelPacer
    from .poster import Poster

__all__ = ["DIGEST_LIMIT", "REPORT_RETRY", "LogChannel", "Reporter", "digest_text", "report_nonce"]

log = logging.getLogger("crier.delivery")  # tests and operators filter on this name

REPORT_RETRY = Retry(max_failures=20, initial_backoff=5.0, base=2.0)
"""A report that could not reach Discord (5xx, connection errors) is tried again."""


DIGEST_LIMIT = 2000
"""The most characters of one Discord message: what a digest of reports fits in."""


def digest_text(lines: list[str], limit: int = DIGEST_LIMIT) -> str:
    """Several reports (each already said in the guild's language) as one message: a
    heading, then one line each, as many as fit in ``limit`` characters with a last line
    counting the others. Said in the language in effect (:func:`bot.i18n.speaking`)."""
    head = i18n.tn("⚠️ {n} problem to report:", "⚠️ {n} problems to report:", len(lines))
    shown: list[str] = []
    for n, line in enumerate(lines):
        line = "- " + line.removeprefix("⚠️").strip()
        left = len(lines) - n - 1
        tail = i18n.tn("…and {n} more report", "…and {n} more reports", left) if left else ""
        size = len(head) + sum(len(s) + 1 for s in shown) + len(line) + 1
        if size + (len(tail) + 1 if tail else 0) > limit:
            break
        shown.append(line)
    rest = len(lines) - len(shown)
    parts = [head, *shown]
    if rest:
        parts.append(i18n.tn("…and {n} more report", "…and {n} more reports", rest))
    return "\n".join(parts)


def report_nonce(job_id: int) -> str:
    """The nonce of the report job ``job_id``'s message (the same for every run of it)."""
    return f"r{job_id}"


class LogChannel:
    """Posts reports to each guild's log channel (from its settings), pinging no one, in
    the channel's turn (``pacer``: spaced with this process's other requests there)."""

    def __init__(
        self, client: discord.Client, announcements: Announcements, pacer: ChannelPacer
    ) -> None:
        self.client = client
        self.announcements = announcements
        self.pacer = pacer

    async def tell_digest(self, guild_id: int, reports: list[ReportArgs], *, nonce: str) -> bool:
        """Post ``reports`` to the guild's log channel, if it has one, as one message in the
        guild's language (:func:`~bot.posting.payload.posting_locale`): one report as it is,
        several as :func:`digest_text` puts them; with ``nonce`` (the same at every run of
        the job: discord.py's own is new at every call); whether it was posted. A message
        Discord refuses for good (no access to the channel...) is logged, not raised: it does
        not fail the job that reports; one it could not take now (5xx) is raised, so the job
        tries again later."""
        settings = await self.announcements.settings(guild_id)
        if settings.log_channel_id is None or not reports:
            return False
        locale = await posting_locale(self.client, self.announcements, guild_id)
        lines = [self._said(r, locale) for r in reports]
        if len(lines) == 1:
            text = lines[0]
        else:
            with i18n.speaking(locale):
                text = digest_text(lines)
        return await self._post(guild_id, settings.log_channel_id, text, nonce)

    @staticmethod
    def _said(report: ReportArgs, locale: str | None) -> str:
        """One report's text in ``locale`` (its English text when it carries no message)."""
        if not report.message:
            return report.text
        said = dict(report.values or {})
        if "reason" in said:  # recorded in English: said in the server's language
            with i18n.speaking(locale):
                said["reason"] = said_reason(said["reason"])
        return i18n.translate(report.message, locale, context=i18n.ANSWER, **said)

    async def _post(self, guild_id: int, channel_id: int, text: str, nonce: str) -> bool:
        try:
            async with self.pacer.slot(channel_id) as turn:
                turn.sent = True
                await self.client.get_partial_messageable(channel_id).send(
                    text, allowed_mentions=discord.AllowedMentions.none(), nonce=nonce
                )
        except discord.HTTPException as exc:
            if not permanent(exc):
                raise  # Discord is down (5xx): the job tries again, with the same reports
            log.warning(
                "could not post the failure report to log channel %d of guild %d: %s",
                channel_id, guild_id, describe(exc),
            )  # fmt: skip
            return False
        return True


class Reporter:
    """The ``announcements:reports`` action: posts a digest of a guild's reports to its log
    channel (and ``announcements:report``, one report, for the jobs stored before)."""

    def __init__(self, poster: Poster, log_channel: LogChannel) -> None:
        self.poster = poster
        self.log_channel = log_channel

    def register(self, registry: Registry) -> None:
        register_job(registry, REPORT_FN, ReportArgs, self.report, retry=REPORT_RETRY)
        register_job(registry, REPORTS_FN, ReportDigest, self.digest, retry=REPORT_RETRY)

    async def report(self, ctx: ActionContext, args: ReportArgs) -> dict[str, object]:
        return await self.digest(ctx, ReportDigest(f"guild:{args.guild_id}", (args,)))

    async def digest(self, ctx: ActionContext, args: ReportDigest) -> dict[str, object]:
        if not args.items:
            return {"reported": False}
        guild_id = args.items[0].guild_id
        nonce = report_nonce(ctx.job.id)
        reports = list(args.items)
        try:
            async with self.poster.holding(ctx):
                posted = await self.poster.request(
                    ctx,
                    lambda: self.log_channel.tell_digest(guild_id, reports, nonce=nonce),
                    before="report",
                )
        except RequestFailed as failed:
            if failed.permanent:
                raise NonRetryable(failed.reason) from failed
            raise RetryLater(failed.reason) from failed
        return {"reported": posted, "reports": len(reports)}
