"""The announcement form's door: a posted form read into what the commands' checks take (the
:class:`~bot.requests.request.AnnouncementRequest` of /schedule, the
:class:`~bot.requests.editing.EditOptions` of /edit), and a checked draft shown back as the
preview of what it will post."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...announcements import MAX_TEMPLATE_NAME
from ...i18n import t
from ...limits import MAX_EMBED_TITLE, MAX_MESSAGE, MAX_TEXT_OPTION, MAX_ZONE_NAME
from ...models import EmbedField, EventSpec, Image, Style, Tidy, mention_markup
from ...parsing import InputError, concerning, resolve_timezone
from ...parsing.placeholders import Occurrence, occurrence, render
from ...requests.checks import Refusal
from ...requests.editing import NO_TITLE, EditOptions, mention_option
from ...requests.events import NEEDS_A_PLACE
from ...requests.files import too_large
from ...requests.places import MAX_ALSO_IN
from ...requests.post_as import MAX_AS_NAME, MAX_AVATAR_BYTES
from ...requests.previous import delete_after_text, parse_delete_after
from ...requests.reminders import lead_text, parse_lead
from ...requests.request import AnnouncementOptions, AnnouncementRequest, Requester
from ...requests.style import (
    MAX_BUTTONS_TEXT,
    MAX_COLOR_TEXT,
    MAX_EMBED_URL,
    MAX_FIELD_NAME,
    MAX_FIELD_VALUE,
    MAX_FIELDS,
    MAX_FOOTER,
    buttons_text,
    check_thumbnail_type,
    color_words,
    parse_buttons,
    parse_color,
    parse_url,
)
from ...requests.validation import empty_message
from .core import FIELD_LABELS, Fields, Upload, field_label

if TYPE_CHECKING:
    from collections.abc import Mapping
    from zoneinfo import ZoneInfo

    import discord

    from ...announcements import Announcement, Draft
    from .core import Dashboard, Form

FIELD_ROWS = tuple(range(1, MAX_FIELDS + 1))
"""The embed fields' rows the form may post (numbered from 1)."""
STYLE_FIELDS = (
    "color", "footer", "url", "buttons", "fields_shown",
    *(f"field_name_{n}" for n in FIELD_ROWS), *(f"field_value_{n}" for n in FIELD_ROWS),
)  # fmt: skip
"""The style's fields: a colour, a footer, the title's link, the buttons (one a line), and
each embed field's name and value (``fields_shown``: how many rows the form shows)."""
STYLE_CHECKBOXES = ("thumbnail_remove", *(f"field_inline_{n}" for n in FIELD_ROWS))
FORM_FIELDS = (
    "message", "title", "channel", "when", "repeat", "timezone", "mention", "until",
    "event_location", "event_minutes", "event_channel", "template", "template_name",
    "channel_shown", "pick", "reminder", "as_name", "also_in", "delete_after", *STYLE_FIELDS,
)  # fmt: skip
CHECKBOXES = ("silent", "update_posted", "event", "pin", "replace", *STYLE_CHECKBOXES)

FIELD_LENGTHS: dict[str, int] = {
    **dict.fromkeys((*FORM_FIELDS, *CHECKBOXES, "action"), MAX_TEXT_OPTION),
    "message": MAX_MESSAGE,
    "title": MAX_EMBED_TITLE,
    "timezone": MAX_ZONE_NAME,
    "template_name": MAX_TEMPLATE_NAME,
    "color": MAX_COLOR_TEXT,
    "footer": MAX_FOOTER,
    "url": MAX_EMBED_URL,
    "buttons": MAX_BUTTONS_TEXT,
    **{f"field_name_{n}": MAX_FIELD_NAME for n in FIELD_ROWS},
    **{f"field_value_{n}": MAX_FIELD_VALUE for n in FIELD_ROWS},
    "as_name": MAX_AS_NAME,
    "also_in": MAX_ALSO_IN,
}
"""The most characters each field of the form holds: what the commands' options hold
(``message`` as /schedule's, ``when`` as its text options, ``template_name`` as /template
save's ``name``, the style's as /style's and Discord's for an embed field)."""


