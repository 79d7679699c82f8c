"""Once keys: a block of work that takes effect once per key, across every process.

Some outside events reach several processes at once: a chat platform that sends every
session the same interaction, a webhook retried to every replica. Each process does the
same work; only one may take effect. Mark the block with the event's key (:func:`once`, or
:func:`set_once` at the start of a handler's task): the first write transaction opened in
the block records the key in the same commit as its own writes, and any transaction that
finds the key taken (another process got there first, or its commit is in flight and then
succeeds) raises :class:`~scheduler.errors.AlreadyDone` before it writes anything. The
effect and the proof that it happened are one commit, so a crash can never leave one
without the other: if the first transaction rolls back, the key is free again.

Later transactions of the same block in the process that took the key go ahead as usual
(a handler may write in more than one transaction). Reads never take a key. A key is kept
for ``ttl`` seconds after it was taken, then pruned by the lease sweep. So that a key is
never forgotten while a duplicate may still act on it, a block may take its key only
within ``ttl / 2`` of being marked (by this process's monotonic clock: a process stopped or
starved for longer finds it refused); the guarantee then holds for duplicates that reach
the processes within ``ttl / 2`` of each other. Pick ``ttl`` accordingly (for chat
interactions, well past their token's lifetime).

The mark is a context variable, like :func:`scheduler.interactive`: it follows the block
into what it awaits and the tasks it starts, never into work started elsewhere.
"""

from __future__ import annotations

import contextlib
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import _codec
from .store_types import Op, OpState, Q

if TYPE_CHECKING:
    from collections.abc import Iterator
    from datetime import timedelta

ONCE_KEY_LIMIT = 200
"""The longest once key, in characters."""

DEFAULT_TTL = 3600.0
"""How long a once key is kept by default: an hour."""


@dataclass(slots=True)
class OnceMark:
    """The once key of the running block, and whether this block has taken it yet."""

    key: str
    ttl: float
    marked_at: float = field(default_factory=time.monotonic)
    """When the block was marked, on this process's monotonic clock."""
    taken: bool = False

    def may_take(self) -> bool:
        """Whether the block may still take its key (within ``ttl / 2`` of being marked)."""
        return time.monotonic() - self.marked_at <= self.ttl / 2


_mark: ContextVar[OnceMark | None] = ContextVar("scheduler_once", default=None)


def _new_mark(key: str, ttl: timedelta | float) -> OnceMark:
    _codec.check_name(key, "once key", ONCE_KEY_LIMIT)
    return OnceMark(key, _codec.to_seconds(ttl, "ttl", sign="positive"))


@contextlib.contextmanager
def once(key: str, ttl: timedelta | float = DEFAULT_TTL) -> Iterator[OnceMark]:
    """Make the writes in this block take effect once per ``key``, across every process
    sharing the store: its first write transaction takes the key in its own commit; a
    transaction that finds the key taken raises ``AlreadyDone`` and writes nothing."""
    token = _mark.set(_new_mark(key, ttl))
    try:
        mark = _mark.get()
        if mark is None:
            raise RuntimeError("the mark was set just above")
        yield mark
    finally:
        _mark.reset(token)


def set_once(key: str, ttl: timedelta | float = DEFAULT_TTL) -> None:
    """Mark the rest of the current task with once key ``key`` (for frameworks that give a
    hook at the start of an event's task rather than a block around it)."""
    _mark.set(_new_mark(key, ttl))


def current_once() -> OnceMark | None:
    """The once mark of the running block (None outside any)."""
    return _mark.get()


def claim(st: OpState, mark: OnceMark) -> Op[bool]:
    """Take ``mark``'s key in this transaction; False if another transaction has it."""
    taken = yield Q("claim_once", {"once_key": mark.key, "expires_at": st.lease_now + mark.ttl})
    return bool(taken)


def prune(st: OpState) -> Op[None]:
    """Forget the once keys whose time is over."""
    yield Q("prune_once", {"now": st.lease_now})
