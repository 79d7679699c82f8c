"""Helpers shared by the proof suites: real processes, database reads, waiting with deadlines.

A :class:`Proc` is one process under test (``python -m bot`` or ``tests.proof.worker``). Its
stdout is read line by line (the worker prints ``READY``), its stderr (the log) goes to a
file. Waits are on concrete conditions with a deadline (``until``, ``fake.wait_until``),
never a fixed sleep.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from contextlib import closing
from typing import TYPE_CHECKING, Any

from bot.models import Limits
from tests.scheduler.crash_worker import connect
from tests.support.processes import ROOT, Process, procs, until

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

__all__ = ["ROOT", "Proc", "child_env", "connect", "file_hash", "procs", "rows", "scalar", "until"]


class Proc(Process):
    """One process under test; stdout is a pipe read line by line, stderr a log file."""

    @classmethod
    async def start(
        cls,
        args: Sequence[str],
        *,
        env: dict[str, str],
        workdir: Path,
        label: str,
        stdin: bool = False,
    ) -> Proc:
        return await cls.spawn(
            args,
            log_path=workdir / f"{label}-{time.monotonic_ns()}.log",
            label=label,
            env=env,
            cwd=workdir,  # no stray .env
            stdin=stdin,
        )


PROOF_LIMITS = Limits(max_announcements=10**9, min_repeat_seconds=1.0)
"""The limits of the announcements the proofs write through the domain layer: repeats seconds
apart (which /schedule refuses) and bursts past a server's default limit."""


def child_env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    for key in [k for k in env if k.startswith(("DISCORD_", "SCHEDULER_", "CRIER_"))]:
        del env[key]
    env.pop("DATABASE_URL", None)
    env["PYTHONPATH"] = str(ROOT)
    # The workers' members fire commands faster than people would (tests of the limit
    # set their own).
    env["COMMANDS_PER_MINUTE"] = "1000000"
    # Shard 0 of 1, pinned: every process connected at once, however many run and however
    # often one is killed and restarted (no waiting out a dead process's shard lease).
    env["SHARD_COUNT"] = "1"
    env["SHARD_IDS"] = "0"
    env.update(extra)
    return env


def rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    with closing(connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(sql, params).fetchall()]


def scalar(db: Path, sql: str, params: tuple[Any, ...] = ()) -> Any:
    with closing(connect(db)) as conn:
        return conn.execute(sql, params).fetchone()[0]


async def pg_work_settled(conn: Any) -> bool:
    """On an asyncpg connection to the bot's database: no job is pending or in progress and no
    delivery is mid-send."""
    busy = await conn.fetchval(
        "SELECT count(*) FROM scheduler_jobs WHERE state IN ('pending', 'in_progress')"
    )
    sending = await conn.fetchval("SELECT count(*) FROM bot_deliveries WHERE state = 'sending'")
    return bool(busy == 0 and sending == 0)


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
