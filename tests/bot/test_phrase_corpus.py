"""The phrase corpus (tests/bot/phrases.toml): what people type into ``/schedule``'s
``when`` and ``repeat``, each with the posts expected (worked out by hand from the calendar)
or the refusal expected. One parametrized test reads every phrasing of every case."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bot.parsing import InputError, read_schedule

CORPUS = Path(__file__).with_name("phrases.toml")
DEFAULT_NOW = "2026-12-01 10:00"  # Tuesday, 11:00 in Paris


def _utc(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)


def _phrasings(value: str | list[str] | None) -> list[str | None]:
    if value is None:
        return [None]
    return [value] if isinstance(value, str) else list(value)


def _cases() -> list[Any]:
    params = []
    for case in tomllib.loads(CORPUS.read_text())["case"]:
        for when in _phrasings(case.get("when")):
            for repeat in _phrasings(case.get("repeat")):
                label = f"when={when!r} repeat={repeat!r} {case.get('zone', '')}"
                params.append(pytest.param(case, when, repeat, id=label))
    return params


CASES = _cases()


def test_the_corpus_is_large_and_varied() -> None:
    cases = tomllib.loads(CORPUS.read_text())["case"]
    assert len(CASES) >= 150
    zones = {case.get("zone", "Europe/Paris") for case in cases}
    assert {"Europe/Paris", "America/New_York", "Australia/Lord_Howe"} <= zones
    assert {"en-US", "en-GB"} <= {case.get("locale") for case in cases}
    assert any("when" in case for case in cases)
    assert any("repeat" in case for case in cases)


@pytest.mark.parametrize(("case", "when", "repeat"), CASES)
def test_phrase(case: dict[str, Any], when: str | None, repeat: str | None) -> None:
    zone = ZoneInfo(case.get("zone", "Europe/Paris"))
    now = _utc(case.get("now", DEFAULT_NOW))
    locale = case.get("locale", "en-GB") or None
    if "refuse" in case:
        with pytest.raises(InputError) as info:
            read_schedule(when, repeat, zone, now, locale=locale, count=5)
        assert case["refuse"] in str(info.value)
        return
    reading = read_schedule(when, repeat, zone, now, locale=locale, count=5)
    assert [t.astimezone(UTC) for t in reading.upcoming] == [_utc(t) for t in case["expect"]]
    assert reading.first == reading.upcoming[0]
    if "words" in case:
        assert reading.rule is not None
        assert case["words"] in reading.rule.words
    if "note" in case:
        assert any(case["note"] in note for note in reading.notes), reading.notes
