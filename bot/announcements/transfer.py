"""A server's announcements and templates read out for an export, and an import written all
or nothing: its announcements (paused ones paused), its templates and the keys that make a
second import of the same file create nothing, in one transaction."""

from __future__ import annotations

import contextlib
import secrets
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from scheduler import ScheduleNotFound

from ..db import BotDb, PendingImport
from ..i18n import t, tn
from ..models import (
    Announcement,
    AnnouncementState,
    Draft,
    EventSpec,
    HistoryAction,
    Image,
    Place,
    PostAs,
    Template,
    Tidy,
)
from .editing import Editing
from .guards import check_templates
from .places import keep_template_places, with_template_places
from .templates import Templates

if TYPE_CHECKING:
    from collections.abc import Sequence

PENDING_FOR = 15 * 60.0
"""Seconds an import's dry run waits for its confirmation (Discord's interaction token lasts
15 minutes); then it can't be confirmed, and is deleted at the next dry run or by the
retention job."""
PENDING_PRUNED_ON_WRITE = 100
"""Expired dry runs deleted by each new one (the retention job deletes the rest)."""

MAX_EXPORTED = 100_000
"""The most live announcements one export reads (far above any server's limit)."""


@dataclass(frozen=True, slots=True)
class ExportRows:
    """What an export of one server holds."""

    announcements: list[Announcement]
    """Its live announcements (scheduled or paused), oldest first."""
    next_fires: dict[int, datetime | None]
    images: dict[int, list[Image]]
    templates: list[Template]
    events: dict[int, EventSpec] = field(default_factory=dict)
    """The Discord event each occurrence gets, of those that get one."""
    reminders: dict[int, float] = field(default_factory=dict)
    """How long before each post their members are reminded, of those that remind."""
    posts_as: dict[int, PostAs] = field(default_factory=dict)
    """Who their posts come from, of those that post as someone (avatars included)."""
    thumbnails: dict[int, Image] = field(default_factory=dict)
    """The thumbnail of each of those whose style has one."""
    places: dict[int, tuple[Place, ...]] = field(default_factory=dict)
    """The other places of each of those that post in several."""
    tidies: dict[int, Tidy] = field(default_factory=dict)
    """What becomes of their posts (pin, replace, delete after), of those that set any."""


@dataclass(frozen=True, slots=True)
class ImportRow:
    """One announcement to import: checked, with the key its export gave it."""

    key: str
    draft: Draft
    paused: bool = False


@dataclass(frozen=True, slots=True)
class ImportDone:
    created: list[tuple[str, Announcement]] = field(default_factory=list)
    """Each row's key and the announcement made for it."""
    templates: list[str] = field(default_factory=list)


class ImportConflict(ValueError):
    """What an import found changed since its dry run (``str(e)`` says what); nothing was
    written."""


