"""A server's templates (list, save from an announcement, delete) and its export and import
on the dashboard, through the same code as /template, /export and /import, answered with the
same words: the export is a download, the import an upload answered with the same dry run,
whose confirmation applies all of it or nothing."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from aiohttp import web

from ...announcements import MAX_TEMPLATE_NAME, NotFound, TemplateRefused
from ...i18n import t
from ...limits import MAX_TEXT_OPTION
from ...parsing import InputError
from ...render import import_report, template_saved
from ...requests.checks import Refusal, can_read
from ...requests.export_doc import (
    MAX_IMPORT_BYTES,
    document_bytes,
    export_document,
    import_too_large,
    read_document,
)
from ...requests.importing import plan_import
from ...requests.templates import template_from
from .core import (
    CONFIRM,
    Confirmation,
    FieldError,
    Fields,
    Upload,
    Viewer,
    field_error,
    form_of,
)
from .pages import GUILD, GuildPages, get, post

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ...requests.request import Requester

log = logging.getLogger(__name__)

IMPORT_FORM = Fields(
    uploads=(Upload("file", lambda _: MAX_IMPORT_BYTES, lambda size, _: import_too_large(size)),)
)
"""The import's form: its file, no larger than an import may be."""


SAVE_FORM = Fields({"name": MAX_TEMPLATE_NAME, "from": MAX_TEXT_OPTION}, shows_refusal=True)
"""The templates page's form that saves an announcement as a template (a refusal, a field
too long included, shown at its field on the page)."""


