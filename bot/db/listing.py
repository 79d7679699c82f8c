"""The reads of ``/list`` and of an ``id`` option's choices: a page of one guild's
announcements, read through indexes (``migrations/bot/*/0006``), so a page costs about
the same in a guild of ten announcements and in one of a hundred thousand.

The upcoming part of ``/list`` orders recurring announcements by their schedule's next fire
time, read from ``scheduler_schedules`` (the scheduler's own table, in the same database;
only its ``name`` and ``next_fire_ts``, through its primary key and its index on
``next_fire_ts``).

A listing may be narrowed (:class:`ListFilter`, the dashboard's filters and search): every
part is then read with the same conditions, so a page is still a slice of the one order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..models import Announcement, AnnouncementState
from .announcements import _SELECT_ANNOUNCEMENT, AnnouncementTable, _announcement
from .table import state_in, state_values

if TYPE_CHECKING:
    from collections.abc import Sequence

TROUBLED = (AnnouncementState.FAILED, AnnouncementState.PAUSED)
CLOSED = (AnnouncementState.SENT, AnnouncementState.CANCELED, AnnouncementState.DONE)

# ``{where}``: a ListFilter's conditions (``AND …``, on the statement's announcement alias).
_ONE_OFFS = (
    "SELECT id, first_ts AS next_ts, local_id FROM bot_announcements "
    "WHERE guild_id = ? AND state = 'scheduled' AND schedule_name IS NULL {where}"
    "ORDER BY first_ts, local_id LIMIT ?"
)
# The guild's scheduled recurring ones by their schedule's next fire, found by walking the
# earliest ``scan`` active schedules (the scheduler's index of due times, which leaves out
# paused ones: a scheduled announcement's schedule is never paused, pausing the one pauses
# the other) and looking each up in the guild's index: cheap when the guild holds many of
# the schedules.
_RECURRING_AMONG_EARLIEST = (
    "SELECT a.id, s.next_fire_ts AS next_ts, a.local_id FROM ("
    "SELECT name, next_fire_ts FROM scheduler_schedules "
    "WHERE paused = 0 AND next_fire_ts IS NOT NULL ORDER BY next_fire_ts LIMIT ?) AS s "
    "CROSS JOIN bot_announcements a "
    "WHERE a.guild_id = ? AND a.state = 'scheduled' AND a.schedule_name = s.name {where}"
    "ORDER BY s.next_fire_ts, a.local_id LIMIT ?"
)
_SCANNED_UP_TO = (
    "SELECT next_fire_ts FROM scheduler_schedules WHERE paused = 0 AND next_fire_ts IS NOT NULL "
    "ORDER BY next_fire_ts LIMIT 1 OFFSET ?"
)
# The same from the guild's side, every one of its recurring ones looked up in the
# schedules (cheap when the guild has few); those with no next fire last.
_RECURRING_OF_GUILD = (
    "SELECT r.id, s.next_fire_ts AS next_ts, r.local_id "
    "FROM bot_announcements r LEFT JOIN scheduler_schedules s ON s.name = r.schedule_name "
    "WHERE r.guild_id = ? AND r.state = 'scheduled' AND r.schedule_name IS NOT NULL {where}"
    "ORDER BY s.next_fire_ts IS NULL, s.next_fire_ts, r.local_id LIMIT ?"
)
_RECURRING_WITHOUT_NEXT = (
    "SELECT r.id, NULL AS next_ts, r.local_id "
    "FROM bot_announcements r LEFT JOIN scheduler_schedules s ON s.name = r.schedule_name "
    "WHERE r.guild_id = ? AND r.state = 'scheduled' AND r.schedule_name IS NOT NULL "
    "AND s.next_fire_ts IS NULL {where}ORDER BY r.local_id LIMIT ?"
)
SCAN = 2000
"""Schedules walked before looking from the guild's side instead: a guild holding more
than ``need / SCAN`` of the schedules is served by the walk, one holding fewer has fewer
than ``need * total / SCAN`` recurring ones to look up (with 300,000 schedules and a page of
6, at most 900), so neither side costs more than a few thousand index steps."""

SCAN_PER_ROW = 20
"""And at least this many schedules walked per row the page needs (deeper pages walk more)."""


@dataclass(frozen=True, slots=True)
class ListFilter:
    """Which of a guild's announcements a listing keeps: those meeting every condition set."""

    states: tuple[AnnouncementState, ...] | None = None
    """In one of these states (None: any)."""
    recurring: bool | None = None
    """Recurring (True) or one-off (False) only (None: either)."""
    posted: bool = False
    """Only those that have posted a message (their latest post is recorded)."""
    failed: bool = False
    """Only those that failed or carry the reason an occurrence failed (a recurring one
    paused by a failure)."""
    text: str = ""
    """Only those whose text contains this, in any case (SQLite folds the case of ASCII
    letters only; PostgreSQL of every letter)."""

    def sql(self, alias: str = "") -> tuple[str, list[Any]]:
        """The conditions as ``AND … `` on the columns of table ``alias`` (``"a"``; "" for
        none), with their parameters in order."""
        col = f"{alias}." if alias else ""
        terms: list[str] = []
        params: list[Any] = []
        if self.states is not None:
            terms.append(col + state_in(self.states))
            params += state_values(self.states)
        if self.recurring is not None:
            terms.append(f"{col}repeat_kind IS {'NOT ' if self.recurring else ''}NULL")
        if self.posted:
            terms.append(f"{col}last_message_id IS NOT NULL")
        if self.failed:
            terms.append(f"({col}state = ? OR {col}failure IS NOT NULL)")
            params.append(AnnouncementState.FAILED.value)
        if self.text:
            terms.append(f"lower({col}content) LIKE ? ESCAPE '!'")
            params.append("%" + _like_escaped(self.text.lower()) + "%")
        return "".join(f"AND {t} " for t in terms), params


