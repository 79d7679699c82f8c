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
