"""Where an announcement may post, and what the bot and the member need there.

A text channel, an announcement channel (its posts may be published to following servers), a
thread (posted in it; an archived one is unarchived by the send, a locked one refused) or a
forum channel (each occurrence a new forum post, titled by ``title``, with tags). The checks
at scheduling ask for exactly the permissions the chosen destination and content need, and
the invite URL is built from the same table (:func:`bot_permissions`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import discord

from ..i18n import ANSWER, current_locale, marked, t, translate
from ..limits import MAX_FORUM_TAGS, MAX_THREAD_NAME, clip
from ..models import Destination
from ..parsing.spoken import listed
from .checks import Refusal

if TYPE_CHECKING:
    from collections.abc import Sequence

Target = discord.TextChannel | discord.Thread | discord.ForumChannel
"""A channel an announcement may post in."""

PERMISSION_NAMES = {
    "view_channel": marked("View Channel"),
    "send_messages": marked("Send Messages"),
    "send_messages_in_threads": marked("Send Messages in Threads"),
    "create_public_threads": marked("Create Public Threads"),
    "embed_links": marked("Embed Links"),
    "attach_files": marked("Attach Files"),
}
"""Discord's names of the permissions the bot may need (in English; said in the reader's
language, as Discord's client names them there, by :func:`permission_name`)."""


def permission_name(label: str) -> str:
    """One of :data:`PERMISSION_NAMES` in the reader's language."""
    return translate(label, current_locale(), context=ANSWER)


def destination_of(channel: Any) -> Destination:
    """What kind of destination ``channel`` is; refused if it can't take announcements."""
    if isinstance(channel, discord.Thread):
        return Destination.THREAD
    if isinstance(channel, discord.ForumChannel):
        return Destination.FORUM
    if isinstance(channel, discord.TextChannel):
        return Destination.ANNOUNCEMENT if channel.is_news() else Destination.TEXT
    raise Refusal(
        t("Announcements can go to text channels, announcement channels, threads or forum "
          "channels only.")
    )  # fmt: skip


def bot_permissions(
    destination: Destination, *, embed: bool = False, files: bool = False
) -> discord.Permissions:
    """What the bot needs to post at ``destination`` (with an embed, with files)."""
    needed = discord.Permissions(view_channel=True)
    if destination == Destination.THREAD:
        needed.send_messages_in_threads = True
    else:
        needed.send_messages = True
    if destination == Destination.FORUM:
        needed.create_public_threads = True
    needed.embed_links = embed
    needed.attach_files = files
    return needed


def every_destination_permissions() -> discord.Permissions:
    """What the bot may need in any destination, with any content (for the invite URL)."""
    total = discord.Permissions.none()
    for destination in Destination:
        total |= bot_permissions(destination, embed=True, files=True)
    return total


def missing(perms: discord.Permissions, needed: discord.Permissions) -> list[str]:
    """The names of the permissions in ``needed`` that ``perms`` lacks, in table order."""
    return [
        label
        for flag, label in PERMISSION_NAMES.items()
        if getattr(needed, flag) and not getattr(perms, flag)
    ]


def check_destination(
    member: discord.Member, me: discord.Member, channel: Any, *, embed: bool, files: bool
) -> tuple[Target, Destination]:
    """The member and the bot must both be able to see and post at ``channel``; a locked
    thread is refused."""
    destination = destination_of(channel)
    target: Target = channel
    mine = target.permissions_for(member)
    sends = (
        mine.send_messages_in_threads if destination == Destination.THREAD else mine.send_messages
    )
    if not (mine.view_channel and sends):
        raise Refusal(
            t("You can't post in {channel} yourself, so you can't schedule announcements "
              "there.", channel=target.mention)
        )  # fmt: skip
    if isinstance(target, discord.Thread) and target.locked:
        raise Refusal(
            t("{channel} is locked: nothing new can be posted in it. Unlock it, or pick "
              "another channel or thread.", channel=target.mention)
        )  # fmt: skip
    if isinstance(target, discord.ForumChannel) and target.is_media() and not files:
        raise Refusal(
            t("{channel} is a media channel: each post needs a file. Attach one with `image`.",
              channel=target.mention)
        )  # fmt: skip
    lacking = missing(
        target.permissions_for(me), bot_permissions(destination, embed=embed, files=files)
    )
    if lacking:
        names = listed([f"**{permission_name(m)}**" for m in lacking])
        raise Refusal(
            t("I need {permissions} in {channel} to post there. Ask an admin to grant it, "
              "then try again.", permissions=names, channel=target.mention)
        )  # fmt: skip
    return target, destination


def forum_title(title: str | None, forum: discord.ForumChannel) -> str:
    """A forum post's name: the announcement's ``title``, which a forum requires."""
    if title is None or not title.strip():
        raise Refusal(
            t("{forum} is a forum: each post needs a `title` (it names the post), e.g. "
              "`title: Weekly update`.", forum=forum.mention)
        )  # fmt: skip
    if len(title) > MAX_THREAD_NAME:
        raise Refusal(
            t("The title is {count} characters; a forum post's name may have at most "
              "{limit}. Shorten it.", count=len(title), limit=MAX_THREAD_NAME)
        )  # fmt: skip
    return title


def split_tags(typed: str | None) -> list[str]:
    """Tag names as typed: separated by commas."""
    return [name.strip() for name in (typed or "").split(",") if name.strip()]


def resolve_tags(forum: discord.ForumChannel, names: Sequence[str]) -> tuple[int, ...]:
    """The forum's tags with these names (case-insensitive), as ids; refused if one is not
    the forum's, if there are too many, or if the forum requires one and none is given."""
    by_name = {tag.name.lower(): tag for tag in forum.available_tags}
    ids: list[int] = []
    for name in names:
        tag = by_name.get(name.lower())
        if tag is None:
            known = ", ".join(f"`{tag.name}`" for tag in forum.available_tags) or t("none")
            raise Refusal(
                t("{forum} has no tag `{name}`. Its tags: {known}.", forum=forum.mention,
                  name=clip(name), known=known)
            )  # fmt: skip
        if tag.id not in ids:
            ids.append(tag.id)
    if len(ids) > MAX_FORUM_TAGS:
        raise Refusal(
            t("A forum post may have at most {limit} tags; you gave {count}.",
              limit=MAX_FORUM_TAGS, count=len(ids))
        )  # fmt: skip
    if not ids and forum.flags.require_tag:
        raise Refusal(
            t("{forum} requires a tag on every post: add `tags` (one of {known}).",
              forum=forum.mention,
              known=", ".join(f"`{tag.name}`" for tag in forum.available_tags))
        )  # fmt: skip
    return tuple(ids)


def tag_choices(forum: Any, typed: str) -> list[tuple[str, str]]:
    """Autocomplete for ``tags``: the forum's tags matching the last name being typed,
    each offered as the whole list typed so far with it."""
    if not isinstance(forum, discord.ForumChannel):
        return []
    *done, current = (typed or "").split(",")
    kept = [name.strip() for name in done if name.strip()]
    out = []
    for tag in forum.available_tags:
        if tag.name in kept or current.strip().lower() not in tag.name.lower():
            continue
        value = ", ".join([*kept, tag.name])
        out.append((value[:100], value[:100]))
    return out
