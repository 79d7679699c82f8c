"""Databases at the schemas earlier releases left, with real work in them.

:data:`RELEASES` is every pair of migration prefixes (bot, scheduler) that ever landed on
``main`` (``git log -- migrations``: the commit that added each file). :func:`build_sqlite`
and :func:`build_postgres` make a database at one of them by running that release's
migration files (today's files are those files: none was edited after it landed, which the
stores' checksums hold) and recording them as that release did, then fill it with
:func:`project`: the rows of a busy installation, each table's shaped for that schema (only
the tables and columns the release had; what a release wrote differently, in its shape).
"""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from bot.app import bot_migrations
from bot.app.transfer import CONVERT
from bot.models import nonce_for
from scheduler.migrations import VERSION_TABLE, Migration, scheduler_migrations
from scheduler.stores._base import version_table_ddl
from scheduler.triggers import trigger_from_spec

if TYPE_CHECKING:
    from pathlib import Path

RELEASES: list[tuple[int, int, str]] = [
    (0, 1, "a79afd5"),  # the scheduler alone: jobs
    (0, 2, "f9fdd37"),  # schedules
    (1, 2, "1e40906"),  # the bot's first release
    (1, 3, "b0520b3"),
    (2, 3, "0b73bec"),  # history, skips and edits
    (3, 3, "3923924"),  # nth weekdays, date steps
    (3, 4, "b85b209"),  # held occurrences
    (4, 4, "c610b28"),  # rich posts, files
    (4, 5, "a887d8d"),  # run history
    (5, 5, "243c5a4"),  # dashboard sessions
    (5, 6, "9764831"),  # pacing
    (6, 6, "69dc714"),  # indexes for large guilds
    (6, 7, "bfabcd7"),
    (6, 8, "ce6ba52"),
    (6, 9, "6171967"),  # once keys
    (6, 10, "cea4725"),  # named leases
    (7, 10, "bd3ee90"),  # templates, imports
    (8, 10, "94967f0"),  # limits, servers left
    (9, 10, "dd5f855"),  # Discord events
    (10, 10, "9f75449"),  # server languages
]
"""(bot migrations, scheduler migrations, the commit that made it) of every earlier schema;
today's code has :func:`today`."""

OLD_ARGS_BEFORE_SCHEDULER = 10
"""Releases before typed job arguments (all of :data:`RELEASES`: the commit came after the
scheduler's 0010) stored a recurring announcement's schedule arguments as
``{"announcement_id": N}`` alone."""


SKIPS_FROM_BOT = 2
"""The bot's migration that brought /skip (and /edit, and the history)."""

SKIPS_IN_RULE_FROM_BOT = 15
"""The bot's migration that keeps a skip in the announcement's rule (and its schedule's
trigger excludes it); before it, a skipped occurrence was a ``skipped`` delivery row."""


def today() -> tuple[int, int]:
    return len(bot_migrations().load("sqlite")), len(scheduler_migrations().load("sqlite"))


def prefix(dialect: str, bot: int, sched: int) -> list[Migration]:
    """A release's migrations in the order a new install of it applied them."""
    return scheduler_migrations().load(dialect)[:sched] + bot_migrations().load(dialect)[:bot]


def build_sqlite(path: Path, bot: int, sched: int) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(version_table_ddl("REAL"))
        for m in prefix("sqlite", bot, sched):
            conn.executescript(f"BEGIN IMMEDIATE;\n{m.sql}\n;")
            conn.execute(
                f"INSERT INTO {VERSION_TABLE} VALUES (?, ?, ?, ?, ?)",
                (m.component, m.version, m.name, m.checksum, time.time()),
            )
            conn.execute("COMMIT")
    finally:
        conn.close()


async def build_postgres(conn: Any, bot: int, sched: int) -> None:
    await conn.execute(version_table_ddl("DOUBLE PRECISION"))
    for m in prefix("postgres", bot, sched):
        async with conn.transaction():
            await conn.execute(m.sql)
            await conn.execute(
                f"INSERT INTO {VERSION_TABLE} VALUES ($1, $2, $3, $4, $5)",
                m.component, m.version, m.name, m.checksum, time.time(),
            )  # fmt: skip


Rows = dict[str, list[dict[str, Any]]]


def read_rows(db: Path) -> Rows:
    """Every row of every table of the SQLite database ``db`` (the version table aside), as
    stored (raw values)."""
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        return {
            n: [dict(r) for r in conn.execute(f'SELECT * FROM "{n}"')]
            for n in names
            if n != VERSION_TABLE
        }
    finally:
        conn.close()


