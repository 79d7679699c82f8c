"""An announcement as one occurrence shows it: its placeholders rendered
(:mod:`bot.parsing.placeholders`) from the occurrence alone."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..parsing.placeholders import EVENT_LINK, has_placeholders, occurrence, render

if TYPE_CHECKING:
    from ..db import BotDb
    from ..models import Announcement


def as_posted_at(
    ann: Announcement,
    fire_ts: float,
    number: int = 1,
    event: str = "",
    locale: str | None = None,
) -> Announcement:
    """``ann`` with its text, embed (or forum post) title, footer and fields as its
    occurrence at ``fire_ts``, the ``number``-th time it comes due, with ``event`` (the link
    to its Discord event, or empty) shows them in ``locale`` (None: English), ``ann`` itself
    when it has no placeholders."""
    if not has_placeholders(shown_texts(ann)):
        return ann
    occ = occurrence(ann.rule, ann.first_ts, ann.timezone, fire_ts, ann.until_ts, number, event)
    title = ann.rich.title
    shown_title = None if title is None else render(title, occ, locale)
    content = render(ann.content, occ, locale)
    style = ann.rich.style
    if has_placeholders(style.texts()):  # its footer and fields say it too
        footer = None if style.footer is None else render(style.footer, occ, locale)
        fields = tuple(
            replace(f, name=render(f.name, occ, locale), value=render(f.value, occ, locale))
            for f in style.fields
        )
        style = replace(style, footer=footer, fields=fields)
    rich = replace(ann.rich, title=shown_title, style=style)
    return replace(ann, content=content, rich=rich)


def shown_texts(ann: Announcement) -> str:
    """Every text of ``ann`` placeholders may be in, run together: its message, title, and
    its embed's footer and fields."""
    return "\n".join((ann.content, ann.rich.title or "", ann.rich.style.texts()))


def counts_occurrences(ann: Announcement) -> bool:
    """Whether ``ann`` shows ``{occurrence}`` (its number is then read from the database)."""
    return "occurrence" in shown_texts(ann)


async def occurrence_number(rows: BotDb, ann: Announcement, fire_ts: float) -> int:
    """The how-manieth time ``ann`` comes due at ``fire_ts``: one plus its occurrences
    recorded before it (posted, failed, missed or skipped). Every attempt at one occurrence
    finds the same number: the earlier ones were recorded before its first attempt."""
    if not counts_occurrences(ann):
        return 1
    return 1 + await rows.occurrences_before(ann.id, fire_ts)


def shows_event(ann: Announcement) -> bool:
    """Whether ``ann`` shows ``{event}`` (the occurrence's event is then read)."""
    return "event" in shown_texts(ann)


async def event_link(rows: BotDb, ann: Announcement, fire_ts: float) -> str:
    """The link to the Discord event of ``ann``'s occurrence at ``fire_ts``, empty when it
    has none. Created ahead of the occurrence, so every attempt at it finds the same one."""
    row = await rows.event_at(ann.id, fire_ts)
    if row is None or row.state != "created":
        return ""
    return event_url(ann.guild_id, row.event_id)


def event_url(guild_id: int, event_id: int | None) -> str:
    """The link to the server's Discord event ``event_id`` (empty for None)."""
    return "" if event_id is None else EVENT_LINK.format(guild_id=guild_id, event_id=event_id)
