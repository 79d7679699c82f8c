"""Discord scheduled events, made exactly once per occurrence: the ``announcements:events``
action.

The job (:class:`~bot.announcements.jobs.EventsArgs`, enqueued by every change that may
change an announcement's events: :func:`bot.announcements.events.sync_events_later`) takes
the announcement's events for itself (one job at a time per announcement: the jobs carry the
scheduler's per-key concurrency, so the next waits holding nothing), reads what they
should be (:meth:`bot.announcements.events.EventPlans.event_plan`) and makes Discord's
match, one request at a time:

- an occurrence that should have an event and has none: the intent is recorded first (its
  row, state ``creating``, with the name and start the event is created with), committed,
  then the event is created (``POST /guilds/{id}/scheduled-events``) and its id recorded
  (``created``). Creating an event has no nonce, so the request is kept out of discord.py's
  own retries (:mod:`bot.posting.once`): a 5xx after Discord made it, a lost answer or a
  crash between the create and the record comes back to this job, whose re-run finds the
  intent and first looks the event up among the server's events, asked of Discord (one the
  bot created, with the recorded name and start, that no occurrence recorded); only when
  there is none is it created again;
- an occurrence whose event shows something else now (an edit): the same event is edited
  (PATCH); an edit that moved the occurrences moves their events with them;
- an event no occurrence wants any more (skipped, canceled, paused, an edit that turned
  events off): canceled (PATCH ``status`` 4), and recorded ``canceled``; a resume makes
  new ones.

Then the next job is enqueued for when the next occurrence comes within ``EVENT_LEAD_DAYS``.
Discord's refusals (Missing Permissions, 30038 at the limit of 100 events) are recorded on
the occurrence's event (``failed``) and reported to the server's log channel; transient
failures (5xx, timeouts) are retried by the job.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import discord

from scheduler import ActionContext, Registry, Retry, RetryLater, TransactionContext

from .. import i18n
from ..announcements import EVENTS_FN, Announcements, EventsArgs, EventShape
from ..announcements.events import EVENTS_AHEAD
from ..announcements.jobs import enqueue_report, events_concurrency, register_job
from ..db import BotDb, EventRow
from .failures import REQUEST_ERRORS, RequestFailed, classify
from .payload import posting_locale

if TYPE_CHECKING:
    from ..models import Announcement
    from .poster import Poster

__all__ = ["EVENTS_RETRY", "EVENT_LIMIT", "EventSync", "live_event_count"]

log = logging.getLogger("crier.delivery")  # tests and operators filter on this name

EVENTS_RETRY = Retry(max_failures=50, initial_backoff=2.0, base=2.0)
EVENT_LIMIT = 100
"""Discord keeps at most this many scheduled or active events per server (30038 past it)."""
MAX_EVENTS = 30038
SCHEDULED, ACTIVE, CANCELED = 1, 2, 4
STAGE, VOICE, EXTERNAL = 1, 2, 3
GUILD_ONLY = 2
LIVE = (SCHEDULED, ACTIVE)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def _ts(value: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        return None


async def live_event_count(client: discord.Client, guild_id: int) -> int:
    """How many scheduled or active events the server has, asked of Discord."""
    found = await client.http.get_scheduled_events(guild_id, False)
    return sum(1 for e in found if e.get("status") in LIVE)


class EventSync:
    """The ``announcements:events`` action."""

    def __init__(
        self,
        poster: Poster,
        announcements: Announcements,
        *,
        lead: float,
        ahead: int = EVENTS_AHEAD,
    ) -> None:
        self.poster = poster
        self.announcements = announcements
        self.lead = lead
        """How long before an occurrence its event is made (``EVENT_LEAD_DAYS``)."""
        self.ahead = ahead
        """The most future events of one announcement (``EVENTS_AHEAD``)."""

    def register(self, registry: Registry) -> None:
        register_job(registry, EVENTS_FN, EventsArgs, self.sync, retry=EVENTS_RETRY)

    async def sync(self, ctx: ActionContext, args: EventsArgs) -> dict[str, object]:
        # One run at a time per announcement: its jobs carry events_concurrency.
        try:
            async with self.poster.holding(ctx):
                return await self._sync(ctx, args)
        except RequestFailed as failed:
            raise RetryLater(failed.reason) from failed

    async def _sync(self, ctx: ActionContext, args: EventsArgs) -> dict[str, object]:
        client, announcements = self.poster.client, self.announcements

        async def language(guild_id: int) -> str | None:
            return await posting_locale(client, announcements, guild_id)

        plan = await announcements.event_plan(
            args.announcement_id, self.lead, language, ahead=self.ahead
        )
        ann = plan.announcement
        if ann is None:
            return {"nothing": "no announcement"}
        now = ctx.now.timestamp()
        live = {r.fire_ts: r for r in plan.rows if r.state in ("creating", "created")}
        gone = [r for ts, r in sorted(live.items()) if ts > now and ts not in plan.wanted]
        missing = [ts for ts in sorted(plan.wanted) if ts not in live]
        done: dict[str, int] = {"created": 0, "edited": 0, "canceled": 0, "found": 0}
        if args.edited:  # an edit moved the occurrences: their events move with them
            movable = [r for r in gone if r.state == "created" and r.event_id is not None]
            pairs = list(zip(movable, missing, strict=False))
            for old, ts in pairs:
                live[ts] = await self._move(ctx, ann, old, plan.wanted[ts])
                done["edited"] += 1
            moved = {r.fire_ts for r, _ in pairs}
            gone = [r for r in gone if r.fire_ts not in moved]
        for unwanted in gone:
            await self._cancel(ctx, ann, unwanted)
            done["canceled"] += 1
        for ts, shape in sorted(plan.wanted.items()):
            row = live.get(ts)
            if row is None:
                intent = await self._intent(ctx, ann, shape)
                if await self._create(ctx, ann, intent, shape):
                    done["created"] += 1
            elif row.state == "creating":
                found = await self._look_up(ann, row)
                if found is not None:
                    await self._record(ctx, ann.id, row.fire_ts, "created", event_id=found)
                    done["found"] += 1
                    log.info("announcement %d: found event %d made earlier", ann.id, found)
                elif await self._create(ctx, ann, row, shape):
                    done["created"] += 1
            elif row.shows != shape.shows and row.event_id is not None:
                await self._edit(ctx, ann, row, shape)
                done["edited"] += 1
        if plan.later is not None:
            await ctx.run_mutation(lambda tx, _: _next_job(tx, ann.id, plan.later or 0.0))
        return dict(done)

    # --- the requests ------------------------------------------------------------------------

    async def _intent(self, ctx: ActionContext, ann: Announcement, shape: EventShape) -> EventRow:
        """Record the intent to create the occurrence's event (committed before the create)."""

        async def write(tx: TransactionContext, _: object) -> EventRow:
            rows = BotDb(tx.db)
            now = tx.now.timestamp()
            await rows.write_event_intent(
                ann.id, shape.start_ts, ann.guild_id, shape.name, shape.start_ts, shape.shows, now
            )
            written = await rows.event_at(ann.id, shape.start_ts)
            if written is None:
                raise RuntimeError("the intent written above, in this transaction, is gone")
            return written

        return await ctx.run_mutation(write)

    async def _look_up(self, ann: Announcement, row: EventRow) -> int | None:
        """The event an interrupted create may have made for ``row``: one of the server's
        scheduled or active events (asked of Discord, never a cache) that the bot created,
        with the recorded name and start, that no occurrence recorded; or None."""
        client = self.poster.client
        me = client.user
        if me is None:
            raise RuntimeError("the client is not logged in")
        found = await client.http.get_scheduled_events(ann.guild_id, False)
        async with self.announcements.sched.reader() as db:
            recorded = await BotDb(db).recorded_event_ids(ann.guild_id)
        for event in sorted(found, key=lambda e: int(e["id"])):
            start = _ts(event.get("scheduled_start_time"))
            if (
                str(event.get("creator_id")) == str(me.id)
                and event.get("name") == row.name
                and event.get("status") in LIVE
                and start is not None
                and abs(start - row.start_ts) < 1.0
                and int(event["id"]) not in recorded
            ):
                return int(event["id"])
        return None

    async def _create(
        self, ctx: ActionContext, ann: Announcement, row: EventRow, shape: EventShape
    ) -> bool:
        """Create the occurrence's event (its intent recorded) and record its id; whether it
        was made (a refusal is recorded and reported)."""
        client = self.poster.client
        try:
            payload = await self._payload(shape)
            made = await self.poster.request(
                ctx,
                lambda: client.http.create_guild_scheduled_event(ann.guild_id, **payload),
                before="event",
            )
        except REQUEST_ERRORS as exc:
            failed = classify(exc)
            if not failed.permanent:
                raise failed from exc
            await self._refused(ctx, ann, row, failed)
            return False
        event_id = int(made["id"])
        await self._record(ctx, ann.id, row.fire_ts, "created", event_id=event_id)
        log.info("announcement %d: event %d made for %s", ann.id, event_id, _iso(row.fire_ts))
        return True

    async def _edit(
        self, ctx: ActionContext, ann: Announcement, row: EventRow, shape: EventShape
    ) -> None:
        """The same event edited to show what the occurrence shows now."""
        try:
            await self._patch(ctx, ann, row, await self._payload(shape, edit=True))
        except RequestFailed as failed:
            if not failed.permanent:
                raise
            log.warning("announcement %d: event %s not edited: %s", ann.id, row.event_id, failed)
            await self._record(ctx, ann.id, row.fire_ts, "failed", error=failed.reason)
            return
        await self._record(ctx, ann.id, row.fire_ts, "created", shows=shape.shows)

    async def _move(
        self, ctx: ActionContext, ann: Announcement, row: EventRow, shape: EventShape
    ) -> EventRow:
        """The event of an occurrence an edit moved: the same event, edited to show the
        occurrence it moved to."""
        await self._patch(ctx, ann, row, await self._payload(shape, edit=True))
        return await self._record(
            ctx, ann.id, row.fire_ts, "created", shows=shape.shows,
            new_fire_ts=shape.start_ts, start_ts=shape.start_ts,
        )  # fmt: skip

    async def _cancel(self, ctx: ActionContext, ann: Announcement, row: EventRow) -> None:
        """Cancel an event no occurrence wants any more (one never made: its intent goes)."""
        if row.state == "creating":
            found = await self._look_up(ann, row)
            if found is None:
                await self._record(ctx, ann.id, row.fire_ts, "canceled")
                return
            row = await self._record(ctx, ann.id, row.fire_ts, "created", event_id=found)
        try:
            await self._patch(ctx, ann, row, {"status": CANCELED})
        except RequestFailed as failed:
            if not failed.permanent:
                raise
            log.info("announcement %d: event %s not canceled: %s", ann.id, row.event_id, failed)
        await self._record(ctx, ann.id, row.fire_ts, "canceled")

    async def _patch(
        self, ctx: ActionContext, ann: Announcement, row: EventRow, payload: dict[str, Any]
    ) -> None:
        client, event_id = self.poster.client, row.event_id
        if event_id is None:
            raise RuntimeError("only a created event is edited")
        try:
            await self.poster.request(
                ctx,
                lambda: client.http.edit_scheduled_event(ann.guild_id, event_id, **payload),
                before="event",
            )
        except REQUEST_ERRORS as exc:
            raise classify(exc) from exc

    async def _payload(self, shape: EventShape, *, edit: bool = False) -> dict[str, Any]:
        spec = shape.spec
        payload: dict[str, Any] = {
            "name": shape.name,
            "description": shape.description or None,
            "scheduled_start_time": _iso(shape.start_ts),
            "scheduled_end_time": _iso(shape.end_ts),
            "privacy_level": GUILD_ONLY,
        }
        if spec.channel_id is None:
            payload["entity_type"] = EXTERNAL
            payload["entity_metadata"] = {"location": spec.location or ""}
            if edit:
                payload["channel_id"] = None
        else:
            client = self.poster.client
            # From the cache, else (its shard is another instance's) asked of Discord.
            channel = client.get_channel(spec.channel_id) or await client.fetch_channel(
                spec.channel_id
            )
            stage = isinstance(channel, discord.StageChannel)
            payload["entity_type"] = STAGE if stage else VOICE
            payload["channel_id"] = str(spec.channel_id)
            if edit:
                payload["entity_metadata"] = None
        return payload

    async def _record(
        self, ctx: ActionContext, ann_id: int, fire_ts: float, state: str, **changes: Any
    ) -> EventRow:
        async def write(tx: TransactionContext, _: object) -> EventRow:
            rows = BotDb(tx.db)
            await rows.set_event_state(ann_id, fire_ts, state, tx.now.timestamp(), **changes)
            written = await rows.event_at(ann_id, changes.get("new_fire_ts") or fire_ts)
            if written is None:
                raise RuntimeError("the event row written above, in this transaction, is gone")
            return written

        return await ctx.run_mutation(write)

    async def _refused(
        self, ctx: ActionContext, ann: Announcement, row: EventRow, failed: RequestFailed
    ) -> None:
        reason = failed.reason
        if failed.code == MAX_EVENTS:
            reason = f"the server has {EVENT_LIMIT} scheduled events, the most Discord allows"
        # Said to everyone in the server's language when the report is posted (its reason
        # too: see bot.posting.reasons); recorded in English.
        message = i18n.marked(
            "⚠️ The Discord event of announcement #{id} for {when} could not be created: {reason}."
        )
        values = {"id": str(ann.local_id), "when": f"<t:{round(row.fire_ts)}:F>", "reason": reason}
        text = message.format(**values)
        gather = self.announcements.report_gather

        async def fail(tx: TransactionContext, _: object) -> None:
            now = tx.now.timestamp()
            await BotDb(tx.db).set_event_state(ann.id, row.fire_ts, "failed", now, error=reason)
            await enqueue_report(tx, ann.guild_id, text, message, values, gather=gather)

        await ctx.run_mutation(fail)
        log.error("announcement %d: event not created: %s", ann.id, reason)


async def _next_job(tx: TransactionContext, ann_id: int, at: float) -> None:
    """The job that makes the next occurrence's event, once it is within the lead time."""
    await tx.scheduler.enqueue(
        EVENTS_FN,
        EventsArgs(ann_id),
        run_at=max(at, tx.now.timestamp()),
        idempotency_key=f"events:{ann_id}:{at!r}",
        name=f"events of announcement {ann_id}",
        concurrency=events_concurrency(ann_id),
    )
