"""Several places (``also_in``): each occurrence posted once in each other place, each place
paced, retried, reported and updated apart. The bookkeeping of those posts; their jobs are in
:mod:`bot.posting.places`.

- **Planned with the occurrence.** In the transaction that begins an occurrence in its own
  channel (its first attempt, :func:`bot.announcements.deliveries.begin_attempt`), each other
  place gets its row in ``bot_place_deliveries`` (``queued``) and its job
  (``announcements:send_place``), paced with the other posts to its channel
  (:func:`~bot.announcements.jobs.channel_pace`). The row is the once-key: a re-run of that
  transaction, or of anything after it, finds it and plans nothing more. So the other places
  are posted whatever becomes of the post in the announcement's own channel (a 403 there
  pauses the announcement; its occurrence still goes out everywhere else), and a failure in
  one place neither stops nor repeats another.
- **Exactly once per place.** Each place's job marks its row ``sending`` (with a nonce of its
  own, the occurrence's and the place's) before it sends, and ``sent`` with the message's id
  after; a re-run re-sends with the same nonce while Discord still remembers it, else records
  the post "may not have been delivered" and reports it, as a delivery does.
- **Tidied in place.** Each place's post is recorded as a post of the announcement
  (:func:`~bot.announcements.previous.post_up`), so ``pin``, ``replace`` and
  ``delete_after`` act in each place as in its own channel: the latest post pinned in each,
  the one before deleted in each, each post deleted that long after it went up.
- **Edits in place.** An edit that updates the occurrence's posted message updates each
  place's post too (``announcements:update_place``, one job per place and revision); a post
  an edit overtook while it was being sent is brought up to date once it is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from ..db import BotDb
from ..db.templates import name_key
from ..models import AnnouncementState, Place, PlaceDelivery, PlaceState, place_nonce
from .jobs import channel_pace
from .previous import post_up
from .service import AnnouncementService

if TYPE_CHECKING:
    from scheduler import TransactionContext

    from ..models import Announcement, Template

PLACE_SEND_FN = "announcements:send_place"
"""The durable job that posts one occurrence in one other place of its announcement."""
PLACE_UPDATE_FN = "announcements:update_place"
"""The durable job that brings an occurrence's post in another place up to date."""

MAX_PLACES = 10
"""The most other places one announcement posts in."""

CANCELED = "not posted: the announcement was canceled before its turn here"


@dataclass(frozen=True, slots=True)
class PlaceArgs:
    """The occurrence of ``announcement_id`` at ``fire_ts`` in the place ``channel_id``."""

    announcement_id: int
    fire_ts: float
    channel_id: int


def place_job_key(args: PlaceArgs) -> str:
    return f"announcement:{args.announcement_id}:{args.fire_ts!r}:in:{args.channel_id}"


async def plan_places(
    ctx: TransactionContext, ann_id: int, fire_ts: float, *, spacing: float
) -> int:
    """In the transaction that begins the occurrence at ``fire_ts``: each other place of the
    announcement gets its row (``queued``) and its job, paced per channel (``spacing``), once
    (a place planned before is left as it is). Returns how many were planned now."""
    rows = BotDb(ctx.db)
    ann = await rows.announcement(ann_id)
    if ann is None:
        return 0
    planned = 0
    for place in await rows.places(ann_id):
        nonce = place_nonce(ann_id, fire_ts, place.channel_id)
        if not await rows.plan_place_delivery(
            ann_id, fire_ts, place.channel_id, ann.guild_id, nonce
        ):
            continue
        args = PlaceArgs(ann_id, fire_ts, place.channel_id)
        job_id = await ctx.scheduler.enqueue(
            PLACE_SEND_FN,
            args,
            idempotency_key=place_job_key(args),
            name=f"announcement {ann_id} in {place.channel_id}",
            pace=channel_pace(place.channel_id, spacing),
        )
        await rows.set_place_job(ann_id, fire_ts, place.channel_id, job_id)
        planned += 1
    return planned


class PlaceDecision(StrEnum):
    SEND = "send"
    DONE = "done"
    """Nothing: it already ended (sent, failed or skipped)."""
    UNKNOWN = "unknown"
    """Report it may not have been delivered: its attempt is older than the nonce window."""
    SKIP = "skip"
    """Not posted (recorded): the announcement was canceled before this place's turn."""


@dataclass(frozen=True, slots=True)
class PlaceAttempt:
    action: PlaceDecision
    nonce: str = ""
    again: bool = False
    reason: str = ""


async def begin_place_attempt(
    ctx: TransactionContext, args: PlaceArgs, *, job_id: int, now: float, nonce_window: float
) -> PlaceAttempt:
    """Decide what the place's job does, and record it before anything is sent: a first
    attempt (or a re-send while Discord remembers the nonce) is marked ``sending``; one
    interrupted longer ago than ``nonce_window`` is not sent again; a canceled announcement's
    post is skipped."""
    rows = BotDb(ctx.db)
    ann_id, fire_ts, channel_id = args.announcement_id, args.fire_ts, args.channel_id
    if not await rows.lock_announcement(ann_id):
        return PlaceAttempt(PlaceDecision.DONE, reason="the announcement is gone")
    record = await rows.place_delivery(ann_id, fire_ts, channel_id)
    if record is None or record.state not in (PlaceState.QUEUED, PlaceState.SENDING):
        return PlaceAttempt(PlaceDecision.DONE, reason=str(record and record.state))
    ann = await rows.announcement(ann_id)
    if ann is None or ann.state == AnnouncementState.CANCELED:
        skipped = PlaceState.SKIPPED
        await rows.end_place_delivery(ann_id, fire_ts, channel_id, skipped, error=CANCELED)
        return PlaceAttempt(PlaceDecision.SKIP, reason=CANCELED)
    again = record.state == PlaceState.SENDING
    if again and record.first_attempt_at is not None:
        since = now - record.first_attempt_at
        if since > nonce_window:
            return PlaceAttempt(
                PlaceDecision.UNKNOWN,
                reason=(
                    f"may not have been delivered: an attempt was interrupted {since:.0f}s "
                    "ago, longer than Discord remembers a nonce, so it was not sent again"
                ),
            )
    await rows.begin_place_delivery(ann_id, fire_ts, channel_id, job_id, now)
    return PlaceAttempt(PlaceDecision.SEND, nonce=record.nonce, again=again)


