"""Discord's OAuth2 authorization-code flow (scopes ``identify guilds``): the authorize URL,
then the code exchanged for a token that is used twice (who the user is, which servers they
are in) and dropped. Neither the client secret nor a token is ever logged or kept."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any
from urllib.parse import urlencode

import aiohttp

from .sessions import Identity

SCOPES = "identify guilds"
TIMEOUT = aiohttp.ClientTimeout(total=15)


class OAuthError(Exception):
    """The login could not be completed; ``str(e)`` says why (safe to show and log)."""


class DiscordOAuth:
    def __init__(self, oauth_base: str, api_base: str, client_secret: str) -> None:
        self.oauth_base = oauth_base
        self.api_base = api_base
        self._secret = client_secret

    def __repr__(self) -> str:  # the secret never shows in a traceback's locals
        return f"DiscordOAuth({self.oauth_base!r}, {self.api_base!r})"

    def _state_mac(self, body: str) -> str:
        key = hmac.new(self._secret.encode(), b"crier oauth2 state", hashlib.sha256).digest()
        return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()[:32]

    def new_state(self, now: float) -> str:
        """A login's ``state``: when it was made, a random part, and their signature with a
        key only this application's instances hold (from the client secret)."""
        body = f"{int(now)}.{secrets.token_urlsafe(18)}"
        return f"{body}.{self._state_mac(body)}"

    def state_made(self, state: str, now: float, seconds: float) -> bool:
        """Whether ``state`` is one :meth:`new_state` made in the last ``seconds``: one a
        client made up is refused before anything is asked of Discord."""
        body, _, mac = state.rpartition(".")
        made, _, _ = body.partition(".")
        if not made.isdigit() or not hmac.compare_digest(mac, self._state_mac(body)):
            return False
        return now - seconds <= int(made) <= now + 1

    def authorize_url(self, client_id: int, redirect_uri: str, state: str) -> str:
        query = urlencode(
            {
                "response_type": "code",
                "client_id": str(client_id),
                "scope": SCOPES,
                "redirect_uri": redirect_uri,
                "state": state,
                "prompt": "none",
            }
        )
        return f"{self.oauth_base}/oauth2/authorize?{query}"

    async def identify(self, client_id: int, code: str, redirect_uri: str) -> Identity:
        """Exchange ``code`` for a token, then read the user and their servers with it."""
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "client_id": str(client_id),
            "client_secret": self._secret,
        }
        async with aiohttp.ClientSession(timeout=TIMEOUT) as http:
            try:
                async with http.post(f"{self.api_base}/oauth2/token", data=form) as resp:
                    token = await _json(resp, "exchange the login code")
                bearer = {"Authorization": f"Bearer {token.get('access_token', '')}"}
                async with http.get(f"{self.api_base}/users/@me", headers=bearer) as resp:
                    user = await _json(resp, "read who you are")
                async with http.get(f"{self.api_base}/users/@me/guilds", headers=bearer) as resp:
                    guilds = await _json(resp, "read your servers")
            except aiohttp.ClientError as exc:
                raise OAuthError(f"Discord could not be reached ({type(exc).__name__})") from None
        if not isinstance(guilds, list):
            raise OAuthError("Discord's answer about your servers was not a list")
        return Identity(
            user_id=int(user["id"]),
            username=str(user.get("global_name") or user.get("username") or user["id"]),
            guild_ids=frozenset(int(g["id"]) for g in guilds),
            locale=str(user["locale"]) if user.get("locale") else None,
        )


async def _json(resp: aiohttp.ClientResponse, what: str) -> Any:
    if resp.status != 200:
        # Discord's OAuth2 errors name the problem ("invalid_grant"); never the token.
        try:
            body = await resp.json()
            reason = body.get("error") or body.get("message") or ""
        except (aiohttp.ContentTypeError, ValueError, AttributeError):
            reason = ""
        raise OAuthError(f"Discord refused to {what} (HTTP {resp.status} {reason})".strip())
    return await resp.json()
