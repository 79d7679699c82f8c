"""Bad input, generated: ``/schedule`` through the real discord.py client and the fake Discord,
and malformed settings and database files given to ``python -m bot``.

``/schedule`` (one in-process bot on a FakeClock, reused across examples). Hypothesis draws
``when`` (valid forms, their edges, and junk: huge numbers, other scripts' digits, DST gaps,
NUL), ``repeat`` (presets, intervals, cron with every field out of range, macros, crons that
never fire), ``timezone`` (real, misspelt, path-like, NUL), ``mention``, ``channel`` (another
guild's, a voice channel) and the message (markdown, ``@everyone``/``@here``, role and user
mentions, SQL metacharacters, 2,000 characters and more, control characters, NUL, emoji,
right-to-left overrides), typed in the option or in the modal. For every example:

* Discord's client may refuse it (over a length limit, an empty option): then no interaction
  is sent and nothing is written;
* otherwise the bot answers, ephemerally, every time, and never with the generic "Something
  went wrong" (an unhandled exception): either a refusal that says what was wrong (with
  nothing written: every table is compared) or a confirmation;
* when it is accepted, the text is stored verbatim (the database's bytes equal the typed
  bytes) and, once the FakeClock reaches its time, posted verbatim (the fake's message equals
  the mention prefix plus the typed text, byte for byte), and nothing pings @everyone, @here
  or a role the member could not ping (the member here has no Mention @everyone).

Settings and files: random ``.env`` contents never give anything but settings or one clear
:class:`ConfigError` (in process, many examples), and a set of malformed ``.env`` files and
corrupt database files given to ``python -m bot`` each give one clear line on stderr, a
non-zero exit, and leave the file as it was (its hash).
"""

from __future__ import annotations

import asyncio
import random
import re
import socket
import sqlite3
import tempfile
from collections import Counter
from contextlib import closing
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.app import Crier, bot_migrations
from bot.config import ConfigError, load_settings
from scheduler import SqliteStore
from tests.bot.conftest import World, db_snapshot
from tests.bot.test_config import assert_one_clear_line, clean_env, run_bot
from tests.fakediscord import FakeDiscord
from tests.fakediscord import Permissions as P
from tests.fakediscord.interactions import CB_CHANNEL_MESSAGE, CB_MODAL, iter_components
from tests.proof.conftest import size
from tests.proof.harness import file_hash

if TYPE_CHECKING:
    from scheduler.testing import FakeClock

EXAMPLES = size(120, 600)
GENERIC = "Something went wrong"
TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GabcDE.abcdefghijklmnopqrstuvwxyz0123456789AB"

# Placeholders the strategies put in messages; the test swaps in the world's real ids.
LOUD, QUIET, EVERYONE_ROLE, USER = (
    "\ue000L\ue000",
    "\ue000Q\ue000",
    "\ue000E\ue000",
    "\ue000U\ue000",
)

NASTY = [
    "'; DROP TABLE bot_announcements; --",
    '" OR 1=1 --',
    "Robert'); DELETE FROM scheduler_jobs WHERE ('1'='1",
    "%s %d {0} {message} $1 \\x00 \\n",
    "@everyone",
    "@here",
    "@everyone@here",
    "＠everyone",
    "@\u200beveryone",
    f"<@&{LOUD}>",
    f"<@&{QUIET}>",
    f"<@&{EVERYONE_ROLE}>",
    f"<@{USER}>",
    f"<@!{USER}>",
    "<@&123456789012345678>",
    "<#1>",
    "<t:1900000000:R>",
    "**bold** __underline__ ~~strike~~ ||spoiler|| `code`",
    "```py\nprint('hi')\n```",
    "> quote\n>>> block",
    "# Heading\n-# subtext\n- item",
    "[link](https://example.com) <https://example.com>",
    "🎉👨‍👩‍👧‍👦🏳️‍🌈🇫🇷",
    "e\u0301\u0301\u0301 Z\u0351\u0352\u0353",
    "\u202eevil\u202c",
    "\u200b\u200c\u200d\ufeff",
    "\x00",
    "a\x00b",
    "\x07\x08\x0b\x0c\x1b[31m",
    "\r\n",
    "\t",
    "\\",
    "\ud7ff\ue000\uffff",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
]

