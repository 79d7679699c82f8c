"""OAuth2 (authorization code grant) for a web dashboard logging users in with Discord.

Faithful to Discord's OAuth2 docs and RFC 6749:

* ``GET /oauth2/authorize?response_type=code&client_id=&redirect_uri=&scope=&state=[&prompt=]``
  (on the fake's root, like ``https://discord.com/oauth2/authorize``). An unknown ``client_id`` or
  a ``redirect_uri`` not registered for the application is an error page (400) and no redirect,
  as RFC 6749 4.1.2.1 requires. Otherwise the user the test logged in
  (``fake.oauth_login_as(user, approve=True)``) is redirected (302) to
  ``redirect_uri?code=...&state=...``; a refusal redirects with ``error=access_denied``; a
  ``response_type`` other than ``code`` or an unknown scope redirects with
  ``error=unsupported_response_type`` / ``invalid_scope``. No user logged in: a 401 login page.
  With ``fake.oauth2.consent_page = True`` the page shows Authorize / Cancel buttons (a form
  POSTed back to ``/oauth2/authorize``) instead of deciding at once.
* ``POST /api/v10/oauth2/token`` (``application/x-www-form-urlencoded``), client authentication
  by ``client_id`` + ``client_secret`` form fields or HTTP Basic. ``grant_type=authorization_code``
  (``code``, and ``redirect_uri`` equal to the one authorized) or ``refresh_token``. The answer is
  ``{access_token, token_type: "Bearer", expires_in, refresh_token, scope}``. A code works once
  and for ``code_ttl`` seconds (Discord: 10 minutes); a refresh replaces both tokens (the old
  ones stop working). Errors are OAuth2's ``{"error", "error_description"}``: ``invalid_client``
  (401), ``invalid_grant``, ``invalid_request``, ``unsupported_grant_type`` (400).
* ``GET /api/v10/users/@me`` (scope ``identify``; ``email`` adds the address) and
  ``GET /api/v10/users/@me/guilds`` (scope ``guilds``: each guild the user is in, with ``owner``
  and ``permissions`` - the user's guild-level permissions - as a string) with
  ``Authorization: Bearer <token>``. A missing, unknown or expired token is 401
  ``{"message": "401: Unauthorized", "code": 0}``; a token without the scope is 403 50001.
* Time is ``fake.oauth2.clock`` (``time.time`` unless a test sets it), so expiry can be tested
  without waiting; ``expires_in`` is ``access_token_ttl`` (Discord: 604800 s).
"""

from __future__ import annotations

import base64
import binascii
import html
import secrets
import time
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from .permissions import base_permissions
from .state import User, _id_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from .server import FakeDiscord
    from .state import Member

KNOWN_SCOPES = frozenset(
    {
        "identify",
        "email",
        "guilds",
        "guilds.members.read",
        "guilds.join",
        "connections",
        "openid",
        "applications.commands",
        "bot",
        "role_connections.write",
    }
)


@dataclass
class _Grant:
    user: User
    scopes: tuple[str, ...]
    redirect_uri: str
    expires_at: float
    used: bool = False


@dataclass
class Token:
    """An issued access token (``refresh_token`` is its pair)."""

    access_token: str
    refresh_token: str
    user: User
    scopes: tuple[str, ...]
    expires_at: float
    revoked: bool = False


def _oauth_error(status: int, error: str, description: str) -> web.Response:
    return web.json_response({"error": error, "error_description": description}, status=status)


def _api_error(status: int, code: int, message: str) -> web.Response:
    return web.json_response({"message": message, "code": code}, status=status)


