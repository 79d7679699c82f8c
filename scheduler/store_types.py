"""The types the store interface speaks: public, for store authors and benchmarks.

A store runs *operations*: generators that yield :class:`Q` (a named query and its
parameters), receive its result, and share one :class:`OpState` per transaction. Jobs go in
as :class:`NewJob`, come out of a claim as :class:`ClaimedJob` (in a :class:`Claim`) and go
back as :class:`Outcome`; the sweep and completions answer with reports. Schedules go in as
:class:`ScheduleDef` and come out as :class:`ScheduleRow`; what their rows name is resolved
by the store's :class:`Resolver`, which every :class:`OpState` carries.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, Protocol, TypeVar

from ._codec import optional_float
from ._resolver import Resolver as Resolver
from ._resolver import Target as Target
from ._resolver import Trigger as Trigger
from .models import JobKind, RunOutcome

T = TypeVar("T")
Fetch = Literal["all", "one", "none", "many"]

# --- operations ----------------------------------------------------------------------------

Params = Mapping[str, Any]
"""A query's parameters by name (``{"job_id": 7}`` for ``:job_id``)."""


class Row(Protocol):
    """A result row as the ops read it: by column name (``sqlite3.Row``, ``asyncpg.Record``)."""

    def __getitem__(self, column: str, /) -> Any: ...


@dataclass(frozen=True, slots=True)
class Q:
    """A named query with its parameters by name: ``fetch`` says whether the result is all
    rows, one row (or None), or the number of rows changed; ``"many"`` runs it once per
    mapping in ``params`` (a sequence of them: an executemany) and gives the number of rows
    changed. Rows are read by column name (``row["next_ts"]``)."""

    name: str
    params: Params | Sequence[Params] = field(default_factory=dict)
    fetch: Fetch = "none"


@dataclass(slots=True)
class OpState:
    """Per-transaction state shared by the operations that run in it."""

    now: float
    resolver: Resolver
    """How the operations resolve what schedule rows name: the store's."""
    wake: bool = False
    """Set when the transaction changed the set of pending jobs: the driver must look again."""
    finished_schedules: set[str] = field(default_factory=set)
    """Schedules whose occurrence reached a terminal state in this transaction."""
    ended: list[int] | None = None
    """The jobs that reached a terminal state (success, failed, canceled) in this
    transaction, in order (None: none did): after the commit the store tells its end
    listeners, which wake whoever awaits those jobs' results (see :meth:`end`)."""
    lease_offset: float = 0.0
    """How far the lease clock is ahead of ``now``'s clock, in seconds.

    The coordination stamps that processes compare with each other (a claim's lease, a
    heartbeat, the sweep's test for an expired lease, named leases and lease groups, pace
    slots, once keys' expiry) are written and compared on the *lease clock*; everything
    else (due times, schedules, the run history) on ``now``'s, the application's. A store
    on a database with a clock of its own (PostgreSQL) sets this to how far that clock is
    ahead of this process's, so every process stamps by the database's clock whatever its
    own says; on SQLite (one machine) it is 0."""

    def end(self, job_id: int) -> None:
        """Record that ``job_id`` reached a terminal state in this transaction."""
        if self.ended is None:
            self.ended = [job_id]
        else:
            self.ended.append(job_id)

    @property
    def lease_now(self) -> float:
        """Now on the lease clock (see :attr:`lease_offset`)."""
        return self.now + self.lease_offset

    def on_lease_clock(self, ts: float) -> float:
        """``ts`` (epoch seconds on ``now``'s clock, e.g. a lease's end the driver worked out
        from its clock) on the lease clock."""
        return ts + self.lease_offset

    def off_lease_clock(self, ts: float) -> float:
        """``ts`` read from the lease clock (a lease's expiry, a pace slot) on ``now``'s."""
        return ts - self.lease_offset


Op = Generator[Q, Any, T]
"""An operation: yields queries, receives their results, returns a ``T``."""

# --- jobs ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewJob:
    """A validated job, ready to insert."""

    fn: str
    kind: JobKind
    next_ts: float
    max_failures: int
    initial_backoff: float
    backoff_base: float
    idempotent: bool
    args_json: str
    context_type: str | None = None
    context: bytes | None = None
    idempotency_key: str | None = None
    on_complete: str | None = None
    name: str | None = None
    parent_id: int | None = None
    schedule_name: str | None = None
    fire_ts: float | None = None
    jitter: float | None = None
    pace_key: str | None = None
    """Jobs with one pace key start at least ``pace_spacing`` seconds apart (None: unpaced)."""
    pace_spacing: float | None = None
    priority: int = 0
    """Among due jobs, a higher priority starts first."""
    timeout: float | None = None
    """Seconds a run may take before it is cancelled (None: the registration's, if any)."""
    concurrency_key: str | None = None
    """At most ``concurrency_limit`` jobs with this key in progress at once (None: no limit)."""
    concurrency_limit: int | None = None


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """A job this process now holds a lease on."""

    id: int
    fn: str
    kind: JobKind
    attempts: int
    max_failures: int
    initial_backoff: float
    backoff_base: float
    run_count: int
    next_ts: float
    on_complete: str | None
    name: str | None
    idempotent: bool
    schedule_name: str | None
    fire_ts: float | None
    args: Any
    priority: int = 0
    timeout: float | None = None
    """The job's own timeout in seconds (None: the registration's, if any)."""
    concurrency_key: str | None = None
    """Its concurrency key: its end frees a place of that key (None: no limit)."""