def _file_limit(d: Dashboard) -> float:
    return d.announcements.file_max_bytes


SEVERAL = frozenset({"also_in"})
"""The form's fields sent once per value picked: the other places' checkboxes."""


def _avatar_limit(d: Dashboard) -> float:
    return min(d.announcements.file_max_bytes, MAX_AVATAR_BYTES)


AVATAR_UPLOAD = Upload("as_avatar", _avatar_limit, too_large)
"""The avatar the posts come with under the "Post as" name (as ``/edit as_avatar:``)."""
NEW_FORM = Fields(
    FIELD_LENGTHS, (Upload("image", _file_limit, too_large), AVATAR_UPLOAD),
    shows_refusal=True, several=SEVERAL,
)  # fmt: skip
"""The new-announcement form: its fields, its file and an avatar."""
EDIT_FORM = Fields(
    FIELD_LENGTHS, (Upload("thumbnail", _file_limit, too_large), AVATAR_UPLOAD),
    shows_refusal=True, several=SEVERAL,
)  # fmt: skip
"""The edit form: its fields, a new thumbnail (the announcement's files are kept) and a new
avatar."""


def field_labels() -> dict[str, str]:
    """The forms' fields by name, as their labels say them in the viewer's language (a
    refusal names the field it is about with these words): :data:`~.core.FIELD_LABELS`."""
    rows = [f"field_{part}_{n}" for n in FIELD_ROWS for part in ("name", "value")]
    return {name: field_label(name) for name in (*FIELD_LABELS, *rows)}


def form_values(form: Form) -> dict[str, str]:
    """The announcement form's fields as posted (to show the form again as it was)."""
    return {k: form.get(k) for k in (*FORM_FIELDS, *CHECKBOXES)}


def typed_message(values: dict[str, str]) -> str:
    """The message typed; refused like the commands when it is empty."""
    message = values["message"]
    if not message.strip():
        raise InputError(empty_message(), field="message")
    return message


def _text(values: dict[str, str], name: str) -> str | None:
    return values[name].strip() or None


def _zone(text: str) -> ZoneInfo | None:
    with concerning("timezone"):
        return resolve_timezone(text.strip()) if text.strip() else None


def _channel(text: str) -> int:
    if not text.strip().isdigit():
        raise InputError(t("Pick the channel to post in."), field="channel")
    return int(text)


def _event_minutes(values: dict[str, str]) -> int | None:
    """The event's length typed (None: left empty); the bounds are checked with the
    commands' own words (:func:`bot.requests.events.check_event`)."""
    typed = values["event_minutes"].strip()
    if not typed:
        return None
    if not typed.isdigit() or len(typed) > 6:
        raise InputError(
            t("The event's length is a number of minutes, like 90."), field="event_minutes"
        )
    return int(typed)


def _event_channel(values: dict[str, str]) -> int | None:
    """The voice or stage channel picked for the event (None: none, the location then)."""
    typed = values["event_channel"].strip()
    return int(typed) if typed.isdigit() else None


def event_values(spec: EventSpec | None) -> dict[str, str]:
    """The event fields of a form prefilled with ``spec`` (the announcement's event)."""
    if spec is None:
        return {"event": "", "event_location": "", "event_minutes": "", "event_channel": ""}
    return {
        "event": "on",
        "event_location": spec.location or "",
        "event_minutes": str(spec.minutes),
        "event_channel": "" if spec.channel_id is None else str(spec.channel_id),
    }


def new_event_options(values: dict[str, str]) -> dict[str, Any]:
    """/schedule's event options from the form: none unless "Discord event" is ticked (the
    other event fields are then left out, as a member who did not tick it means)."""
    if values["event"] != "on":
        return {}
    return {
        "event": True,
        "event_location": _text(values, "event_location"),
        "event_minutes": _event_minutes(values),
        "event_channel_id": _event_channel(values),
    }


