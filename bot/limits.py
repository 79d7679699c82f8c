"""Limits Discord sets on what the bot sends, in one place."""

from __future__ import annotations

from typing import Final

MAX_MESSAGE: Final = 2000
"""Characters in one message's content."""

MAX_CHOICE_NAME: Final = 100
"""Characters in one autocomplete choice's label."""

MAX_CHOICES: Final = 25
"""Autocomplete choices in one answer."""
