"""``also_in``: the other places an announcement posts each occurrence in, as typed
(``#news #events``: Discord's client turns each channel picked while typing into its mention
``<#id>``; a name or an id works too; ``none`` for no other place), read and checked like
the announcement's own channel (the member and the bot must see it and post there, with
Embed Links and Attach Files when the post needs them). A place is a text or announcement
channel or a thread; a forum is refused (each occurrence there is a post of its own)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..announcements.places import MAX_PLACES
from ..i18n import t
from ..limits import clip
from ..models import Destination, Place
from ..parsing import InputError
from .checks import Refusal
from .destinations import check_destination

if TYPE_CHECKING:
    import discord

    from .request import AnnouncementOptions, Requester

NO_PLACES = frozenset(
    {"none", "no", "off", "aucun", "aucune", "keine", "kein", "ninguno", "ninguna", "nenhum",
     "nenhuma"}
)  # fmt: skip
"""What ``also_in`` takes to mean "no other place" (in the shipped languages too)."""

MAX_ALSO_IN = 1000
"""Characters in ``also_in`` as typed (ten mentions take about 230)."""

_MENTION = re.compile(r"<#(\d{15,22})>")
_SEPARATORS = re.compile(r"[\s,;]+")


def place_ids(guild: discord.Guild, typed: str) -> tuple[int, ...]:
    """The channels ``typed`` names, in order, each once (``()`` for ``none``); refused
    (:class:`Refusal`) when one of them is not a channel of ``guild``."""
    text = typed.strip()
    if text.lower() in NO_PLACES:
        return ()
    if len(text) > MAX_ALSO_IN:
        raise InputError(
            t("`also_in` is {count} characters; name at most {limit} channels, like "
              "`#news #events`.", count=len(text), limit=MAX_PLACES), field="also_in"
        )  # fmt: skip
    found: list[int] = []
    for token in _SEPARATORS.split(text):
        if not token:
            continue
        found.append(_channel_id(guild, token))
    ids = tuple(dict.fromkeys(found))
    if len(ids) > MAX_PLACES:
        raise InputError(
            t("`also_in` names {count} channels; an announcement posts in at most {limit} "
              "other places.", count=len(ids), limit=MAX_PLACES), field="also_in"
        )  # fmt: skip
    return ids


def _channel_id(guild: discord.Guild, token: str) -> int:
    mention = _MENTION.fullmatch(token)
    if mention is not None:
        return int(mention[1])
    if token.isdigit():
        return int(token)
    name = token.removeprefix("#").lower()
    for channel in [*guild.channels, *guild.threads]:
        if channel.name.lower() == name:
            return channel.id
    raise Refusal(
        t("I can't find the channel `{name}` in this server. Name the other places like "
          "`#news #events` (pick each one as you type `#`), or `none`.", name=clip(token)),
        field="also_in",
    )  # fmt: skip


async def check_places(
    requester: Requester,
    options: AnnouncementOptions,
    channel_id: int,
    *,
    embed: bool,
    files: bool,
) -> tuple[Place, ...]:
    """The other places the request asks for (typed, else kept: an edit keeps them),
    each checked like the announcement's own channel ``channel_id``."""
    from .validation import find_target  # (validation imports this module)

    guild, member = requester.guild, requester.member
    ids = options.kept_places if options.also_in is None else place_ids(guild, options.also_in)
    places: list[Place] = []
    for place_id in ids:
        if place_id == channel_id:
            raise Refusal(
                t("The announcement already posts in <#{id}>: leave it out of `also_in`.",
                  id=place_id), field="also_in"
            )  # fmt: skip
        try:
            found = await find_target(guild, place_id)
        except Refusal:
            raise Refusal(
                t("<#{id}>, one of its other places, is no longer a channel of this server. "
                  "Name its other places again with `also_in:` (or `also_in: none`).",
                  id=place_id), field="also_in"
            ) from None  # fmt: skip
        target, destination = check_destination(member, guild.me, found, embed=embed, files=files)
        if destination == Destination.FORUM:
            raise Refusal(
                t("{channel} is a forum: each occurrence there is a post of its own, so it "
                  "can't be one of the other places. Schedule an announcement for it.",
                  channel=target.mention), field="also_in"
            )  # fmt: skip
        places.append(Place(place_id, destination))
    return tuple(places)
