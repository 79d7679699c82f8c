"""Every interaction takes effect once, however many gateway sessions receive it.

Discord sends every session of a shard each of its events, so when several instances of the
bot share a shard (a rolling deploy, or more instances than the shards are shared among),
each of them receives the same ``INTERACTION_CREATE`` and runs the same command. Two guards
make that harmless:

- **The effect, once.** A command, form or button marks its task with the interaction's id
  as a once key (:func:`take`): the first write transaction it opens records the id in the
  same commit as its writes (:func:`scheduler.once`), and the other sessions' transactions
  find it taken, write nothing and raise :class:`scheduler.AlreadyDone`.
- **The answer, once.** Discord accepts one initial response per interaction and refuses the
  others with 40060 ("Interaction has already been acknowledged"). A session whose answer is
  refused, or whose write found the interaction done, lost the race: it says nothing more
  and logs one DEBUG line (:func:`lost_race`), never a traceback nor an error to anyone.

What stays possible is harmless: two sessions both reading (``/list``, ``/info``, an
autocomplete) and both answering, the second refused.

An interaction older than :data:`MAX_AGE` by this machine's clock can no longer be answered
(Discord wants the first answer within 3 s and drops the token after 15 minutes): it is
ignored, so a process that was stopped or cut off for that long never acts on what it finds
buffered when it wakes. That bound, with the once key kept for :data:`ONCE_TTL`, is what lets
a key be forgotten at last (see :mod:`scheduler._once`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta

import discord
from discord import app_commands

from scheduler import AlreadyDone, set_interactive, set_once

from ..metrics import BotStats

log = logging.getLogger(__name__)

ALREADY_ACKNOWLEDGED = 40060
"""Discord's error code for a second initial response to one interaction."""

ONCE_TTL = timedelta(hours=1)
"""How long an interaction's id is kept as handled: twice the longest time apart two sessions
may act on it (its age at arrival, at most :data:`MAX_AGE` plus the clocks' skew, and the
time a session may take to act on it)."""

MAX_AGE = timedelta(minutes=20)
"""An interaction older than this when it arrives is ignored (it can no longer be answered)."""


def take(interaction: discord.Interaction) -> bool:
    """Start handling ``interaction`` in the current task: its work is interactive (ahead of
    the deliveries' bookkeeping in the store) and takes effect once across every session.
    False (and nothing is done) for one too old to be answered."""
    handling = getattr(interaction.client, "handling", None)
    age = time.time() - interaction.created_at.timestamp()
    if age > MAX_AGE.total_seconds():
        if handling is not None:
            handling(interaction.id, None)
        log.warning(
            "ignored interaction %s: it is %.0f s old by this machine's clock (a process "
            "that was stopped or cut off, or a clock that is off)",
            interaction.id,
            age,
        )
        return False
    if handling is not None:  # in flight until this task ends (see CrierBot.handling)
        handling(interaction.id, asyncio.current_task())
    set_interactive()
    if interaction.type is not discord.InteractionType.autocomplete:
        set_once(f"interaction:{interaction.id}", ONCE_TTL)
    return True


def lost_race(error: BaseException) -> bool:
    """Whether ``error`` (as a command, form or button raised it) means another session
    handled this interaction: its write found the interaction done, or Discord refused this
    session's answer as the second one."""
    cause: BaseException | None = error
    while isinstance(cause, app_commands.AppCommandError) and cause.__cause__ is not None:
        cause = cause.__cause__
    if isinstance(cause, app_commands.CommandInvokeError):
        cause = cause.original
    if isinstance(cause, AlreadyDone):
        return True
    return isinstance(cause, discord.HTTPException) and cause.code == ALREADY_ACKNOWLEDGED


def lost(interaction: discord.Interaction, error: BaseException) -> bool:
    """If ``error`` means another session handled ``interaction``, say so at DEBUG and
    return True: the caller stays silent."""
    if not lost_race(error):
        return False
    log.debug("interaction %s was handled by another session", interaction.id)
    stats = getattr(interaction.client, "stats", None)
    if isinstance(stats, BotStats):
        stats.interactions_lost += 1
    return True


class LostAutocompleteFilter(logging.Filter):
    """discord.py logs an autocomplete's failed answer with a traceback; one refused because
    another session answered first is the race this module expects, so it becomes one DEBUG
    line of ours instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] and lost_race(record.exc_info[1]):
            log.debug("an autocomplete was answered by another session")
            return False
        return True


def quiet_lost_autocompletes() -> None:
    """Install :class:`LostAutocompleteFilter` on discord.py's command tree logger (once per
    process, however many clients it runs)."""
    tree_log = logging.getLogger("discord.app_commands.tree")
    if not any(isinstance(f, LostAutocompleteFilter) for f in tree_log.filters):
        tree_log.addFilter(LostAutocompleteFilter())
