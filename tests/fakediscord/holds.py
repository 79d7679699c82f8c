"""Hold gates: the fake parks sends to one channel at a known point until the test lets go.

    hold = fake.hold_messages(channel, stage="before", skip=1)
    await fake.wait_until(lambda: hold.parked, what="the second send to arrive")
    ...  # the sender is now inside its request, at a point the test knows
    hold.release()

``POST /channels/{id}/messages`` to the channel is counted as it reaches the fake (after the
rate limits and faults of ``tests/fakediscord/faults.py``, which go on as usual); the first
``skip`` pass, the next ``count`` are parked, later ones pass. Where a parked send waits:

* ``stage="before"``: before the fake looks at it: no message is created, its nonce is not
  yet known (the request has reached Discord's edge and is still on its way in);
* ``stage="after"``: the message is created and its nonce remembered; the response is held
  back (Discord did it; the sender has not heard).

``release()`` lets every parked send (and any later one the hold would have parked) go on as
if nothing had happened; ``fake.stop()`` releases every hold. The hold changes nothing else:
a send it parks is answered exactly as it would have been at the moment it is released.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Stage = Literal["before", "after"]


@dataclass
class ParkedSend:
    """One send a hold parked."""

    nonce: Any
    """The nonce the send carried (``None`` without one)."""
    message_id: int | None = None
    """The message the fake answers with (stage ``after``: known while parked)."""
    released: bool = False


@dataclass
class MessageHold:
    channel_id: int
    stage: Stage
    skip: int = 0
    count: int = 1
    seen: int = 0
    """Sends to the channel that reached the hold."""
    sends: list[ParkedSend] = field(default_factory=list)
    """Every send the hold parked, in arrival order."""
    _changed: Callable[[], None] = field(default=lambda: None, repr=False)
    _open: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def parked(self) -> int:
        """How many sends are parked right now."""
        return sum(1 for s in self.sends if not s.released)

    @property
    def released(self) -> bool:
        return self._open.is_set()

    def release(self) -> None:
        """Let every parked send go on; the hold parks nothing more."""
        self._open.set()
        self._changed()

    def take(self) -> bool:
        """Count one send to the channel; true if the hold parks it."""
        self.seen += 1
        return not self.released and self.skip < self.seen <= self.skip + self.count

    async def park(self, send: ParkedSend) -> None:
        self.sends.append(send)
        self._changed()
        try:
            await self._open.wait()
        finally:
            send.released = True
            self._changed()


class MessageHolds:
    """The holds of one fake, by channel."""

    def __init__(self, changed: Callable[[], None]) -> None:
        self._changed = changed
        self._holds: list[MessageHold] = []

    def add(self, channel_id: int, stage: Stage, skip: int, count: int) -> MessageHold:
        if stage not in ("before", "after"):
            raise ValueError(f"stage must be 'before' or 'after', got {stage!r}")
        if skip < 0 or count < 1:
            raise ValueError("skip must be at least 0 and count at least 1")
        hold = MessageHold(channel_id, stage, skip, count, _changed=self._changed)
        self._holds.append(hold)
        return hold

    def take(self, channel_id: int) -> MessageHold | None:
        """The hold that parks this send to ``channel_id``, if any (every live hold of the
        channel counts it)."""
        chosen = None
        for hold in self._holds:
            if hold.channel_id == channel_id and hold.take() and chosen is None:
                chosen = hold
        return chosen

    def release_all(self) -> None:
        for hold in self._holds:
            hold.release()


@dataclass
class StartBarrier:
    """The first ``parties`` ``GET /gateway/bot`` requests (what each instance asks first,
    before it takes any shard) are parked until the test admits them, one at a time in the
    order they arrived (:meth:`admit`) or all at once (:meth:`release`): instances the test
    starts "together" then go on at moments it chooses, however long each took to start.
    Later requests pass at once; ``fake.stop()`` releases every parked one."""

    parties: int
    arrived: int = 0
    admitted: int = 0
    _changed: Callable[[], None] = field(default=lambda: None, repr=False)
    _turns: list[asyncio.Event] = field(default_factory=list, repr=False)

    def admit(self) -> None:
        """Let the earliest parked request go on."""
        waiting = [t for t in self._turns if not t.is_set()]
        if not waiting:
            raise RuntimeError("no request is parked at the start barrier")
        waiting[0].set()
        self.admitted += 1
        self._changed()

    def release(self) -> None:
        """Let every parked request go on, and any later one pass."""
        self.parties = 0
        for turn in self._turns:
            turn.set()
        self._changed()

    async def wait(self) -> None:
        """Count one request; park it if it is one of the first ``parties``."""
        if self.arrived >= self.parties:
            return
        self.arrived += 1
        turn = asyncio.Event()
        self._turns.append(turn)
        self._changed()
        await turn.wait()
