"""What the parsers refuse: the error they raise, and the limits they hold input to."""

from __future__ import annotations

import contextlib
from datetime import timedelta
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterator

from ..limits import MAX_TEXT_OPTION


class ConcernsField(Exception):
    """An error about what was typed in one field of a request: ``field`` names it, as the
    command's option is named (``when``, ``repeat``, ``until``, ``title``, ``message``,
    ``channel``, ``mention``, ``timezone``, ``event_location``, ``event_minutes``,
    ``event_channel``, ``name``…); None: about the request as a whole (the member's rights,
    a server's limit). A form shows the error at that field; a command's answer ignores it.

    Mixed into every error a member's input can cause (:class:`InputError`, the requests'
    ``Refusal``, the templates' refusal: it comes before their other base); set where the
    field is known, by the error's
    maker (``InputError(…, field="until")``) or around a check (:func:`concerning`)."""

    field: str | None = None


@contextlib.contextmanager
def concerning(field: str) -> Iterator[None]:
    """Errors raised inside the block are about ``field`` (:class:`ConcernsField`), unless
    they already name one (the closest check knows best)."""
    try:
        yield
    except ConcernsField as exc:
        if exc.field is None:
            exc.field = field
        raise


class InputError(ConcernsField, ValueError):
    """The user's text could not be used; ``str(error)`` is a friendly message for them.

    ``reason`` names the kind of refusal for the ones said again in the member's language
    (:mod:`.languages`): ``gap``, ``past``, ``too_far``, ``needs_time``,
    ``repeat_needs_time``; ``details`` holds what such a message shows. Empty otherwise.
    ``field``: the field it is about (:class:`ConcernsField`).
    """

    def __init__(
        self, message: str, *, reason: str = "", field: str | None = None, **details: object
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.details = details
        self.field = field


MAX_INPUT_LENGTH: Final = MAX_TEXT_OPTION
"""The longest ``when``, ``repeat`` or duration text that is read at all (what a command's
text option holds)."""

MAX_AHEAD: Final = timedelta(days=5 * 365 + 1)
"""How far ahead a time may be (about 5 years)."""
