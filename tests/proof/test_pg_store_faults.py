"""The PostgreSQL store when a connection of its own is killed at a chosen point.

``tests/proof/test_faults.py`` kills every backend of the bot's database at random points of
a running bot; these two tests kill one pooled connection of a store at the two points where
that run showed the store mis-reporting what happened:

- inside a transaction whose body is failing: the caller must get its own error back, not
  an error about rolling back a connection that no longer exists;
- between a transaction's COMMIT and the return of its connection to the pool: the
  transaction committed, so it must not be reported as failed (a caller would tell its user
  "nothing was saved", and the user would do it again).

Each kill is ``pg_terminate_backend`` of that one backend of the test's own database.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pytest

from tests.scheduler.stores import postgres_dsn
from tests.support.processes import until

asyncpg = pytest.importorskip("asyncpg")

from scheduler.stores import postgres as pg  # noqa: E402  (after the importorskip)
from scheduler.stores.postgres import PostgresStore  # noqa: E402
from tests.scheduler.pg import fresh_test_database  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.postgres

DEADLINE = 10.0


@pytest.fixture
async def dsn() -> AsyncIterator[str]:
    async with fresh_test_database() as dsn:
        yield dsn


def closed(conn: Any) -> bool:
    """The connection is closed (a pool's proxy is detached once its connection closed)."""
    try:
        return bool(conn.is_closed())
    except asyncpg.InterfaceError:
        return True


@pytest.fixture
async def kill(dsn: str) -> AsyncIterator[Any]:
    """``await kill(conn)``: terminate the backend of ``conn`` (of the test's database only),
    then wait until the client has seen its connection close."""
    base = postgres_dsn()
    assert base is not None
    database = dsn.rsplit("/", 1)[1]
    killer = await asyncpg.connect(base)

    async def kill(conn: Any) -> None:
        pid = conn.get_server_pid()
        gone = await killer.fetchval(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid = $1 AND datname = $2",
            pid,
            database,
        )
        assert gone, f"backend {pid} of {database} was not terminated"
        await until(lambda: closed(conn), DEADLINE, "the client to see its connection close")

    try:
        yield kill
    finally:
        await killer.close()


@pytest.fixture
async def table(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE TABLE t (x INTEGER)")
    finally:
        await conn.close()


async def rows(dsn: str) -> list[int]:
    conn = await asyncpg.connect(dsn)
    try:
        return [r["x"] for r in await conn.fetch("SELECT x FROM t ORDER BY x")]
    finally:
        await conn.close()


class BodyFailed(Exception):
    pass


async def test_connection_killed_inside_a_failing_transaction_raises_the_callers_error(
    dsn: str, kill: Any, table: None
) -> None:
    store = PostgresStore(dsn, listen=False, max_size=1)
    await store.open()
    try:
        with pytest.raises(BodyFailed):  # noqa: PT012 (the body's own error, out through the transaction)
            async with store.transaction(time.time()) as tx:
                await tx.execute("INSERT INTO t (x) VALUES (1)")
                await kill(tx._conn)
                raise BodyFailed
        # The pool replaced the connection: the store goes on.
        async with store.transaction(time.time()) as tx:
            await tx.execute("INSERT INTO t (x) VALUES (2)")
    finally:
        await store.close()
    assert await rows(dsn) == [2]


async def test_connection_killed_after_its_commit_leaves_the_transaction_committed(
    dsn: str, kill: Any, table: None
) -> None:
    if not pg._CAN_SKIP_RESET:
        pytest.skip("this asyncpg always resets sessions itself: the store has no reset hook")
    store = PostgresStore(dsn, listen=False, max_size=1)
    reset = store._reset_session
    armed = False

    async def reset_after_a_kill(conn: Any) -> None:
        """The pool's reset on release, of a connection killed just after its COMMIT."""
        if armed:
            await kill(conn)
        await reset(conn)

    store._reset_session = reset_after_a_kill  # type: ignore[method-assign]  # before open
    await store.open()
    try:
        armed = True
        async with store.transaction(time.time()) as tx:
            await tx.execute("INSERT INTO t (x) VALUES (1)")
        armed = False
        assert await rows(dsn) == [1]
        async with store.transaction(time.time()) as tx:
            await tx.execute("INSERT INTO t (x) VALUES (2)")
    finally:
        await store.close()
    assert await rows(dsn) == [1, 2]
