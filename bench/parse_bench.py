"""Parsing benchmark: how long reading one ``when`` / ``repeat`` phrase takes.

    python bench/parse_bench.py [--runs N] [--language en|fr|de|es ...]

Reads every phrasing of a phrase corpus with ``bot.parsing.read_schedule`` — refusals
included, as a command would — ``--runs`` times (default 7) after one warm-up pass, and
reports per phrase the median over the runs, then the median, the 95th and 99th percentiles
and the maximum over the phrases, in microseconds. One line per language: English
(tests/bot/phrases.toml), French, German and Spanish (tests/bot/phrases_fr.toml, _de, _es,
read with their corpus's locale: the translation, then English, then the refusal in the
member's language). The aim is under a millisecond a phrase at p99 in every language (the
issue's bound: parsing must never block the event loop). Reading includes computing the
next five posts, as the confirmation does for three.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.parsing import InputError, read_schedule
from bot.parsing.languages import _TRANSLATED

CORPORA = Path(__file__).resolve().parent.parent / "tests" / "bot"
LANGUAGES = ("en", "fr", "de", "es")


def _phrasings(value: str | list[str] | None) -> list[str | None]:
    if value is None:
        return [None]
    return [value] if isinstance(value, str) else list(value)


def _inputs(language: str) -> list[tuple[str | None, str | None, ZoneInfo, datetime, str | None]]:
    name = "phrases.toml" if language == "en" else f"phrases_{language}.toml"
    data = tomllib.loads((CORPORA / name).read_text())
    defaults = data.get("defaults", {"zone": "Europe/Paris", "locale": "en-GB"})
    out = []
    for case in data["case"]:
        zone = ZoneInfo(case.get("zone", defaults["zone"]))
        now = datetime.strptime(case.get("now", "2026-12-01 10:00"), "%Y-%m-%d %H:%M").replace(
            tzinfo=UTC
        )
        locale = case.get("locale", defaults["locale"]) or None
        for when in _phrasings(case.get("when")):
            for repeat in _phrasings(case.get("repeat")):
                out.append((when, repeat, zone, now, locale))
    return out


def _read(item: tuple[str | None, str | None, ZoneInfo, datetime, str | None]) -> None:
    when, repeat, zone, now, locale = item
    _TRANSLATED.cache_clear()  # each read pays its translation, as a new phrase does
    with contextlib.suppress(InputError):
        read_schedule(when, repeat, zone, now, locale=locale, count=5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--language", choices=LANGUAGES, action="append")
    args = parser.parse_args()
    for language in args.language or LANGUAGES:
        _bench(language, args.runs)


def _bench(language: str, runs: int) -> None:
    inputs = _inputs(language)
    for item in inputs:  # warm-up: zone data, regex and croniter caches
        _read(item)
    per_phrase: list[list[float]] = [[] for _ in inputs]
    for _ in range(runs):
        for i, item in enumerate(inputs):
            start = time.perf_counter()
            _read(item)
            per_phrase[i].append(time.perf_counter() - start)
    medians = sorted(statistics.median(times) * 1e6 for times in per_phrase)
    worst = max(range(len(inputs)), key=lambda i: statistics.median(per_phrase[i]))
    p95 = medians[int(0.95 * (len(medians) - 1))]
    p99 = medians[int(0.99 * (len(medians) - 1))]
    print(f"{language}: {len(inputs)} phrases, {runs} runs each (median per phrase, microseconds)")
    print(
        f"  median {statistics.median(medians):.0f} us, p95 {p95:.0f} us, p99 {p99:.0f} us, "
        f"max {medians[-1]:.0f} us"
    )
    print(f"  slowest: when={inputs[worst][0]!r} repeat={inputs[worst][1]!r}")


if __name__ == "__main__":
    main()
