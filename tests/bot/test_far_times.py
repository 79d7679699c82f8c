"""Times out of range are refused in words, never an error (issue 32): an import file's
times at the edges of what Python holds (``9999-12-31T23:59:59-23:59``), far ahead, or with
rules that have no time left are refused row by row; a ``<t:…>`` anywhere in a text (a
message shown on the dashboard, a name echoed by ``python -m bot import``) shows as typed
when it names no time Python holds. Properties over arbitrary times and offsets, then the
operator's command line end to end. (/import and the dashboard's upload: test_export_import's
hostile files and tests/web/test_dashboard_quotas.py.)"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.parsing.display import stamp_time
from bot.parsing.errors import MAX_AHEAD
from bot.requests.checks import Refusal
from bot.requests.export_doc import DocAnnouncement, RowRefused, read_document
from bot.requests.importing import import_start
from bot.web.dashboard.text import discord_html
from tests.bot.conftest import NOW, CrierFactory, World
from tests.bot.test_import_cli import operator  # noqa: F401 (a fixture used here)

if TYPE_CHECKING:
    from pathlib import Path

ZONES = [ZoneInfo(z) for z in ("UTC", "Pacific/Kiritimati", "Etc/GMT+12", "America/New_York")]
RULES: list[dict[str, Any] | None] = [
    None,
    {"kind": "cron", "cron": "0 9 * * *", "words": "daily"},
    {"kind": "interval", "every_seconds": 60, "words": "every minute"},
    {"kind": "cron", "cron": "0 9 * * 1", "words": "first monday", "nth": [1]},
    {"kind": "cron", "cron": "0 9 29 2 *", "words": "on 29 February"},
    {
        "kind": "cron",
        "cron": "0 9 1 * *",
        "words": "every 99999 months",
        "step": {"count": 99999, "unit": "month", "since": "2020-01-01"},
    },  # none after 2030
]

any_time = st.builds(
    lambda when, minutes: when.replace(tzinfo=timezone(timedelta(minutes=minutes))).isoformat(),
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),  # noqa: DTZ001 (an offset is added)
    st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1),
)
"""Any time Python reads from ISO 8601 with an offset, the edges included."""


def row_of(first: str, nxt: str | None, until: str | None, rule: Any, since: date) -> Any:
    """The announcement a file's row is read as (or why it can't be)."""
    if rule is not None and rule.get("words") == "every 3 months":
        rule = {**rule, "step": {"count": 3, "unit": "month", "since": since.isoformat()}}
    value = {
        "key": "crier:1:1", "text": "hi", "first": first, "next": nxt, "until": until,
        "timezone": "UTC", "destination": {"name": "news"}, "repeat": rule,
    }  # fmt: skip
    doc = read_document(json.dumps({"version": 2, "announcements": [value]}).encode())
    [(_, row, _)] = doc.announcements
    return row


@settings(max_examples=400, deadline=None)
@given(
    first=any_time,
    nxt=st.none() | any_time,
    until=st.none() | any_time,
    rule=st.sampled_from(
        [*RULES, {"kind": "cron", "cron": "0 9 1 * *", "words": "every 3 months"}]
    ),
    since=st.dates(),
    zone=st.sampled_from(ZONES),
)
def test_any_time_in_a_file_is_read_and_planned_or_refused_in_words(
    first: str, nxt: str | None, until: str | None, rule: Any, since: date, zone: ZoneInfo
) -> None:
    """Whatever the file's times, the row is read or refused (``RowRefused``), and a row
    read starts within the next ``MAX_AHEAD`` or is refused (``Refusal``): nothing else is
    raised."""
    row = row_of(first, nxt, until, rule, since)
    if isinstance(row, RowRefused):
        assert str(row)
        return
    assert isinstance(row, DocAnnouncement)
    try:
        start = import_start(row, zone, NOW)
    except Refusal as refused:
        assert str(refused)  # noqa: PT017 (refusing is one allowed outcome)
    else:
        assert NOW < start <= NOW + MAX_AHEAD


@pytest.mark.parametrize(
    ("first", "why"),
    [
        ("9999-12-31T23:59:59-23:59", "`first` is out of range: a time falls in the years 1 to"),
        ("0001-01-01T00:00:00+00:01", "`first` is out of range"),
    ],
)
def test_a_time_past_the_edges_of_python_is_refused_in_words(first: str, why: str) -> None:
    row = row_of(first, None, None, None, date(2030, 1, 1))
    assert isinstance(row, RowRefused)
    assert str(row).startswith(why)


@settings(max_examples=300, deadline=None)
@given(
    seconds=st.integers(min_value=-(10**20), max_value=10**20)
    | st.sampled_from([-62135596800, -62135596800 + 86400, 253402300799, 253402300799 - 86400]),
    style=st.sampled_from(["", ":R", ":F", ":t"]),
    zone=st.sampled_from(ZONES),
    locale=st.sampled_from([None, "de", "fr"]),
)
def test_any_discord_timestamp_in_a_text_is_shown_never_an_error(
    seconds: int, style: str, zone: ZoneInfo, locale: str | None
) -> None:
    """A message may hold any ``<t:…>``: the dashboard shows the ones that name a time
    Python holds in the viewer's zone, and the others as they were typed."""
    typed = f"<t:{seconds}{style}>"
    shown = str(discord_html(f"at {typed}!", None, zone, NOW, locale=locale))
    assert shown.startswith("at ")
    if "<time" not in shown and "relative" not in shown:
        assert f"&lt;t:{seconds}{style}&gt;" in shown


def test_a_timestamp_of_a_hundred_thousand_digits_is_shown_as_typed() -> None:
    typed = "<t:" + "9" * 100_000 + ">"
    assert "9" * 100_000 in discord_html(typed, None, ZoneInfo("UTC"), NOW)


async def test_the_operators_import_refuses_out_of_range_times_in_words_with_status_1(
    world: World,
    crier_factory: CrierFactory,
    db_url: str,
    tmp_path: Path,
    operator: Any,  # noqa: F811 (the fixture imported above)
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The row is named with why (a refused row: status 1, as documented), never a
    traceback; a ``<t:…>`` past the year 9999 in an echoed name is printed as typed."""
    await crier_factory(database_url=db_url)
    base = {"text": "hi", "timezone": "UTC", "destination": {"name": "news"}}
    rows = [
        {**base, "key": "a", "first": "9999-12-31T23:59:59-23:59"},
        {**base, "key": "b", "first": "2031-01-01T00:00:00Z",
         "destination": {"name": "<t:99999999999999>"}},
        {**base, "key": "c", "first": (NOW + MAX_AHEAD + timedelta(days=1)).isoformat()},
    ]  # fmt: skip
    out = tmp_path / "far.json"
    out.write_text(json.dumps({"version": 2, "announcements": rows}))
    status = await operator(db_url, "import", str(out), "--guild", str(world.guild.id))
    said = capsys.readouterr()
    assert status == 1, said
    assert "Traceback" not in said.err
    assert said.err == "crier: nothing was imported: 3 rows refused (above)\n"
    lines = said.out.splitlines()
    assert lines[1].startswith("  refused  row 1: `first` is out of range"), said.out
    assert lines[2] == "  refused  row 2: this server has no channel named `#<t:99999999999999>`"
    assert lines[3].startswith("  refused  row 3: its `next` (2035-03-02 12:00 UTC) is more than")


def test_stamps_at_the_edges() -> None:
    assert stamp_time("0") == datetime(1970, 1, 1, tzinfo=UTC)
    assert stamp_time("253402300799") is None  # 9999-12-31 23:59:59: not in every zone
    assert stamp_time("9" * 16) is None
