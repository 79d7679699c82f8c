"""``as_name`` and ``as_avatar`` (``/edit``; the dashboard's form): who the posts come from,
checked. The posts go through a webhook of the channel, so the bot needs **Manage Webhooks**
there (asked for only by an announcement that posts as someone: never in the invite), **Read
Message History** (a re-run looks for the post an interrupted attempt made before it posts
again: a webhook's execute has no nonce), and **Manage Messages** to publish such a post in
an announcement channel (it is not the bot's own message). Posting under another name is
what Manage Webhooks allows on Discord, so the member needs it in the channel as well."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..i18n import t
from ..limits import clip
from ..models import KEPT, Destination, PostAs
from ..parsing import InputError
from .checks import Refusal
from .files import download, too_large

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Literal

    import discord

    from ..models import Draft, Image, Place
    from .request import AnnouncementOptions

MAX_AS_NAME = 80
"""Discord's longest webhook name (a post's ``username``)."""
FORBIDDEN_IN_NAMES = ("discord", "clyde")
"""What Discord refuses in a webhook's name."""
NO_AS_NAME = frozenset({"none", "off", "no", "bot", "aucun", "keine", "ninguno", "nenhum"})
"""What ``as_name`` takes to mean "post as the bot again"."""
AVATAR_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The images Discord takes as an avatar."""
MAX_AVATAR_BYTES = 8 * 1024 * 1024
"""The largest avatar kept (Discord refuses larger ones)."""


def check_as_name(typed: str) -> str | None:
    """The name typed (None for ``none``), refused as Discord would refuse it."""
    name = " ".join(typed.split())
    if name.lower() in NO_AS_NAME:
        return None
    if not 1 <= len(name) <= MAX_AS_NAME:
        raise InputError(
            t("A name to post as has 1 to {limit} characters; `{name}` has {count}.",
              limit=MAX_AS_NAME, name=clip(name), count=len(name)), field="as_name"
        )  # fmt: skip
    lowered = name.lower()
    for word in FORBIDDEN_IN_NAMES:
        if word in lowered:
            raise InputError(
                t("Discord refuses names that contain `{word}`: choose another name to post "
                  "as.", word=word), field="as_name"
            )  # fmt: skip
    return name


def check_post_as(
    options: AnnouncementOptions,
    member: discord.Member,
    me: discord.Member,
    channel: discord.abc.GuildChannel | discord.Thread,
    destination: Destination,
    publish: bool,
) -> PostAs | Literal["kept"] | None:
    """Who the request's posts come from: a name (and a new avatar, whose bytes the caller
    puts in: ``keep_avatar`` is then false), None for the bot, or ``KEPT`` (as it is). Posting
    as someone is refused where the bot (or the member) lacks Manage Webhooks, or where a
    published post would need Manage Messages."""
    name: str | None
    if options.as_name is not None:
        name = check_as_name(options.as_name)
        result: PostAs | Literal["kept"] | None = (
            None if name is None else PostAs(name, keep_avatar=not options.as_avatar)
        )
    elif options.as_avatar:
        name = options.kept_as_name
        if name is None:
            raise InputError(
                t("An avatar goes with a name: give `as_name` too (e.g. `as_name: Town "
                  "hall`)."), field="as_avatar"
            )  # fmt: skip
        result = PostAs(name)
    else:
        name = options.kept_as_name
        result = KEPT
    if name is not None:
        check_webhook_rights(member, me, channel, destination, publish, name)
    return result


def check_places_post_as(
    post_as: PostAs | Literal["kept"] | None,
    options: AnnouncementOptions,
    member: discord.Member,
    guild: discord.Guild,
    places: Sequence[Place],
) -> None:
    """An announcement that posts as someone posts so in each of its other places too, each
    through that channel's webhook: the same rights are asked for there (a thread not in
    the cache is left to its post, which says what is missing)."""
    if isinstance(post_as, PostAs):
        name: str | None = post_as.name
    else:
        name = options.kept_as_name if post_as == KEPT else None
    if name is None:
        return
    for place in places:
        found = guild.get_channel_or_thread(place.channel_id)
        if found is not None:
            check_webhook_rights(member, guild.me, found, place.destination, False, name)


def check_webhook_rights(
    member: discord.Member,
    me: discord.Member,
    channel: discord.abc.GuildChannel | discord.Thread,
    destination: Destination,
    publish: bool,
    name: str,
) -> None:
    """The bot may post through a webhook of ``channel`` (a thread's: its parent's), and
    publish such a post; the member may post there under another name."""
    where = channel.mention
    mine = channel.permissions_for(me)
    if not mine.manage_webhooks:
        raise Refusal(
            t("To post as **{name}** I need **Manage Webhooks** in {channel} (such posts go "
              "through a webhook of the channel). Ask an admin to grant it, then try again.",
              name=clip(name), channel=where), field="as_name"
        )  # fmt: skip
    if not mine.read_message_history:
        raise Refusal(
            t("To post as **{name}** I need **Read Message History** in {channel}: after an "
              "interruption I look there for a post I may have made before I post again. Ask "
              "an admin to grant it, then try again.", name=clip(name), channel=where),
            field="as_name",
        )  # fmt: skip
    published = destination == Destination.ANNOUNCEMENT and publish
    if published and not mine.manage_messages:
        raise Refusal(
            t("To publish posts made as **{name}** in {channel} I need **Manage Messages** "
              "there (they are not the bot's own messages). Ask an admin to grant it, or "
              "leave `publish` off.", name=clip(name), channel=where), field="as_name",
        )  # fmt: skip
    if not channel.permissions_for(member).manage_webhooks:
        raise Refusal(
            t("Posting under another name in {channel} needs **Manage Webhooks** there, and "
              "you don't have it.", channel=where), field="as_name"
        )  # fmt: skip


def with_avatar(draft: Draft, avatar: Image | None) -> Draft:
    """``draft`` posting, as it asks, with ``avatar`` (its bytes read or kept elsewhere)."""
    if not isinstance(draft.post_as, PostAs):
        return draft
    return replace(draft, post_as=replace(draft.post_as, avatar=avatar, keep_avatar=False))


def check_avatar_type(filename: str, content_type: str | None) -> None:
    """Refused unless the file is a PNG, JPEG, GIF or WebP image (what Discord takes as an
    avatar), by the type it was sent with."""
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind not in AVATAR_TYPES:
        raise Refusal(
            t("`{file}` is not an image Discord takes as an avatar: attach a PNG, JPEG, GIF "
              "or WebP image.", file=clip(filename)), field="as_avatar"
        )  # fmt: skip


def checked_avatar(image: Image) -> Image:
    """An avatar uploaded on the dashboard (its size already bounded by the form: the file
    limit and 8 MiB), refused as ``/edit as_avatar:`` refuses one."""
    check_avatar_type(image.filename, image.content_type)
    return image


async def read_avatar(attachment: discord.Attachment, limit: float) -> Image:
    """The avatar's bytes: a PNG, JPEG, GIF or WebP image of at most ``limit`` (and 8 MiB)."""
    check_avatar_type(attachment.filename, attachment.content_type)
    most = min(limit, MAX_AVATAR_BYTES)
    if attachment.size > most:
        raise too_large(attachment.size, most)
    return await download(attachment, most)
