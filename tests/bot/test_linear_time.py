"""Every text transformation a member's input goes through costs time linear in its length
(issue 32: a 60,000-character template name froze the bot for 11.5 s in the dashboard's
markdown renderer, whose italics pattern was quadratic), and what it keeps of that input is
bounded.

Each timing is a ratio measured in the same run, never seconds: the thread's CPU time
(``time.thread_time``, not the wall clock: another process taking the CPU does not count)
of one call on a long adversarial text against that of 16 calls on a text 16 times
shorter, the same characters in all. Linear work gives about 1; the quadratic italics gave
16 here (one long line of ``*a `` is 16 times the work per character); the bound is 4.
"""

from __future__ import annotations

import contextlib
import gc
import re
import time
import tracemalloc
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.limits import MAX_TEXT_OPTION, clip
from bot.parsing import (
    InputError,
    languages,
    parse_duration,
    parse_repeat,
    parse_when,
    resolve_timezone,
)
from bot.parsing.languages import fold, translate
from bot.parsing.placeholders import check_placeholders, occurrence, render, widest
from bot.web.dashboard.text import discord_html, emphasis

if TYPE_CHECKING:
    from collections.abc import Callable

NOW = datetime(2030, 3, 1, 12, 0, tzinfo=UTC)
PARIS = ZoneInfo("Europe/Paris")
SHORT = 500
"""Characters in the short text (the long one has :data:`TIMES` times as many)."""
TIMES = 16
BOUND = 4.0


def cpu(transform: Callable[[str], object], text: str) -> float:
    """The thread's CPU seconds for ``transform(text)`` (a refusal is an answer too)."""
    start = time.thread_time()
    with contextlib.suppress(InputError):
        transform(text)
    return time.thread_time() - start


