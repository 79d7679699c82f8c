"""The seeded random draws of the operations: the same in every process, on every replay
and every time they are recomputed (unlike ``hash``, which is salted per process)."""

from __future__ import annotations

import hashlib
import random


def stable_seed(key: str) -> int:
    """A PRNG seed derived from ``key`` alone: the same in every process, on every replay
    and every time it is recomputed (unlike ``hash``, which is salted per process)."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def job_seed(job_id: int, attempt: int) -> int:
    """The PRNG seed for a job's attempt: the same in every process and on every replay."""
    return stable_seed(f"{job_id}:{attempt}")


def backoff_delay(job_id: int, attempts: int, initial: float, base: float) -> float:
    """Delay before the next attempt after ``attempts`` earlier failures (plus this one).

    ``raw = initial * base ** (attempts + 1)``, times a jitter in [0.5, 1.0) drawn from the
    job's seeded PRNG, so the whole sequence is reproducible from the job id.
    """
    raw = initial * base ** (attempts + 1)
    return raw * random.Random(job_seed(job_id, attempts)).uniform(0.5, 1.0)  # noqa: S311 (a jitter, not a secret)
