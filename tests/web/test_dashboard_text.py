"""What the dashboard writes itself, in the viewer's language (issue 24): a time's weekday,
relative times, decimals and an unknown member, by Babel and the catalogs; English as
before for English and for a language crier doesn't speak."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.web.dashboard.core import html_lang
from bot.web.dashboard.text import discord_html, quantity, relative, time_html

FRIDAY = datetime(2030, 3, 1, 12, 0, tzinfo=UTC)
BERLIN = ZoneInfo("Europe/Berlin")


@pytest.mark.parametrize(
    ("locale", "shown"),
    [
        (None, "Fri 2030-03-01 13:00 CET"),
        ("en-US", "Fri 2030-03-01 13:00 CET"),
        ("ja", "Fri 2030-03-01 13:00 CET"),  # no catalog: English
        ("de", "Fr. 2030-03-01 13:00 CET"),
        ("fr", "ven. 2030-03-01 13:00 CET"),
        ("es-ES", "vie 2030-03-01 13:00 CET"),
        ("pt-BR", "sex. 2030-03-01 13:00 CET"),
    ],
)
def test_a_times_weekday_is_in_the_viewers_language(locale: str | None, shown: str) -> None:
    html = str(time_html(FRIDAY, BERLIN, locale))
    assert html.endswith(f">{shown}</time>"), html
    assert 'title="2030-03-01 12:00:00 UTC"' in html


@pytest.mark.parametrize(
    ("locale", "later", "earlier"),
    [
        (None, "in 2 hours", "1 hour and 30 minutes ago"),
        ("de", "in 2 Stunden", "vor 90 Minuten"),
        ("fr", "dans 2 heures", "il y a 90 minutes"),
        ("es-ES", "dentro de 2 horas", "hace 90 minutos"),
        ("pt-BR", "em 2 horas", "há 90 minutos"),
    ],
)
def test_relative_times_are_said_in_the_viewers_language(
    locale: str | None, later: str, earlier: str
) -> None:
    assert relative(FRIDAY + timedelta(hours=2), FRIDAY, locale) == later
    assert relative(FRIDAY - timedelta(minutes=90), FRIDAY, locale) == earlier
    now = {None: "now", "de": "jetzt", "fr": "maintenant", "es-ES": "ahora", "pt-BR": "agora"}
    assert relative(FRIDAY, FRIDAY, locale) == now[locale]


def test_decimals_and_unknown_members_in_the_viewers_language() -> None:
    assert quantity(1.25, 2, "s") == "1.25 s"
    assert quantity(1.25, 1, "s", "de") == "1,2 s"
    assert quantity(41.6, 0, "ms", "fr") == "42 ms"
    html = str(discord_html("<@42>", None, BERLIN, FRIDAY, locale="de"))
    assert "@Nutzer 42" in html
    assert (
        str(discord_html("<@42>", None, BERLIN, FRIDAY)) == '<span class="mention">@user 42</span>'
    )


def test_the_html_lang_is_the_locales_tag() -> None:
    assert [html_lang(x) for x in (None, "en-US", "de", "pt-BR", "es-ES")] == [
        "en", "en", "de", "pt-BR", "es-ES",
    ]  # fmt: skip
