"""The SQLite store's side that runs in a connection's thread: plain :mod:`sqlite3` calls.

:mod:`scheduler.stores.sqlite` owns the connections, the locks and the asyncio side; it
hands each of these functions to a connection's thread whole (one thread hop per call).
Opening and migrating a connection, the queries numbered for binding by position, driving
a sans-IO operation in a transaction, and the statements a :class:`SqliteTx` batches.
"""

from __future__ import annotations

import json
import sqlite3
import time
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..abc import Cursor
from ..errors import StoreError
from ..migrations import VERSION_TABLE, MigrationSet, check_applied
from ..sql import Numbered, Values, positional_queries
from ._base import announce_hold, migration_failed, migration_hold, version_table_ddl

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from ..store_types import NewJob, Op, Params, Q

T = TypeVar("T")

# --- opening ---------------------------------------------------------------------------------


def open_writer(
    conn: sqlite3.Connection,
    sets: list[MigrationSet],
    path: Path,
    synchronous: str,
    busy_timeout: float,
    check_pages: bool = True,
) -> None:
    """Check the file at ``path`` is a sound database (every page, unless ``check_pages`` is
    False: the file is as a store left it, see ``_sqlite_verified``), set the writer's
    pragmas (WAL mode, ``synchronous``, no automatic checkpoints) and apply the pending
    migrations of ``sets``."""
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    # Read-only checks first: a database we must refuse is left exactly as it was.
    # A damaged file is refused before anything reads or writes it, not found out later
    # by whichever query first touches the bad page.
    if check_pages:
        check_sound(conn)
    pending = [
        (s, check_applied(s.load("sqlite"), _applied(conn, s.component), str(path))) for s in sets
    ]
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise StoreError(f"{path}: could not switch to WAL mode (got {mode!r})")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.execute("PRAGMA foreign_keys = ON")
    # Commits never stop to checkpoint the WAL (a stall of up to tens of milliseconds on
    # a busy disk); a separate connection does it in the background (see SqliteStore._committed).
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute(version_table_ddl("REAL"))
    for _set, todo in pending:
        for m in todo:
            script = (
                "BEGIN IMMEDIATE;\n"
                f"INSERT INTO {VERSION_TABLE} (component, version, name, checksum, applied_at) "
                f"VALUES ('{m.component}', {m.version}, '{m.name}', '{m.checksum}', "
                f"{time.time()!r});\n"
                f"{m.sql}\n;"
            )
            try:
                conn.executescript(script)
                hold = migration_hold(m)
                if hold is not None:  # crash tests only: wait here, uncommitted, to be killed
                    announce_hold(hold)
                    while True:
                        time.sleep(3600)
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if m.version in _applied(conn, m.component):
                    continue  # another process applied it first
                raise migration_failed(str(path), m, exc) from exc


def check_sound(conn: sqlite3.Connection) -> None:
    """Raise ``sqlite3.DatabaseError`` unless ``PRAGMA quick_check`` finds every page sound
    (it reads each once: about 0.5 s per 100 MB from the page cache on a small machine)."""
    problems = [str(r[0]) for r in conn.execute("PRAGMA quick_check(3)").fetchall()]
    if problems != ["ok"]:
        found = " ".join(" ".join(problems).replace("*** in database main ***", "").split())
        raise sqlite3.DatabaseError(f"the file is damaged ({found})")


def _applied(conn: sqlite3.Connection, component: str) -> dict[int, str]:
    """The versions of ``component`` applied to this database, with their checksums."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (VERSION_TABLE,)
    ).fetchone()
    if not exists:
        return {}
    rows = conn.execute(
        f"SELECT version, checksum FROM {VERSION_TABLE} WHERE component = ?",  # noqa: S608 (the migrations table's name, a constant)
        (component,),
    ).fetchall()
    return {int(v): str(c) for v, c in rows}


def open_reader(conn: sqlite3.Connection, busy_timeout: float) -> None:
    """Set up a read-only connection (the reader, the checkpointer)."""
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    conn.execute("PRAGMA query_only = ON")


# --- operations and statements ----------------------------------------------------------

Queries = dict[str, Numbered]


def _json_lists(values: Values, positions: frozenset[int]) -> Values:
    """``values``, with the lists at ``positions`` as the JSON arrays ``json_each`` reads."""

    def adapted(params: Params) -> tuple[Any, ...]:
        return tuple(json.dumps(v) if i in positions else v for i, v in enumerate(values(params)))

    return adapted


@cache
def numbered_queries() -> Queries:
    """The SQLite queries numbered ``?n`` (bound by position, faster than by name)."""
    out: Queries = {}
    for name, q in positional_queries("sqlite", "?").items():
        lists = frozenset(i for i in range(len(q.names)) if f"json_each(?{i + 1})" in q.sql)
        out[name] = Numbered(q.sql, q.names, _json_lists(q.values, lists)) if lists else q
    return out


def drive(conn: sqlite3.Connection, queries: Queries, gen: Op[T]) -> T:
    """Run a sans-IO operation to completion on ``conn`` (called in the connection thread).
    The connection's rows are :class:`sqlite3.Row`: the operations read them by name."""
    try:
        q: Q = next(gen)
        while True:
            query = queries[q.name]
            if q.fetch == "many":
                batch = cast("Sequence[Params]", q.params)
                q = gen.send(conn.executemany(query.sql, map(query.values, batch)).rowcount)
                continue
            cur = conn.execute(query.sql, query.values(cast("Params", q.params)))
            if q.fetch == "all":
                result: Any = cur.fetchall()
            elif q.fetch == "one":
                result = cur.fetchone()
                cur.fetchall()
            else:
                result = cur.rowcount
            q = gen.send(result)
    except StopIteration as stop:
        value: T = stop.value
        return value


