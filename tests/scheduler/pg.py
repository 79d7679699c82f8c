"""PostgreSQL databases for tests, uniquely named (``crier_test_…``) so that test runs (and
parallel runs by other people) never see each other.

Creating a database costs 0.2-0.5 s here, and migrating it to head another 0.7-1.4 s of
server time: most tests instead take one from this worker process's pool
(:class:`DatabasePool`), which gives it back as it was before the test. A pooled database is
kept in one of two states, chosen by the helper:

- *as new*: no schema object at all (:func:`fresh_database`, :func:`fresh_test_database`);
- *at head and empty*: the scheduler's migrations and the given application sets applied,
  every table empty, every sequence at its start (:func:`postgres_factory`; the bot's
  ``database_url``), so that a store opening it has nothing to apply.

Before the next test takes it (not at the end of the test: a fixture torn down after the
database's may still use it) the pool ends every session connected to the database (a failed
test's store left open: its session advisory locks and LISTENs die with it), compares the
database's catalog with the one it had in that state (:func:`catalog`), drops what the test
created itself (tables, views, sequences, functions, types, triggers, schemas), empties the
tables and restarts the sequences. Anything else the test changed (a column, a version row,
a setting of the database, statistics) and the database is dropped instead, the next test
getting a new one. Tests that must see a database nobody ever used (the migration and
upgrade tests) say ``pooled=False``; :func:`create_database` and :func:`drop_database` are
never pooled. The pool's databases are dropped at the end of the test session (or, failing
that, when the process exits); those of a run killed before are dropped by the next run on
this machine (:func:`sweep_leftovers`: each says which process's pool it is).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import re
import secrets
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from scheduler.migrations import VERSION_TABLE, MigrationSet
from scheduler.stores.postgres import PostgresStore, migrate_connection
from tests.scheduler.stores import StoreFactory, require_postgres

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

PREFIX = "crier_test_"


def with_database(dsn: str, database: str) -> str:
    """``dsn`` pointing at ``database`` instead."""
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path="/" + database))


async def create_database(dsn: str) -> str:
    """Create a fresh database on the server of ``dsn``; return its name."""
    name = PREFIX + secrets.token_hex(6)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
        # A commit returns without waiting for its WAL to reach the disk: visible to every
        # other session at once all the same; only a crash of the server itself (which no
        # test makes) could lose it. The tests' thousands of commits stop waiting on fsync.
        await conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    finally:
        await conn.close()
    return name


async def drop_database(dsn: str, name: str) -> None:
    """Drop ``name``, first ending any session still connected to it (a store a failed test
    left open)."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = $1 AND pid <> pg_backend_pid()",
            name,
        )
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


# --- the pool ------------------------------------------------------------------------------

