"""What is particular to the PostgreSQL store: migrations under an advisory lock, ``?``
placeholders, NOTIFY wake-ups across stores and the LISTEN connection's recovery, SKIP LOCKED
claims, fencing, nesting, cancellation and PostgreSQL's aborted transactions.

The shared behaviour is in the conformance and driver suites (run on both stores). Tests
that need a server skip without ``CRIER_TEST_POSTGRES_DSN``; each gets a database of its own.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import JobKind, JobState, MigrationError, SchedulerError, SchemaTooNew, StoreError
from scheduler._ops.dispatch import claim_due
from scheduler.migrations import MigrationSet, scheduler_migrations
from scheduler.sql import positional_queries
from scheduler.sql.placeholders import numbered, parameter_names, translate_placeholders
from scheduler.store_types import NewJob, Outcome

asyncpg = pytest.importorskip("asyncpg")

from scheduler.stores._pg_listener import (  # noqa: E402  (after the importorskip)
    ENDED_IDS_LIMIT,
    ended_payload,
    parse_ended,
)
from scheduler.stores.postgres import PostgresStore, rowcount  # noqa: E402  (after the importorskip)
from tests.scheduler.pg import fresh_database  # noqa: E402
from tests.scheduler.stores import postgres_dsn  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

T0 = 1_900_000_000.0
LEASE = 30.0
WAIT = 10.0  # seconds before a wait that should succeed at once counts as a failure

needs_server = pytest.mark.postgres


def new_job(
    next_ts: float = T0, args_json: str = "null", max_failures: int = 4, **extra: Any
) -> NewJob:
    return NewJob(
        fn="m",
        kind=JobKind.MUTATION,
        next_ts=next_ts,
        max_failures=max_failures,
        initial_backoff=1.0,
        backoff_base=2.0,
        idempotent=False,
        args_json=args_json,
        **extra,
    )


# --- placeholders (no server needed) -------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT ?", "SELECT $1"),
        ("INSERT INTO t (a, b) VALUES (?, ?)", "INSERT INTO t (a, b) VALUES ($1, $2)"),
        ("SELECT ?2, ?1, ?2", "SELECT $2, $1, $2"),
        # A bare ? after ?NNN takes the next number after the largest, as in SQLite.
        ("SELECT ?3, ?", "SELECT $3, $4"),
        ("SELECT ?, ?1, ?", "SELECT $1, $1, $2"),
        ("SELECT '?', ?", "SELECT '?', $1"),
        ("SELECT 'it''s ?', ?", "SELECT 'it''s ?', $1"),
        ("SELECT E'\\' ?', ?", "SELECT E'\\' ?', $1"),
        ("SELECT e'a\\\\', ?", "SELECT e'a\\\\', $1"),
        # Not an E string: the E ends an identifier, so the backslash is an ordinary char.
        ("SELECT some'x\\', ?", "SELECT some'x\\', $1"),
        ('SELECT "col?" FROM "t""?" WHERE x = ?', 'SELECT "col?" FROM "t""?" WHERE x = $1'),
        ("SELECT 1 -- what?\n, ?", "SELECT 1 -- what?\n, $1"),
        ("SELECT 1 -- what? to the end", "SELECT 1 -- what? to the end"),
        ("SELECT /* ? /* nested ? */ still ? */ ?", "SELECT /* ? /* nested ? */ still ? */ $1"),
        ("SELECT $$ ? $$, ?", "SELECT $$ ? $$, $1"),
        ("SELECT $fn$ it's ? $x$ $fn$, ?", "SELECT $fn$ it's ? $x$ $fn$, $1"),
        # $1 written by hand, and $ inside identifiers, are left alone.
        ("SELECT $1, a$b, ?", "SELECT $1, a$b, $1"),
        ("SELECT data ?? 'key', ?", "SELECT data ? 'key', $1"),
        ("SELECT data ??| array['a'], ?", "SELECT data ?| array['a'], $1"),
        ("SELECT 'unterminated ?", "SELECT 'unterminated ?"),
        ("SELECT $tag$ unterminated ?", "SELECT $tag$ unterminated ?"),
        ("SELECT 1 /* unterminated ?", "SELECT 1 /* unterminated ?"),
        ("", ""),
        ("SELECT é, ?", "SELECT é, $1"),
    ],
)
def test_placeholders_are_translated_outside_literals_identifiers_and_comments(
    sql: str, expected: str
) -> None:
    assert translate_placeholders(sql) == expected


@pytest.mark.parametrize(
    ("sql", "expected", "names"),
    [
        ("SELECT :a", "SELECT $1", ("a",)),
        ("SELECT :b, :a, :b", "SELECT $1, $2, $1", ("b", "a")),
        # A cast is not a parameter, also right after one.
        ("SELECT :id::bigint, x::text", "SELECT $1::bigint, x::text", ("id",)),
        ("SELECT = ANY(:ids::bigint[])", "SELECT = ANY($1::bigint[])", ("ids",)),
        ("SELECT ':a', \":a\", :a", "SELECT ':a', \":a\", $1", ("a",)),
        ("SELECT 1 -- :a\n, :b /* :c */", "SELECT 1 -- :a\n, $1 /* :c */", ("b",)),
        ("SELECT $$ :a $$, :b", "SELECT $$ :a $$, $1", ("b",)),
        # An array slice's bounds are not parameters; a lone colon is left alone.
        ("SELECT a[lo:hi], :x, ':'", "SELECT a[lo:hi], $1, ':'", ("x",)),
        ("", "", ()),
    ],
)
def test_named_parameters_are_numbered_outside_literals_comments_and_casts(
    sql: str, expected: str, names: tuple[str, ...]
) -> None:
    assert numbered(sql) == (expected, names)
    assert parameter_names(sql) == names


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("INSERT 0 3", 3),
        ("UPDATE 1", 1),
        ("DELETE 0", 0),
        ("SELECT 12", 12),
        ("MERGE 2", 2),
        ("CREATE TABLE", -1),
        ("BEGIN", -1),
        ("", -1),
        (None, -1),
    ],
)
def test_rowcount_is_read_from_the_command_status(status: str | None, expected: int) -> None:
    assert rowcount(status) == expected


def test_bad_settings_are_refused() -> None:
    from scheduler import InvalidArgument

    with pytest.raises(InvalidArgument, match="max_size"):
        PostgresStore("postgresql://x/y", min_size=3, max_size=2)
    with pytest.raises(InvalidArgument, match="channel"):
        PostgresStore("postgresql://x/y", channel="no spaces; or quotes'")


def test_a_postgresql_store_batches_256_by_default_and_sqlite_64(tmp_path: Path) -> None:
    """Claims and completions of 256 jobs on PostgreSQL (many writers), 64 on SQLite (one
    writer: a larger claim holds the file longer); what the application gives wins."""
    from scheduler import Registry, Scheduler, SqliteStore

    def sizes(sched: Scheduler) -> tuple[int, int]:
        settings = sched._engine.settings
        return settings.batch_size, settings.max_concurrency

    pg = PostgresStore("postgresql://x/y")
    assert sizes(Scheduler(pg, Registry())) == (256, 256)
    assert sizes(Scheduler(pg, Registry(), batch_size=32)) == (32, 256)
    assert sizes(Scheduler(pg, Registry(), max_concurrency=8)) == (256, 8)
    sqlite = SqliteStore(tmp_path / "db.sqlite")
    assert sizes(Scheduler(sqlite, Registry())) == (64, 64)
    assert sizes(Scheduler(sqlite, Registry(), batch_size=256)) == (256, 64)


def test_the_password_stays_out_of_the_repr() -> None:
    shown = repr(PostgresStore("postgresql://me:secret@db.example:5433/app"))
    assert "secret" not in shown
    assert "db.example:5433/app" in shown


def test_importing_scheduler_does_not_import_asyncpg() -> None:
    code = (
        "import sys, scheduler\n"
        "assert 'asyncpg' not in sys.modules\n"
        "from scheduler import PostgresStore\n"
        "assert 'asyncpg' in sys.modules and PostgresStore.dialect == 'postgres'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def never_used() -> None:
    """Asked for by the migration tests: :func:`dsn` is then a database created for the
    test, not a pooled one emptied (see ``tests/scheduler/pg.py``)."""


@pytest.fixture
async def dsn(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A database of its own, as new."""
    base = postgres_dsn()
    if base is None:
        pytest.skip("PostgreSQL tests need CRIER_TEST_POSTGRES_DSN (.ci/run sets it)")
    async with fresh_database(base, pooled="never_used" not in request.fixturenames) as dsn:
        yield dsn


