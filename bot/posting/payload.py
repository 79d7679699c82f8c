"""What one post of an announcement sends: its text or embed, its files, its flags.

Built from the announcement as it is now and its stored files, the same way for a new post
(:mod:`bot.posting.delivery`) and for bringing a posted one up to date
(:mod:`bot.posting.updates`), so an edit covers the embed and the files too. No request is
made here (:func:`stored_payload` only reads the announcement's files from the database).

- ``title`` set: the post is an embed (the title, and the message as its description); the
  chosen mention stays in the content, where a ping works (an embed never pings);
- ``silent``: the post carries ``SUPPRESS_NOTIFICATIONS`` (``@silent``);
- the files are uploaded with every post (``discord.File`` objects are built anew each time:
  one is read as it is sent);
- an occurrence that has a Discord event (created ahead of it, :mod:`bot.posting.events`)
  carries a link button to it, labelled in the server's language;
- an announcement whose reminders are on carries a **Remind me** button
  (:mod:`bot.posting.reminders`), labelled likewise. The link is read from the
  occurrence's recorded event row, so every attempt at one occurrence sends the same button
  (a nonce re-send is the same request);
- its style (:class:`~bot.models.Style`, ``/style``) colours the embed, gives it a footer,
  a title link, fields and a thumbnail (uploaded with every post like the files, named so
  that no file's name is taken), and puts its link buttons under the post: before the
  event's and Remind me on one row when they fit in Discord's 5, else on a row of their own.
  An edit in place sends the buttons again, so what they are follows the announcement.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import discord

from .. import i18n
from ..announcements.placeholders import event_link
from ..announcements.reminders import REMIND_BUTTON
from ..db import BotDb
from ..limits import MAX_EMBED_DESCRIPTION, MAX_EMBED_TOTAL, MAX_MESSAGE
from ..models import Announcement, Image, LinkButton, Style, mention_markup
from ..parsing import discord_timestamp
from .failures import REQUEST_ERRORS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scheduler import Scheduler

    from ..announcements import Announcements

EMBED_COLOUR = discord.Colour.blurple()
LATE_NOTE_AFTER = 60.0
"""An occurrence posted this many seconds after its time says it was sent late."""
MAX_BUTTON_LABEL = 80
"""Discord's longest button label."""
BUTTONS_PER_ROW = 5
"""Buttons in one of a message's action rows (Discord's limit)."""


@dataclass(frozen=True, slots=True)
class EventButton:
    """The link button of a post whose occurrence has a Discord event."""

    url: str
    label: str

    def item(self) -> discord.ui.Button[discord.ui.View]:
        """The link button (nothing to listen to: a link button sends no interaction)."""
        return discord.ui.Button(
            style=discord.ButtonStyle.link, url=self.url, label=self.label[:MAX_BUTTON_LABEL]
        )


@dataclass(frozen=True, slots=True)
class RemindButton:
    """The **Remind me** button of a post whose announcement reminds the members who ask
    (pressed, it is answered by :class:`bot.commands.reminders.RemindButton`)."""

    announcement_id: int
    label: str

    def item(self) -> discord.ui.Button[discord.ui.View]:
        return discord.ui.Button(
            style=discord.ButtonStyle.secondary,
            label=self.label[:MAX_BUTTON_LABEL],
            emoji="⏰",
            custom_id=REMIND_BUTTON.format(self.announcement_id),
        )


def remind_button(announcement_id: int, on: bool) -> RemindButton | None:
    """The Remind me button of the announcement's posts (None: its reminders are off),
    labelled in the language in effect."""
    return RemindButton(announcement_id, i18n.t("Remind me")) if on else None


def event_button(url: str) -> EventButton | None:
    """The button to the event at ``url`` (None: no event, no button), labelled in the
    language in effect."""
    return EventButton(url, i18n.t("Discord event")) if url else None


