"""Small statistics helpers for the benchmarks: medians with their spread, percentiles."""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence


@dataclass(frozen=True, slots=True)
class Summary:
    """Several runs of one measurement: the median, with min and max to show the spread."""

    median: float
    min: float
    max: float
    values: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.values)

    def as_dict(self) -> dict[str, Any]:
        return {
            "median": self.median,
            "min": self.min,
            "max": self.max,
            "runs": list(self.values),
        }

    def scaled(self, factor: float) -> Summary:
        """The same runs in another unit (e.g. seconds to milliseconds)."""
        return summarize(v * factor for v in self.values)

    def show(self, unit: str = "", digits: int = 0) -> str:
        """``1234 jobs/s (min 1200, max 1300, 5 runs)``."""
        u = f" {unit}" if unit else ""
        if self.n == 1:
            return f"{self.median:,.{digits}f}{u} (1 run)"
        return (
            f"{self.median:,.{digits}f}{u} "
            f"(min {self.min:,.{digits}f}, max {self.max:,.{digits}f}, {self.n} runs)"
        )


def summarize(values: Iterable[float]) -> Summary:
    vals = tuple(float(v) for v in values)
    if not vals:
        raise ValueError("nothing to summarize")
    return Summary(statistics.median(vals), min(vals), max(vals), vals)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100), interpolating between the closest ranks."""
    if not values:
        raise ValueError("no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = math.ceil(pos)
    if lo == hi:
        return ordered[lo]
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def ratio(num: float, den: float) -> float:
    return math.inf if den == 0 else num / den


# --- output shared by the benchmarks -----------------------------------------------------


def log(msg: str) -> None:
    """Progress, on stderr (the results go to stdout)."""
    print(msg, file=sys.stderr, flush=True)


def out(msg: str = "") -> None:
    print(msg, flush=True)


def print_aims(aims: list[dict[str, Any]]) -> None:
    out("\n== Aims (informational; the exit code is 0 either way)")
    for a in aims:
        mark = "PASS" if a["pass"] else "MISS"
        out(f"   {mark}  {a['aim']}: {a['shown']} (aim {a['target']})")


def to_jsonable(value: Any) -> Any:
    """Results as JSON-able data (summaries become dicts)."""
    if isinstance(value, Summary):
        return value.as_dict()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    return value
