"""What every table of the data layer shares: the connection, and the small helpers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scheduler import Db


def optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def state_in(states: Sequence[str]) -> str:
    """``state IN (?, …)`` with one placeholder per state."""
    return "state IN (" + ", ".join("?" * len(states)) + ")"


def state_values(states: Sequence[str]) -> list[str]:
    """States as plain strings, the type every driver binds."""
    return [str(s) for s in states]


class Table:
    """Statements on the bot's tables, run on one connection of the scheduler's store (the
    base of each table's methods, which :class:`bot.db.BotDb` puts together)."""

    __slots__ = ("db",)

    def __init__(self, db: Db) -> None:
        self.db = db

    async def _one(self, sql: str, params: Sequence[Any]) -> Any | None:
        cur = await self.db.execute(sql, params)
        return await cur.fetchone()