async def record_place_sent(
    ctx: TransactionContext,
    sent: Announcement,
    args: PlaceArgs,
    message_id: int,
    *,
    late_by: float,
) -> None:
    """The post in the place is ``message_id``, showing ``sent`` (the announcement as it was
    posted); an edit that landed meanwhile is brought to it (a job, in this transaction)."""
    rows = BotDb(ctx.db)
    ann_id, fire_ts, channel_id = args.announcement_id, args.fire_ts, args.channel_id
    now = ctx.now.timestamp()
    ended = await rows.end_place_delivery(
        ann_id, fire_ts, channel_id, PlaceState.SENT,
        message_id=message_id, sent_at=now, late_by=late_by, revision=sent.revision,
    )  # fmt: skip
    if ended:  # what becomes of it (pin, replace, delete after), as of the post in its own
        await post_up(ctx, ann_id, sent.guild_id, channel_id, message_id)  # channel
    ann = await rows.announcement(ann_id)
    if ended and ann is not None and ann.revision > sent.revision:
        await enqueue_place_update(ctx, args, ann.revision)


async def record_place_failed(ctx: TransactionContext, args: PlaceArgs, reason: str) -> bool:
    """The post in the place failed for good (the announcement goes on everywhere else);
    False when another run ended it first (nothing is recorded)."""
    return await BotDb(ctx.db).end_place_delivery(
        args.announcement_id, args.fire_ts, args.channel_id, PlaceState.FAILED, error=reason
    )


async def record_place_skipped(ctx: TransactionContext, args: PlaceArgs, reason: str) -> None:
    await BotDb(ctx.db).end_place_delivery(
        args.announcement_id, args.fire_ts, args.channel_id, PlaceState.SKIPPED, error=reason
    )


async def note_place_error(ctx: TransactionContext, args: PlaceArgs, error: str) -> None:
    await BotDb(ctx.db).note_place_error(args.announcement_id, args.fire_ts, args.channel_id, error)


async def enqueue_place_update(ctx: TransactionContext, args: PlaceArgs, revision: int) -> int:
    """Bring the post in the place up to date with ``revision`` (one job per revision)."""
    return await ctx.scheduler.enqueue(
        PLACE_UPDATE_FN,
        args,
        idempotency_key=f"place-update:{place_job_key(args)}:{revision}",
        name=f"update the post of announcement {args.announcement_id} in {args.channel_id}",
    )


async def update_places_later(
    ctx: TransactionContext, ann_id: int, fire_ts: float, revision: int
) -> int:
    """An edit updates the occurrence's posted message: each of its posts in other places
    that can still be updated gets its update job too. Returns how many."""
    rows = BotDb(ctx.db)
    queued = 0
    for posted in await rows.place_deliveries_of(ann_id, [fire_ts]):
        if posted.state != PlaceState.SENT or posted.update_error is not None:
            continue
        await enqueue_place_update(ctx, PlaceArgs(ann_id, fire_ts, posted.channel_id), revision)
        queued += 1
    return queued


class Places(AnnouncementService):
    """The other places of announcements, and how their posts there went."""

    async def places(self, announcement_id: int) -> tuple[Place, ...]:
        """The other places the announcement posts in (``also_in``), in order."""
        async with self.sched.reader() as db:
            return await BotDb(db).places(announcement_id)

    async def place_deliveries(
        self, announcement_id: int, fire_times: list[float]
    ) -> list[PlaceDelivery]:
        """How the occurrences at ``fire_times`` went in the other places."""
        async with self.sched.reader() as db:
            return await BotDb(db).place_deliveries_of(announcement_id, fire_times)


# --- templates ------------------------------------------------------------------------------------


async def keep_template_places(rows: BotDb, template: Template) -> None:
    """Write the other places of ``template`` (just inserted, by its name) beside it."""
    template_id = await rows.template_id(template.guild_id, name_key(template.name))
    if template_id is not None:
        await rows.set_template_places(template_id, template.guild_id, template.also_in)


async def forget_template_places(rows: BotDb, guild_id: int, name: str) -> None:
    """Before the template ``name`` is deleted: its other places go with it."""
    template_id = await rows.template_id(guild_id, name_key(name))
    if template_id is not None:
        await rows.set_template_places(template_id, guild_id, ())


async def with_template_places(rows: BotDb, templates: list[Template]) -> list[Template]:
    """``templates`` (of one guild) with their other places read."""
    if not templates:
        return templates
    found = await rows.guild_template_places(templates[0].guild_id)
    return [replace(t, also_in=found.get(name_key(t.name), ())) for t in templates]
