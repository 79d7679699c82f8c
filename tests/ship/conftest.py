"""What the shipping tests share: the fake Discord and its guild (as the bot's own tests make
them), and the environment of a command run as a self-hoster runs it, apart from this tree."""

from __future__ import annotations

import os

from bot.config import SETTINGS
from tests.bot.conftest import fake, world

__all__ = ["fake", "outside_env", "world"]

CRIER_SETTINGS = frozenset(s.env for s in SETTINGS)


def outside_env(**extra: str) -> dict[str, str]:
    """The test process's environment without any crier setting and without ``PYTHONPATH``
    (nothing of this source tree is importable through it), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in CRIER_SETTINGS | {"PYTHONPATH"}}
    env.update(extra)
    return env