EVERY = ListFilter()
"""The listing as /list shows it: every announcement of the guild."""


def _like_escaped(text: str) -> str:
    """``text`` matched literally by ``LIKE … ESCAPE '!'``."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


Keyed = tuple[int, float | None, int]
"""``(id, next time, number)`` of a scheduled announcement."""


def _keyed(rows: list[Any]) -> list[Keyed]:
    out = []
    for r in rows:
        nxt = r["next_ts"]
        out.append((int(r["id"]), None if nxt is None else float(nxt), int(r["local_id"])))
    return out


def _by_next(k: Keyed) -> tuple[bool, float, int]:
    return (k[1] is None, k[1] or 0.0, k[2])


def number_ranges(prefix: str, highest: int) -> list[tuple[int, int]]:
    """The ranges of numbers up to ``highest`` whose decimal form starts with ``prefix``
    (digits), highest first: "12" up to 1300 is 1200-1299, 120-129 and 12."""
    if not prefix.isdigit() or prefix.startswith("0"):
        return []
    value, out, width = int(prefix), [], 1
    while value * width <= highest:
        out.append((value * width, min(highest, (value + 1) * width - 1)))
        width *= 10
    return out[::-1]


class ListingReads(AnnouncementTable):
    """A page of a guild's announcements, for ``/list`` and for an ``id`` option (on the
    announcements' table)."""

    __slots__ = ()

    async def count_by_state(
        self, guild_id: int, only: ListFilter = EVERY
    ) -> dict[AnnouncementState, int]:
        """How many announcements the guild has in each state (states it has none in are
        left out), of those ``only`` keeps."""
        where, params = only.sql()
        cur = await self.db.execute(
            f"SELECT state, count(*) AS n FROM bot_announcements WHERE guild_id = ? {where}"
            "GROUP BY state",
            (guild_id, *params),
        )
        return {AnnouncementState(r["state"]): int(r["n"]) for r in await cur.fetchall()}

    async def troubled_page(
        self, guild_id: int, limit: int, offset: int, only: ListFilter = EVERY
    ) -> list[Announcement]:
        """A page of the guild's failed and paused announcements, last updated first."""
        return await self._page(TROUBLED, guild_id, limit, offset, only)

    async def closed_page(
        self, guild_id: int, limit: int, offset: int, only: ListFilter = EVERY
    ) -> list[Announcement]:
        """A page of the guild's sent, canceled and ended announcements, last updated first."""
        return await self._page(CLOSED, guild_id, limit, offset, only)

    async def _page(
        self, states: Sequence[str], guild_id: int, limit: int, offset: int, only: ListFilter
    ) -> list[Announcement]:
        where, params = only.sql()
        cur = await self.db.execute(
            _SELECT_ANNOUNCEMENT + f"WHERE guild_id = ? AND {state_in(states)} {where}"
            "ORDER BY updated_at DESC, local_id DESC LIMIT ? OFFSET ?",
            (guild_id, *state_values(states), *params, limit, offset),
        )
        return [_announcement(r) for r in await cur.fetchall()]

    async def upcoming_page(
        self, guild_id: int, limit: int, offset: int, only: ListFilter = EVERY
    ) -> list[tuple[Announcement, float | None]]:
        """A page of the guild's scheduled announcements by their next time (a one-off's
        time, a recurring one's schedule's next fire; none last), number breaking ties; each
        with that time. Reads about ``offset + limit`` index entries of each kind."""
        if limit <= 0:
            return []
        need = offset + limit
        merged: list[Keyed] = []
        if only.recurring is not True:
            where, params = only.sql()
            cur = await self.db.execute(_ONE_OFFS.format(where=where), (guild_id, *params, need))
            merged += _keyed(await cur.fetchall())
        if only.recurring is not False:
            merged += await self._recurring_by_next(guild_id, need, only)
        merged.sort(key=_by_next)
        page = merged[offset : offset + limit]
        rows = await self.announcements_by_ids([k[0] for k in page])
        return [(a, k[1]) for a, k in zip(rows, page, strict=True)]

    async def _recurring_by_next(self, guild_id: int, need: int, only: ListFilter) -> list[Keyed]:
        """The guild's first ``need`` scheduled recurring announcements by next fire (none
        last) of those ``only`` keeps, from whichever side is cheaper (see ``SCAN``)."""
        scan = max(1, SCAN, SCAN_PER_ROW * need)
        where, params = only.sql("a")
        cur = await self.db.execute(
            _RECURRING_AMONG_EARLIEST.format(where=where), (scan, guild_id, *params, need)
        )
        found = _keyed(await cur.fetchall())
        edge = await self._one(_SCANNED_UP_TO, (scan - 1,))
        where, params = only.sql("r")
        if edge is None:  # the walk saw every schedule: the rest have no next fire
            if len(found) < need:
                cur = await self.db.execute(
                    _RECURRING_WITHOUT_NEXT.format(where=where),
                    (guild_id, *params, need - len(found)),
                )
                found += _keyed(await cur.fetchall())
            return found
        # Complete only if the last one kept comes strictly before the walk's end (a schedule
        # past it firing at the same time could hold a lower number).
        if len(found) == need and (found[-1][1] or 0.0) < float(edge["next_fire_ts"]):
            return found
        cur = await self.db.execute(
            _RECURRING_OF_GUILD.format(where=where), (guild_id, *params, need)
        )
        return _keyed(await cur.fetchall())

    async def announcements_to_choose(
        self,
        guild_id: int,
        states: Sequence[str] | None,
        *,
        recurring: bool | None,
        id_prefix: str,
        limit: int,
    ) -> list[Announcement]:
        """The guild's announcements an ``id`` option may offer, newest first: in ``states``
        (None: any), recurring or one-off only if ``recurring`` says so, numbered from
        ``id_prefix`` (digits; "" for any).

        Each state is read newest first along the (guild, state, number) index (any state:
        along the (guild, number) key), and a prefix becomes the few number ranges it stands
        for, read highest first, so no read goes past ``limit`` matches."""
        # Any state: one read along the (guild, number) key; else one per state.
        chosen: list[str | None] = [None] if states is None else list(state_values(states))
        ranges: list[tuple[int, int]] | None = None
        if id_prefix:
            row = await self._one(
                "SELECT max(local_id) AS highest FROM bot_announcements WHERE guild_id = ?",
                (guild_id,),
            )
            highest = 0 if row is None or row["highest"] is None else int(row["highest"])
            ranges = number_ranges(id_prefix, highest)
            if not ranges:
                return []
        kind = ""
        if recurring is not None:
            kind = "AND repeat_kind IS NOT NULL " if recurring else "AND repeat_kind IS NULL "
        found: list[Announcement] = []
        for state in chosen:
            # Newest first within each range, the ranges highest first: a state's read
            # stops once it has ``limit`` of them.
            of_state: list[Announcement] = []
            for lo, hi in ranges if ranges is not None else [(1, None)]:
                between = "" if hi is None else "AND local_id BETWEEN ? AND ? "
                in_state = "" if state is None else "AND state = ? "
                params: list[Any] = [guild_id, *([] if state is None else [state])]
                params += [] if hi is None else [lo, hi]
                cur = await self.db.execute(
                    _SELECT_ANNOUNCEMENT + "WHERE guild_id = ? " + in_state + between + kind
                    + "ORDER BY local_id DESC LIMIT ?",
                    (*params, limit - len(of_state)),
                )  # fmt: skip
                of_state += [_announcement(r) for r in await cur.fetchall()]
                if len(of_state) >= limit:
                    break
            found += of_state
        found.sort(key=lambda a: a.local_id, reverse=True)
        return found[:limit]