message_parts = st.one_of(
    st.sampled_from(NASTY),
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=20),
)
messages = st.one_of(
    st.lists(message_parts, min_size=1, max_size=8).map("".join),
    st.tuples(st.integers(1985, 2010), st.sampled_from(["x", "é", "🎉", "\x00", " "])).map(
        lambda t: t[1] * t[0]
    ),
    st.tuples(st.integers(1900, 2000), st.sampled_from(NASTY)).map(
        lambda t: (t[1] * (t[0] // max(1, len(t[1])) + 1))[: t[0]]
    ),
)

# `when`: a form rendered against the clock at run time, or literal text.
WhenSpec = tuple[str, Any]
relative = st.one_of(
    st.integers(1, 60 * 24 * 365 * 6).map(lambda m: ("lit", f"in {m}m")),
    st.tuples(st.integers(0, 99), st.integers(0, 99)).map(lambda t: ("lit", f"{t[0]}h{t[1]}m")),
    st.sampled_from(
        ["in 90m", "2h30m", "in an hour", "1.5h", "45s", "in 1 day 3 hours", "in 0m", "in -5m",
         "in 99999999999999999999m", "in 1e308h", "in 9" * 30, "in ١٢m", "in 12 fortnights",
         "0s", "in 5 years", "in 6 years"]
    ).map(lambda s: ("lit", s)),
)  # fmt: skip
clock_forms = st.sampled_from(
    ["18:00", "6pm", "6:30 pm", "noon", "midnight", "00:00", "23:59:59", "24:00", "23:60",
     "12am", "13pm", "0pm", "tomorrow 09:00", "tomorrow", "today 18:00", "9am tomorrow",
     "next fri 17:30", "monday 09:00", "funday 09:00", "18:00 utc", "18:00 +05:30",
     "18:00 +99:00", "18:00 -00:00", "9am europe/paris", "9am mars/olympus", "٢٠:٠٠",
     "１８:００", "18:00\x00", "dec 24 18:00", "24 dec 2031 6pm", "feb 30 10:00",
     "2031-02-29 10:00", "2032-02-29 10:00", "0000-01-01 00:00", "9999-12-31 23:59",
     "2031-03-30 01:30 europe/london", "2031-10-26 01:30 europe/london", "24/12/2031 10:00",
     "2031/12/24 10:00", "2031-12-24T18:00Z", "2031-12-24T18:00:30", "12.24 10:00"]
).map(lambda s: ("lit", s))  # fmt: skip
AHEAD = st.integers(-3600, 6 * 365 * 86400)  # a little in the past .. past the 5-year limit
stamps = st.one_of(
    AHEAD.map(lambda d: ("epoch", d)),
    AHEAD.map(lambda d: ("discord", d)),
    AHEAD.map(lambda d: ("epoch_ms", d)),
    st.sampled_from(
        ["<t:-1>", "<t:0>", "<t:99999999999999999999>", "<t:1900000000:Z>", "<t:1900000000",
         "99999999999999999999", "-1900000000", "1900000000.5", "0x71234567"]
    ).map(lambda s: ("lit", s)),
)  # fmt: skip
whens = st.one_of(
    relative, relative, relative, clock_forms, stamps,
    st.text(min_size=0, max_size=110).map(lambda s: ("lit", s)),
)  # fmt: skip

repeats = st.one_of(
    st.none(),
    st.none(),
    st.none(),
    st.sampled_from(
        ["daily", "weekly", "monthly", "hourly", "yearly", "once", "every 2h", "every 30 minutes",
         "every 1 minute", "every 59 seconds", "every 0 minutes", "every -1 hours",
         "every 99999999999999 hours", "every 1e9 days", "every 3 years", "every 2 months",
         "every monday", "weekdays", "mon,wed,fri", "0 9 * * 1-5", "*/0 * * * *", "0 0 31 2 *",
         "0 0 30 2 *", "0 0 29 2 *", "@reboot", "@yearly", "@annually", "@midnight", "@hourly",
         "* * * * * *", "60 * * * *", "0 24 * * *", "0 9 * * 8", "0 9 * * 7", "0 9 L * *",
         "0 9 * * mon#2", "H 9 * * *", "0 9 * * MON-FRI", "30 1 * * *", "0-59/7 * * * *",
         "*/1 * * * *", "0 9 1-31/40 * *", "0 9 ? * *", "0 9 * jan-dec *", "1,2,3 9 * * *",
         "0 0 1 1 * 2099", "\x00", "every\x002h"]
    ),
    st.text(min_size=0, max_size=110),
)  # fmt: skip
timezones = st.one_of(
    st.none(),
    st.none(),
    st.none(),
    st.sampled_from(
        ["UTC", "Europe/London", "america/new york", "Asia/Kathmandu", "Pacific/Chatham",
         "Australia/Lord_Howe", "Etc/GMT+14", "Etc/GMT-14", "EST5EDT", "posixrules", "Factory",
         "localtime", "Mars/Olympus", "Europe/Lodnon", "../../etc/passwd", "/etc/localtime",
         "UTC\x00", " ", "Europe/", "Europe/London/extra", "+05:30", "GMT+5", "Z", "\u0130stanbul"]
    ),
    st.text(min_size=0, max_size=70),
)  # fmt: skip


@dataclass
class Case:
    when: WhenSpec
    message: str
    modal: bool
    repeat: str | None
    timezone: str | None
    mention: str
    channel: str


cases = st.builds(
    Case,
    when=whens,
    message=messages,
    modal=st.booleans(),
    repeat=repeats,
    timezone=timezones,
    mention=st.sampled_from(["none"] * 8 + ["everyone", "loud", "quiet"]),
    channel=st.sampled_from(["here"] * 6 + ["news"] * 2 + ["other-guild", "voice"]),
)


valid_cases = st.builds(
    Case,
    when=st.one_of(
        st.integers(1, 60 * 24 * 30).map(lambda m: ("lit", f"in {m}m")),
        st.integers(60, 86400 * 365).map(lambda d: ("epoch", d)),
        st.sampled_from(["tomorrow 09:00", "18:00", "2h30m", "next fri 17:30"]).map(
            lambda s: ("lit", s)
        ),
    ),
    message=messages,
    modal=st.booleans(),
    repeat=st.sampled_from([None, None, None, "daily", "every 2h", "0 9 * * 1-5"]),
    timezone=st.sampled_from([None, None, "Europe/London", "Asia/Kathmandu"]),
    mention=st.sampled_from(["none", "none", "none", "loud"]),
    channel=st.sampled_from(["here", "news"]),
)
"""Options that are all valid: only the message is hostile, so most examples are accepted
and the text is checked byte for byte in the database and in the posted message."""


def render_when(spec: WhenSpec, now: float) -> str:
    kind, value = spec
    if kind == "epoch":
        return str(int(now) + value)
    if kind == "epoch_ms":
        return str((int(now) + value) * 1000)
    if kind == "discord":
        return f"<t:{int(now) + value}:F>"
    return str(value)


CLIENT_REFUSALS = (
    "shorter than min_length", "longer than max_length", "longer than 2000", "is required",
)  # fmt: skip
"""What Discord's own client refuses before sending anything (it then sends no interaction)."""

REFUSAL = re.compile(
    r"`|<#\d+>|<@&\d+>|<t:\d+|\*\*|^(You |I |Announcements |The message |Only |Please |That)"
)
"""Every refusal names the problem: it shows an example or the input in backticks, the time
it understood, the channel, role or permission, or is one of the plain sentences of
bot/checks.py."""


class Fuzz:
    def __init__(self, world: World, crier: Crier, clock: FakeClock, db: Path) -> None:
        self.world, self.crier, self.clock, self.db = world, crier, clock, db
        # Posting hundreds of times to two channels: Discord's per-channel limit (covered in
        # tests/bot/test_delivery.py) would only make the run wait.
        world.fake.ratelimits.set_message_limit(10_000, 1.0)
        g = world.guild
        self.loud = g.add_role("loud", mentionable=True)
        self.quiet = g.add_role("quiet", mentionable=False)
        self.lounge = g.add_channel("lounge", type=2)
        self.other = world.fake.add_guild(name="Elsewhere", bot_permissions=P.DEFAULT_BOT)
        self.elsewhere = self.other.add_channel("elsewhere")
        self.outcomes: Counter[str] = Counter()
        self.refusals: Counter[str] = Counter()

    def summary(self, what: str, examples: int) -> None:
        """After the run's last example: what happened, and the refusals seen."""
        if sum(self.outcomes.values()) != examples:
            return
        print(f"\n/schedule fuzz ({what}): {dict(self.outcomes)}")
        for line, n in self.refusals.most_common(25):
            print(f"  {n:4d} x {line}")

    def fill(self, text: str) -> str:
        return (
            text.replace(LOUD, str(self.loud.id))
            .replace(QUIET, str(self.quiet.id))
            .replace(EVERYONE_ROLE, str(self.world.guild.id))
            .replace(USER, str(self.world.member.user.id))
        )

    def options(self, case: Case) -> dict[str, Any]:
        w = self.world
        options: dict[str, Any] = {"when": render_when(case.when, self.clock.time())}
        if not case.modal:
            options["message"] = self.fill(case.message)
        if case.repeat is not None:
            options["repeat"] = case.repeat
        if case.timezone is not None:
            options["timezone"] = case.timezone
        if case.mention != "none":
            options["mention"] = {
                "everyone": w.guild.everyone_role, "loud": self.loud, "quiet": self.quiet,
            }[case.mention]  # fmt: skip
        if case.channel != "here":
            options["channel"] = {
                "news": w.news, "other-guild": self.elsewhere, "voice": self.lounge,
            }[case.channel]  # fmt: skip
        return options

    async def run(self, case: Case) -> None:
        w = self.world
        options = self.options(case)
        # What an earlier example set going ends first (a CI run once caught a prune job of
        # one in progress in the snapshot, and finished in the one after a refusal).
        await asyncio.wait_for(self.crier.sched.wait_idle(), 30)
        before = await db_snapshot(self.crier)
        try:
            h = await w.fake.invoke_command(w.guild, w.general, w.admin, "schedule", options)
        except ValueError as exc:  # Discord's client would not send it
            assert any(r in str(exc) for r in CLIENT_REFUSALS) or "channel type" in str(exc), exc  # noqa: PT017 (refusing is one allowed outcome)
            self.outcomes["refused by Discord's client"] += 1
            assert await db_snapshot(self.crier) == before
            return
        cb = await h.response(timeout=10)
        text = self.fill(case.message)
        if cb.type == CB_MODAL:
            assert not case.modal or "message" not in options
            assert h.modal is not None
            [field] = [
                c
                for c in iter_components(h.modal["components"])
                if c["type"] == 4 and c["label"] == "Message"
            ]
            try:
                h = await h.submit_modal({field["custom_id"]: text})
            except ValueError as exc:
                assert any(r in str(exc) for r in CLIENT_REFUSALS), exc  # noqa: PT017 (refusing is one allowed outcome)
                self.outcomes["modal refused by Discord's client"] += 1
                assert await db_snapshot(self.crier) == before
                return
            cb = await h.response(timeout=10)
        assert cb.type == CB_CHANNEL_MESSAGE, (cb.type, cb.data)
        assert cb.ephemeral, (cb.type, cb.data)
        content = cb.content or ""
        assert GENERIC not in content, (options, content)
        found = re.match(r"✅ Scheduled announcement \*\*#(\d+)\*\*", content)
        if found is None:
            assert content.strip(), content
            assert REFUSAL.search(content), content
            assert await db_snapshot(self.crier) == before, (options, content)
            self.outcomes["refused by the bot"] += 1
            self.refusals[re.sub(r"\d+", "N", content.split("\n")[0])[:70]] += 1
            return
        await self.accepted(int(found[1]), text)

    async def accepted(self, local_id: int, text: str) -> None:
        w, crier = self.world, self.crier
        a = await crier.bot.announcements.get(w.guild.id, local_id)
        with closing(sqlite3.connect(self.db)) as conn:
            (stored,) = conn.execute(
                "SELECT CAST(content AS BLOB) FROM bot_announcements WHERE id = ?", (a.id,)
            ).fetchone()
        assert stored == text.encode("utf-8"), "stored text differs from the typed text"
        first = await crier.bot.announcements.next_fire(a)
        assert first is not None
        channel = w.fake.channels[a.channel_id]
        before = len(w.fake.bot_messages(channel))
        self.clock.set(first)
        await asyncio.wait_for(crier.sched.wait_idle(), 30)
        posted = w.fake.bot_messages(channel)
        assert len(posted) == before + 1, (
            text,
            await crier.bot.announcements.get(w.guild.id, local_id),
        )
        msg = posted[-1]
        assert msg.content.encode("utf-8") == a.text.encode("utf-8"), "posted text differs"
        assert a.text == (text if a.mention is None else f"{_markup(a.mention)} {text}")
        # The member has no Mention @everyone: no @everyone/@here, no unmentionable role.
        assert not msg.pings.everyone, msg.pings
        assert not msg.pings.here, msg.pings
        assert self.quiet.id not in msg.pings.roles
        assert w.guild.id not in msg.pings.roles
        self.outcomes["accepted and posted verbatim"] += 1
        if a.recurring:
            h = await w.fake.invoke_command(w.guild, w.general, w.admin, "cancel", {"id": local_id})
            assert "Canceled announcement" in ((await h.response(timeout=10)).content or "")
        # Move on a minute: the next example's relative times start from a fresh "now".
        self.clock.advance(timedelta(minutes=1))


def _markup(mention: str) -> str:
    from bot.announcements import mention_markup

    return mention_markup(mention)


@pytest.fixture
def fuzz(world: World, crier: Crier, clock: FakeClock, tmp_path: Path) -> Fuzz:
    return Fuzz(world, crier, clock, tmp_path / "crier.db")


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    print_blob=True,
)
@given(case=cases)
async def test_schedule_answers_every_input_and_keeps_text_verbatim(fuzz: Fuzz, case: Case) -> None:
    await fuzz.run(case)
    fuzz.summary("every option generated", EXAMPLES)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    print_blob=True,
)
@given(case=valid_cases)
async def test_hostile_messages_are_stored_and_posted_verbatim(fuzz: Fuzz, case: Case) -> None:
    await fuzz.run(case)
    fuzz.summary("valid options, hostile messages", EXAMPLES)


