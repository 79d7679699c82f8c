"""The scheduler's value types: job states, retry and pacing policies, and the job record."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ._codec import check_name, to_seconds, ts_to_datetime
from .errors import InvalidArgument


class JobState(enum.StrEnum):
    """The six states of a job.

    ``pending`` -> ``in_progress`` -> ``success`` | ``failed``; ``pending`` -> ``canceled``.
    A failed attempt with budget left goes back to ``pending`` with a later ``next_ts``.
    ``held`` is a schedule occurrence waiting for the previous one to end (overlap
    ``buffer_one``, a ``fire_all`` backlog): it becomes ``pending`` when that one ends, due
    at its own time or at once if that has passed; it can be canceled like a pending job.
    """

    PENDING = "pending"
    HELD = "held"
    IN_PROGRESS = "in_progress"
    SUCCESS = "success"
    FAILED = "failed"
    CANCELED = "canceled"

    @property
    def terminal(self) -> bool:
        return self in (JobState.SUCCESS, JobState.FAILED, JobState.CANCELED)


class JobKind(enum.StrEnum):
    """A mutation runs inside a write transaction; an action runs outside and may do I/O."""

    MUTATION = "mutation"
    ACTION = "action"


@dataclass(frozen=True, slots=True)
class Retry:
    """How many times a job may fail, and how long to wait between attempts.

    After the n-th failure (``attempts`` failures before it) the job waits
    ``initial_backoff * base ** (attempts + 1) * uniform(0.5, 1.0)`` seconds, the jitter drawn
    from a PRNG seeded by the job id and attempt, so the sequence is reproducible. When the
    failures reach ``max_failures`` the job is dead-lettered (``failed``).
    """

    max_failures: int = 4
    initial_backoff: timedelta | float = timedelta(seconds=1)
    base: float = 2.0

    def __post_init__(self) -> None:
        if isinstance(self.max_failures, bool) or not isinstance(self.max_failures, int):
            raise InvalidArgument(f"Retry.max_failures must be an int, got {self.max_failures!r}")
        if self.max_failures < 1:
            raise InvalidArgument(
                f"Retry.max_failures must be at least 1 (one attempt), got {self.max_failures}"
            )
        to_seconds(self.initial_backoff, "Retry.initial_backoff", sign="non-negative")
        if isinstance(self.base, bool) or not isinstance(self.base, int | float) or self.base < 1:
            raise InvalidArgument(f"Retry.base must be a number >= 1, got {self.base!r}")

    @property
    def backoff_seconds(self) -> float:
        """``initial_backoff`` in seconds."""
        return to_seconds(self.initial_backoff, "Retry.initial_backoff")


PACE_KEY_LIMIT = 500
"""The longest pace key, in characters."""


@dataclass(frozen=True, slots=True)
class Pace:
    """Jobs that share ``key`` start at least ``spacing`` apart, in due order, in every
    process that shares the store.

    A job waiting for its key's next slot is simply not claimable yet: it holds no lease and
    no worker slot. Each run takes a slot when it starts (a retry or a re-run after a lost
    lease takes a new one); a job canceled before it ran takes none. ``spacing`` is seconds
    (or a ``timedelta``), measured on the lease clock: the database's on PostgreSQL, the
    claiming process's wall clock on SQLite.
    """

    key: str
    spacing: timedelta | float

    def __post_init__(self) -> None:
        check_name(self.key, "Pace.key", PACE_KEY_LIMIT)
        to_seconds(self.spacing, "Pace.spacing", sign="positive")

    @property
    def spacing_seconds(self) -> float:
        """``spacing`` in seconds."""
        return to_seconds(self.spacing, "Pace.spacing")


CONCURRENCY_KEY_LIMIT = 500
"""The longest concurrency key, in characters."""


@dataclass(frozen=True, slots=True)
class Concurrency:
    """At most ``limit`` jobs that share ``key`` are in progress at once, in every process
    that shares the store.

    A job waiting for its turn is simply not claimable yet: it holds no lease and no worker
    slot, and the jobs of one key start in due order. A run holds its place from its claim
    until its outcome is recorded (success, failure, a retry's wait, a lost lease reclaimed:
    a crashed holder's place is freed when the sweep, or the watch over gone holders,
    reclaims its run); the commit that frees a place wakes the drivers (on PostgreSQL in
    every process). ``limit`` is a whole number of at least 1; each job carries its own
    (jobs of one key normally share one). A job takes a pace or a concurrency, not both.
    """

    key: str
    limit: int = 1

    def __post_init__(self) -> None:
        check_name(self.key, "Concurrency.key", CONCURRENCY_KEY_LIMIT)
        if isinstance(self.limit, bool) or not isinstance(self.limit, int):
            raise InvalidArgument(f"Concurrency.limit must be an int, got {self.limit!r}")
        if not 1 <= self.limit <= PRIORITY_LIMIT:
            raise InvalidArgument(
                f"Concurrency.limit must be from 1 to {PRIORITY_LIMIT}, got {self.limit}"
            )


PRIORITY_LIMIT = 2**31 - 1
"""The highest priority (and, negated, about the lowest): what a 32-bit column holds."""


def check_priority(value: object) -> int:
    """``value`` as a job's priority: an int within ``PRIORITY_LIMIT`` either way, else
    :class:`InvalidArgument`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"priority must be an int, got {value!r}")
    if not -PRIORITY_LIMIT <= value <= PRIORITY_LIMIT:
        raise InvalidArgument(
            f"priority must be between {-PRIORITY_LIMIT} and {PRIORITY_LIMIT}, got {value}"
        )
    return value


