"""Every example of a time or a repeat that crier shows a member is one it reads, in the
language it is shown in: the ``/schedule`` options' descriptions as Discord shows them in the
member's language, and the dashboard form's hints. A French member told to type
``demain 9h`` can type it; a hint with a date already past would be refused.

The examples are read out of the texts as shipped (each catalog's translation): after a
leading ``Label:``, up to a trailing ``(…)``, split at commas; ``cron`` names a form, it is
not an example, nor is a Discord timestamp (a form: any fixed one is past one day)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from bot import i18n
from bot.parsing.display import example_date
from bot.parsing.repeat import parse_repeat
from bot.parsing.when import parse_when

LOCALES = ["en-US", "en-GB", "fr", "de", "es-ES", "pt-BR"]
"""Discord's two English locales (the source text) and every shipped catalog."""

NOW = datetime(2026, 12, 28, 10, 0, tzinfo=UTC)
"""Past the 24 December of the year: the hint's date example must be next year's."""

ZONE = ZoneInfo("Europe/Paris")

WHEN_OPTION = "When: in 90m, tonight 9pm, tomorrow 9am, 24/12 18:00 (optional if repeat has a time)"
EDIT_WHEN_OPTION = "A new time: in 90m, 18:00, tomorrow 09:00, 24/12 18:00, or <t:1735000000>"
REPEAT_OPTION = "every friday at 8pm, daily at 9, biweekly, last day of the month, every 2h, cron"
EDIT_REPEAT_OPTION = "A new rule (daily, weekly, every 2h, 0 9 * * 1-5…), or none to post once"
WHEN_HINT = "in 90m, tomorrow 9am, {date}"
REPEAT_HINT = "every friday at 8pm, daily, every 2 hours, cron"


def examples(text: str) -> list[str]:
    # A Discord timestamp (after the language's "or") shows a form, like cron.
    text = re.sub(r",?\s+\w+\s+<t:\d+>$", "", text)
    head, sep, rest = text.partition(": ")
    if sep and "," not in head:
        text = rest
    if text.endswith(")"):
        text = text[: text.rindex(" (")]
    found = [part.strip() for part in text.split(",")]
    return [x for x in found if x and x != "cron"]


def listed(text: str) -> list[str]:
    """The examples inside the parentheses of ``text``, a cron expression left out."""
    inside = text[text.index("(") + 1 : text.index(")")]
    return [x.strip() for x in inside.split(",") if "*" not in x]


def shown(message: str, locale: str, context: str, **values: str) -> str:
    text = message if locale.startswith("en") else i18n.lookup(message, locale, context)
    assert text, f"no {locale} translation of {message!r}"
    return text.format(**values)


def test_examples_are_read_out_of_the_texts() -> None:
    assert examples(WHEN_OPTION) == ["in 90m", "tonight 9pm", "tomorrow 9am", "24/12 18:00"]
    assert examples("Neue Zeit: in 90 Minuten, 18:00 oder <t:1735000000>") == [
        "in 90 Minuten",
        "18:00",
    ]
    assert examples("Em inglês: every friday at 8pm, daily, cron (opcional)") == [
        "every friday at 8pm",
        "daily",
    ]


@pytest.mark.parametrize("locale", LOCALES)
def test_the_when_examples_are_read_in_their_language(locale: str) -> None:
    date_example = example_date(NOW.astimezone(ZONE).date())
    assert date_example.startswith("2027-12-24")
    texts = [
        shown(WHEN_OPTION, locale, "option"),
        shown(EDIT_WHEN_OPTION, locale, "option"),
        shown(WHEN_HINT, locale, "answer", date=date_example),
    ]
    for text in texts:
        for example in examples(text):
            assert parse_when(example, ZONE, NOW, locale=locale) > NOW, (text, example)


@pytest.mark.parametrize("locale", LOCALES)
def test_the_repeat_examples_are_read_in_their_language(locale: str) -> None:
    edit = shown(EDIT_REPEAT_OPTION, locale, "option")
    pairs = [(edit, example) for example in listed(edit)]
    for text in (shown(REPEAT_OPTION, locale, "option"), shown(REPEAT_HINT, locale, "answer")):
        pairs += [(text, example) for example in examples(text)]
    assert len(pairs) >= 8
    for text, example in pairs:
        assert parse_repeat(example, NOW, ZONE, locale=locale) is not None, (text, example)


REFUSAL_WHEN = (
    "`in 90m`, `18:00`, `tomorrow 09:00`, `{date}` or a Discord timestamp like `<t:1735000000>`"
)
REFUSAL_REPEAT = (
    "`daily`, `weekly`, `every weekday`, `every 2 hours`, `every friday at 20:00`, "
    "`first monday of the month`, `monthly on the 15th` or a cron expression like "
    "`0 9 * * 1-5` (09:00 on weekdays)"
)


def quoted(text: str) -> list[str]:
    """The examples in backticks in a refusal, a cron expression and a timestamp left out."""
    return [x for x in re.findall(r"`([^`]+)`", text) if "*" not in x and "<t:" not in x]


@pytest.mark.parametrize("locale", LOCALES)
def test_the_examples_a_refusal_suggests_are_read_in_its_language(locale: str) -> None:
    date_example = example_date(NOW.astimezone(ZONE).date())
    when = quoted(shown(REFUSAL_WHEN, locale, "answer", date=date_example))
    assert len(when) == 4
    for example in when:
        assert parse_when(example, ZONE, NOW, locale=locale) > NOW, example
    repeat = quoted(shown(REFUSAL_REPEAT, locale, "answer"))
    assert len(repeat) == 7
    for example in repeat:
        assert parse_repeat(example, NOW, ZONE, locale=locale) is not None, example


def test_the_date_example_is_always_ahead() -> None:
    assert example_date(date(2026, 12, 3)) == "2026-12-24 18:00"
    assert example_date(date(2026, 12, 24)) == "2027-12-24 18:00"
