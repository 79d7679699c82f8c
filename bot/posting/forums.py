"""Forum posts: each occurrence is a new thread in the forum, with its first message.

Creating one has no nonce, so the delivery's intent is recorded first (the occurrence's row,
state ``sending``) and the thread id once it exists (with the occurrence recorded sent). A
re-run of an attempt that was interrupted (a crash, a lost response) first looks for the post
it may have made: a thread of the forum (active, or archived since), asked of Discord, that the
bot started under the announcement's title and that no occurrence has recorded. Only if there
is none is a post created. discord.py never retries the create itself
(:mod:`bot.posting.once`): a 502 after Discord made the post comes back to the job, whose
re-run finds it. (Two
announcements with the same title in one forum, both interrupted mid-post at once, could take
each other's post: each still ends with exactly one.)
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import discord

from ..db import BotDb

if TYPE_CHECKING:
    from scheduler import Scheduler

    from ..models import Announcement
    from .payload import PostPayload

log = logging.getLogger("crier.delivery")  # tests and operators filter on this name


async def forum_of(client: discord.Client, channel_id: int) -> discord.ForumChannel:
    """The forum channel (from the cache, else asked of Discord)."""
    found: Any = client.get_channel(channel_id)
    if found is None:
        found = await client.fetch_channel(channel_id)
    if not isinstance(found, discord.ForumChannel):
        raise TypeError(f"channel {channel_id} is not a forum channel")
    return found


ARCHIVED_LOOKED_AT = 50
"""How many of a forum's most recently archived posts a re-run looks at (one request): a
re-run comes within the nonce window of its first attempt (minutes; see
``bot.announcements.deliveries.begin_attempt``), so a post it made and someone archived since
is among the last ones archived."""


async def find_forum_post(
    client: discord.Client, sched: Scheduler, ann: Announcement
) -> int | None:
    """The post an interrupted attempt may have made for ``ann``: the oldest thread of its
    forum that the bot started under its title and that no occurrence recorded, or None.

    The threads are asked of Discord, never taken from this process's gateway cache (which
    a post made just before a crash, or whose create event is still on its way, or that was
    archived since, is missing from): the guild's active threads
    (``GET /guilds/{id}/threads/active``), and the forum's most recently archived ones
    (``GET /channels/{id}/threads/archived/public``). Without Read Message History in the
    forum the archived ones can't be listed; that is logged and the active ones are used."""
    await client.wait_until_ready()
    forum = await forum_of(client, ann.channel_id)
    me = client.user
    if me is None:
        raise RuntimeError("the client is not logged in")
    threads = [t for t in await forum.guild.active_threads() if t.parent_id == forum.id]
    try:
        threads += [t async for t in forum.archived_threads(limit=ARCHIVED_LOOKED_AT)]
    except discord.Forbidden:
        log.warning(
            "announcement %d: can't list the archived posts of forum %d (the bot needs Read "
            "Message History there); looking among its active posts only",
            ann.id, forum.id,
        )  # fmt: skip
    candidates = [t.id for t in threads if t.owner_id == me.id and t.name == ann.rich.title]
    if not candidates:
        return None
    async with sched.reader() as db:
        recorded = await BotDb(db).recorded_threads(candidates)
    unrecorded = sorted(set(candidates) - recorded)
    return unrecorded[0] if unrecorded else None


async def create_forum_post(client: discord.Client, ann: Announcement, payload: PostPayload) -> int:
    """A new post in ``ann``'s forum showing ``payload``; returns its thread's id (which is
    also its first message's)."""
    forum = await forum_of(client, ann.channel_id)
    tags = [t for t in forum.available_tags if t.id in ann.rich.tags]
    made = await forum.create_thread(
        name=ann.rich.title or "Announcement", applied_tags=tags, **payload.send_options()
    )
    return made.thread.id
