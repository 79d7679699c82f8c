"""A repeat rule as read (:class:`RepeatRule`), the scheduler trigger it stands for, and the
times it gives."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from scheduler.triggers import Cron, DateStep, Interval

from .skips import Skip, excluded_spans, wall_spans

_ONE_US = timedelta(microseconds=1)

RepeatKind = Literal["cron", "interval"]


def repeat_kind(stored: str) -> RepeatKind:
    """A stored rule's kind; ValueError for a kind no version of crier writes."""
    if stored == "cron":
        return "cron"
    if stored == "interval":
        return "interval"
    raise ValueError(f"unknown repeat kind {stored!r} (expected 'cron' or 'interval')")


@dataclass(frozen=True, slots=True)
class RepeatRule:
    """How an announcement repeats after its first occurrence.

    ``kind == "cron"``: ``cron`` is a 5-field expression evaluated in the announcement's
    zone and ``every`` is ``None``; ``nth`` and ``step`` narrow its dates as
    :class:`scheduler.triggers.Cron` reads them (the 2nd and 4th Thursday, every other week
    from a date). ``kind == "interval"``: ``every`` is the exact period, anchored at the
    first occurrence, and ``cron`` is ``None``. ``words`` describes the rule for people,
    e.g. ``"every day at 09:00 (Europe/London)"`` or ``"every 2 hours"``. ``skips``: the
    spans of local wall time it does not post in (``/skip``), part of the trigger it makes,
    so the scheduler never fires them.
    """

    kind: RepeatKind
    cron: str | None
    every: timedelta | None
    words: str
    nth: tuple[int, ...] = ()
    step: DateStep | None = None
    skips: tuple[Skip, ...] = ()

    def __post_init__(self) -> None:
        if (
            (self.kind == "cron") != (self.cron is not None)
            or (self.cron is None) == (self.every is None)
            or (self.kind == "interval" and (self.nth or self.step is not None))
        ):
            raise ValueError(f"inconsistent RepeatRule: {self!r}")

    def trigger(self, tz: ZoneInfo, first: datetime) -> Cron | Interval:
        """The scheduler's trigger for this rule in zone ``tz`` (an interval is anchored at
        ``first``), its skipped spans excluded."""
        exclude = excluded_spans(self.skips, tz)
        if self.every is not None:
            return Interval(self.every, first, exclude=exclude)
        if self.cron is None:
            raise RuntimeError("a cron rule has its expression")
        return Cron(self.cron, tz, nth=self.nth or None, step=self.step, exclude=exclude)

    def schedule_spec(
        self, tz_name: str, first: datetime
    ) -> tuple[str | timedelta | Cron | Interval, str | None]:
        """The ``(spec, tz)`` pair ``ctx.scheduler.schedules.create`` takes for this rule
        (starting at ``first``): a cron text with its zone, an interval without one, or the
        trigger itself when five fields or a period can't say the rule (``nth``, ``step``,
        skipped spans)."""
        if self.skips:
            return self.trigger(ZoneInfo(tz_name), first), None
        if self.every is not None:
            return self.every, None
        if self.cron is None:
            raise RuntimeError("a cron rule has its expression")
        if self.nth or self.step is not None:
            return Cron(self.cron, tz_name, nth=self.nth or None, step=self.step), None
        return self.cron, tz_name


def next_times(rule: RepeatRule, start: datetime, tz: ZoneInfo, count: int = 3) -> list[datetime]:
    """The first ``count`` times the rule posts, from ``start`` on (``start`` itself
    included if it is one): what the schedule created with ``start`` will do."""
    trigger = rule.trigger(tz, start)
    times: list[datetime] = []
    t = start - _ONE_US
    for _ in range(count):
        t = trigger.next_after(t)
        times.append(t)
    return times


def kept_skips(
    rule: RepeatRule, skips: tuple[Skip, ...], tz: ZoneInfo, first: datetime
) -> RepeatRule:
    """``rule`` with those of ``skips`` that hold one of its occurrences (an edit of the
    rule keeps the announcement's skipped dates that still mean something: a skipped
    18:00 is dropped when the rule moves to 19:00, a skipped day is kept)."""
    plain = RepeatRule(rule.kind, rule.cron, rule.every, rule.words, rule.nth, rule.step)
    trigger = plain.trigger(tz, first)
    kept = []
    for skip in skips:
        for lo, hi in wall_spans(skip, tz):
            try:
                if trigger.next_after(lo - _ONE_US) <= hi:
                    kept.append(skip)
                    break
            except OverflowError:
                break
    return RepeatRule(
        rule.kind, rule.cron, rule.every, rule.words, rule.nth, rule.step, tuple(kept)
    )
