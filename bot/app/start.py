"""``python -m bot run`` (and ``python -m bot`` alone): the settings are read before the bot
is imported, so a start refused for its settings (one line, exit status
:data:`CONFIG_ERROR`) costs only the settings' own imports, not discord.py's and the bot's
(a second or more of CPU on a small machine)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

CONFIG_ERROR = 2
"""The exit status of a start refused for its settings (an unreadable one, or a database
that refuses its connection settings)."""


def fatal(message: str, status: int = 1) -> int:
    print(f"crier: {message}", file=sys.stderr)
    return status


def run_from_args(args: argparse.Namespace) -> int:
    """Read the settings (refused: one line, :data:`CONFIG_ERROR`), then run the bot with
    them (:func:`bot.app.crier.main`)."""
    from ..config import ConfigError, load_settings

    try:
        settings = load_settings()
    except ConfigError as exc:
        return fatal(str(exc), CONFIG_ERROR)
    from .crier import main

    return main(settings=settings)
