"""The export document (``/export``, ``/import``): a server's live announcements and its
templates as JSON, version :data:`VERSION`, described by ``docs/export.schema.json``.

- :func:`export_document` writes one from what the domain layer read, with each channel and
  role by id *and* name (an import maps them by name: ids are another server's);
- :func:`read_document` reads one back, refusing in words a file that is too large, not
  JSON, nested too deeply, of another version or of the wrong shape; each announcement and
  template is read on its own (:class:`DocAnnouncement`, :class:`DocTemplate`), so one bad
  row is named with why and the others are still checked.

Nothing secret is written: no token, no session, no webhook (who an announcement posts as
is a name and an avatar, never the channel's webhook or its token); the files posted with
an announcement are included (base64), as they are what it posts.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

import discord

from scheduler.triggers import DateStep

from ..announcements.places import MAX_PLACES
from ..announcements.previous import MAX_DELETE_AFTER, MIN_DELETE_AFTER
from ..announcements.reminders import MAX_REMINDER, MIN_REMINDER
from ..i18n import t
from ..models import (
    Announcement,
    Destination,
    EmbedField,
    EventSpec,
    Image,
    LinkButton,
    PostAs,
    Style,
    Template,
    Tidy,
)
from ..parsing import InputError, RepeatRule
from ..parsing.spoken import listed
from .post_as import AVATAR_TYPES, MAX_AS_NAME, MAX_AVATAR_BYTES
from .style import (
    MAX_BUTTON_LABEL,
    MAX_BUTTON_URL,
    MAX_BUTTONS,
    MAX_EMBED_URL,
    MAX_FIELD_NAME,
    MAX_FIELD_VALUE,
    MAX_FIELDS,
    MAX_FOOTER,
    check_thumbnail_type,
    parse_link,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..announcements import ExportRows

VERSION: Final = 6
"""The version ``/export`` writes: 2 added each announcement's ``event``, 3 each
announcement's and template's ``reminder_seconds``, 4 their ``post_as`` (a name and an
avatar) and their ``style``, 5 their ``also_in`` (other places, by name), 6 their ``pin``,
``replace`` and ``delete_after_seconds`` (what becomes of their posts)."""
READ_VERSIONS: Final = (1, 2, 3, 4, 5, 6)
"""The versions ``/import`` reads (a version 1 file is a version 2 one without events, a
version 2 file a version 3 one without reminders, a version 3 file a version 4 one where
everything posts as the bot, without styles, a version 4 file a version 5 one where each
posts in its own channel only, a version 5 file a version 6 one whose posts stay as they
are)."""
MAX_IMPORT_BYTES: Final = 8 * 1024 * 1024
"""The largest file ``/import`` reads: under what any member may upload (10 MiB without
Nitro); an export of 10,000 announcements without files is about 5 MiB."""
MAX_ROWS: Final = 10_000
"""The most announcements one file may hold (and, apart, templates: :data:`MAX_TEMPLATES`)."""
MAX_TEMPLATES: Final = 1_000
MAX_TEXT: Final = 4096
MAX_NAME: Final = 100
MAX_EVENT_MINUTES: Final = 7 * 24 * 60
_KEY: Final = re.compile(r"[A-Za-z0-9:_.-]{1,100}")
_SNOWFLAKE: Final = re.compile(r"[0-9]{1,20}")
_KINDS: Final = {d.value for d in Destination}


class DocumentRefused(ValueError):
    """The file can't be imported at all; ``str(e)`` says why (nothing was written)."""


class RowRefused(ValueError):
    """One announcement or template of the file can't be read; ``str(e)`` says why."""


# --- writing ------------------------------------------------------------------------------------


def export_key(guild_id: int, announcement_id: int) -> str:
    """The stable key of an exported announcement: the same in every export of it."""
    return f"crier:{guild_id}:{announcement_id}"


def _iso(ts: float | datetime | None) -> str | None:
    if ts is None:
        return None
    when = ts if isinstance(ts, datetime) else datetime.fromtimestamp(ts, UTC)
    return when.astimezone(UTC).isoformat()


def _file(image: Image) -> dict[str, Any]:
    return {
        "filename": image.filename,
        "content_type": image.content_type,
        "data": base64.b64encode(image.data).decode("ascii"),
    }


