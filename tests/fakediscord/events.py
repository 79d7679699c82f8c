"""Guild scheduled events: ``/guilds/{guild_id}/scheduled-events`` (create, list) and
``/guilds/{guild_id}/scheduled-events/{event_id}`` (get, modify, delete).

Faithful details (Discord's "Guild Scheduled Event" resource):

* An event is EXTERNAL (entity_type 3: ``entity_metadata.location`` and a
  ``scheduled_end_time`` required, no channel), VOICE (2) or STAGE_INSTANCE (1) (a
  ``channel_id`` of that type required). Its status is SCHEDULED (1), ACTIVE (2), COMPLETED
  (3) or CANCELED (4); the list answers the scheduled and active ones (a canceled or
  completed event is gone from it), and so does a get (10070 Unknown Guild Scheduled Event
  otherwise, as Discord deletes them).
* Creating needs CREATE_EVENTS (guild-wide for EXTERNAL; in the channel, with VIEW_CHANNEL
  and CONNECT, for a voice or stage one, a stage one also MANAGE_CHANNELS, MUTE_MEMBERS and
  MOVE_MEMBERS): else 403 50013. A start in the past is 400 50035. A server keeps at most 100
  scheduled or active events: the 101st is 400 30038.
* Modifying or deleting the bot's own event needs CREATE_EVENTS (or MANAGE_EVENTS), anyone
  else's MANAGE_EVENTS. A SCHEDULED event may become ACTIVE or CANCELED; an ACTIVE one
  COMPLETED; a CANCELED or COMPLETED one can't change (400 180000... here 50035 on
  ``status``).
* Creating has no nonce: a retried create makes a second event. ``fake.faults`` answers a
  create with a 5xx after it was made (``after_effect=True``), as Discord sometimes does.
* The members Interested in an event (``mark_interested``): ``GET
  /guilds/{guild_id}/scheduled-events/{event_id}/users`` lists them by user id, ascending
  (``after``: those after it; ``before``: the last ``limit`` before it), ``limit`` 1–100
  (default 100; else 400 50035), each ``{guild_scheduled_event_id, user_id, user, response:
  1}`` with ``member`` when ``with_member`` is true and the user is still a member of the
  server. ``user_count`` of the event counts them.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .errors import ApiError, form_error
from .permissions import Permissions as P
from .state import GUILD_STAGE_VOICE, GUILD_VOICE

if TYPE_CHECKING:
    from collections.abc import Callable

    from aiohttp import web

    from .server import FakeDiscord, _Body
    from .state import Guild

STAGE, VOICE, EXTERNAL = 1, 2, 3
SCHEDULED, ACTIVE, COMPLETED, CANCELED = 1, 2, 3, 4
LIVE = (SCHEDULED, ACTIVE)
EVENT_LIMIT = 100
MOVES = {SCHEDULED: {SCHEDULED, ACTIVE, CANCELED}, ACTIVE: {ACTIVE, COMPLETED}}


@dataclass
class ScheduledEvent:
    id: int
    guild_id: int
    creator_id: int
    name: str
    description: str | None
    start: str
    end: str | None
    entity_type: int
    channel_id: int | None
    location: str | None
    status: int = SCHEDULED
    privacy_level: int = 2
    interested: list[int] = field(default_factory=list)
    """The users Interested in it, by id (in the order they marked it)."""

    @property
    def live(self) -> bool:
        return self.status in LIVE

    @property
    def start_ts(self) -> float:
        return datetime.fromisoformat(self.start).timestamp()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "guild_id": str(self.guild_id),
            "channel_id": None if self.channel_id is None else str(self.channel_id),
            "creator_id": str(self.creator_id),
            "name": self.name,
            "description": self.description,
            "scheduled_start_time": self.start,
            "scheduled_end_time": self.end,
            "privacy_level": self.privacy_level,
            "status": self.status,
            "entity_type": self.entity_type,
            "entity_id": None,
            "entity_metadata": (
                {"location": self.location} if self.entity_type == EXTERNAL else None
            ),
            "user_count": len(self.interested),
            "image": None,
            "recurrence_rule": None,
        }


class EventRoutes:
    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake
        self.events: dict[int, ScheduledEvent] = {}
        """Every event ever created, canceled and deleted ones too (``deleted`` holds those)."""
        self.deleted: set[int] = set()
        self.gate: asyncio.Event | None = None
        """Set by :meth:`hold_creates`: creates wait for it before doing anything."""
        self.parked = 0
        """How many creates are waiting at the gate."""

    def hold_creates(self) -> asyncio.Event:
        """Park every create (before it makes anything: the request is on its way in) until
        the returned event is set."""
        self.gate = asyncio.Event()
        return self.gate

    def of(self, guild: Guild, *, live_only: bool = True) -> list[ScheduledEvent]:
        """The guild's events (the scheduled or active ones), oldest first."""
        return [
            e
            for e in sorted(self.events.values(), key=lambda e: e.id)
            if e.guild_id == guild.id and e.id not in self.deleted and (e.live or not live_only)
        ]

    def add(
        self, guild: Guild, name: str, start: float, *, creator_id: int | None = None
    ) -> ScheduledEvent:
        """An event someone made (not the bot, unless ``creator_id`` says so)."""
        event = ScheduledEvent(
            id=self.fake.snowflakes.next(),
            guild_id=guild.id,
            creator_id=creator_id if creator_id is not None else guild.owner_id,
            name=name,
            description=None,
            start=_iso(start),
            end=_iso(start + 3600),
            entity_type=EXTERNAL,
            channel_id=None,
            location="somewhere",
        )
        self.events[event.id] = event
        return event

    def mark_interested(self, event: ScheduledEvent, *who: Any) -> None:
        """Users (or members, or ids) mark themselves Interested in ``event``."""
        for one in who:
            user_id = int(getattr(getattr(one, "user", one), "id", one))
            if user_id not in event.interested:
                event.interested.append(user_id)
        self.fake._changed()

    def unmark_interested(self, event: ScheduledEvent, *who: Any) -> None:
        for one in who:
            user_id = int(getattr(getattr(one, "user", one), "id", one))
            if user_id in event.interested:
                event.interested.remove(user_id)
        self.fake._changed()

    def install(self, add: Callable[..., None]) -> None:
        base = "/guilds/{guild_id}/scheduled-events"
        add("GET", base + "/{event_id}/users", self._users, major="guild_id")
        add("GET", base, self._list, major="guild_id")
        add("POST", base, self._create, major="guild_id")
        add("GET", base + "/{event_id}", self._get, major="guild_id")
        add("PATCH", base + "/{event_id}", self._modify, major="guild_id")
        add("DELETE", base + "/{event_id}", self._delete, major="guild_id")

    # --- routes ---

    async def _list(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        guild = self._guild(params)
        return [e.to_dict() for e in self.of(guild)]

    async def _get(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        return self._event(self._guild(params), params).to_dict()

    async def _users(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        guild = self._guild(params)
        event = self._event(guild, params)
        query = request.query
        try:
            limit = int(query.get("limit", 100))
        except ValueError:
            limit = 0
        if not 1 <= limit <= 100:
            raise form_error("limit", "NUMBER_TYPE_MAX", "Must be between 1 and 100.")
        with_member = query.get("with_member", "false").lower() in ("true", "1")
        ids = sorted(event.interested)
        if "before" in query:
            ids = [u for u in ids if u < int(query["before"])][-limit:]
        else:
            after = int(query.get("after", 0))
            ids = [u for u in ids if u > after][:limit]
        out = []
        for user_id in ids:
            user = self.fake.users.get(user_id)
            if user is None:
                continue
            entry: dict[str, Any] = {
                "guild_scheduled_event_id": str(event.id),
                "user_id": str(user_id),
                "user": user.to_dict(),
                "response": 1,
            }
            member = guild.members.get(user_id)
            if with_member and member is not None:
                entry["member"] = member.to_dict(with_user=False)
            out.append(entry)
        return out

    async def _create(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        fake = self.fake
        if self.gate is not None and not self.gate.is_set():
            self.parked += 1
            fake._changed()
            try:
                await self.gate.wait()
            finally:
                self.parked -= 1
        guild = self._guild(params)
        data: dict[str, Any] = body.json or {}
        kind = data.get("entity_type")
        channel_id = data.get("channel_id")
        location = None
        if kind == EXTERNAL:
            location = (data.get("entity_metadata") or {}).get("location")
            if not location:
                raise form_error("entity_metadata.location", "BASE_TYPE_REQUIRED", "Required")
            if not data.get("scheduled_end_time"):
                raise form_error("scheduled_end_time", "BASE_TYPE_REQUIRED", "Required")
            if not guild.permissions_for(guild.bot_member) & P.CREATE_EVENTS:
                raise ApiError(403, 50013)
            channel_id = None
        else:
            self._check_channel(guild, kind, channel_id)
        start = str(data["scheduled_start_time"])
        if datetime.fromisoformat(start).timestamp() <= time.time():
            raise form_error("scheduled_start_time", "BASE_TYPE_BAD", "Cannot schedule in the past")
        if len(self.of(guild)) >= EVENT_LIMIT:
            raise ApiError(400, 30038)
        event = ScheduledEvent(
            id=fake.snowflakes.next(),
            guild_id=guild.id,
            creator_id=fake.bot_user.id,
            name=str(data["name"]),
            description=data.get("description"),
            start=start,
            end=data.get("scheduled_end_time"),
            entity_type=int(kind or 0),
            channel_id=None if channel_id is None else int(channel_id),
            location=location,
        )
        self.events[event.id] = event
        fake._changed()
        return event.to_dict()

    async def _modify(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        guild = self._guild(params)
        event = self._event(guild, params)
        self._check_manage(guild, event)
        data: dict[str, Any] = body.json or {}
        if "status" in data:
            status = int(data["status"])
            if status not in MOVES.get(event.status, set()):
                raise form_error("status", "BASE_TYPE_BAD", "Invalid status transition")
        kind = int(data.get("entity_type", event.entity_type))
        if kind != EXTERNAL:
            self._check_channel(guild, kind, data.get("channel_id", event.channel_id))
        for key, attr in (
            ("name", "name"),
            ("description", "description"),
            ("scheduled_start_time", "start"),
            ("scheduled_end_time", "end"),
            ("status", "status"),
        ):
            if key in data:
                setattr(event, attr, data[key])
        if "entity_type" in data:
            event.entity_type = kind
            channel = data.get("channel_id")
            event.channel_id = None if channel is None else int(channel)
            metadata = data.get("entity_metadata") or {}
            event.location = metadata.get("location") if kind == EXTERNAL else None
        elif data.get("entity_metadata"):
            event.location = data["entity_metadata"].get("location")
        self.fake._changed()
        return event.to_dict()

    async def _delete(self, request: web.Request, params: dict[str, str], body: _Body) -> Any:
        guild = self._guild(params)
        event = self._event(guild, params)
        self._check_manage(guild, event)
        self.deleted.add(event.id)
        self.fake._changed()
        return 204, None

    # --- helpers ---

    def _guild(self, params: dict[str, str]) -> Guild:
        guild = self.fake._guild_or_404(params["guild_id"])
        if guild.bot_member.id not in guild.members:
            raise ApiError(403, 50001)
        return guild

    def _event(self, guild: Guild, params: dict[str, str]) -> ScheduledEvent:
        try:
            event = self.events.get(int(params["event_id"]))
        except ValueError:
            event = None
        if event is None or event.guild_id != guild.id or event.id in self.deleted:
            raise ApiError(404, 10070)
        if not event.live:
            raise ApiError(404, 10070)  # Discord deletes a canceled or completed event
        return event

    def _check_manage(self, guild: Guild, event: ScheduledEvent) -> None:
        perms = guild.permissions_for(guild.bot_member)
        if event.channel_id is not None:
            channel = guild.channels.get(event.channel_id)
            if channel is not None:
                perms = guild.bot_permissions_in(channel)
        own = event.creator_id == self.fake.bot_user.id
        if not (perms & P.MANAGE_EVENTS or (own and perms & P.CREATE_EVENTS)):
            raise ApiError(403, 50013)

    def _check_channel(self, guild: Guild, kind: Any, channel_id: Any) -> None:
        types = {VOICE: GUILD_VOICE, STAGE: GUILD_STAGE_VOICE}
        if kind not in types:
            raise form_error("entity_type", "BASE_TYPE_CHOICES", "Value must be one of (1, 2, 3)")
        channel = None if channel_id is None else guild.channels.get(int(channel_id))
        if channel is None or channel.type != types[kind]:
            raise form_error("channel_id", "BASE_TYPE_BAD", "Unknown channel for this entity type")
        needed = P.VIEW_CHANNEL | P.CONNECT | P.CREATE_EVENTS
        if kind == STAGE:
            needed |= P.MANAGE_CHANNELS | P.MUTE_MEMBERS | P.MOVE_MEMBERS
        if guild.bot_permissions_in(channel) & needed != needed:
            raise ApiError(403, 50013)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts).astimezone().isoformat()