# Everything of a database a test can change that a reset must find as it was: one row per
# object (kind, qualified name, definition). Table rows, sequence values and sessions are
# reset without looking; the version table's rows are compared too (see catalog()).
_CATALOG = r"""
WITH ns AS (
    SELECT oid, nspname FROM pg_namespace
    WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema'
)
SELECT 'schema', quote_ident(nspname),
       pg_get_userbyid(n.nspowner) || ' ' || coalesce(n.nspacl::text, '')
FROM pg_namespace n WHERE n.oid IN (SELECT oid FROM ns)
UNION ALL
SELECT 'rel', quote_ident(ns.nspname) || '.' || quote_ident(c.relname),
       c.relkind::text || ' ' || c.relpersistence::text || ' '
       || coalesce(c.reloptions::text, '') || ' '
       || coalesce(c.relacl::text, '') || ' ' || c.relrowsecurity || ' '
       || CASE WHEN c.relkind IN ('r', 'p', 'm') THEN c.relpages || ' ' || c.reltuples
               WHEN c.relkind IN ('v') THEN pg_get_viewdef(c.oid) ELSE '' END
FROM pg_class c JOIN ns ON ns.oid = c.relnamespace
UNION ALL
SELECT 'col', a.attrelid::regclass::text || '.' || quote_ident(a.attname),
       a.attnum || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull || ' '
       || a.attidentity::text || a.attgenerated::text || ' '
       || coalesce(a.attcollation::text, '') || ' '
       || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN ns ON ns.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attnum > 0
UNION ALL
SELECT 'index', i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN ns ON ns.oid = c.relnamespace
UNION ALL
SELECT 'constraint', quote_ident(ns.nspname) || '.' || quote_ident(k.conname) || ' ON '
       || coalesce(nullif(k.conrelid, 0)::regclass::text, '')
       || coalesce(nullif(k.contypid, 0)::regtype::text, ''),
       pg_get_constraintdef(k.oid)
FROM pg_constraint k JOIN ns ON ns.oid = k.connamespace
UNION ALL
SELECT 'trigger', quote_ident(t.tgname) || ' ON ' || t.tgrelid::regclass::text,
       t.tgenabled::text || ' ' || pg_get_triggerdef(t.oid)
FROM pg_trigger t WHERE NOT t.tgisinternal
UNION ALL
SELECT 'rule', quote_ident(r.rulename) || ' ON ' || r.ev_class::regclass::text, ''
FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class JOIN ns ON ns.oid = c.relnamespace
WHERE r.rulename <> '_RETURN'
UNION ALL
SELECT 'routine', quote_ident(ns.nspname) || '.' || quote_ident(p.proname) || '('
       || pg_get_function_identity_arguments(p.oid) || ')',
       p.prokind::text || ' ' || md5(coalesce(p.prosrc, '')) || ' '
       || coalesce(p.proconfig::text, '')
FROM pg_proc p JOIN ns ON ns.oid = p.pronamespace
UNION ALL
SELECT 'type', quote_ident(ns.nspname) || '.' || quote_ident(t.typname), t.typtype::text
FROM pg_type t JOIN ns ON ns.oid = t.typnamespace
WHERE t.typrelid = 0 AND t.typcategory <> 'A'
UNION ALL
SELECT 'sequence', s.seqrelid::regclass::text,
       s.seqtypid::regtype::text || ' ' || s.seqstart || ' ' || s.seqincrement || ' '
       || s.seqmax || ' ' || s.seqmin || ' ' || s.seqcache || ' ' || s.seqcycle
FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid JOIN ns ON ns.oid = c.relnamespace
UNION ALL
SELECT 'policy', quote_ident(p.polname) || ' ON ' || p.polrelid::regclass::text, ''
FROM pg_policy p
UNION ALL
SELECT 'extension', quote_ident(extname), extversion FROM pg_extension
UNION ALL
SELECT 'event trigger', quote_ident(evtname), evtevent || ' ' || evtenabled::text
FROM pg_event_trigger
UNION ALL
SELECT 'publication', quote_ident(pubname), '' FROM pg_publication
UNION ALL
SELECT 'large objects', '', count(*)::text FROM pg_largeobject_metadata
UNION ALL
SELECT 'database', '', d.datallowconn || ' ' || d.datconnlimit || ' ' || d.datistemplate
       || ' ' || coalesce(d.datacl::text, '')
FROM pg_database d WHERE d.datname = current_database()
UNION ALL
SELECT 'setting', coalesce(s.setrole::text, ''), s.setconfig::text
FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
WHERE d.datname = current_database()
"""

Catalog = frozenset[tuple[str, str, str]]


async def catalog(conn: Any) -> Catalog:
    """What a reset compares (see ``_CATALOG``), with the version table's rows."""
    rows = {(str(k), str(n), str(d)) for k, n, d in await conn.fetch(_CATALOG)}
    if ("rel", f"public.{VERSION_TABLE}") in {(k, n) for k, n, _ in rows}:
        for r in await conn.fetch(
            f"SELECT component, version, name, checksum FROM {VERSION_TABLE}"
        ):
            rows.add(("version", f"{r[0]}/{r[1]}", f"{r[2]} {r[3]}"))
    return frozenset(rows)


