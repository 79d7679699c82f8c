"""An import's dry run: every row of an export file checked against the target server,
exactly as ``/schedule`` checks what a member asks for (:func:`check_request`), with what it
would create or why it would be refused; nothing is written here.

Channels and roles are found by **name** in the target server (the ids in the file are the
exporting server's): one channel or role of that name, or the row is refused (none, or
several, are never guessed between). An announcement whose key an earlier import into this
server already created is left out ("already imported"), so the same file imported twice
creates nothing the second time.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..announcements import Announcements, ImportRow, NotPossible, TemplateRefused
from ..announcements import check_template_name as checked_name
from ..config import MIB
from ..i18n import catalogs, current_locale, t
from ..limits import clip
from ..models import Template
from ..parsing import InputError, discord_timestamp, resolve_timezone
from ..parsing.errors import MAX_AHEAD
from ..parsing.placeholders import check_placeholders
from ..parsing.spoken import decimal, spoken_rule
from .checks import Refusal, require_manager
from .events import EventRoom
from .export_doc import DocAnnouncement, DocMention, DocTemplate, Document, Named, template_of
from .post_as import with_avatar
from .request import AnnouncementOptions, AnnouncementRequest, Requester
from .style import check_style
from .validation import check_request, empty_message

if TYPE_CHECKING:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    import discord

    from scheduler import Clock


@dataclass(frozen=True, slots=True)
class RowOutcome:
    """What the import does with one row: exactly one of ``created``, ``skipped`` and
    ``refused`` says it, in words."""

    label: str
    created: str | None = None
    skipped: str | None = None
    refused: str | None = None


@dataclass
class ImportPlan:
    announcements: list[RowOutcome] = field(default_factory=list)
    templates: list[RowOutcome] = field(default_factory=list)
    rows: list[ImportRow] = field(default_factory=list)
    """The announcements to create (when nothing is refused)."""
    new_templates: list[Template] = field(default_factory=list)

    @property
    def refused(self) -> list[RowOutcome]:
        return [r for r in self.announcements + self.templates if r.refused is not None]

    @property
    def anything(self) -> bool:
        return bool(self.rows or self.new_templates)


def named_channel(guild: discord.Guild, named: Named) -> Any:
    """The server's one channel (or active thread) called ``named.name``; refused if it has
    none or several. An id in the file counts only if it is this server's channel of that
    very name."""
    by_id = None if named.id is None else guild.get_channel_or_thread(named.id)
    if by_id is not None and by_id.name == named.name:
        return by_id
    found = [c for c in [*guild.channels, *guild.threads] if c.name == named.name]
    if not found:
        raise Refusal(t("this server has no channel named `#{name}`", name=clip(named.name)))
    if len(found) > 1:
        raise Refusal(
            t("this server has {count} channels named `#{name}`; rename all but one (I never "
              "guess which)", count=len(found), name=clip(named.name))
        )  # fmt: skip
    return found[0]


def named_role(guild: discord.Guild, named: Named) -> discord.Role:
    found = [r for r in guild.roles if r.name == named.name and not r.is_default()]
    if not found:
        raise Refusal(t("this server has no role named `@{name}`", name=clip(named.name)))
    if len(found) > 1:
        raise Refusal(
            t("this server has {count} roles named `@{name}`; I never guess", count=len(found),
              name=clip(named.name))
        )  # fmt: skip
    return found[0]


def _mention_id(guild: discord.Guild, mention: DocMention | None) -> int | None:
    if mention is None:
        return None
    if mention.kind in ("everyone", "here"):
        return guild.default_role.id
    if mention.role is None:
        raise RuntimeError("expected mention.role is not None")
    return named_role(guild, mention.role).id


def _mention_text(guild: discord.Guild, mention: DocMention | None) -> str | None:
    if mention is None:
        return None
    if mention.kind in ("everyone", "here"):
        return mention.kind
    if mention.role is None:
        raise RuntimeError("expected mention.role is not None")
    return f"role:{named_role(guild, mention.role).id}"


async def plan_import(
    announcements: Announcements, clock: Clock, requester: Requester, doc: Document
) -> ImportPlan:
    """The dry run of importing ``doc`` into the requester's server, row by row (the
    server's Discord events are asked of Discord once, for every row that wants one)."""
    guild = requester.guild
    require_manager(requester.member, await announcements.settings(guild.id))
    plan = ImportPlan()
    room = EventRoom()
    keys = [row.key for _, row, _ in doc.announcements if isinstance(row, DocAnnouncement)]
    already = await announcements.imported_keys(guild.id, keys)
    seen: dict[str, str] = {}
    for _, row, label in doc.announcements:
        if not isinstance(row, DocAnnouncement):
            plan.announcements.append(RowOutcome(label, refused=str(row)))
            continue
        if row.key in already:
            plan.announcements.append(
                RowOutcome(label, skipped=t("already imported (as #{id})", id=already[row.key]))
            )
            continue
        if row.key in seen:
            plan.announcements.append(
                RowOutcome(label, refused=t("it has the same `key` as {row}", row=seen[row.key]))
            )
            continue
        seen[row.key] = label
        try:
            made, words = await _checked_row(announcements, clock, requester, row, room)
        except (Refusal, InputError, NotPossible) as refused:
            plan.announcements.append(RowOutcome(label, refused=_reason(refused)))
            continue
        plan.rows.append(made)
        plan.announcements.append(RowOutcome(label, created=words))
    await _plan_templates(announcements, guild, doc, plan)
    return plan


