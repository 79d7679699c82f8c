"""What the parsers refuse: the error they raise, and the limits they hold input to."""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from ..limits import MAX_TEXT_OPTION


class InputError(ValueError):
    """The user's text could not be used; ``str(error)`` is a friendly message for them.

    ``reason`` names the kind of refusal for the ones said again in the member's language
    (:mod:`.languages`): ``gap``, ``past``, ``too_far``, ``needs_time``,
    ``repeat_needs_time``; ``details`` holds what such a message shows. Empty otherwise.
    """

    def __init__(self, message: str, *, reason: str = "", **details: object) -> None:
        super().__init__(message)
        self.reason = reason
        self.details = details


MAX_INPUT_LENGTH: Final = MAX_TEXT_OPTION
"""The longest ``when``, ``repeat`` or duration text that is read at all (what a command's
text option holds)."""

MAX_AHEAD: Final = timedelta(days=5 * 365 + 1)
"""How far ahead a time may be (about 5 years)."""
