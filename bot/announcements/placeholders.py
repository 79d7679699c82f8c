"""An announcement as one occurrence shows it: its placeholders rendered
(:mod:`bot.parsing.placeholders`) from the occurrence alone."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..parsing.placeholders import has_placeholders, occurrence, render

if TYPE_CHECKING:
    from ..db import BotDb
    from ..models import Announcement


def as_posted_at(ann: Announcement, fire_ts: float, number: int = 1) -> Announcement:
    """``ann`` with its text and embed (or forum post) title as its occurrence at
    ``fire_ts``, the ``number``-th time it comes due, shows them (``ann`` itself when it has
    no placeholders)."""
    title = ann.rich.title
    if not has_placeholders(ann.content) and not has_placeholders(title):
        return ann
    occ = occurrence(ann.rule, ann.first_ts, ann.timezone, fire_ts, ann.until_ts, number)
    shown_title = None if title is None else render(title, occ)
    return replace(ann, content=render(ann.content, occ), rich=replace(ann.rich, title=shown_title))


def counts_occurrences(ann: Announcement) -> bool:
    """Whether ``ann`` shows ``{occurrence}`` (its number is then read from the database)."""
    return "occurrence" in ann.content + (ann.rich.title or "")


async def occurrence_number(rows: BotDb, ann: Announcement, fire_ts: float) -> int:
    """The how-manieth time ``ann`` comes due at ``fire_ts``: one plus its occurrences
    recorded before it (posted, failed, missed or skipped). Every attempt at one occurrence
    finds the same number: the earlier ones were recorded before its first attempt."""
    if not counts_occurrences(ann):
        return 1
    return 1 + await rows.occurrences_before(ann.id, fire_ts)
