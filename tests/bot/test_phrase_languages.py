"""The phrase corpora in French, German and Spanish (tests/bot/phrases_fr.toml, _de, _es):
what a member whose Discord locale is ``fr``, ``de``, ``es-ES`` or ``es-419`` types into
``/schedule``'s ``when`` and ``repeat``, each with the posts expected (worked out by hand
from the calendar) or the refusal expected. Same format as phrases.toml, with a
``[defaults]`` table giving each corpus its zone and locale."""

from __future__ import annotations

import re
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bot.parsing import InputError, read_schedule
from bot.parsing.languages import language_for

LANGUAGES = ("fr", "de", "es")
DEFAULT_NOW = "2026-12-01 10:00"  # Tuesday, 11:00 in Paris, Berlin and Madrid


def corpus(language: str) -> dict[str, Any]:
    return tomllib.loads(Path(__file__).with_name(f"phrases_{language}.toml").read_text())


def _utc(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)


def _phrasings(value: str | list[str] | None) -> list[str | None]:
    if value is None:
        return [None]
    return [value] if isinstance(value, str) else list(value)


def settings(defaults: dict[str, str], case: dict[str, Any]) -> tuple[ZoneInfo, datetime, str]:
    """The zone, "now" and locale a case is read in."""
    zone = ZoneInfo(case.get("zone", defaults["zone"]))
    return zone, _utc(case.get("now", DEFAULT_NOW)), case.get("locale", defaults["locale"])


def phrasings(language: str) -> list[Any]:
    """Every phrasing of every case of a corpus, as pytest params."""
    data = corpus(language)
    params = []
    for case in data.get("case", []):
        for when in _phrasings(case.get("when")):
            for repeat in _phrasings(case.get("repeat")):
                label = f"{language} when={when!r} repeat={repeat!r} {case.get('locale', '')}"
                params.append(pytest.param(data["defaults"], case, when, repeat, id=label))
    return params


CASES = [param for language in LANGUAGES for param in phrasings(language)]


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_corpus_is_large_and_covers_the_guarantees(language: str) -> None:
    data = corpus(language)
    cases = data["case"]
    assert len(cases) >= 60
    assert sum("refuse" in case for case in cases) >= 8
    assert sum("repeat" in case and "expect" in case for case in cases) >= 15
    defaults = data["defaults"]
    assert defaults["zone"] in {"Europe/Paris", "Europe/Berlin", "Europe/Madrid"}
    expected = [t for case in cases for t in case.get("expect", [])]
    # both daylight-saving nights: a refused spring-forward time, a fall-back time taken once
    assert any(
        "2027-03-28" in str(case.get("when", "")) or "2027-03-2" in case.get("now", "")
        for case in cases
        if "refuse" in case
    )
    assert "2027-10-31 00:30" in expected
    assert any(t.startswith("2027-11-01") for t in expected)
    # English is accepted too, and another locale's member isn't read in this language
    assert any(case.get("locale", defaults["locale"]) != defaults["locale"] for case in cases)


@pytest.mark.parametrize(("defaults", "case", "when", "repeat"), CASES)
def test_phrase(
    defaults: dict[str, str], case: dict[str, Any], when: str | None, repeat: str | None
) -> None:
    zone, now, locale = settings(defaults, case)
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


@pytest.mark.parametrize(
    ("locale", "code"),
    [
        ("fr", "fr"),
        ("de", "de"),
        ("es-ES", "es"),
        ("es-419", "es"),
        ("fr-CA", "fr"),  # a browser's language, from the dashboard
        ("de-AT", "de"),
        ("es-MX", "es"),
        ("en-US", None),
        ("en-GB", None),
        ("pt-BR", None),  # a shipped answer language, but times are read in English
        (None, None),
    ],
)
def test_the_language_is_chosen_by_the_locale(locale: str | None, code: str | None) -> None:
    language = language_for(locale)
    assert (None if language is None else language.code) == code


NOW = _utc(DEFAULT_NOW)
LOCALE = {"fr": "fr", "de": "de", "es": "es-ES"}
ZONE = {"fr": "Europe/Paris", "de": "Europe/Berlin", "es": "Europe/Madrid"}


def _suggestions(message: str) -> list[str]:
    return re.findall(r"`([^`]+)`", message)


@pytest.mark.parametrize(
    ("language", "when", "repeat"),
    [
        ("fr", "demain", None),
        ("fr", "28/03/2027 2h30", None),
        ("fr", "n'importe quand", None),
        ("fr", None, "tous les vendredis"),
        ("fr", None, "de temps en temps"),
        ("de", "morgen", None),
        ("de", "28.03.2027 2:30 Uhr", None),
        ("de", "irgendwann", None),
        ("de", None, "jeden Freitag"),
        ("de", None, "ab und zu"),
        ("es", "mañana", None),
        ("es", "28/03/2027 2:30", None),
        ("es", "algún día", None),
        ("es", None, "todos los viernes"),
        ("es", None, "de vez en cuando"),
    ],
)
def test_a_refusal_suggests_forms_its_language_accepts(
    language: str, when: str | None, repeat: str | None
) -> None:
    """Every form a refusal suggests (in backticks) is read, in the member's language."""
    zone, locale = ZoneInfo(ZONE[language]), LOCALE[language]
    with pytest.raises(InputError) as info:
        read_schedule(when, repeat, zone, NOW, locale=locale)
    suggested = _suggestions(str(info.value))
    assert suggested
    for text in suggested:
        if repeat is None:
            read_schedule(text, None, zone, NOW, locale=locale)
        else:
            read_schedule(None, text, zone, NOW, locale=locale)