DEFAULT_MUTATION_RETRY = Retry(max_failures=4)
DEFAULT_ACTION_RETRY = Retry(max_failures=1)


@dataclass(frozen=True, slots=True)
class Job:
    """A job as stored. Times are epoch seconds (UTC); see the ``*_at`` properties for datetimes."""

    id: int
    fn: str
    kind: JobKind
    state: JobState
    next_ts: float
    attempts: int
    max_failures: int
    run_count: int
    lease_expires_at: float | None
    parent_id: int | None
    idempotency_key: str | None
    on_complete: str | None
    name: str | None
    schedule_name: str | None
    fire_ts: float | None
    jitter: float | None
    created_at: float
    updated_at: float
    finished_at: float | None
    args: Any = None
    context: Any = None
    result: Any = None
    error: str | None = None
    pace_key: str | None = None
    """Jobs with one pace key start at least ``pace_spacing`` seconds apart (None: unpaced)."""
    pace_spacing: float | None = None
    priority: int = 0
    """Among due jobs, a higher priority starts first (0 unless the enqueue said)."""
    timeout: float | None = None
    """Seconds a run may take before it is cancelled, as the enqueue said (None: the
    registration's timeout applies, if it has one)."""
    concurrency_key: str | None = None
    """At most ``concurrency_limit`` jobs with this key run at once (None: no limit)."""
    concurrency_limit: int | None = None

    @property
    def next_at(self) -> datetime:
        """``next_ts`` as an aware UTC datetime: when it is due next."""
        return ts_to_datetime(self.next_ts)

    @property
    def created(self) -> datetime:
        """``created_at`` as an aware UTC datetime."""
        return ts_to_datetime(self.created_at)

    @property
    def finished(self) -> datetime | None:
        """``finished_at`` as an aware UTC datetime (None while it is not terminal)."""
        return None if self.finished_at is None else ts_to_datetime(self.finished_at)


@dataclass(frozen=True, slots=True)
class JobInfo:
    """What a running handler knows about its own job (``ctx.job``)."""

    id: int
    fn: str
    kind: JobKind
    attempt: int
    """Failed attempts before this one (0 on the first run)."""
    run_count: int
    """How many times the job has been claimed, this run included (the lease fence)."""
    name: str | None
    schedule_name: str | None
    fire_ts: float | None
    max_failures: int
    priority: int = 0
    """The job's priority (see ``enqueue``)."""

    @property
    def fire_time(self) -> datetime | None:
        """For a schedule occurrence, the nominal fire time it stands for."""
        return None if self.fire_ts is None else ts_to_datetime(self.fire_ts)


class RunOutcome(enum.StrEnum):
    """How one run (one attempt of a job) ended, as the run history records it."""

    SUCCESS = "success"
    """The handler returned; the job succeeded."""
    RETRY = "retry"
    """The handler failed with retry budget left: the job runs again after its backoff."""
    FAILED = "failed"
    """The run failed for good (no budget left, or an error that would fail the same way
    again, or interrupted by shutdown): the job is dead-lettered."""
    RELEASED = "released"
    """Stopped before it could have had an effect (rolled back, or an idempotent action
    stopped at shutdown): the job is pending again, no attempt counted."""
    DISCARDED = "discarded"
    """The run stopped because it could no longer be sure of its lease: the job was handed
    back (retried now if budget is left, failed otherwise)."""
    LEASE_LOST = "lease_lost"
    """The run's lease expired (its process crashed or stalled) and the sweep reclaimed the
    job: back to pending with the attempt counted, or failed."""


@dataclass(frozen=True, slots=True)
class Run:
    """One attempt of a job, from the run history (``sched.runs(...)``). Times are epoch
    seconds (UTC); ``attempt`` is the failed attempts before this run (0 on the first), as
    ``ctx.job.attempt``."""

    id: int
    job_id: int
    fn: str
    attempt: int
    run_count: int
    due_ts: float
    started_at: float | None
    finished_at: float
    outcome: RunOutcome
    error: str | None
    process: str | None

    @property
    def lateness(self) -> float | None:
        """Seconds from when the job was due to when the run began (None if not known)."""
        return None if self.started_at is None else self.started_at - self.due_ts

    @property
    def duration(self) -> float | None:
        """Seconds from the run's start to its recorded outcome (None if not known)."""
        return None if self.started_at is None else self.finished_at - self.started_at

    @property
    def due(self) -> datetime:
        """``due_ts`` as an aware UTC datetime."""
        return ts_to_datetime(self.due_ts)

    @property
    def started(self) -> datetime | None:
        """``started_at`` as an aware UTC datetime (None if not known)."""
        return None if self.started_at is None else ts_to_datetime(self.started_at)

    @property
    def finished(self) -> datetime:
        """``finished_at`` as an aware UTC datetime."""
        return ts_to_datetime(self.finished_at)
