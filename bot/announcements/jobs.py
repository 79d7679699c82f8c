"""The scheduler jobs of an announcement, in one place: their names, the types of their
arguments, their pace keys and how they are enqueued (their actions are in
:mod:`bot.posting`).

Every job name is ``announcements:<what>``. Releases before this one named two of them
otherwise; databases they wrote still hold pending jobs under those names, so each job's
registration keeps its old name as an alias (:data:`OLD_NAMES`): a job stored under it runs
as if it had the new one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from scheduler import (
    ActionContext,
    Concurrency,
    JobRequest,
    Pace,
    Registry,
    Retry,
    TransactionContext,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from datetime import datetime

A = TypeVar("A")

SEND_FN = "announcements:send"
"""The durable job that posts one occurrence of an announcement."""
UPDATE_FN = "announcements:update_post"
"""The durable job that brings a posted message up to date with its announcement."""
PUBLISH_FN = "announcements:publish"
"""The durable job that publishes a post in an announcement channel, after the post."""
REPORT_FN = "announcements:report"
"""The durable job that posted one failure report to a guild's log channel (releases before
the digest enqueued one per failure; their stored jobs still run)."""
REPORTS_FN = "announcements:reports"
"""The durable job that posts a guild's failure reports to its log channel, gathered into
one message (a batch of the scheduler: :func:`enqueue_report`)."""
EVENTS_FN = "announcements:events"
"""The durable job that makes an announcement's Discord scheduled events match it."""
REMIND_FN = "announcements:remind"
"""The durable job that reminds the members who asked of an announcement's coming
occurrences, by direct message (one job at a time per announcement, not one per member)."""
POSTNOW_FN = "announcements:postnow"
"""The durable job that makes the extra post ``/postnow`` asked for (once per use)."""
TIDY_FN = "announcements:tidy"
"""The durable job that pins, unpins and deletes an announcement's posts as its settings say
(one at a time per announcement: :mod:`bot.posting.tidy`)."""
OLD_NAMES: dict[str, tuple[str, ...]] = {
    UPDATE_FN: ("crier.update_posted",),
    PUBLISH_FN: ("crier.publish",),
}
"""The names earlier releases stored each job under (registered as aliases)."""


@dataclass(frozen=True, slots=True)
class SendArgs:
    """What a delivery job posts: the occurrence of ``announcement_id`` at ``fire_ts``
    (None for a schedule's occurrence, whose fire time is its job's)."""

    announcement_id: int
    fire_ts: float | None = None


@dataclass(frozen=True, slots=True)
class UpdateArgs:
    """Whose posted message an update job brings up to date: the occurrence of
    ``announcement_id`` at ``fire_ts``, posted in ``channel_id``."""

    announcement_id: int
    fire_ts: float
    channel_id: int


@dataclass(frozen=True, slots=True)
class PublishArgs:
    """What a publish job publishes: message ``message_id`` in announcement channel
    ``channel_id``, the post of the occurrence of ``announcement_id`` at ``fire_ts`` made at
    ``posted_at``; ``round`` counts the jobs made for it after a rate limit."""

    announcement_id: int
    fire_ts: float
    channel_id: int
    message_id: int
    posted_at: float
    round: int = 0


@dataclass(frozen=True, slots=True)
class EventsArgs:
    """Whose Discord events an events job makes match: ``announcement_id``'s; ``edited``: an
    edit asked for it (an event of an occurrence that moved is moved with it, not
    canceled)."""

    announcement_id: int
    edited: bool = False


@dataclass(frozen=True, slots=True)
class RemindArgs:
    """Whose reminders a remind job sends: ``announcement_id``'s, all those due when it runs
    (``fire_ts``: the occurrence it was planned for; None: planned after a change)."""

    announcement_id: int
    fire_ts: float | None = None


@dataclass(frozen=True, slots=True)
class PostNowArgs:
    """Which extra post a postnow job makes: the row ``extra_id`` of ``bot_extra_posts``."""

    extra_id: int


@dataclass(frozen=True, slots=True)
class TidyArgs:
    """Whose posts a tidy job works on: ``announcement_id``'s, everything due when it runs."""

    announcement_id: int


@dataclass(frozen=True, slots=True)
class ReportArgs:
    """What a report job posts: ``text`` to the log channel of guild ``guild_id``; with a
    ``message`` (an answer's English text marked with :func:`bot.i18n.t`, its placeholders
    from ``values``), that message said in the guild's language when it is posted
    (``text`` is then its English, kept for jobs stored before)."""

    guild_id: int
    text: str
    message: str = ""
    values: dict[str, str] | None = None


@dataclass(frozen=True, slots=True)
class ReportDigest:
    """What a reports job posts: the failure reports of one guild (``key``:
    ``guild:<id>``), in the order they were made, as one message."""

    key: str
    items: tuple[ReportArgs, ...]


REPORT_MAX_ITEMS = 100
"""The most reports one digest gathers: one more starts the next (a digest shows what fits
in one Discord message and counts the rest)."""
EDIT_MAX_WAIT = 60.0
"""A burst of edits never keeps its posted message from being updated longer than this after
its first edit."""


def register_job(
    registry: Registry,
    fn: str,
    args: type[A],
    handler: Callable[[ActionContext, A], Awaitable[Any]],
    *,
    retry: Retry,
) -> None:
    """Register ``handler`` as the action ``fn``, taking ``args``, under its old names too
    (:data:`OLD_NAMES`). Every job of an announcement is idempotent: a run that a crash
    interrupted is run again (each records what it did, and a re-run finds it)."""
    registry.action(fn, args=args, idempotent=True, retry=retry, aliases=OLD_NAMES.get(fn, ()))(
        handler
    )


