"""Logging in with Discord (OAuth2 authorization code, ``state`` checked), out, and the home
page: the servers the viewer may manage."""

from __future__ import annotations

import logging
import secrets

from aiohttp import web

from ...parsing import resolve_timezone
from .announcement_pages import ZONES
from .core import Dashboard, Viewer, form_of, secured
from .oauth import OAuthError
from .sessions import SESSION_COOKIE, SESSION_SECONDS, STATE_COOKIE, Identity

log = logging.getLogger(__name__)

STATE_SECONDS = 600
TOO_MANY_LOGINS = "Too many logins from your address just now. Wait a minute and try again."


def routes(d: Dashboard) -> list[web.RouteDef]:
    async def home(request: web.Request) -> web.StreamResponse:
        viewer = await d.viewer_of(request)
        if viewer is None:
            return d.render("login.html", None)
        guilds = await d.access.managed_guilds(viewer.session)
        return d.render(
            "home.html", viewer, guilds=guilds, flash=await d.flash(viewer), zones=ZONES
        )

    async def login(request: web.Request) -> web.StreamResponse:
        if not d.limiter.allow(request.remote or "?"):
            return d.answer(None, TOO_MANY_LOGINS, 429)
        client_id = d.client.application_id
        if client_id is None:
            return d.answer(None, "The bot is still connecting to Discord; try again.", 503)
        state = secrets.token_urlsafe(24)
        redirect = web.HTTPSeeOther(
            d.oauth.authorize_url(client_id, d.redirect_uri(request), state)
        )
        set_cookie(d, redirect, STATE_COOKIE, state, STATE_SECONDS)
        raise redirect

    async def callback(request: web.Request) -> web.StreamResponse:
        state = request.query.get("state", "")
        expected = request.cookies.get(STATE_COOKIE, "")
        if not expected or not secrets.compare_digest(state.encode(), expected.encode()):
            return d.answer(None, "This login link is not the one I started (its state does "
                            "not match). Log in again.", 400)  # fmt: skip
        if "error" in request.query:
            return d.answer(None, "You did not authorize the login on Discord.", 403)
        code = request.query.get("code", "")
        client_id = d.client.application_id
        if not code or client_id is None:
            return d.answer(None, "The login answer from Discord had no code. Log in again.", 400)
        try:
            who: Identity = await d.oauth.identify(client_id, code, d.redirect_uri(request))
        except OAuthError as exc:
            log.warning("dashboard login failed: %s", exc)
            return d.answer(None, f"The login failed: {exc}. Log in again.", 502)
        session_id = await d.sessions.open(who)
        log.info("dashboard login by user %d", who.user_id)
        redirect = web.HTTPSeeOther("/")
        set_cookie(d, redirect, SESSION_COOKIE, session_id, SESSION_SECONDS)
        redirect.del_cookie(STATE_COOKIE, path="/")
        raise redirect

    async def logout(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        await d.sessions.close(viewer.session)
        redirect = web.HTTPSeeOther("/")
        redirect.del_cookie(SESSION_COOKIE, path="/")
        raise redirect

    async def own_timezone(request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """The viewer's own zone, as ``/timezone zone:`` sets it (times they type and see)."""
        form = form_of(request)
        zone = resolve_timezone(str(form.get("zone", "")).strip())  # InputError: answered
        await d.announcements.set_member_timezone(viewer.session.user_id, zone.key)
        await d.sessions.set_flash(
            viewer.session,
            f"🌐 Your time zone is now **{zone.key}**: the times you type here and in "
            "`/schedule` and `/edit` are read in it, unless you pick another on the form.",
        )
        raise web.HTTPSeeOther("/")

    async def stylesheet(request: web.Request) -> web.StreamResponse:
        response = web.Response(body=d.stylesheet, content_type="text/css")
        secured(response)
        response.headers["Cache-Control"] = "max-age=3600"
        return response

    return [
        web.get("/", d.public(home)),
        web.get("/login", d.public(login)),
        web.get("/auth/callback", d.public(callback)),
        web.post("/logout", d.page(logout)),
        web.post("/timezone", d.page(own_timezone)),
        web.get("/static/dashboard.css", stylesheet),
    ]


def set_cookie(d: Dashboard, response: web.StreamResponse, name: str, value: str, age: int) -> None:
    """A cookie no script can read, sent back on top-level navigations only (Lax), and only
    over https when the dashboard is served so."""
    response.set_cookie(
        name, value, max_age=age, path="/", httponly=True, samesite="Lax",
        secure=d.secure_cookies,
    )  # fmt: skip
