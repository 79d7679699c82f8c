"""The dashboard's frame: its collaborators, the wrappers every route goes through (session,
CSRF, errors, security headers) and template rendering. The page families
(:mod:`bot.web.dashboard.pages`) stand on it; it imports none of them."""

from __future__ import annotations

import re
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse
from zoneinfo import ZoneInfo

import jinja2
from aiohttp import BodyPartReader, web
from aiohttp.http_exceptions import HttpProcessingError

from ... import i18n
from ...announcements import Announcements, NotFound, TooManyCommands
from ...limits import MAX_TEXT_OPTION, clip
from ...models import DashboardSession, Image
from ...parsing import ConcernsField, InputError, resolve_timezone
from ...render import expected_answer, state_word, unexpected_answer
from ...requests.checks import Refusal
from .access import Access
from .oauth import DiscordOAuth
from .sessions import SESSION_COOKIE, Sessions
from .text import discord_html, quantity, time_html
from .throttle import ExpiringTable, RateLimit, client_address

if TYPE_CHECKING:
    import discord

    from scheduler import Clock, Scheduler

    from ...config import Settings
    from ..gateway import GatewayStatus

SECURITY_HEADERS = {
    # No script at all, styles from our own stylesheet only, nothing may frame the pages.
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def csrf_refused() -> str:
    """The answer to a change whose form carries no valid CSRF token."""
    return i18n.t(
        "This form could not be checked (its security token is missing or out of date), so "
        "nothing was changed. Reload the page and try again."
    )


LANGUAGE_COOKIE = "crier_lang"
"""The language picked with the dashboard's picker (a locale key crier speaks)."""
DISCORD_LOCALE_COOKIE = "crier_discord_locale"
"""The viewer's Discord language, as ``identify`` gave it at login."""


def locale_of(request: web.Request) -> str | None:
    """The language of the dashboard for ``request``: the one picked, else the viewer's
    Discord language (from the login), else the browser's ``Accept-Language``; None:
    English."""
    picked = request.cookies.get(LANGUAGE_COOKIE, "")
    if picked in i18n.LANGUAGES:
        return picked
    browser = i18n.accepted_languages(request.headers.get("Accept-Language", ""))
    return i18n.best_locale([request.cookies.get(DISCORD_LOCALE_COOKIE, ""), *browser])


LOGIN_LIMIT = (10, 60.0)
"""Logins started from one address: at most this many per this many seconds."""
CALLBACK_LIMIT = (10, 60.0)
"""Returns from Discord's login page (``/auth/callback``) from one address: at most this many
per this many seconds (each may cost a call to Discord's token endpoint)."""
REFUSED_LIMIT = (30, 60.0)
"""Changes refused (not logged in, a bad CSRF token, no rights, not found, a malformed or
oversized body) from one address: past this many per this many seconds, every change from
it is refused at once, before its session or body is read."""
REFUSED_STATUSES = frozenset({400, 403, 404, 405, 413, 429})
"""The answers that count as a refused change."""


@dataclass(frozen=True, slots=True)
class Viewer:
    """A logged-in request: the session and the zone its times are shown in."""

    session: DashboardSession
    zone: ZoneInfo
    operator: bool


Handler = Callable[[web.Request, Viewer], Awaitable[web.StreamResponse]]
AnonymousHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]


CSRF_LENGTH = 64
"""The most characters a CSRF field may hold (a token is 43)."""

