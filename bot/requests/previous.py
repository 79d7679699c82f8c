"""The previous post's settings as asked (``/edit pin: replace: delete_after:``, the
dashboard's form, a template), read and checked: ``delete_after`` a length of time from a
minute to 30 days, or ``none``; none of them on a forum (each of its posts is a thread of its
own); ``pin`` only where the bot may pin (Pin Messages)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..announcements.previous import MAX_DELETE_AFTER, MIN_DELETE_AFTER
from ..i18n import t
from ..limits import clip
from ..models import Destination, Tidy
from ..parsing import InputError, parse_duration
from ..parsing.languages import translate
from ..parsing.spoken import duration
from .checks import Refusal
from .reminders import OFF_WORDS

if TYPE_CHECKING:
    import discord

    from .request import AnnouncementOptions


def parse_delete_after(text: str, locale: str | None = None) -> float | None:
    """How long after it went up each post is deleted, in seconds (``24h``, ``2 days``,
    ``90m``; in the member's language too), or None for ``none``. Refused outside a minute
    to 30 days, or when it is no length of time."""
    typed = " ".join(text.lower().split())
    if typed in OFF_WORDS:
        return None
    seconds = parse_duration(typed)
    if seconds is None:
        english = translate(typed, locale)
        seconds = None if english is None else parse_duration(english)
    if seconds is None:
        raise InputError(
            t("`{text}` isn't a length of time I can read. Try `24h`, `2 days` or `90m`, or "
              "`none` to keep the posts.", text=clip(text))
        )  # fmt: skip
    if not MIN_DELETE_AFTER <= seconds <= MAX_DELETE_AFTER:
        raise InputError(
            t("`delete_after` is between {least} and {most}: `{text}` is outside that.",
              least=duration(timedelta(seconds=MIN_DELETE_AFTER)),
              most=duration(timedelta(seconds=MAX_DELETE_AFTER)), text=clip(text))
        )  # fmt: skip
    return float(round(seconds))


def delete_after_text(seconds: float | None) -> str:
    """``delete_after`` as a form shows it, read back by :func:`parse_delete_after`:
    ``24h``, ``1d12h``, ``90m``; empty for None."""
    if seconds is None:
        return ""
    left = round(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size:
            parts.append(f"{left // size}{unit}")
            left %= size
    return "".join(parts)


def check_tidy(
    options: AnnouncementOptions,
    target: Any,
    destination: Destination,
    me: discord.Member,
    locale: str | None,
) -> Tidy | None:
    """What becomes of the announcement's posts, as the request asks (the options left out
    keep ``kept_tidy``); None when nothing is asked nor kept. Refused on a forum, and
    pinning where the bot lacks Pin Messages (checked at every change, like the bot's right
    to post there)."""
    asked = (options.pin, options.replace, options.delete_after)
    if all(v is None for v in asked) and options.kept_tidy is None:
        return None
    kept = options.kept_tidy or Tidy()
    after = kept.delete_after
    if options.delete_after is not None:
        after = parse_delete_after(options.delete_after, locale)
    tidy = Tidy(
        pin=kept.pin if options.pin is None else options.pin,
        replace=kept.replace if options.replace is None else options.replace,
        delete_after=after,
    )
    if tidy.on and destination == Destination.FORUM:
        field = next(
            (n for n, v in zip(("pin", "replace", "delete_after"), asked, strict=True) if v),
            "channel",
        )
        raise Refusal(
            t("`pin`, `replace` and `delete_after` are for posts in a channel or a thread; "
              "each post in a forum is a thread of its own. Turn them off first (`pin: false`, "
              "`replace: false`, `delete_after: none`)."),
            field=field,
        )  # fmt: skip
    if tidy.pin and not target.permissions_for(me).pin_messages:
        raise Refusal(
            t("I need **Pin Messages** in {channel} to pin its posts. Ask an admin to grant "
              "it, then try again, or leave `pin` off.", channel=target.mention),
            field="pin",
        )  # fmt: skip
    return tidy
