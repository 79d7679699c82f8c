"""``python -m bot limits --guild ID [--announcements N] …``: one server's limits, shown, and
raised or lowered by an operator.

Works on the database (``DATABASE_URL``) alone, never on Discord, whether the bot runs or
not: the values are read by every instance at each check. Each option is a number in the
limit's unit, or ``default`` for the instance's setting; with none, the limits are shown.
A bad value is refused with the reason and nothing is written.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from scheduler import SqliteStore, Store, StoreError

from ..announcements import DEFAULT, LIMIT_OPTIONS, BadLimit, changed_limits, limit_lines
from ..config import ConfigError, load_setting
from ..db import BotDb
from ..models import LIMIT_SETTINGS, GuildLimits, Limits
from .cli import guild_id_argument, missing_database

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--guild", required=True, metavar="ID", type=guild_id_argument, help="the server's id"
    )
    for option in LIMIT_OPTIONS:
        unit = f" in {option.unit}" if option.unit else ""
        parser.add_argument(
            f"--{option.name}",
            metavar="N",
            dest=option.field,
            help=f"instead of {LIMIT_SETTINGS[option.field]}{unit}; {DEFAULT!r}: the setting",
        )


def run(args: argparse.Namespace) -> int:
    given = {
        o.name: getattr(args, o.field) for o in LIMIT_OPTIONS if getattr(args, o.field) is not None
    }
    try:
        url, limits = instance_limits()
    except ConfigError as exc:
        return _fail(str(exc), 2)
    if (missing := missing_database(url)) is not None:
        return _fail(missing, 1)
    try:
        lines = asyncio.run(apply(_store(url), args.guild, given, limits))
    except BadLimit as exc:
        return _fail(f"{exc}; nothing was changed", 2)
    except (StoreError, OSError) as exc:
        return _fail(f"cannot use the database: {exc}", 1)
    verb = "set" if given else "are"
    print(f"Limits of server {args.guild} {verb}:")
    for line in lines:
        print(f"  {line}")
    return 0


async def apply(store: Store, guild_id: int, given: Mapping[str, str], limits: Limits) -> list[str]:
    """Set ``given`` (by option name) for the guild in ``store``'s database, in one
    transaction (nothing when empty); its limits, in words."""
    from .crier import bot_migrations

    await store.open([bot_migrations()])
    try:
        async with store.transaction(time.time()) as tx:
            rows = BotDb(tx)
            override = await rows.guild_limits(guild_id)
            if given:
                override = changed_limits(override or GuildLimits(guild_id), given)
                await rows.save_guild_limits(override, time.time())
    finally:
        await store.close()
    return limit_lines(limits.for_guild(override), override)


def instance_limits() -> tuple[str, Limits]:
    """``DATABASE_URL`` and the instance's limits, read from the environment and ``.env``
    as the bot reads them (no token needed)."""
    limits = Limits(
        max_announcements=load_setting("max_announcements"),
        max_templates=load_setting("max_templates"),
        files_max_bytes=load_setting("guild_files_max_bytes"),
        min_repeat_seconds=load_setting("min_repeat"),
        commands_per_minute=load_setting("commands_per_minute"),
    )
    url: str = load_setting("database_url")
    return url, limits


def _store(url: str) -> Store:
    if url.startswith(("postgresql://", "postgres://")):
        from scheduler.stores.postgres import PostgresStore

        return PostgresStore(url)
    return SqliteStore(Path(url[len("sqlite:///") :]))


def _fail(message: str, status: int) -> int:
    print(f"crier: {message}", file=sys.stderr)
    return status