@pytest.fixture
async def conn(dsn: str) -> AsyncIterator[Any]:
    """A plain connection to the test database, to look behind the store's back."""
    c = await asyncpg.connect(dsn)
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
async def opened(dsn: str) -> AsyncIterator[list[PostgresStore]]:
    """Stores opened by the test, closed afterwards."""
    stores: list[PostgresStore] = []
    yield stores
    for s in stores:
        await s.close()


async def open_store(
    dsn: str, opened: list[PostgresStore], *sets: MigrationSet, **kwargs: Any
) -> PostgresStore:
    store = PostgresStore(dsn, **kwargs)
    await store.open(sets)
    opened.append(store)
    return store


def app_set(root: Path, files: dict[str, str], component: str = "app") -> MigrationSet:
    folder = root / "postgres"
    folder.mkdir(parents=True, exist_ok=True)
    for name, sql in files.items():
        (folder / name).write_text(sql)
    return MigrationSet(component, root)


async def fingerprint(conn: Any) -> tuple[Any, ...]:
    """Everything a migration could have written: relations, columns, version rows."""
    relations = await conn.fetch(
        "SELECT c.relname, c.relkind, a.attname, a.atttypid "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 "
        "WHERE n.nspname = 'public' ORDER BY 1, 3"
    )
    versions: list[Any] = []
    if await conn.fetchval("SELECT to_regclass('scheduler_migrations') IS NOT NULL"):
        versions = await conn.fetch("SELECT * FROM scheduler_migrations ORDER BY 1, 2")
    return tuple(map(tuple, relations)), tuple(map(tuple, versions))


async def versions(conn: Any) -> list[tuple[str, int, str, str]]:
    rows = await conn.fetch(
        "SELECT component, version, name, checksum FROM scheduler_migrations ORDER BY 1, 2"
    )
    return [tuple(r) for r in rows]


# --- migrations ----------------------------------------------------------------------------


