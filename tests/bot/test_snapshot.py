"""``db_snapshot``, which the "nothing was written" checks stand on, sees every table: the
ones the database lists (a table a later migration adds included), on SQLite and
PostgreSQL, and every row but the interactions' once keys."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.bot.conftest import db_snapshot
from tests.bot.test_commands import any_db_crier  # noqa: F401  (a fixture: SQLite and PostgreSQL)

if TYPE_CHECKING:
    from bot.app import Crier

NAMED_IN_THE_ISSUE = {
    "bot_attachments",
    "bot_history",
    "bot_member_settings",
    "bot_dashboard_sessions",
    "scheduler_runs",
    "scheduler_pace",
}
"""Tables the snapshot once left out, so that writes to them went unseen."""


async def test_the_snapshot_reads_every_table_of_the_database(
    any_db_crier: Crier,  # noqa: F811
) -> None:
    app = any_db_crier
    before = await db_snapshot(app)
    assert set(before) >= NAMED_IN_THE_ISSUE | {"bot_announcements", "scheduler_jobs"}
    async with app.sched.transaction() as ctx:
        await ctx.db.execute("CREATE TABLE later_table (x INTEGER NOT NULL)")
        await ctx.db.execute("INSERT INTO later_table (x) VALUES (7)")
    after = await db_snapshot(app)
    assert after.pop("later_table") == [(7,)]
    assert after == before


async def test_only_the_interactions_once_keys_are_left_out(
    any_db_crier: Crier,  # noqa: F811
) -> None:
    app = any_db_crier
    before = await db_snapshot(app)
    async with app.sched.transaction() as ctx:
        await ctx.db.execute(
            "INSERT INTO scheduler_once (once_key, expires_at) VALUES ('interaction:1', 1.0)"
        )
    assert await db_snapshot(app) == before  # a handled interaction's mark
    async with app.sched.transaction() as ctx:
        await ctx.db.execute(
            "INSERT INTO scheduler_once (once_key, expires_at) VALUES ('webhook:1', 1.0)"
        )
    assert await db_snapshot(app) != before
