"""Reminders benchmark: one occurrence's reminders to N members by DM (issue 35, item 1).

    python bench/reminders_bench.py [--members N] [--spacing S] [--runs R] [--ahead S]
                                    [--json PATH]

The bench serves the fake Discord (its rate limits off and its API-spec check off: what is
measured is the bot, not Discord nor the fake), a server with N members, and starts one
``python -m bot`` process on a SQLite file of its own (``REMINDER_SPACING_SECONDS=S``).
Through the bot's ``Announcements`` service (on a scheduler of the bench's own that never
runs a job) it writes one announcement with reminders an hour before, due an hour and a few
seconds ahead, and N members who asked (``bot_reminder_subscribers``, as the Remind me
button writes them). The bot's one reminder job then reminds them: for each member a look-up
of their roles (``GET /guilds/{g}/members/{u}``), the DM channel opened (``POST
/users/@me/channels``: a first reminder), the DM sent with its nonce, and the bookkeeping
(the group recorded ``queued`` in one write, each DM marked ``sending`` in the write that
records the previous one).

Measured per run, from what the fake recorded and the bot's ``/proc`` status:

- **time to the last DM** after the reminders' due instant, against the pacing floor
  ``N × S`` (the shared ``dm`` pace key starts two DMs at least S apart): the ratio says
  how much the bot adds to the pace it keeps; with ``--spacing 0`` it is the bot's own
  cost per reminder (the floor is 0: the time is reported alone, and per member);
- **peak memory** (``VmHWM``) of the bot process at the end, and its resident size just
  before the reminders (connected and idle, the same process): the difference is what the
  reminders cost;
- the DMs (N, one per member), duplicates and nonce re-sends (both 0).

The figure of the issue is ``--members 10000``; at the default spacing (0.25 s) its floor
is 2,500 s, so the bench's default is ``--spacing 0.02`` (200 s) and ``--spacing 0``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

with warnings.catch_warnings():  # discord.py imports the deprecated stdlib audioop
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord  # noqa: F401  (imported once here, warnings silenced)

from bench._stats import log, out, summarize, to_jsonable
from bot.announcements import REMIND_FN, SEND_FN, Announcements, Draft, RemindArgs, SendArgs
from bot.app import bot_migrations
from bot.db import BotDb
from bot.models import Limits
from scheduler import Registry, Scheduler, SqliteStore
from tests.fakediscord import FakeDiscord
from tests.fakediscord import Permissions as P
from tests.support.processes import Process, bot_env, procs, start_bot, until

LEAD = 3600.0
"""The reminders' lead: long enough that N DMs at any spacing benched go before the post."""
AHEAD = 8.0
"""Seconds from writing the announcement to its reminders' due instant (``--ahead``)."""
STARTUP = 120.0


@dataclass
class Run:
    members: int
    spacing: float
    floor: float
    first_after_due: float
    last_after_due: float
    ratio: float
    per_member_ms: float
    dms: int
    duplicates: int
    nonce_dedup_hits: int
    dm_sends: int
    member_lookups: int
    dm_channel_opens: int
    rss_before_mib: float
    peak_mib: float
    reminders_mib: float


