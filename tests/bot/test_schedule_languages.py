"""The French, German and Spanish phrase corpora through ``/schedule`` end to end: the real
discord.py client against the fake Discord, the interaction carrying the member's
``locale``, on a FakeClock set to each case's "now". One phrasing of every case (the first:
the corpus test reads them all); the expected times are the corpus's, worked out by hand."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from bot import i18n
from bot.parsing.spoken import spoken_rule
from scheduler.testing import FakeClock
from tests.bot.conftest import announcement_schedules
from tests.bot.test_commands import stamp
from tests.bot.test_phrase_languages import DEFAULT_NOW, LANGUAGES, corpus

if TYPE_CHECKING:
    from bot.app import Crier
    from tests.bot.conftest import World


def _utc(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)


def _first(value: str | list[str] | None) -> str | None:
    return value if value is None or isinstance(value, str) else value[0]


def _cases() -> list[Any]:
    params = []
    for language in LANGUAGES:
        data = corpus(language)
        for number, case in enumerate(data["case"], 1):
            when, repeat = _first(case.get("when")), _first(case.get("repeat"))
            label = f"{language}-{number} when={when!r} repeat={repeat!r}"
            params.append(
                pytest.param(case.get("now", DEFAULT_NOW), data["defaults"], case, id=label)
            )
    return params


@pytest.fixture
def clock(request: pytest.FixtureRequest) -> FakeClock:
    return FakeClock(_utc(getattr(request, "param", DEFAULT_NOW)))


LABELS = {
    "fr": ("**Première :** ", "**Prochaine :** ", "**Répétition :** "),
    "de": ("**Erstes Mal:** ", "**Nächstes Mal:** ", "**Wiederholung:** "),
    "es-ES": ("**Primera vez:** ", "**Próxima vez:** ", "**Se repite:** "),
}
"""The confirmation's first, next and repeats labels in the member's language (English for
a locale without a catalog, like ``es-419``)."""
ENGLISH = ("**First:** ", "**Next:** ", "**Repeats:** ")


def full(dt: datetime) -> str:
    return f"<t:{int(dt.timestamp())}:F>"


@pytest.mark.parametrize(("clock", "defaults", "case"), _cases(), indirect=["clock"])
async def test_the_corpus_through_schedule(
    world: World, crier: Crier, defaults: dict[str, str], case: dict[str, Any]
) -> None:
    options = {"message": "Hello", "timezone": case.get("zone", defaults["zone"])}
    when, repeat = _first(case.get("when")), _first(case.get("repeat"))
    if when is not None:
        options["when"] = when
    if repeat is not None:
        options["repeat"] = repeat
    locale = case.get("locale", defaults["locale"])
    first, nxt, repeats = LABELS.get(locale, ENGLISH)
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "schedule", options, locale=locale
    )
    cb = await h.response(timeout=5)
    content = cb.content or ""
    assert cb.ephemeral
    if "refuse" in case:
        assert case["refuse"] in content, content
        assert await announcement_schedules(crier) == []
        return
    posts = [_utc(t) for t in case["expect"]]
    assert f"{first}{stamp(posts[0])}" in content, content
    if len(posts) > 1:
        assert nxt + ", ".join(full(t) for t in posts[:3]) + "\n" in content, content
    if "words" in case:
        # The words are stored in English; the answer says the rule in the member's language.
        a = await crier.bot.announcements.get(world.guild.id, 1)
        assert case["words"] in (a.repeat_words or ""), a.repeat_words
        rule = a.rule
        assert rule is not None
        with i18n.speaking(locale):
            said = spoken_rule(rule, a.timezone)
        [line] = [line for line in content.splitlines() if line.startswith(repeats)]
        assert line == repeats + said, content
    if "note" in case:
        # A note naming the order of a date says it in the member's language.
        note = i18n.translate(case["note"], locale, context=i18n.ANSWER)
        assert note in content, content
    if len(posts) > 1:
        [info] = await announcement_schedules(crier)
        assert info.next_fire == posts[0]
    else:
        [job] = await crier.sched.list_jobs()
        assert job.next_ts == posts[0].timestamp()


async def test_edit_reads_the_members_language_too(world: World, crier: Crier) -> None:
    """/edit reads ``when`` and ``repeat`` like /schedule: in German for a German member
    (Tuesday 1 December 2026 11:00 in Berlin; Friday 4 December 20:00 is 19:00 UTC)."""
    berlin = "Europe/Berlin"

    async def command(name: str, options: dict[str, Any]) -> str:
        h = await world.fake.invoke_command(
            world.guild, world.general, world.admin, name, options, locale="de"
        )
        return (await h.response(timeout=5)).content or ""

    content = await command(
        "schedule", {"message": "Hallo", "when": "morgen 9 Uhr", "timezone": berlin}
    )
    assert f"**Erstes Mal:** {stamp(_utc('2026-12-02 08:00'))}" in content, content
    content = await command("edit", {"id": 1, "when": "Freitag 20 Uhr", "repeat": "jeden Freitag"})
    assert "→ jeden Freitag um 20:00 (Europe/Berlin)" in content, content
    assert "Ich habe `jeden Freitag` als `every friday` gelesen." in content, content
    [info] = await announcement_schedules(crier)
    assert info.next_fire == _utc("2026-12-04 19:00")
    content = await command("edit", {"id": 1, "repeat": "alle zwei Tage um"})
    assert "Ich konnte „alle zwei Tage um“ nicht als Wiederholung lesen" in content, content
