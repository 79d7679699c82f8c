"""Exceptions to a repeating announcement's rule: ``/skip`` (the next occurrence, a date,
a date and time, or a range) and ``/unskip``. A skip is part of the announcement's rule
(:attr:`bot.parsing.RepeatRule.skips`): its schedule is made again with the skipped spans
excluded from its trigger, so the scheduler never fires them, and ``/info``, ``/list``,
``{next}``, its Discord events and the calendar feed, which all read that trigger, agree."""

from __future__ import annotations

import contextlib
import dataclasses
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from scheduler import ScheduleNotFound

from ..db import BotDb
from ..models import Announcement, AnnouncementState, DeliveryState, HistoryAction
from ..parsing.skips import MAX_SKIPS, Skip, merged, still_to_come, wall_spans, without
from .course import (
    COUNTED,
    NotPossible,
    Skipped,
    Why,
    at,
    coming_fires,
    end_if_past_until,
    last_post,
    live_announcement,
)
from .events import sync_events_later
from .jobs import SEND_FN, SendArgs, schedule_name
from .lifecycle import Lifecycle
from .reminders import remind_later, take_back_reminders

if TYPE_CHECKING:
    from scheduler import Cron, Interval, TransactionContext

    from ..parsing import RepeatRule

_ONE_US = timedelta(microseconds=1)


class Skipping(Lifecycle):
    """Skip occurrences of repeating announcements, and take skips back."""

    async def skip(
        self, guild_id: int, local_id: int, actor_id: int, span: Skip | None = None
    ) -> Skipped:
        """Skip the occurrences of a live recurring announcement that ``span`` holds (local
        wall time; None: its next occurrence): kept in its rule, its schedule made again
        without them. Refused (:class:`NotPossible`, nothing written) when the span holds
        none of its coming occurrences, when they are skipped already, or when one is
        being posted right now. Skipping what is left before its ``until`` ends it."""
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            a = await live_announcement(rows, guild_id, local_id)
            rule = a.rule
            if rule is None or a.schedule_name is None:
                raise NotPossible(Why.ONE_OFF, a)
            if span is None and a.state == AnnouncementState.PAUSED:
                raise NotPossible(Why.PAUSED, a)
            await rows.lock_announcement(a.id)  # a delivery beginning waits, then sees it
            zone = ZoneInfo(a.timezone)
            now = ctx.now
            if span is None:
                coming = await self._coming(a)
                if not coming:
                    raise NotPossible(Why.NOTHING_LEFT, a, at=at(a.until_ts or 0))
                span = Skip.minute(coming[0].astimezone(zone).replace(tzinfo=None))
            held = await self._held(ctx, a, span, zone)
            if not held:
                why = Why.ALREADY_SKIPPED if _covered(rule.skips, span) else Why.NO_OCCURRENCE
                raise NotPossible(why, a, at=_next_after_span(rule, a, span, zone))
            for fire in held[:2]:
                found = await rows.delivery(a.id, fire.timestamp())
                if found is not None and found.state == DeliveryState.SENDING:
                    raise NotPossible(Why.BEING_POSTED, a, at=fire)
            skips = merged((*still_to_come(rule.skips, zone, now), span))
            if len(skips) > MAX_SKIPS:
                raise NotPossible(Why.TOO_MANY_SKIPS, a)
            changed = await self._new_rule(ctx, a, dataclasses.replace(rule, skips=skips))
            detail = f"{span.label()} ({a.timezone})"
            await rows.add_history(a.id, HistoryAction.SKIPPED, actor_id, now.timestamp(), detail)
            await sync_events_later(ctx, a.id)  # a skipped occurrence's event is canceled
            await take_back_reminders(ctx, a.id)  # and its reminders not sent yet
            await remind_later(ctx, a.id)  # the next ones planned again
            await end_if_past_until(ctx, changed)  # nothing left before its until: it ends
        then = next(iter(await self._coming(changed)), None)
        return Skipped(a, held[0], then, len(held), span)

    async def unskip(self, guild_id: int, local_id: int, actor_id: int, span: Skip) -> Skipped:
        """Take back the skips of a live recurring announcement in ``span`` (a skip partly
        in it keeps the rest): its occurrences there post again. Refused when nothing is
        skipped there."""
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            a = await live_announcement(rows, guild_id, local_id)
            rule = a.rule
            if rule is None or a.schedule_name is None:
                raise NotPossible(Why.ONE_OFF, a)
            zone = ZoneInfo(a.timezone)
            now = ctx.now
            skips = without(still_to_come(rule.skips, zone, now), span)
            spans = [s for s in wall_spans(span, zone) if s[1] > now]
            legacy = 0
            for lo, hi in spans:  # skipped ahead by an earlier version of /skip
                legacy += await rows.forget_skipped(a.id, max(lo, now).timestamp(), hi.timestamp())
            if skips == merged(still_to_come(rule.skips, zone, now)) and not legacy:
                raise NotPossible(Why.NOT_SKIPPED, a)
            new_rule = dataclasses.replace(rule, skips=skips)
            back = _held_by(new_rule.trigger(zone, at(a.first_ts)), spans, now)
            if a.until_ts is not None:
                back = [f for f in back if f.timestamp() <= a.until_ts]
            changed = await self._new_rule(ctx, a, new_rule)
            detail = f"unskip: {span.label()} ({a.timezone})"
            await rows.add_history(a.id, HistoryAction.EDITED, actor_id, now.timestamp(), detail)
            await sync_events_later(ctx, a.id)
            await remind_later(ctx, a.id)  # the occurrences back are reminded of too
        first = back[0] if back else now
        then = next(iter(await self._coming(changed)), None)
        return Skipped(changed, first, then, len(back), span)

    async def _held(
        self, ctx: TransactionContext, a: Announcement, span: Skip, zone: ZoneInfo
    ) -> list[datetime]:
        """Its coming occurrences ``span`` holds, by the trigger its schedule fires from
        (after now, up to its ``until`` and its last post; at most ``COUNTED + 1``)."""
        if a.schedule_name is None:
            return []
        try:
            info = await ctx.scheduler.schedules.get(a.schedule_name)
        except ScheduleNotFound:
            return []
        now = ctx.now
        found = _held_by(info.trigger, wall_spans(span, zone), now)
        if a.until_ts is not None:
            found = [f for f in found if f.timestamp() <= a.until_ts]
        if a.times is not None:
            last = await last_post(self.sched, a)
            found = [f for f in found if last is not None and f <= last]
        return found

    async def adopt_earlier_skips(self) -> int:
        """Move the skips an earlier version kept as ``skipped`` delivery rows (occurrences
        still to come) into their announcements' rules, their schedules made again, so that
        ``/list``, ``{next}`` and the calendar see them too; run at start. How many
        announcements changed. One that can't take them (no longer live, or at its limit
        of skips) keeps its rows, which its deliveries still honour."""
        now = self.sched.clock.now()
        async with self.sched.reader() as db:
            found = await BotDb(db).skipped_ahead(now.timestamp())
        by_announcement: dict[int, list[float]] = {}
        for ann_id, fire_ts in found:
            by_announcement.setdefault(ann_id, []).append(fire_ts)
        changed = 0
        for ann_id, fires in sorted(by_announcement.items()):
            async with self.sched.transaction() as ctx:
                rows = BotDb(ctx.db)
                if not await rows.lock_announcement(ann_id):
                    continue
                a = await rows.announcement(ann_id)
                rule = None if a is None else a.rule
                if a is None or rule is None or not a.live or a.schedule_name is None:
                    continue
                zone = ZoneInfo(a.timezone)
                walls = [at(ts).astimezone(zone).replace(tzinfo=None) for ts in fires]
                skips = merged((*rule.skips, *(Skip.minute(w) for w in walls)))
                if len(skips) > MAX_SKIPS:
                    continue
                for ts in fires:
                    await rows.forget_skipped(a.id, ts, ts)
                await self._new_rule(ctx, a, dataclasses.replace(rule, skips=skips))
                changed += 1
        return changed

    async def _coming(self, a: Announcement, count: int = 1) -> list[datetime]:
        """Its next ``count`` occurrences (as ``/info`` finds them)."""
        out: list[datetime] = []
        for fire in await coming_fires(self.sched, a, self.sched.clock.now(), ()):
            out.append(fire)
            if len(out) >= count:
                break
        return out

    async def _new_rule(
        self, ctx: TransactionContext, a: Announcement, rule: RepeatRule
    ) -> Announcement:
        """Keep ``rule`` (its skips) and make the schedule again from the occurrence that
        comes next (one already due and not yet run included), paused if it was; returns the
        announcement as changed."""
        rows = BotDb(ctx.db)
        now = ctx.now.timestamp()
        await rows.set_skips(a.id, rule.skips, now)
        old = a.schedule_name
        start = None if old is None else await rows.next_occurrence(old, SEND_FN)
        if old is not None:
            with contextlib.suppress(ScheduleNotFound):
                await ctx.scheduler.schedules.delete(old)
        name = _fresh_name(a, now)
        first = at(a.first_ts if start is None else start)
        spec, tz = rule.schedule_spec(a.timezone, first)
        await ctx.scheduler.schedules.create(
            name,
            spec,
            SEND_FN,
            SendArgs(a.id),
            tz=tz,
            start=first,
            catch_up="fire_once",
            catchup_window=timedelta(seconds=self.catch_up_window),
            overlap="skip",
            pace=self.pace(a.channel_id),
        )
        await rows.set_schedule(a.id, name)
        if a.state == AnnouncementState.PAUSED:
            await ctx.scheduler.schedules.pause(name)
        changed = await rows.announcement(a.id)
        if changed is None:
            raise RuntimeError("the announcement written above, in this transaction, is gone")
        return changed


