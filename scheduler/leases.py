"""Named leases: one of many processes owns a key, and keys are shared out fairly.

``sched.leases`` takes, renews and gives back leases on names ("shard 3 of 8") in the
shared store, each with a holder (the scheduler's ``process_id``) and an expiry; a lease
not renewed in time is free for any process to take. :meth:`Leases.share` runs a
:class:`LeaseShare`: the processes that join one group share its keys among the live
members (K keys, N members: each holds K // N or one more), start the work of each key
they take (``start(key)``) and stop it (``stop(key)``) when they give it up.

A new member gets its share by hand-over, never by force: it asks the holder of a key that
holds more than its share (``wanted_by``); on its next round the holder hands the lease to
it but keeps running the key's work (``handed_from`` names it); the new holder starts the
work, then confirms (once ``ready(key)`` says the work is up, for work that takes a while to
come up after ``start`` returns: a round per check), and only then does the giver stop. So
the work of a handed key runs twice for a moment and is never left running nowhere; work
that must not run twice needs a guard of its own (for a chat gateway session,
:func:`scheduler.once`). A member that leaves
(:meth:`LeaseShare.leave`, at shutdown) hands its keys over the same way, then releases
what nobody took in time (at once when it is the group's only member); one that dies loses
its keys when their leases run out.

A member renews its leases every ``ttl / 3`` (on the scheduler's clock, so tests drive it
with a fake one). One that can't reach the store stops the work of every key whose lease
may have run out by now (``ttl`` since it was last renewed, by this process's monotonic
clock), so it never acts on a lease it may have lost.

**The dead and the paused.** A holder the database can tell is gone (its process exited on
SQLite's one machine; its database session ended on PostgreSQL) loses its leases at once,
not when they run out: every process checks the other holders every ``liveness_interval``
(see :mod:`scheduler._holders`), and the lease shares of the one that finds it gone run a
round at once and take its keys. :meth:`Leases.take` takes a key whose holder is gone, as
if its lease had run out. A holder that is merely paused (SIGSTOP, a VM migration) is not
gone: it keeps its leases until they run out, as before, so work that must run once still
does.

**A calm start.** Members that start together should share the keys out before any of
them starts work it would only hand over again (for gateway sessions, each start spends a
daily budget). With ``settle`` (seconds), a joining member that finds free keys first
registers as a member and waits until the group's membership has not changed for
``settle`` (at most ``5 * settle`` in all), then takes its fair share among the members it
sees; the others starting with it do the same, so nobody takes a key only to hand it over.
A member joining a group whose keys are all held does not wait (it asks for its share by
hand-over), and a lone member waits ``settle`` once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from . import _codec
from ._ops import leases as lease_ops
from .clock import monotonic_of
from .errors import InvalidArgument

if TYPE_CHECKING:
    from datetime import timedelta

    from ._engine import Engine
    from .store_types import Op, OpState

__all__ = ["LeaseShare", "Leases"]

log = logging.getLogger("scheduler.leases")

T = TypeVar("T")

KEY_LIMIT = 200
DEFAULT_TTL = 30.0
"""How long a lease holds unless renewed, by default (seconds)."""
SETTLE_LIMIT = 5
"""A calm start waits at most this many times ``settle`` in all."""

Work = Callable[[str], Awaitable[None]]
"""``start(key)`` or ``stop(key)``: begins or ends the work of a key."""

Ready = Callable[[str], bool]
"""``ready(key)``: whether the work of a key this process started is up."""


class Leases:
    """``sched.leases``: single named leases, and fair shares of a group of them."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @property
    def holder(self) -> str:
        """This process's name as a holder (the scheduler's ``process_id``)."""
        return self._engine.settings.process_id

    async def _run(self, op: Callable[..., Op[T]], **kwargs: Any) -> T:
        bound: Callable[[OpState], Op[T]] = partial(op, **kwargs)
        return await self._engine.now().run(bound)

    async def take(self, key: str, ttl: timedelta | float = DEFAULT_TTL) -> bool:
        """Take the lease on ``key`` for ``ttl`` if it is free, expired, already ours, or
        held by a holder that is gone (see the module's docstring)."""
        _codec.check_name(key, "lease key", KEY_LIMIT)
        seconds = _codec.to_seconds(ttl, "ttl", sign="positive")
        holders = self._engine.holders
        await _try(holders.register(), "prove this process alive")
        if await self._run(lease_ops.take, key=key, holder=self.holder, ttl=seconds):
            return True
        # Held: by a holder that is gone? (This check, or one that just ran, frees its keys.)
        await _try(holders.check(), "check the other lease holders")
        return await self._run(lease_ops.take, key=key, holder=self.holder, ttl=seconds)

    async def renew(self, keys: Sequence[str], ttl: timedelta | float = DEFAULT_TTL) -> set[str]:
        """Extend the leases of ``keys`` that this process still holds; those it holds."""
        seconds = _codec.to_seconds(ttl, "ttl", sign="positive")
        return await self._run(lease_ops.renew, keys=list(keys), holder=self.holder, ttl=seconds)

    async def release(self, key: str) -> None:
        """Give the lease on ``key`` back (nothing if this process does not hold it)."""
        await self._run(lease_ops.release, key=key, holder=self.holder)

    async def holders(self, keys: Sequence[str]) -> dict[str, str]:
        """Who holds each of ``keys`` now (a key nobody holds, or whose lease ran out, is
        missing)."""
        now = self._engine.clock.time()
        rows = await self._run(lease_ops.leases_of, keys=list(keys))
        return {k: r.holder for k, r in rows.items() if r.expires_at > now}

    def share(
        self,
        group: str,
        keys: Sequence[str],
        *,
        start: Work,
        stop: Work,
        ttl: timedelta | float = DEFAULT_TTL,
        ready: Ready | None = None,
        settle: timedelta | float = 0.0,
    ) -> LeaseShare:
        """A fair share of ``keys`` among the live members of ``group`` (see the module's
        docstring); ``async with`` it to join, or call ``join()`` and ``leave()``. Without
        ``ready``, a key's work is up once ``start`` returns; with ``settle``, a calm start."""
        return LeaseShare(
            self, group, keys, start=start, stop=stop, ttl=ttl, ready=ready, settle=settle
        )


