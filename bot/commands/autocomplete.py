"""The one autocomplete of every ``id`` option (/cancel, /edit, /pause, /resume, /skip,
/unskip, /info, /postnow, /test).

Each command offers the guild's announcements in the states it accepts (:data:`ACCEPTS`),
newest first, at most 25, read in one query (plus one read of the schedules when a recurring
one's next time is to be shown). The text of an announcement for a channel the member can't
see is never shown, nor matched against what they type. Attach it with
``@app_commands.autocomplete(id=announcement_ids("pause"))``, or, for a command defined
elsewhere, ``@cancel.autocomplete("id")`` on the function it returns.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import discord
from discord import app_commands

from ..limits import MAX_CHOICES
from ..models import LIVE_STATES, AnnouncementState
from ..render import choice_label
from ..requests.checks import can_read

if TYPE_CHECKING:
    from ..announcements import Announcements

__all__ = ["ACCEPTS", "Accepts", "announcement_ids"]


@dataclass(frozen=True, slots=True)
class Accepts:
    """Which announcements a command's ``id`` option offers."""

    states: tuple[AnnouncementState, ...] | None
    """None: every state."""
    recurring: bool | None = None
    """True: recurring ones only; False: one-offs only; None: both."""


ACCEPTS: dict[str, Accepts] = {
    "cancel": Accepts(LIVE_STATES),
    "pause": Accepts((AnnouncementState.SCHEDULED,)),
    "resume": Accepts((AnnouncementState.PAUSED,)),
    "skip": Accepts(LIVE_STATES, recurring=True),
    "unskip": Accepts(LIVE_STATES, recurring=True),
    # Live ones, and those that posted their last time (a posted one-off, an ended recurring
    # one): /edit still corrects the text and mention of their posted message in place.
    "edit": Accepts((*LIVE_STATES, AnnouncementState.SENT, AnnouncementState.DONE)),
    "info": Accepts(None),
    "postnow": Accepts((AnnouncementState.SCHEDULED,)),
    "test": Accepts((AnnouncementState.SCHEDULED,)),
}


@runtime_checkable
class ServesAnnouncements(Protocol):
    """The client the commands run in (``CrierBot``): it holds the domain service."""

    announcements: Announcements


IdAutocomplete = Callable[
    [discord.Interaction, str], Coroutine[Any, Any, list[app_commands.Choice[int]]]
]


def announcement_ids(command: str) -> IdAutocomplete:
    """The autocomplete of ``command``'s ``id`` option (``command`` is a key of ACCEPTS)."""
    accepts = ACCEPTS[command]

    async def choices(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[int]]:
        """This server's announcements the command accepts whose id starts with the typed
        number, or whose label contains the typed text."""
        guild, member, client = interaction.guild, interaction.user, interaction.client
        if guild is None or not isinstance(member, discord.Member):
            return []
        if not isinstance(client, ServesAnnouncements):
            return []
        typed = current.strip().lstrip("#").lower()
        number = typed if typed.isdigit() else ""
        found = await client.announcements.choices(
            guild.id, accepts.states, recurring=accepts.recurring, id_prefix=number
        )
        out: list[app_commands.Choice[int]] = []
        for a in found.items:
            hidden = not can_read(member, guild, a.channel_id)
            label = choice_label(a, found.next_fires.get(a.id), hidden)
            if typed and not number and typed not in label.lower():
                continue
            out.append(app_commands.Choice(name=label, value=a.local_id))
            if len(out) == MAX_CHOICES:
                break
        return out

    return choices