def edit_event_options(kept: EventSpec | None, values: dict[str, str]) -> dict[str, Any]:
    """/edit's event options from the form, prefilled with ``kept``: unticked, the events
    stop (``event: false``); ticked anew, ``event: true`` with the fields; still ticked, a
    field left as it was is an option left out (so a new place given in one field replaces
    the other, as /edit does)."""
    on = values["event"] == "on"
    if not on:
        return {} if kept is None else {"event": False}
    location = _text(values, "event_location")
    minutes = _event_minutes(values)
    channel_id = _event_channel(values)
    if location is None and channel_id is None:
        # Both fields emptied: no place (on /edit, options left out keep the current one).
        raise Refusal(NEEDS_A_PLACE, field="event_location")
    if kept is None:
        return {
            "event": True,
            "event_location": location,
            "event_minutes": minutes,
            "event_channel_id": channel_id,
        }
    return {
        "event_location": None if location == kept.location else location,
        "event_minutes": None if minutes == kept.minutes else minutes,
        "event_channel_id": None if channel_id == kept.channel_id else channel_id,
    }


def new_request(
    requester: Requester,
    values: dict[str, str],
    has_files: bool,
    style: Style | None = None,
    *,
    as_avatar: bool = False,
) -> AnnouncementRequest:
    """What the new-announcement form asks for, as /schedule would ask it (``style``: its
    style as read, :func:`typed_style`; ``as_avatar``: an avatar was uploaded)."""
    message = typed_message(values)
    mention = values["mention"].strip()
    with concerning("mention"):
        mention_id = mention_option(requester.guild, mention) if mention else None
    options = AnnouncementOptions(
        when=_text(values, "when"),
        channel_id=_channel(values["channel"]),
        repeat=_text(values, "repeat"),
        timezone=_zone(values["timezone"]),
        mention_id=mention_id,
        until=_text(values, "until"),
        title=_text(values, "title"),
        silent=values["silent"] == "on",
        has_files=has_files,
        **new_event_options(values),
        reminder=_text(values, "reminder"),
        style=style,
        as_name=_text(values, "as_name"),
        as_avatar=as_avatar,
        also_in=_text(values, "also_in"),
        pin=True if values["pin"] == "on" else None,
        replace=True if values["replace"] == "on" else None,
        delete_after=_text(values, "delete_after"),
    )
    return AnnouncementRequest(requester, options, message)


def template_mention(guild: discord.Guild, typed: str, kept: str | None = None) -> str | None:
    """The mention a template saved from the form keeps (``everyone`` or ``role:<id>``, as
    :class:`~bot.models.Template` holds it): the role picked, none for "nobody", ``kept``
    (the announcement's, on an edit) when the field is left as it is."""
    typed = typed.strip()
    if not typed:
        return kept
    role_id = mention_option(guild, typed)
    if role_id is None:
        return None
    return "everyone" if role_id == guild.default_role.id else f"role:{role_id}"


def template_channel(values: dict[str, str]) -> int | None:
    typed = values["channel"].strip()
    return int(typed) if typed.isdigit() else None


def typed_edit(
    current: Announcement,
    values: dict[str, str],
    kept_event: EventSpec | None = None,
    kept_reminder: float | None = None,
    thumbnail: Image | None = None,
    kept_as_name: str | None = None,
    kept_places: tuple[int, ...] = (),
    kept_tidy: Tidy | None = None,
    as_avatar: Image | None = None,
) -> EditOptions:
    """What the edit form (prefilled with ``current``, its event ``kept_event``, its
    reminder lead ``kept_reminder`` and the name it posts as ``kept_as_name``) changes, as
    /edit's options: a field left as it was is an option left out; the style is the form's
    whole (``thumbnail``: a new one picked); ``kept_tidy``: what becomes of its posts now;
    ``as_avatar``: a new avatar uploaded."""
    channel_id = _channel(values["channel"])
    silent = values["silent"] == "on"
    kept = kept_tidy or Tidy()
    pin, replace_ = values["pin"] == "on", values["replace"] == "on"
    return EditOptions(
        when=_text(values, "when"),
        repeat=_text(values, "repeat"),
        channel_id=None if channel_id == current.channel_id else channel_id,
        timezone=_zone(values["timezone"]),
        mention=_text(values, "mention"),
        until=_text(values, "until"),
        title=title_change(current.rich.title, values["title"]),
        silent=None if silent == current.rich.silent else silent,
        **edit_event_options(kept_event, values),
        reminder=reminder_change(kept_reminder, values["reminder"]),
        style=typed_style(values, current.rich.style, thumbnail),
        as_name=as_name_change(kept_as_name, values["as_name"]),
        as_avatar=as_avatar,
        also_in=places_change(kept_places, values["also_in"]),
        pin=None if pin == kept.pin else pin,
        replace=None if replace_ == kept.replace else replace_,
        delete_after=delete_after_change(kept.delete_after, values["delete_after"]),
    )