# --- .env files ------------------------------------------------------------------------------

SETTINGS_KEYS = [
    "DISCORD_TOKEN", "DATABASE_URL", "DEV_GUILD_ID", "LOG_LEVEL", "DISCORD_API_BASE",
    "DISCORD_GATEWAY_URL", "SEND_SPACING_SECONDS", "CATCH_UP_WINDOW_MINUTES",
    "SCHEDULER_LEASE_SECONDS", "SCHEDULER_SWEEP_SECONDS", "NONCE_WINDOW_SECONDS",
]  # fmt: skip
env_values = st.one_of(
    st.sampled_from(
        [TOKEN, TOKEN + "\x01", "Bot " + TOKEN, "'" + TOKEN, '"' + TOKEN, "1", "0", "-1", "nan",
         "inf", "-inf", "1e999", "0x10", "1_000", "١٢", "  ", "", "'unterminated", '"a\\nb"',
         "${HOME}", "$(rm -rf /)", "sqlite:///", "sqlite:///x.db", "postgresql:///", "http://x",
         "ws://x", "debug", "LOUD", "99999999999999999999999999", "\x00", "a=b=c", "# comment"]
    ),
    st.text(max_size=40),
)  # fmt: skip
env_lines = st.one_of(
    st.tuples(st.sampled_from(SETTINGS_KEYS), env_values).map(lambda kv: f"{kv[0]}={kv[1]}"),
    st.tuples(st.sampled_from(SETTINGS_KEYS), env_values).map(lambda kv: f"export {kv[0]}={kv[1]}"),
    st.sampled_from(["# a comment", "", "not a setting", "=value", "KEY", "  DISCORD_TOKEN = x"]),
    st.text(max_size=60),
)
env_files = st.one_of(
    st.tuples(
        st.lists(env_lines, max_size=8),
        st.sampled_from(["\n", "\r\n", "\r"]),
        st.sampled_from(["utf-8", "utf-8-sig", "latin-1", "utf-16"]),
    ).map(lambda t: t[1].join(t[0]).encode(t[2], "replace")),
    st.binary(max_size=200),
)


