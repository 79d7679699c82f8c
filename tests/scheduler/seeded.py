"""What the scheduler's seeded draws must be, worked out here with ``hashlib`` and ``random``
from the formulas the scheduler documents, never through ``scheduler._ops.seeds`` (a test
that asks the code under test for its expected value cannot fail).

* A seed is the first 8 bytes of the BLAKE2b digest of a key, read big-endian, and the draw
  is ``random.Random(seed)``'s: the same in every process and on every replay.
* A job's attempt is keyed ``"<job id>:<attempt>"`` (``ctx.random``, the backoff's jitter).
* A schedule's occurrence is keyed ``"<name>:<fire time, repr of the epoch seconds>"``; its
  jitter is ``uniform(0, jitter)``.
* Backoff after ``attempts`` earlier failures: ``initial * base ** (attempts + 1)`` times
  ``uniform(0.5, 1.0)`` of the attempt's draw.

``tests/scheduler/test_seeds.py`` pins a few of these values as literals, so a change of
formula (which would change the draws of jobs stored before an upgrade) is seen too.
"""

from __future__ import annotations

import hashlib
import random


def seeded(key: str) -> random.Random:
    """The PRNG the scheduler seeds from ``key``."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


def attempt_random(job_id: int, attempt: int) -> random.Random:
    """The PRNG of a job's attempt (``ctx.random``; the backoff's jitter)."""
    return seeded(f"{job_id}:{attempt}")


def expected_backoff(job_id: int, attempts: int, initial: float, base: float) -> float:
    """The delay before the next attempt after ``attempts`` earlier failures."""
    return initial * base ** (attempts + 1) * attempt_random(job_id, attempts).uniform(0.5, 1.0)


def expected_jitter(name: str, fire_ts: float, jitter: float) -> float:
    """The delay of schedule ``name``'s occurrence at ``fire_ts`` (epoch seconds)."""
    return seeded(f"{name}:{fire_ts!r}").uniform(0.0, jitter)
