"""The process: settings in, the discord.py client, the scheduler and every layer wired
together, run until stopped. ``python -m bot`` calls :func:`main` (the command line,
:mod:`bot.app.cli`: no subcommand runs the bot)."""

from .cli import main
from .crier import (
    Crier,
    CrierBot,
    RedactingFormatter,
    RefusedWriteFilter,
    bot_migrations,
    make_store,
    run,
    setup_logging,
)

__all__ = [
    "Crier",
    "CrierBot",
    "RedactingFormatter",
    "RefusedWriteFilter",
    "bot_migrations",
    "main",
    "make_store",
    "run",
    "setup_logging",
]
