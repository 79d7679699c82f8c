"""What a store's operations need from the application to act on a schedule row: the trigger
its stored spec describes, and what its function is in the registry of this process.

A store holds one :class:`Resolver` (``store.resolver``); a :class:`~scheduler.Scheduler`
hands the store its own, on its registry, when it starts, so no store method takes one.
A resolver without a registry knows no function (what the command line uses: it imports no
application code); every occurrence then runs the target stored with its schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

from .models import JobKind
from .registry import Registry
from .triggers import Cron, Interval, trigger_from_json

Trigger = Cron | Interval


@dataclass(frozen=True, slots=True)
class Target:
    """What an occurrence runs, resolved against the registry when the schedule is written."""

    fn: str
    kind: JobKind
    idempotent: bool
    max_failures: int
    initial_backoff: float
    backoff_base: float
    concurrency_key: str | None = None
    """The registration's concurrency, which every occurrence carries (None: none)."""
    concurrency_limit: int | None = None


class Resolver:
    """A stored trigger spec to its trigger (each spec parsed once), and a function name to
    its registration's :class:`Target` in ``registry`` (none: no function is known)."""

    __slots__ = ("_registry", "_triggers")

    def __init__(self, registry: Registry | None = None) -> None:
        self._registry = Registry() if registry is None else registry
        self._triggers: dict[str, Trigger] = {}

    def trigger(self, spec_json: str) -> Trigger:
        """The trigger a schedule row stores as ``spec_json`` (parsed once per spec);
        :class:`~scheduler.errors.InvalidSchedule` if this code cannot read it."""
        trig = self._triggers.get(spec_json)
        if trig is None:
            trig = self._triggers[spec_json] = trigger_from_json(spec_json)
        return trig

    def target(self, fn: str) -> Target:
        """What a schedule of ``fn`` runs, from its registration
        (:class:`~scheduler.errors.UnknownFunction` if ``fn`` is not registered): the
        registration's own name, also when ``fn`` is an alias of it (so the occurrences of
        a schedule stored under an old name run under the new one)."""
        reg = self._registry.get(fn)
        conc = reg.concurrency
        return Target(
            fn=reg.name,
            kind=reg.kind,
            idempotent=reg.idempotent,
            max_failures=reg.retry.max_failures,
            initial_backoff=reg.retry.backoff_seconds,
            backoff_base=float(reg.retry.base),
            concurrency_key=None if conc is None else conc.key,
            concurrency_limit=None if conc is None else conc.limit,
        )

    def live_target(self, fn: str) -> Target | None:
        """:meth:`target` of ``fn``, or None when this process does not know it."""
        return self.target(fn) if fn in self._registry else None
