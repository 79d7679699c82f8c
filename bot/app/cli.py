"""``crier [SUBCOMMAND] …`` (or ``python -m bot [SUBCOMMAND] …``): the command line.

No subcommand, or ``run``, runs the bot as it always did. The others work on the database
alone and never connect to Discord. An unknown subcommand or option is refused with the
usage and exit status 2 before anything is opened: nothing starts, no database is touched.

A subcommand is one :class:`Subcommand` in :data:`SUBCOMMANDS`: its name, a line of help,
a function adding its arguments to its parser, and a function running it with the parsed
arguments (returning the exit status). Its module is imported only when it runs, so one
subcommand's imports cost the others nothing.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Settings

Run = Callable[[argparse.Namespace], int]
AddArguments = Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True, slots=True)
class Subcommand:
    """One subcommand of ``python -m bot``.

    ``module`` is imported when the subcommand runs or its arguments are added; it holds
    ``add_arguments(parser)`` and ``run(args) -> int`` (named by ``add_arguments`` and
    ``run`` if they are called otherwise).
    """

    name: str
    help: str
    description: str
    module: str
    run: str = "run"
    add_arguments: str | None = "add_arguments"

    def _function(self, attr: str) -> Callable[..., object]:
        fn: Callable[..., object] = getattr(importlib.import_module(self.module), attr)
        return fn

    def configure(self, parser: argparse.ArgumentParser) -> None:
        if self.add_arguments is not None:
            self._function(self.add_arguments)(parser)

    def __call__(self, args: argparse.Namespace) -> int:
        status = self._function(self.run)(args)
        if not isinstance(status, int):
            raise TypeError(f"{self.run} returned {status!r}, not an exit status")
        return status


SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand(
        "run",
        "run the bot (the default with no subcommand)",
        "Run the bot: settings from the environment and .env, until SIGINT or SIGTERM.",
        "bot.app.start",
        run="run_from_args",
        add_arguments=None,
    ),
    Subcommand(
        "migrate",
        "move a stopped installation from SQLite to PostgreSQL",
        "Copy every table of a stopped installation (the bot's and the scheduler's) from a "
        "SQLite file into an empty PostgreSQL database, in one transaction, then check the "
        "counts and a checksum of every table. The source is only read. Never connects to "
        "Discord.",
        "bot.app.transfer",
    ),
    Subcommand(
        "backup",
        "copy the database (DATABASE_URL) while the bot runs",
        "Copy the SQLite database named by DATABASE_URL to PATH with SQLite's online backup "
        "(the bot may keep running), then check the copy's integrity. On PostgreSQL, print "
        "the pg_dump command to run instead. Never connects to Discord.",
        "bot.app.backup",
    ),
    Subcommand(
        "export",
        "write one server's announcements and templates as the /export file",
        "Write one server's live announcements and templates as the document /export makes "
        "(version 2, docs/export.schema.json), to FILE or standard output. Reads the "
        "database (DATABASE_URL) whether the bot runs or not, starting no scheduler; asks "
        "Discord (REST, the bot's token) for the server's channel and role names.",
        "bot.app.guild_export",
    ),
    Subcommand(
        "import",
        "import an /export file into one server (a dry run unless --confirm)",
        "Import FILE (an /export document, versions 1 and 2) into one server, as /import "
        "does and as its owner: channels and roles found by name there, each row checked as "
        "/schedule checks it. Without --confirm a dry run: every row (created, refused and "
        "why, already here) printed, nothing written; exit status 1 if a row is refused. "
        "With --confirm all of it in one transaction, or nothing if any row is refused. "
        "Asks Discord (REST, the bot's token) for the server; writes the database "
        "(DATABASE_URL) while the bot runs or not, running no job here (the bot runs them).",
        "bot.app.guild_import",
    ),
    Subcommand(
        "health",
        "ask the running bot's /healthz (HTTP_ADDRESS) whether it is healthy",
        "Ask the bot running here for GET /healthz at HTTP_ADDRESS (read from the environment "
        "and .env as the bot reads it; an address on every interface is asked on loopback): "
        "exit status 0 when it answers 200, 1 otherwise, with the reasons it gives. The "
        "container image's health check. Loads nothing else of crier.",
        "bot.app.health",
    ),
    Subcommand(
        "limits",
        "show or change one server's limits",
        "Show one server's limits, or raise or lower them (each option a number, or "
        "'default' for the instance's setting). Works on the database (DATABASE_URL) alone, "
        "whether the bot runs or not; never connects to Discord.",
        "bot.app.guild_limits",
    ),
)
"""Every subcommand, in the order the usage lists them. Add one here."""


def missing_database(database: Settings | str) -> str | None:
    """Why an operator's command that reads or writes a server's announcements (or limits)
    can't run on ``database`` (the settings, or ``DATABASE_URL`` alone): a SQLite file that
    does not exist (a typo in DATABASE_URL, or a bot never started) is refused rather than
    made empty. None when it may run."""
    from ..config import database_kind

    url = database if isinstance(database, str) else database.database_url
    kind, where = database_kind(url)
    if kind == "sqlite" and not Path(where).exists():
        return (
            f"no database at {where} (DATABASE_URL): start the bot once to create it, or "
            "point DATABASE_URL at the bot's database"
        )
    return None


def guild_id_argument(raw: str) -> int:
    """An argparse ``type`` for a server's id (``--guild ID``): a Discord snowflake, or the
    reason it is not one."""
    from ..config import ConfigError, Snowflake

    try:
        value: int = Snowflake()("--guild", raw)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


PROG = "crier"
"""The command's name in its usage and help: the wheel's console script."""


def parser(prog: str = PROG, *, only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser. Each subcommand's arguments come from its module; with
    ``only``, only that subcommand's module is imported (the others are listed by name and
    help, and would refuse arguments of their own)."""
    top = argparse.ArgumentParser(
        prog=prog,
        description="crier: durable scheduled announcements for Discord. With no subcommand, "
        "runs the bot.",
    )
    subs = top.add_subparsers(dest="command", metavar="SUBCOMMAND", title="subcommands")
    for sub in SUBCOMMANDS:
        sub_parser = subs.add_parser(sub.name, help=sub.help, description=sub.description)
        if only is None or sub.name == only:
            sub.configure(sub_parser)
        sub_parser.set_defaults(subcommand=sub)
    return top


def main(argv: Sequence[str] | None = None, *, prog: str = PROG) -> int:
    """Parse ``argv`` (default: the process's arguments) and run its subcommand; ``prog``
    is the command's name as the usage shows it (``python -m bot`` when run that way)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    # The subcommand is the first word that is no option (the top level has only -h): its
    # module alone is imported to parse the rest (``crier health`` stays light).
    named = next((a for a in args_list if not a.startswith("-")), "")
    try:
        args = parser(prog, only=named).parse_args(args_list)
    except SystemExit as exc:  # --help (0), or refused with the usage (2)
        return exc.code if isinstance(exc.code, int) else 2
    sub: Subcommand = getattr(args, "subcommand", None) or SUBCOMMANDS[0]
    return sub(args)