@needs_server
@pytest.mark.usefixtures("never_used")
async def test_a_fresh_database_gets_every_migration_recorded_with_its_checksum(
    dsn: str, conn: Any, opened: list[PostgresStore]
) -> None:
    await open_store(dsn, opened)
    expected = [
        ("scheduler", m.version, m.name, m.checksum)
        for m in scheduler_migrations().load("postgres")
    ]
    assert await versions(conn) == expected
    indexes = {
        r["indexname"]: r["indexdef"]
        for r in await conn.fetch("SELECT indexname, indexdef FROM pg_indexes")
    }
    # Since 0006 the due index holds unpaced work only (paced jobs have their own); since
    # 0011 only of the default priority (the others are by priority, in scheduler_jobs_ranked);
    # since 0015 only jobs without a concurrency limit (scheduler_jobs_limited*).
    assert (
        "WHERE ((state = 'pending'::text) AND (pace_key IS NULL) AND (conc_key IS NULL) "
        "AND (priority = 0))" in indexes["scheduler_jobs_due"]
    )
    assert "(conc_key, next_ts, id)" in indexes["scheduler_jobs_limited"]
    assert "(conc_key IS NOT NULL)" in indexes["scheduler_jobs_limited_running"]
    assert "(kind, next_ts)" in indexes["scheduler_jobs_due"]
    assert "(kind, priority, next_ts)" in indexes["scheduler_jobs_ranked"]
    assert "(priority <> 0)" in indexes["scheduler_jobs_ranked"]
    assert "(pace_key, next_ts, id)" in indexes["scheduler_jobs_paced"]
    assert (
        "WHERE ((state = 'in_progress'::text) AND (lease_expires_at IS NOT NULL))"
        in indexes["scheduler_jobs_lease"]
    )
    assert "UNIQUE" in indexes["scheduler_jobs_idempotency"]
    types = dict(
        await conn.fetch(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'scheduler_jobs'"
        )
    )
    assert (types["id"], types["next_ts"], types["fn"]) == ("bigint", "double precision", "text")


@needs_server
@pytest.mark.usefixtures("never_used")
async def test_opening_again_applies_nothing(
    dsn: str, conn: Any, opened: list[PostgresStore]
) -> None:
    store = await open_store(dsn, opened)
    await store.close()
    before = await fingerprint(conn)
    await open_store(dsn, opened)
    assert await fingerprint(conn) == before


@needs_server
@pytest.mark.usefixtures("never_used")
async def test_concurrent_first_opens_apply_each_migration_once(
    dsn: str, conn: Any, opened: list[PostgresStore], tmp_path: Path
) -> None:
    app = app_set(
        tmp_path / "app",
        {"0001_a.sql": "CREATE TABLE app_a (id BIGINT);", "0002_b.sql": "CREATE TABLE app_b ();"},
    )
    stores = [PostgresStore(dsn, listen=False) for _ in range(6)]
    opened.extend(stores)
    await asyncio.gather(*(s.open([app]) for s in stores))
    got = await versions(conn)
    assert [(c, v) for c, v, _, _ in got] == [("app", 1), ("app", 2)] + [
        ("scheduler", m.version) for m in scheduler_migrations().load("postgres")
    ]


@needs_server
@pytest.mark.usefixtures("never_used")
async def test_application_migrations_apply_in_order_after_the_scheduler_s(
    dsn: str, conn: Any, opened: list[PostgresStore], tmp_path: Path
) -> None:
    app = app_set(
        tmp_path / "app",
        {
            "0001_notes.sql": "CREATE TABLE notes (id BIGSERIAL PRIMARY KEY, body TEXT);",
            "0002_tags.sql": "ALTER TABLE notes ADD COLUMN tag TEXT;\n"
            "CREATE INDEX notes_tag ON notes (tag);",
        },
    )
    await open_store(dsn, opened, app)
    cols = {
        r[0]
        for r in await conn.fetch(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'notes'::regclass AND attnum > 0"
        )
    }
    assert cols == {"id", "body", "tag"}
    assert [(c, v, n) for c, v, n, _ in await versions(conn) if c == "app"] == [
        ("app", 1, "notes"),
        ("app", 2, "tags"),
    ]


@needs_server
@pytest.mark.usefixtures("never_used")
async def test_a_newer_scheduler_schema_is_refused_before_anything_is_written(
    dsn: str, conn: Any, tmp_path: Path
) -> None:
    # Only the version table exists, recording a future scheduler schema: opening must not
    # create the scheduler's tables, nor apply the application's migrations.
    await conn.execute(
        "CREATE TABLE scheduler_migrations (component TEXT NOT NULL, version INTEGER NOT NULL, "
        "name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL, "
        "PRIMARY KEY (component, version))"
    )
    await conn.execute(
        "INSERT INTO scheduler_migrations VALUES ('scheduler', 99, 'from_the_future', 'x', 0)"
    )
    app = app_set(tmp_path / "app", {"0001_x.sql": "CREATE TABLE app_x (id INTEGER);"})
    before = await fingerprint(conn)
    store = PostgresStore(dsn)
    with pytest.raises(SchemaTooNew, match=r"'scheduler' schema is at version 99"):
        await store.open([app])
    await store.close()
    assert await fingerprint(conn) == before
    assert await conn.fetchval("SELECT to_regclass('scheduler_jobs')") is None


