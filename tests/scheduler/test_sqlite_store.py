"""What only the SQLite store does: refusing bad files untouched, migrations, pragmas, and the
aiosqlite primitive it builds on. The store contract itself is in test_store_conformance.py."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite
import pytest

from scheduler import (
    Db,
    InvalidArgument,
    JobState,
    MigrationError,
    MigrationSet,
    NotADatabase,
    Registry,
    Retry,
    Scheduler,
    SchemaTooNew,
    SqliteStore,
    StoreError,
)
from scheduler.migrations import scheduler_migrations
from scheduler.sql import load_queries
from scheduler.stores import _sqlite_thread
from scheduler.stores.sqlite import _in_thread
from scheduler.testing import FakeClock

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

SIDECARS = ("-wal", "-shm", "-journal")
# Bytes 18 and 19 of a SQLite file: 1, 1 in rollback-journal mode; 2, 2 in WAL mode.
ROLLBACK, WAL = b"\x01\x01", b"\x02\x02"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sidecars(path: Path) -> list[str]:
    return [s for s in SIDECARS if Path(f"{path}{s}").exists()]


def journal_bytes(path: Path) -> bytes:
    return path.read_bytes()[18:20]


async def threads_back_to(count: int, within: float = 5.0) -> None:
    """Wait until only ``count`` threads run (a closed aiosqlite connection's thread exits
    just after ``close()`` returns); fail if one is still running at the deadline."""
    deadline = time.monotonic() + within
    while threading.active_count() > count:
        assert time.monotonic() < deadline, f"threads left running: {threading.enumerate()}"
        await asyncio.sleep(0.01)


def connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


async def open_close(path: Path, migrations: Sequence[MigrationSet] = ()) -> None:
    store = SqliteStore(path)
    await store.open(migrations)
    await store.close()


async def open_via(via: str, path: Path, migrations: Sequence[MigrationSet] = ()) -> None:
    """Open (and on success close) a database the way an application would."""
    if via == "store.open":
        await open_close(path, migrations)
    else:
        sched = Scheduler(SqliteStore(path), Registry(), migrations=migrations)
        await sched.start()
        await sched.stop()


VIA = pytest.mark.parametrize("via", ["store.open", "Scheduler.start"])


def app_set(root: Path, files: dict[str, str], component: str = "app") -> MigrationSet:
    folder = root / "sqlite"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, "utf-8")
    return MigrationSet(component, root)


def recorded(path: Path) -> list[tuple[Any, ...]]:
    with closing(connect(path)) as conn:
        return conn.execute(
            "SELECT component, version, name, checksum, applied_at FROM scheduler_migrations "
            "ORDER BY component, version"
        ).fetchall()


def schema(path: Path) -> list[tuple[Any, ...]]:
    with closing(connect(path)) as conn:
        return conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
        ).fetchall()


# --- files that are not databases ------------------------------------------------------------


async def _scheduler_db(path: Path) -> None:
    """A real scheduler database with a few pages of jobs in it."""
    registry = Registry()

    @registry.mutation("m")
    async def m(ctx: Any, args: Any) -> None: ...

    sched = Scheduler(SqliteStore(path), registry, clock=FakeClock())
    async with sched, sched.transaction() as ctx:
        for i in range(200):
            await ctx.scheduler.run_after(3600, "m", {"pad": "x" * 200, "i": i})


def _random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(1).randbytes(20_000))


def _text(path: Path) -> None:
    path.write_text("name,when\nalice,tomorrow at noon\n" * 100, "utf-8")


def _header_then_garbage(path: Path) -> None:
    path.write_bytes(b"SQLite format 3\x00" + random.Random(2).randbytes(8192))


def _cut(path: Path, keep: Callable[[int], int]) -> None:
    data = path.read_bytes()
    assert len(data) > 4 * 4096, "the database should span several pages"
    path.write_bytes(data[: keep(len(data))])


async def _truncated(path: Path, keep: Callable[[int], int]) -> None:
    await _scheduler_db(path)
    _cut(path, keep)


async def _last_page_garbled(path: Path) -> None:
    """A damaged page that opening the store never reads (job payloads): only an integrity
    check at open finds it before a claim or a listing would."""
    await _scheduler_db(path)
    _overwrite_last_page(path)


def _overwrite_last_page(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:-4096] + random.Random(3).randbytes(4096))


BAD_FILES: dict[str, Callable[[Path], Awaitable[None] | None]] = {
    "random bytes": _random_bytes,
    "a text file": _text,
    "a SQLite header then garbage": _header_then_garbage,
    "truncated to 10 bytes": lambda p: _truncated(p, lambda n: 10),
    "truncated inside the header": lambda p: _truncated(p, lambda n: 60),
    "truncated to its first page": lambda p: _truncated(p, lambda n: 4096),
    "truncated to half": lambda p: _truncated(p, lambda n: n // 2),
    "missing its last page": lambda p: _truncated(p, lambda n: n - 4096),
    "its last page garbled": _last_page_garbled,
}


@VIA
@pytest.mark.parametrize("kind", list(BAD_FILES))
async def test_a_file_that_is_not_a_database_is_refused_and_left_untouched(
    tmp_path: Path, kind: str, via: str
) -> None:
    path = tmp_path / "data.db"
    made = BAD_FILES[kind](path)
    if made is not None:
        await made
    before = sha(path)
    assert sidecars(path) == []
    threads = threading.active_count()

    with pytest.raises(StoreError) as info:
        await open_via(via, path)

    message = str(info.value)
    assert str(path) in message
    assert re.search(r"not a SQLite database|cannot use .* as a database", message), message
    assert re.search(r"untouched|not repaired or changed", message), message
    assert sha(path) == before
    assert sidecars(path) == []
    await threads_back_to(threads)  # no connection thread left behind


def marked(path: Path) -> bool:
    return Path(f"{path}-verified").exists()


@pytest.fixture
def page_checks(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files opened with every page checked (``quick_check``), in order."""
    checked: list[Path] = []
    real = _sqlite_thread.check_sound

    def counting(conn: sqlite3.Connection) -> None:
        checked.append(Path(conn.execute("PRAGMA database_list").fetchone()[2]))
        real(conn)

    monkeypatch.setattr(_sqlite_thread, "check_sound", counting)
    return checked