class OAuth2:
    """The fake's OAuth2 provider for its application (``client_id`` = the application id)."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake
        self.client_id = str(fake.application_id)
        self.client_secret = secrets.token_urlsafe(24)
        self.redirect_uris: list[str] = []
        self.logged_in: User | None = None
        self.approve = True
        self.consent_page = False
        self.clock: Callable[[], float] = time.time
        self.code_ttl = 600.0
        self.access_token_ttl = 604800.0
        self._grants: dict[str, _Grant] = {}
        self.tokens: dict[str, Token] = {}  # by access token
        self._by_refresh: dict[str, Token] = {}
        self.authorize_requests = 0

    # --- test knobs ---

    @property
    def authorize_url(self) -> str:
        return f"http://{self.fake.host}:{self.fake.port}/oauth2/authorize"

    @property
    def token_url(self) -> str:
        return f"{self.fake.api_base}/oauth2/token"

    def add_redirect_uri(self, uri: str) -> None:
        """Register a redirect URI for the application (as in the developer portal)."""
        if uri not in self.redirect_uris:
            self.redirect_uris.append(uri)

    def login_as(self, who: User | Member | int | None, *, approve: bool = True) -> None:
        """The browser's Discord session is ``who``'s (None: nobody logged in); ``approve``:
        whether they click Authorize."""
        self.logged_in = None if who is None else self.fake.users[_id_of(who)]
        self.approve = approve

    def expire_tokens(self) -> None:
        """Every access token issued so far is past its expiry (refresh tokens still work)."""
        now = self.clock()
        for token in self.tokens.values():
            token.expires_at = min(token.expires_at, now - 1)

    def install(self, app: web.Application) -> None:
        app.router.add_get("/oauth2/authorize", self._authorize)
        app.router.add_post("/oauth2/authorize", self._authorize_decision)
        app.router.add_post("/api/oauth2/token", self._token)

    # --- the authorize page ---

    def _page(self, status: int, title: str, body: str = "") -> web.Response:
        text = (
            f"<!doctype html><html><head><title>{html.escape(title)}</title></head>"
            f"<body><h1>{html.escape(title)}</h1>{body}</body></html>"
        )
        return web.Response(status=status, text=text, content_type="text/html")

    def _check_authorize(
        self, q: Any
    ) -> tuple[web.Response | None, str, str | None, tuple[str, ...]]:
        client_id = q.get("client_id", "")
        redirect_uri = q.get("redirect_uri", "")
        state = q.get("state")
        if client_id != self.client_id:
            return self._page(400, "Unknown Application"), "", state, ()
        if redirect_uri not in self.redirect_uris:
            return self._page(400, "Invalid OAuth2 redirect_uri"), "", state, ()
        if q.get("response_type") != "code":
            return (
                self._redirect(redirect_uri, state, error="unsupported_response_type"),
                "",
                state,
                (),
            )
        scopes = tuple(q.get("scope", "").split())
        if not scopes or any(s not in KNOWN_SCOPES for s in scopes):
            return self._redirect(redirect_uri, state, error="invalid_scope"), "", state, ()
        return None, redirect_uri, state, scopes

    async def _authorize(self, request: web.Request) -> web.StreamResponse:
        self.authorize_requests += 1
        refused, redirect_uri, state, scopes = self._check_authorize(request.query)
        if refused is not None:
            return refused
        if self.logged_in is None:
            return self._page(401, "Log in to Discord")
        if self.consent_page:
            hidden = "".join(
                f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                for k, v in request.query.items()
            )
            form = (
                f"<p>{html.escape(self.fake.bot_user.username)} wants to access your account "
                f"({html.escape(' '.join(scopes))}) as {html.escape(self.logged_in.username)}.</p>"
                f'<form method="post">{hidden}'
                '<button name="decision" value="authorize">Authorize</button>'
                '<button name="decision" value="cancel">Cancel</button></form>'
            )
            return self._page(200, "Authorize access to your account", form)
        return self._decide(self.approve, redirect_uri, state, scopes)

    async def _authorize_decision(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        query = {k: str(v) for k, v in form.items()}
        refused, redirect_uri, state, scopes = self._check_authorize(query)
        if refused is not None:
            return refused
        if self.logged_in is None:
            return self._page(401, "Log in to Discord")
        return self._decide(query.get("decision") == "authorize", redirect_uri, state, scopes)

    def _decide(
        self, approved: bool, redirect_uri: str, state: str | None, scopes: tuple[str, ...]
    ) -> web.Response:
        if not approved:
            return self._redirect(
                redirect_uri,
                state,
                error="access_denied",
                error_description="The resource owner or authorization server denied the request",
            )
        assert self.logged_in is not None
        code = secrets.token_urlsafe(22)
        self._grants[code] = _Grant(
            self.logged_in, scopes, redirect_uri, self.clock() + self.code_ttl
        )
        return self._redirect(redirect_uri, state, code=code)

    @staticmethod
    def _redirect(redirect_uri: str, state: str | None, **params: str) -> web.Response:
        if state is not None:
            params["state"] = state
        sep = "&" if "?" in redirect_uri else "?"
        location = redirect_uri + sep + urllib.parse.urlencode(params)
        return web.Response(status=302, headers={"Location": location})

    # --- the token endpoint ---

    def _client_ok(self, request: web.Request, form: dict[str, str]) -> bool:
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            try:
                raw = base64.b64decode(auth[6:], validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                return False
            cid, _, secret = raw.partition(":")
            cid, secret = urllib.parse.unquote(cid), urllib.parse.unquote(secret)
        else:
            cid, secret = form.get("client_id", ""), form.get("client_secret", "")
        return cid == self.client_id and secret == self.client_secret

    async def _token(self, request: web.Request) -> web.StreamResponse:
        if request.content_type != "application/x-www-form-urlencoded":
            return _oauth_error(400, "invalid_request", "Content-Type must be form-urlencoded.")
        form = {k: str(v) for k, v in (await request.post()).items()}
        if not self._client_ok(request, form):
            return _oauth_error(401, "invalid_client", "Invalid client")
        grant_type = form.get("grant_type")
        now = self.clock()
        if grant_type == "authorization_code":
            code = form.get("code")
            if not code:
                return _oauth_error(400, "invalid_request", 'Missing "code" in request.')
            grant = self._grants.get(code)
            if grant is None or grant.used or grant.expires_at <= now:
                return _oauth_error(400, "invalid_grant", 'Invalid "code" in request.')
            if form.get("redirect_uri") != grant.redirect_uri:
                return _oauth_error(400, "invalid_grant", 'Invalid "redirect_uri" in request.')
            grant.used = True
            return web.json_response(self._issue(grant.user, grant.scopes, now))
        if grant_type == "refresh_token":
            old = self._by_refresh.get(form.get("refresh_token") or "")
            if old is None or old.revoked:
                return _oauth_error(400, "invalid_grant", 'Invalid "refresh_token" in request.')
            old.revoked = True
            del self._by_refresh[old.refresh_token]
            return web.json_response(self._issue(old.user, old.scopes, now))
        return _oauth_error(400, "unsupported_grant_type", "Unsupported grant type")

    def _issue(self, user: User, scopes: tuple[str, ...], now: float) -> dict[str, Any]:
        token = Token(
            access_token=secrets.token_urlsafe(22),
            refresh_token=secrets.token_urlsafe(22),
            user=user,
            scopes=scopes,
            expires_at=now + self.access_token_ttl,
        )
        self.tokens[token.access_token] = token
        self._by_refresh[token.refresh_token] = token
        return {
            "access_token": token.access_token,
            "token_type": "Bearer",
            "expires_in": int(self.access_token_ttl),
            "refresh_token": token.refresh_token,
            "scope": " ".join(scopes),
        }

    # --- Bearer-authenticated API ---

    def claims(self, request: web.Request, path: str) -> bool:
        """True for the API requests this module answers (the token endpoint, and Bearer
        requests)."""
        return path == "/oauth2/token" or request.headers.get("Authorization", "").startswith(
            "Bearer "
        )

    async def handle(self, request: web.Request, path: str) -> web.StreamResponse:
        if path == "/oauth2/token":
            if request.method != "POST":
                return _api_error(405, 0, "405: Method Not Allowed")
            return await self._token(request)
        token = self.tokens.get(request.headers["Authorization"][len("Bearer ") :])
        if token is None or token.revoked or token.expires_at <= self.clock():
            return _api_error(401, 0, "401: Unauthorized")
        if request.method == "GET" and path == "/users/@me":
            if "identify" not in token.scopes and "email" not in token.scopes:
                return _api_error(403, 50001, "Missing Access")
            data = token.user.to_dict() | {"locale": token.user.locale, "mfa_enabled": False}
            if "email" in token.scopes:
                data |= {"email": f"{token.user.username}@example.test", "verified": True}
            return web.json_response(data)
        if request.method == "GET" and path == "/users/@me/guilds":
            if "guilds" not in token.scopes:
                return _api_error(403, 50001, "Missing Access")
            return web.json_response(self._guilds_of(token.user, request.query))
        return _api_error(401, 0, "401: Unauthorized")

    def _guilds_of(self, user: User, query: Any) -> list[dict[str, Any]]:
        out = []
        for guild in sorted(self.fake.guilds.values(), key=lambda g: g.id):
            member = guild.members.get(user.id)
            if member is None:
                continue
            entry: dict[str, Any] = {
                "id": str(guild.id),
                "name": guild.name,
                "icon": None,
                "banner": None,
                "owner": guild.owner_id == user.id,
                "permissions": str(base_permissions(guild, member)),
                "features": [],
            }
            if query.get("with_counts") in ("true", "1", "True"):
                entry["approximate_member_count"] = len(guild.members)
                entry["approximate_presence_count"] = 0
            out.append(entry)
        after, before = query.get("after"), query.get("before")
        if after:
            out = [g for g in out if int(g["id"]) > int(after)]
        if before:
            out = [g for g in out if int(g["id"]) < int(before)]
        return out[: min(max(int(query.get("limit", 200)), 1), 200)]
