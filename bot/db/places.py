"""The other places of an announcement (``bot_announcement_places``, ``also_in``), of a
template (``bot_template_places``), and one row per occurrence and other place
(``bot_place_deliveries``: the once-key written before each post there)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..models import Destination, Place, PlaceDelivery, PlaceState
from .table import Table, optional_int

if TYPE_CHECKING:
    from collections.abc import Sequence


def _delivery(row: Any) -> PlaceDelivery:
    return PlaceDelivery(
        fire_ts=float(row["fire_ts"]),
        channel_id=int(row["channel_id"]),
        state=PlaceState(row["state"]),
        nonce=row["nonce"],
        first_attempt_at=row["first_attempt_at"],
        message_id=optional_int(row["message_id"]),
        sent_at=row["sent_at"],
        error=row["error"],
        revision=optional_int(row["revision"]),
        update_error=row["update_error"],
        late_by=row["late_by"],
    )


_COLUMNS = (
    "fire_ts, channel_id, state, nonce, first_attempt_at, message_id, sent_at, error, "
    "revision, update_error, late_by"
)


class PlaceTable(Table):
    __slots__ = ()

    # --- an announcement's places ---------------------------------------------------------------

    async def places(self, announcement_id: int) -> tuple[Place, ...]:
        """The other places of an announcement, in the order they were given."""
        cur = await self.db.execute(
            "SELECT channel_id, destination FROM bot_announcement_places "
            "WHERE announcement_id = ? ORDER BY position",
            (announcement_id,),
        )
        return tuple(
            Place(int(r["channel_id"]), Destination(r["destination"])) for r in await cur.fetchall()
        )

    async def set_places(
        self, announcement_id: int, guild_id: int, places: Sequence[Place]
    ) -> None:
        """Make ``places`` the announcement's other places (none: it posts in one)."""
        await self.db.execute(
            "DELETE FROM bot_announcement_places WHERE announcement_id = ?", (announcement_id,)
        )
        for position, place in enumerate(places):
            await self.db.execute(
                "INSERT INTO bot_announcement_places (announcement_id, channel_id, guild_id, "
                "position, destination) VALUES (?, ?, ?, ?, ?)",
                (announcement_id, place.channel_id, guild_id, position, str(place.destination)),
            )

    # --- a template's places --------------------------------------------------------------------

    async def template_places(self, template_id: int) -> tuple[int, ...]:
        cur = await self.db.execute(
            "SELECT channel_id FROM bot_template_places WHERE template_id = ? ORDER BY position",
            (template_id,),
        )
        return tuple(int(r["channel_id"]) for r in await cur.fetchall())

    async def set_template_places(
        self, template_id: int, guild_id: int, channel_ids: Sequence[int]
    ) -> None:
        await self.db.execute(
            "DELETE FROM bot_template_places WHERE template_id = ?", (template_id,)
        )
        for position, channel_id in enumerate(channel_ids):
            await self.db.execute(
                "INSERT INTO bot_template_places (template_id, channel_id, guild_id, position) "
                "VALUES (?, ?, ?, ?)",
                (template_id, channel_id, guild_id, position),
            )

    async def template_id(self, guild_id: int, name_key: str) -> int | None:
        row = await self._one(
            "SELECT id FROM bot_templates WHERE guild_id = ? AND name_key = ?",
            (guild_id, name_key),
        )
        return None if row is None else int(row["id"])

    async def guild_template_places(self, guild_id: int) -> dict[str, tuple[int, ...]]:
        """Each of the guild's templates' other places, by the template's name key."""
        cur = await self.db.execute(
            "SELECT t.name_key, p.channel_id FROM bot_template_places p "
            "JOIN bot_templates t ON t.id = p.template_id "
            "WHERE p.guild_id = ? ORDER BY t.name_key, p.position",
            (guild_id,),
        )
        found: dict[str, list[int]] = {}
        for r in await cur.fetchall():
            found.setdefault(str(r["name_key"]), []).append(int(r["channel_id"]))
        return {key: tuple(ids) for key, ids in found.items()}

    async def places_of(self, announcement_ids: Sequence[int]) -> dict[int, tuple[Place, ...]]:
        """The other places of each of these announcements (those that have some)."""
        if not announcement_ids:
            return {}
        marks = ", ".join("?" * len(announcement_ids))
        cur = await self.db.execute(
            "SELECT announcement_id, channel_id, destination FROM bot_announcement_places "
            f"WHERE announcement_id IN ({marks}) ORDER BY announcement_id, position",
            tuple(announcement_ids),
        )
        found: dict[int, list[Place]] = {}
        for r in await cur.fetchall():
            place = Place(int(r["channel_id"]), Destination(r["destination"]))
            found.setdefault(int(r["announcement_id"]), []).append(place)
        return {ann_id: tuple(places) for ann_id, places in found.items()}

    # --- an occurrence in each place -----------------------------------------------------------

    async def plan_place_delivery(
        self, ann_id: int, fire_ts: float, channel_id: int, guild_id: int, nonce: str
    ) -> bool:
        """Record the occurrence's post in ``channel_id`` ``queued``; False when it was
        already recorded (planned before: nothing is)."""
        cur = await self.db.execute(
            "INSERT INTO bot_place_deliveries (announcement_id, fire_ts, channel_id, guild_id, "
            "state, nonce) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (announcement_id, fire_ts, channel_id) DO NOTHING RETURNING channel_id",
            (ann_id, fire_ts, channel_id, guild_id, str(PlaceState.QUEUED), nonce),
        )
        return await cur.fetchone() is not None

    async def set_place_job(
        self, ann_id: int, fire_ts: float, channel_id: int, job_id: int
    ) -> None:
        await self.db.execute(
            "UPDATE bot_place_deliveries SET job_id = ? "
            "WHERE announcement_id = ? AND fire_ts = ? AND channel_id = ?",
            (job_id, ann_id, fire_ts, channel_id),
        )

    async def place_delivery(
        self, ann_id: int, fire_ts: float, channel_id: int
    ) -> PlaceDelivery | None:
        row = await self._one(
            f"SELECT {_COLUMNS} FROM bot_place_deliveries "
            "WHERE announcement_id = ? AND fire_ts = ? AND channel_id = ?",
            (ann_id, fire_ts, channel_id),
        )
        return None if row is None else _delivery(row)

    async def place_deliveries_of(
        self, ann_id: int, fire_times: Sequence[float]
    ) -> list[PlaceDelivery]:
        """The posts in other places of the occurrences at ``fire_times``."""
        if not fire_times:
            return []
        marks = ", ".join("?" * len(fire_times))
        cur = await self.db.execute(
            f"SELECT {_COLUMNS} FROM bot_place_deliveries WHERE announcement_id = ? "
            f"AND fire_ts IN ({marks}) ORDER BY fire_ts, channel_id",
            (ann_id, *fire_times),
        )
        return [_delivery(r) for r in await cur.fetchall()]

    async def begin_place_delivery(
        self, ann_id: int, fire_ts: float, channel_id: int, job_id: int, now: float
    ) -> None:
        """Mark the post ``sending`` right before an attempt (its first attempt's time kept)."""
        await self.db.execute(
            "UPDATE bot_place_deliveries SET state = ?, job_id = ?, attempts = attempts + 1, "
            "first_attempt_at = COALESCE(first_attempt_at, ?) "
            "WHERE announcement_id = ? AND fire_ts = ? AND channel_id = ?",
            (str(PlaceState.SENDING), job_id, now, ann_id, fire_ts, channel_id),
        )

    async def end_place_delivery(
        self,
        ann_id: int,
        fire_ts: float,
        channel_id: int,
        state: PlaceState,
        *,
        error: str | None = None,
        message_id: int | None = None,
        sent_at: float | None = None,
        late_by: float | None = None,
        revision: int | None = None,
    ) -> bool:
        """Record how the post ended (``sent``, ``failed`` or ``skipped``), unless it already
        had (False then: another run ended it first)."""
        cur = await self.db.execute(
            "UPDATE bot_place_deliveries SET state = ?, error = ?, message_id = ?, sent_at = ?, "
            "late_by = ?, revision = ? WHERE announcement_id = ? AND fire_ts = ? "
            "AND channel_id = ? AND state IN (?, ?) RETURNING channel_id",
            (str(state), error, message_id, sent_at, late_by, revision, ann_id, fire_ts,
             channel_id, str(PlaceState.QUEUED), str(PlaceState.SENDING)),
        )  # fmt: skip
        return await cur.fetchone() is not None

    async def note_place_error(
        self, ann_id: int, fire_ts: float, channel_id: int, error: str
    ) -> None:
        """A failure that may pass: the row shows why until the next attempt."""
        await self.db.execute(
            "UPDATE bot_place_deliveries SET error = ? "
            "WHERE announcement_id = ? AND fire_ts = ? AND channel_id = ?",
            (error, ann_id, fire_ts, channel_id),
        )

    async def record_place_revision(
        self, ann_id: int, fire_ts: float, channel_id: int, revision: int
    ) -> None:
        await self.db.execute(
            "UPDATE bot_place_deliveries SET revision = ? "
            "WHERE announcement_id = ? AND fire_ts = ? AND channel_id = ?",
            (revision, ann_id, fire_ts, channel_id),
        )

    async def set_place_update_error(
        self, ann_id: int, fire_ts: float, channel_id: int, error: str
    ) -> None:
        await self.db.execute(
            "UPDATE bot_place_deliveries SET update_error = ? "
            "WHERE announcement_id = ? AND fire_ts = ? AND channel_id = ?",
            (error, ann_id, fire_ts, channel_id),
        )
