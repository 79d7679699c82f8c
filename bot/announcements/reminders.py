"""Reminders by direct message before each occurrence: who asked, how long before, and what
the reminder job (its action is :class:`bot.posting.reminders.Reminding`) has to do now.

A manager turns reminders on per announcement (``/edit reminder: 15m``: its lead, kept in
``bot_reminder_settings``); members ask for them with the **Remind me** button of its posts
or ``/remindme`` (``bot_reminder_subscribers``, with their own lead if they gave one); the
members Interested in an occurrence's Discord event are reminded at the announcement's lead
too.

One ``announcements:remind`` job at a time works through an announcement's reminders, not
one per member: every change that may move them (reminders turned on or changed, someone
asking, a resume, an edit) plans the next one through a debounced job
(:func:`remind_later`: a burst of presses makes one), and every run plans the next run
itself, when the next reminder comes due (:meth:`Reminders.reminder_plan`). Each member is
recorded for an occurrence before the direct message goes (``bot_reminders``, the once-key
of the (occurrence, member)), so nobody is reminded twice. A paused, canceled or skipped
occurrence reminds nobody: the job reads it again before every group it sends.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..db import BotDb, Subscriber
from ..models import Announcement, AnnouncementState
from .course import coming_fires
from .jobs import REMIND_FN, RemindArgs
from .reading import Reading

if TYPE_CHECKING:
    from scheduler import TransactionContext

MIN_REMINDER = 60.0
"""The shortest lead of a reminder (a minute)."""
MAX_REMINDER = 7 * 86400.0
"""The longest lead of a reminder (a week)."""
PLAN_QUIET = 1.0
"""Seconds after the last of a burst of changes (presses of Remind me, edits) that the
announcement's next reminders are planned."""
FOLD_AFTER = 3600.0
"""An occurrence's reminders are counted and their rows deleted this long after it (no run
reminds anyone of an occurrence that came: its rows were only kept as its once-keys)."""
COUNTS_KEPT = 5
"""The occurrences whose reminder counts are kept per announcement."""
REMIND_BUTTON = "crier:remind:{}"
"""The custom id of the **Remind me** button of an announcement's posts (its id inside)."""
STOP_BUTTON = "crier:remind-stop:{}"
"""The custom id of the **Stop reminding me** button (the announcement's id inside)."""
OCCURRENCES_PLANNED = 25
"""The most occurrences of one announcement a run reminds of at once (leads longer than
the time between occurrences make several due together)."""


async def remind_later(ctx: TransactionContext, announcement_id: int) -> None:
    """In ``ctx``'s transaction (the change's): plan the announcement's next reminders, by a
    job run :data:`PLAN_QUIET` after the last of a burst of calls (none when reminders are
    off for it)."""
    if await BotDb(ctx.db).reminder_lead(announcement_id) is None:
        return
    await ctx.scheduler.debounce(
        REMIND_FN,
        RemindArgs(announcement_id),
        key=f"plan:{announcement_id}",
        quiet=PLAN_QUIET,
    )


async def take_back_reminders(ctx: TransactionContext, announcement_id: int) -> None:
    """In ``ctx``'s transaction (a pause, skip, cancel, or an edit of its timing or
    reminders): the reminders a running job recorded but has not sent yet are taken back,
    so none of them goes after this change commits (the job marks each one ``sending``
    right before its DM, and finds it gone); those still due are recorded again by the next
    run."""
    await BotDb(ctx.db).drop_untried_reminders(announcement_id)


@dataclass(frozen=True, slots=True)
class Due:
    """One occurrence some of whose reminders are due now."""

    fire_ts: float
    interested: bool
    """Whether the announcement's lead is reached: the members Interested in the
    occurrence's event are reminded now too."""
    event_id: int | None
    """The occurrence's Discord event (None: none made)."""


@dataclass(frozen=True, slots=True)
class ReminderPlan:
    """What an announcement's reminder job does now, and when it runs next."""

    announcement: Announcement | None
    lead: float | None
    """The announcement's lead (None: its reminders are off)."""
    due: tuple[Due, ...] = ()
    """The occurrences with reminders due now, soonest first."""
    leads: frozenset[float] = frozenset()
    """Every lead its members are reminded at (the announcement's and their own)."""
    next_fire: float | None = None
    """The first occurrence none of whose reminders is due yet (None: none to come)."""

    @property
    def active(self) -> bool:
        a = self.announcement
        return a is not None and self.lead is not None and a.state == AnnouncementState.SCHEDULED


@dataclass(frozen=True, slots=True)
class Subscribed:
    """What asking for reminders did: whether the member already had, their lead, and the
    announcement's next occurrence (None: none to come)."""

    announcement: Announcement
    before: float
    already: bool
    next_fire: datetime | None


class ReminderOff(ValueError):
    """The announcement does not remind anyone (``/edit reminder:`` turns it on)."""

    def __init__(self, announcement: Announcement) -> None:
        super().__init__(f"reminders are off for announcement {announcement.id}")
        self.announcement = announcement