def _reason(error: Exception) -> str:
    text = str(error)
    if isinstance(error, NotPossible) and error.at is not None:
        text = t("its `until` is before its next time ({when})",
                 when=discord_timestamp(error.at, "F"))  # fmt: skip
    if not text:
        return type(error).__name__
    # A refusal said as a sentence reads as the reason of a row (``row 2: this server…``);
    # only English is lower-cased so (German nouns keep their capital).
    return text[:1].lower() + text[1:] if current_locale() not in catalogs() else text


async def _checked_row(
    announcements: Announcements,
    clock: Clock,
    requester: Requester,
    row: DocAnnouncement,
    room: EventRoom,
) -> tuple[ImportRow, str]:
    """The announcement ``row`` would be, checked like ``/schedule``; and the answer's words."""
    guild = requester.guild
    if not row.text.strip() and not row.files:
        raise InputError(empty_message())
    channel = named_channel(guild, row.destination)
    zone = resolve_timezone(row.timezone)
    now = clock.now()
    start = import_start(row, zone, now)
    for file in (*row.files, *([] if row.thumbnail is None else [row.thumbnail])):
        if len(file.data) > announcements.file_max_bytes:
            raise Refusal(
                t("its file `{file}` is {size} MiB; an announcement's file may be at most "
                  "{limit} MiB here", file=file.filename, size=decimal(len(file.data) / MIB),
                  limit=decimal(announcements.file_max_bytes / MIB))
            )  # fmt: skip
    options = AnnouncementOptions(
        when=start,
        channel_id=channel.id,
        repeat=row.repeat,
        timezone=zone,
        mention_id=_mention_id(guild, row.mention),
        until=row.until,
        title=row.title,
        silent=row.silent,
        publish=row.publish if row.kind.value == "announcement" else None,
        tags=", ".join(row.tags) or None,
        has_files=bool(row.files) or row.thumbnail is not None,
        **_event_options(guild, row),
        kept_reminder=row.reminder,
        kept_tidy=row.tidy,
        as_name=None if row.post_as is None else row.post_as.name,
        as_avatar=row.post_as is not None and row.post_as.avatar is not None,
        style=row.style,
        kept_places=tuple(named_channel(guild, n).id for n in row.also_in),
    )
    checked = await check_request(
        announcements, clock, AnnouncementRequest(requester, options, row.text), room=room
    )
    first = checked.upcoming[0] if checked.upcoming else checked.draft.first
    draft = replace(checked.draft, images=row.files, thumbnail=row.thumbnail)
    if row.post_as is not None:
        draft = with_avatar(draft, row.post_as.avatar)
    if row.repeat is None:
        repeat = t("once")
    elif current_locale() in catalogs():
        repeat = spoken_rule(row.repeat, zone.key)
    else:
        repeat = row.repeat.words
    words = t("in {channel}, {repeat}, first {when}", channel=f"<#{channel.id}>", repeat=repeat,
              when=discord_timestamp(first, "F"))  # fmt: skip
    if row.paused:
        words += t(", paused")
    return ImportRow(row.key, draft, paused=row.paused), words


