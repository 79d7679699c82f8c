"""A durable job scheduler that lives in the application's own database.

Jobs are rows; a mutation's writes and its completion commit together; actions run outside
transactions under a lease; a driver wakes on commit and on one timer, with a lease sweep as
the only polling. Its README (the ``crier-scheduler`` distribution's description,
``packaging/scheduler/README.md`` in the repository) shows it in use.
"""

from typing import TYPE_CHECKING, Any

from ._engine import JobRequest
from ._lanes import interactive, is_interactive, set_interactive
from ._once import once, set_once
from ._scheduler import Scheduler
from .abc import Cursor, Db, Store
from .clock import Clock, SystemClock
from .context import ActionContext, TransactionContext
from .crons import CronJobs, cron_jobs
from .errors import (
    AlreadyDone,
    DuplicateName,
    InvalidArgument,
    InvalidSchedule,
    JobNotFound,
    JobTimeout,
    LeaseLost,
    MigrationError,
    NonRetryable,
    NotADatabase,
    NotSerializable,
    RetryLater,
    ScheduleNotFound,
    SchedulerClosed,
    SchedulerError,
    SchemaTooNew,
    StoreError,
    StoreMisconfigured,
    StoreUnavailable,
    UnknownFunction,
)
from .leases import Leases, LeaseShare
from .migrations import MigrationSet
from .models import Concurrency, Job, JobInfo, JobKind, JobState, Pace, Retry, Run, RunOutcome
from .registry import Registry
from .schedules import ScheduleInfo, ScheduleRequest
from .settings import Settings
from .stats import SchedulerStats
from .stores.sqlite import SqliteStore
from .triggers import Cron, Interval

if TYPE_CHECKING:
    from .stores.postgres import PostgresStore as PostgresStore

__all__ = [
    "ActionContext",
    "AlreadyDone",
    "Clock",
    "Concurrency",
    "Cron",
    "CronJobs",
    "Cursor",
    "Db",
    "DuplicateName",
    "Interval",
    "InvalidArgument",
    "InvalidSchedule",
    "Job",
    "JobInfo",
    "JobKind",
    "JobNotFound",
    "JobRequest",
    "JobState",
    "JobTimeout",
    "LeaseLost",
    "LeaseShare",
    "Leases",
    "MigrationError",
    "MigrationSet",
    "NonRetryable",
    "NotADatabase",
    "NotSerializable",
    "Pace",
    "Registry",
    "Retry",
    "RetryLater",
    "Run",
    "RunOutcome",
    "ScheduleInfo",
    "ScheduleNotFound",
    "ScheduleRequest",
    "Scheduler",
    "SchedulerClosed",
    "SchedulerError",
    "SchedulerStats",
    "SchemaTooNew",
    "Settings",
    "SqliteStore",
    "Store",
    "StoreError",
    "StoreMisconfigured",
    "StoreUnavailable",
    "SystemClock",
    "TransactionContext",
    "UnknownFunction",
    "cron_jobs",
    "interactive",
    "is_interactive",
    "once",
    "set_interactive",
    "set_once",
]


def __getattr__(name: str) -> Any:
    # PostgresStore needs asyncpg (the ``postgres`` extra): import it only when asked for,
    # so SQLite users never need it. (Not in __all__, so a star import never needs it either.)
    if name == "PostgresStore":
        from .stores.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
