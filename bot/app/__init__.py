"""The process: settings in, the discord.py client, the scheduler and every layer wired
together, run until stopped. ``crier`` (and ``python -m bot``) calls :func:`main` (the
command line, :mod:`bot.app.cli`: no subcommand runs the bot).

The names below are loaded when first used: the command line (``crier health``, the
container's health check every 30 s, or ``crier --help``) imports :mod:`bot.app.cli` without
the Discord client and everything it brings (about 1.5 s of CPU)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {name: ".crier" for name in __all__} | {"main": ".cli"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value
