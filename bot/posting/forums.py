"""Forum posts: each occurrence is a new thread in the forum, with its first message.

Creating one has no nonce, so the delivery's intent is recorded first (the occurrence's row,
state ``sending``) and the thread id once it exists (with the occurrence recorded sent). A
re-run of an attempt that was interrupted (a crash, a lost response) first looks for the post
it may have made: an active thread of the forum that the bot started under the announcement's
title and that no occurrence has recorded. Only if there is none is a post created. (Two
announcements with the same title in one forum, both interrupted mid-post at once, could take
each other's post: each still ends with exactly one.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import discord

from ..db import BotDb

if TYPE_CHECKING:
    from scheduler import Scheduler

    from ..models import Announcement
    from .payload import PostPayload


async def forum_of(client: discord.Client, channel_id: int) -> discord.ForumChannel:
    """The forum channel (from the cache, else asked of Discord)."""
    found: Any = client.get_channel(channel_id)
    if found is None:
        found = await client.fetch_channel(channel_id)
    if not isinstance(found, discord.ForumChannel):
        raise TypeError(f"channel {channel_id} is not a forum channel")
    return found


async def find_forum_post(
    client: discord.Client, sched: Scheduler, ann: Announcement
) -> int | None:
    """The post an interrupted attempt may have made for ``ann``: the oldest active thread
    of its forum started by the bot under its title that no occurrence recorded, or None.

    The forum's active threads are the client's: Discord sends every active thread with the
    guild when the bot connects (a restarted bot knows those made before its crash) and each
    new one as it is created (a retry after a lost response, seconds later, knows it)."""
    await client.wait_until_ready()
    forum = await forum_of(client, ann.channel_id)
    me = client.user
    candidates = [
        t.id
        for t in forum.threads
        if me is not None and t.owner_id == me.id and t.name == ann.rich.title
    ]
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