class TransferPages(GuildPages):
    """``/templates``, ``/export`` and ``/import``."""

    @get(GUILD + "/templates")
    async def templates(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        who = await self.requester(request, viewer)
        return await self.templates_page(viewer, who, flash=await self.d.flash(viewer))

    async def templates_page(
        self,
        viewer: Viewer,
        who: Requester,
        *,
        flash: str | None = None,
        typed: Mapping[str, str] | None = None,
        error: FieldError | None = None,
    ) -> web.Response:
        """The templates and the form that saves one; a refused save comes back here with
        what was typed and the refusal at its field (400)."""
        kept = await self.d.announcements.templates(who.guild.id)
        _, limits = await self.d.announcements.guild_limits(who.guild.id)
        return self.d.render(
            "templates.html", viewer, status=400 if error else 200, guild=who.guild,
            templates=kept, limit=limits.max_templates, flash=flash, error=error,
            values=typed or {}, lengths=SAVE_FORM.text,
        )  # fmt: skip

    @post(GUILD + "/templates", form=SAVE_FORM)
    async def save_template(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """/template save, from the form's name and announcement number; refused, the form
        again with the refusal at the field it is about (``name`` or ``from``)."""
        who = await self.requester(request, viewer)
        form = form_of(request)
        typed = {"name": form.get("name"), "from": form.get("from")}
        raw = typed["from"].strip().lstrip("#")
        try:
            form.check()  # a field too long: refused at it (its text not repeated)
            if not raw.isdigit():
                raise Refusal(
                    t("Give the number of the announcement to save, e.g. `12`."), field="from"
                )
            made = await template_from(self.d.announcements, who, int(raw), typed["name"])
            kept = await self.d.announcements.save_template(made)
        except NotFound as missing:
            error = field_error(missing)
            if error is None:
                raise
            return await self.templates_page(
                viewer, who, typed=typed, error=FieldError(error.text, "from")
            )
        except (Refusal, TemplateRefused, InputError) as refused:
            error = field_error(refused)
            if error is None or error.field is None:
                raise  # about the request as a whole (rights, the server's limit): as before
            return await self.templates_page(viewer, who, typed=typed, error=error)
        await self.d.sessions.set_flash(viewer.session, template_saved(kept, int(raw)))
        raise web.HTTPSeeOther(f"/g/{who.guild.id}/templates")

    @post(GUILD + "/templates/delete", form=Fields({"name": MAX_TEXT_OPTION, CONFIRM: 3}))
    async def delete_template(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """/template delete, from its confirmation page (the first click asks)."""
        who = await self.requester(request, viewer)
        name = form_of(request).get("name")
        await self.d.announcements.template(who.guild.id, name)  # none: refused, not asked
        shown = " ".join(name.split())
        ask = Confirmation(
            title=t("Delete the template {name}?", name=shown),
            question=t(
                "The template `{name}` is deleted for everyone on this server. Announcements "
                "started from it are not changed. This can't be undone.", name=shown,
            ),
            button=t("Delete the template {name}", name=shown),
            back=f"/g/{who.guild.id}/templates",
            fields={"name": name},
        )  # fmt: skip
        asked = self.d.confirm_first(request, viewer, ask, who.guild)
        if asked is not None:
            return asked
        await self.d.announcements.delete_template(who.guild.id, name)
        await self.d.sessions.set_flash(
            viewer.session, t("🗑️ Deleted the template `{name}`.", name=" ".join(name.split()))
        )
        raise web.HTTPSeeOther(f"/g/{who.guild.id}/templates")

    @get(GUILD + "/export")
    async def export(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """The export as a download (the announcements of channels the viewer can't see left
        out, as /export leaves them out)."""
        who = await self.requester(request, viewer)
        found = await self.d.announcements.export_rows(who.guild.id)
        kept = [a for a in found.announcements if can_read(who.member, who.guild, a.channel_id)]
        found = replace(found, announcements=kept)
        doc = export_document(who.guild, found, self.d.clock.now())
        data = await asyncio.to_thread(document_bytes, doc)  # off the event loop
        day = self.d.clock.now().strftime("%Y-%m-%d")
        return web.Response(
            body=data,
            content_type="application/json",
            headers={
                "Content-Disposition": f'attachment; filename="crier-{who.guild.id}-{day}.json"'
            },
        )

    @get(GUILD + "/import")
    async def import_form(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        who = await self.requester(request, viewer)
        return self.d.render(
            "import.html", viewer, guild=who.guild, report=None, token=None, refused=False,
            flash=await self.d.flash(viewer),
        )  # fmt: skip

    @post(GUILD + "/import", form=IMPORT_FORM)
    async def upload(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """The uploaded file's dry run, and (if nothing is refused) the form that confirms it."""
        who = await self.requester(request, viewer)
        file = form_of(request).files.get("file")
        if file is None:
            raise Refusal(t("Choose the `.json` file an export made, then upload it."))
        doc = await asyncio.to_thread(read_document, file.data)  # off the event loop
        plan = await plan_import(self.d.announcements, self.d.clock, who, doc)
        _, report = import_report(plan)
        token = None
        if not plan.refused and plan.anything:  # (one per member: their older one goes)
            token = await self.d.announcements.keep_pending(
                who.guild.id, who.member.id, file.data.decode()
            )
        return self.d.render(
            "import.html", viewer, guild=who.guild, report=report, token=token,
            refused=bool(plan.refused),
        )  # fmt: skip

    @post(GUILD + "/import/confirm", form=Fields({"token": MAX_TEXT_OPTION}))
    async def confirm(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """Apply the dry run this form names: every row checked again, all or nothing."""
        who = await self.requester(request, viewer)
        token = form_of(request).get("token")
        found = await self.d.announcements.pending(who.guild.id, token) if token.isalnum() else None
        if found is None:
            raise Refusal(
                t(
                    "This import was already applied, or its dry run expired (they wait 15 "
                    "minutes) or was replaced by your newer one. Upload the file again to see "
                    "what it would do now."
                )
            )
        if found.user_id != who.member.id:
            raise Refusal(t("Only the member who uploaded this file can confirm its import."))
        doc = await asyncio.to_thread(read_document, found.document.encode())
        plan = await plan_import(self.d.announcements, self.d.clock, who, doc)
        if plan.refused or not plan.anything:
            _, report = import_report(plan)
            return self.d.render(
                "import.html", viewer, guild=who.guild, report=report, token=None,
                refused=bool(plan.refused),
            )  # fmt: skip
        done = await self.d.announcements.import_all(
            who.guild.id, plan.rows, plan.new_templates, actor_id=who.member.id, pending=token
        )
        log.info(
            "import into guild %d by %d on the dashboard: %d announcements, %d templates",
            who.guild.id, who.member.id, len(done.created), len(done.templates),
        )  # fmt: skip
        head, _ = import_report(plan, done=done)
        await self.d.sessions.set_flash(viewer.session, head.split("\n")[0])
        raise web.HTTPSeeOther(f"/g/{who.guild.id}")