def tidy_values(tidy: Tidy) -> dict[str, str]:
    """The form's fields of what becomes of the posts, prefilled with ``tidy``."""
    return {
        "pin": "on" if tidy.pin else "",
        "replace": "on" if tidy.replace else "",
        "delete_after": delete_after_text(tidy.delete_after),
    }


def delete_after_change(kept: float | None, typed: str) -> str | None:
    """The edit's ``delete_after`` option from the form's field, prefilled with ``kept``:
    None (kept) when unchanged, ``none`` (the posts stay) when emptied."""
    typed = typed.strip()
    if typed == delete_after_text(kept):
        return None
    return typed or ("none" if kept is not None else None)


def template_tidy(values: dict[str, str], locale: str | None) -> Tidy:
    """What becomes of the posts of a template saved from the form."""
    typed = values["delete_after"].strip()
    with concerning("delete_after"):
        after = parse_delete_after(typed, locale) if typed else None
    return Tidy(values["pin"] == "on", values["replace"] == "on", after)


def places_text(channel_ids: tuple[int, ...]) -> str:
    """The other places as the form holds them (the ids of the channels ticked)."""
    return " ".join(str(c) for c in channel_ids)


def places_change(kept: tuple[int, ...], typed: str) -> str | None:
    """The edit's ``also_in`` option from the form's ticked places, prefilled with ``kept``:
    None (kept) when the same ones are ticked, ``none`` when every one was unticked."""
    if typed.split() == places_text(kept).split():
        return None
    return typed.strip() or ("none" if kept else None)


def typed_places(values: Mapping[str, str]) -> tuple[int, ...]:
    """The places ticked on the form, for a template saved from it (each once)."""
    return tuple(dict.fromkeys(int(c) for c in values["also_in"].split() if c.isdigit()))


def as_name_change(kept: str | None, typed: str) -> str | None:
    """The edit's ``as_name`` option from the form's field, prefilled with ``kept``: None
    (kept) when unchanged, ``none`` (the bot again) when emptied."""
    typed = " ".join(typed.split())
    if typed == (kept or ""):
        return None
    return typed or ("none" if kept is not None else None)


def reminder_change(kept: float | None, typed: str) -> str | None:
    """The edit's ``reminder`` option from the form's field, prefilled with ``kept``: None
    (kept) when unchanged, ``none`` (off) when emptied."""
    typed = typed.strip()
    if typed == lead_text(kept):
        return None
    return typed or ("none" if kept is not None else None)


def template_reminder(values: dict[str, str], locale: str | None) -> float | None:
    """The reminder lead a template saved from the form keeps (None: the field is empty)."""
    typed = values["reminder"].strip()
    if not typed:
        return None
    with concerning("reminder"):
        return parse_lead(typed, locale)


def rows_shown(values: Mapping[str, str]) -> int:
    """How many embed field rows the form shows: as many as it said it showed, and every
    filled one (at most :data:`MAX_FIELDS`)."""
    said = values.get("fields_shown", "").strip()
    shown = int(said) if said.isdigit() and len(said) <= 2 else 0
    filled = [n for n in FIELD_ROWS if _row_filled(values, n)]
    return min(MAX_FIELDS, max(shown, filled[-1] if filled else 0))


