"""``/healthz`` while the database hangs: a read held back by a lock that another
connection or process holds (never the shared server's other databases: the test's own).
The probe answers 503 within its timeout (made small here) while the read still waits, a
second probe waits on that same read rather than queueing another, and once the lock goes
the probe is ``200 ok`` again."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from typing import TYPE_CHECKING

import aiohttp
import pytest

from bot.web import observability
from tests.bot.test_http import get
from tests.scheduler.stores import require_postgres

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

    from bot.app import Crier
    from tests.bot.conftest import CrierFactory

TIMEOUT = 0.05
"""The probe's database timeout while the reads are held (2 s in production): each probe
then waits it out."""

HEALTHY_TIMEOUT = 10.0
"""The probe's database timeout otherwise: a read on a loaded machine may take longer than
``TIMEOUT``, and the healthy probes' verdict must not depend on the machine's speed."""

HOLD_WAL_READ_LOCKS = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 5, 123, os.SEEK_SET)
print("locked", flush=True)
sys.stdin.read()
"""
"""Hold every reader's slot of an SQLite WAL index (the ``-shm`` file keeps its locks at byte
120 + n: write 0, checkpoint 1, recovery 2, readers 3 to 7) until stdin closes. A read
transaction that another process begins meanwhile retries (for about 10 s, then fails with
"locking protocol"); POSIX locks only exclude other processes, hence a process."""


@contextlib.contextmanager
def sqlite_reads_held(db: Path) -> Iterator[None]:
    """New reads of ``db`` (an open SQLite database in WAL mode) wait while this is held."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_WAL_READ_LOCKS, f"{db}-shm"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None
    assert holder.stdout is not None
    try:
        assert holder.stdout.readline() == "locked\n"
        yield
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
        holder.stdout.close()


@contextlib.asynccontextmanager
async def postgres_reads_held(dsn: str) -> AsyncIterator[None]:
    """Reads of ``bot_meta`` in database ``dsn`` (the test's own) wait while this is held: a
    connection of the test's own holds the table locked in ACCESS EXCLUSIVE mode."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        async with conn.transaction():
            await conn.execute("LOCK TABLE bot_meta IN ACCESS EXCLUSIVE MODE")
            yield
    finally:
        await conn.close()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # A probe that waited for the database would hang: this bound turns that into a failure.
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        yield session


async def probes_while_held(
    http: aiohttp.ClientSession, app: Crier, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two probes while the database's reads are held, at the short timeout (the caller
    releases them after)."""
    monkeypatch.setattr(observability, "DATABASE_TIMEOUT", TIMEOUT)
    first = await get(http, app, "/healthz")
    assert first[:2] == (503, f"database unreachable: no answer within {TIMEOUT:g}s\n")
    status, text, _ = await get(http, app, "/healthz")  # the same read is still waiting
    assert status == 503
    assert text.startswith(f"database unreachable: no answer within {TIMEOUT:g}s (a read has ")
    monkeypatch.setattr(observability, "DATABASE_TIMEOUT", HEALTHY_TIMEOUT)


async def test_healthz_answers_in_time_while_sqlite_is_locked(
    crier_factory: CrierFactory,
    tmp_path: Path,
    http: aiohttp.ClientSession,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(observability, "DATABASE_TIMEOUT", HEALTHY_TIMEOUT)
    app = await crier_factory(http_address=("127.0.0.1", 0))
    assert (await get(http, app, "/healthz"))[:2] == (200, "ok\n")
    with sqlite_reads_held(tmp_path / "crier.db"):
        await probes_while_held(http, app, monkeypatch)
    assert (await get(http, app, "/healthz"))[:2] == (200, "ok\n")


@pytest.mark.postgres
async def test_healthz_answers_in_time_while_postgresql_is_locked(
    crier_factory: CrierFactory, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.scheduler.pg import fresh_database

    monkeypatch.setattr(observability, "DATABASE_TIMEOUT", HEALTHY_TIMEOUT)
    async with fresh_database(require_postgres()) as url:
        app = await crier_factory(http_address=("127.0.0.1", 0), database_url=url)
        assert (await get(http, app, "/healthz"))[:2] == (200, "ok\n")
        async with postgres_reads_held(url):
            await probes_while_held(http, app, monkeypatch)
        assert (await get(http, app, "/healthz"))[:2] == (200, "ok\n")
        await app.close()  # before its database is dropped