FIELD_LABELS: Mapping[str, str] = {
    "message": i18n.marked("Message"),
    "title": i18n.marked("Title"),
    "channel": i18n.marked("Channel"),
    "when": i18n.marked("When"),
    "repeat": i18n.marked("Repeat"),
    "timezone": i18n.marked("Time zone"),
    "mention": i18n.marked("Mention"),
    "until": i18n.marked("Until"),
    "image": i18n.marked("Image or file"),
    "event": i18n.marked("Create a Discord event for each occurrence"),
    "event_location": i18n.marked("Event location"),
    "event_minutes": i18n.marked("Event length (minutes)"),
    "event_channel": i18n.marked("Event in voice or stage (instead of a location)"),
    "reminder": i18n.marked("Reminders by DM"),
    "pin": i18n.marked("Pin each post (and unpin the one before)"),
    "replace": i18n.marked("Delete the post before once the new one is up"),
    "delete_after": i18n.marked("Delete each post after"),
    "color": i18n.marked("Colour"),
    "footer": i18n.marked("Footer"),
    "url": i18n.marked("Embed link"),
    "thumbnail": i18n.marked("Thumbnail"),
    "buttons": i18n.marked("Link buttons"),
    "as_name": i18n.marked("Post as"),
    "as_avatar": i18n.marked("Avatar to post with"),
    "also_in": i18n.marked("Also post in"),
    "template": i18n.marked("Start from a template"),
    "pick": i18n.marked("Start from a template"),
    "template_name": i18n.marked("Template name"),
    "name": i18n.marked("Name"),
    "from": i18n.marked("Announcement number"),
    "zone": i18n.marked("Your time zone"),
    "guild": i18n.marked("Server id"),
    "q": i18n.marked("Search"),
    "fn": i18n.marked("Function"),
    "job": i18n.marked("Job"),
}
"""What the forms call their fields (their labels), for the refusals that name one (a form
shows a refusal at its field, :class:`FieldError`, and names the field with these words)."""


def field_label(name: str) -> str:
    """The label of the form field ``name`` in the viewer's language (its name when it has
    none: a hidden field, a parameter of the address)."""
    label = FIELD_LABELS.get(name)
    row = _FIELD_ROW.fullmatch(name)
    if row is not None:  # an embed field's name or value (the form's rows)
        if row[1] == "name":
            return i18n.t("Field {n}: name", n=int(row[2]))
        return i18n.t("Field {n}: value", n=int(row[2]))
    if label is None:
        return clip(name, 30)
    return i18n.translate(label, i18n.current_locale(), context=i18n.ANSWER)


_FIELD_ROW = re.compile(r"field_(name|value)_(\d{1,2})")


class FieldTooLong(InputError):
    """A field of a form (or a parameter of the address) holds more than it may; ``field``
    is its name, and ``str(e)`` names it by its label. Nothing of what it holds is read
    further or repeated."""

    def __init__(self, name: str, limit: int) -> None:
        super().__init__(
            i18n.t(
                "**{field}** is too long: it may hold at most {limit} characters. Nothing "
                "was changed.",
                field=field_label(name),
                limit=limit,
            ),
            field=name,
        )
        self.limit = limit


class BodyTooLarge(Exception):
    """The request's body is larger than ``HTTP_MAX_BODY_MB``; ``str(e)`` says so (413)."""


class BadForm(Exception):
    """The body is not a form that can be read (multipart without a boundary, a broken
    part); ``str(e)`` says so (400)."""


class CsrfRefused(Exception):
    """The form carries no valid CSRF token before its file, or none at all (403)."""


@dataclass(frozen=True, slots=True)
class Upload:
    """A form's file field: its name, the most bytes it takes (from the dashboard's
    settings) and the refusal of a larger file (its size and the limit, in bytes)."""

    name: str
    limit: Callable[[Dashboard], float]
    refusal: Callable[[float, float], Exception]


@dataclass(frozen=True, slots=True)
class Fields:
    """What a form posts, the only fields read of it: each text field with the most
    characters it may hold, and its file fields (each read once, within its own limit; all
    of the body within ``HTTP_MAX_BODY_MB``; its CSRF token is always read, first)."""

    text: Mapping[str, int] = field(default_factory=dict)
    uploads: tuple[Upload, ...] = ()
    shows_refusal: bool = False
    """Its handler answers a field too long itself (:meth:`Form.check`: the form shown
    again); otherwise the refusal is the answer, before the handler runs."""
    several: frozenset[str] = frozenset()
    """Fields sent once per value picked (a group of checkboxes of one name): their values
    are kept together, separated by spaces (within the field's length)."""


