"""The dashboard's frame: its collaborators, the wrappers every route goes through (session,
CSRF, errors, security headers) and template rendering. The page families
(:mod:`bot.web.dashboard.pages`) stand on it; it imports none of them."""

from __future__ import annotations

import secrets
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse
from zoneinfo import ZoneInfo

import jinja2
from aiohttp import BodyPartReader, web

from ... import i18n
from ...announcements import Announcements, NotFound, TooManyCommands
from ...models import DashboardSession, Image
from ...parsing import ConcernsField, resolve_timezone
from ...render import expected_answer, state_word, unexpected_answer
from ...requests.checks import Refusal
from ...requests.files import too_large
from .access import Access
from .oauth import DiscordOAuth
from .sessions import SESSION_COOKIE, Sessions
from .text import discord_html, quantity, time_html

if TYPE_CHECKING:
    from collections.abc import Mapping

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


@dataclass(frozen=True, slots=True)
class Viewer:
    """A logged-in request: the session and the zone its times are shown in."""

    session: DashboardSession
    zone: ZoneInfo
    operator: bool


Handler = Callable[[web.Request, Viewer], Awaitable[web.StreamResponse]]
AnonymousHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class Form:
    """A posted form: its fields, and the files uploaded with it."""

    fields: dict[str, str]
    files: dict[str, Image]

    def get(self, name: str, default: str = "") -> str:
        return self.fields.get(name, default)


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
    """An uploaded file is larger than an announcement may carry; ``str(e)`` says so."""


def form_of(request: web.Request) -> Form:
    """The form :meth:`Dashboard.page` read for this state-changing request."""
    return request[FORM_KEY]


class LoginLimiter:
    """At most ``count`` logins started per ``seconds`` from one address."""

    def __init__(self, clock: Clock, count: int, seconds: float) -> None:
        self.clock, self.count, self.seconds = clock, count, seconds
        self._seen: dict[str, deque[float]] = {}

    def allow(self, address: str) -> bool:
        now = self.clock.time()
        seen = self._seen.setdefault(address, deque())
        while seen and seen[0] <= now - self.seconds:
            seen.popleft()
        if len(seen) >= self.count:
            return False
        seen.append(now)
        return True


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
        self.limiter = LoginLimiter(clock, *LOGIN_LIMIT)
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

    def page(self, handler: Handler) -> AnonymousHandler:
        """A route for logged-in viewers: a state-changing request must carry the session's
        CSRF token; a known refusal is answered like the command's, anything else is logged
        with an id."""

        async def wrapped(request: web.Request) -> web.StreamResponse:
            i18n.CURRENT.set(locale_of(request))  # this request's task speaks it
            viewer = await self.viewer_of(request)
            if viewer is None:
                if request.method in ("GET", "HEAD"):
                    raise web.HTTPSeeOther("/", headers=SECURITY_HEADERS)
                return secured(self.answer(None, i18n.t("You are not logged in."), 403))
            session = viewer.session
            if request.method not in ("GET", "HEAD"):
                try:
                    form = await self.read_form(request)
                except FormTooLarge as exc:
                    return secured(self.answer(viewer, str(exc), 413))
                token = form.get("csrf")
                if not isinstance(token, str) or not secrets.compare_digest(
                    token.encode(), session.csrf_token.encode()
                ):
                    return secured(self.answer(viewer, csrf_refused(), 403))
            return secured(await self.guarded(handler, request, viewer))

        return wrapped

    async def read_form(self, request: web.Request) -> Form:
        """The posted form, read once (a file at most as large as an announcement may
        carry), kept on the request for the handler (:func:`form_of`)."""
        fields: dict[str, str] = {}
        files: dict[str, Image] = {}
        if request.content_type != "multipart/form-data":
            for key, value in (await request.post()).items():
                if isinstance(value, str):
                    fields[key] = value
        else:
            limit = int(self.announcements.file_max_bytes)
            reader = await request.multipart()
            while (part := await reader.next()) is not None:
                if not isinstance(part, BodyPartReader) or part.name is None:
                    continue
                if part.filename is None:
                    fields[part.name] = (await part.read(decode=True)).decode(errors="replace")
                    continue
                data = bytearray()
                while chunk := await part.read_chunk():
                    data += chunk
                    if len(data) > limit:
                        raise FormTooLarge(too_large(len(data), limit))
                if part.filename and data:
                    content_type = part.headers.get("Content-Type")
                    files[part.name] = Image(part.filename, content_type, bytes(data))
        form = Form(fields, files)
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
