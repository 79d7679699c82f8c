"""What the bot says: confirmations, list pages, labels. Pure text, no Discord calls."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime

from .announcements import Announcement, Listing
from .limits import MAX_CHOICE_NAME, MAX_MESSAGE
from .models import AnnouncementState, mention_markup
from .parsing import discord_timestamp

PAGE_SIZE = 6
PREVIEW_LIMIT = 1000
HIDDEN = "(in a channel you can't see)"
"""Shown instead of the text of an announcement for a channel the reader can't view."""


def when(dt: datetime | None) -> str:
    if dt is None:
        return "—"
    return f"{discord_timestamp(dt, 'F')} ({discord_timestamp(dt, 'R')})"


def preview(text: str, limit: int = PREVIEW_LIMIT) -> str:
    """The message as a block quote, cut at ``limit`` characters."""
    shown = text if len(text) <= limit else text[:limit]
    quoted = "\n".join("> " + line if line else ">" for line in shown.split("\n"))
    if len(text) > limit:
        quoted += f"\n*…and {len(text) - limit} more characters*"
    return quoted


def confirmation(
    a: Announcement, first: datetime, notes: list[str], upcoming: Sequence[datetime] = ()
) -> str:
    """What /schedule answers: the first time, the rule in words and, for a repeating
    announcement, its first posts (``upcoming``, the first included), the pings, notes."""
    repeat = a.repeat_words or "no (posted once)"
    lines = [
        f"✅ Scheduled announcement **#{a.local_id}** in <#{a.channel_id}>.",
        f"**First:** {when(first)}",
        f"**Repeats:** {repeat}",
    ]
    if a.recurring and len(upcoming) > 1:
        lines.append("**Next:** " + ", ".join(discord_timestamp(t, "F") for t in upcoming))
    lines.append(f"**Pings:** {_pings(a)}")
    lines += [f"ℹ️ {n}" for n in notes]
    lines += ["**Preview:**", preview(a.text)]
    return "\n".join(lines)


def _pings(a: Announcement) -> str:
    allowed = a.allowed_mentions
    parts = []
    if a.mention is not None:
        parts.append(mention_markup(a.mention))
    if allowed.get("everyone") and a.mention not in ("everyone", "here"):
        parts.append("@everyone/@here in the text")
    extra = [r for r in allowed.get("roles", []) if a.mention != f"role:{r}"]
    parts += [f"<@&{r}>" for r in extra]
    return ", ".join(parts) if parts else "no role or @everyone pings"


STATE_ICON = {
    AnnouncementState.SCHEDULED: "🕒",
    AnnouncementState.SENT: "✅",
    AnnouncementState.FAILED: "❌",
    AnnouncementState.PAUSED: "⏸️",
    AnnouncementState.CANCELED: "🚫",
    AnnouncementState.DONE: "🏁",
}
_SHOWS_FAILURE = (AnnouncementState.FAILED, AnnouncementState.PAUSED, AnnouncementState.SCHEDULED)
"""States in which the reason the last occurrence failed is still worth showing."""


def listing_page(listing: Listing, page: int, guild_id: int, hidden: Collection[int] = ()) -> str:
    """A /list page; the text of announcements for the channels in ``hidden`` isn't shown."""
    pages = max(1, -(-listing.total // PAGE_SIZE))
    if not listing.items:
        return "No announcements yet. Create one with `/schedule`."
    out = [f"**Announcements** — page {page + 1} of {pages} ({listing.total} in all)"]
    for a in listing.items:
        icon = STATE_ICON.get(a.state, "•")
        head = f"{icon} **#{a.local_id}** in <#{a.channel_id}> · {a.state} · by <@{a.author_id}>"
        lines = [head]
        nxt = listing.next_fires.get(a.id)
        if a.state == AnnouncementState.SCHEDULED:
            lines.append(f"  next: {when(nxt)}")
        lines.append(f"  repeats: {a.repeat_words or 'no'}")
        if a.last_message_id is not None:
            link = f"https://discord.com/channels/{guild_id}/{a.channel_id}/{a.last_message_id}"
            lines.append(f"  posted: {link}")
        if a.failure and a.state in _SHOWS_FAILURE:
            lines.append(f"  ⚠️ {a.failure}")
        lines.append(f"  `{HIDDEN}`" if a.channel_id in hidden else f"  {_snippet(a.text)}")
        out.append("\n".join(lines))
    text = "\n".join(out)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 10] + "…"


def _snippet(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    flat = flat if len(flat) <= width else flat[: width - 1] + "…"
    return f"`{flat.replace('`', 'ˋ')}`" if flat else "`(empty)`"


def choice_label(a: Announcement, nxt: datetime | None, hidden: bool = False) -> str:
    """An autocomplete label (at most ``MAX_CHOICE_NAME`` characters); ``hidden``: without
    the text."""
    when_text = nxt.astimezone(UTC).strftime("%b %d %H:%M UTC") if nxt else a.state
    flat = HIDDEN if hidden else " ".join(a.content.split())
    label = f"#{a.local_id} · {when_text} · {flat}"
    return label if len(label) <= MAX_CHOICE_NAME else label[: MAX_CHOICE_NAME - 1] + "…"
