"""Logging in with Discord (OAuth2 authorization code, ``state`` checked), out, the home
page (the servers the viewer may manage), the language picker, and the not-found page of any
other address."""

from __future__ import annotations

import logging
import secrets
from urllib.parse import urlparse

from aiohttp import web

from ... import i18n
from ...limits import MAX_ZONE_NAME
from ...parsing import resolve_timezone, zone_names
from .core import (
    DISCORD_LOCALE_COOKIE,
    LANGUAGE_COOKIE,
    Fields,
    Viewer,
    form_of,
    secured,
)
from .oauth import OAuthError
from .pages import Pages, get, post, route
from .sessions import SESSION_COOKIE, SESSION_SECONDS, STATE_COOKIE, Identity

log = logging.getLogger(__name__)

STATE_SECONDS = 600


LANGUAGE_SECONDS = 365 * 24 * 3600
"""How long the language picked is remembered."""


class HomePages(Pages):
    """The home page, logging in and out, the viewer's own zone, and the stylesheet."""

    @get("/", "public")
    async def home(self, request: web.Request) -> web.StreamResponse:
        """The servers the viewer may manage; the login button for anyone else."""
        d = self.d
        viewer = await d.viewer_of(request)
        if viewer is None:
            return d.render("login.html", None)
        guilds = await d.access.managed_guilds(viewer.session)
        return d.render(
            "home.html", viewer, guilds=guilds, flash=await d.flash(viewer), zones=zone_names()
        )

    @get("/login", "public")
    async def login(self, request: web.Request) -> web.StreamResponse:
        """Off to Discord's authorize page, with a ``state`` kept in a cookie."""
        d = self.d
        if not d.logins.allow(d.address(request)):
            return d.answer(None, i18n.t(
                "Too many logins from your address just now. Wait a minute and try again."
            ), 429)  # fmt: skip
        client_id = d.client.application_id
        if client_id is None:
            return d.answer(None, i18n.t("The bot is still connecting to Discord; try again."), 503)
        state = d.oauth.new_state(d.clock.time())
        redirect = web.HTTPSeeOther(
            d.oauth.authorize_url(client_id, d.redirect_uri(request), state)
        )
        self.set_cookie(redirect, STATE_COOKIE, state, STATE_SECONDS)
        raise redirect

    @get("/auth/callback", "public")
    async def callback(self, request: web.Request) -> web.StreamResponse:
        """Back from Discord: the ``state`` must be one this application made (signed, at
        most :data:`STATE_SECONDS` old, used once) and the one this browser was given; only
        then is the code exchanged (a call to Discord). At most :data:`CALLBACK_LIMIT` from
        one address."""
        d = self.d
        if not d.callbacks.allow(d.address(request)):
            return d.answer(None, i18n.t(
                "Too many logins from your address just now. Wait a minute and try again."
            ), 429)  # fmt: skip
        state = request.query.get("state", "")
        expected = request.cookies.get(STATE_COOKIE, "")
        now = d.clock.time()
        if (
            not expected
            or not secrets.compare_digest(state.encode(), expected.encode())
            or not d.oauth.state_made(state, now, STATE_SECONDS)
            or d.states_used.get(state) is not None
        ):
            return d.answer(None, i18n.t("This login link is not the one I started (its state "
                                         "does not match). Log in again."), 400)  # fmt: skip
        d.states_used.put(state, True, STATE_SECONDS + 1)
        if "error" in request.query:
            return d.answer(None, i18n.t("You did not authorize the login on Discord."), 403)
        code = request.query.get("code", "")
        client_id = d.client.application_id
        if not code or client_id is None:
            return d.answer(
                None, i18n.t("The login answer from Discord had no code. Log in again."), 400
            )
        try:
            who: Identity = await d.oauth.identify(client_id, code, d.redirect_uri(request))
        except OAuthError as exc:
            log.warning("dashboard login failed: %s", exc)
            return d.answer(
                None, i18n.t("The login failed: {error}. Log in again.", error=exc), 502
            )
        session_id = await d.sessions.open(who)
        log.info("dashboard login by user %d", who.user_id)
        redirect = web.HTTPSeeOther("/")
        self.set_cookie(redirect, SESSION_COOKIE, session_id, SESSION_SECONDS)
        if who.locale:
            self.set_cookie(redirect, DISCORD_LOCALE_COOKIE, who.locale, SESSION_SECONDS)
        redirect.del_cookie(STATE_COOKIE, path="/")
        raise redirect

    @get("/language", "public")
    async def language(self, request: web.Request) -> web.StreamResponse:
        """The language picker: ``lang`` (a locale key crier speaks; ``auto``: the viewer's
        Discord or browser language again), then back to the page it was picked on."""
        redirect = web.HTTPSeeOther(picked_on(request))
        picked = request.query.get("lang", "")
        if picked in i18n.LANGUAGES:
            self.set_cookie(redirect, LANGUAGE_COOKIE, picked, LANGUAGE_SECONDS)
        else:
            redirect.del_cookie(LANGUAGE_COOKIE, path="/")
        raise redirect

    @post("/logout")
    async def logout(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        await self.d.sessions.close(viewer.session)
        redirect = web.HTTPSeeOther("/")
        redirect.del_cookie(SESSION_COOKIE, path="/")
        raise redirect

    @post("/timezone", form=Fields({"zone": MAX_ZONE_NAME}))
    async def own_timezone(self, request: web.Request, viewer: Viewer) -> web.StreamResponse:
        """The viewer's own zone, as ``/timezone zone:`` sets it (times they type and see)."""
        form = form_of(request)
        zone = resolve_timezone(str(form.get("zone", "")).strip())  # InputError: answered
        await self.d.announcements.set_member_timezone(viewer.session.user_id, zone.key)
        await self.d.sessions.set_flash(
            viewer.session,
            i18n.t(
                "🌐 Your time zone is now **{zone}**: the times you type here and in "
                "`/schedule` and `/edit` are read in it, unless you pick another on the form.",
                zone=zone.key,
            ),
        )
        raise web.HTTPSeeOther("/")

    @get("/static/dashboard.css", "asset")
    async def stylesheet(self, request: web.Request) -> web.StreamResponse:
        response = web.Response(body=self.d.stylesheet, content_type="text/css")
        secured(response)
        response.headers["Cache-Control"] = "max-age=3600"
        return response

    def set_cookie(self, response: web.StreamResponse, name: str, value: str, age: int) -> None:
        """A cookie no script can read, sent back on top-level navigations only (Lax), and
        only over https when the dashboard is served so."""
        response.set_cookie(
            name, value, max_age=age, path="/", httponly=True, samesite="Lax",
            secure=self.d.secure_cookies,
        )  # fmt: skip


def picked_on(request: web.Request) -> str:
    """The page the picker was used on (its path and query, from the ``Referer``), when it is
    one of this dashboard's; else the home page. Never another site: not ``//host/…`` (the
    not-found page, with its picker, answers any path), nor a path with a backslash."""
    back = urlparse(request.headers.get("Referer", ""))
    path = back.path
    if back.netloc != request.host or not path.startswith("/") or path.startswith("//"):
        return "/"
    if "\\" in path or any(ord(c) < 32 for c in path):
        return "/"
    return path + (f"?{back.query}" if back.query else "")


class NotFoundPages(Pages):
    """Any other address: the dashboard's "not found" page, in the viewer's language (its
    family is registered last, after every other route of the application)."""

    @route("*", "/{anything:.*}", "public")
    async def not_found(self, request: web.Request) -> web.StreamResponse:
        viewer = await self.d.viewer_of(request)
        return self.d.answer(viewer, i18n.t("Not found."), 404)