def read_env_file(data: bytes) -> Any:
    """load_settings on a .env holding ``data`` (and nothing in the environment)."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / ".env"
        path.write_bytes(data)
        return load_settings({}, env_file=path)


@settings(max_examples=size(400, 3000), deadline=None)
@given(data=env_files)
def test_any_env_file_gives_settings_or_one_clear_error(data: bytes) -> None:
    try:
        s = read_env_file(data)
    except ConfigError as exc:
        message = str(exc)
        assert message.strip(), message
        assert "\n" not in message, message
        assert "\r" not in message, message
        assert TOKEN not in message  # never echoes the token
        return
    # Accepted: a token that can go in an HTTP header, and sane numbers.
    assert s.token, repr(s.token)
    assert all(c.isprintable() and not c.isspace() for c in s.token), repr(s.token)
    for value in (s.send_spacing, s.catch_up_window, s.lease, s.sweep_interval, s.nonce_window):
        assert value == value
        assert value not in (float("inf"), float("-inf"))
    assert s.dev_guild_id is None or 0 < s.dev_guild_id < 2**64


def nowhere() -> dict[str, str]:
    """Discord on a local port nothing listens on: a bot that got past its settings would
    fail to connect there, never reach the internet."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return {
        "DISCORD_API_BASE": f"http://127.0.0.1:{port}/api/v10",
        "DISCORD_GATEWAY_URL": f"ws://127.0.0.1:{port}/",
    }


