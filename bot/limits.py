"""Limits Discord sets on what the bot sends, in one place."""

from __future__ import annotations

from typing import Final

MAX_MESSAGE: Final = 2000
"""Characters in one message's content."""

MAX_CHOICE_NAME: Final = 100
"""Characters in one autocomplete choice's label."""

MAX_CHOICES: Final = 25
"""Autocomplete choices in one answer."""

MAX_EMBED_TITLE: Final = 256
"""Characters in an embed's title (also a forum post's name, at most 100: see below)."""

MAX_EMBED_DESCRIPTION: Final = 4096
"""Characters in an embed's description."""

MAX_EMBED_TOTAL: Final = 6000
"""Characters in all of a message's embeds together (titles, descriptions, footers…)."""

MAX_EMBEDS: Final = 10
"""Embeds in one message."""

MAX_THREAD_NAME: Final = 100
"""Characters in a thread's (a forum post's) name."""

MAX_FORUM_TAGS: Final = 5
"""Tags on one forum post."""

MAX_FILES: Final = 10
"""Files attached to one message."""

MAX_ANNOUNCEMENT_ID: Final = 2**53 - 1
"""The largest announcement number an ``id`` option (or a dashboard address) takes: the largest
integer Discord's API spec allows as an integer option's ``max_value`` (Int53: ±(2**53 − 1),
what a JavaScript client holds exactly)."""

# --- what members type -------------------------------------------------------------------------

MAX_TEXT_OPTION: Final = 100
"""Characters in a short text a member types: a time, a repeat rule, an ``until``, a
template's name, a role to ping, an event's place. The commands' text options hold at most
this many (Discord refuses more before crier sees them), and the dashboard refuses a field
holding more before reading it; the parsers read no time or rule longer than this."""

MAX_ZONE_NAME: Final = 64
"""Characters in a time zone's name as typed (the longest IANA name has 32)."""

MAX_TAGS_TEXT: Final = 200
"""Characters in a forum post's tags, typed separated by commas."""

SHOWN_BACK: Final = 60
"""The most characters of what a member typed that an answer repeats (:func:`clip`)."""


def clip(text: str, limit: int = SHOWN_BACK) -> str:
    """``text`` as an answer repeats it: on one line (each run of spaces and line breaks one
    space, other control characters left out), at most ``limit`` characters, cut with ``…``.
    The work is bounded by ``limit``, not by the text's length."""
    head = text[: limit * 4 + 8]  # enough for `limit` characters once spaces are collapsed
    shown = " ".join("".join(c for c in head if c.isprintable() or c.isspace()).split())
    if len(shown) <= limit and len(head) == len(text):
        return shown
    return shown[: limit - 1].rstrip() + "…"