class Reminders(Reading):
    """Reminders: the lead, who asked, and what is due."""

    async def reminder_lead(self, announcement_id: int) -> float | None:
        async with self.sched.reader() as db:
            return await BotDb(db).reminder_lead(announcement_id)

    async def reminder_leads(self, announcement_ids: list[int]) -> dict[int, float]:
        """The reminder lead of each of the announcements whose reminders are on."""
        async with self.sched.reader() as db:
            return await BotDb(db).reminder_leads(announcement_ids)

    async def subscription(self, announcement_id: int, user_id: int) -> Subscriber | None:
        async with self.sched.reader() as db:
            return await BotDb(db).subscriber(announcement_id, user_id)

    async def subscribe(
        self, a: Announcement, user_id: int, before: float | None, locale: str | None
    ) -> Subscribed:
        """Remind ``user_id`` of every later occurrence of ``a`` (``before``: their own lead;
        None keeps the one they chose, else the announcement's). Raises
        :class:`ReminderOff`."""
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            lead = await rows.reminder_lead(a.id)
            if lead is None:
                raise ReminderOff(a)
            found = await rows.subscriber(a.id, user_id)
            chosen = before if before is not None else None if found is None else found.before
            await rows.subscribe(a.id, a.guild_id, user_id, chosen, locale, ctx.now.timestamp())
            await remind_later(ctx, a.id)
        current = await self.by_id(a.id) or a
        return Subscribed(current, chosen or lead, found is not None, await self.next_fire(current))

    async def unsubscribe(self, a: Announcement, user_id: int) -> bool:
        """Remind ``user_id`` of ``a`` no more; whether they were to be."""
        async with self.sched.transaction() as ctx:
            return await BotDb(ctx.db).unsubscribe(a.id, user_id)

    async def reminder_plan(self, announcement_id: int) -> ReminderPlan:
        """What the announcement's reminder job does now: the occurrences still to come
        with reminders due (a member's due once the occurrence is within their lead), and
        the first occurrence with none due yet. Nothing for an announcement not scheduled
        (paused, canceled, ended) or whose reminders are off."""
        now = self.sched.clock.now()
        async with self.sched.reader() as db:
            rows = BotDb(db)
            a = await rows.announcement(announcement_id)
            lead = await rows.reminder_lead(announcement_id)
            chosen = await rows.subscriber_leads(announcement_id)
            skipped = await rows.skipped_fire_times(announcement_id, now.timestamp())
        plan = ReminderPlan(a, lead)
        if a is None or lead is None or not plan.active:
            return plan
        leads = frozenset({lead, *(c if c is not None else lead for c in chosen)})
        longest = max(leads)
        due: list[Due] = []
        next_fire = None
        for fire in await coming_fires(self.sched, a, now, set(skipped)):
            ts = fire.timestamp()
            if ts <= now.timestamp():
                continue
            if ts - longest > now.timestamp() or len(due) >= OCCURRENCES_PLANNED:
                next_fire = ts
                break
            async with self.sched.reader() as db:
                event = await BotDb(db).event_at(a.id, ts)
            event_id = event.event_id if event is not None and event.state == "created" else None
            due.append(Due(ts, ts - lead <= now.timestamp(), event_id))
        return ReminderPlan(a, lead, tuple(due), leads, next_fire)

    async def still_due(self, announcement_id: int, fire_ts: float) -> bool:
        """Whether the occurrence at ``fire_ts`` is still to come: its announcement
        scheduled with reminders on, the occurrence not skipped, not moved by an edit, and
        not come yet. Read before every group of reminders is sent."""
        now = self.sched.clock.now()
        if fire_ts <= now.timestamp():
            return False
        async with self.sched.reader() as db:
            rows = BotDb(db)
            a = await rows.announcement(announcement_id)
            lead = await rows.reminder_lead(announcement_id)
            skipped = await rows.skipped_fire_times(announcement_id, now.timestamp())
        if a is None or lead is None or a.state != AnnouncementState.SCHEDULED:
            return False
        for fire in await coming_fires(self.sched, a, now, set(skipped)):
            if fire.timestamp() >= fire_ts:
                return fire.timestamp() == fire_ts
        return False

    async def next_reminder_at(self, plan: ReminderPlan) -> float | None:
        """When the announcement's next reminder comes due after this run: the soonest, over
        the occurrences of ``plan`` still to come, of the leads of the members who asked
        and are not recorded yet (now, for one whose lead was reached while the run went on,
        or who asked meanwhile) and, unless this run reminded them, of the members
        Interested in its event; and the first reminder of the next occurrence (None:
        nothing to come)."""
        a, lead = plan.announcement, plan.lead
        if a is None or lead is None:
            return None
        now = self.sched.clock.now().timestamp()
        times: list[float] = []
        async with self.sched.reader() as db:
            rows = BotDb(db)
            for due in plan.due:
                if due.fire_ts <= now:
                    continue
                chosen = await rows.pending_leads(a.id, due.fire_ts)
                pending = {c if c is not None else lead for c in chosen}
                if not due.interested:
                    pending.add(lead)
                times += [max(due.fire_ts - p, now) for p in pending]
        if plan.next_fire is not None:
            times.append(plan.next_fire - max(plan.leads))
        return min(times) if times else None


def at(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)
