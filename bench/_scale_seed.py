"""The scale benchmark's database: announcements over many guilds, seeded through the bot's
domain layer (``Announcements.create_many``), cached between runs.

The cache is a folder under the temp dir named by the seed parameters and the mix's version
(a migration added since is applied when the cached database is next opened). A cached
database is reused only while everything in it is still to come (its earliest pending job
and schedule fire more than a day ahead), so no rerun starts delivering.
"""

from __future__ import annotations

import json
import random
import sqlite3
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.announcements import Draft
from bot.app import Crier
from bot.config import Settings
from bot.models import Content
from bot.parsing import RepeatRule

MIX_VERSION = 1
"""Bumped whenever :func:`make_draft` changes what it seeds (so the cache seeds anew). A
schema change needs no new seed: opening a cached database applies the new migrations."""
BATCH = 5_000
"""Drafts per ``create_many`` call (one transaction each)."""
CHANNELS_PER_GUILD = 5
BIG_CHANNELS = 20
BIG_GUILD = 10_000_000_001
"""The id the big guild is seeded under (the interaction runs renumber it to the fake's)."""
FIRST_GUILD = 10_000_000_002
ZONES = ("UTC", "Europe/London", "America/New_York", "Asia/Tokyo", "Europe/Berlin")
DAILY = RepeatRule("cron", "0 9 * * *", None, "every day at 09:00")
WEEKLY = RepeatRule("cron", "0 18 * * 5", None, "every Friday at 18:00")
SIX_HOURS = RepeatRule("interval", None, timedelta(hours=6), "every 6 hours")


@dataclass(frozen=True)
class Seed:
    announcements: int
    guilds: int
    big: int
    """How many of them are in the one big guild."""
    seed: int = 12

    def key(self) -> str:
        return (
            f"crier-scale-v{MIX_VERSION}-{self.announcements}-{self.guilds}-{self.big}-{self.seed}"
        )


def settings(db: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "token": "bench.token.not-used",
        "database_url": f"sqlite:///{db}",
        "send_spacing": 1.0,
        # The big guilds of the mix hold far more than a server's default limit.
        "max_announcements": 10**9,
        "commands_per_minute": 1_000_000,  # one admin asks every timed request
    }
    values.update(overrides)
    return Settings(**values)


