"""What the PostgreSQL peers share (``bench/pg_compare.py``): the idle window's protocol with
the parent, and the check that a lateness run's enqueueing fit in its lead time."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TYPE_CHECKING

from bench.peers._common import LeadTooShort

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

ACTION = "bench_noop"
"""The no-op job's name, in every peer."""
LATE = "bench_late"
"""The lateness job's name: it records ``time.time()`` minus its due time (in its args)."""
PARKED = 3600.0
"""How far out the idle section's pending jobs are due."""
BATCH = 100
"""Jobs per enqueue call (and transaction) wherever a peer has a batch API."""


async def idle_window(stop: Callable[[], Awaitable[None]] | None = None) -> dict[str, float]:
    """The peer is running with its pending jobs: say ``READY`` and then answer the parent,
    line by line on stdin: ``mark`` -> ``CPU <process_time> <perf_counter>`` (this process's
    CPU, all threads); ``stop`` -> return (the caller stops the peer). So the parent times
    the window, and reads the database's side, at the same instants."""
    loop = asyncio.get_running_loop()
    print("READY", flush=True)
    marks: list[tuple[float, float]] = []
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if line == "mark":
            marks.append((time.process_time(), time.perf_counter()))
            print(f"CPU {marks[-1][0]!r} {marks[-1][1]!r}", flush=True)
        elif line in ("stop", ""):
            break
    if stop is not None:
        await stop()
    if len(marks) < 2:
        return {"cpu_s": float("nan"), "wall_s": float("nan")}
    (c0, w0), (c1, w1) = marks[0], marks[-1]
    return {"cpu_s": c1 - c0, "wall_s": w1 - w0}


async def until(check: Callable[[], Awaitable[bool]], within: float = 120.0) -> None:
    """Ask ``check`` every 10 ms until it says yes: for what a peer writes after its handler
    returned (the outcome), which no event announces. The figures are read from the
    database's own times, not from when this saw them."""
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not done within {within:g} s")
        await asyncio.sleep(0.01)


def check_lead(first_due: float) -> None:
    """Raise :class:`LeadTooShort` if enqueueing ran past the first job's due time."""
    if time.time() >= first_due:
        raise LeadTooShort("enqueueing took longer than the lead time")


def due_times(n: int, span: float, lead: float) -> list[float]:
    """``n`` due times spread evenly over ``span`` seconds, the first ``lead`` from now."""
    first = time.time() + lead
    step = span / n
    return [first + i * step for i in range(n)]
