"""A PostgreSQL store that can't be opened says whether trying again may help: a server that
can't be reached for now (nothing listening, a database not created yet, a host name that
did not resolve, a server starting up) is :class:`StoreUnavailable`, and the same store
opens once the database is there; settings the server refuses (an unknown role, a wrong
password, an address it can't parse) are :class:`StoreMisconfigured`.

Against the test server where it can be done for real; the failures it can't be made to
produce here (it trusts every password; no host name may be resolved offline) are the
exceptions asyncpg raises for them, classified as the store classifies them."""

from __future__ import annotations

import secrets
import socket
import ssl

import pytest

from scheduler import StoreError, StoreMisconfigured, StoreUnavailable

asyncpg = pytest.importorskip("asyncpg")

from scheduler.stores.postgres import PostgresStore, connect_failure  # noqa: E402
from tests.scheduler.pg import drop_database, with_database  # noqa: E402
from tests.scheduler.stores import require_postgres  # noqa: E402


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_nothing_listening_is_unavailable() -> None:
    store = PostgresStore(f"postgresql://postgres@127.0.0.1:{free_port()}/none", min_size=1)
    with pytest.raises(StoreUnavailable, match="cannot connect to PostgresStore"):
        await store.open()


async def test_a_database_not_created_yet_is_unavailable_and_opens_once_it_is() -> None:
    server = require_postgres()
    name = f"crier_test_later_{secrets.token_hex(6)}"
    store = PostgresStore(with_database(server, name), listen=False)
    try:
        with pytest.raises(StoreUnavailable, match=f'database "{name}" does not exist'):
            await store.open()
        conn = await asyncpg.connect(server)
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()
        await store.open()  # the same store, tried again
        async with store.snapshot() as db:
            row = await (await db.execute("SELECT current_database()")).fetchone()
            assert tuple(row) == (name,)
    finally:
        await store.close()
        await drop_database(server, name)


async def test_a_role_the_server_does_not_know_is_misconfigured() -> None:
    server = require_postgres()
    role = f"crier_no_such_role_{secrets.token_hex(4)}"
    dsn = server.replace("postgres@", f"{role}@", 1)
    assert role in dsn
    with pytest.raises(StoreMisconfigured, match=f'role "{role}" does not exist'):
        await PostgresStore(dsn, listen=False).open()


async def test_an_address_it_cannot_parse_is_misconfigured() -> None:
    with pytest.raises(StoreMisconfigured, match="cannot connect") as refused:
        await PostgresStore("postgresql://postgres:s3cret@127.0.0.1:port/none").open()
    assert "s3cret" not in str(refused.value)
    with pytest.raises(StoreMisconfigured, match="sslmode"):
        await PostgresStore("postgresql://postgres@127.0.0.1/none?sslmode=often").open()


@pytest.mark.parametrize(
    ("failure", "kind"),
    [
        # What asyncpg raises for a host name that did not resolve (a compose service not
        # up yet, a DNS outage).
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), StoreUnavailable),
        (socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"),
         StoreUnavailable),
        (ConnectionRefusedError(111, "Connect call failed"), StoreUnavailable),
        (ConnectionResetError(104, "Connection reset by peer"), StoreUnavailable),
        (TimeoutError(), StoreUnavailable),
        (asyncpg.CannotConnectNowError("the database system is starting up"), StoreUnavailable),
        (asyncpg.TooManyConnectionsError("sorry, too many clients already"), StoreUnavailable),
        (asyncpg.ConnectionDoesNotExistError("connection was closed"), StoreUnavailable),
        (asyncpg.InvalidCatalogNameError('database "crier" does not exist'), StoreUnavailable),
        (asyncpg.InvalidPasswordError('password authentication failed for user "crier"'),
         StoreMisconfigured),
        (asyncpg.InvalidAuthorizationSpecificationError("no pg_hba.conf entry"),
         StoreMisconfigured),
        (asyncpg.InsufficientPrivilegeError("permission denied for database"),
         StoreMisconfigured),
        (ssl.SSLCertVerificationError("certificate verify failed"), StoreMisconfigured),
        (asyncpg.ClientConfigurationError("sslmode"), StoreMisconfigured),
        (ValueError("invalid literal for int() with base 10: 'port'"), StoreMisconfigured),
        (asyncpg.InternalServerError("something else"), StoreError),
    ],
)  # fmt: skip
def test_each_failure_to_connect_is_classified(failure: BaseException, kind: type) -> None:
    assert connect_failure(failure) is kind
