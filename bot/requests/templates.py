"""Templates as members use them: one saved from an announcement (``/template save``) and
one applied to ``/schedule`` (its fields as defaults, each overridable by an option)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..announcements import Announcements, check_template_name
from ..i18n import t
from ..models import Image, PostAs, Style, Template, Tidy, mention_markup
from ..parsing import InputError, concerning
from ..parsing.placeholders import check_placeholders
from .checks import Refusal, can_read, require_manager
from .style import check_style
from .validation import check_widest_length, empty_message

if TYPE_CHECKING:
    import discord

    from .request import Requester


async def template_from(
    announcements: Announcements, requester: Requester, local_id: int, name: str
) -> Template:
    """A template named ``name`` holding announcement ``local_id``'s text, title, silence,
    mention, channel, first file, reminder lead and who it posts as;
    refused unless the member may manage announcements and
    can see that announcement's channel."""
    guild, member = requester.guild, requester.member
    require_manager(member, await announcements.settings(guild.id))
    kept_name = check_template_name(name)
    a = await announcements.get(guild.id, local_id)
    if not can_read(member, guild, a.channel_id):
        raise Refusal(
            t("Announcement #{id} is for a channel you can't see, so you can't save it as a "
              "template.", id=local_id)
        )  # fmt: skip
    files = await announcements.images(a.id)
    style = a.rich.style
    thumbnail = None if style.thumbnail is None else await announcements.thumbnail(a.id)
    return Template(
        guild_id=guild.id,
        name=kept_name,
        content=a.content,
        title=a.rich.title,
        silent=a.rich.silent,
        mention=a.mention,
        channel_id=a.channel_id,
        image=files[0] if files else None,
        author_id=member.id,
        reminder=await announcements.reminder_lead(a.id),
        post_as=await announcements.post_as(a.id),
        style=style if thumbnail is not None else replace(style, thumbnail=None),
        thumbnail=thumbnail,
        also_in=tuple(p.channel_id for p in await announcements.places(a.id)),
        tidy=await announcements.tidy(a.id),
    )


async def template_of_form(
    announcements: Announcements,
    requester: Requester,
    name: str,
    *,
    content: str,
    title: str | None,
    silent: bool,
    mention: str | None,
    channel_id: int | None,
    image: Image | None,
    reminder: float | None = None,
    style: Style | None = None,
    thumbnail: Image | None = None,
    post_as: PostAs | None = None,
    also_in: tuple[int, ...] = (),
    tidy: Tidy | None = None,
) -> Template:
    """A template named ``name`` holding what the announcement form holds (its text, title,
    silence, mention, channel, file and reminder lead), nothing scheduled; refused as /template save
    refuses (the member's rights, the name) and as /schedule refuses the text (empty, a
    placeholder it does not know, too long for Discord). A channel the member can't see is
    left out (the form offers none)."""
    guild, member = requester.guild, requester.member
    require_manager(member, await announcements.settings(guild.id))
    kept_name = check_template_name(name)
    if not content.strip():
        raise InputError(empty_message(), field="message")
    with concerning("message"):
        check_placeholders(content, "the message")
    with concerning("title"):
        check_placeholders(title, "the title")
    prefix = 0 if mention is None else len(mention_markup(mention)) + 1
    check_widest_length(content, prefix, title)
    style = style or Style()
    check_style(style, title, content)
    if channel_id is not None and not can_read(member, guild, channel_id):
        channel_id = None
    return Template(
        guild_id=guild.id,
        name=kept_name,
        content=content,
        title=title,
        silent=silent,
        mention=mention,
        channel_id=channel_id,
        image=image,
        author_id=member.id,
        reminder=reminder,
        style=style if thumbnail is not None else replace(style, thumbnail=None),
        thumbnail=thumbnail if style.thumbnail is not None else None,
        post_as=post_as,
        also_in=tuple(c for c in also_in if can_read(member, guild, c)),
        tidy=tidy or Tidy(),
    )


@dataclass(frozen=True, slots=True)
class Started:
    """/schedule's options once a template filled in those left out."""

    message: str | None
    title: str | None
    silent: bool
    channel_id: int | None
    mention_id: int | None
    image: Image | None
    """The template's file, when no ``image`` was attached."""
    reminder: float | None = None
    """The template's reminder lead (/schedule has no option for it: /edit changes it)."""
    post_as: PostAs | None = None
    """Who the template's posts come from (/schedule has no option for it either)."""
    style: Style = field(default_factory=Style)
    """The template's style (/schedule has no option for it: /style changes it)."""
    thumbnail: Image | None = None
    """Its style's thumbnail."""
    also_in: tuple[int, ...] = ()
    """The template's other places (checked again like /edit's ``also_in``)."""
    tidy: Tidy = field(default_factory=Tidy)
    """What becomes of the template's posts (/schedule has no option for it: /edit does)."""


def template_mention(guild: discord.Guild, mention: str | None) -> int | None:
    """The role id /schedule's ``mention`` takes for a template's mention (@everyone and
    @here: the server's default role); who may ping it is checked again at scheduling."""
    if mention is None:
        return None
    if mention in ("everyone", "here"):
        return guild.default_role.id
    return int(mention.removeprefix("role:"))


def started_from(
    guild: discord.Guild,
    template: Template,
    *,
    message: str | None,
    title: str | None,
    silent: bool | None,
    channel_id: int | None,
    mention_id: int | None,
    has_image: bool,
) -> Started:
    """Each option given wins over the template's field; the others come from it."""
    return Started(
        message=message if message is not None else template.content,
        title=title if title is not None else template.title,
        silent=silent if silent is not None else template.silent,
        channel_id=channel_id if channel_id is not None else template.channel_id,
        mention_id=mention_id
        if mention_id is not None
        else template_mention(guild, template.mention),
        image=None if has_image else template.image,
        reminder=template.reminder,
        post_as=template.post_as,
        style=template.style,
        thumbnail=template.thumbnail,
        also_in=template.also_in,
        tidy=template.tidy,
    )
