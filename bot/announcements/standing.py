"""A server's standing: the bot leaving it and coming back, forgetting it, and its members'
command counts.

When the bot is removed from a server (or the server is deleted), that is recorded in the
database, not in a process's memory: every instance and shard sees it. From then on its
announcements post nothing (a delivery that comes due is recorded missed, a one-off fails,
the schedules of its recurring ones are held) and nothing about it reaches a log channel.
A durable job (:data:`FORGET_FN`, a scheduler mutation) deletes everything of the server
``forget_after`` seconds later. Invited back first, the server carries on as it was: the job
is canceled, the recurring ones go on from their next time, the times missed meanwhile are
recorded missed (shown by ``/info``), never posted late; paused ones stay paused.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from scheduler import Registry, ScheduleNotFound, TransactionContext

from ..db import BotDb
from ..i18n import tn
from ..models import AnnouncementState, LeftGuild, nonce_for
from .deliveries import AWAY
from .guards import TooManyCommands
from .service import AnnouncementService

log = logging.getLogger("crier.guilds")

FORGET_FN = "announcements:forget_guild"
"""The durable job that deletes everything of a server the bot left, when its time comes."""

MISSED_REPORTED = 50
"""At most this many missed times of one recurring announcement are recorded when the bot
comes back to its server (a repeat every minute for a month would be 43,200)."""


@dataclass(frozen=True, slots=True)
class ForgetArgs:
    """Forget ``guild_id`` if the bot is still out of it since ``left_at``."""

    guild_id: int
    left_at: float


class Standing(AnnouncementService):
    """The bot leaving a server, coming back, forgetting it; members' command counts."""

    def register(self, registry: Registry) -> None:
        """Register the job this part enqueues."""
        registry.mutation(FORGET_FN, args=ForgetArgs)(forget_guild)

    async def guild_left(self, guild_id: int) -> bool:
        """The bot was removed from the server (or it was deleted): its announcements stop
        now, and everything of it is deleted after ``forget_after``. False if that was
        recorded already (another instance or shard, or an earlier event, did)."""
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            now = ctx.now.timestamp()
            forget_at = now + self.forget_after
            if not await rows.mark_left(guild_id, now, forget_at):
                return False
            job_id = await ctx.scheduler.enqueue(
                FORGET_FN,
                ForgetArgs(guild_id, now),
                run_at=forget_at,
                idempotency_key=f"forget-guild:{guild_id}:{now!r}",
                name=f"forget server {guild_id}",
            )
            await rows.set_forget_job(guild_id, job_id)
            for d in await rows.guild_deliverers(guild_id):
                if d.state == AnnouncementState.SCHEDULED and d.schedule_name is not None:
                    with contextlib.suppress(ScheduleNotFound):  # held while it is away
                        await ctx.scheduler.schedules.pause(d.schedule_name)
        log.info(
            "left server %d: its announcements stop; everything of it is deleted in %.4g "
            "day(s) unless the bot is invited back",
            guild_id,
            self.forget_after / 86400,
        )
        return True

    async def guild_returned(self, guild_id: int) -> LeftGuild | None:
        """The bot is in the server again: it carries on as it was (see the module). Returns
        the record of its leaving (None: it was not recorded as left, nothing is done)."""
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            left = await rows.unmark_left(guild_id)
            if left is None:
                return None
            if left.forget_job_id is not None:
                await ctx.scheduler.cancel(left.forget_job_id)
            now = ctx.now.timestamp()
            for d in await rows.guild_deliverers(guild_id):
                if d.state == AnnouncementState.SCHEDULED and d.schedule_name is not None:
                    await _carry_on(ctx, d.announcement_id, d.schedule_name, d.until_ts, now)
        log.info("back in server %d (it had removed the bot %.0fs earlier)", guild_id,
                 now - left.left_at)  # fmt: skip
        return left

    async def guilds_present(self, guild_ids: list[int]) -> list[int]:
        """The bot is in every server of ``guild_ids`` (as a gateway's READY says): those
        recorded as left are back (see :meth:`guild_returned`); returns them."""
        async with self.sched.reader() as db:
            left = await BotDb(db).left_guild_ids(guild_ids)
        back = [g for g in sorted(left) if await self.guild_returned(g) is not None]
        return back

    async def left_guild(self, guild_id: int) -> LeftGuild | None:
        """When the bot left the server, if it is out of it."""
        async with self.sched.reader() as db:
            return await BotDb(db).left_guild(guild_id)

    async def count_command(self, guild_id: int, user_id: int) -> None:
        """Count a command of the member in the server, in every instance's count; raises
        :class:`TooManyCommands` (the command is not run) past the server's limit."""
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            now = ctx.now.timestamp()
            minute = int(now // 60)
            used = await rows.count_command(guild_id, user_id, minute)
            if used == 1:  # the member's first this minute: their older counts go
                await rows.prune_command_counts(guild_id, user_id, minute)
            limit = (await self.limits_in(rows, guild_id)).commands_per_minute
        if used <= limit:
            return
        wait = max(1, 60 - int(now % 60))
        raise TooManyCommands(
            tn(
                "Slow down: you have used more than {limit} commands in this server this "
                "minute (its limit, COMMANDS_PER_MINUTE). Wait {n} second, then try again.",
                "Slow down: you have used more than {limit} commands in this server this "
                "minute (its limit, COMMANDS_PER_MINUTE). Wait {n} seconds, then try again.",
                wait, limit=limit,
            ),
            wait,
        )  # fmt: skip


async def _carry_on(
    ctx: TransactionContext, ann_id: int, name: str, until_ts: float | None, now: float
) -> None:
    """A recurring announcement of a server the bot is back in: the times it missed are
    recorded missed (up to :data:`MISSED_REPORTED`), and its schedule goes on from its next
    future time."""
    try:
        info = await ctx.scheduler.schedules.get(name)
    except ScheduleNotFound:
        return
    rows = BotDb(ctx.db)
    t = info.next_fire
    recorded = 0
    while t is not None and t.timestamp() <= now and recorded < MISSED_REPORTED:
        fire_ts = t.timestamp()
        if until_ts is not None and fire_ts > until_ts:
            break
        if await rows.delivery(ann_id, fire_ts) is None:
            await rows.record_missed(ann_id, fire_ts, None, nonce_for(ann_id, fire_ts), now, AWAY)
            recorded += 1
        t = info.trigger.next_after(t)
    await ctx.scheduler.schedules.resume(name)


async def forget_guild(ctx: TransactionContext, args: ForgetArgs) -> dict[str, Any]:
    """The :data:`FORGET_FN` job: if the bot is still out of the server since
    ``args.left_at``, delete everything of it: its announcements' jobs and schedules (pending
    ones canceled, the retention sweep deletes them), then every row of the bot's tables that
    belongs to it."""
    rows = BotDb(ctx.db)
    left = await rows.left_guild(args.guild_id)
    if left is None or left.left_at != args.left_at:
        return {"kept": "the bot is in the server again"}
    for d in await rows.guild_deliverers(args.guild_id):
        if d.job_id is not None:
            await ctx.scheduler.cancel(d.job_id)
        if d.schedule_name is not None:
            with contextlib.suppress(ScheduleNotFound):
                await ctx.scheduler.schedules.delete(d.schedule_name)
    gone = await rows.forget_guild_rows(args.guild_id)
    deleted = ", ".join(f"{n} from {t}" for t, n in gone.items() if n) or "nothing"
    log.info("forgot server %d (the bot had left it): deleted %s", args.guild_id, deleted)
    return gone


__all__ = [
    "AWAY",
    "FORGET_FN",
    "ForgetArgs",
    "Standing",
    "forget_guild",
]
