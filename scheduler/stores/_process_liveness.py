"""Holder liveness on one machine (the SQLite store): a holder is alive while its process is.

The proof a holder records names its process the way the kernel does (Linux's ``/proc``):
the machine's boot id, the pid namespace, the user, the pid, and the process's start time
(clock ticks after boot, ``/proc/<pid>/stat``'s 22nd field), so a pid the kernel reused for
another process does not count as the holder. Another process judges the holder gone when
it runs on the same boot and in the same pid namespace, and ``/proc/<pid>`` is missing, or
holds a process that started at another time, or a zombie (exited, not yet reaped).

A holder that recorded another boot id is gone too: processes sharing a database in WAL
mode share its memory index, so they run on one machine, and a proof of an earlier boot is
a process that ended with it (or a file copied from another machine, whose processes have
nothing to do with this one).

Never gone: a stopped process (SIGSTOP, ``docker pause``: state ``T``), which may go on
once continued and must find its leases as it left them unless they expired; a holder this
process cannot judge: another pid namespace (another container sharing the file through a
volume), or another user's process while ``/proc`` hides other users' processes
(``hidepid``). Their leases expire as they always did. Without ``/proc`` (not Linux) the
store has no liveness at all (:func:`available`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..abc import Liveness

if TYPE_CHECKING:
    from collections.abc import Mapping

PROC = Path("/proc")
KIND = "process"


def _stat(pid: int | str) -> tuple[str, str] | None:
    """The state letter and start time (ticks after boot) of process ``pid``, or None when
    there is no such process."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses; the fields after
    # the last ")" start with the state (field 3); the start time is field 22.
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], fields[19]


def _boot_id() -> str:
    return (PROC / "sys/kernel/random/boot_id").read_text().strip()


def _pid_namespace() -> str:
    return os.readlink(PROC / "self/ns/pid")


def _hides_processes() -> bool:
    """Whether ``/proc`` hides other users' processes (mounted with ``hidepid``)."""
    try:
        mounts = (PROC / "mounts").read_text().splitlines()
    except OSError:
        return True
    for line in mounts:
        parts = line.split()
        if len(parts) >= 4 and parts[1] == str(PROC) and parts[2] == "proc":
            options = dict(o.partition("=")[::2] for o in parts[3].split(","))
            return options.get("hidepid", "0") not in ("0", "off")
    return True


def available() -> bool:
    """Whether this machine lets a process be judged by its pid and start time (``/proc``,
    with this process visible in it as itself)."""
    try:
        here = _stat("self")
        own = (PROC / "self/stat").read_text().split(" ", 1)[0]
        _boot_id()
        _pid_namespace()
    except (OSError, IndexError):
        return False
    return here is not None and own == str(os.getpid())


class ProcessLiveness(Liveness):
    """A holder proved by its process: ``pid`` (default this process's) and its start time.
    Its proof never lapses while the process lives."""

    def __init__(self, pid: int | None = None) -> None:
        self.pid = os.getpid() if pid is None else pid
        self._proven = False

    @property
    def proven(self) -> bool:
        return self._proven

    async def prove(self) -> str:
        stat = _stat(self.pid)
        if stat is None:
            raise ProcessLookupError(f"no process {self.pid} to prove a holder alive")
        self._proven = True
        identity = (_boot_id(), _pid_namespace(), str(os.getuid()), str(self.pid), stat[1])
        return " ".join((KIND, *identity))

    async def gone(self, proofs: Mapping[str, str]) -> set[str]:
        boot, namespace, uid = _boot_id(), _pid_namespace(), str(os.getuid())
        hidden: bool | None = None
        out = set()
        for holder, proof in proofs.items():
            parts = proof.split(" ")
            if len(parts) != 6 or parts[0] != KIND:
                continue  # not a proof of this kind: cannot tell
            _, its_boot, its_namespace, its_uid, pid, start = parts
            if its_boot != boot:
                out.add(holder)  # it ran before this machine's last boot
                continue
            if its_namespace != namespace or not pid.isdigit():
                continue  # another container's process: cannot tell
            if its_uid != uid:
                if hidden is None:
                    hidden = _hides_processes()
                if hidden:
                    continue  # another user's process may be hidden from this one
            stat = _stat(pid)
            if stat is None or stat[1] != start or stat[0] in ("Z", "X", "x"):
                out.add(holder)
        return out

    async def close(self) -> None:
        self._proven = False
