"""``python -m bot export --guild ID [--out FILE]``: one server's announcements and templates
as the ``/export`` file, for an operator.

Read from the database (``DATABASE_URL``) in one transaction, whether the bot runs or not,
without starting a scheduler (nothing is claimed or run); the channel and role names the
document carries are asked of Discord over REST (the bot's token; no gateway connection).
Every live announcement is written, whatever channel it posts in (an operator sees them
all). ``--out -`` writes the document to standard output.
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import discord

from scheduler import StoreError

from ..announcements import SEND_FN, AnnouncementState, ExportRows
from ..announcements.transfer import MAX_EXPORTED
from ..config import ConfigError, Settings, load_settings
from ..db import BotDb
from ..requests.export_doc import document_bytes, export_document
from .cli import guild_id_argument, missing_database
from .crier import bot_migrations, make_store
from .endpoints import use_discord_endpoints

if TYPE_CHECKING:
    import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--guild", required=True, metavar="ID", type=guild_id_argument, help="the server's id"
    )
    parser.add_argument(
        "--out",
        metavar="FILE",
        help="where to write it (default: crier-ID-DATE.json here; '-': standard output)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        settings = load_settings()
    except ConfigError as exc:
        return _fail(str(exc), 2)
    if (missing := missing_database(settings)) is not None:
        return _fail(missing, 1)
    try:
        data, count = asyncio.run(export_guild(settings, args.guild))
    except discord.NotFound:
        return _fail(f"Discord knows no server {args.guild} (or the bot is not in it)", 1)
    except discord.HTTPException as exc:
        return _fail(f"Discord refused: {exc}", 1)
    except (StoreError, OSError) as exc:
        return _fail(f"cannot use the database: {exc}", 1)
    if args.out == "-":
        sys.stdout.buffer.write(data + b"\n")
        return 0
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    out = Path(args.out or f"crier-{args.guild}-{day}.json")
    out.write_bytes(data)
    print(f"Exported {count} announcements of server {args.guild} to {out}.")
    return 0


async def export_guild(settings: Settings, guild_id: int) -> tuple[bytes, int]:
    """The export document of ``guild_id`` (as ``/export`` writes it) and how many
    announcements it holds."""
    found = await _rows(settings, guild_id)
    use_discord_endpoints(settings.api_base, settings.gateway_url)
    client = discord.Client(intents=discord.Intents.none())
    try:
        await client.login(settings.token)
        guild = await client.fetch_guild(guild_id, with_counts=False)
        for channel in await guild.fetch_channels():
            guild._channels[channel.id] = channel  # what export_document looks names up in
        doc = export_document(guild, found, datetime.now(UTC))
    finally:
        await client.close()
    return document_bytes(doc), len(found.announcements)


async def _rows(settings: Settings, guild_id: int) -> ExportRows:
    """What ``Announcements.export_rows`` reads, read on the store alone: no scheduler is
    started, so nothing is claimed or run by this process."""
    store = make_store(settings)
    await store.open([bot_migrations()])
    try:
        async with store.transaction(time.time()) as tx:
            rows = BotDb(tx)
            live = await rows.live_announcements(guild_id, MAX_EXPORTED)
            images = await rows.live_images(guild_id)
            templates = await rows.templates(guild_id)
            events = await rows.event_specs([a.id for a in live])
            next_fires: dict[int, datetime | None] = {}
            for a in live:
                nxt: float | None = None
                if a.state == AnnouncementState.SCHEDULED:
                    if a.schedule_name is None:
                        nxt = a.first_ts
                    else:
                        nxt = await rows.next_occurrence(a.schedule_name, SEND_FN)
                next_fires[a.id] = None if nxt is None else datetime.fromtimestamp(nxt, UTC)
    finally:
        await store.close()
    live.reverse()  # oldest first, as /export
    return ExportRows(live, next_fires, images, templates, events)


def _fail(message: str, status: int) -> int:
    print(f"crier: {message}", file=sys.stderr)
    return status