async def test_a_file_left_by_a_clean_close_reopens_without_reading_every_page(
    tmp_path: Path, page_checks: list[Path]
) -> None:
    path = tmp_path / "data.db"
    await _scheduler_db(path)  # new: checked, then closed cleanly
    assert len(page_checks) == 1
    for _ in range(2):
        store = SqliteStore(path)
        await store.open()
        assert not marked(path)  # open: a kill now leaves no mark, so the next open checks
        await store.close()
        assert marked(path)
    assert len(page_checks) == 1
    with closing(sqlite3.connect(path)) as conn:  # written by someone else since
        conn.execute("DELETE FROM scheduler_job_args WHERE job_id = 1")
        conn.commit()
    store = SqliteStore(path)
    await store.open()
    await store.close()
    assert len(page_checks) == 2


@VIA
async def test_a_wrong_header_is_named_not_a_database(tmp_path: Path, via: str) -> None:
    path = tmp_path / "notes.db"
    _text(path)
    with pytest.raises(NotADatabase, match="not a SQLite database"):
        await open_via(via, path)


@VIA
async def test_a_directory_is_refused_and_left_alone(tmp_path: Path, via: str) -> None:
    path = tmp_path / "a-folder.db"
    path.mkdir()
    (path / "keep.txt").write_text("mine")
    with pytest.raises(NotADatabase, match="is a directory") as info:
        await open_via(via, path)
    assert str(path) in str(info.value)
    assert sorted(p.name for p in path.iterdir()) == ["keep.txt"]
    assert (path / "keep.txt").read_text() == "mine"
    assert sidecars(path) == []