@needs_server
@pytest.mark.usefixtures("never_used")
async def test_a_newer_application_schema_is_refused_untouched(
    dsn: str, conn: Any, opened: list[PostgresStore], tmp_path: Path
) -> None:
    app = app_set(tmp_path / "app", {"0001_x.sql": "CREATE TABLE app_x (id INTEGER);"})
    store = await open_store(dsn, opened, app)
    await store.close()
    await conn.execute("INSERT INTO scheduler_migrations VALUES ('app', 7, 'later', 'x', 0)")
    before = await fingerprint(conn)
    with pytest.raises(SchemaTooNew, match=r"'app' schema is at version 7.*up to 1\b"):
        await PostgresStore(dsn).open([app])
    assert await fingerprint(conn) == before


@needs_server
@pytest.mark.usefixtures("never_used")
async def test_an_edited_migration_is_refused(
    dsn: str, conn: Any, opened: list[PostgresStore], tmp_path: Path
) -> None:
    app = app_set(tmp_path / "app", {"0001_x.sql": "CREATE TABLE app_x (id INTEGER);"})
    store = await open_store(dsn, opened, app)
    await store.close()
    (tmp_path / "app" / "postgres" / "0001_x.sql").write_text(
        "CREATE TABLE app_x (id INTEGER, extra TEXT);"
    )
    before = await fingerprint(conn)
    with pytest.raises(MigrationError, match="app/0001_x was changed after it was applied"):
        await PostgresStore(dsn).open([app])
    assert await fingerprint(conn) == before
    # The scheduler's own files are checked the same way.
    await conn.execute(
        "UPDATE scheduler_migrations SET checksum = $1 WHERE component = 'scheduler' "
        "AND version = 1",
        "0" * 64,
    )
    with pytest.raises(MigrationError, match=r"scheduler/0001_\w+ was changed"):
        await PostgresStore(dsn).open()


@needs_server
@pytest.mark.usefixtures("never_used")
async def test_a_failing_migration_is_rolled_back_whole_and_can_be_fixed(
    dsn: str, conn: Any, opened: list[PostgresStore], tmp_path: Path
) -> None:
    files = {
        "0001_ok.sql": "CREATE TABLE app_ok (id INTEGER);",
        "0002_bad.sql": "CREATE TABLE app_half (id INTEGER);\nSELECT * FROM no_such_table;",
    }
    app = app_set(tmp_path / "app", files)
    with pytest.raises(MigrationError, match=r"app/0002_bad failed: .*no_such_table"):
        await PostgresStore(dsn).open([app])
    assert await conn.fetchval("SELECT to_regclass('app_half')") is None
    assert await conn.fetchval("SELECT to_regclass('app_ok')") is not None
    assert [(c, v) for c, v, _, _ in await versions(conn) if c == "app"] == [("app", 1)]
    app_set(tmp_path / "app", {"0002_bad.sql": "CREATE TABLE app_half (id INTEGER);"})
    await open_store(dsn, opened, app)
    assert [(c, v) for c, v, _, _ in await versions(conn) if c == "app"] == [("app", 1), ("app", 2)]


@needs_server
async def test_an_unreachable_server_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="cannot connect"):
        await PostgresStore("postgresql://postgres@127.0.0.1:1/none", timeout=5).open()


# --- wake-ups across stores ----------------------------------------------------------------


class Heard:
    """Counts a store's commit-listener calls, and waits for a count to be reached."""

    def __init__(self, store: PostgresStore) -> None:
        self.count = 0
        self._changed = asyncio.Event()
        store.add_commit_listener(self._heard)

    def _heard(self) -> None:
        self.count += 1
        self._changed.set()

    async def reach(self, n: int) -> int:
        """Wait until ``n`` calls were heard; return the count then (more means too many)."""
        async with asyncio.timeout(WAIT):
            while self.count < n:
                self._changed.clear()
                await self._changed.wait()
        return self.count


@needs_server
async def test_a_commit_in_one_store_wakes_another_through_notify(
    dsn: str, opened: list[PostgresStore]
) -> None:
    a = await open_store(dsn, opened)
    b = await open_store(dsn, opened)
    heard_a, heard_b = Heard(a), Heard(b)
    await a.at(T0).enqueue(new_job())
    assert heard_a.count == 1  # at once, locally, before any round trip
    assert await heard_b.reach(1) == 1
    # a's own NOTIFY came back to a before b's does (one connection delivers in order), and
    # was recognised as its own: a hears b's commit, and only that.
    await b.at(T0).enqueue(new_job())
    assert heard_b.count == 2
    assert await heard_a.reach(2) == 2
    # Work that changes nothing pending stays quiet everywhere.
    await a.at(T0).get_job(1)
    await a.at(T0 - 100).claim_due(T0, mutation_limit=5, action_limit=5)
    await b.at(T0).enqueue(new_job())  # a marker: once a hears it, anything earlier arrived too
    assert await heard_a.reach(3) == 3


def keepalive_of(connection: Any) -> tuple[int, int, int, int]:
    """SO_KEEPALIVE and the idle, interval and count of a connection's TCP keepalive."""
    sock = connection._transport.get_extra_info("socket")
    return (
        sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
        sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
        sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
        sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
    )