def _fresh_name(a: Announcement, now: float) -> str:
    """A name for its new schedule that none of its schedules had (two changes within a
    millisecond get two names: the new one's occurrences must not be taken for the old's)."""
    at_ms = now
    name = schedule_name(a.id, at_ms)
    while name == a.schedule_name:
        at_ms += 0.001
        name = schedule_name(a.id, at_ms)
    return name


def _covered(skips: tuple[Skip, ...], span: Skip) -> bool:
    return any(s.start <= span.start and span.end <= s.end for s in merged(skips))


def _held_by(
    trigger: Cron | Interval, spans: list[tuple[datetime, datetime]], now: datetime
) -> list[datetime]:
    """The fire times of ``trigger`` the instant ``spans`` hold, after ``now`` (at most
    ``COUNTED + 1``)."""
    out: list[datetime] = []
    for lo, hi in spans:
        t = trigger.next_after(max(lo, now) - _ONE_US)
        while t <= hi and len(out) <= COUNTED:
            if t > now:
                out.append(t)
            t = trigger.next_after(t)
    return out


def _next_after_span(
    rule: RepeatRule, a: Announcement, span: Skip, zone: ZoneInfo
) -> datetime | None:
    """Its first occurrence after ``span`` (what a refusal names), by its rule."""
    spans = wall_spans(span, zone)
    if not spans:
        return None
    try:
        return rule.trigger(zone, at(a.first_ts)).next_after(spans[-1][1])
    except OverflowError:
        return None