def _channel(guild: discord.Guild, channel_id: int | None) -> dict[str, Any] | None:
    if channel_id is None:
        return None
    found = guild.get_channel_or_thread(channel_id)
    return {"id": str(channel_id), "name": None if found is None else found.name}


def _mention(guild: discord.Guild, mention: str | None) -> dict[str, Any] | None:
    if mention is None:
        return None
    if mention in ("everyone", "here"):
        return {"kind": mention}
    role_id = int(mention.removeprefix("role:"))
    role = guild.get_role(role_id)
    return {"kind": "role", "id": str(role_id), "name": None if role is None else role.name}


def _repeat(a: Announcement) -> dict[str, Any] | None:
    rule = a.rule
    if rule is None:
        return None
    if rule.every is not None:
        return {
            "kind": "interval",
            "every_seconds": rule.every.total_seconds(),
            "words": rule.words,
        }
    step = rule.step
    return {
        "kind": "cron",
        "cron": rule.cron,
        "words": rule.words,
        "nth": list(rule.nth),
        "step": None
        if step is None
        else {"count": step.count, "unit": step.unit, "since": step.since.isoformat()},
    }


def _event(guild: discord.Guild, spec: EventSpec | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    return {
        "minutes": spec.minutes,
        "location": spec.location,
        "channel": _channel(guild, spec.channel_id),
    }


def _tag_names(guild: discord.Guild, a: Announcement) -> list[str]:
    forum = guild.get_channel(a.channel_id)
    if not isinstance(forum, discord.ForumChannel):
        return []
    names = {t.id: t.name for t in forum.available_tags}
    return [names[t] for t in a.rich.tags if t in names]


def _post_as(post_as: PostAs | None) -> dict[str, Any] | None:
    if post_as is None:
        return None
    avatar = None if post_as.avatar is None else _file(post_as.avatar)
    return {"name": post_as.name, "avatar": avatar}


def _places(guild: discord.Guild, channel_ids: list[int]) -> list[dict[str, Any]]:
    """The other places, each by id and name (an import finds them by name); one no
    longer in the server is left out (it could not be found there either)."""
    return [c for c in (_channel(guild, i) for i in channel_ids) if c is not None]


def _seconds(lead: float | None) -> int | None:
    return None if lead is None else round(lead)


def _style(style: Style, thumbnail: Image | None) -> dict[str, Any] | None:
    """A style as exported (None: none), its thumbnail's bytes included."""
    if style.empty:
        return None
    return {
        "color": style.color,
        "footer": style.footer,
        "url": style.url,
        "thumbnail": None if thumbnail is None or style.thumbnail is None else _file(thumbnail),
        "fields": [{"name": f.name, "value": f.value, "inline": f.inline} for f in style.fields],
        "buttons": [{"label": b.label, "url": b.url} for b in style.buttons],
    }


def export_document(guild: discord.Guild, found: ExportRows, now: datetime) -> dict[str, Any]:
    """The export of ``guild``: its live announcements (oldest first) and its templates."""
    announcements = []
    for a in found.announcements:
        destination = _channel(guild, a.channel_id) or {}
        announcements.append(
            {
                "key": export_key(a.guild_id, a.id),
                "number": a.local_id,
                "text": a.content,
                "title": a.rich.title,
                "silent": a.rich.silent,
                "publish": a.rich.publish,
                "destination": {**destination, "kind": a.rich.destination.value},
                "tags": _tag_names(guild, a),
                "mention": _mention(guild, a.mention),
                "first": _iso(a.first_ts),
                "next": _iso(found.next_fires.get(a.id)),
                "timezone": a.timezone,
                "repeat": _repeat(a),
                "until": _iso(a.until_ts),
                "paused": a.state == "paused",
                "files": [_file(i) for i in found.images.get(a.id, [])],
                "event": _event(guild, found.events.get(a.id)),
                "reminder_seconds": _seconds(found.reminders.get(a.id)),
                "post_as": _post_as(found.posts_as.get(a.id)),
                "style": _style(a.rich.style, found.thumbnails.get(a.id)),
                "also_in": _places(guild, [p.channel_id for p in found.places.get(a.id, ())]),
                **_tidy(found.tidies.get(a.id, Tidy())),
            }
        )
    templates = [
        {
            "name": t.name,
            "text": t.content,
            "title": t.title,
            "silent": t.silent,
            "mention": _mention(guild, t.mention),
            "channel": _channel(guild, t.channel_id),
            "file": None if t.image is None else _file(t.image),
            "reminder_seconds": _seconds(t.reminder),
            "post_as": _post_as(t.post_as),
            "style": _style(t.style, t.thumbnail),
            "also_in": _places(guild, list(t.also_in)),
            **_tidy(t.tidy),
        }
        for t in found.templates
    ]
    return {
        "version": VERSION,
        "generator": "crier",
        "exported_at": _iso(now),
        "guild": {"id": str(guild.id), "name": guild.name},
        "announcements": announcements,
        "templates": templates,
    }


def document_bytes(doc: Mapping[str, Any]) -> bytes:
    """The document as UTF-8 JSON, compact (without ``indent`` the C encoder writes it: an
    indented dump of 10,000 announcements takes seconds in pure Python)."""
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()


# --- reading ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Named:
    """A channel or role as the file names it."""

    id: int | None
    name: str


@dataclass(frozen=True, slots=True)
class DocMention:
    kind: str
    """``everyone``, ``here`` or ``role``."""
    role: Named | None = None


@dataclass(frozen=True, slots=True)
class DocEvent:
    """The Discord event each occurrence gets: at ``location`` or in ``channel`` (a voice
    or stage channel, found by name), for ``minutes``."""

    minutes: int
    location: str | None
    channel: Named | None


@dataclass(frozen=True, slots=True)
class DocAnnouncement:
    key: str
    number: int | None
    text: str
    title: str | None
    silent: bool
    publish: bool
    destination: Named
    kind: Destination
    tags: tuple[str, ...]
    mention: DocMention | None
    first: datetime
    next: datetime | None
    timezone: str
    repeat: RepeatRule | None
    until: datetime | None
    paused: bool
    files: tuple[Image, ...]
    event: DocEvent | None = None
    reminder: float | None = None
    """How long before each post the members who ask are reminded (None: not)."""
    post_as: PostAs | None = None
    """Who its posts come from (None: the bot)."""
    style: Style | None = None
    """Its style, still to be checked like /style's (None: none)."""
    thumbnail: Image | None = None
    also_in: tuple[Named, ...] = ()
    """Its other places, by name."""
    tidy: Tidy | None = None
    """What becomes of its posts (None: nothing, as before version 6)."""


@dataclass(frozen=True, slots=True)
class DocTemplate:
    name: str
    text: str
    title: str | None
    silent: bool
    mention: DocMention | None
    channel: Named | None
    file: Image | None
    reminder: float | None = None
    post_as: PostAs | None = None
    style: Style | None = None
    thumbnail: Image | None = None
    also_in: tuple[Named, ...] = ()
    tidy: Tidy | None = None


@dataclass(frozen=True, slots=True)
class Document:
    """A file read back: every row, read or refused (``RowRefused``) on its own."""

    guild_id: int | None
    guild_name: str | None
    announcements: list[tuple[int, DocAnnouncement | RowRefused, str]]
    """(row number from 1, the row or why it can't be read, its label for the answer)."""
    templates: list[tuple[int, DocTemplate | RowRefused, str]]


def import_too_large(size: float) -> DocumentRefused:
    """The refusal of a file of ``size`` bytes, larger than an import may be."""
    return DocumentRefused(
        t("That file is {size} MiB; an import may be at most {limit} MiB. Export fewer "
          "announcements per file.", size=f"{size / (1024 * 1024):.1f}",
          limit=MAX_IMPORT_BYTES // (1024 * 1024))
    )  # fmt: skip


def read_document(raw: bytes) -> Document:
    """The file ``raw`` as a :class:`Document`; refused (:class:`DocumentRefused`) when it
    is no export at all."""
    if len(raw) > MAX_IMPORT_BYTES:
        raise import_too_large(len(raw))
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise DocumentRefused(
            t("That file is not text (UTF-8): attach the `.json` file `/export` made.")
        ) from None
    except RecursionError:
        raise DocumentRefused(
            t("That file is nested too deeply to be an export of crier.")
        ) from None
    except ValueError as exc:
        raise DocumentRefused(
            t("That file is not valid JSON ({error}). Attach the `.json` file `/export` made.",
              error=exc)
        ) from None  # fmt: skip
    if not isinstance(doc, dict):
        raise DocumentRefused(
            t("That file is not an export of crier: its top level isn't an object.")
        )
    version = doc.get("version")
    if version not in READ_VERSIONS or isinstance(version, bool):
        raise DocumentRefused(
            t("That file's `version` is {version}; I read versions {versions} (`/export` "
              "writes {current}).", version=json.dumps(version)[:20],
              versions=listed([str(v) for v in READ_VERSIONS]), current=VERSION)
        )  # fmt: skip
    announcements = doc.get("announcements", [])
    templates = doc.get("templates", [])
    if not isinstance(announcements, list) or not isinstance(templates, list):
        raise DocumentRefused(t("That file's `announcements` and `templates` must be lists."))
    if len(announcements) > MAX_ROWS or len(templates) > MAX_TEMPLATES:
        raise DocumentRefused(
            t("That file has {announcements} announcements and {templates} templates; one "
              "import takes at most {max_announcements} and {max_templates}.",
              announcements=len(announcements), templates=len(templates),
              max_announcements=MAX_ROWS, max_templates=MAX_TEMPLATES)
        )  # fmt: skip
    guild = doc.get("guild")
    guild_id = guild_name = None
    if isinstance(guild, dict):
        guild_id = _optional_id(guild.get("id"))
        name = guild.get("name")
        guild_name = name if isinstance(name, str) else None
    return Document(
        guild_id,
        guild_name,
        [
            _row(t("row {n}", n=i), i, value, _announcement)
            for i, value in enumerate(announcements, 1)
        ],
        [_row(t("template {n}", n=i), i, value, _template) for i, value in enumerate(templates, 1)],
    )


def _row(label: str, i: int, value: Any, read: Any) -> tuple[int, Any, str]:
    if isinstance(value, dict):
        if isinstance(value.get("number"), int) and not isinstance(value["number"], bool):
            label += f" (#{value['number']})"
        elif isinstance(value.get("name"), str):
            label += f" (`{value['name'][:MAX_NAME]}`)"
    try:
        return i, read(value), label
    except RowRefused as refused:
        return i, refused, label
    except RecursionError:
        return i, RowRefused(t("it is nested too deeply")), label


def _get(
    row: Mapping[str, Any], key: str, kind: type | tuple[type, ...], *, null: bool = False
) -> Any:
    if key not in row:
        if null:
            return None
        raise RowRefused(t("`{key}` is missing", key=key))
    value = row[key]
    if value is None and null:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise RowRefused(
            t("`{key}` must be {kind}, not true or false", key=key, kind=_kind_words(kind))
        )
    if not isinstance(value, kind):
        raise RowRefused(
            t("`{key}` must be {kind}, not {got}", key=key, kind=_kind_words(kind),
              got=_json_type(value))
        )  # fmt: skip
    return value


def _kind_words(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    words = {str: t("text"), bool: t("true or false"), int: t("a whole number"),
             float: t("a number"), dict: t("an object"), list: t("a list")}  # fmt: skip
    return t(" or ").join(words.get(k, k.__name__) for k in kinds)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return _kind_words(type(value)) if type(value) in (str, bool, int, float, dict, list) else "?"


def _text(row: Mapping[str, Any], key: str, limit: int, *, null: bool = False) -> str | None:
    value = _get(row, key, str, null=null)
    if value is not None and len(value) > limit:
        raise RowRefused(
            t("`{key}` is {count} characters; at most {limit}", key=key, count=len(value),
              limit=limit)
        )  # fmt: skip
    return value  # type: ignore[no-any-return]


def _optional_id(value: Any) -> int | None:
    if isinstance(value, str) and _SNOWFLAKE.fullmatch(value):
        return int(value)
    return None


def _named(value: Any, key: str) -> Named:
    if not isinstance(value, dict):
        raise RowRefused(t("`{key}` must be an object with a `name`", key=key))
    name = value.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        raise RowRefused(
            t("`{key}` has no `name` (channels and roles are found by name in this server; an "
              "id alone is another server's)", key=key)
        )  # fmt: skip
    raw_id = value.get("id")
    if raw_id is not None and _optional_id(raw_id) is None:
        raise RowRefused(
            t('`{key}.id` must be a snowflake as text, like "123456789012345678"', key=key)
        )
    return Named(_optional_id(raw_id), name)


def _doc_mention(row: Mapping[str, Any]) -> DocMention | None:
    value = _get(row, "mention", dict, null=True)
    if value is None:
        return None
    kind = value.get("kind")
    if kind in ("everyone", "here"):
        return DocMention(kind)
    if kind == "role":
        return DocMention("role", _named(value, "mention"))
    raise RowRefused(t("`mention.kind` must be `everyone`, `here` or `role`"))


def _time(row: Mapping[str, Any], key: str, *, null: bool = False) -> datetime | None:
    value = _get(row, key, str, null=null)
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise RowRefused(
            t('`{key}` must be a time like "2030-03-01T12:00:00+00:00"', key=key)
        ) from None
    if when.tzinfo is None or when.utcoffset() is None:
        raise RowRefused(
            t('`{key}` must say its offset, like "2030-03-01T12:00:00+00:00"', key=key)
        )
    try:
        return when.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:59:59-23:59: past the last time Python holds
        raise RowRefused(
            t('`{key}` is out of range: a time falls in the years 1 to 9999 in UTC, like '
              '"2030-03-01T12:00:00+00:00"', key=key)
        ) from None  # fmt: skip


def _image(value: Any, key: str) -> Image:
    if not isinstance(value, dict):
        raise RowRefused(t("`{key}` must be an object with a `filename` and `data`", key=key))
    name = value.get("filename")
    data = value.get("data")
    ctype = value.get("content_type")
    if not isinstance(name, str) or not name or len(name) > 200:
        raise RowRefused(t("`{key}.filename` must be a file name", key=key))
    if ctype is not None and not isinstance(ctype, str):
        raise RowRefused(t("`{key}.content_type` must be text or null", key=key))
    if not isinstance(data, str):
        raise RowRefused(t("`{key}.data` must be the file in base64", key=key))
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise RowRefused(t("`{key}.data` is not valid base64", key=key)) from None
    return Image(name, ctype, raw)


def _rule(value: Any) -> RepeatRule | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise RowRefused(t("`repeat` must be an object or null"))
    words = _text(value, "words", 300) or ""
    try:
        if value.get("kind") == "interval":
            seconds = _get(value, "every_seconds", (int, float))
            if not 60 <= seconds <= 366 * 86400:
                raise RowRefused(t("`repeat.every_seconds` must be from 60 to 31622400"))
            return RepeatRule("interval", None, timedelta(seconds=seconds), words)
        if value.get("kind") == "cron":
            cron = _text(value, "cron", 200)
            nth = _get(value, "nth", list, null=True) or []
            if len(nth) > 5 or not all(isinstance(n, int) and not isinstance(n, bool) for n in nth):
                raise RowRefused(t("`repeat.nth` must be a short list of whole numbers"))
            step = _step(_get(value, "step", dict, null=True))
            return RepeatRule("cron", cron, None, words, nth=tuple(nth), step=step)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, RowRefused):
            raise
        raise RowRefused(t("`repeat` is not a rule I can use ({error})", error=exc)) from None
    raise RowRefused(t("`repeat.kind` must be `cron` or `interval`"))


def _step(value: Any) -> DateStep | None:
    if value is None:
        return None
    try:
        count = _get(value, "count", int)
        since = date.fromisoformat(_get(value, "since", str))
        return DateStep(count, _get(value, "unit", str), since)
    except RowRefused:
        raise
    except Exception as exc:  # InvalidSchedule, a bad date: said in words
        raise RowRefused(
            t("`repeat.step` is not a date step I can use ({error})", error=exc)
        ) from None


def _announcement(value: Any) -> DocAnnouncement:
    if not isinstance(value, dict):
        raise RowRefused(t("an announcement must be an object, not {got}", got=_json_type(value)))
    key = _get(value, "key", str)
    if not _KEY.fullmatch(key):
        raise RowRefused(t("`key` must be 1 to 100 letters, digits or `:_.-`"))
    number = _get(value, "number", int, null=True)
    destination = value.get("destination")
    kind = destination.get("kind", "text") if isinstance(destination, dict) else "text"
    if kind not in _KINDS:
        raise RowRefused(
            t("`destination.kind` must be one of {kinds}", kinds=", ".join(sorted(_KINDS)))
        )
    tags = _get(value, "tags", list, null=True) or []
    if len(tags) > 5 or not all(isinstance(t, str) and len(t) <= MAX_NAME for t in tags):
        raise RowRefused(t("`tags` must be at most 5 tag names"))
    files = _get(value, "files", list, null=True) or []
    if len(files) > 10:
        raise RowRefused(t("`files` may hold at most 10 files"))
    first = _time(value, "first")
    if first is None:
        raise RuntimeError("expected first is not None")
    return DocAnnouncement(
        key=key,
        number=number,
        text=_text(value, "text", MAX_TEXT) or "",
        title=_text(value, "title", 256, null=True),
        silent=bool(_get(value, "silent", bool, null=True)),
        publish=bool(_get(value, "publish", bool, null=True)),
        destination=_named(destination, "destination"),
        kind=Destination(kind),
        tags=tuple(tags),
        mention=_doc_mention(value),
        first=first,
        next=_time(value, "next", null=True),
        timezone=_text(value, "timezone", 64, null=True) or "UTC",
        repeat=_rule(value.get("repeat")),
        until=_time(value, "until", null=True),
        paused=bool(_get(value, "paused", bool, null=True)),
        files=tuple(_image(f, f"files[{i}]") for i, f in enumerate(files)),
        event=_doc_event(value),
        reminder=_reminder(value),
        post_as=_doc_post_as(value),
        **_doc_style(value),
        also_in=_doc_places(value),
        tidy=_doc_tidy(value),
    )


def _tidy(tidy: Tidy) -> dict[str, Any]:
    """What becomes of the posts, as exported."""
    return {
        "pin": tidy.pin,
        "replace": tidy.replace,
        "delete_after_seconds": _seconds(tidy.delete_after),
    }


def _doc_tidy(row: Mapping[str, Any]) -> Tidy | None:
    """A row's ``pin``, ``replace`` and ``delete_after_seconds`` (None: none of it)."""
    after = _get(row, "delete_after_seconds", int, null=True)
    if after is not None and not MIN_DELETE_AFTER <= after <= MAX_DELETE_AFTER:
        raise RowRefused(
            t("`delete_after_seconds` must be {least} to {most}", least=round(MIN_DELETE_AFTER),
              most=round(MAX_DELETE_AFTER))
        )  # fmt: skip
    tidy = Tidy(
        pin=bool(_get(row, "pin", bool, null=True)),
        replace=bool(_get(row, "replace", bool, null=True)),
        delete_after=None if after is None else float(after),
    )
    return tidy if tidy.on else None


def _doc_places(row: Mapping[str, Any]) -> tuple[Named, ...]:
    value = _get(row, "also_in", list, null=True) or []
    if len(value) > MAX_PLACES:
        raise RowRefused(t("`also_in` may name at most {limit} channels", limit=MAX_PLACES))
    return tuple(_named(v, f"also_in[{i}]") for i, v in enumerate(value))


def _reminder(row: Mapping[str, Any]) -> float | None:
    value = _get(row, "reminder_seconds", int, null=True)
    if value is None:
        return None
    if not MIN_REMINDER <= value <= MAX_REMINDER:
        raise RowRefused(
            t("`reminder_seconds` must be {least} to {most}", least=round(MIN_REMINDER),
              most=round(MAX_REMINDER))
        )  # fmt: skip
    return float(value)


def _doc_post_as(row: Mapping[str, Any]) -> PostAs | None:
    value = _get(row, "post_as", dict, null=True)
    if value is None:
        return None
    name = _text(value, "name", MAX_AS_NAME) or ""
    if not name.strip():
        raise RowRefused(t("`post_as.name` must be 1 to {limit} characters", limit=MAX_AS_NAME))
    raw = value.get("avatar")
    avatar = None if raw is None else _image(raw, "post_as.avatar")
    if avatar is not None and (avatar.content_type or "").lower() not in AVATAR_TYPES:
        raise RowRefused(t("`post_as.avatar` must be a PNG, JPEG, GIF or WebP image"))
    if avatar is not None and len(avatar.data) > MAX_AVATAR_BYTES:
        raise RowRefused(
            t("`post_as.avatar` may be at most {limit} MiB",
              limit=MAX_AVATAR_BYTES // (1024 * 1024))
        )  # fmt: skip
    return PostAs(name, avatar)


def _doc_style(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row's ``style`` read (``style`` and ``thumbnail``), its shape and Discord's limits
    on each part checked (the whole is checked like /style's when it is scheduled)."""
    value = _get(row, "style", dict, null=True)
    if value is None:
        return {}
    color = _get(value, "color", int, null=True)
    if color is not None and not 0 <= color <= 0xFFFFFF:
        raise RowRefused(t("`style.color` must be 0 to 16777215 (0xFFFFFF)"))
    url = _text(value, "url", MAX_EMBED_URL, null=True)
    fields = _get(value, "fields", list, null=True) or []
    if len(fields) > MAX_FIELDS:
        raise RowRefused(t("`style.fields` may hold at most {limit} fields", limit=MAX_FIELDS))
    buttons = _get(value, "buttons", list, null=True) or []
    if len(buttons) > MAX_BUTTONS:
        raise RowRefused(t("`style.buttons` may hold at most {limit} buttons", limit=MAX_BUTTONS))
    for i, item in enumerate(fields + buttons):
        if not isinstance(item, dict):
            raise RowRefused(t("`style` has a field or button that is not an object ({n})", n=i))
    try:
        style = Style(
            color=color,
            footer=_text(value, "footer", MAX_FOOTER, null=True),
            url=None if url is None else parse_link(url, "url", MAX_EMBED_URL),
            fields=tuple(
                EmbedField(
                    _text(f, "name", MAX_FIELD_NAME) or "",
                    _text(f, "value", MAX_FIELD_VALUE) or "",
                    bool(_get(f, "inline", bool, null=True)),
                )
                for f in fields
            ),
            buttons=tuple(
                LinkButton(
                    _text(b, "label", MAX_BUTTON_LABEL) or "",
                    parse_link(_text(b, "url", MAX_BUTTON_URL) or "", "buttons", MAX_BUTTON_URL),
                )
                for b in buttons
            ),
        )
        raw_thumbnail = value.get("thumbnail")
        thumbnail = None
        if raw_thumbnail is not None:
            thumbnail = _image(raw_thumbnail, "style.thumbnail")
            check_thumbnail_type(thumbnail.filename, thumbnail.content_type)
            style = replace(style, thumbnail=thumbnail.filename)
    except InputError as refused:
        raise RowRefused(t("`style`: {reason}", reason=str(refused))) from None
    return {"style": style, "thumbnail": thumbnail}


def _doc_event(row: Mapping[str, Any]) -> DocEvent | None:
    value = _get(row, "event", dict, null=True)
    if value is None:
        return None
    minutes = _get(value, "minutes", int)
    if not 1 <= minutes <= MAX_EVENT_MINUTES:
        raise RowRefused(t("`event.minutes` must be 1 to {limit}", limit=MAX_EVENT_MINUTES))
    location = _get(value, "location", str, null=True)
    if location is not None and not 1 <= len(location.strip()) <= MAX_NAME:
        raise RowRefused(t("`event.location` must be 1 to {limit} characters", limit=MAX_NAME))
    raw_channel = value.get("channel")
    channel = None if raw_channel is None else _named(raw_channel, "event.channel")
    if (location is None) == (channel is None):
        raise RowRefused(t("`event` needs a `location` or a `channel` (one of them)"))
    return DocEvent(minutes, location, channel)


def _template(value: Any) -> DocTemplate:
    if not isinstance(value, dict):
        raise RowRefused(t("a template must be an object, not {got}", got=_json_type(value)))
    channel = value.get("channel")
    file = value.get("file")
    return DocTemplate(
        name=_text(value, "name", MAX_NAME) or "",
        text=_text(value, "text", MAX_TEXT) or "",
        title=_text(value, "title", 256, null=True),
        silent=bool(_get(value, "silent", bool, null=True)),
        mention=_doc_mention(value),
        channel=None if channel is None else _named(channel, "channel"),
        file=None if file is None else _image(file, "file"),
        reminder=_reminder(value),
        post_as=_doc_post_as(value),
        **_doc_style(value),
        also_in=_doc_places(value),
        tidy=_doc_tidy(value),
    )


def template_of(
    t: DocTemplate,
    guild_id: int,
    channel_id: int | None,
    mention: str | None,
    also_in: tuple[int, ...] = (),
) -> Template:
    """The template to keep for ``t`` in the server (its channel, mention and other places
    mapped)."""
    return Template(
        guild_id=guild_id,
        name=t.name,
        content=t.text,
        title=t.title,
        silent=t.silent,
        mention=mention,
        channel_id=channel_id,
        image=t.file,
        reminder=t.reminder,
        post_as=t.post_as,
        style=t.style or Style(),
        thumbnail=t.thumbnail,
        also_in=also_in,
        tidy=t.tidy or Tidy(),
    )