@pytest.mark.parametrize(
    ("content", "says"),
    [
        pytest.param(b"DISCORD_TOKEN=" + TOKEN.encode() + b"\nLOG_LEVEL=INFO\xe9\n", ".env",
                     id="not-utf-8"),
        pytest.param(b"DISCORD_TOKEN='" + TOKEN.encode() + b"\n", ".env", id="unterminated-quote"),
        pytest.param(b"DISCORD_TOKEN=" + TOKEN.encode() + b"\nthis is not a setting\n", ".env",
                     id="not-a-setting"),
        pytest.param(b"DISCORD_TOKEN=" + TOKEN.encode() + b"\x01\n", "DISCORD_TOKEN",
                     id="control-character-in-token"),
        pytest.param(b"DISCORD_TOKEN=" + TOKEN.encode() + b"\x00\n", "DISCORD_TOKEN",
                     id="nul-in-token"),
        pytest.param(b"DISCORD_TOKEN=" + TOKEN.encode() + b"\nSCHEDULER_LEASE_SECONDS=nan\n",
                     "SCHEDULER_LEASE_SECONDS", id="nan"),
        pytest.param(b"DISCORD_TOKEN=" + TOKEN.encode() + b"\nSEND_SPACING_SECONDS=inf\n",
                     "SEND_SPACING_SECONDS", id="inf"),
        pytest.param(b"DISCORD_TOKEN=" + TOKEN.encode() + b"\nCATCH_UP_WINDOW_MINUTES=1e999\n",
                     "CATCH_UP_WINDOW_MINUTES", id="overflow"),
        pytest.param(b"DISCORD_TOKEN=" + TOKEN.encode() + b"\nDEV_GUILD_ID=" + b"9" * 30 + b"\n",
                     "DEV_GUILD_ID", id="guild-id-too-big"),
        pytest.param(b"DISCORD_TOKEN=" + TOKEN.encode() + b"\nDATABASE_URL=sqlite:///a\x00b.db\n",
                     "DATABASE_URL", id="nul-in-database-path"),
        pytest.param(b"\xff\xfe\x00\x00garbage", ".env", id="binary"),
    ],
)  # fmt: skip
async def test_malformed_env_file_is_one_clear_line(
    tmp_path: Path, content: bytes, says: str
) -> None:
    before = write_file(tmp_path / ".env", content)
    run = await run_bot(tmp_path, clean_env(**nowhere()))
    line = assert_one_clear_line(run, says)
    assert TOKEN not in line
    assert listing(tmp_path) == before  # nothing created, the .env as it was


