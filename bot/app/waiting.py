"""Waiting for the database at start.

A database that can't be reached when the bot starts (PostgreSQL still starting in the
container beside it, its host name not resolvable yet, the database not created yet:
:class:`~scheduler.StoreUnavailable`) is waited for, not a reason to exit: one warning line
says what the bot waits for and why (another only if the reason changes), the store is
opened again after 1 s, then after twice as long each time up to every
:data:`RETRY_MOST` seconds, ``/healthz`` answers 503 with the reason meanwhile, and the bot
carries on as soon as the database answers. Settings the database refuses or can't use
(:class:`~scheduler.StoreMisconfigured`: a wrong password, an unknown role, an address it
can't parse) are no reason to wait: they end the start at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from scheduler import StoreUnavailable

if TYPE_CHECKING:
    from scheduler import Scheduler

log = logging.getLogger(__name__)

RETRY_FIRST = 1.0
"""Seconds before the second try."""
RETRY_MOST = 30.0
"""The longest pause between two tries."""


class DatabaseWait:
    """Starts ``sched``, waiting for its database (``name``: as an admin knows it, without
    its password) while it is unavailable."""

    def __init__(
        self, sched: Scheduler, name: str, *, first: float = RETRY_FIRST, most: float = RETRY_MOST
    ) -> None:
        self.sched = sched
        self.name = name
        self.first = first
        self.most = most
        self.reason: str | None = None
        """While waiting: what for and why, for ``/healthz`` (None otherwise)."""
        self.tries = 0
        """The tries that found the database unavailable."""

    async def open(self, stop: asyncio.Event | None = None) -> bool:
        """Start the scheduler once its database answers; False if ``stop`` is set first
        (SIGTERM while waiting). Any other failure to start is raised at once."""
        delay = self.first
        said: str | None = None
        while True:
            try:
                await self.sched.start()
            except StoreUnavailable as exc:
                self.tries += 1
                why = str(exc.__cause__ or exc)
                if why != said:
                    log.warning(
                        "waiting for the database %s: %s (trying again, at least every %gs)",
                        self.name,
                        why,
                        self.most,
                    )
                    said = why
                else:
                    log.debug("the database %s is still unavailable: %s", self.name, why)
                times = "once" if self.tries == 1 else f"{self.tries} times"
                self.reason = (
                    f"waiting for the database {self.name}: {why} (tried {times}; next try "
                    f"in {delay:g}s)"
                )
                if await stopped(stop, delay):
                    log.info("stopped while waiting for the database")
                    return False
                delay = min(delay * 2, self.most)
                continue
            if said is not None:
                log.info("the database %s answers: carrying on", self.name)
            self.reason = None
            return True


async def stopped(stop: asyncio.Event | None, within: float) -> bool:
    """Whether ``stop`` is set within ``within`` seconds (else: wait them out)."""
    if stop is None:
        await asyncio.sleep(within)
        return False
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), within)
    return stop.is_set()