def _event_options(guild: discord.Guild, row: DocAnnouncement) -> dict[str, Any]:
    """The event options of ``row`` (its channel found by name in this server)."""
    if row.event is None:
        return {}
    channel = None if row.event.channel is None else named_channel(guild, row.event.channel)
    return {
        "event": True,
        "event_location": row.event.location,
        "event_minutes": row.event.minutes,
        "event_channel_id": None if channel is None else channel.id,
    }


def import_start(row: DocAnnouncement, zone: ZoneInfo, now: datetime) -> datetime:
    """Where the imported announcement starts: its next time as exported if still ahead,
    else (a recurring one) its rule's next time from now; refused (:class:`Refusal`, in
    words) when that is past (a one-off whose time passed), more than ``MAX_AHEAD`` (about 5
    years) ahead as ``/schedule`` refuses it, or its ``until`` is, or its rule can't be used
    (a bad cron field, no time ahead within the years Python holds)."""
    nxt = row.next or row.first
    try:
        if row.repeat is not None:
            row.repeat.trigger(zone, row.first)  # a rule the scheduler takes
        if nxt > now:
            start = nxt
        elif row.repeat is None:
            raise Refusal(t("its time ({when}) has passed", when=discord_timestamp(nxt, "F")))
        else:
            start = row.repeat.trigger(zone, row.first).next_after(now)
    except (ValueError, OverflowError) as exc:  # InvalidSchedule, no time left: in words
        raise Refusal(t("its `repeat` is not a rule I can use ({error})", error=exc)) from None
    if nxt <= now and row.until is not None and start > row.until:
        raise Refusal(t("its `until` ({when}) has passed", when=discord_timestamp(row.until, "F")))
    reach = now + MAX_AHEAD
    for key, when in (("next", start), ("until", row.until)):
        if when is not None and when > reach:
            raise Refusal(
                t("its `{key}` ({when}) is more than 5 years ahead; I schedule up to {limit}",
                  key=key, when=discord_timestamp(when, "F"),
                  limit=discord_timestamp(reach, "D"))
            )  # fmt: skip
    return start


async def _plan_templates(
    announcements: Announcements, guild: discord.Guild, doc: Document, plan: ImportPlan
) -> None:
    existing = {t.name.casefold(): t for t in await announcements.templates(guild.id)}
    _, limits = await announcements.guild_limits(guild.id)
    room = limits.max_templates - len(existing)
    names: set[str] = set()
    for _, row, label in doc.templates:
        if not isinstance(row, DocTemplate):
            plan.templates.append(RowOutcome(label, refused=str(row)))
            continue
        try:
            name = checked_name(row.name)
            check_placeholders(row.text, "the text")
            check_placeholders(row.title, "the title")
            if row.style is not None:
                check_style(row.style, row.title, row.text)
            channel = None if row.channel is None else named_channel(guild, row.channel)
            mention = _mention_text(guild, row.mention)
            places = tuple(named_channel(guild, n).id for n in row.also_in)
        except (Refusal, InputError, TemplateRefused) as refused:
            plan.templates.append(RowOutcome(label, refused=_reason(refused)))
            continue
        made = template_of(
            replace(row, name=name),
            guild.id,
            None if channel is None else channel.id,
            mention,
            places,
        )
        here = existing.get(name.casefold())
        if here is not None:
            same = (here.content, here.title, here.silent) == (
                made.content,
                made.title,
                made.silent,
            )
            if same:
                plan.templates.append(RowOutcome(label, skipped=t("already here, the same")))
            else:
                plan.templates.append(
                    RowOutcome(
                        label,
                        refused=t("this server has a different template `{name}`", name=here.name),
                    )
                )
            continue
        if name.casefold() in names:
            plan.templates.append(RowOutcome(label, refused=t("its name is in the file twice")))
            continue
        names.add(name.casefold())
        if room <= 0:
            plan.templates.append(
                RowOutcome(
                    label,
                    refused=t(
                        "this server would pass its limit of {limit} templates "
                        "(MAX_TEMPLATES_PER_GUILD)",
                        limit=limits.max_templates,
                    ),
                )
            )
            continue
        room -= 1
        plan.new_templates.append(made)
        plan.templates.append(RowOutcome(label, created=t("a new template")))