# What a test created itself, dropped by kind (anything else changed: the database goes).
_DROPS = {
    "trigger": "DROP TRIGGER IF EXISTS {} CASCADE",
    "rule": "DROP RULE IF EXISTS {} CASCADE",
    "policy": "DROP POLICY IF EXISTS {}",
    "rel v": "DROP VIEW IF EXISTS {} CASCADE",
    "rel m": "DROP MATERIALIZED VIEW IF EXISTS {} CASCADE",
    "rel r": "DROP TABLE IF EXISTS {} CASCADE",
    "rel p": "DROP TABLE IF EXISTS {} CASCADE",
    "rel f": "DROP FOREIGN TABLE IF EXISTS {} CASCADE",
    "rel S": "DROP SEQUENCE IF EXISTS {} CASCADE",
    "rel i": "DROP INDEX IF EXISTS {} CASCADE",
    "rel I": "DROP INDEX IF EXISTS {} CASCADE",
    "rel c": "DROP TYPE IF EXISTS {} CASCADE",
    "routine": "DROP ROUTINE IF EXISTS {} CASCADE",
    "type d": "DROP DOMAIN IF EXISTS {} CASCADE",
    "type": "DROP TYPE IF EXISTS {} CASCADE",
    "extension": "DROP EXTENSION IF EXISTS {} CASCADE",
    "event trigger": "DROP EVENT TRIGGER IF EXISTS {}",
    "publication": "DROP PUBLICATION IF EXISTS {}",
    "schema": "DROP SCHEMA IF EXISTS {} CASCADE",
}
_DROP_ORDER = list(_DROPS)


def _drop_statements(extra: Catalog) -> list[str] | None:
    """The statements dropping what ``extra`` (rows the baseline lacks) names, in an order
    that works; None when some extra row is not an object a test can have created whole."""
    statements: list[tuple[int, str]] = []
    for kind, name, detail in extra:
        key = kind
        if kind in ("rel", "type"):
            key = f"{kind} {detail.split(' ', 1)[0]}"
            if key not in _DROPS and kind == "type":
                key = "type"
        if key in _DROPS:
            statements.append((_DROP_ORDER.index(key), _DROPS[key].format(name)))
        elif kind not in ("col", "index", "constraint", "sequence", "rel", "version"):
            return None  # a changed setting, …: only a new database will do
        # Columns, indexes, constraints of a new relation go with it, the version table's
        # rows with it (a database kept as new): the catalog is compared again after.
    return [s for _, s in sorted(statements)]


def _key(migrations: Sequence[MigrationSet] | None) -> tuple[tuple[str, str], ...] | None:
    if migrations is None:
        return None
    return tuple((m.component, str(m.root)) for m in migrations)


@dataclass
class PooledDatabase:
    server: str
    """The dsn of the server's maintenance database (the pool connects there to create,
    drop and end sessions)."""
    name: str
    migrations: Sequence[MigrationSet] | None
    """None: kept as new; else kept at the head of the scheduler's and these migrations."""
    baseline: Catalog = frozenset()
    tables: list[str] = field(default_factory=list)
    sequences: list[tuple[str, int]] = field(default_factory=list)

    @property
    def dsn(self) -> str:
        return with_database(self.server, self.name)