@dataclass(frozen=True, slots=True)
class PostPayload:
    """One post: its content (None with an embed and no mention), embed, files, silence,
    and the link button to its occurrence's Discord event."""

    content: str | None
    embed: discord.Embed | None
    images: tuple[Image, ...]
    silent: bool
    allowed_mentions: discord.AllowedMentions
    event: EventButton | None = None
    remind: RemindButton | None = None
    links: tuple[LinkButton, ...] = ()
    """Its link buttons (its style's), first under the post."""
    thumbnail: Image | None = None
    """Its embed's thumbnail, uploaded with the files under :func:`thumbnail_name`."""

    def view(self) -> discord.ui.View | None:
        """The post's buttons: its links, the link to its event, Remind me (None: none)."""
        ours: list[discord.ui.Button[discord.ui.View]] = []
        if self.event is not None:
            ours.append(self.event.item())
        if self.remind is not None:
            ours.append(self.remind.item())
        if not ours and not self.links:
            return None
        apart = len(self.links) + len(ours) > BUTTONS_PER_ROW
        view = discord.ui.View(timeout=None)
        for link in self.links:
            view.add_item(
                discord.ui.Button(
                    style=discord.ButtonStyle.link,
                    url=link.url,
                    label=link.label[:MAX_BUTTON_LABEL],
                    row=0,
                )
            )
        for item in ours:
            item.row = 1 if apart else 0
            view.add_item(item)
        return view

    def files(self) -> list[discord.File]:
        """The files to upload, fresh (a ``discord.File`` is spent once sent)."""
        files = [
            discord.File(io.BytesIO(image.data), filename=image.filename) for image in self.images
        ]
        if self.thumbnail is not None:
            name = thumbnail_name(self.thumbnail, self.images)
            files.append(discord.File(io.BytesIO(self.thumbnail.data), filename=name))
        return files

    def send_options(self) -> dict[str, Any]:
        """Keyword arguments for ``Messageable.send`` (and a forum's ``create_thread``)."""
        options: dict[str, Any] = {
            "content": self.content,
            "allowed_mentions": self.allowed_mentions,
            "files": self.files(),
        }
        if self.embed is not None:
            options["embed"] = self.embed
        if self.silent:
            options["silent"] = True
        view = self.view()
        if view is not None:
            options["view"] = view
        return options

    def edit_options(self) -> dict[str, Any]:
        """Keyword arguments for ``PartialMessage.edit``: everything the post shows is
        replaced (an embed removed when the title was, the files by the current ones)."""
        return {
            "content": self.content,
            "embeds": [] if self.embed is None else [self.embed],
            "attachments": self.files(),
            "allowed_mentions": self.allowed_mentions,
            "view": self.view(),  # None: the buttons it had are taken away
        }


def thumbnail_name(thumbnail: Image, images: Sequence[Image]) -> str:
    """The name the thumbnail is uploaded under (its embed refers to it by that name):
    ``thumbnail.png`` (the extension its file had, if a plain one), unless a file of the
    post already has that name."""
    stem, dot, ext = thumbnail.filename.rpartition(".")
    ext = ext.lower() if dot and stem and ext.isascii() and ext.isalnum() and len(ext) <= 5 else ""
    suffix = f".{ext}" if ext else ""
    taken = {image.filename for image in images}
    name, n = f"thumbnail{suffix}", 1
    while name in taken:
        n += 1
        name = f"thumbnail-{n}{suffix}"
    return name


def styled(embed: discord.Embed, style: Style, thumbnail: str | None) -> discord.Embed:
    """``embed`` with ``style``'s colour, title link, footer and fields, and the thumbnail
    uploaded as ``thumbnail`` (None: none)."""
    if style.color is not None:
        embed.colour = discord.Colour(style.color)
    if style.url is not None and embed.title:
        embed.url = style.url
    if style.footer:
        embed.set_footer(text=style.footer)
    for f in style.fields:
        embed.add_field(name=f.name, value=f.value, inline=f.inline)
    if thumbnail is not None:
        embed.set_thumbnail(url=f"attachment://{thumbnail}")
    return embed


def allowed_mentions(spec: dict[str, Any]) -> discord.AllowedMentions:
    """What may ping, as decided when the announcement was scheduled."""
    roles = [discord.Object(int(r)) for r in spec.get("roles", [])]
    return discord.AllowedMentions(
        everyone=bool(spec.get("everyone")),
        roles=roles or False,
        users=bool(spec.get("users", True)),
        replied_user=False,
    )


async def posting_locale(
    client: discord.Client, announcements: Announcements, guild_id: int
) -> str | None:
    """The language of what the bot posts for everyone in a guild
    (:meth:`~bot.announcements.Announcements.posts_language`: the one chosen with
    ``/settings language``, else the server's own, its ``guild_locale``), else None
    (English)."""
    known = await announcements.posts_language(guild_id)
    if known is not None:
        return known
    # Not in the gateway's cache yet: an occurrence caught up at start (the very one a late
    # note is for) or its report may come before READY. Asked of Discord then.
    try:
        guild = await client.fetch_guild(guild_id, with_counts=False)
    except REQUEST_ERRORS:
        return None
    return str(guild.preferred_locale.value)


