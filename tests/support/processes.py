"""Real processes under test, and waiting for conditions with a deadline.

A :class:`Process` is one child process: its stdout is either a pipe read line by line
(:meth:`Process.next_line`, :meth:`Process.expect`) or, for ``python -m bot``
(:func:`start_bot`), kept in its log file with its stderr. Every wait has a deadline and fails
with the log (``until``, ``next_line``), never a fixed sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

__all__ = ["ROOT", "Process", "bot_env", "procs", "start_bot", "until"]

ROOT = Path(__file__).resolve().parents[2]


class Process:
    """One child process; stdout is a pipe read line by line (or its log), stderr a log file.

    ``label`` and ``log_name`` name the process and its log in failure messages;
    ``line_timeout`` is how long a read waits unless told otherwise.
    """

    line_timeout = 30.0
    log_name = "log"

    def __init__(self, proc: asyncio.subprocess.Process, log_path: Path, label: str) -> None:
        self.proc = proc
        self.log_path = log_path
        self.label = label
        self.lines: list[str] = []

    @classmethod
    async def spawn(
        cls,
        args: Sequence[str],
        *,
        log_path: Path,
        label: str,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        stdin: bool = False,
        stdout_to_log: bool = False,
        program: str | Path | None = None,
    ) -> Self:
        """``python ARGS`` (or ``program ARGS``: another command, the ``crier`` script of an
        installed wheel, say); ``env`` and ``cwd`` default to the test process's own."""
        with log_path.open("wb") as log:
            proc = await asyncio.create_subprocess_exec(
                sys.executable if program is None else program,
                *args,
                cwd=cwd,
                env=env,
                stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
                stdout=log if stdout_to_log else asyncio.subprocess.PIPE,
                stderr=log,
            )
        return cls(proc, log_path, label)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def log(self) -> str:
        return self.log_path.read_text("utf-8", "replace")

    async def next_line(self, within: float | None = None) -> str:
        """The next line the process prints; fails clearly if it exits or stays silent."""
        within = self.line_timeout if within is None else within
        assert self.proc.stdout is not None
        try:
            raw = await asyncio.wait_for(self.proc.stdout.readline(), within)
        except TimeoutError:
            raise AssertionError(
                f"{self.label} printed nothing for {within}s; {self.log_name}:\n{self.log}"
            ) from None
        if not raw:
            await self.proc.wait()
            raise AssertionError(
                f"{self.label} exited ({self.proc.returncode}) before the expected line; "
                f"{self.log_name}:\n{self.log}"
            )
        line = raw.decode().rstrip("\n")
        self.lines.append(line)
        return line

    async def expect(self, prefix: str, within: float | None = None) -> str:
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
        """SIGKILL, at once (no-op if it already exited; a stopped process dies too)."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()

    def sched_state(self) -> str:
        """The kernel's state letter for the process (``R``, ``S``, ``T`` when stopped...)."""
        stat = Path(f"/proc/{self.pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0]

    async def pause(self, within: float = 5.0) -> None:
        """SIGSTOP; returns once the kernel shows the process stopped (it runs no more code
        until :meth:`resume`; its sockets and database connections stay open)."""
        os.kill(self.pid, signal.SIGSTOP)
        await until(lambda: self.sched_state() == "T", within, f"{self.label} to stop")

    async def resume(self, within: float = 5.0) -> None:
        """SIGCONT; returns once the process is no longer stopped."""
        os.kill(self.pid, signal.SIGCONT)
        await until(lambda: self.sched_state() != "T", within, f"{self.label} to go on")

    async def rest(self) -> list[str]:
        """Every line still to come until stdout closes (the process must be dying)."""
        assert self.proc.stdout is not None
        data = await asyncio.wait_for(self.proc.stdout.read(), self.line_timeout)
        more = data.decode().splitlines()
        self.lines.extend(more)
        return more

    async def terminate(self, within: float | None = None) -> int:
        """SIGTERM (a clean shutdown), then wait for the exit code."""
        within = self.line_timeout if within is None else within
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
        if self.proc.stdout is not None:  # (python -m bot writes its stdout to its log)
            await self.rest()
        return await asyncio.wait_for(self.proc.wait(), within)

    async def reap(self) -> None:
        """Kill if still running and wait for the process: no child outlives its test."""
        self.kill()
        await self.proc.wait()
        if self.proc.stdout is not None:
            with contextlib.suppress(Exception):
                await self.proc.stdout.read()


@contextlib.asynccontextmanager
async def procs() -> AsyncIterator[list[Process]]:
    """Every process a test starts goes in this list; all are killed and reaped at the end."""
    started: list[Process] = []
    try:
        yield started
    finally:
        for p in started:
            await p.reap()


async def until(
    predicate: Callable[[], bool | Awaitable[bool]],
    within: float,
    what: str = "a condition",
    *,
    interval: float = 0.02,
) -> None:
    """Poll ``predicate`` until it is true; fail with ``what`` once ``within`` seconds pass."""
    deadline = time.monotonic() + within
    while True:
        result = predicate()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        await asyncio.sleep(interval)


# --- python -m bot -------------------------------------------------------------------------


def bot_env(
    fake_env: dict[str, str], *, database_url: str, lease: str, sweep: str, spacing: str
) -> dict[str, str]:
    """The test process's environment, the fake Discord's (``fake.env()``) and the bot's
    settings, logging at INFO."""
    return (
        dict(os.environ)
        | fake_env
        | {
            "PYTHONPATH": str(ROOT),
            "DATABASE_URL": database_url,
            "SCHEDULER_LEASE_SECONDS": lease,
            "SCHEDULER_SWEEP_SECONDS": sweep,
            "SEND_SPACING_SECONDS": spacing,
            # A failure report is posted, and a posted message edited, at once (not gathered
            # into a digest, nor after a quiet period: tests/bot/test_reports.py has those).
            "REPORT_DIGEST_SECONDS": "0",
            "EDIT_QUIET_SECONDS": "0",
            "LOG_LEVEL": "INFO",
            # Every instance runs shard 0 of 1, as these tests need: several processes all
            # connected (each interaction reaches all of them), and a process restarted after
            # a SIGKILL connected at once instead of after the dead one's shard lease. Shard
            # leases are tested in tests/bot/test_shards.py.
            "SHARD_COUNT": "1",
            "SHARD_IDS": "0",
        }
    )


async def start_bot(env: dict[str, str], workdir: Path, name: str | None = None) -> Process:
    """One ``python -m bot`` process in ``workdir`` (no stray .env); its stdout and stderr go
    to ``NAME.log`` there (``bot-<n>.log`` without a name)."""
    log_path = workdir / (f"{name}.log" if name else f"bot-{time.monotonic_ns()}.log")
    return await Process.spawn(
        ["-m", "bot"],
        log_path=log_path,
        label=name or "bot",
        env=env,
        cwd=workdir,
        stdout_to_log=True,
    )