class DatabasePool:
    """This process's pooled databases, by server and state (see the module's doc)."""

    # A table whose file grew past this is truncated rather than DELETEd from: it would
    # leave the next tests that many pages of dead rows to scan.
    TRUNCATE_ABOVE = 1 << 20

    def __init__(self) -> None:
        self._idle: dict[tuple[str, Any], list[PooledDatabase]] = {}
        self.created: dict[str, PooledDatabase] = {}
        self.resets = 0
        """Databases given back by reset (for the pool's own tests)."""
        self._swept: set[str] = set()

    async def acquire(
        self, server: str, migrations: Sequence[MigrationSet] | None = None
    ) -> PooledDatabase:
        idle = self._idle.get((server, _key(migrations)), [])
        while idle:
            db = idle.pop()
            if await self._reset_or_discard(db):
                return db
        if server not in self._swept:
            self._swept.add(server)
            await sweep_leftovers(server)
        db = PooledDatabase(server, await create_database(server), migrations)
        self.created[db.name] = db
        try:
            await _mark(server, db.name)
            conn = await asyncpg.connect(db.dsn)
            try:
                if migrations is not None:
                    await migrate_connection(conn, migrations)
                db.baseline = await catalog(conn)
            finally:
                await conn.close()
        except BaseException:
            await self.discard(db)
            raise
        db.tables = sorted(
            n
            for k, n, d in db.baseline
            if k == "rel" and d[0] in "rp" and n != f"public.{VERSION_TABLE}"
        )
        db.sequences = sorted((n, int(d.split()[1])) for k, n, d in db.baseline if k == "sequence")
        return db

    async def release(self, db: PooledDatabase) -> None:
        """Keep ``db`` for the next test, which resets it first: by then every fixture of
        this test is torn down (a bot still running now, its fixture torn down after the
        database's, would connect again)."""
        self._idle.setdefault((db.server, _key(db.migrations)), []).append(db)

    async def _reset_or_discard(self, db: PooledDatabase) -> bool:
        """Reset ``db``, or drop it when it can't be."""
        try:
            ok = await self._reset(db)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            ok = False
        if ok:
            self.resets += 1
        else:
            await self.discard(db)
        return ok

    async def discard(self, db: PooledDatabase) -> None:
        self.created.pop(db.name, None)
        await drop_database(db.server, db.name)

    async def _end_sessions(self, db: PooledDatabase) -> bool:
        """End every session on ``db`` (waiting for each to be gone, so its advisory locks
        and LISTENs are); False if some would not go or a transaction is left prepared."""
        admin = await asyncpg.connect(db.server)
        try:
            for _ in range(5):
                await admin.execute(
                    "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
                    "WHERE datname = $1 AND pid <> pg_backend_pid()",
                    db.name,
                )
                left = await admin.fetchval(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", db.name
                )
                if not left:
                    break
            else:
                return False
            prepared = await admin.fetchval(
                "SELECT count(*) FROM pg_prepared_xacts WHERE database = $1", db.name
            )
            return not prepared
        finally:
            await admin.close()

    async def _reset(self, db: PooledDatabase) -> bool:
        if not await self._end_sessions(db):
            return False
        conn = await asyncpg.connect(db.dsn)
        try:
            now = await catalog(conn)
            if now != db.baseline:
                if db.baseline - now:
                    return False  # something of the baseline was changed or dropped
                drops = _drop_statements(now - db.baseline)
                if drops is None:
                    return False
                for statement in drops:
                    with contextlib.suppress(asyncpg.PostgresError):
                        await conn.execute(statement)
                if await catalog(conn) != db.baseline:
                    return False
            await self._empty(conn, db)
        finally:
            await conn.close()
        return await self._end_sessions(db)  # nothing came back meanwhile

    async def _empty(self, conn: Any, db: PooledDatabase) -> None:
        """Every table emptied (DELETE: far cheaper than TRUNCATE on the tiny tables of a
        test, the triggers off), every sequence back at its start, in one transaction."""
        if not db.tables and not db.sequences:
            return
        big = {
            r[0]
            for r in await conn.fetch(
                "SELECT t FROM unnest($1::text[]) t WHERE pg_relation_size(t::regclass) > $2",
                db.tables,
                self.TRUNCATE_ABOVE,
            )
        }
        sql = ["BEGIN", "SET LOCAL session_replication_role = replica"]
        sql += [f"DELETE FROM {t}" for t in db.tables if t not in big]
        if big:
            sql.append(f"TRUNCATE {', '.join(sorted(big))}")
        if db.sequences:
            sql.append(
                "SELECT " + ", ".join(f"setval('{s}', {start}, false)" for s, start in db.sequences)
            )
        sql.append("COMMIT")
        await conn.execute(";\n".join(sql))

    async def close(self) -> None:
        """Drop every database this pool created (concurrently)."""
        dbs = list(self.created.values())
        self.created.clear()
        self._idle.clear()
        await asyncio.gather(
            *(drop_database(db.server, db.name) for db in dbs), return_exceptions=True
        )


