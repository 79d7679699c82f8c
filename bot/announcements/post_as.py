"""Who an announcement's posts come from (``/edit as_name: as_avatar:``): read, written with
the announcement (its avatar counted toward the server's files), and what an edit changes.

The posts themselves go through a webhook of the channel (:mod:`bot.posting.webhooks`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..db import BotDb
from .diff import Change, Field
from .guards import check_files
from .service import AnnouncementService

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..models import Draft, PostAs


def post_as_words(post_as: PostAs | None) -> str:
    """Who an announcement posts as, as the history keeps it: ``Town hall``, or ``none``."""
    return "none" if post_as is None else post_as.name


def post_as_change(before: PostAs | None, draft: Draft) -> Change | None:
    """The change of who the announcement posts as (None: the same, or ``KEPT``; a new
    avatar is a change even under the same name)."""
    after = draft.post_as
    if isinstance(after, str):  # KEPT
        return None
    if before is None and after is None:
        return None
    if before is not None and after is not None:
        same_avatar = after.keep_avatar or after.avatar == before.avatar
        if after.name == before.name and same_avatar:
            return None
    return Change(Field.AS_NAME, post_as_words(before), post_as_words(after))


async def store_post_as(
    service: AnnouncementService, rows: BotDb, ann_id: int, draft: Draft
) -> None:
    """Write who ``draft`` posts as for the announcement (nothing for ``KEPT``); a new
    avatar is refused (:class:`~.guards.TooMuchStored`) when the server's files would pass
    its limit."""
    post_as = draft.post_as
    if isinstance(post_as, str):  # KEPT: as it is
        return
    if post_as is not None and post_as.avatar is not None:
        adding = len(post_as.avatar.data)
        kept = await rows.guild_image_bytes(draft.guild_id, None)
        kept += await rows.template_file_bytes(draft.guild_id)
        kept += await rows.guild_avatar_bytes(draft.guild_id, ann_id)
        check_files(await service.limits_in(rows, draft.guild_id), kept, adding)
    await rows.set_post_as(ann_id, draft.guild_id, post_as)


class PostingAs(AnnouncementService):
    """Who announcements post as."""

    async def post_as(self, announcement_id: int) -> PostAs | None:
        """Who the announcement posts as, its avatar included (None: the bot)."""
        async with self.sched.reader() as db:
            return await BotDb(db).post_as(announcement_id)

    async def post_as_names(self, announcement_ids: Sequence[int]) -> dict[int, str]:
        """The name each of these announcements posts as (the bot's are left out)."""
        async with self.sched.reader() as db:
            return await BotDb(db).post_as_names(announcement_ids)
