"""What an edit changes in an announcement, field by field, in words (before → after).

Pure: compares the announcement as stored with the checked :class:`~bot.models.Draft` of its
edit. The words are shown in the /edit reply and kept (shorter) in the history.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from ..models import Announcement, Draft, EventSpec, Place, Style, Tidy, mention_markup
from ..parsing import discord_timestamp, spoken_duration

if TYPE_CHECKING:
    from datetime import datetime

ONE_OFF_WORDS = "no (posted once)"


class Field(StrEnum):
    """The parts of an announcement an edit may change, in the order they are shown."""

    MESSAGE = "message"
    MENTION = "mention"
    CHANNEL = "channel"
    WHEN = "when"
    REPEAT = "repeat"
    TIMEZONE = "timezone"
    UNTIL = "until"
    TITLE = "title"
    IMAGE = "image"
    SILENT = "silent"
    TAGS = "tags"
    PUBLISH = "publish"
    EVENT = "event"
    REMINDER = "reminder"
    TIMES = "times"
    COLOR = "color"
    FOOTER = "footer"
    THUMBNAIL = "thumbnail"
    URL = "url"
    FIELDS = "fields"
    BUTTONS = "buttons"
    AS_NAME = "as_name"
    """Who its posts come from (a name and avatar, through a webhook; ``none``: the bot)."""
    ALSO_IN = "also_in"
    PIN = "pin"
    REPLACE = "replace"
    DELETE_AFTER = "delete_after"


TIMING = frozenset({Field.WHEN, Field.REPEAT, Field.TIMEZONE})
"""Changes that re-plan the deliveries (a new job or a re-anchored schedule)."""
STYLE = frozenset(
    {Field.COLOR, Field.FOOTER, Field.THUMBNAIL, Field.URL, Field.FIELDS, Field.BUTTONS}
)
"""Changes of its style (``/style``, the dashboard)."""
SHOWN = frozenset({Field.MESSAGE, Field.MENTION, Field.TITLE, Field.IMAGE}) | STYLE
"""Changes to what a post shows (they bump the revision and update a posted message)."""


@dataclass(frozen=True, slots=True)
class Change:
    field: Field
    before: str
    after: str

    @property
    def words(self) -> str:
        """``when: <t:a:f> → <t:b:f>``; a message change is named only (texts are long)."""
        if self.field in (Field.MESSAGE, Field.IMAGE, Field.FOOTER):
            return str(self.field)
        return f"{self.field}: {self.before} → {self.after}"


def stamp(ts: float | None) -> str:
    """A stored time as the history and the /edit reply write it (``<t:N:f>``), or
    ``none``."""
    return "none" if ts is None else discord_timestamp(ts, "f")


def _mention(mention: str | None) -> str:
    return "none" if mention is None else mention_markup(mention)


def _same_rule(a: Announcement, d: Draft) -> bool:
    rule = d.repeat
    if rule is None or a.repeat_kind is None:
        return rule is None and a.repeat_kind is None
    every = None if rule.every is None else rule.every.total_seconds()
    stored = (a.repeat_kind, a.repeat_cron, a.repeat_every, a.repeat_words, a.repeat_nth)
    return stored == (rule.kind, rule.cron, every, rule.words, rule.nth) and (
        a.repeat_step == rule.step
    )


def changes(
    a: Announcement, d: Draft, *, when_given: bool, next_before: datetime | None
) -> list[Change]:
    """What ``d`` changes in ``a``. ``when_given``: a new ``when`` was typed (a recurring
    announcement is then re-anchored there); ``next_before``: its next time before the edit."""
    out: list[Change] = []
    if d.content != a.content:
        out.append(Change(Field.MESSAGE, a.content, d.content))
    if d.mention != a.mention:
        out.append(Change(Field.MENTION, _mention(a.mention), _mention(d.mention)))
    if d.channel_id != a.channel_id:
        out.append(Change(Field.CHANNEL, f"<#{a.channel_id}>", f"<#{d.channel_id}>"))
    before_ts = a.first_ts if next_before is None else next_before.timestamp()
    if when_given and d.first.timestamp() != before_ts:
        out.append(Change(Field.WHEN, stamp(before_ts), stamp(d.first.timestamp())))
    if not _same_rule(a, d):
        after = d.repeat.words if d.repeat is not None else ONE_OFF_WORDS
        out.append(Change(Field.REPEAT, a.repeat_words or ONE_OFF_WORDS, after))
    if d.timezone != a.timezone:
        out.append(Change(Field.TIMEZONE, a.timezone, d.timezone))
    until = None if d.until is None else d.until.timestamp()
    if until != a.until_ts:
        out.append(Change(Field.UNTIL, stamp(a.until_ts), stamp(until)))
    if d.times != a.times:
        out.append(Change(Field.TIMES, _count(a.times), _count(d.times)))
    out += _rich_changes(a, d)
    return out


def _rich_changes(a: Announcement, d: Draft) -> list[Change]:
    """What ``d`` changes in ``a``'s title, files, silence, tags and publishing."""
    out: list[Change] = []
    old, new = a.rich, d.rich
    if new.title != old.title:
        out.append(Change(Field.TITLE, old.title or "none", new.title or "none"))
    if d.images is not None:
        names = ", ".join(i.filename for i in d.images) or "none"
        out.append(Change(Field.IMAGE, "", names))
    if new.silent != old.silent:
        out.append(Change(Field.SILENT, _yes(old.silent), _yes(new.silent)))
    if new.tags != old.tags:
        out.append(Change(Field.TAGS, _tags(old.tags), _tags(new.tags)))
    if new.publish != old.publish:
        out.append(Change(Field.PUBLISH, _yes(old.publish), _yes(new.publish)))
    return out + _style_changes(a.rich.style, d.rich.style, d.thumbnail is not None)