@needs_server
@pytest.mark.skipif(not hasattr(socket, "TCP_KEEPIDLE"), reason="Linux's keepalive options")
async def test_the_long_lived_connections_are_watched_by_keepalive_not_by_queries(
    dsn: str, conn: Any, opened: list[PostgresStore]
) -> None:
    """The LISTEN and holder connections of an idle store: TCP keepalive on both ends (the
    kernel ends one that died silently), and no query over many check intervals, so an idle
    deployment's database counts no transactions for them. (Asked ``SELECT 1`` instead, each
    would show it as its last query within one interval.)"""
    if "@127.0.0.1" not in dsn and "@localhost" not in dsn:
        pytest.skip("the keepalive of a TCP connection (this server is reached otherwise)")
    store = await open_store(dsn, opened, listen_check_interval=0.2)
    await store.holder_session.prove()
    listener, holder = store._listener.conn, store.holder_session._conn
    assert listener is not None
    assert holder is not None
    assert keepalive_of(listener) == (1, 1, 1, 3)
    assert keepalive_of(holder) == (1, 1, 1, 3)
    pids = [listener.get_server_pid(), holder.get_server_pid()]
    watched = (
        "SELECT pid, query, state_change FROM pg_stat_activity WHERE pid = ANY($1) ORDER BY pid"
    )
    before = [tuple(r) for r in await conn.fetch(watched, pids)]
    assert len(before) == 2
    assert not any(q == "SELECT 1" for _, q, _ in before)
    await asyncio.sleep(1.0)  # five check intervals
    assert [tuple(r) for r in await conn.fetch(watched, pids)] == before
    settings = await holder.fetch(
        "SELECT name, setting FROM pg_settings WHERE name LIKE 'tcp_keepalives_%' ORDER BY name"
    )
    assert {r["name"]: r["setting"] for r in settings} == {
        "tcp_keepalives_count": "3",
        "tcp_keepalives_idle": "1",
        "tcp_keepalives_interval": "1",
    }


@needs_server
async def test_the_listen_connection_comes_back_after_it_is_killed(
    dsn: str, conn: Any, opened: list[PostgresStore]
) -> None:
    a = await open_store(dsn, opened)
    b = await open_store(dsn, opened)
    heard_b = Heard(b)
    listener = b._listener.conn
    assert listener is not None
    old_pid = listener.get_server_pid()
    assert await conn.fetchval("SELECT pg_terminate_backend($1)", old_pid)
    # Back again, b wakes its listeners once: commits made meanwhile were not heard.
    assert await heard_b.reach(1) == 1
    assert b._listener.conn is not None
    assert b._listener.conn.get_server_pid() != old_pid
    assert b._listener.reconnects == 1
    await a.at(T0).enqueue(new_job())
    assert await heard_b.reach(2) == 2


class Ended:
    """What a store's end listeners are told, and a wait for a number of tellings."""

    def __init__(self, store: PostgresStore) -> None:
        self.told: list[list[int] | None] = []
        self._changed = asyncio.Event()
        store.add_end_listener(self._told)

    def _told(self, job_ids: Any) -> None:
        self.told.append(None if job_ids is None else list(job_ids))
        self._changed.set()

    async def reach(self, n: int) -> list[list[int] | None]:
        async with asyncio.timeout(WAIT):
            while len(self.told) < n:
                self._changed.clear()
                await self._changed.wait()
        return self.told


async def _finish(store: PostgresStore, n: int) -> list[int]:
    """Enqueue ``n`` due jobs, claim them and record them done: their ids."""
    ids = await store.at(T0).enqueue_many([new_job() for _ in range(n)])
    claim = await store.at(T0).claim_due(T0 + LEASE, mutation_limit=n, action_limit=0)
    await store.at(T0).complete([Outcome(j, ok=True) for j in claim.jobs])
    return ids


@needs_server
async def test_jobs_ended_in_one_store_are_told_to_another_with_their_ids(
    dsn: str, opened: list[PostgresStore]
) -> None:
    a = await open_store(dsn, opened)
    b = await open_store(dsn, opened)
    ended_a, ended_b = Ended(a), Ended(b)
    first = await _finish(a, 2)
    assert ended_a.told == [first]  # at once, locally
    assert await ended_b.reach(1) == [first]
    # a's own notification came back to a and was recognised as its own: a hears b's, only.
    second = await _finish(b, 1)
    assert await ended_a.reach(2) == [first, second]
    # a cancel ends a job too; a claim ends none and says nothing
    job = await b.at(T0).enqueue(new_job(next_ts=T0 + 60))
    await b.at(T0).claim_due(T0 + LEASE, mutation_limit=5, action_limit=5)
    await b.at(T0).cancel(job)
    assert await ended_a.reach(3) == [first, second, [job]]


@needs_server
async def test_too_many_ended_ids_for_one_notification_say_any(
    dsn: str, opened: list[PostgresStore]
) -> None:
    """PostgreSQL's payload holds 8000 bytes: more ids than fit tell "any awaited job may
    have ended" (None), and the listener reads every job it awaits."""
    a = await open_store(dsn, opened)
    b = await open_store(dsn, opened)
    ended_b = Ended(b)
    ids = await _finish(a, 2000)  # ids of 1-4 digits and commas: more than 7000 characters
    assert len(",".join(map(str, ids))) > ENDED_IDS_LIMIT
    assert await ended_b.reach(1) == [None]