def status_mib(pid: int, field: str) -> float:
    """A ``/proc/PID/status`` size (``VmRSS``, ``VmHWM``) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise LookupError(field)


def writer(path: Path) -> Scheduler:
    """A scheduler on the bot's file that writes as /schedule and the button do and never
    runs a job (opened without its driver)."""
    registry = Registry()

    @registry.action(SEND_FN, args=SendArgs, idempotent=True)
    async def never(ctx: Any, args: Any) -> None:
        raise AssertionError("the bench process must never deliver")

    @registry.action(REMIND_FN, args=RemindArgs, idempotent=True)
    async def never_remind(ctx: Any, args: Any) -> None:
        raise AssertionError("the bench process must never remind")

    return Scheduler(SqliteStore(path), registry, migrations=[bot_migrations()])


async def one_run(members: int, spacing: float, ahead: float = AHEAD) -> Run:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "crier.db"
        async with FakeDiscord(ratelimits=False, spec_check=False) as fake, procs() as bots:
            guild = fake.add_guild(name="Bench", bot_permissions=P.VIEW_CHANNEL | P.SEND_MESSAGES)
            admin = guild.add_member(name="admin")
            news = guild.add_channel("news")
            people = [guild.add_member(name=f"m{i}") for i in range(members)]
            sched = writer(db)
            await sched.open()  # the migrations, before the bot starts
            # The bench writes from a process of its own, which on SQLite wakes no other
            # process: the bot finds the planning job at its next sweep (a second here).
            env = bot_env(
                fake.env(), database_url=f"sqlite:///{db}", lease="30", sweep="1", spacing="0"
            ) | {"LOG_LEVEL": "WARNING", "REMINDER_SPACING_SECONDS": str(spacing)}
            bot = await start_bot(env, Path(tmp), "bot")
            bots.append(bot)
            await until(lambda: bool(fake.gateway.connected_sessions), STARTUP, "the bot")
            await until(lambda: fake.get_command("remindme") is not None, STARTUP, "commands")
            rss_before = status_mib(bot.pid, "VmRSS")
            due = time.time() + ahead
            await write(sched, guild.id, news.id, admin.id, [p.id for p in people], due)
            await sched.close()
            dms = await wait_for_dms(fake, bot, members, spacing, ahead)
            peak = status_mib(bot.pid, "VmHWM")
            return measure(fake, dms, members, spacing, due, rss_before, peak)


async def write(
    sched: Scheduler, guild_id: int, channel_id: int, author_id: int, users: list[int], due: float
) -> None:
    """The announcement (reminders ``LEAD`` before, due ``LEAD`` after ``due``) and the
    members who asked, through the service and the table the button writes."""
    service = Announcements(sched, limits=Limits(max_announcements=10**9))
    first = datetime.fromtimestamp(due + LEAD, UTC)
    draft = Draft(
        guild_id=guild_id, channel_id=channel_id, author_id=author_id, content="Raid night",
        mention=None, allowed_mentions={}, first=first, timezone="UTC", repeat=None,
        reminder=LEAD,
    )  # fmt: skip
    a, _ = await service.create(draft)
    async with sched.transaction() as ctx:
        now = ctx.now.timestamp()
        await ctx.db.executemany(
            "INSERT INTO bot_reminder_subscribers (announcement_id, user_id, guild_id, "
            "before_s, locale, created_at) VALUES (?, ?, ?, NULL, NULL, ?)",
            [(a.id, u, guild_id, now) for u in users],
        )
        if await BotDb(ctx.db).subscriber_count(a.id) != len(users):
            raise RuntimeError("the members who asked were not all written")


async def wait_for_dms(
    fake: FakeDiscord, bot: Process, members: int, spacing: float, ahead: float
) -> list[Any]:
    bound = ahead + members * max(spacing, 0.05) * 3 + 120
    deadline = time.monotonic() + bound
    while True:
        dms = [m for m in fake.message_log if m.guild_id is None]
        if len(dms) >= members:
            return dms
        if bot.proc.returncode is not None or time.monotonic() > deadline:
            raise AssertionError(f"{len(dms)} of {members} DMs; bot log:\n{bot.log[-3000:]}")
        await asyncio.sleep(0.25)


def measure(
    fake: FakeDiscord, dms: list[Any], members: int, spacing: float, due: float,
    rss_before: float, peak: float,
) -> Run:  # fmt: skip
    times = sorted(m.created_at for m in dms)
    floor = members * spacing
    last = times[-1] - due
    per_channel = collections.Counter(m.channel_id for m in dms)
    requests = fake.requests
    return Run(
        members=members,
        spacing=spacing,
        floor=floor,
        first_after_due=times[0] - due,
        last_after_due=last,
        ratio=last / floor if floor else float("nan"),
        per_member_ms=1000 * last / members,
        dms=len(dms),
        duplicates=sum(n - 1 for n in per_channel.values()),
        nonce_dedup_hits=fake.nonce_dedup_hits,
        dm_sends=sum(1 for r in requests if is_dm_send(fake, r)),
        member_lookups=sum(1 for r in requests if r.method == "GET" and "/members/" in r.path),
        dm_channel_opens=sum(1 for r in requests if r.path == "/users/@me/channels"),
        rss_before_mib=rss_before,
        peak_mib=peak,
        reminders_mib=peak - rss_before,
    )


def is_dm_send(fake: FakeDiscord, r: Any) -> bool:
    if r.method != "POST" or not r.path.endswith("/messages"):
        return False
    return fake.channels[int(r.path.split("/")[2])].guild is None


async def main_async(args: argparse.Namespace) -> int:
    results: dict[str, list[Run]] = {}
    for spacing in args.spacing:
        for i in range(args.runs):
            log(f"run {i + 1}/{args.runs}: {args.members} members, spacing {spacing} s")
            run = await one_run(args.members, spacing, args.ahead)
            log(f"  last DM {run.last_after_due:.1f} s after due (floor {run.floor:.1f} s)")
            results.setdefault(str(spacing), []).append(run)
    out(f"# Reminders: {args.members} members of one occurrence, one bot process (SQLite)")
    summary: dict[str, Any] = {}
    for spacing, runs in results.items():
        last = summarize(r.last_after_due for r in runs)
        peak = summarize(r.peak_mib for r in runs)
        cost = summarize(r.reminders_mib for r in runs)
        floor = runs[0].floor
        out(f"\nspacing {spacing} s (floor {floor:.1f} s = {args.members} x {spacing}):")
        first = summarize(r.first_after_due for r in runs)
        out(f"  time to the first DM: {first.show('s', 2)}; to the last: {last.show('s', 1)}")
        if floor:
            out(f"  against the floor: {summarize(r.ratio for r in runs).show('x', 3)}")
        out(f"  per member: {summarize(r.per_member_ms for r in runs).show('ms', 2)}")
        out(f"  peak RSS {peak.show('MiB', 1)}; over the idle bot {cost.show('MiB', 1)}")
        out(
            f"  DMs {runs[0].dms}, duplicates {max(r.duplicates for r in runs)}, nonce "
            f"re-sends {max(r.nonce_dedup_hits for r in runs)}, member look-ups "
            f"{runs[0].member_lookups}, DM channels opened {runs[0].dm_channel_opens}"
        )
        summary[spacing] = {
            "floor_s": floor,
            "first_after_due_s": first.as_dict(),
            "last_after_due_s": last.as_dict(),
            "ratio": summarize(r.ratio for r in runs).as_dict() if floor else None,
            "per_member_ms": summarize(r.per_member_ms for r in runs).as_dict(),
            "peak_mib": peak.as_dict(),
            "reminders_mib": cost.as_dict(),
            "runs": [asdict(r) for r in runs],
        }
    if args.json:
        text = json.dumps(to_jsonable(summary), indent=2) + "\n"
        await asyncio.to_thread(Path(args.json).write_text, text)
    bad = [r for rs in results.values() for r in rs if r.duplicates or r.dms != args.members]
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--members", type=int, default=10_000)
    ap.add_argument("--spacing", type=float, nargs="+", default=[0.02, 0.0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument(
        "--ahead",
        type=float,
        default=AHEAD,
        help="seconds from writing to the reminders' due instant: the bot plans them meanwhile "
        "(no figure depends on it while that is enough)",
    )
    ap.add_argument("--json", default=None)
    return asyncio.run(main_async(ap.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