def _owner() -> tuple[str, int]:
    return socket.gethostname(), os.getpid()


_MARK = "crier test pool: host {} pid {}"
_MARK_RE = re.compile(r"^crier test pool: host (\S+) pid (\d+)$")


async def _mark(server: str, name: str) -> None:
    """Say on the database which process's pool it is (see :func:`sweep_leftovers`)."""
    conn = await asyncpg.connect(server)
    try:
        mark = _MARK.format(*_owner()).replace("'", "")
        await conn.execute(f"COMMENT ON DATABASE \"{name}\" IS '{mark}'")
    finally:
        await conn.close()


async def sweep_leftovers(server: str) -> list[str]:
    """Drop the pooled databases of this machine's processes that are gone (a run killed
    before it could drop its pool): a database is only dropped when the process named on it
    no longer exists on this host and no session is connected to it."""
    host = socket.gethostname()
    conn = await asyncpg.connect(server)
    try:
        rows = await conn.fetch(
            "SELECT d.datname, shobj_description(d.oid, 'pg_database') AS mark "
            "FROM pg_database d WHERE d.datname LIKE $1 AND NOT EXISTS ("
            "SELECT 1 FROM pg_stat_activity a WHERE a.datname = d.datname)",
            PREFIX + "%",
        )
    finally:
        await conn.close()
    dropped = []
    for name, mark in rows:
        found = _MARK_RE.match(mark or "")
        if found is None or found[1] != host or _alive(int(found[2])):
            continue
        with contextlib.suppress(OSError, asyncpg.PostgresError):
            await drop_database(server, name)
            dropped.append(name)
    return dropped


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


POOL = DatabasePool()


@atexit.register
def drop_pool() -> None:
    """Drop the pool's databases: at the end of the test session (``pytest_sessionfinish``
    in the conftests) and, should that not run, when the process exits."""
    if POOL.created:
        asyncio.run(POOL.close())


@contextlib.asynccontextmanager
async def pooled_database(
    dsn: str, migrations: Sequence[MigrationSet] | None = None
) -> AsyncIterator[str]:
    """The dsn of a database of the server at ``dsn`` from :data:`POOL`: as new
    (``migrations`` None) or at the head of the scheduler's and ``migrations``, empty."""
    db = await POOL.acquire(dsn, migrations)
    try:
        yield db.dsn
    finally:
        await POOL.release(db)


# --- the helpers ---------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def fresh_database(dsn: str, *, pooled: bool = True) -> AsyncIterator[str]:
    """The dsn of a database as new on the server of ``dsn``: from the pool, or (``pooled``
    False: a test that must see a database nobody used) created, and dropped afterwards."""
    if pooled:
        async with pooled_database(dsn) as url:
            yield url
        return
    name = await create_database(dsn)
    try:
        yield with_database(dsn, name)
    finally:
        await drop_database(dsn, name)


async def postgres_factory(dsn: str) -> StoreFactory:
    """Stores on a pooled database of the server at ``dsn``, at the scheduler's head and
    empty (cleanup gives it back)."""
    db = await POOL.acquire(dsn, ())

    async def cleanup() -> None:
        await POOL.release(db)

    return StoreFactory("postgres", lambda: PostgresStore(db.dsn), cleanup)


@contextlib.asynccontextmanager
async def fresh_test_database(
    needs: str = "PostgreSQL tests need a server", *, pooled: bool = True
) -> AsyncIterator[str]:
    """A database as new on the test server (see :func:`fresh_database`); without a server
    configured the test is skipped (``needs`` says what for)."""
    async with fresh_database(require_postgres(needs), pooled=pooled) as dsn:
        yield dsn
