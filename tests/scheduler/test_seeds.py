"""The scheduler's seeded draws, pinned: a job's attempt, its backoff and an occurrence's
jitter are the same values in every process, on every replay and in every release (a
different formula would change the draws of the jobs a database already holds).

The literals were computed once with hashlib and random directly (the formulas of
``tests/scheduler/seeded.py``):
``hashlib.blake2b(b"1:0", digest_size=8).hexdigest()`` is ``5249a89af592057b``, and
``random.Random(int("5249a89af592057b", 16))`` draws ``random()`` = 0.023385386520315077;
the backoffs are ``2 * 3 ** (n + 1) * Random(seed of "1:n").uniform(0.5, 1.0)`` and the
jitters ``Random(seed of "d:1906549200.0").uniform(0, 1800)`` (13:00 UTC on 2030-06-01) and
``Random(seed of "d:0.5").uniform(0, 1800)``. ``random.Random`` seeded with an int draws the
same sequence on every Python 3 release."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from scheduler._ops.schedules import jitter_offset
from scheduler._ops.seeds import backoff_delay, job_seed
from tests.scheduler.seeded import attempt_random, expected_backoff, expected_jitter

SEED_1_0 = 0x5249A89AF592057B
FIRST_DRAW_1_0 = 0.023385386520315077
BACKOFFS_1 = [3.0701561595609452, 12.11085547491388, 27.43710878629883]
"""Job 1's delays after 1, 2 and 3 failures, with initial 2 s and base 3."""
AT_13H = datetime(2030, 6, 1, 13, 0, tzinfo=UTC).timestamp()
JITTER_D_13H = 1653.1612898237995
JITTER_D_HALF_SECOND = 1764.015111729631


def test_a_jobs_attempt_is_seeded_from_its_id_and_attempt() -> None:
    assert job_seed(1, 0) == SEED_1_0
    assert random.Random(job_seed(1, 0)).random() == FIRST_DRAW_1_0
    assert attempt_random(1, 0).random() == FIRST_DRAW_1_0  # the helpers agree
    assert job_seed(1, 1) != job_seed(1, 0) != job_seed(2, 0)


def test_the_backoff_is_pinned() -> None:
    assert [backoff_delay(1, n, 2.0, 3.0) for n in range(3)] == BACKOFFS_1
    assert [expected_backoff(1, n, 2.0, 3.0) for n in range(3)] == BACKOFFS_1


@pytest.mark.parametrize(
    ("fire_ts", "expected"), [(AT_13H, JITTER_D_13H), (0.5, JITTER_D_HALF_SECOND)]
)
def test_an_occurrences_jitter_is_pinned(fire_ts: float, expected: float) -> None:
    assert jitter_offset("d", fire_ts, 1800.0) == expected
    assert expected_jitter("d", fire_ts, 1800.0) == expected
    assert jitter_offset("d", fire_ts, 0.0) == 0.0  # no jitter asked: none drawn