# --- database files --------------------------------------------------------------------------


async def crier_database(path: Path) -> bytes:
    """A real crier database (WAL mode, every table), with an announcement in it."""
    store = SqliteStore(path)
    await store.open([bot_migrations()])
    await store.close()
    with closing(sqlite3.connect(path)) as conn:
        # Migrations that rebuild a table leave free pages; without them the announcement's
        # pages are the file's last ones, which is what the "last page" corruption garbles.
        conn.execute("VACUUM")
        conn.execute(
            "INSERT INTO bot_announcements (guild_id, local_id, channel_id, author_id, content, "
            "allowed_mentions, first_ts, timezone, state, created_at, updated_at) "
            "VALUES (1, 1, 1, 1, ?, '{}', 1, 'UTC', 'scheduled', 1, 1)",
            ("x" * 3000,),
        )
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return finish_database(path)


def finish_database(path: Path) -> bytes:
    for extra in ("-wal", "-shm"):
        Path(f"{path}{extra}").unlink(missing_ok=True)
    data = path.read_bytes()
    path.unlink()
    return data


def write_file(path: Path, data: bytes) -> dict[str, str]:
    path.write_bytes(data)
    return listing(path.parent)


def listing(folder: Path) -> dict[str, str]:
    """Every file in ``folder`` with its hash."""
    return {p.name: file_hash(p) for p in sorted(folder.iterdir()) if p.is_file()}