@needs_server
async def test_after_the_listen_connection_comes_back_every_awaited_job_is_read_again(
    dsn: str, conn: Any, opened: list[PostgresStore]
) -> None:
    b = await open_store(dsn, opened)
    ended_b = Ended(b)
    listener = b._listener.conn
    assert listener is not None
    assert await conn.fetchval("SELECT pg_terminate_backend($1)", listener.get_server_pid())
    assert await ended_b.reach(1) == [None]  # ends committed while it was down were not heard


def test_ended_payloads_read_back_and_a_bad_one_means_any() -> None:
    assert parse_ended(ended_payload("abc123", [5, 17])) == ("abc123", [5, 17])
    assert parse_ended(ended_payload("abc123", list(range(5000)))) == ("abc123", None)
    assert parse_ended("ended:abc123:1,x") == ("abc123", None)


@needs_server
async def test_a_store_without_listen_has_no_listen_connection(
    dsn: str, conn: Any, opened: list[PostgresStore]
) -> None:
    await open_store(dsn, opened, listen=False, application_name="quiet")
    names = {
        r[0]
        for r in await conn.fetch(
            "SELECT application_name FROM pg_stat_activity WHERE datname = current_database()"
        )
    }
    assert "quiet" in names
    assert "quiet-listen" not in names


# --- claims, fencing -------------------------------------------------------------------------


@needs_server
async def test_four_stores_claiming_at_once_never_share_a_job(
    dsn: str, opened: list[PostgresStore]
) -> None:
    stores = [await open_store(dsn, opened, listen=False) for _ in range(4)]
    ids = set(await stores[0].at(T0).run(lambda st: _enqueue_many(st, 400)))

    async def drain(s: PostgresStore) -> list[int]:
        got: list[int] = []
        while True:
            claim = await s.at(T0).claim_due(T0 + LEASE, mutation_limit=7, action_limit=7)
            if not claim.jobs:
                return got
            got.extend(j.id for j in claim.jobs)

    results = await asyncio.gather(*(drain(s) for s in stores))
    claimed = [i for r in results for i in r]
    assert sorted(claimed) == sorted(ids)  # each exactly once
    assert sum(1 for r in results if r) >= 2  # they really did share the work


def _enqueue_many(st: Any, n: int) -> Any:
    from scheduler._ops.jobs import enqueue

    out: list[int] = []
    for _ in range(n):
        out.append((yield from enqueue(st, new_job())))
    return out


@needs_server
@pytest.mark.parametrize("plans", ["force_custom_plan", "force_generic_plan"])
async def test_fenced_single_job_statements_use_the_primary_key_not_the_lease_index(
    dsn: str, conn: Any, opened: list[PostgresStore], plans: str
) -> None:
    """With statistics taken while nothing was in progress (the usual case), a statement
    fenced on ``state = 'in_progress'`` must find its row by id, not scan the lease index
    (every job in progress): that made recording N completions cost O(N^2)."""
    store = await open_store(dsn, opened, listen=False)
    await store.at(T0).run(lambda st: _enqueue_many(st, 500))
    await conn.execute("VACUUM ANALYZE scheduler_jobs")
    await store.at(T0).claim_due(T0 + LEASE, mutation_limit=500, action_limit=0)
    await conn.execute(f"SET plan_cache_mode = {plans}")
    queries = positional_queries("postgres")
    fenced = ("finish_successes", "finish_retry", "finish_failed", "release", "extend_lease")
    values = {
        "job_id": 7, "run_count": 1, "now": T0, "next_ts": T0, "lease_until": T0,
        "job_ids": [7, 8], "run_counts": [1, 1],
    }  # fmt: skip
    for name in (*fenced, "reclaim_pending"):
        sql = queries[name].sql
        args = queries[name].values(values)
        plan = "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN {sql}", *args))
        assert "scheduler_jobs_pkey" in plan, plan
        assert "scheduler_jobs_lease" not in plan, plan
    sweep_query = queries["expired_leases"]
    sweep_args = sweep_query.values({"now": T0 + LEASE, "limit": 10})
    sweep = "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN {sweep_query.sql}", *sweep_args))
    assert "scheduler_jobs_lease" in sweep, sweep


@needs_server
async def test_a_claim_skips_rows_another_transaction_holds_instead_of_waiting(
    dsn: str, opened: list[PostgresStore]
) -> None:
    a = await open_store(dsn, opened, listen=False)
    b = await open_store(dsn, opened, listen=False)
    for i in range(10):
        await a.at(T0).enqueue(new_job(next_ts=T0 + i))
    async with a.transaction(T0 + 100) as tx:
        held = await tx.run(lambda st: claim_due(st, T0 + 200, 4, 0))
        assert [j.id for j in held.jobs] == [1, 2, 3, 4]
        # a's claim is not committed: b neither waits for it nor takes those rows.
        claim = await asyncio.wait_for(
            b.at(T0 + 100).claim_due(T0 + 200, mutation_limit=10, action_limit=0), WAIT
        )
        assert [j.id for j in claim.jobs] == [5, 6, 7, 8, 9, 10]


