"""Reminders by direct message: the ``announcements:remind`` action.

One job works through an announcement's reminders at a time (what is due is
:meth:`bot.announcements.Announcements.reminder_plan`'s to say), in groups of
:data:`GROUP` members:

- before each group the occurrence is read again: paused, canceled, skipped or moved by an
  edit, it reminds nobody more; once it came, the members left are counted late;
- each member is checked: still in the server (asked of Discord; the members Interested in
  the occurrence's event come with their member data) and able to see the channel (its
  permissions computed from their roles): otherwise skipped and counted, never retried;
- the group is recorded in one write before any direct message goes: a row per (occurrence,
  member), ``queued`` with the nonce of that (occurrence, member), or ``skipped`` with why.
  A member recorded already (by an earlier run, another instance, a duplicate job) is left
  out: nobody is reminded twice. Right before each DM, its row becomes ``sending`` (with
  the time of that attempt), in the write that records how the previous one went;
- the direct messages go paced, each group's turns reserved at once in the scheduler's
  shared pace key ``dm`` (:data:`DM_PACE_KEY`: every instance sharing the database keeps to
  ``REMINDER_SPACING_SECONDS`` between two), each through the posting guard (the lease made
  sure of right before it) with its nonce (``enforce_nonce``), then recorded ``sent``; closed
  DMs (50007) and users gone are recorded skipped;
- a run interrupted (a crash, a lost lease, a 5xx) leaves at most one ``sending`` row per
  group, and ``queued`` ones: the job's own re-run sends the ``sending`` one again with the
  same nonce, which Discord answers with the first message instead of a second one, while
  Discord still remembers the nonce (later, it is recorded as may not have been delivered
  instead: never two), and the ``queued`` ones as it would have.

Then the job plans the next run, for when the next reminder comes due.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import discord

from scheduler import ActionContext, JobState, NonRetryable, Pace, Registry, Retry, RetryLater

from .. import i18n
from ..announcements import REMIND_FN, Announcement, Announcements, RemindArgs
from ..announcements.jobs import register_job
from ..announcements.reminders import COUNTS_KEPT, FOLD_AFTER, Due, ReminderPlan
from ..db import BotDb, ReminderRow
from ..limits import MAX_MESSAGE
from ..models import AnnouncementState, DeliveryState, reminder_nonce
from ..parsing import discord_timestamp
from ..parsing.skips import holds
from .failures import REQUEST_ERRORS, RequestFailed, classify
from .payload import posting_locale

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from scheduler import Clock, Scheduler, TransactionContext

    from ..metrics import BotStats
    from .poster import Poster

__all__ = ["DM_PACE_KEY", "GROUP", "REMIND_RETRY", "Reminding", "reminder_text"]

log = logging.getLogger("crier.reminders")

GROUP = 25
"""Members checked, recorded and sent to together (one write before, one after)."""
DM_PACE_KEY = "dm"
"""The scheduler's pace key every reminder's direct message takes a turn of."""
REMIND_RETRY = Retry(max_failures=400, initial_backoff=2.0, base=2.0)
"""As a delivery's: a crash loop must not use the job's budget up (see ``SEND_RETRY``)."""
REMIND_ATTEMPTS = 5
"""Runs of one job a transient failure may end before its members left are given up."""
CANNOT_DM, UNKNOWN_MEMBER, UNKNOWN_USER = 50007, 10007, 10013
LOOKUPS = 5
"""Members' look-ups (``GET /guilds/{g}/members/{u}``) of one group in flight at once
(discord.py waits out the server's bucket if Discord asks)."""
INTERESTED_PAGE = 100
"""Discord's most users per page of an event's Interested list."""
QUOTE_LIMIT = 1200
"""Characters of the occurrence's text a reminder quotes."""


Ended = tuple[int, str, str | None, int | None]
"""How one member's reminder went: ``(user_id, state, reason, message_id)``."""


@dataclass(frozen=True, slots=True)
class Recipient:
    """A member to remind of one occurrence: the language to say it in (None: the
    server's), their roles when Discord gave them already (an Interested member's), and why
    they are reminded."""

    user_id: int
    locale: str | None
    roles: tuple[int, ...] | None = None
    asked: bool = True
    """They asked (the button, /remindme); False: Interested in the occurrence's event."""
    absent: bool = False
    """Discord said they are no longer a member of the server."""


@dataclass
class Tally:
    """What one run did."""

    sent: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    resent: int = 0

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + n

    def as_dict(self) -> dict[str, object]:
        return {"sent": self.sent, "skipped": dict(self.skipped), "resent": self.resent}


class Audience:
    """Who may be reminded of an announcement's occurrences: the members of its server who
    can see its channel (for a thread, its parent). Built once per run from the gateway's
    cache, else asked of Discord."""

    def __init__(self, guild: discord.Guild, channel: Any) -> None:
        self.guild = guild
        self.channel = channel
        """The channel whose View Channel decides (None: it is gone)."""

    @classmethod
    async def of(cls, client: discord.Client, a: Announcement) -> Audience:
        guild = client.get_guild(a.guild_id) or await client.fetch_guild(a.guild_id)
        channel: Any = guild.get_channel_or_thread(a.channel_id)
        try:
            if channel is None:
                channel = await guild.fetch_channel(a.channel_id)
            if isinstance(channel, discord.Thread):
                channel = channel.parent or await guild.fetch_channel(channel.parent_id)
        except (discord.NotFound, discord.Forbidden):
            channel = None
        return cls(guild, channel)

    async def roles_of(self, client: discord.Client, user_id: int) -> tuple[int, ...] | None:
        """The member's roles, asked of Discord (None: not a member of the server)."""
        try:
            data = await client.http.get_member(self.guild.id, user_id)
        except discord.NotFound:
            return None
        return tuple(int(r) for r in data.get("roles", ()))

    def can_see(self, user_id: int, roles: Collection[int]) -> bool:
        """Whether a member with ``roles`` has View Channel in the channel: the server's
        roles, then the channel's overwrites (``@everyone``'s, the roles', the member's)."""
        guild, channel = self.guild, self.channel
        if channel is None:
            return False
        if user_id == guild.owner_id:
            return True
        value = guild.default_role.permissions.value
        for role_id in roles:
            role = guild.get_role(role_id)
            if role is not None:
                value |= role.permissions.value
        if discord.Permissions(value).administrator:
            return True
        allow, deny = channel.overwrites_for(guild.default_role).pair()
        value = (value & ~deny.value) | allow.value
        role_allow = role_deny = 0
        for role_id in roles:
            role = guild.get_role(role_id)
            if role is not None:
                allow, deny = channel.overwrites_for(role).pair()
                role_allow, role_deny = role_allow | allow.value, role_deny | deny.value
        value = (value & ~role_deny) | role_allow
        allow, deny = channel.overwrites_for(discord.Object(user_id)).pair()
        value = (value & ~deny.value) | allow.value
        return discord.Permissions(value).view_channel


class Reminding:
    """The ``announcements:remind`` action."""

    def __init__(
        self,
        poster: Poster,
        announcements: Announcements,
        *,
        spacing: float,
        nonce_window: float,
        stats: BotStats,
    ) -> None:
        self.poster = poster
        self.announcements = announcements
        self.spacing = spacing
        """Seconds between two reminders' direct messages, across every instance."""
        self.nonce_window = nonce_window
        self.stats = stats

    @property
    def sched(self) -> Scheduler:
        return self.announcements.sched

    @property
    def clock(self) -> Clock:
        return self.announcements.sched.clock

    def register(self, registry: Registry) -> None:
        register_job(registry, REMIND_FN, RemindArgs, self.remind, retry=REMIND_RETRY)

    async def remind(self, ctx: ActionContext, args: RemindArgs) -> dict[str, object]:
        """Send every reminder of the announcement due now, then plan the next run."""
        ann_id = args.announcement_id
        before = ctx.now.timestamp() - FOLD_AFTER
        await ctx.run_mutation(
            lambda tx, _: BotDb(tx.db).fold_reminders(ann_id, before, COUNTS_KEPT)
        )
        plan = await self.announcements.reminder_plan(ann_id)
        tally = Tally()
        planned = args.fire_ts
        if planned is not None and planned <= ctx.now.timestamp() and plan.announcement:
            await self._late(ctx, plan.announcement, planned, tally)  # found after it came
        if plan.active and plan.due:
            try:
                async with self.poster.holding(ctx):
                    await self._run(ctx, plan, tally)
            except RequestFailed as failed:
                if failed.permanent:  # the server or channel refused us: nobody now
                    log.warning("announcement %d: reminders not sent: %s", ann_id, failed)
                else:
                    await self._transient(ctx, plan, failed)
        await self._plan_next(ctx, plan)
        return tally.as_dict()

    async def _run(self, ctx: ActionContext, plan: ReminderPlan, tally: Tally) -> None:
        a = plan.announcement
        if a is None:
            return
        client = self.poster.client
        audience = await Audience.of(client, a)
        for due in plan.due:
            await self._finish_interrupted(ctx, a, due, tally)
            await self._subscribers(ctx, plan, due, audience, tally)
            if due.interested and due.event_id is not None:
                await self._interested(ctx, a, due, audience, tally)

    # --- who ------------------------------------------------------------------------------------

    async def _subscribers(
        self, ctx: ActionContext, plan: ReminderPlan, due: Due, audience: Audience, tally: Tally
    ) -> None:
        """Remind the members who asked and whose lead is reached, a group at a time."""
        a, lead = plan.announcement, plan.lead
        if a is None or lead is None:
            return
        after = 0
        while True:
            now = self.clock.time()
            async with self.sched.reader() as db:
                page = await BotDb(db).due_subscribers(
                    a.id, due.fire_ts, lead=lead, at_least=due.fire_ts - now,
                    after_user=after, limit=GROUP,
                )  # fmt: skip
            if not page:
                return
            after = page[-1].user_id
            group = [Recipient(s.user_id, s.locale) for s in page]
            if not await self._group(ctx, a, due, group, audience, tally):
                return

    async def _interested(
        self, ctx: ActionContext, a: Announcement, due: Due, audience: Audience, tally: Tally
    ) -> None:
        """Remind the members Interested in the occurrence's Discord event (those who asked
        are reminded at their own lead), a group at a time."""
        if due.event_id is None:
            return
        found = await self._interested_members(a.guild_id, due.event_id)
        ids = [r.user_id for r in found]
        async with self.sched.reader() as db:
            rows = BotDb(db)
            asked = await rows.subscribed_among(a.id, ids)
            recorded = await rows.recorded_among(a.id, due.fire_ts, ids)
        left = [r for r in found if r.user_id not in asked and r.user_id not in recorded]
        for start in range(0, len(left), GROUP):
            if not await self._group(ctx, a, due, left[start : start + GROUP], audience, tally):
                return

    async def _interested_members(self, guild_id: int, event_id: int) -> list[Recipient]:
        """Everyone Interested in the event, with their roles (a user who is no longer a
        member comes without: ``absent``, and they are skipped)."""
        http = self.poster.client.http
        out: dict[int, Recipient] = {}
        after: int | None = None
        while True:
            page = await http.get_scheduled_event_users(
                guild_id, event_id, limit=INTERESTED_PAGE, with_member=True, after=after
            )
            for entry in page or ():
                raw: dict[str, Any] = dict(entry)
                user = raw.get("user") or {}
                user_id = int(raw.get("user_id") or user.get("id") or 0)
                if not user_id or user.get("bot"):
                    continue
                member = raw.get("member")
                if member is None:  # no longer a member of the server
                    out[user_id] = Recipient(user_id, None, (), asked=False, absent=True)
                else:
                    roles = tuple(int(r) for r in member.get("roles", ()))
                    out[user_id] = Recipient(user_id, None, roles, asked=False)
                after = max(after or 0, user_id)
            if not page or len(page) < INTERESTED_PAGE:
                return sorted(out.values(), key=lambda r: r.user_id)

    # --- a group ----------------------------------------------------------------------------

    async def _group(
        self,
        ctx: ActionContext,
        a: Announcement,
        due: Due,
        group: Sequence[Recipient],
        audience: Audience,
        tally: Tally,
    ) -> bool:
        """Check, record and remind one group; False when the occurrence reminds nobody
        more (it came, was skipped, moved, paused or canceled)."""
        if not await self.announcements.still_due(a.id, due.fire_ts):
            await self._stop(ctx, a, due.fire_ts, tally)
            return False
        claims: list[tuple[int, str, str, str | None]] = []
        looked_up = await self._roles(audience, [r for r in group if r.roles is None])
        for r in group:
            roles = r.roles if r.roles is not None else looked_up.get(r.user_id)
            nonce = reminder_nonce(a.id, due.fire_ts, r.user_id)
            if roles is None or r.absent:
                claims.append((r.user_id, nonce, "skipped", "left"))
            elif not audience.can_see(r.user_id, roles):
                claims.append((r.user_id, nonce, "skipped", "hidden"))
            else:
                claims.append((r.user_id, nonce, "queued", None))
        job_id, now = ctx.job.id, self.clock.time()
        taken = await ctx.run_mutation(
            lambda tx, _: BotDb(tx.db).claim_reminders(
                a.id, due.fire_ts, a.guild_id, job_id, claims, now
            )
        )
        for user_id, _, state, reason in claims:
            if user_id in taken and state == "skipped":
                tally.skip(reason or "failed")
        sending = [
            r for r, c in zip(group, claims, strict=True) if c[2] == "queued" and r.user_id in taken
        ]
        await self._send_all(ctx, a, due.fire_ts, sending, tally)
        return True

    async def _stop(
        self, ctx: ActionContext, a: Announcement, fire_ts: float, tally: Tally
    ) -> None:
        """The occurrence reminds nobody more (it came, or was skipped, moved, paused,
        canceled): the reminders recorded but never tried are taken back; if it came, the
        members not reminded are counted late."""
        await ctx.run_mutation(lambda tx, _: BotDb(tx.db).drop_untried(a.id, fire_ts))
        if self.clock.time() >= fire_ts:
            await self._late(ctx, a, fire_ts, tally)

    async def _roles(
        self, audience: Audience, recipients: Sequence[Recipient]
    ) -> dict[int, tuple[int, ...] | None]:
        """The roles of each of ``recipients`` (None: not a member), asked of Discord a few
        at a time (:data:`LOOKUPS`)."""
        gate = asyncio.Semaphore(LOOKUPS)
        client = self.poster.client

        async def one(r: Recipient) -> tuple[int, tuple[int, ...] | None]:
            if r.absent:
                return r.user_id, None
            async with gate:
                return r.user_id, await audience.roles_of(client, r.user_id)

        return dict(await asyncio.gather(*(one(r) for r in recipients)))

    async def _late(
        self, ctx: ActionContext, a: Announcement, fire_ts: float, tally: Tally
    ) -> None:
        """The occurrence came before its reminders could all go (the bot was down, or
        Discord slow): the members who asked and were not reminded are counted late, if it
        was an occurrence (its announcement not canceled or paused, it not skipped)."""
        async with self.sched.reader() as db:
            rows = BotDb(db)
            current = await rows.announcement(a.id)
            delivery = await rows.delivery(a.id, fire_ts)
            if await rows.reminder_lead(a.id) is None:
                return
        if current is None or current.state in (
            AnnouncementState.CANCELED,
            AnnouncementState.PAUSED,
        ):
            return
        if delivery is not None and delivery.state == DeliveryState.SKIPPED:
            return
        if current.repeat_skips and holds(
            current.repeat_skips, datetime.fromtimestamp(fire_ts, UTC), ZoneInfo(current.timezone)
        ):
            return  # a date skipped with /skip: not an occurrence

        async def count(tx: TransactionContext, _: object) -> int:
            return await BotDb(tx.db).set_late(a.id, fire_ts, a.guild_id)

        late = await ctx.run_mutation(count)
        if late:
            tally.skip("late", late)

    async def _send_all(
        self, ctx: ActionContext, a: Announcement, fire_ts: float,
        recipients: Sequence[Recipient], tally: Tally, *, again: bool = False,
    ) -> None:  # fmt: skip
        """Send each recipient's reminder in its paced turn. Right before each DM one write
        records how the previous one went and marks this one ``sending`` (its attempt's
        time: what its nonce is good for is counted from it); one already ``sending`` (a
        re-send) keeps its first attempt's time, and one no longer ``queued`` (taken back:
        its occurrence stopped) is not sent. The last one's outcome is recorded at the end,
        or when a failure stops the group."""
        if not recipients:
            return
        client = self.poster.client
        server_locale = await posting_locale(client, self.announcements, a.guild_id)
        async with self.sched.reader() as db:
            known = await BotDb(db).dm_channels([r.user_id for r in recipients])
        texts: dict[tuple[str | None, bool], str] = {}
        first = await self._turns(len(recipients))
        ended: list[Ended] = []
        job_id = ctx.job.id
        try:
            for i, r in enumerate(recipients):
                await self._wait_until(first + i * self.spacing)
                done, ended = ended, []
                now = self.clock.time()

                async def start(
                    tx: TransactionContext,
                    _: object,
                    r: Recipient = r,
                    done: list[Ended] = done,
                    now: float = now,
                ) -> bool:
                    rows = BotDb(tx.db)
                    await rows.end_reminders(a.id, fire_ts, done)
                    return again or await rows.start_reminder(a.id, fire_ts, r.user_id, job_id, now)

                self._count(done, tally, again=again)
                if await ctx.run_mutation(start):
                    said = (r.locale or server_locale, r.asked)
                    if said not in texts:
                        texts[said] = await self._text(a, fire_ts, said[0], asked=r.asked)
                    ended.append(await self._dm(ctx, a, fire_ts, r, texts[said], known))
        finally:
            await self._end(ctx, a.id, fire_ts, ended)
            self._count(ended, tally, again=again)

    def _count(self, ended: Sequence[Ended], tally: Tally, *, again: bool) -> None:
        for _, state, reason, _ in ended:
            if state == "sent":
                tally.sent += 1
                tally.resent += again
                self.stats.reminders_sent += 1
            else:
                tally.skip(reason or "failed")

    async def _turns(self, n: int) -> float:
        """Reserve ``n`` turns of the shared ``dm`` pace at once (one write): when the first
        may go (the others follow ``spacing`` apart)."""
        if self.spacing <= 0:
            return self.clock.time()
        start = await self.sched.reserve_slot(Pace(DM_PACE_KEY, self.spacing * n))
        return start.timestamp()

    async def _wait_until(self, when: float) -> None:
        wait = when - self.clock.time()
        if wait > 0:
            await self.clock.sleep(wait)

    async def _dm(
        self,
        ctx: ActionContext,
        a: Announcement,
        fire_ts: float,
        r: Recipient,
        text: str,
        known: dict[int, int],
    ) -> tuple[int, str, str | None, int | None]:
        """One reminder, ``text``, sent with its nonce to the member's DM channel (``known``
        already, else opened): ``(user_id, state, reason, message_id)``."""
        client = self.poster.client
        nonce = reminder_nonce(a.id, fire_ts, r.user_id)
        try:
            channel_id = known.get(r.user_id) or await self._dm_channel(ctx, r.user_id)
            channel = client.get_partial_messageable(channel_id, type=discord.ChannelType.private)
            message = await self.poster.request(
                ctx,
                lambda: channel.send(
                    text, nonce=nonce, allowed_mentions=discord.AllowedMentions.none()
                ),
                before="remind",
            )
        except REQUEST_ERRORS as exc:
            failed = classify(exc)
            if failed.code == CANNOT_DM:
                return r.user_id, "skipped", "closed", None
            if failed.code in (UNKNOWN_USER, UNKNOWN_MEMBER):
                return r.user_id, "skipped", "left", None
            if failed.permanent:
                log.warning("announcement %d: reminder to %d refused: %s", a.id, r.user_id, failed)
                return r.user_id, "skipped", "failed", None
            raise failed from exc
        return r.user_id, "sent", None, message.id

    async def _dm_channel(self, ctx: ActionContext, user_id: int) -> int:
        """The member's DM channel, opened (its id kept: the next reminders use it)."""
        data = await self.poster.request(
            ctx, lambda: self.poster.client.http.start_private_message(user_id), before="remind"
        )
        channel_id = int(data["id"])
        await ctx.run_mutation(lambda tx, _: BotDb(tx.db).set_dm_channel(user_id, channel_id))
        return channel_id

    async def _text(
        self, a: Announcement, fire_ts: float, locale: str | None, *, asked: bool
    ) -> str:
        shown = await self.announcements.as_posted(a, fire_ts, locale=locale)
        with i18n.speaking(locale):
            return reminder_text(shown, fire_ts, asked=asked)

    # --- interrupted runs ----------------------------------------------------------------------

    async def _finish_interrupted(
        self, ctx: ActionContext, a: Announcement, due: Due, tally: Tally
    ) -> None:
        """Reminders an interrupted run (this job's own: a crash, a lost lease, a 5xx; or
        a job that ended without finishing them) left unfinished: one ``sending`` is sent
        again with its nonce while Discord remembers it, else recorded as may not have
        been delivered; one ``queued`` (never tried) is sent. Another job's still running
        is left to it."""
        async with self.sched.reader() as db:
            rows = await BotDb(db).unfinished_reminders(a.id, due.fire_ts)
        mine = [r for r in rows if r.job_id == ctx.job.id or await self._orphaned(r)]
        if not mine:
            return
        if not await self.announcements.still_due(a.id, due.fire_ts):
            await self._stop(ctx, a, due.fire_ts, tally)
            mine = [r for r in mine if r.state == "sending"]
        now = self.clock.time()
        tried = [r for r in mine if r.state == "sending"]
        fresh = [r for r in tried if now - r.attempt_at < self.nonce_window]
        stale: list[Ended] = [(r.user_id, "skipped", "failed", None) for r in tried
                              if r not in fresh]  # fmt: skip
        if stale:
            await self._end(ctx, a.id, due.fire_ts, stale)
            tally.skip("failed", len(stale))
        if not await self.announcements.still_due(a.id, due.fire_ts):
            return
        untried = [r for r in mine if r.state == "queued"]
        for group, again in ((fresh, True), (untried, False)):
            locales = await self._locales(a.id, [r.user_id for r in group])
            recipients = [Recipient(r.user_id, locales.get(r.user_id),
                                    asked=r.user_id in locales) for r in group]  # fmt: skip
            await self._send_all(ctx, a, due.fire_ts, recipients, tally, again=again)

    async def _orphaned(self, row: ReminderRow) -> bool:
        """Whether the job that recorded ``row`` ended (or is gone) without finishing it."""
        if row.job_id is None:
            return True
        job = await self.sched.get_job(row.job_id)
        return job is None or job.state not in (JobState.PENDING, JobState.IN_PROGRESS)

    async def _locales(
        self, announcement_id: int, user_ids: Sequence[int]
    ) -> dict[int, str | None]:
        """The languages the members among ``user_ids`` who asked asked in."""
        out: dict[int, str | None] = {}
        async with self.sched.reader() as db:
            rows = BotDb(db)
            for user_id in user_ids:
                found = await rows.subscriber(announcement_id, user_id)
                if found is not None:
                    out[user_id] = found.locale
        return out

    async def _transient(
        self, ctx: ActionContext, plan: ReminderPlan, failed: RequestFailed
    ) -> None:
        """A failure that may pass: the job runs again (its ``sending`` row sent again with
        its nonce, its ``queued`` ones sent); on its last attempt they are given up (counted
        as may not have been delivered)."""
        a = plan.announcement
        if ctx.job.attempt + 1 < REMIND_ATTEMPTS or a is None:
            ann_id = 0 if a is None else a.id
            log.warning("announcement %d: reminders interrupted: %s; will retry", ann_id, failed)
            raise RetryLater(failed.reason) from failed
        job_id = ctx.job.id
        await ctx.run_mutation(lambda tx, _: BotDb(tx.db).give_up_reminders(a.id, job_id))
        await self._plan_next(ctx, plan)  # the next reminders are still planned
        raise NonRetryable(f"reminders gave up after {ctx.job.attempt + 1} attempts: {failed}")

    async def _end(
        self,
        ctx: ActionContext,
        announcement_id: int,
        fire_ts: float,
        ended: list[Ended],
    ) -> None:
        await ctx.run_mutation(
            lambda tx, _: BotDb(tx.db).end_reminders(announcement_id, fire_ts, ended)
        )

    # --- the next run --------------------------------------------------------------------------

    async def _plan_next(self, ctx: ActionContext, plan: ReminderPlan) -> None:
        if not plan.active:
            return
        at = await self.announcements.next_reminder_at(plan)
        a = plan.announcement
        if at is None or a is None:
            return
        fire = min((d.fire_ts for d in plan.due), default=plan.next_fire)

        async def enqueue(tx: TransactionContext, _: object) -> None:
            when = max(at, tx.now.timestamp())
            await tx.scheduler.enqueue(
                REMIND_FN,
                RemindArgs(a.id, fire),
                run_at=when,
                idempotency_key=f"remind:{a.id}:{when!r}",
                name=f"reminders of announcement {a.id}",
            )

        await ctx.run_mutation(enqueue)


def reminder_text(shown: Announcement, fire_ts: float, *, asked: bool) -> str:
    """The reminder of ``shown``'s occurrence at ``fire_ts`` (its text as that occurrence
    posts it), in the language in effect: when, where (a link to the channel), the text
    quoted, and why the member gets it."""
    head = i18n.t(
        "⏰ Reminder: {when} ({relative}) in {channel}",
        when=discord_timestamp(fire_ts, "F"),
        relative=discord_timestamp(fire_ts, "R"),
        channel=f"<#{shown.channel_id}>",
    )
    link = f"https://discord.com/channels/{shown.guild_id}/{shown.channel_id}"
    why = (
        i18n.t("You asked to be reminded of announcement #{id}: `/remindme id: {id} stop: true` "
               "stops it.", id=shown.local_id)
        if asked
        else i18n.t("You are Interested in this announcement's Discord event.")
    )  # fmt: skip
    body = _quoted(shown)
    room = MAX_MESSAGE - len(head) - len(link) - len(why) - 12
    if len(body) > room:
        body = body[: max(0, room - 1)] + "…"
    return "\n".join(part for part in (head, body, link, f"-# {why}") if part)


def _quoted(shown: Announcement) -> str:
    """The occurrence's text (its embed's title first, bold) as a quote."""
    text = shown.content
    if shown.rich.title:
        text = f"**{shown.rich.title}**\n{text}"
    text = text.strip()
    if len(text) > QUOTE_LIMIT:
        text = text[: QUOTE_LIMIT - 1] + "…"
    return "\n".join(f"> {line}" for line in text.splitlines())