def _row_filled(values: Mapping[str, str], n: int) -> bool:
    return bool(values.get(f"field_name_{n}", "").strip()) or bool(
        values.get(f"field_value_{n}", "").strip()
    )


def _row(values: Mapping[str, str], n: int) -> tuple[str, str, str]:
    return (
        values.get(f"field_name_{n}", ""),
        values.get(f"field_value_{n}", ""),
        values.get(f"field_inline_{n}", ""),
    )


def _with_rows(values: dict[str, str], rows: list[tuple[str, str, str]]) -> dict[str, str]:
    """``values`` with its embed field rows replaced by ``rows`` (the rest emptied)."""
    out = dict(values)
    for n in FIELD_ROWS:
        name, value, inline = rows[n - 1] if n <= len(rows) else ("", "", "")
        out[f"field_name_{n}"], out[f"field_value_{n}"] = name, value
        out[f"field_inline_{n}"] = inline
    out["fields_shown"] = str(len(rows))
    return out


def compact_fields(values: dict[str, str]) -> dict[str, str]:
    """The form's values with its empty embed field rows taken out (the filled ones move up,
    so that a refusal's "Field 2" is the form's second row)."""
    rows = [_row(values, n) for n in range(1, rows_shown(values) + 1)]
    return _with_rows(values, [r for r in rows if r[0].strip() or r[1].strip()])


def add_field_row(values: dict[str, str]) -> dict[str, str]:
    """The form's values with one more (empty) embed field row shown, up to the limit."""
    rows = [_row(values, n) for n in range(1, rows_shown(values) + 1)]
    if len(rows) < MAX_FIELDS:
        rows.append(("", "", ""))
    return _with_rows(values, rows)


def remove_field_row(values: dict[str, str], n: int) -> dict[str, str]:
    """The form's values without its embed field row ``n`` (the rows after it move up)."""
    rows = [_row(values, k) for k in range(1, rows_shown(values) + 1)]
    return _with_rows(values, [r for k, r in enumerate(rows, 1) if k != n])


def typed_style(
    values: Mapping[str, str], kept: Style | None = None, thumbnail: Image | None = None
) -> Style:
    """The style the form holds: its colour, footer, link, buttons (one a line) and embed
    fields, read with /style's own rules; the thumbnail ``kept`` (an edit's) stays unless
    removed or replaced by ``thumbnail`` (a new file)."""
    typed_color = values["color"].strip()
    color = parse_color(typed_color) if typed_color else None
    typed_url = values["url"].strip()
    url = parse_url(typed_url) if typed_url else None
    with concerning("buttons"):
        buttons = parse_buttons(values["buttons"])
    fields = tuple(
        EmbedField(name.strip(), value.strip(), inline == "on")
        for name, value, inline in (_row(values, n) for n in range(1, rows_shown(values) + 1))
        if name.strip() or value.strip()
    )
    name = None if kept is None or values["thumbnail_remove"] == "on" else kept.thumbnail
    if thumbnail is not None:
        check_thumbnail_type(thumbnail.filename, thumbnail.content_type)
        name = thumbnail.filename
    footer = values["footer"].strip() or None
    return Style(color, footer, name, url, fields, buttons)


def style_values(style: Style) -> dict[str, str]:
    """The style fields of a form prefilled with ``style``."""
    values = {
        "color": "" if style.color is None else color_words(style.color),
        "footer": style.footer or "",
        "url": style.url or "",
        "buttons": buttons_text(style.buttons, "\n"),
        "thumbnail_remove": "",
    }
    rows = [(f.name, f.value, "on" if f.inline else "") for f in style.fields]
    return _with_rows(values, rows)


def title_change(current: str | None, typed: str) -> str | None:
    """The edit's ``title`` option from the form's field, prefilled with ``current``: None
    (kept) when unchanged, ``none`` (removed) when emptied."""
    typed = typed.strip()
    if typed == (current or ""):
        return None
    return typed or NO_TITLE


