"""Scheduler operations the tests run on a store directly (``store.at(now).run(op)``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler._ops.jobs import enqueue

if TYPE_CHECKING:
    from collections.abc import Callable

    from scheduler.store_types import NewJob, Op, OpState


def enqueue_all(jobs: list[NewJob]) -> Callable[[OpState], Op[list[int]]]:
    """One operation (one transaction) enqueuing every job of ``jobs``; returns their ids."""

    def op(st: OpState) -> Op[list[int]]:
        ids: list[int] = []
        for j in jobs:
            ids.append((yield from enqueue(st, j)))
        return ids

    return op