def _style_changes(old: Style, new: Style, new_thumbnail: bool) -> list[Change]:
    """What changes in the style (``new_thumbnail``: a thumbnail file was given)."""
    out: list[Change] = []
    if new.color != old.color:
        out.append(Change(Field.COLOR, _color(old.color), _color(new.color)))
    if new.footer != old.footer:
        out.append(Change(Field.FOOTER, old.footer or "none", new.footer or "none"))
    if new.thumbnail != old.thumbnail or (new_thumbnail and new.thumbnail is not None):
        out.append(Change(Field.THUMBNAIL, old.thumbnail or "none", new.thumbnail or "none"))
    if new.url != old.url:
        out.append(Change(Field.URL, old.url or "none", new.url or "none"))
    if new.fields != old.fields:
        out.append(Change(Field.FIELDS, str(len(old.fields)), str(len(new.fields))))
    if new.buttons != old.buttons:
        out.append(Change(Field.BUTTONS, _labels(old), _labels(new)))
    return out


def _color(color: int | None) -> str:
    return "none" if color is None else f"#{color:06X}"


def _labels(style: Style) -> str:
    return ", ".join(b.label for b in style.buttons) or "none"


def event_change(before: EventSpec | None, after: EventSpec | None) -> Change | None:
    """The change of the Discord event each occurrence gets (None: the same one)."""
    if before == after:
        return None
    return Change(Field.EVENT, event_words(before), event_words(after))


def event_words(spec: EventSpec | None) -> str:
    """``Town hall, 90 min`` (a voice or stage channel as ``<#id>``), or ``none``."""
    if spec is None:
        return "none"
    where = spec.location if spec.channel_id is None else f"<#{spec.channel_id}>"
    return f"{where}, {spec.minutes} min"


def reminder_change(before: float | None, after: float | None) -> Change | None:
    """The change of how long before each occurrence members are reminded (None: none)."""
    if before == after:
        return None
    return Change(Field.REMINDER, lead_words(before), lead_words(after))


def places_change(before: tuple[Place, ...], after: tuple[Place, ...]) -> Change | None:
    """The change of the other places it posts in (None: the same ones, in the same
    order)."""
    if [p.channel_id for p in before] == [p.channel_id for p in after]:
        return None
    return Change(Field.ALSO_IN, places_words(before), places_words(after))


def places_words(places: tuple[Place, ...]) -> str:
    """``<#1> <#2>``, or ``none``."""
    return " ".join(f"<#{p.channel_id}>" for p in places) or "none"


def tidy_changes(before: Tidy, after: Tidy) -> list[Change]:
    """The changes of what becomes of the announcement's posts (pin, replace, delete after)."""
    found = []
    if before.pin != after.pin:
        found.append(Change(Field.PIN, _yes(before.pin), _yes(after.pin)))
    if before.replace != after.replace:
        found.append(Change(Field.REPLACE, _yes(before.replace), _yes(after.replace)))
    if before.delete_after != after.delete_after:
        found.append(
            Change(
                Field.DELETE_AFTER, lead_words(before.delete_after), lead_words(after.delete_after)
            )
        )
    return found


def lead_words(lead: float | None) -> str:
    """A reminder's lead as the history keeps it: ``15 minutes``, or ``none``."""
    return "none" if lead is None else spoken_duration(timedelta(seconds=lead))


def _count(times: int | None) -> str:
    return "none" if times is None else str(times)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _tags(tags: tuple[int, ...]) -> str:
    return ", ".join(str(t) for t in tags) or "none"


def history_detail(found: list[Change]) -> str:
    """The history's short account of an edit: ``message; when: <t:a:f> → <t:b:f>``."""
    return "; ".join(c.words for c in found)