def corrupt(good: bytes, how: str) -> bytes:
    rng = random.Random(how)
    page = 4096

    def noise(n: int) -> bytes:
        return bytes(rng.randrange(256) for _ in range(n))

    return {
        "random-bytes": noise(2 * page),
        "text-file": b"DISCORD_TOKEN=oops, this is a .env\n" * 50,
        "header-then-garbage": good[:100] + noise(len(good) - 100),
        "truncated": good[: len(good) // 2 + 10],
        "zeroed-page-2": good[:page] + b"\0" * page + good[2 * page :],
        "schema-page-garbled": good[:100] + noise(page - 100) + good[page:],
        "last-page-garbled": good[:-page] + noise(page),
    }[how]


@pytest.mark.parametrize(
    "how",
    ["random-bytes", "text-file", "header-then-garbage", "truncated", "zeroed-page-2",
     "schema-page-garbled", "last-page-garbled"],
)  # fmt: skip
async def test_corrupt_database_is_one_clear_line_and_left_untouched(
    tmp_path: Path, how: str
) -> None:
    db = tmp_path / "crier.db"
    before = write_file(db, corrupt(await crier_database(tmp_path / "good.db"), how))
    async with FakeDiscord() as fake:
        guild = fake.add_guild(name="Db", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES)
        guild.add_channel("general")
        env = clean_env(**fake.env()) | {"DATABASE_URL": f"sqlite:///{db}"}
        run = await run_bot(tmp_path, env)
    line = assert_one_clear_line(run, str(db))
    assert "restore" in line.lower() or "untouched" in line, line
    assert listing(tmp_path) == before, "the corrupt file was changed (or files were added)"


async def test_database_path_that_cannot_be_created_is_not_blamed_on_discord(
    tmp_path: Path,
) -> None:
    """The database's folder can't be made (a file is in the way): the one line says so, and
    does not send the admin looking for a network problem."""
    blocker = tmp_path / "afile"
    before = write_file(blocker, b"in the way")
    db = blocker / "crier.db"
    run = await run_bot(
        tmp_path, clean_env(DISCORD_TOKEN=TOKEN, DATABASE_URL=f"sqlite:///{db}", **nowhere())
    )
    line = assert_one_clear_line(run, str(blocker))
    assert "Discord" not in line, line
    assert listing(tmp_path) == before


async def test_dev_guild_the_bot_is_not_in_is_one_clear_line(tmp_path: Path) -> None:
    """DEV_GUILD_ID names a server the bot was never added to (a typo, another server):
    Discord refuses the command sync; that is one clear line naming the setting."""
    async with FakeDiscord() as fake:
        fake.add_guild(name="Mine", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES)
        env = clean_env(**fake.env()) | {
            "DATABASE_URL": f"sqlite:///{tmp_path / 'crier.db'}",
            "DEV_GUILD_ID": "123456789012345678",
        }
        run = await run_bot(tmp_path, env)
    line = assert_one_clear_line(run, "DEV_GUILD_ID", "123456789012345678")
    assert fake.token not in line