class WriterBusy(Exception):
    """Another connection holds the write lock: take the waiting path instead."""


def in_write_tx(conn: sqlite3.Connection, queries: Queries, gen: Op[T], *, wait: bool = True) -> T:
    """Run ``gen`` in one ``BEGIN IMMEDIATE`` transaction. With ``wait=False`` a write lock
    held elsewhere raises :class:`WriterBusy` (the caller has set a zero busy timeout)."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if wait:
            raise
        raise WriterBusy from exc
    try:
        result = drive(conn, queries, gen)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


def in_write_tx_now(
    conn: sqlite3.Connection, queries: Queries, gen: Op[T], busy_timeout: float
) -> T:
    """``in_write_tx`` without waiting for the write lock (raises :class:`WriterBusy`)."""
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        return in_write_tx(conn, queries, gen, wait=False)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")


def in_read_tx(conn: sqlite3.Connection, queries: Queries, gen: Op[T]) -> T:
    conn.execute("BEGIN")
    try:
        return drive(conn, queries, gen)
    finally:
        conn.execute("COMMIT")


def user_execute(conn: sqlite3.Connection, sql: str, params: Sequence[Any], many: bool) -> Cursor:
    cur = conn.cursor()
    cur.row_factory = sqlite3.Row
    if many:
        cur.executemany(sql, params)
        rows: list[Any] = []
    else:
        cur.execute(sql, params)
        rows = cur.fetchall()
    return Cursor(rows, cur.rowcount, cur.lastrowid)


def next_job_id(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM scheduler_jobs").fetchone()
    return int(row[0])


def _insert_buffered(
    conn: sqlite3.Connection, queries: Queries, now: float, jobs: list[tuple[int, NewJob]]
) -> None:
    insert_job, insert_args = queries["insert_job_with_id"], queries["insert_args"]
    job_rows = [
        {
            "id": job_id,
            "fn": j.fn,
            "kind": j.kind.value,
            "next_ts": j.next_ts,
            "max_failures": j.max_failures,
            "initial_backoff": j.initial_backoff,
            "backoff_base": j.backoff_base,
            "idempotent": int(j.idempotent),
            "on_complete": j.on_complete,
            "name": j.name,
            "schedule_name": j.schedule_name,
            "fire_ts": j.fire_ts,
            "jitter": j.jitter,
            "pace_key": j.pace_key,
            "pace_spacing": j.pace_spacing,
            "priority": j.priority,
            "run_timeout": j.timeout,
            "conc_key": j.concurrency_key,
            "conc_limit": j.concurrency_limit,
            "now": now,
        }
        for job_id, j in jobs
    ]
    arg_rows = [
        {
            "job_id": job_id,
            "args": j.args_json,
            "context_type": j.context_type,
            "context": j.context,
            "callback_of": None,
        }
        for job_id, j in jobs
    ]
    conn.executemany(insert_job.sql, map(insert_job.values, job_rows))
    conn.executemany(insert_args.sql, map(insert_args.values, arg_rows))


def after_inserts(
    conn: sqlite3.Connection,
    queries: Queries,
    now: float,
    jobs: list[tuple[int, NewJob]],
    fn: Callable[..., T],
    args: tuple[Any, ...],
) -> T:
    _insert_buffered(conn, queries, now, jobs)
    return fn(conn, *args)


def begin_then(conn: sqlite3.Connection, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    """``BEGIN IMMEDIATE``, then ``fn(conn, *args)``: a transaction's first statement."""
    conn.execute("BEGIN IMMEDIATE")
    return fn(conn, *args)


def run_sql(conn: sqlite3.Connection, sql: str) -> None:
    conn.execute(sql)


def rollback_if_open(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")
