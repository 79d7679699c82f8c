"""``python -m bot import FILE --guild ID [--confirm]``: an ``/export`` file imported into one
server, for an operator.

The file is read by the reader ``/import`` uses and every row planned by its planner, with
the operator acting as the server's owner (every right a member can have; the bot's own
permissions are checked as for ``/import``). The server's channels, active threads, roles,
owner and the bot's own member are asked of Discord over REST (the bot's token; no gateway
connection), so channels and roles map by name exactly as ``/import`` maps them.

Without ``--confirm`` it is a dry run: each row is printed (what it would create, what is
refused and why, what is already here) and nothing is written. With ``--confirm`` every row
is written in one transaction through the path ``/import`` confirms with, or none is. The
scheduler is opened without its driver (:meth:`scheduler.Scheduler.open`): the jobs an
import writes are run by the bot, never by this process.

Exit status: 0 when nothing is refused (imported, or would be; or nothing to import), 1 when
a row is refused or Discord or the database refuse, 2 when the file (or the settings) can't
be used at all; each failure is one ``crier: …`` line on standard error.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import discord

from scheduler import Clock, StoreError, SystemClock

from ..announcements import ImportDone
from ..config import ConfigError, Settings, load_settings
from ..parsing.display import stamp_time
from ..render import expected_answer
from ..requests.export_doc import MAX_IMPORT_BYTES, DocumentRefused, read_document
from ..requests.importing import ImportPlan, RowOutcome, plan_import
from ..requests.request import Requester
from .cli import guild_id_argument, missing_database
from .crier import Crier
from .endpoints import use_discord_endpoints

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from ..requests.export_doc import Document

make_clock: Callable[[], Clock] = SystemClock
"""The clock an import plans and writes by (tests give theirs)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="the .json file /export made ('-': stdin)")
    parser.add_argument(
        "--guild", required=True, metavar="ID", type=guild_id_argument, help="the server's id"
    )
    parser.add_argument(
        "--confirm",
        action="store_true",
        help="apply it (all of it, or nothing if any row is refused); without it, a dry run",
    )


def run(args: argparse.Namespace) -> int:
    try:
        settings = load_settings()
    except ConfigError as exc:
        return _fail(str(exc), 2)
    try:
        raw = _read(args.file)
    except OSError as exc:
        return _fail(f"cannot read {args.file}: {exc.strerror or exc}", 2)
    try:
        doc = read_document(raw)
    except DocumentRefused as exc:
        return _fail(f"{args.file}: {_plain_text(str(exc))}", 2)
    if (missing := missing_database(settings)) is not None:
        return _fail(missing, 1)
    try:
        done = asyncio.run(import_guild(settings, args.guild, doc, confirm=args.confirm))
    except discord.NotFound:
        return _fail(f"Discord knows no server {args.guild} (or the bot is not in it)", 1)
    except discord.HTTPException as exc:
        return _fail(f"Discord refused: {exc}", 1)
    except (StoreError, OSError, sqlite3.DatabaseError) as exc:
        return _fail(f"cannot use the database: {exc}", 1)
    except Exception as exc:
        said = expected_answer(exc)  # the import's own refusals (changed meanwhile, a limit)
        if said is None:
            raise
        return _fail(f"nothing was imported: {_plain_text(said)}", 1)
    print("\n".join(report(done, args.file)))
    if done.plan.refused:
        count = len(done.plan.refused)
        return _fail(f"nothing was imported: {count} row{'s' * (count != 1)} refused (above)", 1)
    return 0


@dataclass(frozen=True, slots=True)
class Imported:
    """What an import found (and did): the server as Discord shows it, its plan, and what
    was written (None: nothing, a dry run or a refused import)."""

    guild: discord.Guild
    plan: ImportPlan
    done: ImportDone | None


async def import_guild(
    settings: Settings, guild_id: int, doc: Document, *, confirm: bool
) -> Imported:
    """Plan ``doc`` into server ``guild_id`` as its owner; with ``confirm``, apply it all if
    no row is refused."""
    use_discord_endpoints(settings.api_base, settings.gateway_url)
    client = discord.Client(intents=discord.Intents.none())
    # The bot's own objects (the same job registrations, limits and checks as it runs with),
    # without its web server; nothing of it connects, and its scheduler is only opened.
    crier = Crier(replace(settings, http_address=None, client_secret=None), clock=make_clock())
    try:
        await client.login(settings.token)
        guild, owner = await _server(client, guild_id)
        await crier.sched.open()
        announcements = crier.bot.announcements
        plan = await plan_import(announcements, crier.clock, Requester(guild, owner), doc)
        done = None
        if confirm and not plan.refused and plan.anything:
            done = await announcements.import_all(
                guild.id, plan.rows, plan.new_templates, actor_id=owner.id
            )
        return Imported(guild, plan, done)
    finally:
        try:
            await crier.close()
        finally:
            await client.close()