NO_FIELDS = Fields()
"""A form of a button: its CSRF token alone."""
CONFIRM = "confirm"
"""The field a confirmation page's form sends (:meth:`Dashboard.confirm_first`)."""
CONFIRMED = Fields({CONFIRM: 3})
"""A form of a button whose change asks first: its CSRF token, and whether it was sent
from the confirmation page."""


@dataclass(frozen=True, slots=True)
class Form:
    """A posted form: its declared fields (a field too long left empty), the files uploaded
    with it, and the refusals of the fields too long."""

    fields: dict[str, str]
    files: dict[str, Image]
    too_long: tuple[FieldTooLong, ...] = ()

    def get(self, name: str, default: str = "") -> str:
        return self.fields.get(name, default)

    def check(self) -> None:
        """Refused (:class:`FieldTooLong`, the first field's) if a field was too long."""
        if self.too_long:
            raise self.too_long[0]


FORM_KEY = web.RequestKey("crier_form", Form)


@dataclass(frozen=True, slots=True)
class FieldError:
    """A refused form's answer, shown with the form again: the commands' words, and the
    field they are about as the form names it (None: the form as a whole). Rendered by the
    macros of ``_fields.html``: the field marked ``aria-invalid`` and described by the
    words, focused when the page loads, named in the summary above the form; the page's
    title starts with "Error:"."""

    text: str
    field: str | None = None


def field_error(
    error: BaseException, renamed: Mapping[str, str] | None = None
) -> FieldError | None:
    """The answer to ``error`` for a form (None: no answer is written for it, it goes on up):
    the commands' words (:func:`~bot.render.expected_answer`) and the field it is about
    (:class:`~bot.parsing.ConcernsField`: the option's name, or the form's own name for it
    in ``renamed``, e.g. ``{"name": "template_name"}``)."""
    known = expected_answer(error)
    if known is None:
        return None
    field = error.field if isinstance(error, ConcernsField) else None
    if field is not None and renamed:
        field = renamed.get(field, field)
    return FieldError(known, field)


class FormTooLarge(Exception):
    """An uploaded file is larger than its field takes; ``str(e)`` says so."""


def form_of(request: web.Request) -> Form:
    """The form :meth:`Dashboard.page` read for this state-changing request."""
    return request[FORM_KEY]


Authorize = Callable[[], Awaitable[object]]
"""Checks the viewer's rights for the request (raising a refusal), before a file is read."""


@dataclass(frozen=True, slots=True)
class Confirmation:
    """What a change that can't be undone asks before it is made: the page's title, the
    question (Discord markdown), the button that makes the change, where "keep it" goes
    back to, and the fields the change's form carries again."""

    title: str
    question: str
    button: str
    back: str
    fields: Mapping[str, str]


