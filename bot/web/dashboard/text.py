"""What the pages show: the bot's own answers (Discord markdown) as HTML, and times in the
viewer's zone with UTC on hover, their weekday and the relative words (``in 2 hours``) in the
viewer's language. Everything is escaped first; only the markup made here is HTML."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from babel.dates import format_datetime, format_timedelta
from babel.numbers import format_decimal
from markupsafe import Markup, escape

from ... import i18n
from ...parsing import spoken_duration
from ...parsing.display import stamp_time

if TYPE_CHECKING:
    from collections.abc import Mapping
    from zoneinfo import ZoneInfo

    import discord

_CHANNEL = re.compile(r"&lt;#(\d+)&gt;")
_ROLE = re.compile(r"&lt;@&amp;(\d+)&gt;")
_USER = re.compile(r"&lt;@!?(\d+)&gt;")
_TIMESTAMP = re.compile(r"&lt;t:(-?\d+)(?::([tTdDfFR]))?&gt;")
_CODE = re.compile(r"`([^`]+)`")
_LINK = re.compile(r"(https://discord\.com/(?:channels|events)/[\d/]+)")
_SET_ASIDE = re.compile("\x00(\\d+)\x00")


def babel_locale(locale: str | None) -> str | None:
    """``locale`` (a Discord locale key) as Babel names it (``pt_BR``), when crier speaks
    it; None for English and any other."""
    if locale is None or locale not in i18n.catalogs():
        return None
    return locale.replace("-", "_")


def quantity(value: float, digits: int, unit: str, locale: str | None = None) -> str:
    """``value`` with ``digits`` decimals and its ``unit`` (``1.5 s``), the decimal sign
    ``locale``'s (``1,5 s``)."""
    spoken = babel_locale(locale)
    if spoken is None:
        return f"{value:.{digits}f} {unit}"
    pattern = "0." + "0" * digits if digits else "0"
    return f"{format_decimal(value, format=pattern, locale=spoken)} {unit}"


def time_html(dt: datetime | None, zone: ZoneInfo, locale: str | None = None) -> Markup:
    """``dt`` in ``zone`` (``Fri 2030-03-01 13:00 CET``; the weekday in ``locale``'s words:
    ``Fr. 2030-03-01 13:00 CET``), UTC on hover."""
    if dt is None:
        return Markup("—")
    local = dt.astimezone(zone)
    utc = dt.astimezone(UTC)
    spoken = babel_locale(locale)
    shown = (
        local.strftime("%a %Y-%m-%d %H:%M")
        if spoken is None
        else format_datetime(local, "EEE yyyy-MM-dd HH:mm", tzinfo=zone, locale=spoken)
    )
    return Markup('<time datetime="{}" title="{} UTC">{}</time>').format(
        utc.isoformat(),
        utc.strftime("%Y-%m-%d %H:%M:%S"),
        f"{shown} {local.tzname() or zone.key}",
    )


def discord_html(
    text: str,
    guild: discord.Guild | None,
    zone: ZoneInfo,
    now: datetime,
    names: Mapping[int, str] | None = None,
    locale: str | None = None,
) -> Markup:
    """The bot's answer or an announcement's text as Discord would show it, roughly:
    channel, role and user mentions by name, ``<t:…>`` times in the viewer's zone, bold,
    italics, code and line breaks; weekdays and relative times in ``locale``'s words. Code
    is shown as typed, as Discord shows it: an example like `` `<t:1735000000>` `` stays the
    syntax it teaches, not a date."""
    html = str(escape(text))
    codes: list[str] = []

    def set_aside(m: re.Match[str]) -> str:
        codes.append(m[1])
        return f"\x00{len(codes) - 1}\x00"

    html = _CODE.sub(set_aside, html.replace("\x00", ""))

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
        unknown = i18n.translate(i18n.marked("user {id}"), locale, context=i18n.ANSWER, id=m[1])
        name = found.display_name if found is not None else known or unknown
        return str(Markup('<span class="mention">@{}</span>').format(name))

    def stamp(m: re.Match[str]) -> str:
        dt = stamp_time(m[1])
        if dt is None:  # far outside any time: shown as typed
            return m[0]
        if m[2] == "R":
            return str(Markup('<span class="relative">{}</span>').format(relative(dt, now, locale)))
        return str(time_html(dt, zone, locale))

    html = _CHANNEL.sub(channel, html)
    html = _ROLE.sub(role, html)
    html = _USER.sub(user, html)
    html = _TIMESTAMP.sub(stamp, html)
    html = emphasis(html)
    html = _LINK.sub(r'<a href="\1" rel="noreferrer">\1</a>', html)
    html = _SET_ASIDE.sub(lambda m: f"<code>{codes[int(m[1])]}</code>", html)
    return Markup(html.replace("\n", "<br>\n"))  # noqa: S704 (escaped first, see above)