async def _server(client: discord.Client, guild_id: int) -> tuple[discord.Guild, discord.Member]:
    """The server over REST, with what ``/import`` finds in the gateway's cache: its roles,
    channels and active threads, the bot's member (``guild.me``) and its owner's."""
    guild = await client.fetch_guild(guild_id, with_counts=False)
    for channel in await guild.fetch_channels():
        guild._channels[channel.id] = channel
    for thread in await guild.active_threads():
        guild._add_thread(thread)
    if client.user is None:
        raise RuntimeError("expected a logged-in client")
    guild._add_member(await guild.fetch_member(client.user.id))
    if guild.owner_id is None:
        raise RuntimeError("expected the server's owner_id (Discord always sends it)")
    owner = await guild.fetch_member(guild.owner_id)
    guild._add_member(owner)
    return guild, owner


def report(found: Imported, file: str) -> list[str]:
    """The lines printed for an import: a summary, then every row (refused rows first)."""
    plan, done = found.plan, found.done
    rows = plan.announcements + plan.templates
    skipped = sum(r.skipped is not None for r in rows)
    where = f"server {found.guild.name!r} ({found.guild.id})"
    here = f", {skipped} already here" if skipped else ""
    if done is not None:
        head = (
            f"Imported {_count(len(done.created), 'announcement')} and "
            f"{_count(len(done.templates), 'template')} from {file} into {where}{here}."
        )
    elif plan.refused:
        head = (
            f"Nothing can be imported from {file} into {where}: {len(plan.refused)} of the "
            f"{len(rows)} rows would be refused. An import applies all of it or nothing: fix "
            "those rows (or the server) and run it again."
        )
    elif not plan.anything:
        head = f"Nothing to import from {file} into {where}: " + (
            f"all {len(rows)} rows are already here." if rows else "it has no rows."
        )
    else:
        head = (
            f"Dry run of {file} into {where}: {len(plan.rows) + len(plan.new_templates)} to "
            f"create{here}. Nothing was written; add --confirm to apply it."
        )
    ordered = sorted(rows, key=lambda r: r.refused is None)
    return [head, *(_row(found.guild, r) for r in ordered)]


def _row(guild: discord.Guild, r: RowOutcome) -> str:
    if r.refused is not None:
        what, words = "refused", r.refused
    elif r.skipped is not None:
        what, words = "already", r.skipped
    else:
        what, words = "create ", r.created or ""
    return f"  {what}  {r.label}: {_plain_text(words, guild)}"


_MARKUP = re.compile(r"<(#|@&)(\d+)>|<t:(-?\d+)(?::[tTdDfFR])?>")


def _plain_text(text: str, guild: discord.Guild | None = None) -> str:
    """Discord's markup read out for a terminal: ``<#id>`` as ``#name``, ``<@&id>`` as
    ``@name``, ``<t:…>`` as a UTC time."""

    def plain(match: re.Match[str]) -> str:
        kind, ident, ts = match.groups()
        if ts is not None:
            when = stamp_time(ts)
            return match.group(0) if when is None else when.strftime("%Y-%m-%d %H:%M UTC")
        if guild is None:
            return match.group(0)
        if kind == "#":
            channel = guild.get_channel_or_thread(int(ident))
            return match.group(0) if channel is None else f"#{channel.name}"
        role = guild.get_role(int(ident))
        return match.group(0) if role is None else f"@{role.name}"

    return _MARKUP.sub(plain, text)


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' * (n != 1)}"


def _read(name: str) -> bytes:
    """The file's bytes, at most one more than an import takes (the reader refuses more)."""
    if name == "-":
        return sys.stdin.buffer.read(MAX_IMPORT_BYTES + 1)
    with Path(name).open("rb") as f:
        return f.read(MAX_IMPORT_BYTES + 1)


def _fail(message: str, status: int) -> int:
    print(f"crier: {message}", file=sys.stderr)
    return status