class Dashboard:
    """Everything the pages need (built by :func:`bot.web.dashboard.add_dashboard`)."""

    def __init__(
        self,
        *,
        announcements: Announcements,
        sched: Scheduler,
        client: discord.Client,
        settings: Settings,
        clock: Clock,
        gateway: GatewayStatus | None = None,
    ) -> None:
        if settings.client_secret is None:
            raise ValueError("the dashboard needs DISCORD_CLIENT_SECRET")
        self.announcements = announcements
        self.sched = sched
        self.client = client
        self.settings = settings
        self.clock = clock
        self.gateway = gateway
        """The gateway shards of this process, for the operators' view (None: not shown)."""
        self.sessions = Sessions(sched, clock)
        self.oauth = DiscordOAuth(settings.oauth_base, settings.api_base, settings.client_secret)
        self.access = Access(client, announcements, clock, settings.dashboard_operators)
        self.logins: RateLimit[str] = RateLimit(clock, *LOGIN_LIMIT)
        self.callbacks: RateLimit[str] = RateLimit(clock, *CALLBACK_LIMIT)
        self.refusals: RateLimit[str] = RateLimit(clock, *REFUSED_LIMIT)
        self.states_used: ExpiringTable[str, bool] = ExpiringTable(clock)
        """The logins' ``state`` already back from Discord (each is taken once)."""
        self.secure_cookies = urlparse(settings.dashboard_url or "").scheme == "https"
        self.templates = jinja2.Environment(
            loader=jinja2.PackageLoader("bot.web.dashboard", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
        self.stylesheet = (
            resources.files("bot.web.dashboard").joinpath("static/dashboard.css").read_bytes()
        )

    # --- addresses -----------------------------------------------------------------------------

    def public_url(self, request: web.Request) -> str:
        """Where browsers reach the dashboard: ``DASHBOARD_PUBLIC_URL``, else the address
        this request came to."""
        return self.settings.dashboard_url or f"{request.scheme}://{request.host}"

    def redirect_uri(self, request: web.Request) -> str:
        return f"{self.public_url(request)}/auth/callback"

    def address(self, request: web.Request) -> str:
        """The client's address, for the rate limits (:func:`client_address`: behind a
        reverse proxy (a loopback or private peer) when ``DASHBOARD_PUBLIC_URL`` is set)."""
        return client_address(request, behind_proxy=self.settings.dashboard_url is not None)

    # --- rendering -----------------------------------------------------------------------------

    def render(
        self,
        name: str,
        viewer: Viewer | None,
        status: int = 200,
        guild: discord.Guild | None = None,
        **values: Any,
    ) -> web.Response:
        zone = viewer.zone if viewer else ZoneInfo("UTC")
        now = self.clock.now()
        locale = i18n.current_locale()
        values.setdefault("flash", None)
        values.setdefault("error", None)
        names = self.access.names(guild.id) if guild else {}
        html = self.templates.get_template(name).render(
            viewer=viewer,
            guild=guild,
            csrf=viewer.session.csrf_token if viewer else "",
            t=i18n.t,
            state_word=state_word,
            html_lang=html_lang(locale),
            language=locale or i18n.SOURCE_LOCALE,
            languages=i18n.LANGUAGES,
            when=lambda dt: time_html(dt, zone, locale),
            text=lambda t: discord_html(t, guild, zone, now, names, locale),
            plain=lambda t: discord_html(t, guild, zone, now, names, locale).striptags(),
            seconds=lambda value, digits: quantity(value, digits, "s", locale),
            milliseconds=lambda value: quantity(value, 0, "ms", locale),
            **values,
        )
        return web.Response(text=html, status=status, content_type="text/html")

    def confirm_first(
        self,
        request: web.Request,
        viewer: Viewer,
        ask: Confirmation,
        guild: discord.Guild | None = None,
    ) -> web.Response | None:
        """None when this change's form was sent from its confirmation page (the second,
        explicit step); else the confirmation page itself, and nothing is changed: a cancel
        or a delete is never made by one click (nor by an old one-click form)."""
        if form_of(request).get(CONFIRM) == "yes":
            return None
        return self.render(
            "confirm.html", viewer, guild=guild, ask=ask, action=request.rel_url.path
        )

    def answer(
        self, viewer: Viewer | None, text: str, status: int, guild: discord.Guild | None = None
    ) -> web.Response:
        """A page that only says ``text``: a refusal or an error (its title says so)."""
        return self.render(
            "answer.html", viewer, status=status, guild=guild, message=text,
            error=FieldError(text) if status >= 400 else None,
        )  # fmt: skip

    async def viewer_zone(self, session: DashboardSession, guild_id: int | None) -> ZoneInfo:
        """The viewer's own zone (``/timezone``), else the server's, else UTC."""
        own = await self.announcements.member_timezone(session.user_id)
        if own is None and guild_id is not None:
            own = (await self.announcements.settings(guild_id)).timezone
        return resolve_timezone(own or "UTC")

    async def flash(self, viewer: Viewer) -> str | None:
        """The answer to the viewer's last change, once."""
        text = viewer.session.flash
        if text is not None:
            await self.sessions.set_flash(viewer.session, None)
        return text

    # --- the wrapper ---------------------------------------------------------------------------

    def page(
        self,
        handler: Handler,
        fields: Fields = NO_FIELDS,
        authorize: Callable[[web.Request, Viewer], Awaitable[object]] | None = None,
    ) -> AnonymousHandler:
        """A route for logged-in viewers. A change is refused at once, before its session is
        read, from an address that had too many refused (:data:`REFUSED_LIMIT`); then it
        must come from a session, carry its CSRF token before any file, hold only what
        ``fields`` takes (each field within its length, at most one file, read only once
        ``authorize`` let the viewer change something), and its body no larger than
        ``HTTP_MAX_BODY_MB``. A page's parameters are held to the fields' length
        (:data:`~bot.limits.MAX_TEXT_OPTION`). A known refusal is answered like the
        command's, anything else is logged with an id."""

        async def wrapped(request: web.Request) -> web.StreamResponse:
            i18n.CURRENT.set(locale_of(request))  # this request's task speaks it
            if request.method in ("GET", "HEAD"):
                return await self.show(handler, request)
            address = self.address(request)
            if self.refusals.full(address):
                return secured(self.answer(None, too_many(), 429))
            try:
                response = await self.change(handler, request, fields, authorize)
            except web.HTTPException as exc:
                if exc.status in REFUSED_STATUSES:
                    self.refusals.note(address)
                raise
            if response.status in REFUSED_STATUSES:
                self.refusals.note(address)
            return response

        return wrapped

    async def show(self, handler: Handler, request: web.Request) -> web.StreamResponse:
        """A page for the viewer (else off to the home page), its parameters within their
        length."""
        viewer = await self.viewer_of(request)
        if viewer is None:
            raise web.HTTPSeeOther("/", headers=SECURITY_HEADERS)
        for name, value in request.query.items():
            if len(value) > MAX_TEXT_OPTION:
                message = str(FieldTooLong(name, MAX_TEXT_OPTION))
                return secured(self.answer(viewer, message, 400))
        return secured(await self.guarded(handler, request, viewer))

    async def change(
        self,
        handler: Handler,
        request: web.Request,
        fields: Fields,
        authorize: Callable[[web.Request, Viewer], Awaitable[object]] | None,
    ) -> web.StreamResponse:
        """A change: its session, then its body read as ``fields`` takes it, then the
        handler."""
        viewer = await self.viewer_of(request)
        if viewer is None:
            return secured(self.answer(None, i18n.t("You are not logged in."), 403))

        async def authorized() -> None:
            if authorize is not None:
                await authorize(request, viewer)

        async def read_then_handle(request: web.Request, viewer: Viewer) -> web.StreamResponse:
            try:
                form = await self.read_form(request, viewer.session, fields, authorized)
            except BodyTooLarge as exc:
                return self.answer(viewer, str(exc), 413)
            except FormTooLarge as exc:
                return self.answer(viewer, str(exc), 413)
            except BadForm as exc:
                return self.answer(viewer, str(exc), 400)
            except CsrfRefused:
                return self.answer(viewer, csrf_refused(), 403)
            if form.too_long and not fields.shows_refusal:
                return self.answer(viewer, str(form.too_long[0]), 400)
            return await handler(request, viewer)

        return secured(await self.guarded(read_then_handle, request, viewer))

    async def read_form(
        self,
        request: web.Request,
        session: DashboardSession,
        fields: Fields,
        authorize: Authorize,
    ) -> Form:
        """The posted form, read once as ``fields`` declares it, kept on the request for the
        handler (:func:`form_of`). Only the declared fields are kept, each read up to the
        bytes its length may take (a longer one left empty, its refusal noted); anything
        else is read past and dropped, its content never decoded; the body stops being read
        past ``HTTP_MAX_BODY_MB`` (:class:`BodyTooLarge`). The CSRF token must come before
        the file (:class:`CsrfRefused`), and the file is read only once ``authorize`` let
        the viewer change something; a larger file than its field takes is refused
        (:class:`FormTooLarge`); a body that is no form is :class:`BadForm`."""
        limit = int(self.settings.http_max_body)
        if request.content_length is not None and request.content_length > limit:
            raise BodyTooLarge(body_too_large(limit))
        reading = _FormReading(self, request, session, fields, limit)
        try:
            if request.content_type == "multipart/form-data":
                await reading.multipart(authorize)
            else:
                await reading.urlencoded()
        except web.HTTPRequestEntityTooLarge:
            raise BodyTooLarge(body_too_large(limit)) from None
        except (ValueError, AssertionError, EOFError, HttpProcessingError) as exc:
            raise BadForm(
                i18n.t(
                    "This form could not be read ({error}), so nothing was changed. Reload "
                    "the page and try again.",
                    error=clip(str(exc) or type(exc).__name__),
                )
            ) from None
        if not reading.csrf_checked:
            raise CsrfRefused()
        form = Form(reading.values, reading.files, tuple(reading.too_long))
        request[FORM_KEY] = form
        return form

    async def viewer_of(self, request: web.Request) -> Viewer | None:
        """The logged-in viewer of ``request``, if any."""
        session = await self.sessions.find(request.cookies.get(SESSION_COOKIE))
        if session is None:
            return None
        return Viewer(
            session,
            await self.viewer_zone(session, _guild_id(request)),
            await self.access.is_operator(session),
        )

    async def guarded(
        self, handler: Handler, request: web.Request, viewer: Viewer
    ) -> web.StreamResponse:
        try:
            return await handler(request, viewer)
        except web.HTTPException as exc:
            if exc.status == 404:
                return self.answer(viewer, i18n.t("Not found."), 404)
            exc.headers.update(SECURITY_HEADERS)
            raise
        except NotFound as exc:
            return self.answer(
                viewer, i18n.t("Announcement #{id} not found.", id=exc.local_id), 404
            )
        except TooManyCommands as exc:  # COMMANDS_PER_MINUTE, counted with the commands
            slow = self.answer(viewer, str(exc), 429)
            slow.headers["Retry-After"] = str(exc.wait)
            return slow
        except Exception as exc:
            known = expected_answer(exc)
            if known is not None:
                return self.answer(viewer, known, 403 if isinstance(exc, Refusal) else 400)
            where = f"dashboard {request.method} {request.rel_url.path}"
            return self.answer(viewer, unexpected_answer(exc, where), 500)

    def public(self, handler: AnonymousHandler) -> AnonymousHandler:
        """A route anyone may reach (the login pages), with the security headers."""

        async def wrapped(request: web.Request) -> web.StreamResponse:
            i18n.CURRENT.set(locale_of(request))  # this request's task speaks it
            try:
                return secured(await handler(request))
            except web.HTTPException as exc:
                exc.headers.update(SECURITY_HEADERS)
                raise

        return wrapped


class _FormReading:
    """One form being read (:meth:`Dashboard.read_form`)."""

    def __init__(
        self,
        d: Dashboard,
        request: web.Request,
        session: DashboardSession,
        fields: Fields,
        limit: int,
    ) -> None:
        self.d, self.request, self.session, self.fields, self.limit = (
            d, request, session, fields, limit,
        )  # fmt: skip
        self.lengths = {**fields.text, "csrf": CSRF_LENGTH}
        self.values: dict[str, str] = {}
        self.files: dict[str, Image] = {}
        self.too_long: list[FieldTooLong] = []
        self.csrf_checked = False

    def keep(self, name: str, value: str) -> None:
        """A declared field's value (the first one given; every one, space-separated, of a
        field sent once per value picked), or its refusal if too long; the CSRF token
        checked as soon as it is read."""
        if any(r.field == name for r in self.too_long):
            return
        if name in self.values:
            if name not in self.fields.several:
                return
            value = f"{self.values.pop(name)} {value}"
        if len(value) > self.lengths[name]:
            self.too_long.append(FieldTooLong(name, self.lengths[name]))
            self.values[name] = ""
            return
        if name == "csrf":
            if not secrets.compare_digest(value.encode(), self.session.csrf_token.encode()):
                raise CsrfRefused()
            self.csrf_checked = True
        self.values[name] = value

    def counted(self) -> None:
        """Refused once the body has sent more than the limit (without a Content-Length,
        or past it)."""
        if self.request.content.total_bytes > self.limit:
            raise BodyTooLarge(body_too_large(self.limit))

    async def urlencoded(self) -> None:
        """A form sent as ``application/x-www-form-urlencoded`` (read whole: aiohttp holds
        it to ``client_max_size``, the same limit)."""
        for name, value in (await self.request.post()).items():
            if name in self.lengths and isinstance(value, str):
                self.keep(name, value)

    async def multipart(self, authorize: Authorize) -> None:
        """A form sent as ``multipart/form-data``, part by part."""
        reader = await self.request.multipart()
        uploads = {u.name: u for u in self.fields.uploads}
        authorized = False
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                raise ValueError("a part holds parts of its own")
            name = part.name or ""
            upload = uploads.pop(name, None)  # each file field read once: a repeat is dropped
            if upload is not None:
                if not self.csrf_checked:
                    raise CsrfRefused()  # nothing of a file is read before the token
                if not authorized:
                    await authorize()
                    authorized = True
                await self.file(part, upload)
            elif name in self.lengths and part.filename is None:
                await self.text(part, name)
            else:
                await self.drop(part)
            self.counted()

    async def text(self, part: BodyPartReader, name: str) -> None:
        """A text field, read up to the bytes its length may take (4 per character); its
        content as sent (a ``Content-Encoding`` is not undone: no form sends one)."""
        most = 4 * self.lengths[name]
        data = bytearray()
        while chunk := await part.read_chunk():
            self.counted()
            if len(data) + len(chunk) > most:
                self.too_long.append(FieldTooLong(name, self.lengths[name]))
                self.values.setdefault(name, "")
                await self.drop(part)
                return
            data += chunk
        self.keep(name, data.decode(errors="replace"))

    async def file(self, part: BodyPartReader, upload: Upload) -> None:
        most = int(upload.limit(self.d))
        data = bytearray()
        while chunk := await part.read_chunk():
            self.counted()
            data += chunk
            if len(data) > most:
                raise FormTooLarge(str(upload.refusal(len(data), most)))
        if part.filename and data:
            content_type = part.headers.get("Content-Type")
            self.files[upload.name] = Image(part.filename, content_type, bytes(data))

    async def drop(self, part: BodyPartReader) -> None:
        """A part nothing takes: read past, kept nowhere."""
        while await part.read_chunk():
            self.counted()


def too_many() -> str:
    """The answer to a change from an address that had too many refused just now."""
    return i18n.t(
        "Too many refused requests from your address just now. Wait a minute and try again."
    )


def body_too_large(limit: float) -> str:
    """The answer to a request whose body is larger than ``HTTP_MAX_BODY_MB``."""
    return i18n.t(
        "This request is larger than the {limit} MiB this server reads, so nothing was "
        "changed.", limit=f"{limit / (1024 * 1024):g}",
    )  # fmt: skip


def html_lang(locale: str | None) -> str:
    """The ``<html lang>`` of a page in ``locale`` (a Discord locale key): its BCP 47 tag
    (``de``, ``pt-BR``, ``es-ES``); ``en`` for English."""
    return "en" if locale is None or locale == i18n.SOURCE_LOCALE else locale


def secured(response: web.StreamResponse) -> web.StreamResponse:
    response.headers.update(SECURITY_HEADERS)
    return response


def _guild_id(request: web.Request) -> int | None:
    raw = request.match_info.get("guild_id")
    return int(raw) if raw is not None and raw.isdigit() else None
