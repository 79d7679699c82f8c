"""Several ``python -m bot`` processes on one database (PostgreSQL, or one SQLite file)
against one fake Discord served by the test (tests/proof/test_instances_processes.py,
tests/proof/test_takeover.py, bench/shards_bench.py).

:class:`Instances` starts them (each with an ``INSTANCE_NAME`` of its own, so the shard
leases in the database say which process holds what), reads which shards each holds (from
the leases, by the database's clock) and which shards the fake sees connected, checks their
logs, and derives the take-over bound from the configured lease and IDENTIFY settings.
"""

from __future__ import annotations

import itertools
import sqlite3
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.support.processes import Process, bot_env, start_bot

if TYPE_CHECKING:
    from pathlib import Path

    from tests.fakediscord import FakeDiscord

__all__ = ["Instances", "Layout", "identify_spacing", "takeover_bound"]

CONNECT_ALLOWANCE = 5.0
"""Seconds allowed on top of the configured bound for what the settings do not cover: the
survivors' processes being scheduled on a loaded machine, a websocket set up, READY sent and
read. It is not what the bound is about (the lease and the IDENTIFY turns are)."""


def identify_spacing(interval: float) -> float:
    """How far apart one bucket's IDENTIFY turns are reserved (``IdentifyGate.spacing``)."""
    return interval + max(interval / 5, 0.25) if interval > 0 else 0.0


def takeover_bound(*, lease: float, interval: float, shards: int) -> float:
    """Seconds from an instance's death to its ``shards`` being served again, as the
    settings allow: its leases run out (``lease``), a survivor's next lease round notices
    (a third of it), then one IDENTIFY turn per shard (counted as if all were of one
    bucket, the worst case), plus :data:`CONNECT_ALLOWANCE`."""
    return lease + lease / 3 + shards * identify_spacing(interval) + CONNECT_ALLOWANCE


@dataclass
class Layout:
    """How the instances run their shards."""

    count: int = 1
    """SHARD_COUNT."""
    pinned: bool = False
    """Every instance pins every shard (SHARD_IDS): all connected, each receiving every
    interaction. Otherwise the shards are shared out through leases."""
    shard_lease: float = 3.0
    identify_interval: float = 1.0
    job_lease: float = 2.0
    sweep: float = 0.5
    extra: dict[str, str] = field(default_factory=dict)


