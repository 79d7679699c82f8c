"""The dashboard's page families, shaped like the bot's Cogs: one class per family
(:class:`Pages`), whose handlers are methods marked with the routes they serve (:func:`get`,
:func:`post`). The marks are collected when the class is defined, and every family's routes
are added to the application in one place (:func:`bot.web.dashboard.add_dashboard`).

A route is for logged-in viewers (the default: ``handler(request, viewer)``, through
:meth:`Dashboard.page`: session, CSRF on every change, errors answered), for anyone
(``public``: ``handler(request)``, through :meth:`Dashboard.public`) or an asset served as
its handler answers it (``asset``).

:class:`GuildPages` is the door of a server's pages: the server in the address and the viewer
as its member, turned once into the :class:`~bot.requests.request.Requester` the checks
take."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from aiohttp import web

from ...limits import MAX_ANNOUNCEMENT_ID
from ...requests.checks import Refusal, require_manager
from ...requests.request import Requester
from .core import Fields

if TYPE_CHECKING:
    from .core import AnonymousHandler, Dashboard, Viewer

Access = Literal["viewer", "public", "asset"]

GUILD = "/g/{guild_id}"
"""A server's pages."""
ANNOUNCEMENT = GUILD + "/a/{local_id}"
"""One announcement's pages."""

_MARKS = "__dashboard_routes__"

F = TypeVar("F", bound=Callable[..., Awaitable[web.StreamResponse]])


@dataclass(frozen=True, slots=True)
class Route:
    """A route a handler serves."""

    method: str
    path: str
    access: Access
    form: Fields | None = None
    """What a change's form posts (None: its CSRF token alone)."""


def route(
    method: str, path: str, access: Access = "viewer", form: Fields | None = None
) -> Callable[[F], F]:
    """Mark a :class:`Pages` method as the handler of ``method path`` (marks stack: one
    handler may serve several paths)."""

    def mark(handler: F) -> F:
        marks = (Route(method, path, access, form), *getattr(handler, _MARKS, ()))
        setattr(handler, _MARKS, marks)
        return handler

    return mark


def get(path: str, access: Access = "viewer") -> Callable[[F], F]:
    return route("GET", path, access)


def post(path: str, access: Access = "viewer", form: Fields | None = None) -> Callable[[F], F]:
    """A change, whose form posts ``form`` (read before the handler, and only that)."""
    return route("POST", path, access, form)


class Pages:
    """A family of pages on the dashboard's frame ``d``: its marked handlers, in the order
    they are defined (a subclass's after its bases')."""

    marked: ClassVar[tuple[tuple[str, Route], ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = tuple(
            (name, found)
            for name, value in vars(cls).items()
            for found in getattr(value, _MARKS, ())
        )
        cls.marked = (*cls.marked, *own)

    def __init__(self, d: Dashboard) -> None:
        self.d = d

    def routes(self) -> list[web.RouteDef]:
        """Every marked handler, bound to this family and wrapped for its access (a
        viewer's change with its form, its file read once :meth:`authorize` let it)."""
        return [web.route(r.method, r.path, self.wrapped(name, r)) for name, r in self.marked]

    def wrapped(self, name: str, r: Route) -> AnonymousHandler:
        handler = getattr(self, name)
        if r.access == "public":
            return self.d.public(handler)
        if r.access == "asset":
            return handler  # type: ignore[no-any-return]
        if r.form is None:
            return self.d.page(handler)
        return self.d.page(handler, r.form, self.authorize)

    async def authorize(self, request: web.Request, viewer: Viewer) -> object:
        """The viewer may change what ``request`` changes (refused otherwise), checked before
        a file of its form is read: here, being logged in is enough."""
        return None


def locale_of(request: web.Request) -> str | None:
    """The browser's first language (``en-US``): how dates like ``24/12`` are read."""
    first = request.headers.get("Accept-Language", "").split(",")[0].split(";")[0].strip()
    return first or None


REQUESTER_KEY = web.RequestKey("crier_requester", Requester)


class GuildPages(Pages):
    """The pages of one server (``/g/{guild_id}…``): for its managers only; any other viewer
    gets "not found", so no id of one server is usable from another."""

    async def authorize(self, request: web.Request, viewer: Viewer) -> object:
        """A manager of the server in the address (before a file is read)."""
        return await self.requester(request, viewer)

    async def requester(self, request: web.Request, viewer: Viewer) -> Requester:
        """The server in the address and the viewer as its member, with the browser's locale,
        if they may manage its announcements (else 404), found once per request. A change
        is checked against Discord now: a member without the rights is refused with the
        command's answer (403), and refused again without asking Discord for a while
        (:data:`~bot.web.dashboard.access.REFUSED_TTL`). Every change (each POST) counts
        toward the member's ``COMMANDS_PER_MINUTE`` in the server, with their commands,
        before Discord is asked (past it: 429, nothing done)."""
        found = request.get(REQUESTER_KEY)
        if found is None:
            found = request[REQUESTER_KEY] = await self._requester(request, viewer)
        return found

    async def _requester(self, request: web.Request, viewer: Viewer) -> Requester:
        d = self.d
        raw = request.match_info["guild_id"]
        guild = d.client.get_guild(int(raw)) if raw.isdigit() else None
        if guild is None or guild.id not in viewer.session.guild_ids:
            raise web.HTTPNotFound()
        if request.method not in ("GET", "HEAD"):
            await d.announcements.count_command(guild.id, viewer.session.user_id)
        if request.method in ("GET", "HEAD"):
            found = await d.access.manager(viewer.session, guild.id)
            if found is None:
                raise web.HTTPNotFound()
            return Requester(*found, locale_of(request))
        member = await d.access.member(guild, viewer.session.user_id, change=True)
        if member is None:
            raise web.HTTPNotFound()
        try:
            require_manager(member, await d.announcements.settings(guild.id))  # a Refusal: 403
        except Refusal:
            d.access.refused(guild.id, member.id)
            raise
        return Requester(guild, member, locale_of(request))

    @staticmethod
    def local_id(request: web.Request) -> int:
        """The announcement number in the address (else 404)."""
        raw = request.match_info["local_id"]
        if not raw.isdigit() or not 1 <= int(raw) <= MAX_ANNOUNCEMENT_ID:
            raise web.HTTPNotFound()
        return int(raw)