@dataclass(frozen=True, slots=True)
class PreviewFile:
    filename: str
    inline: str | None
    """A ``data:`` URL showing the image itself (small images only)."""
    kept: bool = False
    """Uploaded with every post without being picked again (a template's file)."""


BLURPLE = 0x5865F2
"""The colour of an embed that has none of its own (the bot's ``EMBED_COLOUR``)."""
INLINE_IMAGE = 2 * 1024 * 1024
"""Images up to this size are shown in the preview itself."""


@dataclass(frozen=True, slots=True)
class Preview:
    """A checked draft as it will post."""

    channel: str
    text: str
    title: str | None
    """Set: the post is an embed with this title and ``text`` as its description."""
    silent: bool
    files: list[PreviewFile]
    notes: list[str]
    upcoming: tuple[datetime, ...]
    event: EventSpec | None = None
    """The Discord event each occurrence gets."""
    event_place: str = ""
    """Where it takes place: its location, or its voice or stage channel's name."""
    style: Style = field(default_factory=Style)
    """Its style, its footer and fields as the occurrence shows them."""
    thumbnail: str | None = None
    """A ``data:`` URL of its embed's thumbnail (None: none)."""

    @property
    def color(self) -> str:
        """The embed's colour as the preview paints it (crier's blurple by default)."""
        return color_words(BLURPLE if self.style.color is None else self.style.color)


def preview_of(
    guild: discord.Guild,
    draft: Draft,
    notes: list[str],
    upcoming: tuple[datetime, ...],
    *,
    shown: Announcement | None = None,
    kept_files: bool = False,
    thumbnail: Image | None = None,
) -> Preview:
    """How ``draft`` will post in ``guild``, with the notes and first times of its check.
    ``shown``: its text and title as its next occurrence posts them (an edit's, rendered by
    :meth:`~bot.announcements.reading.Reading.as_posted` like /info's, its real number and
    event link); without it, as a new announcement's first occurrence posts them.
    ``kept_files``: its files are kept without being picked again (a template's);
    ``thumbnail``: its embed's thumbnail (shown if its style names one)."""
    channel = guild.get_channel_or_thread(draft.channel_id)
    if shown is not None:
        text, title, style = shown.content, shown.rich.title, shown.rich.style
    else:  # As its first occurrence will post it (placeholders rendered).
        occ = occurrence(
            draft.repeat,
            draft.first.timestamp(),
            draft.timezone,
            (upcoming[0] if upcoming else draft.first).timestamp(),
            None if draft.until is None else draft.until.timestamp(),
        )
        text = render(draft.content, occ)
        title = None if draft.rich.title is None else render(draft.rich.title, occ)
        style = rendered_style(draft.rich.style, occ)
    if draft.mention is not None:
        text = f"{mention_markup(draft.mention)} {text}"
    name = channel.name if channel else str(draft.channel_id)
    images = [PreviewFile(f.filename, _inline(f), kept_files) for f in draft.images or ()]
    spec = draft.event
    place = ""
    if spec is not None:
        room = None if spec.channel_id is None else guild.get_channel(spec.channel_id)
        place = spec.location or (f"🔊 {room.name}" if room is not None else str(spec.channel_id))
    thumb = None
    if thumbnail is not None and style.thumbnail is not None and title is not None:
        thumb = _inline(thumbnail)
    return Preview(
        name, text, title, draft.rich.silent, images, notes, upcoming, spec, place, style, thumb
    )  # fmt: skip


def rendered_style(style: Style, occ: Occurrence) -> Style:
    """``style`` with its footer and fields as the occurrence ``occ`` shows them."""
    footer = None if style.footer is None else render(style.footer, occ)
    fields = tuple(replace(f, name=render(f.name, occ), value=render(f.value, occ))
                   for f in style.fields)  # fmt: skip
    return replace(style, footer=footer, fields=fields)


def _inline(image: Image) -> str | None:
    """A ``data:`` URL showing the image (None: not a small image)."""
    if not (image.content_type or "").startswith("image/") or len(image.data) > INLINE_IMAGE:
        return None
    return f"data:{image.content_type};base64,{base64.b64encode(image.data).decode()}"