class Transfer(Editing, Templates):
    """Exports and imports of a server's announcements."""

    async def export_rows(self, guild_id: int) -> ExportRows:
        async with self.sched.reader() as db:
            rows = BotDb(db)
            live = await rows.live_announcements(guild_id, MAX_EXPORTED)
            images = await rows.live_images(guild_id)
            templates = await rows.templates(guild_id)
            events = await rows.event_specs([a.id for a in live])
            reminders = await rows.reminder_leads([a.id for a in live])
            posts_as = await rows.posts_as([a.id for a in live])
            thumbnails = await rows.live_thumbnails(guild_id)
            templates = await with_template_places(rows, templates)
            places = await rows.places_of([a.id for a in live])
            tidies = await rows.tidies([a.id for a in live])
        live.reverse()  # oldest first: an import numbers them in the same order
        return ExportRows(
            live,
            await self._next_fires(live),
            images,
            templates,
            events,
            reminders,
            posts_as,
            thumbnails,
            places,
            tidies,
        )

    async def imported_keys(self, guild_id: int, keys: Sequence[str]) -> dict[str, int]:
        """Of ``keys``, those an import into the server already created: key → its number."""
        async with self.sched.reader() as db:
            rows = BotDb(db)
            found = await rows.imported(guild_id, keys)
            made = await rows.announcements_by_ids(sorted(set(found.values())))
        numbers = {a.id: a.local_id for a in made}
        return {key: numbers[ann_id] for key, ann_id in found.items() if ann_id in numbers}

    async def import_all(
        self,
        guild_id: int,
        rows_in: Sequence[ImportRow],
        templates: Sequence[Template],
        *,
        actor_id: int,
        pending: str | None = None,
    ) -> ImportDone:
        """Write every row and template in one transaction, or nothing: refused
        (:class:`ImportConflict`) if a key was imported or a template name taken meanwhile
        (a second confirmation, another session), or by the checks :meth:`create_many`
        makes, or the files of its templates with the server's files (its live announcements'
        with the new ones, and its templates') would pass its ``GUILD_FILES_MAX_MB``.
        ``pending``: the token of the stored dry run it confirms, deleted in the same
        commit."""
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            now = ctx.now.timestamp()
            await rows.lock_guild(guild_id, now)  # one import (or template save) at a time
            taken = await rows.imported(guild_id, [r.key for r in rows_in])
            if taken:
                raise ImportConflict(
                    tn("{n} of these announcements was imported meanwhile (the same file "
                       "confirmed twice?). Nothing more was imported.",
                       "{n} of these announcements were imported meanwhile (the same file "
                       "confirmed twice?). Nothing more was imported.", len(taken))
                )  # fmt: skip
            for template in templates:
                if await rows.template(guild_id, template.name) is not None:
                    raise ImportConflict(
                        t("A template named `{name}` was saved meanwhile. Nothing was "
                          "imported; run the import again to see what it would do now.",
                          name=template.name)
                    )  # fmt: skip
            limits = await self.limits_in(rows, guild_id)
            check_templates(limits, await rows.template_count(guild_id), len(templates))
            made = await self.create_many_in(ctx, [r.draft for r in rows_in])
            for row, (a, _) in zip(rows_in, made, strict=True):
                if row.paused:
                    if a.schedule_name is not None:
                        with contextlib.suppress(ScheduleNotFound):
                            await ctx.scheduler.schedules.pause(a.schedule_name)
                    await rows.set_state(a.id, AnnouncementState.PAUSED, now)
                    await rows.add_history(a.id, HistoryAction.PAUSED, actor_id, now)
            await rows.record_imports(
                guild_id, [(r.key, a.id) for r, (a, _) in zip(rows_in, made, strict=True)], now
            )
            files = sum(
                len(f.data) for t in templates for f in (t.image, t.thumbnail) if f is not None
            )
            await self.check_room_for_files(rows, guild_id, files)  # theirs, and the new ones'
            for template in templates:
                kept = replace(template, guild_id=guild_id, author_id=actor_id, created_at=now)
                await rows.insert_template(kept)
                await keep_template_places(rows, kept)
            if pending is not None:
                await rows.delete_pending_import(guild_id, pending)
        return ImportDone(
            [(r.key, a) for r, (a, _) in zip(rows_in, made, strict=True)],
            [template.name for template in templates],
        )

    # --- a dry run waiting for its confirmation ------------------------------------------------

    async def keep_pending(self, guild_id: int, user_id: int, document: str) -> str:
        """Keep the member's dry run of ``document`` in the server, in place of their older
        one (a member has at most one waiting in a server), and delete dry runs (of any
        server) that expired; returns the token that names it."""
        token = secrets.token_hex(12)
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            now = ctx.now.timestamp()
            await rows.prune_pending_imports(now - PENDING_FOR, PENDING_PRUNED_ON_WRITE)
            await rows.keep_pending_import(PendingImport(guild_id, user_id, token, document, now))
        return token

    async def pending(self, guild_id: int, token: str) -> PendingImport | None:
        """The dry run ``token`` names in the server; None once it was applied, replaced
        by the member's next one, or expired (older than :data:`PENDING_FOR`)."""
        async with self.sched.reader() as db:
            found = await BotDb(db).pending_import(guild_id, token)
        now = self.sched.clock.now().timestamp()
        return None if found is None or now - found.created_at > PENDING_FOR else found
