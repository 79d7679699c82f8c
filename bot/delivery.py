"""Posting announcements: one scheduler action per occurrence, each posted at most once.

The occurrence's row in ``bot_deliveries`` is written (state ``sending``, with its
deterministic nonce) before the message is sent, and the message id after. So:

- a job that finds a message id recorded for its occurrence does nothing more;
- a re-run after a crash or a transient error re-sends with the same nonce, which Discord
  answers with the first message instead of a second one (``enforce_nonce``), but only
  while Discord still remembers the nonce; later, it is reported as "may not have been
  delivered" instead of risking a duplicate;
- permanent errors (Unknown Channel, Missing Access, Missing Permissions, other 4xx) fail
  the occurrence at once, pause a recurring announcement and are reported.

discord.py handles 429s itself (it sleeps and retries); nothing here catches one. Sends to
one channel are spaced (``ChannelPacer``) in due order, and a job waiting for its turn keeps
its lease with heartbeats.

Right before every request that posts something, the job makes sure it still holds its lease
for longer than that request may take (``hold_lease``): a process that was paused (a VM
migration, ``docker pause``, a suspended laptop) while another one took its job over must not
post it again when it wakes up, after Discord has forgotten the nonce.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import discord

from scheduler import (
    ActionContext,
    NonRetryable,
    Registry,
    Retry,
    RetryLater,
    Scheduler,
    TransactionContext,
)
from scheduler.clock import Clock, monotonic_of

from .announcements import SEND_FN, Announcement, Announcements

log = logging.getLogger("crier.delivery")

PERMANENT_CODES = {
    10003: "Unknown Channel: the channel was deleted",
    50001: "Missing Access: the bot cannot see the channel",
    50013: "Missing Permissions: the bot may not post in the channel",
}
LATE_NOTE_AFTER = 60.0
MAX_MESSAGE = 2000
SEND_ATTEMPTS = 5
"""Sends of one occurrence that may fail with a transient error before it is reported."""
SEND_RETRY = Retry(max_failures=400, initial_backoff=2.0, base=2.0)
"""The job's own budget is far larger than SEND_ATTEMPTS because the scheduler also spends it
when a crash interrupts a delivery (its lease expires): a crash loop must not use it up and
drop the occurrence without a word. An interrupted delivery is re-sent with the same nonce
until it is recorded, or reported by ``_begin`` once its first attempt is older than the nonce
window (at most 300 s; with leases of at least 1 s that is fewer than 400 re-dispatches)."""


def lease_needed(sched: Scheduler, send_timeout: float) -> float:
    """How long a run must surely hold its lease to start a send.

    The whole request's budget when a lease is long enough for it, else half of what a fresh
    lease surely holds. Heartbeats keep the lease while the request is in flight, and a
    request that outlives a lost lease can only race a re-send with the same nonce, which
    Discord deduplicates: what must never happen is a send that starts after the job moved on.
    """
    return min(send_timeout, (sched.lease_seconds - sched.lease_margin) / 2)


async def hold_lease(ctx: ActionContext, need: float) -> None:
    """Make sure this run holds its job's lease for more than ``need`` seconds, or raise
    ``LeaseLost``: called right before each request that posts something. A short lease is
    renewed first (a heartbeat that finds the job reclaimed cancels the run)."""
    if ctx.lease_remaining() <= need:
        await ctx.heartbeat()
    ctx.ensure_lease(need)


def nonce_for(announcement_id: int, fire_ts: float) -> str:
    """A nonce of at most 25 characters, the same for every attempt at one occurrence."""
    digest = hashlib.blake2b(f"{announcement_id}:{fire_ts!r}".encode(), digest_size=12)
    return "c" + digest.hexdigest()[:24]


def allowed_mentions(spec: dict[str, Any]) -> discord.AllowedMentions:
    """What may ping, as decided when the announcement was scheduled."""
    roles = [discord.Object(int(r)) for r in spec.get("roles", [])]
    return discord.AllowedMentions(
        everyone=bool(spec.get("everyone")),
        roles=roles or False,
        users=bool(spec.get("users", True)),
        replied_user=False,
    )


class Slot:
    """A turn to send in one channel; set ``sent`` once a request went out in it."""

    __slots__ = ("sent",)

    def __init__(self) -> None:
        self.sent = False


class ChannelPacer:
    """Sends to one channel at least ``spacing`` seconds apart, first come first served
    (jobs start in due order, so that is due order); other channels are not held up.

    Spacing is measured on the clock's monotonic time and waited with its ``sleep``, so a
    wall-clock step neither holds a channel up nor bunches its sends, and tests drive it with
    a fake clock. A turn in which nothing was sent does not delay the next one.
    """

    def __init__(self, spacing: float, clock: Clock) -> None:
        self.spacing = spacing
        self.clock = clock
        self._monotonic = monotonic_of(clock)
        self._locks: dict[int, asyncio.Lock] = {}
        self._last: dict[int, float] = {}

    @contextlib.asynccontextmanager
    async def slot(self, channel_id: int) -> AsyncIterator[Slot]:
        lock = self._locks.setdefault(channel_id, asyncio.Lock())
        async with lock:
            last = self._last.get(channel_id)
            if last is not None:
                wait = last + self.spacing - self._monotonic()
                if wait > 0:
                    await self.clock.sleep(wait)
            turn = Slot()
            try:
                yield turn
            finally:
                if turn.sent:
                    self._last[channel_id] = self._monotonic()


@contextlib.asynccontextmanager
async def keep_lease(ctx: ActionContext, every: float) -> AsyncIterator[None]:
    """Heartbeat the job's lease every ``every`` seconds while the block runs."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(every)
            try:
                held = await ctx.heartbeat()
            except Exception as exc:  # a failed beat must not fail the send it protects
                log.warning("job %d: heartbeat failed (%s); trying again", ctx.job.id, exc)
                continue
            if not held:
                return  # the scheduler cancels the run and logs it as discarded

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@dataclass(frozen=True, slots=True)
class Attempt:
    """What the bookkeeping before a send decided."""

    action: str  # "send", "done", "missed", "unknown"
    nonce: str = ""
    reason: str = ""


