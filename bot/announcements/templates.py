"""A server's templates (``/template``): saved, listed, found and deleted, within the
server's limit on how many it keeps."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..db import BotDb
from ..i18n import t
from ..limits import clip
from ..parsing import ConcernsField
from .guards import check_templates
from .places import forget_template_places, keep_template_places, with_template_places
from .service import AnnouncementService

if TYPE_CHECKING:
    from ..models import Template

MAX_TEMPLATE_NAME = 40
"""Characters in a template's name."""


class TemplateRefused(ConcernsField, ValueError):
    """A template can't be saved, found or deleted; ``str(e)`` says why (shown as it is).
    ``field``: ``name`` when the name is what is refused (empty, too long, taken)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def check_template_name(name: str) -> str:
    """The name as kept (trimmed), or refused if it is empty or too long."""
    kept = " ".join(name.split())
    if not kept:
        raise TemplateRefused(t("A template needs a name, e.g. `name: weekly`."), field="name")
    if len(kept) > MAX_TEMPLATE_NAME:
        raise TemplateRefused(
            t("The template's name is {count} characters; at most {limit}, e.g. `name: weekly`.",
              count=len(kept), limit=MAX_TEMPLATE_NAME), field="name"
        )  # fmt: skip
    return kept


class Templates(AnnouncementService):
    """Templates, one server's at a time."""

    async def save_template(self, template: Template) -> Template:
        """Keep ``template`` under its name; refused if the server already has one by that
        name (whatever its case) or has as many as it may keep, or its file would take the
        server's files (its live announcements' and its templates') past its limit."""
        name = check_template_name(template.name)
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            now = ctx.now.timestamp()
            await rows.lock_guild(template.guild_id, now)  # one count-then-insert at a time
            if await rows.template(template.guild_id, name) is not None:
                raise TemplateRefused(
                    t("This server already has a template named `{name}`. Pick another name, "
                      "or `/template delete name:{name}` first.", name=name), field="name"
                )  # fmt: skip
            limits = await self.limits_in(rows, template.guild_id)
            check_templates(limits, await rows.template_count(template.guild_id))
            files = (f for f in (template.image, template.thumbnail) if f is not None)
            await self.check_room_for_files(
                rows, template.guild_id, sum(len(f.data) for f in files)
            )
            kept = replace(template, name=name, created_at=now)
            await rows.insert_template(kept)
            await keep_template_places(rows, kept)
        return kept

    async def templates(self, guild_id: int) -> list[Template]:
        async with self.sched.reader() as db:
            rows = BotDb(db)
            return await with_template_places(rows, await rows.templates(guild_id))

    async def template_names(self, guild_id: int) -> list[str]:
        """The server's templates' names, by name (no file is read)."""
        async with self.sched.reader() as db:
            return await BotDb(db).template_names(guild_id)

    async def template(self, guild_id: int, name: str) -> Template:
        """The server's template by that name (any case); refused if there is none."""
        async with self.sched.reader() as db:
            rows = BotDb(db)
            found = await rows.template(guild_id, name)
            if found is not None:
                [found] = await with_template_places(rows, [found])
        if found is None:
            raise TemplateRefused(
                t("This server has no template named `{name}`. See `/template list`.",
                  name=clip(name)), field="template"
            )  # fmt: skip
        return found

    async def delete_template(self, guild_id: int, name: str) -> None:
        async with self.sched.transaction() as ctx:
            rows = BotDb(ctx.db)
            await forget_template_places(rows, guild_id, name)
            deleted = await rows.delete_template(guild_id, name)
        if not deleted:
            raise TemplateRefused(
                t("This server has no template named `{name}`; nothing was deleted. See "
                  "`/template list`.", name=clip(name)), field="name"
            )  # fmt: skip
