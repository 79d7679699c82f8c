"""Hypothesis over phrases typed in French, German and Spanish: a generated repeat phrase in
the member's language is read as a rule that keeps the scheduler's invariants and posts at
the times of day the phrase names (the checks of test_phrase_properties); the same phrase
without its accents or in capitals is the same rule; ``demain 7h15``, ``morgen 7:15 Uhr``,
``mañana a las 7:15`` are tomorrow at that wall time in the zone (worked out here with
zoneinfo, not by the parser), or refused with the language's DST-gap message. A minimum
share of the phrases must be accepted, so a parser that refused everything fails."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.parsing import InputError, parse_repeat, parse_when
from tests.bot.test_phrase_properties import instants, keeps_the_invariants

ZONES = ["Europe/Paris", "Europe/Berlin", "Europe/Madrid", "America/New_York", "UTC"]
LOCALES = {"fr": "fr", "de": "de", "es": "es-ES"}
DAYS = {
    "fr": ["lundis", "mardis", "mercredis", "jeudis", "vendredis", "samedis", "dimanches"],
    "de": ["Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag"],
    "es": ["lunes", "martes", "miércoles", "jueves", "viernes", "sábados", "domingos"],
}
ORDINALS = {
    "fr": ["premier", "deuxième", "troisième", "quatrième", "dernier"],
    "de": ["ersten", "zweiten", "dritten", "vierten", "letzten"],
    "es": ["primer", "segundo", "tercer", "cuarto", "último"],
}
ONE_DAY = {"fr": "lundi", "de": "Montag", "es": "lunes"}
AND = {"fr": " et ", "de": " und ", "es": " y "}

times = st.tuples(st.sampled_from([0, 1, 2, 3, 7, 9, 12, 18, 23]), st.sampled_from([0, 15, 30, 45]))


def clock(language: str, hour: int, minute: int) -> str:
    if language == "fr":
        return f"{hour}h{minute:02d}" if minute else f"{hour}h"
    if language == "de":
        return f"{hour}:{minute:02d} Uhr" if minute else f"{hour} Uhr"
    return f"{hour}:{minute:02d}" if minute else f"{hour}"


def at(language: str, hours: list[int], minute: int) -> str:
    said = AND[language].join(clock(language, h, minute) for h in hours)
    return {"fr": "à ", "de": "um ", "es": "a las "}[language] + said


@st.composite
def phrases(draw: st.DrawFn) -> tuple[str, str, set[tuple[int, int]]]:
    """A repeat phrase in a language, with its time(s) of day: (language, text, clocks)."""
    language = draw(st.sampled_from(sorted(LOCALES)))
    hour, minute = draw(times)
    extra = draw(st.sampled_from([None, 6, 17]))
    hours = [hour] if extra is None or extra == hour else sorted({hour, extra})
    days = draw(st.lists(st.sampled_from(DAYS[language]), min_size=1, max_size=3, unique=True))
    n = draw(st.integers(2, 12))
    ordinal = draw(st.sampled_from(ORDINALS[language]))
    one_day = draw(st.sampled_from(DAYS[language]))
    day_list = AND[language].join(days)
    bodies = {
        "fr": [
            "tous les jours",
            "en semaine",
            "le week-end",
            f"tous les {day_list}",
            f"tous les {n} jours",
            f"le {ordinal} {ONE_DAY['fr'] if one_day.endswith('s') else one_day} du mois",
            "le dernier jour du mois",
            f"le {draw(st.integers(1, 28))} de chaque mois",
        ],
        "de": [
            "täglich",
            "werktags",
            "am Wochenende",
            f"jeden {day_list}",
            f"alle {n} Tage",
            f"jeden {ordinal} {one_day} im Monat",
            "am letzten Tag des Monats",
            f"am {draw(st.integers(1, 28))}. jeden Monats",
        ],
        "es": [
            "todos los días",
            "entre semana",
            "los fines de semana",
            f"todos los {day_list}",
            f"cada {n} días",
            f"el {ordinal} {one_day.removesuffix('s') if one_day.endswith('os') else one_day}"
            " de cada mes",
            "el último día del mes",
            f"el {draw(st.integers(1, 28))} de cada mes",
        ],
    }
    body = draw(st.sampled_from(bodies[language]))
    return language, f"{body} {at(language, hours, minute)}", {(h, minute) for h in hours}


def without_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


MIN_ACCEPTED = 0.95
"""The share of generated phrases that must be accepted (all of them, when this was
written): a refusal is no failure of the invariants, so without it a parser that refused
every phrase would pass."""


def test_every_accepted_phrase_keeps_the_trigger_invariants_in_every_language() -> None:
    seen = {"generated": 0, "accepted": 0}

    @settings(max_examples=300, deadline=None)
    @given(data=st.data(), phrase=phrases(), zone_name=st.sampled_from(ZONES), now=instants())
    def check(
        data: st.DataObject,
        phrase: tuple[str, str, set[tuple[int, int]]],
        zone_name: str,
        now: datetime,
    ) -> None:
        language, text, clocks = phrase
        zone, locale = ZoneInfo(zone_name), LOCALES[language]
        seen["generated"] += 1
        try:
            rule = parse_repeat(text, now, zone, need_time=True, locale=locale)
        except InputError:
            return
        assert rule is not None
        seen["accepted"] += 1
        keeps_the_invariants(data, rule.trigger(zone, now), clocks, zone, now)
        # accents are optional, and case doesn't matter: the same rule
        for variant in (without_accents(text), text.upper()):
            same = parse_repeat(variant, now, zone, need_time=True, locale=locale)
            assert same == rule, (variant, same, rule)

    check()
    assert seen["accepted"] >= MIN_ACCEPTED * seen["generated"], seen


TOMORROW = {"fr": "demain {}", "de": "morgen {}", "es": "mañana a las {}"}
GAP_WORDS = {"fr": "n'existe pas", "de": "gibt es am", "es": "no existen"}


def test_tomorrow_at_a_time_is_that_wall_time_tomorrow_in_every_language() -> None:
    seen = {"generated": 0, "accepted": 0}

    @settings(max_examples=300, deadline=None)
    @given(
        language=st.sampled_from(sorted(LOCALES)),
        hour=st.integers(0, 23),
        minute=st.sampled_from([0, 5, 15, 30, 45, 59]),
        zone_name=st.sampled_from(ZONES),
        now=instants(),
    )
    def check(language: str, hour: int, minute: int, zone_name: str, now: datetime) -> None:
        zone = ZoneInfo(zone_name)
        seen["generated"] += 1
        said = clock(language, hour, minute) if language != "es" else f"{hour}:{minute:02d}"
        text = TOMORROW[language].format(said)
        tomorrow = now.astimezone(zone).date() + timedelta(days=1)
        aware = datetime(tomorrow.year, tomorrow.month, tomorrow.day, hour, minute, tzinfo=zone)
        exists = aware.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == aware.replace(
            tzinfo=None
        )
        refusal = ""
        try:
            got = parse_when(text, zone, now, locale=LOCALES[language])
        except InputError as error:
            refusal = str(error)
        if refusal:
            assert not exists, (text, refusal)
            assert GAP_WORDS[language] in refusal
            return
        seen["accepted"] += 1
        assert exists
        assert got == aware.astimezone(UTC)  # fold=0: a repeated wall time's first pass

    check()
    assert seen["accepted"] >= 0.9 * seen["generated"], seen