class Delivery:
    def __init__(
        self,
        client: discord.Client,
        announcements: Announcements,
        *,
        pacer: ChannelPacer,
        catch_up_window: float,
        nonce_window: float,
        heartbeat_every: float,
        lease_needed: float,
        ready: asyncio.Event | None = None,
    ) -> None:
        self.client = client
        self.ready = ready
        """Set once the client is logged in (sends wait for it)."""
        self.announcements = announcements
        self.pacer = pacer
        self.catch_up_window = catch_up_window
        self.nonce_window = nonce_window
        self.heartbeat_every = heartbeat_every
        self.send_timeout = nonce_window / 3
        """How long one send may take before it is abandoned (and retried with the same
        nonce): well inside the nonce window, so the retry can still be deduplicated."""
        self.lease_needed = lease_needed
        """How long the lease must surely last when a send starts (see ``lease_needed``)."""

    def register(self, registry: Registry) -> None:
        registry.action(SEND_FN, idempotent=True, retry=SEND_RETRY)(self.send)

    # --- the action ------------------------------------------------------------------------

    async def send(self, ctx: ActionContext, args: dict[str, Any]) -> dict[str, Any]:
        ann = await self.announcements.by_id(int(args["announcement_id"]))
        fire_ts = float(args.get("fire_ts") or ctx.job.fire_ts or 0.0)
        if ann is None or ann.state != "scheduled":
            return {"skipped": "canceled" if ann is None else ann.state}
        found_at = ctx.now.timestamp()
        # Late means found late (after downtime), not queued behind this channel's others.
        late = found_at - fire_ts >= LATE_NOTE_AFTER
        try:
            async with (
                keep_lease(ctx, self.heartbeat_every),
                self.pacer.slot(ann.channel_id) as turn,
            ):
                if self.ready is not None:
                    await self.ready.wait()
                now = ctx.now.timestamp()
                attempt: Attempt = await ctx.run_mutation(
                    self._begin,
                    {
                        "ann": ann.id,
                        "fire_ts": fire_ts,
                        "job": ctx.job.id,
                        "found_at": found_at,
                        "now": now,
                    },
                )
                if attempt.action == "done":
                    return {"already": attempt.reason}
                if attempt.action in ("missed", "unknown"):
                    await self._fail(ctx, ann, fire_ts, attempt.reason, pause=False)
                    raise NonRetryable(attempt.reason)
                late_by = max(0.0, now - fire_ts)
                # Nothing may post for a run that could have lost its job meanwhile.
                await hold_lease(ctx, self.lease_needed)
                turn.sent = True
                # A send that hangs is abandoned well inside the nonce window, so its retry
                # can still be deduplicated by Discord.
                async with asyncio.timeout(self.send_timeout):
                    message = await self.client.get_partial_messageable(ann.channel_id).send(
                        _with_late_note(ann.text, fire_ts) if late else ann.text,
                        nonce=attempt.nonce,
                        allowed_mentions=allowed_mentions(ann.allowed_mentions),
                    )
        except discord.HTTPException as exc:
            if _permanent(exc):
                reason = _describe(exc)
                await self._fail(ctx, ann, fire_ts, reason, pause=ann.recurring)
                raise NonRetryable(reason) from exc
            reason = _describe(exc)
            await self._transient(ctx, ann, fire_ts, reason)
            raise RetryLater(reason) from exc
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            await self._transient(ctx, ann, fire_ts, reason)
            raise RetryLater(reason) from exc
        await ctx.run_mutation(
            self._sent,
            {"ann": ann.id, "fire_ts": fire_ts, "message": message.id, "late_by": late_by},
        )
        return {"message_id": message.id, "late_by": round(late_by, 3)}

    async def _transient(
        self, ctx: ActionContext, ann: Announcement, fire_ts: float, reason: str
    ) -> None:
        """A failure that may pass. The next attempt re-sends with the same nonce; on the
        last one, give up and report it. A run that lost its job meanwhile (a send in flight
        when the process was paused times out as it wakes) says nothing: it is discarded."""
        await hold_lease(ctx, 0.0)
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
        await ctx.run_mutation(
            self._note_error, {"ann": ann.id, "fire_ts": fire_ts, "error": reason}
        )

    async def _fail(
        self, ctx: ActionContext, ann: Announcement, fire_ts: float, reason: str, *, pause: bool
    ) -> None:
        recorded: bool = await ctx.run_mutation(
            self._failed, {"ann": ann.id, "fire_ts": fire_ts, "error": reason, "pause": pause}
        )
        if not recorded:
            return  # another run delivered it meanwhile: there is no failure to report
        await hold_lease(ctx, self.lease_needed)
        await self.report(ann, ctx.job.id, reason, paused=pause)

    # --- reporting -------------------------------------------------------------------------

    async def report(self, ann: Announcement, job_id: int, reason: str, *, paused: bool) -> None:
        """Log the failure with every id, and post it to the guild's log channel if set."""
        log.error(
            "announcement %d (#%d) failed: %s [guild %d, channel %d, job %d]%s",
            ann.id, ann.local_id, reason, ann.guild_id, ann.channel_id, job_id,
            "; recurring announcement paused" if paused else "",
        )  # fmt: skip
        settings = await self.announcements.settings(ann.guild_id)
        if settings.log_channel_id is None:
            return
        text = (
            f"⚠️ Announcement #{ann.local_id} for <#{ann.channel_id}> could not be posted: "
            f"{reason}."
            + (" It is paused; schedule it again once this is fixed." if paused else "")
        )
        try:
            async with self.pacer.slot(settings.log_channel_id) as turn:
                turn.sent = True
                await self.client.get_partial_messageable(settings.log_channel_id).send(
                    text, allowed_mentions=discord.AllowedMentions.none()
                )
        except discord.HTTPException as exc:
            log.warning(
                "could not post the failure report to log channel %d of guild %d: %s",
                settings.log_channel_id, ann.guild_id, _describe(exc),
            )  # fmt: skip

    # --- bookkeeping mutations ---------------------------------------------------------------

    async def _begin(self, ctx: TransactionContext, a: dict[str, Any]) -> Attempt:
        cur = await ctx.db.execute(
            "SELECT state, message_id, first_attempt_at, nonce FROM bot_deliveries "
            "WHERE announcement_id = ? AND fire_ts = ?",
            (a["ann"], a["fire_ts"]),
        )
        row = await cur.fetchone()
        now = float(a["now"])
        if row is not None:
            state, message_id, first_attempt, nonce = row[0], row[1], float(row[2]), row[3]
            if state != "sending":
                return Attempt("done", reason=f"{state} (message {message_id})")
            if now - first_attempt > self.nonce_window:
                return Attempt(
                    "unknown",
                    reason=(
                        "may not have been delivered: an attempt was interrupted "
                        f"{now - first_attempt:.0f}s ago, longer than Discord remembers a "
                        "nonce, so it was not sent again"
                    ),
                )
            await ctx.db.execute(
                "UPDATE bot_deliveries SET attempts = attempts + 1, job_id = ? "
                "WHERE announcement_id = ? AND fire_ts = ?",
                (a["job"], a["ann"], a["fire_ts"]),
            )
            return Attempt("send", nonce=nonce)
        late = float(a["found_at"]) - float(a["fire_ts"])
        nonce = nonce_for(int(a["ann"]), float(a["fire_ts"]))
        if late > self.catch_up_window:
            reason = (
                f"missed: it was due {late / 60:.0f} minutes earlier, while the bot was offline"
            )
            await ctx.db.execute(
                "INSERT INTO bot_deliveries (announcement_id, fire_ts, job_id, nonce, state, "
                "first_attempt_at, error) VALUES (?, ?, ?, ?, 'missed', ?, ?)",
                (a["ann"], a["fire_ts"], a["job"], nonce, now, reason),
            )
            return Attempt("missed", reason=reason)
        await ctx.db.execute(
            "INSERT INTO bot_deliveries (announcement_id, fire_ts, job_id, nonce, state, "
            "first_attempt_at) VALUES (?, ?, ?, ?, 'sending', ?)",
            (a["ann"], a["fire_ts"], a["job"], nonce, now),
        )
        return Attempt("send", nonce=nonce)

    async def _sent(self, ctx: TransactionContext, a: dict[str, Any]) -> None:
        now = ctx.now.timestamp()
        await ctx.db.execute(
            "UPDATE bot_deliveries SET state = 'sent', message_id = ?, sent_at = ?, late_by = ?, "
            "error = NULL WHERE announcement_id = ? AND fire_ts = ?",
            (a["message"], now, a["late_by"], a["ann"], a["fire_ts"]),
        )
        await ctx.db.execute(
            "UPDATE bot_announcements SET last_message_id = ?, failure = NULL, updated_at = ?, "
            "state = CASE WHEN repeat_kind IS NULL AND state = 'scheduled' THEN 'sent' "
            "ELSE state END WHERE id = ?",
            (a["message"], now, a["ann"]),
        )

    async def _note_error(self, ctx: TransactionContext, a: dict[str, Any]) -> None:
        await ctx.db.execute(
            "UPDATE bot_deliveries SET error = ? WHERE announcement_id = ? AND fire_ts = ? "
            "AND state = 'sending'",
            (a["error"], a["ann"], a["fire_ts"]),
        )

    async def _failed(self, ctx: TransactionContext, a: dict[str, Any]) -> bool:
        """Record the occurrence failed (and its announcement failed or paused); False when
        it was recorded sent meanwhile (by a run that took the job over), so nothing is."""
        now = ctx.now.timestamp()
        cur = await ctx.db.execute(
            "UPDATE bot_deliveries SET state = CASE WHEN state = 'missed' THEN state "
            "ELSE 'failed' END, error = ? WHERE announcement_id = ? AND fire_ts = ? "
            "AND state <> 'sent'",
            (a["error"], a["ann"], a["fire_ts"]),
        )
        if cur.rowcount == 0:
            return False
        cur = await ctx.db.execute(
            "SELECT repeat_kind, schedule_name, state FROM bot_announcements WHERE id = ?",
            (a["ann"],),
        )
        repeat_kind, name, state = await cur.fetchone()
        if repeat_kind is None:
            new_state = "failed"
        elif a["pause"]:
            new_state = "paused"
            if name is not None:
                await ctx.scheduler.schedules.pause(name)
        else:
            new_state = state  # one occurrence lost; the recurrence goes on
        await ctx.db.execute(
            "UPDATE bot_announcements SET state = ?, failure = ?, updated_at = ? WHERE id = ?",
            (new_state, a["error"], now, a["ann"]),
        )
        return True


def _permanent(exc: discord.HTTPException) -> bool:
    if exc.code in PERMANENT_CODES:
        return True
    return 400 <= exc.status < 500 and exc.status != 429


def _describe(exc: discord.HTTPException) -> str:
    known = PERMANENT_CODES.get(exc.code)
    if known:
        return f"{known} ({exc.code})"
    text = exc.text or exc.__class__.__name__
    return f"HTTP {exc.status}" + (f" code {exc.code}" if exc.code else "") + f": {text}"


def _with_late_note(text: str, fire_ts: float) -> str:
    note = f"\n-# Sent late: this was scheduled for <t:{int(fire_ts)}:F>."
    return text + note if len(text) + len(note) <= MAX_MESSAGE else text