def cost_ratio(transform: Callable[[str], object], unit: str) -> float:
    """One call on ``unit`` repeated to ``TIMES * SHORT`` characters, against ``TIMES`` calls
    on ``unit`` repeated to ``SHORT``: the per-character cost of the long text over the short
    one's. The best of three tries of each (the first one that is within the bound ends the
    tries: a slow run is noise, a quadratic one is slow every time)."""
    short = unit * -(-SHORT // len(unit))
    long = short * TIMES
    cpu(transform, short)  # anything done once (a compiled pattern, a table) done first
    best = float("inf")
    gc.collect()
    gc.disable()  # a collection is not the transformation's work
    try:
        for _ in range(3):
            base = sum(cpu(transform, short) for _ in range(TIMES))
            best = min(best, cpu(transform, long) / max(base, 1e-6))
            if best < BOUND:
                break
    finally:
        gc.enable()
    return best


def markdown(text: str) -> object:
    return discord_html(text, None, PARIS, NOW)


def rewriter(locale: str) -> Callable[[str], object]:
    """The language's rewriting itself, every rule applied to the whole text (what the
    parsers' length limit spares it from: tested without it here)."""
    table = languages._compiled(locale)
    assert table is not None
    return table.translate


def when_in(locale: str | None) -> Callable[[str], object]:
    return lambda text: parse_when(text, PARIS, NOW, locale=locale)


def repeat_in(locale: str | None) -> Callable[[str], object]:
    return lambda text: parse_repeat(text, NOW, PARIS, locale=locale)


OCCURRENCE = occurrence(None, NOW.timestamp(), "Europe/Paris", NOW.timestamp(), None)

TRANSFORMS: dict[str, tuple[Callable[[str], object], str]] = {
    "markdown: italics never closed": (markdown, "*a "),
    "markdown: italics closed far away": (markdown, "*a* *b"),
    "markdown: bold never closed": (markdown, "**a "),
    "markdown: code never closed": (markdown, "`a "),
    "markdown: mentions and times": (markdown, "<@1 <#2 <@&3 <t:4 <t:5:R> "),
    "markdown: links": (markdown, "https://discord.com/channels/1/2 "),
    "rewriter fr": (rewriter("fr"), "demain à 9h tous les 1er lundis du mois "),
    "rewriter de": (rewriter("de"), "jeden ersten Montag im Monat um halb 9 Uhr 24.12. "),
    "rewriter es": (rewriter("es"), "cada primer lunes del mes a las 9 y media "),
    "when en": (when_in(None), "tomorrow at 9 "),
    "when fr": (when_in("fr"), "demain 9h "),
    "when de": (when_in("de"), "morgen 9 Uhr "),
    "when es": (when_in("es-ES"), "mañana a las 9 "),
    "repeat en": (repeat_in(None), "every friday at 8pm "),
    "repeat fr": (repeat_in("fr"), "tous les vendredis à 20h "),
    "repeat de": (repeat_in("de"), "jeden Freitag um 20 Uhr "),
    "repeat es": (repeat_in("es-ES"), "cada viernes a las 20 "),
    "time zone": (resolve_timezone, "europe/par"),
    "duration": (parse_duration, "1h "),
    "placeholders checked": (lambda text: check_placeholders(text, "the message"), "{date}{{ "),
    "placeholders never closed": (lambda text: check_placeholders(text, "the message"), "{a "),
    "placeholders rendered": (lambda text: render(text, OCCURRENCE, "de"), "{date} {{x}} "),
    "placeholders widest": (widest, "{weekday} "),
    "fold": (fold, "Ünd À ß "),
    "clip": (clip, "a \n"),
}


@pytest.mark.parametrize("name", TRANSFORMS)
def test_each_text_transformation_is_linear_in_its_input(name: str) -> None:
    transform, unit = TRANSFORMS[name]
    ratio = cost_ratio(transform, unit)
    assert ratio < BOUND, f"{name}: {ratio:.1f} times the cost per character at {TIMES}x length"


ITALICS = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
BOLD = re.compile(r"\*\*(.+?)\*\*")
"""The patterns the renderer used (quadratic), as the reference of what it marks."""


@given(st.text(alphabet="**a _\n\t\u00a0é1.", max_size=16))
def test_the_markdown_renderer_marks_what_the_patterns_marked(text: str) -> None:
    expected = ITALICS.sub(r"<em>\1</em>", BOLD.sub(r"<strong>\1</strong>", text))
    assert emphasis(text) == expected


@pytest.mark.parametrize(
    ("locale", "kind"), [("fr", "when"), ("de", "when"), ("es-ES", "repeat"), ("fr", "repeat")]
)
def test_a_phrase_too_long_to_read_is_refused_as_such_and_not_repeated(
    locale: str, kind: str
) -> None:
    """60,000 characters in a member's language: the parser's "too long" in their words,
    never rewritten (the rewriting alone took seconds) and never repeated back."""
    text = "demain 9h " * 6000
    read = when_in(locale) if kind == "when" else repeat_in(locale)
    with pytest.raises(InputError) as refused:
        read(text)
    said = str(refused.value)
    assert said.startswith(f"That's too long for a {'time' if kind == 'when' else 'repeat'}")
    assert len(said) < 400, said[:400]
    assert "demain 9h demain 9h" not in said
    assert translate(text, locale) is None


def test_the_rewriters_cache_keeps_no_long_text() -> None:
    """40 texts of 100,000 characters rewritten: nothing of them kept afterwards (the
    unbounded cache kept every one: 40 x 1 MB kept about 50 MB)."""
    texts = [f"{n} " + "demain 9h " * 10_000 for n in range(40)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for text in texts:
            languages._translate(text, "fr")
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 100_000, f"{kept} bytes kept after rewriting 40 long texts"


def test_the_rewriters_cache_is_bounded_in_entries_and_characters() -> None:
    cache = languages._TRANSLATED
    cache.cache_clear()
    for n in range(3 * cache.entries):
        translate(f"le {n % 28 + 1} à {n % 24}h{n:06d}", "fr")
    assert 0 < len(cache) <= cache.entries
    assert cache.size <= cache.chars
    small = languages.BoundedCache(entries=100, chars=1000, longest=MAX_TEXT_OPTION)
    for n in range(100):
        small.put((f"{n:03d}" * 30, "fr"), "x" * 10)  # 90 + 2 + 10 characters each
    assert small.size <= 1000
    assert len(small) == 1000 // 102
    small.put(("x" * (MAX_TEXT_OPTION + 1), "fr"), "y")
    assert small.get(("x" * (MAX_TEXT_OPTION + 1), "fr")) == (False, None)


def test_clip_repeats_a_short_line_of_what_was_typed() -> None:
    assert clip("weekly") == "weekly"
    assert clip("  two\nlines\t ") == "two lines"
    long = clip("x" * 100_000)
    assert len(long) == 60
    assert long.endswith("…")
    assert clip("a" + " " * 10_000 + "b") == "a…"
    assert clip("\x00bell\x07") == "bell"