def events_concurrency(announcement_id: int) -> Concurrency:
    """The concurrency of an announcement's events jobs: one at a time, in every instance
    (a second waits, holding nothing, until the first ends: two never both look for an event
    the other is making)."""
    return Concurrency(f"events:{announcement_id}", 1)


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


def delivery_job(
    announcement_id: int,
    fire_ts: float,
    pace: Pace | None,
    *,
    again: tuple[str, float] | None = None,
) -> JobRequest:
    """The job that posts a one-off announcement's occurrence at ``fire_ts`` (epoch
    seconds, due then), with its channel's ``pace``. One job per occurrence: its idempotency
    key is the occurrence's; ``again`` (why, and when: ``("edited", now)``) makes a job of
    its own for an occurrence planned anew, whose first job may still hold that key."""
    key = f"announcement:{announcement_id}:{fire_ts!r}"
    if again is not None:
        key += f":{again[0]}:{again[1]!r}"
    return JobRequest(
        SEND_FN,
        SendArgs(announcement_id, fire_ts),
        run_at=fire_ts,
        idempotency_key=key,
        name=f"announcement {announcement_id}",
        pace=pace,
    )


async def enqueue_delivery(
    ctx: TransactionContext,
    announcement_id: int,
    fire_ts: float,
    pace: Pace | None,
    *,
    again: str | None = None,
) -> int:
    """In ``ctx``'s transaction: the job that posts a one-off announcement at ``fire_ts``
    (see :func:`delivery_job`; ``again``: why it is planned anew, e.g. ``"edited"``, at the
    transaction's time). Returns its id."""
    planned = None if again is None else (again, ctx.now.timestamp())
    job = delivery_job(announcement_id, fire_ts, pace, again=planned)
    return await ctx.scheduler.enqueue(job.fn, job.args, **job.options)


async def enqueue_post_update(
    ctx: TransactionContext,
    announcement_id: int,
    fire_ts: float,
    channel_id: int,
    *,
    quiet: float,
) -> int:
    """In ``ctx``'s transaction: bring the message posted for the occurrence at ``fire_ts``
    up to date, ``quiet`` seconds after the last of a burst of such calls (a debounce of the
    scheduler, per message, whoever calls: one edit of the message for the burst, never
    later than :data:`EDIT_MAX_WAIT` after its first call). The job reads the announcement
    as it is when it runs, so it sends the last edit's text."""
    return await ctx.scheduler.debounce(
        UPDATE_FN,
        UpdateArgs(announcement_id, fire_ts, channel_id),
        key=f"post:{announcement_id}:{fire_ts!r}",
        quiet=quiet,
        max_wait=max(quiet, EDIT_MAX_WAIT),
    )


async def enqueue_publish(
    ctx: TransactionContext,
    args: PublishArgs,
    *,
    spacing: float,
    at: datetime | None = None,
) -> int:
    """In ``ctx``'s transaction: publish the post ``args`` names (now, or ``at``), paced
    with the other publishes of its channel (:func:`publish_pace`: started at
    least ``spacing`` seconds apart, in due order, by every instance; 0: not paced)."""
    return await ctx.scheduler.enqueue(
        PUBLISH_FN,
        args,
        run_at=at,
        idempotency_key=f"publish:{args.announcement_id}:{args.fire_ts!r}:{args.round}",
        name=f"publish the post of announcement {args.announcement_id}",
        pace=publish_pace(args.channel_id, spacing),
    )


async def enqueue_report(
    ctx: TransactionContext,
    guild_id: int,
    text: str,
    message: str = "",
    values: dict[str, str] | None = None,
    *,
    gather: float,
) -> int:
    """In ``ctx``'s transaction (the one that records the failure): report ``text`` (or
    ``message`` with ``values``, in the guild's language: see :class:`ReportArgs`) to the
    guild's log channel, gathered with the guild's other reports of the next ``gather``
    seconds into one message (a batch of the scheduler, keyed by the guild: each report in
    exactly one digest). The digest is a job of its own so that it is posted exactly once
    however the run that recorded the failure ends: a run paused or killed after the record
    leaves the report to the job, which the next run (this process's or another's) posts.
    Returns the digest's job id."""
    return await ctx.scheduler.batch(
        REPORTS_FN,
        ReportArgs(guild_id, text, message, values),
        key=f"guild:{guild_id}",
        max_items=REPORT_MAX_ITEMS,
        max_wait=gather,
    )


async def enqueue_tidy(
    ctx: TransactionContext, announcement_id: int, key: str, *, at: float | None = None
) -> int:
    """In ``ctx``'s transaction: work on the announcement's posts (now, or ``at``); one job
    per ``key`` (what asked for it: a post up, a post's time to go, an edit). One of an
    announcement's jobs runs at a time, in every instance (:func:`tidy_concurrency`)."""
    return await ctx.scheduler.enqueue(
        TIDY_FN,
        TidyArgs(announcement_id),
        run_at=at,
        idempotency_key=f"tidy:{announcement_id}:{key}",
        name=f"the posts of announcement {announcement_id}",
        concurrency=tidy_concurrency(announcement_id),
    )


def tidy_concurrency(announcement_id: int) -> Concurrency:
    """The concurrency of an announcement's tidying jobs: one at a time (a second, e.g. for
    the post in another place that went up at the same moment, waits holding nothing and
    starts once the first ends, instead of finding the posts claimed and retrying later;
    the claim on the posts stays, for jobs enqueued before this)."""
    return Concurrency(f"tidy:{announcement_id}", 1)
