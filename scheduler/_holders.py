"""Holder liveness: a lease holder the database can tell is gone loses its leases at once.

Every lease the scheduler keeps names its holder, the scheduler's ``process_id``: a claimed
job's lease and the named leases of :mod:`scheduler.leases`. A lease is lost when it
expires; until then nobody else may take it, so a holder that is merely paused (SIGSTOP, a
VM migration, a long garbage collection) finds everything as it left it when it goes on,
and nothing it does happens twice. But a holder that has *died* cannot go on: waiting for
its leases to expire only leaves its work undone (a crashed bot deaf for the lease's 30 s).
So a holder that can be told gone loses its leases as soon as another process notices:

- **The proof.** A process that runs its driver (:meth:`Scheduler.start`) or joins a lease
  share records a proof of life beside its name in ``scheduler_holders``, made by its
  store's :class:`~scheduler.abc.Liveness`: on SQLite (one machine by definition) its
  process, pid and start time, so a reused pid does not count; on PostgreSQL its own
  database session, holding an advisory lock. A store that cannot prove anything records
  nothing, and its holders' leases expire as before.
- **The check.** Every ``liveness_interval`` (1 s by default), at every lease sweep and when
  a lease share joins, each process checks the other holders' proofs. A process that found
  itself the only holder, on a store that hears other processes' commits (PostgreSQL), skips
  the interval's checks (an idle process then costs the database no transaction a second)
  until a commit is heard: a new holder's registration is announced, and the check after it
  (within an interval) finds it; its lease sweep skips the check as well while the store
  hears the commits (and checks once its LISTEN connection is lost). Gone means provably
  gone: the process has exited (or its pid now names another process), the session has
  ended on a server that still runs. A stopped process, a session that is only idle, a
  holder this process cannot judge (another container's processes) are alive.
- **What a gone holder loses**, in one transaction fenced by the proof that was found gone:
  the leases handed to it and not yet confirmed go back to their givers, its other named
  leases are free now, its requests and its places in lease groups are forgotten, and every
  job whose lease it held is reclaimed as an expired lease would be (``lease_lost`` in the
  run history). The lease shares of the process that found it run a round at once, and the
  drivers wake for the reclaimed jobs; the other processes' lease shares run a round as
  soon as their own check sees the holder gone from the table (within an interval), so
  every survivor takes its part of the dead one's keys at once, not at its next round.
- **A proof that lapses** while its process lives on (PostgreSQL: its holder session was
  lost, say by ``pg_terminate_backend`` or a dropped connection) is noticed at once: the
  process claims nothing until it has proved itself again (a new proof), and every run it
  claimed before treats its lease as lost unless its old proof was still recorded when the
  new one replaced it (then nobody had found it gone, and nobody can any more). Its named
  leases were taken only if somebody found it gone: its next lease round renews what it
  still holds and stops the rest.
- **A name used again** (``process_id`` fixed, a restart after a crash): the new process
  finds its predecessor's proof; gone, the predecessor's jobs are reclaimed at once, before
  the new one claims anything (its named leases are its own already). Alive, two live
  processes share one name, and a warning says so.
- **At stop** a process gives back the named leases it still holds the same way and
  forgets its proof (a job whose completion it could not record keeps its lease until it
  expires, as before).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from functools import partial
from typing import TYPE_CHECKING

from ._ops import holders as holder_ops

if TYPE_CHECKING:
    from collections.abc import Callable

    from .abc import Liveness, Store
    from .clock import Clock
    from .settings import Settings
    from .stats import SchedulerStats

log = logging.getLogger("scheduler.holders")

SEEN_EVERY = 86400.0
"""How often a holder marks its row seen (on the scheduler's clock)."""

FORGET_AFTER = 7 * 86400.0
"""A holder row not seen for this long is forgotten by the sweep (one no process could
judge: another container's process that stopped without a word)."""

RETRY_MAX = 5.0
"""The longest wait between two attempts to prove a lapsed holder alive again."""


class Holders:
    """This process as a lease holder, and its watch over the others (see the module's
    docstring). One per scheduler (``engine.holders``)."""

    def __init__(
        self, store: Store, clock: Clock, settings: Settings, stats: SchedulerStats
    ) -> None:
        self.store = store
        self.clock = clock
        self.settings = settings
        self.stats = stats
        self._proof: str | None = None
        """This holder's proof as recorded in the database (None: not registered)."""
        self._seen_at = 0.0
        self._register_lock = asyncio.Lock()
        self._watch: asyncio.Task[None] | None = None
        self._reprove: asyncio.Task[None] | None = None
        self._proven = asyncio.Event()
        self._proven.set()
        self._broken_before = 0
        """Leases taken while the proof's epoch was below this are lost."""
        self._listeners: list[Callable[[], None]] = []
        self._others: set[str] | None = None
        """The other holders as the last check found them (None: not checked yet)."""
        self._poked = asyncio.Event()
        """Set by every commit heard since the watch's last check (see :meth:`poke`)."""
        self._failing = False
        """Whether the watch's last check failed."""

    @property
    def me(self) -> str:
        return self.settings.process_id

    @property
    def liveness(self) -> Liveness | None:
        return self.store.liveness

    @property
    def registered(self) -> bool:
        return self._proof is not None

    # --- what the driver and the lease shares ask --------------------------------------------

    @property
    def epoch(self) -> int:
        """This process's proof epoch (see :meth:`intact`), taken before each claim."""
        return 0 if self.liveness is None else self.liveness.epoch

    def intact(self, epoch: int) -> bool:
        """Whether a lease this process took at ``epoch`` is still surely its own as far as
        liveness goes: its proof has not lapsed since, or it lapsed and this process proved
        itself again before anybody found it gone."""
        if self.liveness is None or self._proof is None:
            return True
        return self._proven.is_set() and epoch >= self._broken_before

    @property
    def proven(self) -> bool:
        """Whether this process's proof stands (true unless it lapsed and is not made again
        yet; see :meth:`add_listener` for when it is)."""
        return self._proven.is_set()

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after this process found a holder gone and took its leases from
        it, after a check found that another holder left (found gone by another process, or
        stopped), and after this process proved itself again after a lapse."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _changed(self) -> None:
        for listener in list(self._listeners):
            listener()

    # --- registration -------------------------------------------------------------------------

    async def register(self, *, first: bool = False) -> None:
        """Record this process's proof (once; later calls return at once). ``first``: before
        this process claims anything under its name, so a predecessor under the same name
        that is gone loses its jobs' leases first."""
        liveness = self.liveness
        if liveness is None or self._proof is not None:
            return
        async with self._register_lock:
            if self._proof is not None:
                return
            proof = await liveness.prove()
            liveness.on_lapse = self._lapsed
            ops = self.store.at(self.clock.time())
            before = await ops.read(partial(holder_ops.proof_of, holder=self.me))
            if first and before is not None and before != proof:
                await self._predecessor(liveness, before)
            await self.store.at(self.clock.time()).run(
                partial(holder_ops.put, holder=self.me, proof=proof)
            )
            self._proof = proof
            self._seen_at = self.clock.time()
            self._proven.set()

    async def _predecessor(self, liveness: Liveness, proof: str) -> None:
        """The proof recorded under this process's name before it started is ``proof``."""
        if await liveness.gone({self.me: proof}):
            report = await self._expire(self.me, proof, found=False)
            if report is not None:
                log.warning(
                    "the previous process named %s is gone: %d of its job(s) back to pending, "
                    "%d failed (their run was lost)", self.me, report[0], report[1],
                )  # fmt: skip
        else:
            log.warning(
                "a process named %s was recorded before this one and is not known to be gone: "
                "if it still runs, two processes share one name and their leases (give each "
                "its own process_id / INSTANCE_NAME); if not, its jobs are reclaimed when their "
                "leases expire", self.me,
            )  # fmt: skip

    def _lapsed(self) -> None:
        self._proven.clear()
        if self._reprove is None or self._reprove.done():
            self._reprove = asyncio.create_task(self._prove_again(), name="scheduler-holder")

    async def _prove_again(self) -> None:
        """Prove this process alive again after a lapse, until it is (see :meth:`restore`),
        retrying with a backoff."""
        delay = 0.0
        while not self._proven.is_set():
            try:
                await self.restore()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                delay = min(RETRY_MAX, max(0.25, delay * 2))
                log.warning("could not prove %s alive again (%s); retrying", self.me, exc)
                await asyncio.sleep(delay)

    async def restore(self) -> None:
        """If this process's proof lapsed, prove it alive again now (raises when it cannot):
        a new proof replaces the old one if that is still recorded (nobody found this process
        gone meanwhile, so nothing was taken from it); otherwise what it held was taken, and
        every lease it took before is lost (:meth:`intact`). The driver calls it before each
        pass, so a pass after a lapse claims nothing until it worked."""
        liveness, old = self.liveness, self._proof
        if liveness is None or old is None or self._proven.is_set():
            return
        async with self._register_lock:
            if self._proven.is_set():
                return
            proof = await liveness.prove()
            ops = self.store.at(self.clock.time())
            kept = await ops.run(partial(holder_ops.replace, holder=self.me, old=old, new=proof))
            if not kept:
                await ops.run(partial(holder_ops.put, holder=self.me, proof=proof))
                self._broken_before = liveness.epoch
                log.warning(
                    "%s was found gone while its proof had lapsed: the leases it held were "
                    "taken over, and the runs it had started are dropped", self.me,
                )  # fmt: skip
            self._proof = proof
            self._seen_at = self.clock.time()
            self._proven.set()
        log.info("%s proved alive again", self.me)
        self._changed()

    # --- watching the others ------------------------------------------------------------------

    def watch(self) -> None:
        """Check the other holders every ``liveness_interval`` from now on (idempotent)."""
        if self.liveness is None or (self._watch is not None and not self._watch.done()):
            return
        if self.store.hears_others:
            self.store.add_commit_listener(self.poke)
        self._watch = asyncio.create_task(self._watching(), name="scheduler-holders")

    def poke(self) -> None:
        """A commit that changed pending work was heard (this process's or another's,
        a new holder's registration among them): a watch waiting alone looks again."""
        self._poked.set()

    def _alone(self) -> bool:
        """Whether the watch may wait for a commit instead of an interval: this process is
        registered, its last check worked and found no other holder, and the store hears
        the other processes' commits."""
        return (
            self.store.hears_others
            and not self._failing
            and self._proof is not None
            and self._others is not None
            and not self._others
        )

    def sweep_needs_check(self) -> bool:
        """Whether the lease sweep should check the holders: not when the watch, alone,
        waits for a commit to look again and the store hears them now (a new holder's
        registration is such a commit; a lost LISTEN connection pokes it once it is back),
        and this holder's row needs no mark that it was seen. So an idle process alone
        costs the database no transaction for the check."""
        if self.liveness is None:
            return False
        watching = self._watch is not None and not self._watch.done()
        seen_due = self.clock.time() - self._seen_at >= SEEN_EVERY
        return not (watching and self.store.hearing and self._alone() and not seen_due)

    async def start(self) -> None:
        """At the scheduler's start, before its driver claims anything: register (see
        :meth:`register`), take the gone holders' leases (so a restart after a crash finds
        the dead one's work pending), and watch. A proof that cannot be made now (the
        database refuses another connection) is logged and tried again at each check;
        meanwhile this process's leases are only lost when they expire."""
        try:
            await self.register(first=True)
        except Exception as exc:
            log.warning(
                "could not prove this process alive (%s): until it can, its leases are taken "
                "over only when they expire", exc,
            )  # fmt: skip
        try:
            await self.check()
        except Exception as exc:
            log.warning("could not check the other lease holders (%s)", exc)
        self.watch()

    async def _watching(self) -> None:
        while True:
            if self._alone():
                await self._poked.wait()
            await self.clock.sleep(self.settings.liveness_seconds)
            self._poked.clear()  # before the check: a commit during it is heard next time
            try:
                await self.register()
                await self.check()
                if self._failing:
                    log.info("holder checks work again")
                self._failing = False
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not self._failing:
                    log.warning("could not check the other lease holders (%s)", exc)
                self._failing = True

    async def check(self) -> set[str]:
        """Find the other holders that are gone and take their leases from them; the ones
        this call expired. Marks this holder's own row seen now and then."""
        liveness = self.liveness
        if liveness is None:
            return set()
        ops = self.store.at(self.clock.time())
        proofs = await ops.read(holder_ops.proofs)
        await self._seen(proofs.get(self.me))
        others = {h: p for h, p in proofs.items() if h != self.me}
        gone = await liveness.gone(others) if others else set()
        self.stats.holder_checks += 1
        expired = set()
        for holder in sorted(gone):
            report = await self._expire(holder, others[holder])
            if report is not None:
                expired.add(holder)
                log.warning(
                    "lease holder %s is gone: its leases are taken over now; %d of its "
                    "job(s) back to pending, %d failed (their run was lost)",
                    holder, report[0], report[1],
                )  # fmt: skip
        # A holder that left since the last check (found gone by another process, or
        # stopped) freed its keys too: this process's lease shares look at once as well.
        # (A holder found gone that another process expired first left too.)
        left = set() if self._others is None else self._others - set(others)
        self._others = set(others) - gone
        if gone or left:
            self._changed()
        return expired

    async def _seen(self, recorded: str | None) -> None:
        """Mark this holder's row seen once a day; put it back if it was forgotten."""
        proof = self._proof
        if proof is None or not self._proven.is_set():
            return
        now = self.clock.time()
        ops = self.store.at(now)
        if recorded is None:
            # Forgotten as not seen for long (a stepped clock): nobody found it gone, since
            # its proof stands.
            await ops.run(partial(holder_ops.put, holder=self.me, proof=proof))
        elif recorded == proof and now - self._seen_at >= SEEN_EVERY:
            await ops.run(partial(holder_ops.replace, holder=self.me, old=proof, new=proof))
        else:
            return  # (another process under this name recorded its own: it was warned)
        self._seen_at = now

    async def _expire(
        self, holder: str, proof: str, *, found: bool = True
    ) -> tuple[int, int] | None:
        ops = self.store.at(self.clock.time())
        report = await ops.run(
            partial(holder_ops.expire, holder=holder, proof=proof, process=self.me)
        )
        if report is None:
            return None
        if found:
            self.stats.holders_gone += 1
        self.stats.reclaimed(report.requeued, report.failed)
        return report.requeued, report.failed

    # --- stopping -----------------------------------------------------------------------------

    async def stop(self) -> None:
        """Stop watching; give back the named leases this process still holds and forget its
        proof; stop proving it alive. (A job whose run it could not record at its stop keeps
        its lease until it expires, as before.)"""
        self.store.remove_commit_listener(self.poke)
        for task in (self._watch, self._reprove):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._watch = self._reprove = None
        proof, self._proof = self._proof, None
        liveness = self.liveness
        if liveness is None:
            return
        liveness.on_lapse = None
        if proof is not None:
            try:
                ops = self.store.at(self.clock.time())
                await ops.run(partial(holder_ops.retire, holder=self.me, proof=proof))
            except Exception as exc:
                log.warning("could not give back the leases %s still held (%s)", self.me, exc)
        with contextlib.suppress(Exception):
            await liveness.close()
        self._proven.set()
