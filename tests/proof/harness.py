"""Helpers shared by the proof suites: real processes, database reads, waiting with deadlines.

A :class:`Proc` is one process under test (``python -m bot`` or ``tests.proof.worker``). Its
stdout is read line by line (the worker prints ``READY``), its stderr (the log) goes to a
file. Waits are on concrete conditions with a deadline (``until``, ``fake.wait_until``),
never a fixed sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from tests.scheduler.crash_worker import connect, until

__all__ = ["ROOT", "Proc", "child_env", "connect", "file_hash", "procs", "rows", "scalar", "until"]

ROOT = Path(__file__).resolve().parents[2]
LINE_TIMEOUT = 30.0


class Proc:
    """One process under test; stdout is a pipe read line by line, stderr a log file."""

    def __init__(self, proc: asyncio.subprocess.Process, log_path: Path, label: str) -> None:
        self.proc = proc
        self.log_path = log_path
        self.label = label
        self.lines: list[str] = []

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
        log_path = workdir / f"{label}-{time.monotonic_ns()}.log"
        with log_path.open("wb") as log:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                *args,
                cwd=workdir,  # no stray .env
                env=env,
                stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
            )
        return cls(proc, log_path, label)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def log(self) -> str:
        return self.log_path.read_text("utf-8", "replace")

    async def next_line(self, within: float = LINE_TIMEOUT) -> str:
        assert self.proc.stdout is not None
        try:
            raw = await asyncio.wait_for(self.proc.stdout.readline(), within)
        except TimeoutError:
            raise AssertionError(
                f"{self.label} printed nothing for {within}s; log:\n{self.log}"
            ) from None
        if not raw:
            await self.proc.wait()
            raise AssertionError(
                f"{self.label} exited ({self.proc.returncode}) before the expected line; "
                f"log:\n{self.log}"
            )
        line = raw.decode().rstrip("\n")
        self.lines.append(line)
        return line

    async def expect(self, prefix: str, within: float = LINE_TIMEOUT) -> str:
        """Read lines until one starts with ``prefix``; return the rest of that line."""
        while True:
            line = await self.next_line(within)
            if line == prefix or line.startswith(prefix + " "):
                return line[len(prefix) :].strip()

    async def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        await self.proc.stdin.drain()

    def kill(self) -> None:
        """SIGKILL, at once (no-op if it already exited)."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()

    async def rest(self) -> list[str]:
        assert self.proc.stdout is not None
        data = await asyncio.wait_for(self.proc.stdout.read(), LINE_TIMEOUT)
        more = data.decode().splitlines()
        self.lines.extend(more)
        return more

    async def terminate(self, within: float = LINE_TIMEOUT) -> int:
        """SIGTERM (a clean shutdown), then the exit code."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
        await self.rest()
        return await asyncio.wait_for(self.proc.wait(), within)

    async def reap(self) -> None:
        self.kill()
        await self.proc.wait()
        if self.proc.stdout is not None:
            with contextlib.suppress(Exception):
                await self.proc.stdout.read()


@contextlib.asynccontextmanager
async def procs() -> AsyncIterator[list[Proc]]:
    """Every process a test starts goes in this list; all are killed and reaped at the end."""
    started: list[Proc] = []
    try:
        yield started
    finally:
        for p in started:
            await p.reap()


def child_env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    for key in [k for k in env if k.startswith(("DISCORD_", "SCHEDULER_", "CRIER_"))]:
        del env[key]
    env.pop("DATABASE_URL", None)
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    with closing(connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(sql, params).fetchall()]


def scalar(db: Path, sql: str, params: tuple[Any, ...] = ()) -> Any:
    with closing(connect(db)) as conn:
        return conn.execute(sql, params).fetchone()[0]


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
