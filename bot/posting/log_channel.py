"""Reports to a guild's log channel (failures to post, posts that can't be updated).

A job that fails an occurrence (or finds a posted message it can't update) records the
failure and, in the same transaction, enqueues ``announcements:report``
(:class:`~bot.announcements.jobs.ReportArgs`, :func:`~bot.announcements.jobs.enqueue_report`):
the report is posted by a job of its own, guarded like every request that posts
(:class:`bot.posting.poster.Poster`), so it goes out exactly once however the failing run
ends. A run paused or killed right after the record leaves its report to the job, which
another run posts; a run that lost its report job's lease meanwhile posts nothing. A report
carries a nonce of its job's, so a re-run after a crash mid-send is answered with the first
report instead of a second one (while Discord remembers the nonce).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord

from scheduler import ActionContext, NonRetryable, Registry, Retry, RetryLater

from .. import i18n
from ..announcements import REPORT_FN, Announcements, ReportArgs
from ..announcements.jobs import register_job
from .failures import RequestFailed, describe
from .payload import posting_locale
from .reasons import said_reason

if TYPE_CHECKING:
    from .pacer import ChannelPacer
    from .poster import Poster

__all__ = ["REPORT_RETRY", "LogChannel", "Reporter", "report_nonce"]

log = logging.getLogger("crier.delivery")  # tests and operators filter on this name

REPORT_RETRY = Retry(max_failures=20, initial_backoff=5.0, base=2.0)
"""A report that could not reach Discord (5xx, connection errors) is tried again."""


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

    async def tell(
        self,
        guild_id: int,
        text: str,
        *,
        nonce: str,
        message: str = "",
        values: dict[str, str] | None = None,
    ) -> bool:
        """Post ``text`` to the guild's log channel, if it has one, with ``nonce`` (the
        same at every run of a report: discord.py's own is new at every call); whether it
        was posted. With a ``message`` (and its ``values``), that message is posted instead,
        in the guild's language (:func:`~bot.posting.payload.posting_locale`). A report
        Discord refuses is logged, not raised: it does not fail the job that reports."""
        settings = await self.announcements.settings(guild_id)
        if settings.log_channel_id is None:
            return False
        if message:
            locale = await posting_locale(self.client, self.announcements, guild_id)
            said = dict(values or {})
            if "reason" in said:  # recorded in English: said in the server's language
                with i18n.speaking(locale):
                    said["reason"] = said_reason(said["reason"])
            text = i18n.translate(message, locale, context=i18n.ANSWER, **said)
        try:
            async with self.pacer.slot(settings.log_channel_id) as turn:
                turn.sent = True
                await self.client.get_partial_messageable(settings.log_channel_id).send(
                    text, allowed_mentions=discord.AllowedMentions.none(), nonce=nonce
                )
        except discord.HTTPException as exc:
            log.warning(
                "could not post the failure report to log channel %d of guild %d: %s",
                settings.log_channel_id, guild_id, describe(exc),
            )  # fmt: skip
            return False
        return True


class Reporter:
    """The ``announcements:report`` action: posts one report to a guild's log channel."""

    def __init__(self, poster: Poster, log_channel: LogChannel) -> None:
        self.poster = poster
        self.log_channel = log_channel

    def register(self, registry: Registry) -> None:
        register_job(registry, REPORT_FN, ReportArgs, self.report, retry=REPORT_RETRY)

    async def report(self, ctx: ActionContext, args: ReportArgs) -> dict[str, object]:
        nonce = report_nonce(ctx.job.id)
        try:
            async with self.poster.holding(ctx):
                posted = await self.poster.request(
                    ctx, lambda: self.log_channel.tell(
                        args.guild_id, args.text, nonce=nonce, message=args.message,
                        values=args.values,
                    ),
                    before="report",
                )  # fmt: skip
        except RequestFailed as failed:
            if failed.permanent:
                raise NonRetryable(failed.reason) from failed
            raise RetryLater(failed.reason) from failed
        return {"reported": posted}