def guild_of(seed: Seed, i: int) -> int:
    """Every ``announcements / big``-th announcement is the big guild's; the rest go round
    the other guilds."""
    step = max(1, seed.announcements // max(1, seed.big))
    if i % step == 0 and i // step < seed.big:
        return BIG_GUILD
    return FIRST_GUILD + i % max(1, seed.guilds - 1)


def channel_of(guild: int, rng: random.Random) -> int:
    if guild == BIG_GUILD:
        return BIG_GUILD * 100 + rng.randrange(BIG_CHANNELS)
    return guild * 100 + rng.randrange(CHANNELS_PER_GUILD)


def make_draft(seed: Seed, i: int, rng: random.Random, now: float) -> Draft:
    """A mix like real use: 70% one-off, 15% daily, 10% weekly, 5% every 6 hours; all due
    between a week and a year from now."""
    guild = guild_of(seed, i)
    first = datetime.fromtimestamp(now + 7 * 86_400 + rng.random() * 358 * 86_400, UTC)
    first = first.replace(second=0, microsecond=0)
    roll = rng.random()
    repeat = None if roll < 0.70 else DAILY if roll < 0.85 else WEEKLY if roll < 0.95 else SIX_HOURS
    everyone = rng.random() < 0.1
    return Draft(
        guild_id=guild,
        channel_id=channel_of(guild, rng),
        author_id=guild * 10 + rng.randrange(3),
        content=f"Announcement {i}: " + "the weekly meeting is in the usual place. " * (1 + i % 4),
        mention="everyone" if everyone else None,
        allowed_mentions={"everyone": everyone, "roles": [], "users": True},
        first=first,
        timezone=ZONES[i % len(ZONES)],
        repeat=repeat,
        rich=Content(title="News") if i % 9 == 0 else Content(),
    )


async def seed_into(db: Path, seed: Seed, log: Any) -> float:
    """Seed ``db`` (new) through ``Announcements.create_many``; returns the seconds taken."""
    crier = Crier(settings(db))
    await crier.sched.start()
    rng = random.Random(seed.seed)
    now = time.time()
    started = time.perf_counter()
    try:
        for start in range(0, seed.announcements, BATCH):
            stop = min(seed.announcements, start + BATCH)
            drafts = [make_draft(seed, i, rng, now) for i in range(start, stop)]
            await crier.bot.announcements.create_many(drafts)
            if (start // BATCH) % 20 == 0:
                rate = stop / (time.perf_counter() - started)
                log(f"  seeded {stop:,} of {seed.announcements:,} ({rate:,.0f}/s)")
    finally:
        await crier.sched.stop()
    return time.perf_counter() - started


def still_to_come(db: Path, margin: float = 86_400.0) -> bool:
    """Whether every pending job and schedule of ``db`` is more than ``margin`` ahead."""
    with sqlite3.connect(db) as conn:
        jobs = conn.execute(
            "SELECT min(next_ts) FROM scheduler_jobs WHERE state = 'pending'"
        ).fetchone()[0]
        fires = conn.execute("SELECT min(next_fire_ts) FROM scheduler_schedules").fetchone()[0]
    soonest = min((t for t in (jobs, fires) if t is not None), default=None)
    return soonest is None or soonest > time.time() + margin


async def cached(seed: Seed, cache: Path | None, log: Any) -> tuple[Path, dict[str, Any]]:
    """The seeded database for ``seed`` (made now if the cache has none that fits) and how
    it was had."""
    folder = (cache or Path(tempfile.gettempdir())) / seed.key()
    db = folder / "crier.db"
    meta = folder / "seed.json"
    if meta.exists() and db.exists() and still_to_come(db):
        info = json.loads(meta.read_text("utf-8"))
        return db, {**info, "cached": True}
    folder.mkdir(parents=True, exist_ok=True)
    for f in folder.glob("crier.db*"):
        f.unlink()
    log(f"seeding {seed.announcements:,} announcements over {seed.guilds:,} guilds into {db}")
    seconds = await seed_into(db, seed, log)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    info = {
        "seed": asdict(seed),
        "seed_seconds": seconds,
        "per_second": seed.announcements / seconds,
        "big_guild": BIG_GUILD,
        "bytes": db.stat().st_size,
    }
    meta.write_text(json.dumps(info), "utf-8")
    return db, {**info, "cached": False}


def renumber_big_guild(db: Path, guild_id: int, channel_ids: list[int]) -> None:
    """Give the big guild (as the cache last left it) the id ``guild_id`` and its channels
    the ids ``channel_ids``, so the fake Discord's guild is the one with the announcements.
    The current ids are kept in ``seed.json`` beside the database."""
    meta = db.parent / "seed.json"
    info = json.loads(meta.read_text("utf-8"))
    old = int(info.get("big_guild", BIG_GUILD))
    old_channels = info.get("big_channels") or [BIG_GUILD * 100 + k for k in range(BIG_CHANNELS)]
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE bot_announcements SET guild_id = ? WHERE guild_id = ?", (guild_id, old)
        )
        conn.execute(
            "UPDATE bot_guild_settings SET guild_id = ? WHERE guild_id = ?", (guild_id, old)
        )
        for before, after in zip(old_channels, channel_ids, strict=True):
            conn.execute(
                "UPDATE bot_announcements SET channel_id = ? WHERE guild_id = ? AND channel_id = ?",
                (after, guild_id, before),
            )
    info["big_guild"], info["big_channels"] = guild_id, channel_ids
    meta.write_text(json.dumps(info), "utf-8")


def big_guild_id(db: Path) -> int:
    return int(json.loads((db.parent / "seed.json").read_text("utf-8")).get("big_guild", BIG_GUILD))