class Instances:
    """The bot processes of one test, on ``dsn`` against ``fake``."""

    def __init__(
        self, fake: FakeDiscord, dsn: str, workdir: Path, started: list[Process], layout: Layout
    ) -> None:
        self.fake = fake
        self.dsn = dsn
        self.workdir = workdir
        self.started = started
        self.layout = layout
        self.by_name: dict[str, Process] = {}

    def env(self, name: str) -> dict[str, str]:
        lay = self.layout
        env = bot_env(
            self.fake.env(),
            database_url=self.dsn,
            lease=f"{lay.job_lease:g}",
            sweep=f"{lay.sweep:g}",
            spacing="0",
        )
        env |= {
            "SHARD_COUNT": str(lay.count),
            "SHARD_LEASE_SECONDS": f"{lay.shard_lease:g}",
            "IDENTIFY_INTERVAL_SECONDS": f"{lay.identify_interval:g}",
            "INSTANCE_NAME": name,
            # (the tests' members run many commands a minute, across every instance)
            "COMMANDS_PER_MINUTE": "100000",
        }
        if lay.pinned:
            env["SHARD_IDS"] = ",".join(str(i) for i in range(lay.count))
        else:
            env.pop("SHARD_IDS", None)
        return env | lay.extra

    async def start(self, name: str) -> Process:
        proc = await start_bot(self.env(name), self.workdir, name)
        self.started.append(proc)
        self.by_name[name] = proc
        return proc

    @property
    def live(self) -> list[Process]:
        return [p for p in self.by_name.values() if p.proc.returncode is None]

    def logs(self, tail: int = 6000) -> str:
        return "\n".join(f"--- {n} ---\n{p.log[-tail:]}" for n, p in self.by_name.items())

    def problems(self) -> list[str]:
        """Any process's log lines with a traceback (with the lines after it, up to the
        exception) or Discord's 40060 ("already acknowledged": a second answer that should
        have stayed silent)."""
        bad = []
        for name, p in self.by_name.items():
            lines = p.log.splitlines()
            for i, line in enumerate(lines):
                if "Traceback" in line:
                    block = lines[max(0, i - 1) : i + 40]
                    end = next(
                        (j for j, x in enumerate(block[2:], 2) if not x.startswith(" ")),
                        len(block) - 1,
                    )
                    bad.append(f"{name}: " + "\n".join(block[: end + 1]))
                elif "40060" in line:
                    bad.append(f"{name}: {line}")
        return bad

    # --- who serves what ---------------------------------------------------------------------

    def served(self) -> dict[int, int]:
        """Connected sessions per shard of the count, at the fake."""
        out = dict.fromkeys(range(self.layout.count), 0)
        for s in self.fake.gateway.connected_sessions:
            if s.shard[1] == self.layout.count:
                out[s.shard[0]] += 1
        return out

    def every_shard_served_once(self) -> bool:
        return set(self.served().values()) == {1}

    async def leases(self) -> list[dict[str, Any]]:
        """Every shard lease row (lease_key, holder, expires_at, handed_from, wanted_by), with
        the database's clock now (``now``; SQLite's is this machine's)."""
        if self.dsn.startswith("sqlite:///"):
            conn = sqlite3.connect(self.dsn.removeprefix("sqlite:///"), timeout=30)
            try:
                conn.row_factory = sqlite3.Row
                try:
                    got = conn.execute(
                        "SELECT lease_key, holder, expires_at, handed_from, wanted_by "
                        "FROM scheduler_leases WHERE lease_key LIKE 'shard:%'"
                    ).fetchall()
                except sqlite3.OperationalError:  # no table yet: no instance opened it
                    return []
                now = time.time()
                return [dict(r) | {"now": now} for r in got]
            finally:
                conn.close()
        import asyncpg

        conn = await asyncpg.connect(self.dsn)
        try:
            rows = await conn.fetch(
                "SELECT lease_key, holder, expires_at, handed_from, wanted_by, "
                "extract(epoch FROM clock_timestamp())::float8 AS now FROM scheduler_leases "
                "WHERE lease_key LIKE 'shard:%'"
            )
        except asyncpg.UndefinedTableError:  # no instance migrated the database yet
            return []
        finally:
            await conn.close()
        return [dict(r) for r in rows]

    async def holders(self) -> dict[str, list[int]]:
        """The shards each instance holds a live lease on (by the database's clock)."""
        rows = [r for r in await self.leases() if r["expires_at"] > r["now"]]
        out: dict[str, list[int]] = {}
        for r in rows:
            shard, count = r["lease_key"].removeprefix("shard:").split("/")
            if int(count) == self.layout.count:
                out.setdefault(r["holder"], []).append(int(shard))
        return {h: sorted(s) for h, s in out.items()}

    async def shares(self) -> list[int]:
        """How many shards each live instance holds, largest first (0 for one holding none)."""
        held = await self.holders()
        return sorted(
            (len(held.get(n, [])) for n in self.by_name if self.by_name[n].proc.returncode is None),
            reverse=True,
        )

    def even(self, instances: int) -> list[int]:
        """The even share of the count among ``instances``, largest first."""
        base, extra = divmod(self.layout.count, instances)
        return [base + 1] * extra + [base] * (instances - extra)

    def identify_problems(self) -> list[Any]:
        """IDENTIFYs the fake judged anything but accepted (op 9 over the bucket's rate...)."""
        return [x for x in self.fake.identify_log if not x.accepted]

    def bucket_gaps(self) -> list[float]:
        """Every gap between two accepted IDENTIFYs of one bucket, by the fake's clock."""
        by_bucket: dict[int, list[float]] = {}
        for x in self.fake.identify_log:
            if x.accepted:
                by_bucket.setdefault(x.bucket, []).append(x.at)
        gaps = []
        for times in by_bucket.values():
            times.sort()
            gaps += [b - a for a, b in itertools.pairwise(times)]
        return gaps
