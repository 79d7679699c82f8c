"""The scheduler's settings: its tunables, validated once into a frozen :class:`Settings`
(``sched.settings``), in the units the engine works in (seconds)."""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from datetime import timedelta
from typing import TypedDict

from . import _codec
from .errors import InvalidArgument

PROCESS_ID_LIMIT = 200
"""The longest process id, in characters."""


SERVER_BATCH = 256
"""``batch_size`` and ``max_concurrency`` on a store with many writers (PostgreSQL) unless
given: claims and completions of 256 jobs each keep up with short jobs (no-op throughput
about twice that at 64). On SQLite (one writer) they stay at 64: a larger claim holds the
file longer and the application's own writes wait."""


class Tunables(TypedDict, total=False):
    """The scheduler's tunables, as keywords (see :class:`~scheduler.Scheduler` for their
    meaning and :meth:`Settings.of` for their defaults)."""

    lease: timedelta | float
    lease_margin: timedelta | float | None
    sweep_interval: timedelta | float
    batch_size: int
    max_concurrency: int
    retention: timedelta | float | None
    run_retention: timedelta | float | None
    shutdown_grace: timedelta | float
    process_id: str | None
    liveness_interval: timedelta | float


def default_process_id() -> str:
    """This process's name in the run history: host, pid and a random suffix (a pid is
    reused after a restart, and by processes in different containers of one host)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def _positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(f"{what} must be a positive int, got {value!r}")
    return value


def _optional_seconds(value: timedelta | float | None, what: str) -> float | None:
    return None if value is None else _codec.to_seconds(value, what, sign="positive")


@dataclass(frozen=True, slots=True)
class Settings:
    """What a scheduler was built with, in seconds (see :class:`~scheduler.Scheduler` for
    what each means). Build it with :meth:`of`, which validates the tunables: the fields
    are taken as they are."""

    lease_seconds: float
    lease_margin: float
    sweep_seconds: float
    batch_size: int
    max_concurrency: int
    retention_seconds: float | None
    """None keeps terminal jobs forever."""
    run_retention_seconds: float | None
    """None keeps the run history forever."""
    shutdown_grace: float
    process_id: str
    liveness_seconds: float = 1.0
    """How often the other lease holders' proofs of life are checked (see
    :mod:`scheduler._holders`)."""

    @classmethod
    def of(
        cls,
        *,
        lease: timedelta | float = timedelta(seconds=30),
        lease_margin: timedelta | float | None = None,
        sweep_interval: timedelta | float = timedelta(seconds=30),
        batch_size: int = 64,
        max_concurrency: int = 64,
        retention: timedelta | float | None = timedelta(days=7),
        run_retention: timedelta | float | None = timedelta(days=7),
        shutdown_grace: timedelta | float = timedelta(seconds=10),
        process_id: str | None = None,
        liveness_interval: timedelta | float = timedelta(seconds=1),
    ) -> Settings:
        """The settings of these tunables (the keywords of :class:`Tunables`), each checked:
        :class:`~scheduler.errors.InvalidArgument` names the first that is wrong. The lease
        margin defaults to a fifth of the lease, at most 5 s; the process id to
        :func:`default_process_id`; the batch and the concurrency to 64 (a scheduler on a
        PostgreSQL store gets :data:`SERVER_BATCH` unless given)."""
        batch = _positive_int(batch_size, "batch_size")
        concurrency = _positive_int(max_concurrency, "max_concurrency")
        lease_seconds = _codec.to_seconds(lease, "lease", sign="positive")
        margin = (
            min(5.0, lease_seconds / 5)
            if lease_margin is None
            else _codec.to_seconds(lease_margin, "lease_margin")
        )
        if not 0 <= margin < lease_seconds:
            raise InvalidArgument(
                f"lease_margin must be at least 0 and less than the lease "
                f"({lease_seconds}s), got {lease_margin!r}"
            )
        sweep = _codec.to_seconds(sweep_interval, "sweep_interval", sign="positive")
        keep_jobs = _optional_seconds(retention, "retention")
        keep_runs = _optional_seconds(run_retention, "run_retention")
        grace = _codec.to_seconds(shutdown_grace, "shutdown_grace")
        liveness = _codec.to_seconds(liveness_interval, "liveness_interval", sign="positive")
        if process_id is not None:
            _codec.check_name(process_id, "process_id", PROCESS_ID_LIMIT)
        return cls(
            lease_seconds=lease_seconds,
            lease_margin=margin,
            sweep_seconds=sweep,
            batch_size=batch,
            max_concurrency=concurrency,
            retention_seconds=keep_jobs,
            run_retention_seconds=keep_runs,
            shutdown_grace=grace,
            process_id=default_process_id() if process_id is None else process_id,
            liveness_seconds=liveness,
        )