def emphasis(html: str) -> str:
    """``**bold**`` and ``*italics*`` in ``html`` as ``<strong>`` and ``<em>``, line by line,
    in time linear in its length.

    The rules are the regular expressions ``\\*\\*(.+?)\\*\\*`` (bold) then
    ``(?<![\\w*])\\*(?!\\s)(.+?)(?<!\\s)\\*(?![\\w*])`` (italics), read as ``re.sub``
    reads them: the leftmost opening mark, closed by the nearest closing one on its line. The
    regular expressions themselves take quadratic time on a line of opening marks that are
    never closed (``*a *a *a…``: each one scans the rest of the line), so each line is
    scanned once here, the nearest closing mark after every position found beforehand."""
    return "\n".join(_italics(_bold(line)) for line in html.split("\n"))


def _word(c: str) -> bool:
    """Whether ``c`` is what ``\\w`` matches."""
    return c.isalnum() or c == "_"


def _marked(line: str, opens: list[bool], closes: list[bool], mark: int, tag: str) -> str:
    """``line`` with each run from an opening mark to the nearest closing one (at least one
    character between them) in ``<tag>``, leftmost first, as ``re.sub`` pairs them; the
    marks are ``mark`` characters wide; ``opens[i]``/``closes[i]``: a mark may open/close at
    ``i``."""
    n = len(line)
    nearest = [n] * (n + 2)  # nearest[i]: the first closing mark at i or after (n: none)
    for i in range(n - 1, -1, -1):
        nearest[i] = i if closes[i] else nearest[i + 1]
    out: list[str] = []
    done = i = 0
    while i < n:
        if opens[i]:
            end = nearest[min(i + mark + 1, n)]
            if end < n:
                out += (line[done:i], f"<{tag}>", line[i + mark : end], f"</{tag}>")
                done = i = end + mark
                continue
        i += 1
    out.append(line[done:])
    return "".join(out)


def _bold(line: str) -> str:
    marks = [line.startswith("**", i) for i in range(len(line))]
    return _marked(line, marks, marks, 2, "strong")


def _italics(line: str) -> str:
    n = len(line)
    star = [c == "*" for c in line]
    opens = [
        star[i]
        and (i == 0 or not (star[i - 1] or _word(line[i - 1])))
        and i + 1 < n
        and not line[i + 1].isspace()
        for i in range(n)
    ]
    closes = [
        star[i]
        and i > 0
        and not line[i - 1].isspace()
        and (i + 1 == n or not (star[i + 1] or _word(line[i + 1])))
        for i in range(n)
    ]
    return _marked(line, opens, closes, 1, "em")


def relative(dt: datetime, now: datetime, locale: str | None = None) -> str:
    """``in 2 hours``, ``5 minutes ago`` (to the minute); in ``locale``'s words when crier
    speaks it (``in 2 Stunden``, ``il y a 5 minutes``: in one unit, as the language says it)."""
    seconds = round((dt - now).total_seconds() / 60) * 60
    if seconds == 0:
        return i18n.translate(i18n.marked("now"), locale, context=i18n.ANSWER)
    spoken = babel_locale(locale)
    if spoken is not None:
        return format_timedelta(
            timedelta(seconds=seconds), threshold=2, add_direction=True, locale=spoken
        )
    words = spoken_duration(timedelta(seconds=abs(seconds)))
    return f"in {words}" if seconds > 0 else f"{words} ago"
