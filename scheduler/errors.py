"""Every error the scheduler raises derives from :class:`SchedulerError`.

Lookups that find nothing are also :class:`LookupError`; bad arguments are also
:class:`ValueError` (or :class:`TypeError` for values of the wrong type), so callers can
catch them the way they would catch the builtin equivalents.
"""

from __future__ import annotations


class SchedulerError(Exception):
    """Root of every error raised by the scheduler package."""


class NonRetryable(SchedulerError):
    """Raise from a handler to dead-letter the job at once, skipping the remaining retries."""


class RetryLater(SchedulerError):
    """Raise from a handler to fail this attempt as retryable, by the job's retry policy,
    with a one-line log (the message says why) instead of a traceback: for an expected,
    passing failure such as a timeout the handler has already handled."""


class InvalidArgument(SchedulerError, ValueError):
    """An argument to a scheduler API is invalid; nothing was written."""


class NotSerializable(SchedulerError, TypeError):
    """Job arguments, context or a result could not be stored as JSON; nothing was written."""


class UnknownFunction(SchedulerError, LookupError):
    """A function name is not registered (or is registered as the wrong kind)."""


class DuplicateName(SchedulerError, ValueError):
    """A function or schedule name was registered twice."""


class JobNotFound(SchedulerError, LookupError):
    """No job has that id."""


class ScheduleNotFound(SchedulerError, LookupError):
    """No schedule has that name."""


class InvalidSchedule(SchedulerError, ValueError):
    """A cron expression, time zone, interval or schedule option is invalid."""


class StoreError(SchedulerError):
    """The database cannot be used as a scheduler store."""


class StoreUnavailable(StoreError):
    """The database could not be reached to open the store, for now: the server refused or
    dropped the connection, its host name did not resolve, it is starting up or full, or
    the database does not exist yet. The store stayed closed; opening it again later may
    work (an application may wait for its database this way)."""


class StoreMisconfigured(StoreError):
    """The database refused the store's connection settings: a wrong password, an unknown
    role, a client its access rules turn away, a certificate it could not verify, or an
    address or option it cannot use. The store stayed closed; trying again won't help
    until the settings are corrected."""


class NotADatabase(StoreError):
    """The file is not a database of the expected kind; it was left untouched."""


class SchemaTooNew(StoreError):
    """The database was written by a newer schema than this code knows; it was left untouched."""


class MigrationError(StoreError):
    """A migration is missing, edited after it was applied, or failed to apply."""


class SchedulerClosed(SchedulerError):
    """The scheduler is not running (not started yet, or already shut down)."""


class LeaseLost(SchedulerError):
    """An action's run no longer surely holds its job's lease, so it must not act.

    Raised by ``ctx.ensure_lease()`` before a side effect, and how a run is ended when a
    heartbeat finds that the job was reclaimed. The driver discards such a run (its job has
    moved on, or will once the sweep reclaims it) and logs it once, without a traceback.
    """


class JobTimeout(SchedulerError, TimeoutError):
    """A run was still going when its job's timeout (``enqueue(..., timeout=)``, else the
    registration's) ran out: it was cancelled, and the attempt counts as failed (a mutation's
    writes rolled back; retried by the job's retry policy). What the run history records as
    the run's error; a handler sees the cancellation (:class:`asyncio.CancelledError`)."""


class AlreadyDone(SchedulerError):
    """The work of this once key was already done, in this or another process sharing the
    store (see :func:`scheduler.once`), or this block was marked too long ago to be sure it
    was not: the transaction that found it wrote nothing.

    ``key`` is the once key. What an application does with it is to stay quiet: the other
    process that took the key does the work and answers for it."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the work of once key {key!r} was already done")
        self.key = key
