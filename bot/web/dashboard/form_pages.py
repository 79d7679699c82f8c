"""The announcement form: a new announcement and an edit, previewed or saved, through the same
checks as /schedule and /edit (:func:`bot.requests.validation.check_request` on the request
the form is read into) and answered with the same words; a refusal shows the form again as
it was posted, with the answer, and writes nothing.

A new announcement may start from one of the server's templates (``/new?template=name``):
the form comes filled with what ``/schedule template:name`` takes from it
(:func:`bot.requests.templates.started_from`), each field then the member's to change, and
the template's file is uploaded unless another is picked. An edit's preview shows the next
occurrence as it will post, rendered as /info renders it
(:meth:`bot.announcements.reading.Reading.as_posted`: its real number and event link)."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ...announcements import TemplateRefused
from ...models import PostAs, Style
from ...parsing import concerning, zone_names
from ...parsing.display import example_date
from ...render import confirmation, edit_reply, form_template_saved
from ...requests.checks import require_readable
from ...requests.editing import check_edit
from ...requests.post_as import check_as_name, checked_avatar, with_avatar
from ...requests.reminders import lead_text
from ...requests.style import MAX_FIELDS
from ...requests.templates import Started, started_from, template_of_form
from ...requests.validation import check_request
from .core import FieldError, Form, Viewer, field_error, form_of
from .forms import (
    EDIT_FORM,
    FIELD_LENGTHS,
    NEW_FORM,
    Preview,
    add_field_row,
    compact_fields,
    event_values,
    field_labels,
    form_values,
    new_request,
    places_text,
    preview_of,
    remove_field_row,
    rows_shown,
    style_values,
    template_channel,
    template_mention,
    template_reminder,
    template_tidy,
    tidy_values,
    typed_edit,
    typed_message,
    typed_places,
    typed_style,
)
from .pages import ANNOUNCEMENT, GUILD, GuildPages, get, post

if TYPE_CHECKING:
    from collections.abc import Mapping

    import discord

    from ...announcements import Announcement, Draft
    from ...models import Image, Template
    from ...requests.request import Requester

log = logging.getLogger(__name__)

SAVE_TEMPLATE = "save_template"
"""The ``action`` of the form's "Save as template" button."""
USE_TEMPLATE = "use_template"
"""The ``action`` of the template picker's "Fill the form from it" button."""
ENTER = "enter"
"""The ``action`` of the form's first (unseen) button, the one Enter in a field presses."""
RENAMED = {"name": "template_name", "template": "pick"}
"""The options the form's fields name otherwise: /template save's ``name`` is the form's
"Template name", /schedule's ``template`` its picker."""


ADD_FIELD = "add_field"
"""The ``action`` of the form's "Add a field" button (one more embed field row)."""
REMOVE_FIELD = "remove_field_"
"""The ``action`` of an embed field row's "Remove" button, followed by the row's number."""


def field_rows_change(action: str, values: dict[str, str]) -> dict[str, str] | None:
    """The form's values after its "Add a field" or a row's "Remove" button (None: the
    action is another): the form is shown again with them, nothing checked or saved."""
    if action == ADD_FIELD:
        return add_field_row(values)
    number = action.removeprefix(REMOVE_FIELD)
    if action.startswith(REMOVE_FIELD) and number.isdigit() and len(number) <= 2:
        return remove_field_row(values, int(number))
    return None


def action_of(form: Form) -> str:
    """The button the form was sent with. Enter in a field presses the first one
    (:data:`ENTER`): the form's main action, or "Save as template" when a template name is
    typed (pressed in that field, Enter must not drop the name it holds; the name is
    cleared once saved, so Enter does the main action again)."""
    action = form.get("action")
    if action == ENTER:
        return SAVE_TEMPLATE if form.get("template_name").strip() else "save"
    return action