@needs_server
async def test_a_late_completion_after_a_reclaim_is_fenced_off(
    dsn: str, opened: list[PostgresStore]
) -> None:
    a = await open_store(dsn, opened)
    b = await open_store(dsn, opened)
    job_id = await a.at(T0).enqueue(new_job())
    [old] = (await a.at(T0).claim_due(T0 + LEASE, mutation_limit=1, action_limit=0)).jobs
    # a stalls; b's sweep finds the lease expired and runs the job again.
    assert (await b.at(T0 + LEASE + 1).reclaim_expired()).requeued == 1
    [new] = (await b.at(T0 + LEASE + 1).claim_due(T0 + 90, mutation_limit=1, action_limit=0)).jobs
    assert new.run_count == old.run_count + 1
    late = await a.at(T0 + LEASE + 2).complete([Outcome(old, ok=True, value_json='"late"')])
    assert (late.applied, late.stale) == (0, 1)
    assert not await a.at(T0 + LEASE + 2).extend_lease(old.id, old.run_count, T0 + 500)
    job = await b.at(T0).get_job(job_id)
    assert job is not None
    assert job.state is JobState.IN_PROGRESS
    assert job.result is None
    await b.at(T0 + LEASE + 3).complete([Outcome(new, ok=True, value_json='"fresh"')])
    job = await a.at(T0).get_job(job_id)
    assert job is not None
    assert (job.state, job.result) == (JobState.SUCCESS, "fresh")


# --- transactions ----------------------------------------------------------------------------


@needs_server
async def test_application_sql_uses_question_marks_and_reports_rows(
    dsn: str, opened: list[PostgresStore]
) -> None:
    store = await open_store(dsn, opened)
    async with store.transaction(T0) as tx:
        await tx.execute("CREATE TABLE notes (id BIGSERIAL PRIMARY KEY, body TEXT, n INT)")
        cur = await tx.execute(
            "INSERT INTO notes (body, n) VALUES (?, ?), (?, ?), ('what?', ?4)",
            ("a", 1, "b", 2),
        )
        assert (cur.rowcount, cur.lastrowid) == (3, None)
        await tx.executemany("INSERT INTO notes (body, n) VALUES (?, ?)", [("c", 3), ("d", 4)])
        cur = await tx.execute("UPDATE notes SET n = n + 10 WHERE n >= ? RETURNING id", (2,))
        assert cur.rowcount == 4
        assert len(await cur.fetchall()) == 4
    async with store.snapshot() as db:
        rows = await (await db.execute("SELECT body, n FROM notes ORDER BY id")).fetchall()
        assert [(r[0], r["n"]) for r in rows] == [
            ("a", 1),
            ("b", 12),
            ("what?", 12),
            ("c", 13),
            ("d", 14),
        ]
        with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
            await db.execute("INSERT INTO notes (body) VALUES ('no')")


@needs_server
async def test_a_statement_seen_before_reports_the_same_rows_and_counts(
    dsn: str, opened: list[PostgresStore]
) -> None:
    """The first run of a statement learns its shape; later runs take the one-trip path."""
    store = await open_store(dsn, opened)
    statements = [
        ("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v INT)", ()),
        ("INSERT INTO kv VALUES (?, ?), (?, ?) ON CONFLICT (k) DO NOTHING", ("a", 1, "b", 2)),
        ("UPDATE kv SET v = v + 1 WHERE v >= ?", (0,)),
        ("UPDATE kv SET v = v + 1 WHERE k = ? RETURNING k, v", ("a",)),
        ("SELECT k, v FROM kv WHERE v > ? ORDER BY k", (0,)),
        ("DELETE FROM kv WHERE k = ?", ("nothing",)),
    ]
    seen: list[list[tuple[list[tuple[Any, ...]], int]]] = []
    for _ in range(2):
        async with store.transaction(T0) as tx:
            run = []
            for sql, params in statements:
                cur = await tx.execute(sql, params)
                run.append(([tuple(r) for r in await cur.fetchall()], cur.rowcount))
            await tx.execute("DELETE FROM kv")
        seen.append(run)
    assert seen[0] == seen[1]
    assert [count for _, count in seen[0]] == [-1, 2, 2, 1, 2, 0]
    assert seen[0][3][0] == [("a", 3)]


@needs_server
async def test_named_parameters_are_refused(dsn: str, opened: list[PostgresStore]) -> None:
    from scheduler import InvalidArgument

    store = await open_store(dsn, opened)
    async with store.transaction(T0) as tx:
        with pytest.raises(InvalidArgument, match="sequence"):
            await tx.execute("SELECT ?", {"a": 1})  # type: ignore[arg-type]


@needs_server
async def test_a_transaction_aborted_by_a_caught_error_is_reported_not_half_committed(
    dsn: str, opened: list[PostgresStore]
) -> None:
    store = await open_store(dsn, opened)
    async with store.transaction(T0) as tx:
        await tx.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    with pytest.raises(StoreError, match="rolled back"):  # noqa: PT012 (raised as the transaction closes)
        async with store.transaction(T0) as tx:
            await tx.execute("INSERT INTO t VALUES (1)")
            with pytest.raises(asyncpg.UniqueViolationError):
                await tx.execute("INSERT INTO t VALUES (1), (1)")
    assert await count_rows(store, "t") == 0
    # A savepoint makes the same transaction usable again, as the driver does per mutation.
    async with store.transaction(T0) as tx:
        await tx.execute("INSERT INTO t VALUES (1)")
        await tx.savepoint("try")
        with pytest.raises(asyncpg.UniqueViolationError):
            await tx.execute("INSERT INTO t VALUES (1)")
        await tx.rollback_to("try")
        await tx.release("try")
        await tx.execute("INSERT INTO t VALUES (2)")
    assert await count_rows(store, "t") == 2


