"""Why a post failed, said in the reader's language.

The reasons are recorded in English (the database, the logs and the history keep one text);
what a member reads in ``/info`` and ``/list``, and what the log channel's report says to
everyone, is the reason said again in the language in effect (:func:`bot.i18n.speaking`):
Discord's refusals by their code, a rate limit, a delivery given up, missed or skipped. A
reason of another shape (Discord's own text for an unknown code) is shown as recorded.
"""

from __future__ import annotations

import re
from typing import Final

from ..announcements.deliveries import AWAY
from ..announcements.places import CANCELED as PLACE_CANCELED
from ..i18n import catalogs, current_locale, t, tn
from .failures import KNOWN_CODES
from .webhooks import (
    MAX_WEBHOOKS,
    MISSING_PERMISSIONS,
    NO_MANAGE_WEBHOOKS,
    UNKNOWN_WEBHOOK,
    WEBHOOK_GONE,
    WEBHOOKS_FULL,
)

_CODED: Final = re.compile(r"(?P<known>.+) \((?P<code>[0-9]+)\)")
_RATE: Final = re.compile(r"rate limited for (?P<n>[0-9]+)s")
_GAVE_UP: Final = re.compile(
    r"may not have been delivered: (?P<inner>.+) \(gave up after (?P<n>[0-9]+) attempts\)"
)
_INTERRUPTED: Final = re.compile(
    r"may not have been delivered: an attempt was interrupted (?P<n>[0-9]+)s ago, longer "
    r"than Discord remembers a nonce, so it was not sent again"
)
_MISSED: Final = re.compile(
    r"missed: it was due (?P<n>[0-9]+) minutes earlier, while the bot was offline"
)
_EVENTS_FULL: Final = re.compile(
    r"the server has (?P<n>[0-9]+) scheduled events, the most Discord allows"
)
PIN_REFUSED: Final = "Missing Permissions: the bot needs Pin Messages in the channel (50013)"
"""Why a pin or an unpin was refused for lack of Pin Messages (as recorded)."""
DELETE_REFUSED: Final = "Missing Permissions: the bot may not delete that message (50013)"
"""Why the deletion of a post was refused (as recorded)."""
PAUSED_REASON: Final = "due while the announcement was paused"
"""Why a time that came due while its announcement was paused was skipped (as recorded)."""


def _known(code: int) -> str | None:
    """Discord's refusal with this code, in words, in the reader's language."""
    return {
        10003: t("Unknown Channel: the channel was deleted"),
        50083: t("Thread archived or locked: nothing can be posted in it"),
        160005: t("Thread locked: nothing can be posted in it"),
        50001: t("Missing Access: the bot cannot see the channel"),
        50013: t("Missing Permissions: the bot may not post in the channel"),
        10008: t("Unknown Message: the posted message was deleted"),
        30003: t(
            "Maximum pins reached: the channel has the most pinned messages Discord allows "
            "(250); unpin some"
        ),
    }.get(code)


def said_reason(reason: str) -> str:
    """``reason`` (as recorded, in English) in the reader's language; as recorded for an
    English reader."""
    if current_locale() not in catalogs():
        return reason
    if reason == PIN_REFUSED:
        return t("Missing Permissions: the bot needs Pin Messages in the channel") + " (50013)"
    if reason == DELETE_REFUSED:
        return t("Missing Permissions: the bot may not delete that message") + " (50013)"
    if (m := _CODED.fullmatch(reason)) is not None:
        code = int(m["code"])
        said = _known(code) if KNOWN_CODES.get(code) == m["known"] else None
        if said is not None:
            return f"{said} ({code})"
    if (m := _RATE.fullmatch(reason)) is not None:
        return tn("rate limited for {n} second", "rate limited for {n} seconds", int(m["n"]))
    if (m := _GAVE_UP.fullmatch(reason)) is not None:
        return tn(
            "may not have been delivered: {reason} (gave up after {n} attempt)",
            "may not have been delivered: {reason} (gave up after {n} attempts)",
            int(m["n"]), reason=said_reason(m["inner"]),
        )  # fmt: skip
    if (m := _INTERRUPTED.fullmatch(reason)) is not None:
        return tn(
            "may not have been delivered: an attempt was interrupted {n} second ago, longer "
            "than Discord remembers a nonce, so it was not sent again",
            "may not have been delivered: an attempt was interrupted {n} seconds ago, longer "
            "than Discord remembers a nonce, so it was not sent again",
            int(m["n"]),
        )  # fmt: skip
    if (m := _MISSED.fullmatch(reason)) is not None:
        return tn(
            "missed: it was due {n} minute earlier, while the bot was offline",
            "missed: it was due {n} minutes earlier, while the bot was offline",
            int(m["n"]),
        )  # fmt: skip
    if (m := _EVENTS_FULL.fullmatch(reason)) is not None:
        return t("the server has {n} scheduled events, the most Discord allows", n=m["n"])
    webhooks = {
        f"{WEBHOOKS_FULL} ({MAX_WEBHOOKS})": t(
            "the channel already has 15 webhooks, the most Discord allows: delete one it no "
            "longer needs, or post as the bot (`as_name: none`)"
        ),
        f"{NO_MANAGE_WEBHOOKS} ({MISSING_PERMISSIONS})": t(
            "the bot needs Manage Webhooks in the channel to post as someone else (or "
            "`as_name: none`)"
        ),
        f"{WEBHOOK_GONE} ({UNKNOWN_WEBHOOK})": t(
            "the webhook that posted it was deleted: it can no longer be edited"
        ),
    }
    if reason in webhooks:
        said_code = reason.rsplit("(", 1)[1].rstrip(")")
        return f"{webhooks[reason]} ({said_code})"
    if reason == PAUSED_REASON:
        return t("due while the announcement was paused")
    if reason == AWAY:
        return t("not posted: the bot was not in this server at the time")
    if reason == PLACE_CANCELED:
        return t("not posted: the announcement was canceled before its turn here")
    return reason