class FormPages(GuildPages):
    """``/new`` and ``/edit``: the form, its preview, and what it saves."""

    @get(GUILD + "/new")
    async def new_form(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """The empty form, or (``?template=name``) one filled from that template; an unknown
        name is answered as /schedule answers it, over the empty form."""
        who = await self.requester(request, viewer)
        first = who.guild.text_channels[0].id if who.guild.text_channels else ""
        values = {"channel": str(first)}
        name = request.query.get("template", "").strip()
        if not name:
            return await self.form_page(viewer, who, values)
        try:
            template = await self.d.announcements.template(who.guild.id, name)
        except TemplateRefused as refused:
            return await self.form_page(viewer, who, values, error=field_error(refused, RENAMED))
        return await self.form_page(viewer, who, values | template_values(who, template))

    @post(GUILD + "/new", form=NEW_FORM)
    async def create(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        who = await self.requester(request, viewer)
        form = form_of(request)
        values = form_values(form)
        try:
            form.check()  # a field too long: the form again, saying which
            return await self._create(viewer, who, form, values)
        except Exception as exc:
            return await self.refused(exc, viewer, who, values)

    async def _create(
        self, viewer: Viewer, who: Requester, form: Form, values: dict[str, str]
    ) -> web.StreamResponse:
        """Preview or schedule what the form asks for, save it as a template, or fill it
        from the template picked."""
        d = self.d
        action = action_of(form)
        if action == USE_TEMPLATE:
            return await self.use_template(viewer, who, values, form.get("pick"))
        rows = field_rows_change(action, values)
        if rows is not None:
            return await self.form_page(viewer, who, rows)
        values.update(compact_fields(values))
        image = form.files.get("image")
        avatar = uploaded_avatar(form)
        stored = await self.template_file(who, values["template"], has_image=image is not None)
        # A template's thumbnail is kept (the new form has no thumbnail field of its own).
        kept = await self.template_thumbnail(who, values["template"])
        style = typed_style(values, None if kept is None else Style(thumbnail=kept.filename))
        thumbnail = kept if style.thumbnail is not None else None
        if action == SAVE_TEMPLATE:
            mention = template_mention(who.guild, values["mention"])
            return await self.save_as_template(
                viewer, who, values, mention, image or stored, style, thumbnail, avatar=avatar
            )
        draft, notes, upcoming = await check_request(
            d.announcements,
            d.clock,
            new_request(
                who, values, has_files=image is not None or stored is not None, style=style,
                as_avatar=avatar is not None,
            ),
        )  # fmt: skip
        if image is not None:
            draft = replace(draft, images=(image,))
        elif stored is not None:
            draft = replace(draft, images=(stored,))
        draft = replace(draft, thumbnail=thumbnail)
        draft = await self.template_avatar(who, values, draft)
        if avatar is not None:
            draft = with_avatar(draft, avatar)
        if action == "preview":
            preview = preview_of(
                who.guild, draft, notes, upcoming,
                kept_files=image is None and stored is not None, thumbnail=thumbnail,
            )  # fmt: skip
            return await self.form_page(viewer, who, values, preview=preview)
        announcement, first = await d.announcements.create(draft)
        log.info(
            "announcement %d (#%d) scheduled on the dashboard in guild %d channel %d by %d",
            announcement.id, announcement.local_id, who.guild.id, draft.channel_id, who.member.id,
        )  # fmt: skip
        await d.sessions.set_flash(
            viewer.session, confirmation(announcement, first, notes, upcoming)
        )
        raise web.HTTPSeeOther(f"/g/{who.guild.id}/a/{announcement.local_id}")

    async def use_template(
        self, viewer: Viewer, who: Requester, values: dict[str, str], name: str
    ) -> web.Response:
        """The form filled from the template ``name`` without losing what the member typed:
        the template fills the fields left empty (and the channel, unless another was
        picked); the note names the fields kept over the template's. No name: the form as
        it is, started from no template."""
        if not name.strip():
            return await self.form_page(viewer, who, {**values, "template": ""})
        template = await self.d.announcements.template(who.guild.id, name)
        filled = template_values(who, template)
        labels = field_labels()
        merged = dict(values)
        kept: list[str] = []
        for key in (
            "message",
            "title",
            "mention",
            "reminder",
            "as_name",
            "also_in",
            "delete_after",
        ):
            if not values[key].strip():
                merged[key] = filled[key]
            elif filled[key] and values[key] != filled[key]:
                kept.append(labels[key])
        for box in ("silent", "pin", "replace"):  # ticked stays ticked
            if values[box] != "on":
                merged[box] = filled[box]
        if "channel" in filled:
            if values["channel"] in ("", values["channel_shown"]):
                merged["channel"] = filled["channel"]
            elif values["channel"] != filled["channel"]:
                kept.append(labels["channel"])
        for key in ("color", "footer", "url", "buttons"):
            if not values[key].strip():
                merged[key] = filled[key]
        if rows_shown(values) == 0:  # its embed fields, if none were typed
            merged.update({k: v for k, v in filled.items() if k.startswith("field")})
        merged["template"] = filled["template"]
        return await self.form_page(viewer, who, merged, kept_typed=kept)

    async def template_thumbnail(self, who: Requester, name: str) -> Image | None:
        """The thumbnail of the template the form started from (``name``; none: empty)."""
        if not name.strip():
            return None
        return (await self.d.announcements.template(who.guild.id, name)).thumbnail

    async def template_avatar(self, who: Requester, values: dict[str, str], draft: Draft) -> Draft:
        """``draft`` with the avatar of the template the form started from, when it posts
        under that template's name (an avatar uploaded with the form replaces it)."""
        name = values["template"].strip()
        if not name or not isinstance(draft.post_as, PostAs):
            return draft
        template = await self.d.announcements.template(who.guild.id, name)
        if template.post_as is None or template.post_as.name != draft.post_as.name:
            return draft
        return with_avatar(draft, template.post_as.avatar)

    async def template_file(self, who: Requester, name: str, *, has_image: bool) -> Image | None:
        """The file of the template the form started from (``name``; none: empty), uploaded
        as /schedule uploads it: unless another was picked (``has_image``)."""
        if not name.strip():
            return None
        template = await self.d.announcements.template(who.guild.id, name)
        return started(who, template, has_image=has_image).image

    @get(ANNOUNCEMENT + "/edit")
    async def edit_form(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        who = await self.requester(request, viewer)
        a = await self.d.announcements.get(who.guild.id, self.local_id(request))
        require_readable(who.member, who.guild, a)  # its text is in the form
        values = {
            "message": a.content,
            "title": a.rich.title or "",
            "channel": str(a.channel_id),
            "silent": "on" if a.rich.silent else "",
            "update_posted": "on",
            **event_values(await self.d.announcements.event_spec(a.id)),
            "reminder": lead_text(await self.d.announcements.reminder_lead(a.id)),
            **style_values(a.rich.style),
            "as_name": (await self.d.announcements.post_as_names([a.id])).get(a.id, ""),
            "also_in": places_text(await self.place_ids(a)),
            **tidy_values(await self.d.announcements.tidy(a.id)),
        }
        return await self.form_page(viewer, who, values, editing=a)

    async def place_ids(self, a: Announcement) -> tuple[int, ...]:
        """The other places ``a`` posts in (their channels' ids)."""
        return tuple(p.channel_id for p in await self.d.announcements.places(a.id))

    @post(ANNOUNCEMENT + "/edit", form=EDIT_FORM)
    async def edit(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        who = await self.requester(request, viewer)
        current = await self.d.announcements.get(who.guild.id, self.local_id(request))
        require_readable(who.member, who.guild, current)  # saved, or copied to a template
        form = form_of(request)
        values = form_values(form)
        try:
            form.check()  # a field too long: the form again, saying which
            return await self._edit(viewer, who, current, form, values)
        except Exception as exc:
            return await self.refused(exc, viewer, who, values, editing=current)

    async def _edit(
        self,
        viewer: Viewer,
        who: Requester,
        current: Announcement,
        form: Form,
        values: dict[str, str],
    ) -> web.StreamResponse:
        """Preview or save the edit the form asks for, or save it as a template."""
        d = self.d
        action = action_of(form)
        rows = field_rows_change(action, values)
        if rows is not None:
            return await self.form_page(viewer, who, rows, editing=current)
        values.update(compact_fields(values))
        thumbnail = form.files.get("thumbnail")
        avatar = uploaded_avatar(form)
        if action == SAVE_TEMPLATE:
            mention = template_mention(who.guild, values["mention"], current.mention)
            files = await d.announcements.images(current.id)
            style = typed_style(values, current.rich.style, thumbnail)
            if thumbnail is None and style.thumbnail is not None:
                thumbnail = await d.announcements.thumbnail(current.id)
            return await self.save_as_template(
                viewer, who, values, mention, files[0] if files else None, style, thumbnail,
                editing=current, avatar=avatar,
            )  # fmt: skip
        message = typed_message(values)
        kept_event = await d.announcements.event_spec(current.id)
        kept_reminder = await d.announcements.reminder_lead(current.id)
        kept_as_name = (await d.announcements.post_as_names([current.id])).get(current.id)
        options = typed_edit(
            current, values, kept_event, kept_reminder, thumbnail, kept_as_name=kept_as_name,
            kept_places=await self.place_ids(current),
            kept_tidy=await d.announcements.tidy(current.id), as_avatar=avatar,
        )  # fmt: skip
        (draft, notes, upcoming), when_given = await check_edit(
            d.announcements, d.clock, who, current, options, message
        )  # the files are kept: the form's one file field is the thumbnail's
        if thumbnail is not None:
            draft = replace(draft, thumbnail=thumbnail)
        if avatar is not None:
            draft = with_avatar(draft, avatar)
        if action == "preview":
            # Its next occurrence as it will post, rendered as /info renders it.
            shown = await d.announcements.as_edited_posted(
                current, draft, when_given=when_given, upcoming=upcoming
            )
            if thumbnail is None and draft.rich.style.thumbnail is not None:
                thumbnail = await d.announcements.thumbnail(current.id)
            preview = preview_of(
                who.guild, draft, notes, upcoming, shown=shown, thumbnail=thumbnail
            )
            return await self.form_page(viewer, who, values, editing=current, preview=preview)
        outcome = await d.announcements.edit(
            current, draft, when_given=when_given,
            update_posted=values["update_posted"] == "on", actor_id=who.member.id,
        )  # fmt: skip
        if outcome.changes:
            log.info(
                "announcement %d (#%d) edited on the dashboard in guild %d by %d: %s",
                current.id, current.local_id, who.guild.id, who.member.id,
                ", ".join(c.field for c in outcome.changes),
            )  # fmt: skip
        await d.sessions.set_flash(viewer.session, edit_reply(outcome, notes))
        raise web.HTTPSeeOther(f"/g/{who.guild.id}/a/{current.local_id}")

    async def save_as_template(
        self,
        viewer: Viewer,
        who: Requester,
        values: dict[str, str],
        mention: str | None,
        image: Image | None,
        style: Style,
        thumbnail: Image | None,
        *,
        editing: Announcement | None = None,
        avatar: Image | None = None,
    ) -> web.Response:
        """The "Save as template" button: what the form holds kept as a template of the
        server, through /template save's own checks (rights, name, the server's limit),
        nothing scheduled nor edited; the form again as it was, with what was saved
        (``avatar``: one uploaded with the form)."""
        title = values["title"].strip() or None
        made = await template_of_form(
            self.d.announcements, who, values["template_name"], content=values["message"],
            title=title, silent=values["silent"] == "on", mention=mention,
            channel_id=template_channel(values), image=image,
            reminder=template_reminder(values, who.locale), style=style, thumbnail=thumbnail,
            post_as=await self.template_post_as(who, values, editing, avatar),
            also_in=typed_places(values), tidy=template_tidy(values, who.locale),
        )  # fmt: skip
        kept = await self.d.announcements.save_template(made)
        log.info(
            "template %r saved from the dashboard's form in guild %d by %d",
            kept.name, who.guild.id, who.member.id,
        )  # fmt: skip
        return await self.form_page(
            viewer, who, {**values, "template_name": ""}, editing=editing,
            saved=form_template_saved(kept),
        )  # fmt: skip

    async def template_post_as(
        self,
        who: Requester,
        values: dict[str, str],
        editing: Announcement | None,
        uploaded: Image | None = None,
    ) -> PostAs | None:
        """Who a template saved from the form posts as: the name typed, with the avatar
        ``uploaded`` with the form, else that of the announcement edited (or of the template
        the form started from) under that name."""
        name = " ".join(values["as_name"].split())
        if not name:
            return None
        with concerning("as_name"):
            checked = check_as_name(name)
        if checked is None:
            return None
        if uploaded is not None:
            return PostAs(checked, uploaded)
        found: PostAs | None = None
        if editing is not None:
            found = await self.d.announcements.post_as(editing.id)
        elif values["template"].strip():
            found = (await self.d.announcements.template(who.guild.id, values["template"])).post_as
        avatar = found.avatar if found is not None and found.name == checked else None
        return PostAs(checked, avatar)

    async def refused(
        self,
        error: Exception,
        viewer: Viewer,
        who: Requester,
        values: Mapping[str, str],
        editing: Announcement | None = None,
    ) -> web.Response:
        """The form again as it was posted, with the commands' answer to ``error`` at the
        field it is about; an error they have no answer for (or a redirect) goes on up to
        the page wrapper."""
        known = field_error(error, RENAMED)
        if known is None:
            raise error
        return await self.form_page(viewer, who, values, editing=editing, error=known)

    async def form_page(
        self,
        viewer: Viewer,
        who: Requester,
        values: Mapping[str, str],
        *,
        editing: Announcement | None = None,
        error: FieldError | None = None,
        preview: Preview | None = None,
        saved: str | None = None,
        kept_typed: list[str] | None = None,
    ) -> web.Response:
        """The form, filled with ``values``: the channels the member can see (and the one
        being edited, a thread say), the server's roles, every zone, and the voice and stage
        channels an event can take place in; a new one's, the server's templates to start
        from (and the one it started from, if still kept)."""
        guild = who.guild
        postable: list[discord.TextChannel | discord.ForumChannel] = [
            *guild.text_channels,
            *guild.forums,
        ]
        channels: list[Any] = [c for c in postable if c.permissions_for(who.member).view_channel]
        if editing is not None and all(c.id != editing.channel_id for c in channels):
            current = guild.get_channel_or_thread(editing.channel_id)
            if current is not None:
                channels.insert(0, current)
        roles = [r for r in reversed(guild.roles) if not r.is_default()]
        # The other places it may post in: the text channels the member can see, and the
        # places ticked now (a thread, say, which the list of channels doesn't hold).
        other_places: list[Any] = [
            c for c in guild.text_channels if c.permissions_for(who.member).view_channel
        ]
        for ticked in values.get("also_in", "").split():
            found = guild.get_channel_or_thread(int(ticked)) if ticked.isdigit() else None
            if found is not None and all(c.id != found.id for c in other_places):
                other_places.append(found)
        places: list[discord.VoiceChannel | discord.StageChannel] = [
            *guild.voice_channels,
            *guild.stage_channels,
        ]
        templates = [] if editing else await self.d.announcements.templates(guild.id)
        picked = values.get("template", "").strip().casefold()
        started_with = next((x for x in templates if x.name.casefold() == picked), None)
        # A template's channel the member can't post in is not offered (nor named): said so.
        lost_channel = (
            started_with is not None
            and started_with.channel_id is not None
            and all(c.id != started_with.channel_id for c in channels)
        )
        mentioned = None if started_with is None else started_with.mention or ""
        lost_role = (
            mentioned is not None
            and mentioned.startswith("role:")
            and guild.get_role(int(mentioned.removeprefix("role:"))) is None
        )
        return self.d.render(
            "form.html", viewer, status=400 if error else 200, guild=guild, values=values,
            editing=editing, error=error, saved=saved, preview=preview, channels=channels,
            roles=roles, other_places=other_places, ticked=values.get("also_in", "").split(),
            zones=zone_names(), event_channels=places, templates=templates,
            started_with=started_with, lost_channel=lost_channel, lost_role=lost_role,
            kept_typed=kept_typed or [],
            example_date=example_date(self.d.clock.now().astimezone(viewer.zone).date()),
            labels=field_labels(),
            lengths=FIELD_LENGTHS,
            field_rows=range(1, rows_shown(values) + 1),
            max_fields=MAX_FIELDS,
        )  # fmt: skip


def started(who: Requester, template: Template, *, has_image: bool = False) -> Started:
    """/schedule's options taken from ``template`` when only ``template`` is given (and
    ``has_image``: a file picked), by /schedule's own rules."""
    return started_from(
        who.guild, template, message=None, title=None, silent=None, channel_id=None,
        mention_id=None, has_image=has_image,
    )  # fmt: skip


def template_values(who: Requester, template: Template) -> dict[str, str]:
    """The new-announcement form's fields filled from ``template``, as ``/schedule
    template:name`` fills its options (text, title, silence, channel and mention), each
    left for the member to change; the template's name rides along (for its file)."""
    s = started(who, template)
    mention = ""
    if s.mention_id is not None:
        mention = "everyone" if s.mention_id == who.guild.default_role.id else str(s.mention_id)
    values = {
        "message": s.message or "",
        "title": s.title or "",
        "silent": "on" if s.silent else "",
        "mention": mention,
        "template": template.name,
        "reminder": lead_text(template.reminder),
        **style_values(template.style),
        "as_name": "" if template.post_as is None else template.post_as.name,
        "also_in": places_text(template.also_in),
        **tidy_values(template.tidy),
    }
    if s.channel_id is not None:
        values["channel"] = str(s.channel_id)
    return values


def uploaded_avatar(form: Form) -> Image | None:
    """The avatar uploaded with the form (None: none picked), refused at its field as
    ``/edit as_avatar:`` refuses one."""
    avatar = form.files.get("as_avatar")
    return None if avatar is None else checked_avatar(avatar)