async def test_a_missing_file_and_its_folders_are_created(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "new.db"
    await open_close(path)
    assert journal_bytes(path) == WAL
    assert ("table", "scheduler_jobs") in {(t, n) for t, n, _, _ in schema(path)}


# --- a database from newer code --------------------------------------------------------------


@VIA
@pytest.mark.parametrize("journal", ["wal", "delete"])
async def test_a_database_from_a_newer_schema_is_refused_untouched(
    tmp_path: Path, journal: str, via: str
) -> None:
    path = tmp_path / "future.db"
    await open_close(path)
    with closing(connect(path)) as conn:
        conn.execute(f"PRAGMA journal_mode = {journal}")
        conn.execute(
            "INSERT INTO scheduler_migrations VALUES ('scheduler', 99, 'from_the_future', 'x', 0)"
        )
    mode = journal_bytes(path)
    assert mode == (WAL if journal == "wal" else ROLLBACK)
    before = sha(path)
    known = scheduler_migrations().load("sqlite")[-1].version

    with pytest.raises(SchemaTooNew) as info:
        await open_via(via, path)

    message = str(info.value)
    assert re.search(r"\b99\b", message), message
    assert re.search(rf"up to {known}\b", message), message
    assert "'scheduler'" in message
    assert str(path) in message
    assert sha(path) == before
    assert journal_bytes(path) == mode  # a rollback-journal file was not switched to WAL
    assert sidecars(path) == []


async def test_an_application_schema_from_newer_code_is_refused_untouched(
    tmp_path: Path,
) -> None:
    path = tmp_path / "future.db"
    app = app_set(tmp_path / "app", {"0001_x.sql": "CREATE TABLE app_x (id INTEGER);"})
    await open_close(path, [app])
    with closing(connect(path)) as conn:
        conn.execute("INSERT INTO scheduler_migrations VALUES ('app', 7, 'later', 'x', 0)")
    before = sha(path)
    with pytest.raises(SchemaTooNew, match=r"'app' schema is at version 7.*up to 1\b"):
        await open_close(path, [app])
    assert sha(path) == before


# --- migrations ------------------------------------------------------------------------------


@VIA
async def test_an_applied_scheduler_migration_whose_file_changed_is_refused(
    tmp_path: Path, via: str
) -> None:
    path = tmp_path / "edited.db"
    await open_close(path)
    with closing(connect(path)) as conn:
        n = conn.execute(
            "UPDATE scheduler_migrations SET checksum = ? WHERE component = 'scheduler' "
            "AND version = 1",
            ("0" * 64,),
        ).rowcount
    assert n == 1
    before = sha(path)
    changed = r"scheduler/0001_\w+ was changed after it was applied"
    with pytest.raises(MigrationError, match=changed):
        await open_via(via, path)
    assert sha(path) == before


async def test_an_edited_application_migration_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    app = app_set(tmp_path / "app", {"0001_x.sql": "CREATE TABLE app_x (id INTEGER);"})
    await open_close(path, [app])
    (tmp_path / "app" / "sqlite" / "0001_x.sql").write_text(
        "CREATE TABLE app_x (id INTEGER, extra TEXT);"
    )
    with pytest.raises(MigrationError, match="app/0001_x was changed after it was applied"):
        await open_close(path, [app])


def test_migrations_are_found_from_any_working_directory(tmp_path: Path) -> None:
    db = tmp_path / "anywhere.db"
    code = textwrap.dedent(
        """
        import asyncio, json, sqlite3, sys
        from scheduler import SqliteStore

        async def main():
            store = SqliteStore(sys.argv[1])
            await store.open()
            await store.close()

        asyncio.run(main())
        conn = sqlite3.connect(sys.argv[1])
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        print(json.dumps(sorted(r[0] for r in rows)))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(db)],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    tables = set(json.loads(out.stdout))
    assert {"scheduler_jobs", "scheduler_job_args", "scheduler_migrations"} <= tables


X_SQL = "CREATE TABLE app_x (id INTEGER PRIMARY KEY, name TEXT NOT NULL);\n"
# Only valid after 0001: applied out of order it would fail.
Y_SQL = "ALTER TABLE app_x ADD COLUMN colour TEXT;\nCREATE INDEX app_x_colour ON app_x (colour);\n"


async def test_an_application_migration_set_applies_in_order_recorded_per_component(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.db"
    root = tmp_path / "app"
    app = app_set(root, {"0002_y.sql": Y_SQL, "0001_x.sql": X_SQL, "README.txt": "ignored"})
    await open_close(path, [app])

    rows = recorded(path)
    assert [(c, v, n) for c, v, n, _, _ in rows] == [("app", 1, "x"), ("app", 2, "y")] + [
        ("scheduler", m.version, m.name) for m in scheduler_migrations().load("sqlite")
    ]
    sums = {(c, v): s for c, v, _, s, _ in rows}
    assert sums["app", 1] == hashlib.sha256(X_SQL.encode()).hexdigest()
    assert sums["app", 2] == hashlib.sha256(Y_SQL.encode()).hexdigest()
    with closing(connect(path)) as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(app_x)")]
    assert columns == ["id", "name", "colour"]

    # A later release adds 0003: only it is applied; the others keep their records.
    z_sql = "CREATE TABLE app_z (id INTEGER);"
    app_set(root, {"0003_z.sql": z_sql})
    await open_close(path, [app])
    again = recorded(path)
    assert again[2][:3] == ("app", 3, "z")
    assert again[:2] + again[3:] == rows


async def test_opening_again_applies_nothing(tmp_path: Path) -> None:
    path = tmp_path / "twice.db"
    app = app_set(tmp_path / "app", {"0001_x.sql": X_SQL, "0002_y.sql": Y_SQL})
    await open_close(path, [app])
    first_records, first_schema = recorded(path), schema(path)
    await open_close(path, [app])
    await open_via("Scheduler.start", path, [app])
    assert recorded(path) == first_records  # same rows, same applied_at: nothing re-ran
    assert schema(path) == first_schema


async def test_a_gap_in_the_numbering_is_refused_before_anything_is_applied(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gap.db"
    await open_close(path)
    before = sha(path)
    app = app_set(tmp_path / "app", {"0001_x.sql": X_SQL, "0003_z.sql": "SELECT 1;"})
    with pytest.raises(MigrationError, match=r"migration 0002 is missing \(found 0003_z\.sql\)"):
        await open_close(path, [app])
    assert sha(path) == before
    assert all(c != "app" for c, *_ in recorded(path))


async def test_a_failing_migration_is_rolled_back_whole_and_can_be_fixed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "broken.db"
    root = tmp_path / "app"
    broken = "CREATE TABLE app_half (id INTEGER);\nCREATE TABLE app_x (id INTEGER);\n"
    app = app_set(root, {"0001_x.sql": X_SQL, "0002_half.sql": broken})
    with pytest.raises(MigrationError, match=r"app/0002_half failed: .*app_x already exists"):
        await open_close(path, [app])
    assert [v for c, v, *_ in recorded(path) if c == "app"] == [1]
    names = {n for _, n, _, _ in schema(path)}
    assert "app_x" in names
    assert "app_half" not in names

    app_set(root, {"0002_half.sql": "CREATE TABLE app_half (id INTEGER);\n"})
    await open_close(path, [app])
    assert [v for c, v, *_ in recorded(path) if c == "app"] == [1, 2]


PARTIAL_INDEXES = {
    "scheduler_jobs_due": "WHERE state = 'pending'",
    "scheduler_jobs_lease": "WHERE state = 'in_progress'",
    "scheduler_jobs_parent": "WHERE parent_id IS NOT NULL",
    "scheduler_jobs_idempotency": "WHERE idempotency_key IS NOT NULL",
    "scheduler_jobs_finished": "WHERE finished_at IS NOT NULL",
}

# The driver's hot queries and the index each must use (a partial index is only usable when
# the query's WHERE implies the index's).
QUERY_PLANS = [
    (
        "claim_due",
        {"kind": "mutation", "now": 1.0, "limit": 64, "lease_until": 2.0, "process": "p"},
        "scheduler_jobs_due",
    ),
    ("next_due", {"kind": "action"}, "scheduler_jobs_due"),
    (
        "claim_ranked",
        {
            "kind": "action",
            "priority": 5,
            "now": 1.0,
            "limit": 64,
            "lease_until": 2.0,
            "process": "p",
        },
        "scheduler_jobs_ranked (kind=? AND priority=? AND next_ts<?)",
    ),
    ("ranked_levels", {"kind": "mutation"}, "scheduler_jobs_ranked (kind=? AND priority<?)"),
    ("ranked_levels", {"kind": "mutation"}, "scheduler_jobs_ranked (kind=? AND priority=?)"),
    (
        "next_paced",
        {"actions": 1, "now": 1.0, "lease_now": 1.0, "lease_offset": 0.0},
        "scheduler_jobs_paced_ranked (kind=?)",
    ),
    (
        "next_paced",
        {"actions": 1, "now": 1.0, "lease_now": 1.0, "lease_offset": 0.0},
        "scheduler_jobs_limited_running (conc_key=?)",
    ),
    (
        "limited_due",
        {"now": 1.0, "mutations": 1, "actions": 1, "limit": 64},
        "scheduler_jobs_limited_due (next_ts<?)",
    ),
    ("expired_leases", {"now": 1.0, "limit": 1000}, "scheduler_jobs_lease"),
    ("children_of", {"job_ids": "[1, 2]"}, "scheduler_jobs_parent"),
    ("job_by_key", {"idempotency_key": "key"}, "scheduler_jobs_idempotency"),
    ("prune_ids", {"before": 1.0, "limit": 1000}, "scheduler_jobs_finished"),
]


async def test_the_schema_has_the_tables_and_partial_indexes_the_driver_relies_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "schema.db"
    await open_close(path)
    rows = schema(path)
    tables = {n for t, n, _, _ in rows if t == "table"}
    assert {"scheduler_jobs", "scheduler_job_args", "scheduler_migrations"} <= tables
    indexes = {n: (tbl, sql) for t, n, tbl, sql in rows if t == "index" and sql}
    for name, where in PARTIAL_INDEXES.items():
        assert name in indexes, f"index {name} is missing"
        table, sql = indexes[name]
        assert table == "scheduler_jobs"
        assert where in " ".join(sql.split()), sql
    assert indexes["scheduler_jobs_idempotency"][1].startswith("CREATE UNIQUE INDEX")

    queries = load_queries("sqlite")
    with closing(connect(path)) as conn:
        for query, params, index in QUERY_PLANS:
            rows = conn.execute("EXPLAIN QUERY PLAN " + queries[query].sql, params).fetchall()
            plan = " | ".join(r[3] for r in rows)
            assert f"INDEX {index}" in plan, f"{query}: {plan}"


# --- pragmas ---------------------------------------------------------------------------------


async def _pragmas(db: Db) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in ("journal_mode", "synchronous", "busy_timeout", "foreign_keys", "query_only"):
        row = await (await db.execute(f"PRAGMA {name}")).fetchone()
        assert row is not None
        values[name] = row[0]
    return values


@pytest.mark.parametrize(
    ("kwargs", "synchronous", "timeout_ms"),
    [
        ({}, 1, 10_000),
        ({"synchronous": "FULL", "busy_timeout": 2.5}, 2, 2500),
        ({"synchronous": "EXTRA", "busy_timeout": 0.25}, 3, 250),
        ({"synchronous": "OFF"}, 0, 10_000),
    ],
)
async def test_wal_synchronous_and_busy_timeout_are_applied(
    tmp_path: Path, kwargs: dict[str, Any], synchronous: int, timeout_ms: int
) -> None:
    path = tmp_path / "pragmas.db"
    store = SqliteStore(path, **kwargs)
    await store.open()
    try:
        async with store.transaction(0) as tx:  # the writer connection
            writer = await _pragmas(tx)
        async with store.snapshot() as db:  # the reader connection
            reader = await _pragmas(db)
    finally:
        await store.close()
    assert writer["journal_mode"] == "wal"
    assert writer["synchronous"] == synchronous
    assert writer["busy_timeout"] == timeout_ms
    assert writer["foreign_keys"] == 1
    assert writer["query_only"] == 0
    assert reader["busy_timeout"] == timeout_ms
    assert reader["query_only"] == 1
    assert journal_bytes(path) == WAL  # persisted in the file


def test_an_unknown_synchronous_setting_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="synchronous must be OFF, NORMAL, FULL or EXTRA"):
        SqliteStore(tmp_path / "x.db", synchronous="SOMETIMES")  # type: ignore[arg-type]


async def test_a_transaction_takes_the_file_s_write_lock_with_its_first_statement(
    tmp_path: Path,
) -> None:
    """``BEGIN IMMEDIATE`` travels with the first statement (one round trip fewer): a
    transaction that runs none never waits for another connection's lock, and one that
    runs one holds the lock from then until its commit."""
    path = tmp_path / "lazy.db"
    await open_close(path)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    store = SqliteStore(path, busy_timeout=0.05)
    await store.open()
    try:
        other.execute("BEGIN IMMEDIATE")
        async with store.transaction(0):
            pass  # no statement: nothing to wait for
        other.execute("COMMIT")
        async with store.transaction(0) as tx:
            await tx.execute("CREATE TABLE t (id INTEGER)")
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")  # the store holds it now
        other.execute("BEGIN IMMEDIATE")  # released at the commit
        other.execute("COMMIT")
    finally:
        other.close()
        await store.close()


async def test_a_write_waits_for_another_connection_s_lock_within_busy_timeout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "busy.db"
    await open_close(path)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    store = SqliteStore(path, busy_timeout=10)
    impatient = SqliteStore(path, busy_timeout=0.05)
    await store.open()
    await impatient.open()
    try:
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            async with impatient.transaction(0) as tx:
                await tx.execute("SELECT 1")  # the first statement takes the lock
        held_for = 0.3
        released = asyncio.get_running_loop().call_later(held_for, other.execute, "COMMIT")
        started = time.monotonic()
        async with store.transaction(0) as tx:
            await tx.execute("CREATE TABLE waited (id INTEGER)")
        assert time.monotonic() - started >= held_for * 0.9  # it waited rather than failing
        released.cancel()
    finally:
        await store.close()
        await impatient.close()
        other.close()
    assert "waited" in {n for _, n, _, _ in schema(path)}


# --- aiosqlite -------------------------------------------------------------------------------


async def test_the_aiosqlite_private_primitive_the_store_relies_on_still_behaves(
    tmp_path: Path,
) -> None:
    """The store runs whole operations in aiosqlite's connection thread through
    ``Connection._execute(fn, *args)`` and reaches the raw connection as ``_conn``. If an
    aiosqlite upgrade removes or changes either, this fails first, and says so."""
    upgrade = f"aiosqlite {aiosqlite.__version__} changed a private API the SQLite store uses"
    assert hasattr(aiosqlite.Connection, "_execute"), upgrade
    assert inspect.iscoroutinefunction(aiosqlite.Connection._execute), upgrade
    assert isinstance(inspect.getattr_static(aiosqlite.Connection, "_conn"), property), upgrade

    conn = await aiosqlite.connect(tmp_path / "prim.db", isolation_level=None)
    try:
        raw = conn._conn
        assert isinstance(raw, sqlite3.Connection), upgrade

        def where(c: sqlite3.Connection, a: int, b: int) -> tuple[int, bool, int]:
            c.execute("CREATE TABLE IF NOT EXISTS t (x)")
            c.execute("INSERT INTO t VALUES (?)", (a + b,))
            return threading.get_ident(), c is raw, a + b

        execute: Callable[..., Awaitable[Any]] = conn._execute
        first = await execute(where, raw, 1, 2)
        second = await execute(where, raw, 3, 4)
        assert first[1:] == (True, 3), upgrade
        assert second[1:] == (True, 7), upgrade
        assert first[0] == second[0] != threading.get_ident(), "not run in the connection thread"

        def boom(c: sqlite3.Connection) -> None:
            raise ZeroDivisionError("in the thread")

        with pytest.raises(ZeroDivisionError, match="in the thread"):
            await execute(boom, raw)
        # The store's wrapper, and the connection still works after an exception.
        total = await _in_thread(conn, lambda c: c.execute("SELECT sum(x) FROM t").fetchone()[0])
        assert total == 10
    finally:
        await conn.close()


# --- misuse ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [":memory:", Path(":memory:"), "file:jobs.db?mode=memory"])
def test_an_in_memory_database_is_refused_with_a_clear_message(path: str | Path) -> None:
    with pytest.raises(InvalidArgument, match="SqliteStore needs a file path"):
        SqliteStore(path)


# --- integrity under load --------------------------------------------------------------------

APP_TABLES = """\
CREATE TABLE items (id INTEGER PRIMARY KEY, n INTEGER NOT NULL, pad TEXT);
CREATE TABLE callbacks (id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, kind TEXT NOT NULL);
"""


async def test_integrity_check_is_ok_after_a_busy_workload(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    registry = Registry()

    @registry.mutation("w:insert")
    async def insert(ctx: Any, args: Any) -> int:
        await ctx.db.execute("INSERT INTO items (n, pad) VALUES (?, ?)", (args, "p" * 300))
        return int(args)

    @registry.mutation("w:flaky")
    async def flaky(ctx: Any, args: Any) -> None:
        await ctx.db.execute("INSERT INTO items (n, pad) VALUES (?, 'rolled back')", (args,))
        if ctx.job.attempt < 2:
            raise ValueError("not yet")

    @registry.action("w:act")
    async def act(ctx: Any, args: Any) -> None:
        await ctx.run_mutation("w:insert", args)
        await ctx.scheduler.run_after(0, "w:insert", -args)

    @registry.mutation("w:done")
    async def done(ctx: Any, args: Any) -> None:
        await ctx.db.execute(
            "INSERT INTO callbacks (job_id, kind) VALUES (?, ?)",
            (args["job_id"], args["result"]["kind"]),
        )

    clock = FakeClock(datetime(2030, 1, 1, tzinfo=UTC))
    app = app_set(tmp_path / "app", {"0001_tables.sql": APP_TABLES})
    sched = Scheduler(
        SqliteStore(path), registry, clock=clock, retention=600, sweep_interval=60,
        migrations=[app],
    )  # fmt: skip
    async with sched:
        async with sched.transaction() as ctx:
            for i in range(1, 401):
                await ctx.scheduler.run_after(0, "w:insert", i, on_complete="w:done")
            for i in range(1001, 1101):
                await ctx.scheduler.run_after(0, "w:act", i, idempotency_key=f"act-{i}")
                await ctx.scheduler.run_after(0, "w:act", i, idempotency_key=f"act-{i}")
            for i in range(2001, 2051):
                await ctx.scheduler.enqueue(
                    "w:flaky", i, retry=Retry(max_failures=5, initial_backoff=1, base=2)
                )
            parents = []
            for _ in range(60):
                parent = await ctx.scheduler.run_after(3600, "w:insert", -1, on_complete="w:done")
                for _ in range(3):
                    await ctx.scheduler.enqueue("w:insert", -2, run_at=clock.time() + 7200,
                                                parent_id=parent)  # fmt: skip
                parents.append(parent)
        for parent in parents:
            assert await sched.cancel(parent)
        for _ in range(6):  # the flaky jobs' backoff is at most 2 * 2**2 = 8 s
            await sched.wait_idle()
            clock.advance(10)
        await sched.wait_idle()
        counts = await sched.store.at(clock.time()).count_by_state()
        assert counts.get(JobState.PENDING, 0) == counts.get(JobState.FAILED, 0) == 0
        assert counts[JobState.CANCELED] == 60 * 4
        async with sched.reader() as db:
            ok = await (await db.execute("PRAGMA integrity_check")).fetchone()
            assert ok is not None
            assert ok[0] == "ok"
            n = await (await db.execute("SELECT count(*) FROM items")).fetchone()
            # 400 inserts, 100 actions' direct and follow-up inserts, 50 flaky successes.
            assert n is not None
            assert n[0] == 400 + 200 + 50
        clock.advance(3600)  # past retention: the sweep prunes every terminal job
        await sched.sweep()
        await sched.wait_idle()
        remaining = await sched.list_jobs(limit=1000)
        assert all(j.finished_at is not None and j.finished_at > clock.time() - 600
                   for j in remaining)  # fmt: skip
    with closing(connect(path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("SELECT count(*) FROM callbacks").fetchone()[0] == 400 + 60
        orphans = conn.execute(
            "SELECT count(*) FROM scheduler_job_args WHERE job_id NOT IN "
            "(SELECT id FROM scheduler_jobs)"
        ).fetchone()[0]
        assert orphans == 0