async def _try(step: Awaitable[T], what: str) -> T | None:
    """``step``'s result, or None (logged) if it fails: liveness only ever speeds a take-over
    up, and a lease is still lost when it expires."""
    try:
        return await step
    except Exception as exc:
        log.warning("could not %s (%s)", what, exc)
        return None


def quotas(members: Sequence[str], keys: int) -> dict[str, int]:
    """How many of ``keys`` keys each member holds in a fair share: ``keys // n``, and one
    more for the first ``keys % n`` members in holder order (every member works it out the
    same way from the same list)."""
    n = len(members)
    if n == 0:
        return {}
    return {m: keys // n + (1 if i < keys % n else 0) for i, m in enumerate(members)}


class LeaseShare:
    """This process's share of a group of keys (made by :meth:`Leases.share`)."""

    def __init__(
        self,
        leases: Leases,
        group: str,
        keys: Sequence[str],
        *,
        start: Work,
        stop: Work,
        ttl: timedelta | float,
        ready: Ready | None = None,
        settle: timedelta | float = 0.0,
    ) -> None:
        _codec.check_name(group, "lease group", KEY_LIMIT)
        for key in keys:
            _codec.check_name(key, "lease key", KEY_LIMIT)
        if len(set(keys)) != len(keys) or not keys:
            raise InvalidArgument("a lease group needs one or more distinct keys")
        self.leases = leases
        self.group = group
        self.keys = sorted(keys)
        self.ttl = _codec.to_seconds(ttl, "ttl", sign="positive")
        self.settle = _codec.to_seconds(settle, "settle")
        self._start = start
        self._stop = stop
        self._ready = ready
        self._engine = leases._engine
        self._monotonic = monotonic_of(self._engine.clock)
        self.running: set[str] = set()
        """The keys whose work runs in this process (held, or handed over and not yet
        confirmed by the taker)."""
        self._renewed: dict[str, float] = {}
        self._leaving = False
        self._others_seen = False
        self._poked = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._next = 0.0
        self.changed = asyncio.Event()
        """Set whenever :attr:`running` changes (tests and callers may clear and wait)."""
        self.rounds = 0
        """Rounds completed (each renews, starts, stops, takes and hands what it should)."""
        self.failed_rounds = 0
        """Rounds of the loop that failed (the store could not be reached)."""
        self.settled_in: float | None = None
        """How long the calm start waited at join (None: it did not wait; see the module's
        docstring)."""

    @property
    def me(self) -> str:
        """This member's name in the group: the process's holder name."""
        return self.leases.holder

    # --- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> LeaseShare:
        await self.join()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.leave()

    async def join(self) -> None:
        """Become a member and take a first share (after a calm start's wait, with
        ``settle``); then keep it, every ``ttl / 3``. The holders found gone lose their
        leases first, and whenever this process finds one gone later, a round runs at once."""
        holders = self._engine.holders
        await _try(holders.register(), "prove this process alive")
        holders.watch()
        holders.add_listener(self.poke)
        await _try(holders.check(), "check the other lease holders")
        if self.settle > 0:
            await self._settle()
        await self.round()
        self._next = self._monotonic() + self.ttl / 3
        self._task = asyncio.create_task(self._loop(), name=f"lease share {self.group}")

    async def _settle(self) -> None:
        """A calm start: be a member, and while keys are free wait for the membership to
        stay the same for ``settle`` (at most :data:`SETTLE_LIMIT` times it)."""
        run = self.leases._run
        members = await run(lease_ops.join, group=self.group, holder=self.me, ttl=self.ttl)
        now = self._engine.clock.time()
        rows = await run(lease_ops.leases_of, keys=self.keys)
        if all(k in rows and rows[k].expires_at > now for k in self.keys):
            return  # every key held: the share comes by hand-over, nothing to wait for
        began = quiet = self._monotonic()
        deadline = began + SETTLE_LIMIT * self.settle
        while True:
            at = min(quiet + self.settle, deadline)
            if self._monotonic() >= at:
                break
            await self._sleep_until(min(at, self._monotonic() + self.settle / 4))
            now_members = await run(lease_ops.join, group=self.group, holder=self.me, ttl=self.ttl)
            if now_members != members:
                members, quiet = now_members, self._monotonic()
        self.settled_in = self._monotonic() - began
        log.info(
            "lease group %s: %d member(s) after a calm start of %.1f s",
            self.group, len(members), self.settled_in,
        )  # fmt: skip

    def poke(self) -> None:
        """Run a round now, between the regular ones: e.g. the work of a key handed to this
        member just became ready, so the giver is told at once (not a third of a ttl later)
        that it may stop."""
        self._poked.set()

    async def _sleep_until(self, at: float) -> None:
        # The delay is measured when this coroutine starts, not when it was made: the clock
        # may move in between (a FakeClock stepped by a test, or a busy loop), and a delay
        # measured earlier would then sleep past ``at``.
        await self._engine.clock.sleep(max(0.0, at - self._monotonic()))

    async def _sleep_or_poke(self, at: float) -> bool:
        """Sleep on the clock until its monotonic time ``at``, or less if poked; whether it
        was poked."""
        sleeper = asyncio.ensure_future(self._sleep_until(at))
        poked = asyncio.ensure_future(self._poked.wait())
        try:
            await asyncio.wait({sleeper, poked}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            poked.cancel()
        return self._poked.is_set()

    async def _loop(self) -> None:
        # Rounds are due every ttl / 3 from the join, on the clock's monotonic time, however
        # long each takes and whenever this task first runs.
        while True:
            wait = self._next - self._monotonic()
            poked = self._poked.is_set()
            if wait > 0 and not poked:
                poked = await self._sleep_or_poke(self._next)
            self._poked.clear()
            if not poked:  # (a poked round comes in between: the rounds keep their times)
                self._next += self.ttl / 3
                if self._next < self._monotonic():  # woke late: the next a full ttl / 3 on
                    self._next = self._monotonic() + self.ttl / 3
            try:
                await self.round()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store is down: fence what may have run out
                self.failed_rounds += 1
                log.warning("lease group %s: a round failed (%s)", self.group, exc)
                await self._fence()

    async def leave(self, within: timedelta | float | None = None) -> None:
        """Hand every key over to the other members (waiting up to ``within``, default
        ``ttl``, for them to take them), then release what is left and stop its work."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._engine.holders.remove_listener(self.poke)
        self._leaving = True
        self._others_seen = False
        wait = self.ttl if within is None else _codec.to_seconds(within, "within")
        deadline = self._monotonic() + wait
        try:
            await self.leases._run(lease_ops.leave, group=self.group, holder=self.me)
            self._others_seen = bool(await self.leases._run(lease_ops.members, group=self.group))
            if not self._others_seen:
                deadline = self._monotonic()  # nobody to hand to: release at once
            while self.running and self._monotonic() < deadline:
                await self.round()
                if self.running:
                    await self._engine.clock.sleep(
                        min(self.ttl / 6, max(0.0, deadline - self._monotonic()))
                    )
        except Exception as exc:
            log.warning("lease group %s: could not hand over (%s)", self.group, exc)
        if self.running and wait > 0 and self._others_seen:
            log.warning(
                "lease group %s: %s not taken over within %g s; released (its work stops "
                "before another member's starts)", self.group, ", ".join(sorted(self.running)),
                wait,
            )  # fmt: skip
        for key in sorted(self.running):
            with contextlib.suppress(Exception):
                await self.leases.release(key)
            await self._stop_work(key)

    # --- one round ------------------------------------------------------------------------

    async def round(self) -> None:
        """Renew, start what was handed to us, stop what we gave away, take or ask for our
        share, hand over what others asked for."""
        run = self.leases._run
        me = self.me
        if self._leaving:
            members = await run(lease_ops.members, group=self.group)
        else:
            members = await run(lease_ops.join, group=self.group, holder=me, ttl=self.ttl)
        now = self._engine.clock.time()
        rows = await run(lease_ops.leases_of, keys=self.keys)
        mine = sorted(k for k, r in rows.items() if r.holder == me)
        held = await run(lease_ops.renew, keys=mine, holder=me, ttl=self.ttl)
        beat = self._monotonic()
        for key in held:
            self._renewed[key] = beat
        share = quotas(members, len(self.keys))
        quota = 0 if self._leaving else share.get(me, 0)
        # Handed to us: start, then once it is up tell the giver it may stop.
        for key in sorted(held):
            await self._start_work(key)
            up = self._ready is None or self._ready(key)
            if key in self.running and up and rows[key].handed_from is not None:
                await run(lease_ops.confirm, key=key, holder=me)
        # Given away (or lost): stop, unless the taker has not started yet.
        for key in sorted(self.running - held):
            row = rows.get(key)
            handing = row is not None and row.handed_from == me and row.expires_at > now
            if not handing:
                await self._stop_work(key)
        if len(held) < quota:
            await self._take_share(rows, members, share, held, quota, now)
        else:
            await self._hand_over(rows, held, quota)
        self.rounds += 1

    async def _take_share(
        self,
        rows: dict[str, lease_ops.LeaseRow],
        members: list[str],
        share: dict[str, int],
        held: set[str],
        quota: int,
        now: float,
    ) -> None:
        run = self.leases._run
        short = quota - len(held)
        for key in self.keys:
            if short == 0:
                return
            row = rows.get(key)
            free = row is None or row.expires_at <= now
            if free and await run(lease_ops.take, key=key, holder=self.me, ttl=self.ttl):
                self._renewed[key] = self._monotonic()
                held.add(key)
                short -= 1
                await self._start_work(key)
        # Nothing free: ask members over their share (or holders no longer members).
        counts: dict[str, int] = {}
        for row in rows.values():
            if row.expires_at > now:
                counts[row.holder] = counts.get(row.holder, 0) + 1
        asked = sum(1 for r in rows.values() if r.wanted_by == self.me)
        short -= asked
        for key in self.keys:
            if short <= 0:
                return
            row = rows.get(key)
            if row is None or row.holder == self.me or row.wanted_by or row.handed_from:
                continue
            if counts.get(row.holder, 0) > share.get(row.holder, 0) and await run(
                lease_ops.want, key=key, holder=self.me
            ):
                counts[row.holder] -= 1
                short -= 1

    async def _hand_over(
        self, rows: dict[str, lease_ops.LeaseRow], held: set[str], quota: int
    ) -> None:
        run = self.leases._run
        for key in sorted(held):
            if rows[key].wanted_by is None:
                continue
            if len(held) > quota and await run(
                lease_ops.hand, key=key, holder=self.me, ttl=self.ttl
            ):
                held.discard(key)  # its work runs on until the taker confirms it started
            elif len(held) <= quota:
                await run(lease_ops.unwant, key=key, holder=self.me)

    async def _fence(self) -> None:
        """Stop the work of every key whose lease may have run out since its last renewal."""
        now = self._monotonic()
        for key in sorted(self.running):
            if now - self._renewed.get(key, float("-inf")) >= self.ttl:
                log.warning("lease group %s: %s may have been lost; stopping it", self.group, key)
                await self._stop_work(key)

    async def _start_work(self, key: str) -> None:
        if key in self.running:
            return
        try:
            await self._start(key)
        except Exception:
            log.exception("lease group %s: starting %s failed; giving it back", self.group, key)
            with contextlib.suppress(Exception):
                await self.leases.release(key)
            return
        self.running.add(key)
        self.changed.set()

    async def _stop_work(self, key: str) -> None:
        if key not in self.running:
            return
        self.running.discard(key)
        self._renewed.pop(key, None)
        self.changed.set()
        try:
            await self._stop(key)
        except Exception:
            log.exception("lease group %s: stopping %s failed", self.group, key)