def shaped(rows: Rows, bot: int, sched: int) -> Rows:
    """``rows`` as a release at (``bot``, ``sched``) stored them: a recurring announcement's
    schedule arguments before typed job arguments hold its id alone; before the bot's 0015 a
    skip was a delivery row (:func:`_skips_as_rows`), and before its 0002 nothing could be
    skipped (no skipped occurrence is recorded: it is still to come)."""
    out = {t: [dict(r) for r in rs] for t, rs in rows.items()}
    if bot < SKIPS_IN_RULE_FROM_BOT:
        _skips_as_rows(out)
    if bot < SKIPS_FROM_BOT:
        out["bot_deliveries"] = [
            r for r in out.get("bot_deliveries", []) if r["state"] != "skipped"
        ]
    if sched < OLD_ARGS_BEFORE_SCHEDULER:
        for r in out.get("scheduler_schedules", []):
            args = json.loads(r["args"])
            if isinstance(args, dict) and "announcement_id" in args:
                r["args"] = json.dumps({"announcement_id": args["announcement_id"]})
    return out


def _skips_as_rows(rows: Rows) -> None:
    """A skip as releases before :data:`SKIPS_IN_RULE_FROM_BOT` kept it: each occurrence the
    schedule's trigger excludes is a ``skipped`` delivery row (recorded when the skip was
    made, by whom its history says), the trigger excludes nothing, and the schedule's next
    fire is the first of them if it is earlier."""
    schedules = {r["name"]: r for r in rows.get("scheduler_schedules", [])}
    history = rows.get("bot_history", [])
    for ann in rows.get("bot_announcements", []):
        schedule = schedules.get(ann.get("schedule_name") or "")
        if schedule is None:
            continue
        spec = json.loads(schedule["trigger_spec"])
        spans = spec.pop("exclude", None)
        if not spans:
            continue
        skip = max(
            (h for h in history if h["announcement_id"] == ann["id"] and h["action"] == "skipped"),
            key=lambda h: h["at"],
        )
        plain = trigger_from_spec(spec)
        deliveries = rows.setdefault("bot_deliveries", [])
        for start, end in spans:
            lo, hi = datetime.fromisoformat(start), datetime.fromisoformat(end)
            fire = plain.next_after(lo - timedelta(microseconds=1))
            while fire <= hi:
                ts = fire.timestamp()
                deliveries.append({
                    "id": max((d["id"] for d in deliveries), default=0) + 1,
                    "announcement_id": ann["id"], "fire_ts": ts, "job_id": None,
                    "nonce": nonce_for(ann["id"], ts), "state": "skipped",
                    "first_attempt_at": skip["at"],
                    "error": f"skipped by <@{skip['actor_id']}>",
                })  # fmt: skip
                if schedule["next_fire_ts"] is not None and ts < schedule["next_fire_ts"]:
                    schedule["next_fire_ts"] = ts
                fire = plain.next_after(fire)
        schedule["trigger_spec"] = json.dumps(spec, sort_keys=True)


def sqlite_columns(conn: sqlite3.Connection) -> dict[str, list[str]]:
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    return {n: [str(c[1]) for c in conn.execute(f'PRAGMA table_info("{n}")')] for n in names}


def project_sqlite(path: Path, rows: Rows) -> dict[str, int]:
    """Insert ``rows`` into the SQLite database at ``path``: each table's rows with the
    columns that table has there (tables it has not are left out). Returns rows per table."""
    conn = sqlite3.connect(path, isolation_level=None)
    counts: dict[str, int] = {}
    try:
        conn.execute("BEGIN IMMEDIATE")
        for table, columns in sqlite_columns(conn).items():
            if table == VERSION_TABLE:
                continue
            for r in rows.get(table, []):
                cols = [c for c in columns if c in r]
                conn.execute(
                    f'INSERT INTO "{table}" ({", ".join(cols)}) '
                    f"VALUES ({', '.join('?' for _ in cols)})",
                    [r[c] for c in cols],
                )
                counts[table] = counts.get(table, 0) + 1
        conn.execute("COMMIT")
    finally:
        conn.close()
    return counts


async def project_postgres(conn: Any, rows: Rows) -> dict[str, int]:
    """:func:`project_sqlite` on PostgreSQL (values converted as ``migrate`` converts them;
    the identity sequences moved past the ids)."""
    found = await conn.fetch(
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
    )
    columns: dict[str, dict[str, str]] = {}
    for r in found:
        columns.setdefault(str(r[0]), {})[str(r[1])] = str(r[2])
    counts: dict[str, int] = {}
    async with conn.transaction():
        for table, types in columns.items():
            if table == VERSION_TABLE:
                continue
            for r in rows.get(table, []):
                cols = [c for c in types if c in r]
                values = [None if r[c] is None else CONVERT[types[c]](r[c]) for c in cols]
                await conn.execute(
                    f'INSERT INTO "{table}" ({", ".join(cols)}) '
                    f"VALUES ({', '.join(f'${i}' for i in range(1, len(cols) + 1))})",
                    *values,
                )
                counts[table] = counts.get(table, 0) + 1
            if "id" in types and counts.get(table):
                seq = await conn.fetchval("SELECT pg_get_serial_sequence($1, 'id')", table)
                if seq:
                    await conn.execute(f'SELECT setval($1, (SELECT max(id) FROM "{table}"))', seq)
    return counts
