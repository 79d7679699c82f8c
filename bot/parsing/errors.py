"""What the parsers refuse: the error they raise, and the limits they hold input to."""

from __future__ import annotations

from datetime import timedelta
from typing import Final


class InputError(ValueError):
    """The user's text could not be used; ``str(error)`` is a friendly message for them."""


MAX_INPUT_LENGTH: Final = 100
"""The longest ``when`` or duration text that is read at all."""

MAX_AHEAD: Final = timedelta(days=5 * 365 + 1)
"""How far ahead a time may be (about 5 years)."""
