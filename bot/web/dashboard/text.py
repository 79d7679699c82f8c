"""What the pages show: the bot's own answers (Discord markdown) as HTML, and times in the
viewer's zone with UTC on hover. Everything is escaped first; only the markup made here is
HTML."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from markupsafe import Markup, escape

from ...parsing import spoken_duration

if TYPE_CHECKING:
    from collections.abc import Mapping
    from zoneinfo import ZoneInfo

    import discord

_CHANNEL = re.compile(r"&lt;#(\d+)&gt;")
_ROLE = re.compile(r"&lt;@&amp;(\d+)&gt;")
_USER = re.compile(r"&lt;@!?(\d+)&gt;")
_TIMESTAMP = re.compile(r"&lt;t:(-?\d+)(?::([tTdDfFR]))?&gt;")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_CODE = re.compile(r"`([^`]+)`")
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
_LINK = re.compile(r"(https://discord\.com/(?:channels|events)/[\d/]+)")


def time_html(dt: datetime | None, zone: ZoneInfo) -> Markup:
    """``dt`` in ``zone`` (``2030-03-01 13:00 CET``), UTC on hover."""
    if dt is None:
        return Markup("—")
    local = dt.astimezone(zone)
    utc = dt.astimezone(UTC)
    return Markup('<time datetime="{}" title="{} UTC">{}</time>').format(
        utc.isoformat(),
        utc.strftime("%Y-%m-%d %H:%M:%S"),
        local.strftime("%a %Y-%m-%d %H:%M ") + (local.tzname() or zone.key),
    )


def discord_html(
    text: str,
    guild: discord.Guild | None,
    zone: ZoneInfo,
    now: datetime,
    names: Mapping[int, str] | None = None,
) -> Markup:
    """The bot's answer or an announcement's text as Discord would show it, roughly:
    channel, role and user mentions by name, ``<t:…>`` times in the viewer's zone, bold,
    italics, code and line breaks."""
    html = str(escape(text))

    def channel(m: re.Match[str]) -> str:
        found = guild.get_channel_or_thread(int(m[1])) if guild else None
        name = found.name if found is not None else m[1]
        return str(Markup('<span class="mention">#{}</span>').format(name))

    def role(m: re.Match[str]) -> str:
        found = guild.get_role(int(m[1])) if guild else None
        name = found.name if found is not None else m[1]
        return str(Markup('<span class="mention">@{}</span>').format(name))

    def user(m: re.Match[str]) -> str:
        found = guild.get_member(int(m[1])) if guild else None
        known = (names or {}).get(int(m[1]))
        name = found.display_name if found is not None else known or f"user {m[1]}"
        return str(Markup('<span class="mention">@{}</span>').format(name))

    def stamp(m: re.Match[str]) -> str:
        dt = datetime.fromtimestamp(int(m[1]), UTC)
        if m[2] == "R":
            return str(Markup('<span class="relative">{}</span>').format(relative(dt, now)))
        return str(time_html(dt, zone))

    html = _CHANNEL.sub(channel, html)
    html = _ROLE.sub(role, html)
    html = _USER.sub(user, html)
    html = _TIMESTAMP.sub(stamp, html)
    html = _CODE.sub(r"<code>\1</code>", html)
    html = _BOLD.sub(r"<strong>\1</strong>", html)
    html = _ITALIC.sub(r"<em>\1</em>", html)
    html = _LINK.sub(r'<a href="\1" rel="noreferrer">\1</a>', html)
    return Markup(html.replace("\n", "<br>\n"))  # noqa: S704 (escaped first, see above)


def relative(dt: datetime, now: datetime) -> str:
    """``in 2 hours``, ``5 minutes ago`` (to the minute)."""
    seconds = round((dt - now).total_seconds() / 60) * 60
    if seconds == 0:
        return "now"
    words = spoken_duration(timedelta(seconds=abs(seconds)))
    return f"in {words}" if seconds > 0 else f"{words} ago"