async def count_rows(store: PostgresStore, table: str) -> int:
    async with store.snapshot() as db:
        row = await (await db.execute(f"SELECT count(*) FROM {table}")).fetchone()
    return int(row[0])


@needs_server
async def test_a_nested_transaction_in_the_same_task_is_a_clear_error(
    dsn: str, opened: list[PostgresStore]
) -> None:
    store = await open_store(dsn, opened)
    async with store.transaction(T0):
        with pytest.raises(SchedulerError, match="already open"):
            async with store.transaction(T0):
                pass
        with pytest.raises(SchedulerError, match="already open"):
            await store.at(T0).enqueue(new_job())
        # Another task is another writer: it may open its own.
        job_id = await asyncio.create_task(store.at(T0).enqueue(new_job()))
    assert await store.at(T0).get_job(job_id) is not None


@needs_server
async def test_a_task_cancelled_mid_transaction_rolls_back_and_frees_its_connection(
    dsn: str, opened: list[PostgresStore]
) -> None:
    store = await open_store(dsn, opened, min_size=1, max_size=2)
    started = asyncio.Event()

    async def stuck() -> None:
        async with store.transaction(T0) as tx:
            await tx.execute("CREATE TABLE t (id INT)")
            await tx.run(lambda st: _enqueue_many(st, 1))
            started.set()
            await tx.execute("SELECT pg_sleep(60)")

    for _ in range(3):  # more times than the pool has connections: none may leak
        task = asyncio.create_task(stuck())
        await asyncio.wait_for(started.wait(), WAIT)
        started.clear()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    pool = store._pool
    assert pool.get_idle_size() == pool.get_size()
    async with store.snapshot() as db:
        gone = await (await db.execute("SELECT to_regclass('t') IS NULL")).fetchone()
    assert gone[0] is True
    assert await store.at(T0).list_jobs() == []


@needs_server
async def test_a_task_cancelled_while_waiting_for_a_row_lock_lets_go(
    dsn: str, conn: Any, opened: list[PostgresStore]
) -> None:
    store = await open_store(dsn, opened)
    job_id = await store.at(T0).enqueue(new_job(next_ts=T0 + 9))
    async with store.transaction(T0) as holder:
        await holder.execute("SELECT 1 FROM scheduler_jobs WHERE id = ? FOR UPDATE", (job_id,))
        waiter = asyncio.create_task(store.at(T0).cancel(job_id))
        # The waiter blocks on the row lock; cancel it there.
        await _until_blocked(conn)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
    job = await store.at(T0).get_job(job_id)
    assert job is not None
    assert job.state is JobState.PENDING
    assert await store.at(T0).cancel(job_id)


async def _until_blocked(conn: Any) -> None:
    """Return once a session of this database waits for a lock. The server has no event to
    await, so this asks every 10 ms (outside any transaction: a transaction would see one
    snapshot of pg_stat_activity)."""
    for _ in range(int(WAIT * 100)):
        n = await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'"
        )
        if n:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("no session started waiting for a lock")


# --- errors ----------------------------------------------------------------------------------


@needs_server
@pytest.mark.parametrize(
    ("sql", "params", "deterministic"),
    [
        ("INSERT INTO t VALUES (1), (1)", (), True),  # unique violation
        ("INSERT INTO t VALUES (NULL)", (), True),  # not null
        ("SELECT 'x'::int", (), True),  # invalid text representation
        ("SELECT 1 / 0", (), True),  # division by zero
        ("INSERT INTO t VALUES (?)", ("not an int",), True),  # a parameter of the wrong type
        ("SELECT * FROM no_such_table", (), False),
        ("SELEC 1", (), False),
    ],
)
async def test_constraint_and_data_errors_are_deterministic(
    dsn: str, opened: list[PostgresStore], sql: str, params: tuple[Any, ...], deterministic: bool
) -> None:
    store = await open_store(dsn, opened, listen=False)
    async with store.transaction(T0) as tx:
        await tx.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    with pytest.raises((asyncpg.PostgresError, asyncpg.InterfaceError)) as info:
        async with store.transaction(T0) as tx:
            await tx.execute(sql, params)
    assert store.is_deterministic_error(info.value) is deterministic


@needs_server
async def test_an_error_text_with_a_nul_is_still_recorded(
    dsn: str, opened: list[PostgresStore]
) -> None:
    store = await open_store(dsn, opened)
    job_id = await store.at(T0).enqueue(new_job(max_failures=1))
    [j] = (await store.at(T0).claim_due(T0 + LEASE, mutation_limit=1, action_limit=0)).jobs
    await store.at(T0).complete([Outcome(j, ok=False, error="ValueError: a\x00b")])
    job = await store.at(T0).get_job(job_id)
    assert job is not None
    assert (job.state, job.error) == (JobState.FAILED, "ValueError: a\ufffdb")


@needs_server
async def test_context_bytes_round_trip_through_bytea(
    dsn: str, opened: list[PostgresStore]
) -> None:
    store = await open_store(dsn, opened)
    blob = bytes(range(256)) * 3
    job_id = await store.at(T0).enqueue(
        new_job(context_type="bytes", context=blob, args_json=json.dumps({"k": "é"}))
    )
    job = await store.at(T0).get_job(job_id)
    assert job is not None
    assert job.context == blob
    assert job.args == {"k": "é"}
