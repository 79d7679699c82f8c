"""The ``bot_event_settings`` table (the Discord event each occurrence of an announcement
gets) and ``bot_events`` (one row per occurrence's event: the intent, then its id)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..models import EventSpec
from .table import Table, optional_int

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass(frozen=True, slots=True)
class EventRow:
    """One occurrence's Discord event, as recorded."""

    announcement_id: int
    fire_ts: float
    guild_id: int
    state: str
    """``creating`` (the intent, written before the create), ``created``, ``canceled`` or
    ``failed``."""
    event_id: int | None
    name: str
    start_ts: float
    shows: str
    error: str | None


def _spec(row: Any) -> EventSpec:
    return EventSpec(
        minutes=int(row["minutes"]),
        location=row["location"],
        channel_id=optional_int(row["channel_id"]),
    )


def _event(row: Any) -> EventRow:
    return EventRow(
        announcement_id=int(row["announcement_id"]),
        fire_ts=float(row["fire_ts"]),
        guild_id=int(row["guild_id"]),
        state=row["state"],
        event_id=optional_int(row["event_id"]),
        name=row["name"],
        start_ts=float(row["start_ts"]),
        shows=row["shows"],
        error=row["error"],
    )


_EVENT_COLUMNS = "announcement_id, fire_ts, guild_id, state, event_id, name, start_ts, shows, error"


class EventTable(Table):
    """Event settings and the events made."""

    __slots__ = ()

    async def event_spec(self, announcement_id: int) -> EventSpec | None:
        row = await self._one(
            "SELECT location, channel_id, minutes FROM bot_event_settings "
            "WHERE announcement_id = ?",
            (announcement_id,),
        )
        return None if row is None else _spec(row)

    async def event_specs(self, announcement_ids: Sequence[int]) -> dict[int, EventSpec]:
        if not announcement_ids:
            return {}
        marks = ", ".join("?" * len(announcement_ids))
        cur = await self.db.execute(
            "SELECT announcement_id, location, channel_id, minutes FROM bot_event_settings "
            f"WHERE announcement_id IN ({marks})",
            list(announcement_ids),
        )
        return {int(r["announcement_id"]): _spec(r) for r in await cur.fetchall()}

    async def set_event_spec(
        self, announcement_id: int, guild_id: int, spec: EventSpec | None
    ) -> None:
        """Replace the announcement's event settings (None: it gets no events)."""
        await self.db.execute(
            "DELETE FROM bot_event_settings WHERE announcement_id = ?", (announcement_id,)
        )
        if spec is None:
            return
        await self.db.execute(
            "INSERT INTO bot_event_settings (announcement_id, guild_id, location, channel_id, "
            "minutes) VALUES (?, ?, ?, ?, ?)",
            (announcement_id, guild_id, spec.location, spec.channel_id, spec.minutes),
        )

    async def events_of(self, announcement_id: int) -> list[EventRow]:
        """The announcement's events, by occurrence."""
        cur = await self.db.execute(
            f"SELECT {_EVENT_COLUMNS} FROM bot_events WHERE announcement_id = ? ORDER BY fire_ts",
            (announcement_id,),
        )
        return [_event(r) for r in await cur.fetchall()]

    async def event_at(self, announcement_id: int, fire_ts: float) -> EventRow | None:
        row = await self._one(
            f"SELECT {_EVENT_COLUMNS} FROM bot_events WHERE announcement_id = ? AND fire_ts = ?",
            (announcement_id, fire_ts),
        )
        return None if row is None else _event(row)

    async def recorded_event_ids(self, guild_id: int) -> set[int]:
        """The ids of the server's events some occurrence recorded."""
        cur = await self.db.execute(
            "SELECT event_id FROM bot_events WHERE guild_id = ? AND event_id IS NOT NULL",
            (guild_id,),
        )
        return {int(r["event_id"]) for r in await cur.fetchall()}

    async def write_event_intent(
        self, ann_id: int, fire_ts: float, guild_id: int, name: str, start_ts: float,
        shows: str, now: float,
    ) -> None:  # fmt: skip
        """The intent to create the occurrence's event (state ``creating``, no id yet),
        written before the create; a row canceled or failed before is taken over."""
        await self.db.execute(
            "DELETE FROM bot_events WHERE announcement_id = ? AND fire_ts = ?", (ann_id, fire_ts)
        )
        await self.db.execute(
            "INSERT INTO bot_events (announcement_id, fire_ts, guild_id, state, event_id, name, "
            "start_ts, shows, error, updated_at) VALUES (?, ?, ?, 'creating', NULL, ?, ?, ?, "
            "NULL, ?)",
            (ann_id, fire_ts, guild_id, name, start_ts, shows, now),
        )

    async def set_event_state(
        self, ann_id: int, fire_ts: float, state: str, now: float, *,
        event_id: int | None = None, shows: str | None = None, error: str | None = None,
        new_fire_ts: float | None = None, start_ts: float | None = None,
    ) -> None:  # fmt: skip
        """Record where the occurrence's event stands (each keyword given replaces its
        column; ``new_fire_ts`` moves the row to another occurrence, as an edit does: a
        canceled or failed row of that occurrence goes)."""
        if new_fire_ts is not None and new_fire_ts != fire_ts:
            await self.db.execute(
                "DELETE FROM bot_events WHERE announcement_id = ? AND fire_ts = ?",
                (ann_id, new_fire_ts),
            )
        await self.db.execute(
            "UPDATE bot_events SET state = ?, event_id = COALESCE(?, event_id), "
            "shows = COALESCE(?, shows), error = ?, fire_ts = COALESCE(?, fire_ts), "
            "start_ts = COALESCE(?, start_ts), updated_at = ? "
            "WHERE announcement_id = ? AND fire_ts = ?",
            (state, event_id, shows, error, new_fire_ts, start_ts, now, ann_id, fire_ts),
        )