@dataclass(frozen=True, slots=True)
class Claim:
    jobs: list[ClaimedJob]
    next_due: float | None
    """The earliest pending ``next_ts`` after the claim (None if nothing is pending)."""
    next_tick: float | None = None
    """The earliest ``next_fire_ts`` of an active schedule (None if there is none)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one claimed run ended.

    ``release`` puts the job back to pending without counting an attempt (the run was
    stopped before it could have had an effect, e.g. at shutdown). ``discarded`` marks a
    failure that is the run giving up its lease (recorded as such in the run history).
    """

    job: ClaimedJob
    ok: bool
    value_json: str | None = None
    error: str | None = None
    retryable: bool = True
    release: bool = False
    discarded: bool = False

    @property
    def run_outcome(self) -> RunOutcome:
        """What the run history records for this run."""
        if self.release:
            return RunOutcome.RELEASED
        if self.ok:
            return RunOutcome.SUCCESS
        if self.discarded:
            return RunOutcome.DISCARDED
        if self.retryable and self.job.attempts + 1 < self.job.max_failures:
            return RunOutcome.RETRY
        return RunOutcome.FAILED


@dataclass(frozen=True, slots=True)
class ReclaimReport:
    requeued: int = 0
    failed: int = 0


@dataclass(frozen=True, slots=True)
class CompletionReport:
    applied: int
    stale: int
    """Outcomes whose job had moved on (lease lost, reclaimed): discarded, fenced by run count."""
    outcomes: Mapping[RunOutcome, int] = field(default_factory=dict)
    """The applied outcomes by what the run history recorded for them."""


@dataclass(frozen=True, slots=True)
class StoreGauges:
    """What the store holds now, for metrics: each count bounded by the cap it was read
    with (a count at the cap means "at least that many")."""

    active: Mapping[str, int]
    """Jobs by active state (``pending``, ``held``, ``in_progress``)."""
    due: int
    """Pending jobs that could start now, not yet claimed (the backlog): due unpaced jobs,
    and the first pending job of each pace key whose slot is open."""
    oldest_due: float | None
    """Since when the longest-waiting job of the backlog could have started: its due time,
    or for a paced job the later of that and its slot (None when the backlog is empty)."""
    paced_waiting: int
    """Due paced jobs that wait for their key's slot (kept to their spacing: not backlog)."""
    schedules: int
    schedule_missed: int
    """Fire times every schedule's catch-up policy dropped, added up."""
    schedule_skipped: int
    """Fire times every schedule's overlap policy skipped, added up."""
    limited_waiting: int = 0
    """Due jobs that wait for a place under their concurrency key's limit (not backlog)."""


# --- schedules -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduleDef:
    """A validated schedule definition, ready to write."""

    name: str
    source: Literal["static", "runtime"]
    trigger: Trigger
    target: Target
    args_json: str
    overlap: str
    catch_up: str
    catchup_window: float
    jitter: float
    pace_key: str | None = None
    """The pace every occurrence carries (None: unpaced)."""
    pace_spacing: float | None = None

    @cached_property
    def spec_json(self) -> str:
        return json.dumps(self.trigger.to_spec(), sort_keys=True)

    @cached_property
    def fingerprint(self) -> str:
        """What reconciliation compares: everything but an interval's anchor (its phase)."""
        spec = self.trigger.to_spec()
        spec.pop("anchor", None)
        parts: tuple[str, ...] = (
            json.dumps(spec, sort_keys=True),
            self.target.fn,
            self.args_json,
            self.overlap,
            self.catch_up,
            repr(self.catchup_window),
            repr(self.jitter),
        )
        if self.pace_key is not None:  # unpaced schedules keep the fingerprints they had
            parts += (self.pace_key, repr(self.pace_spacing))
        return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class ScheduleRow:
    name: str
    source: str
    trigger_spec: str
    target: Target
    args_json: str
    overlap: str
    catch_up: str
    catchup_window: float
    jitter: float
    paused: bool
    next_fire_ts: float | None
    last_fire_ts: float | None
    skipped: int
    missed: int
    fingerprint: str
    last_error: str | None
    created_at: float
    updated_at: float
    pace_key: str | None = None
    pace_spacing: float | None = None

    @classmethod
    def of(cls, r: Row) -> ScheduleRow:
        """A schedule from a ``get_schedule`` / ``list_schedules`` / ``due_schedules`` row."""
        return cls(
            name=r["name"],
            source=r["source"],
            trigger_spec=r["trigger_spec"],
            target=Target(
                fn=r["fn"],
                kind=JobKind(r["kind"]),
                idempotent=bool(r["idempotent"]),
                max_failures=int(r["max_failures"]),
                initial_backoff=float(r["initial_backoff"]),
                backoff_base=float(r["backoff_base"]),
            ),
            args_json=r["args"],
            overlap=r["overlap"],
            catch_up=r["catch_up"],
            catchup_window=float(r["catchup_window"]),
            jitter=float(r["jitter"]),
            paused=bool(r["paused"]),
            next_fire_ts=optional_float(r["next_fire_ts"]),
            last_fire_ts=optional_float(r["last_fire_ts"]),
            skipped=int(r["skipped"]),
            missed=int(r["missed"]),
            fingerprint=r["fingerprint"],
            last_error=r["last_error"],
            created_at=float(r["created_at"]),
            updated_at=float(r["updated_at"]),
            pace_key=r["pace_key"],
            pace_spacing=optional_float(r["pace_spacing"]),
        )


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    """What a reconciliation of the static schedules did, by name."""

    added: list[str]
    changed: list[str]
    removed: list[str]
    unchanged: int