def late_note(fire_ts: float) -> str:
    """The note under an occurrence posted late, in the language in effect."""
    when = discord_timestamp(fire_ts, "F")
    return "\n-# " + i18n.t("Sent late: this was scheduled for {when}.", when=when)


def with_late_note(text: str, fire_ts: float, limit: int = MAX_MESSAGE) -> str:
    """``text`` with a note that it was posted late, if it still fits in ``limit``."""
    note = late_note(fire_ts)
    return text + note if len(text) + len(note) <= limit else text


def post_payload(
    ann: Announcement,
    images: Sequence[Image],
    late_for: float | None = None,
    event: EventButton | None = None,
    thumbnail: Image | None = None,
) -> PostPayload:
    """The post of ``ann`` with ``images``; ``late_for``: the due time of an occurrence
    posted late (the post then says so); ``event``: the link button to its event;
    ``thumbnail``: its style's thumbnail (an embed's only)."""
    mentions = allowed_mentions(ann.allowed_mentions)
    title, style = ann.rich.title, ann.rich.style
    if title is None:
        text = ann.text if late_for is None else with_late_note(ann.text, late_for)
        return PostPayload(
            text, None, tuple(images), ann.rich.silent, mentions, event, links=style.buttons
        )
    description = ann.content
    if late_for is not None:  # if it fits in the description and in the embed's total
        others = len(title) + len(style.footer or "")
        others += sum(len(f.name) + len(f.value) for f in style.fields)
        room = min(MAX_EMBED_DESCRIPTION, MAX_EMBED_TOTAL - others)
        description = with_late_note(description, late_for, room)
    embed = discord.Embed(title=title, description=description, colour=EMBED_COLOUR)
    pictures = [i for i in images if (i.content_type or "").startswith("image/")]
    if pictures:  # shown inside the embed rather than above it
        embed.set_image(url=f"attachment://{pictures[0].filename}")
    thumb = thumbnail if style.thumbnail is not None else None
    styled(embed, style, None if thumb is None else thumbnail_name(thumb, images))
    content = None if ann.mention is None else mention_markup(ann.mention)
    return PostPayload(
        content, embed, tuple(images), ann.rich.silent, mentions, event,
        links=style.buttons, thumbnail=thumb,
    )  # fmt: skip


async def stored_payload(
    sched: Scheduler,
    ann: Announcement,
    late_for: float | None,
    event_at: float | None = None,
    event: str | None = None,
) -> PostPayload:
    """The post of ``ann`` as it is now, with its stored files (see :func:`post_payload`);
    ``event_at``: the occurrence whose Discord event, if it was created, the post links to
    with a button (in the language in effect): ``event``, the link its first attempt
    recorded (empty: none), else the event recorded now."""
    async with sched.reader() as db:
        rows = BotDb(db)
        images = await rows.images(ann.id)
        link = event or ""
        if event is None and event_at is not None:
            link = await event_link(rows, ann, event_at)
        reminds = await rows.reminder_lead(ann.id) is not None
        thumbnail = None
        if ann.rich.style.thumbnail is not None and ann.rich.title is not None:
            thumbnail = await rows.thumbnail(ann.id)
    payload = post_payload(ann, images, late_for, event_button(link), thumbnail)
    return replace(payload, remind=remind_button(ann.id, reminds))


async def render_post(
    announcements: Announcements,
    ann: Announcement,
    fire_ts: float,
    *,
    locale: str | None,
    words: str | None,
    event: str | None,
    late_for: float | None = None,
) -> tuple[Announcement, PostPayload]:
    """The occurrence of ``ann`` at ``fire_ts`` as it posts, and its payload: what every
    post of it sends (a delivery, an extra post, the test sent to a manager). Its
    placeholders rendered from the occurrence alone in ``words`` (the posts' language;
    None: English), with ``event`` (the link its first attempt recorded, ``""``: none;
    None: read now); the late note and the buttons said in ``locale``."""
    shown = await announcements.as_posted(ann, fire_ts, locale=words, event=event)
    with i18n.speaking(locale):
        payload = await stored_payload(
            announcements.sched, shown, late_for, event_at=fire_ts, event=event
        )
    return shown, payload
