"""A throwaway PostgreSQL database per benchmark run, on the server a dsn names."""

from __future__ import annotations

import contextlib
import secrets
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import asyncpg

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

PREFIX = "crier_bench_"
"""The name every benchmark database starts with (so a leftover is easy to spot)."""


def with_database(dsn: str, database: str) -> str:
    """``dsn`` with its database replaced by ``database``."""
    return urlunsplit(urlsplit(dsn)._replace(path="/" + database))


@contextlib.asynccontextmanager
async def fresh_database(base: str) -> AsyncIterator[str]:
    """A new database on the server of ``base`` (its dsn) for one run, dropped afterwards;
    yields its dsn."""
    name = PREFIX + secrets.token_hex(6)
    conn = await asyncpg.connect(base)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    try:
        yield with_database(base, name)
    finally:
        conn = await asyncpg.connect(base)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()
