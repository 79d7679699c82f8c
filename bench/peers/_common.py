"""What every peer shares: process memory and CPU readings, a completion counter."""

from __future__ import annotations

import asyncio
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path


def proc_status_kib(key: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``), or None off Linux."""
    try:
        text = Path("/proc/self/status").read_text("ascii")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return None


def rss_mb() -> float:
    """The resident set size now, in MB (1 MB = 2**20 bytes)."""
    kib = proc_status_kib("VmRSS")
    if kib is None:  # no /proc: the peak is the best we have
        return peak_rss_mb()
    return kib / 1024


def peak_rss_mb() -> float:
    """The peak resident set size of this process so far, in MB (``ru_maxrss`` is KiB on
    Linux)."""
    kib = proc_status_kib("VmHWM")
    if kib is None:
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / 1024


@dataclass
class Counter:
    """Counts completions; ``done`` is set at the ``n``-th, so nobody polls for the end."""

    n: int
    count: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def hit(self) -> None:
        self.count += 1
        if self.count == self.n:
            self.done.set()


@dataclass
class Lateness:
    """Records ``time.time() - due`` for each run; ``done`` is set at the ``n``-th."""

    n: int
    late: list[float] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def record(self, due: float) -> None:
        self.late.append(time.time() - due)
        if len(self.late) == self.n:
            self.done.set()


class LeadTooShort(RuntimeError):
    """Enqueueing the lateness jobs took longer than the lead time before the first was due;
    the caller retries with a longer lead."""


async def cpu_over(window: float) -> dict[str, float]:
    """CPU seconds this process used (all threads) while sleeping ``window`` seconds on the
    event loop, with the wall time it took."""
    c0, w0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(window)
    c1, w1 = time.process_time(), time.perf_counter()
    cpu = c1 - c0
    return {"cpu_s": cpu, "wall_s": w1 - w0, "cpu_per_20s": cpu * 20.0 / (w1 - w0)}
