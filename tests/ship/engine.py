"""The container engine of the container tests, and the images they run.

Docker from Debian (``docker.io``, ``docker-compose``): podman runs here too, but without
systemd it runs no health checks (they are systemd timers), so neither the image's
``HEALTHCHECK`` nor compose's ``condition: service_healthy`` could be seen working. The
tests start a daemon of their own (its own socket, state and data under
:data:`DATA_ROOT`, which keeps the images between runs) unless one already answers on
:data:`SOCKET`, and stop what they started. One test session at a time uses it (a lock).

No registry is reachable here, so the images ``FROM`` which crier's image and PostgreSQL's
are built are made on this machine, once, cached by their recipe:

- the base: Debian bookworm (``mmdebstrap --variant=minbase``) with Python and its venv
  module, imported as ``crier-test-base:<recipe hash>`` (the tarball is kept in
  :data:`CACHE` too, for a daemon whose data was wiped): the Dockerfile's ``BASE_IMAGE``;
- a stand-in for the official PostgreSQL image (``tests/ship/postgres``): Debian's
  PostgreSQL on that base, keeping the official image's contract as compose.yaml uses it.

crier's image itself is built from this tree with the Dockerfile as it is, ``pip`` inside
the build reaching the package index through the network with this machine's CA bundle
given as a build secret (the network re-signs TLS; the secret stays out of every layer).
This machine's pip configuration is not passed: it only adds directories of this machine,
which the build can't see.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.support.processes import ROOT

if TYPE_CHECKING:
    from collections.abc import Iterator

SOCKET = Path("/run/crier-test-docker.sock")
DATA_ROOT = Path("/var/lib/crier-test-docker")
EXEC_ROOT = Path("/run/crier-test-docker")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "crier" / "container"
DOCKER = "/usr/bin/docker"  # Debian's client (another one may come first on PATH)
PACKAGES = {"/usr/sbin/dockerd": "docker.io", "/usr/bin/docker-compose": "docker-compose",
            "/usr/bin/mmdebstrap": "mmdebstrap"}  # fmt: skip
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")

BASE_RECIPE = (
    "mmdebstrap",
    "--variant=minbase",
    "--include=python3,python3-venv,ca-certificates",
    "bookworm",
)
"""The stand-in for the Dockerfile's default base (python:3.11-slim-bookworm)."""
MMDEBSTRAP_MODE = "--mode=unshare"
"""How mmdebstrap runs (not part of the recipe: the tarball is the same). In a namespace of
its own, so an interrupted run leaves no mount on this machine: as root it would otherwise
bind this machine's /dev/shm into its chroot, and removing a chroot left behind would delete
the shared memory files of every process here (a PostgreSQL server's among them)."""
POSTGRES_DIR = Path(__file__).parent / "postgres"


def recipe_hash(*parts: str | bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()[:12]


class EngineError(AssertionError):
    """The engine or a build failed: the test fails saying what ran and what it said."""


def run(*argv: str | Path, check: bool = True, timeout: float = 600, **kwargs: Any) -> str:
    """``argv`` run to its end; its output (stdout), or :class:`EngineError` with all of it."""
    done = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=timeout, check=False,
        **kwargs,
    )  # fmt: skip
    if check and done.returncode != 0:
        command = " ".join(str(a) for a in argv)
        raise EngineError(
            f"{command} exited {done.returncode}:\n{done.stdout[-4000:]}{done.stderr[-4000:]}"
        )
    return str(done.stdout)


@dataclass
class Engine:
    """The daemon the tests use, and the images they need."""

    env: dict[str, str]
    base: str = ""
    postgres: str = ""
    timings: dict[str, float] | None = None

    def docker(self, *argv: str | Path, check: bool = True, timeout: float = 600) -> str:
        return run(DOCKER, *argv, check=check, timeout=timeout, env=self.env)

    def compose(self, project_dir: Path, *argv: str, check: bool = True) -> str:
        return run("docker-compose", *argv, check=check, env=self.env, cwd=project_dir)

    def inspect(self, what: str) -> dict[str, Any]:
        info: list[dict[str, Any]] = json.loads(self.docker("inspect", what))
        return info[0]

    def has_image(self, tag: str) -> bool:
        asked = subprocess.run(
            [DOCKER, "image", "inspect", tag], capture_output=True, env=self.env, check=False,
            timeout=60,
        )  # fmt: skip
        return asked.returncode == 0

    def logs(self, container: str) -> str:
        done = subprocess.run(
            [DOCKER, "logs", container], capture_output=True, text=True, env=self.env,
            check=False, timeout=60,
        )  # fmt: skip
        return done.stdout + done.stderr

    def timed(self, label: str, started: float) -> None:
        if self.timings is not None:
            self.timings[label] = round(time.monotonic() - started, 1)

    # --- the images ---------------------------------------------------------------------------

    def ensure_base(self) -> str:
        """The Debian base (built once per recipe; see the module's docstring)."""
        key = recipe_hash(*BASE_RECIPE)
        tag = f"crier-test-base:{key}"
        if not self.has_image(tag):
            started = time.monotonic()
            tarball = CACHE / f"base-{key}.tar"
            if not tarball.is_file():
                CACHE.mkdir(parents=True, exist_ok=True)
                partial = CACHE / f"partial-{tarball.name}"  # .tar: mmdebstrap writes a tarball
                run(BASE_RECIPE[0], MMDEBSTRAP_MODE, *BASE_RECIPE[1:], partial, timeout=1800)
                partial.rename(tarball)
            self.docker("import", tarball, tag)
            self.timed("base image (mmdebstrap, import)", started)
        self.base = tag
        return tag

    def ensure_postgres(self) -> str:
        """The stand-in of PostgreSQL's official image, on the base."""
        files = sorted(POSTGRES_DIR.iterdir())
        key = recipe_hash(self.base, *(f.read_bytes() for f in files))
        tag = f"crier-test-postgres:{key}"
        if not self.has_image(tag):
            started = time.monotonic()
            self.docker("build", "--quiet", "--build-arg", f"BASE_IMAGE={self.base}",
                        "-t", tag, POSTGRES_DIR, timeout=1200)  # fmt: skip
            self.timed("PostgreSQL stand-in image", started)
        self.postgres = tag
        return tag

    def build_crier(self, tag: str) -> str:
        """crier's image from this tree (the Dockerfile as it is), on the base."""
        started = time.monotonic()
        secret = ["--secret", f"id=ca,src={CA_BUNDLE}"] if CA_BUNDLE.is_file() else []
        self.docker("build", "--quiet", "--build-arg", f"BASE_IMAGE={self.base}", *secret,
                    "-t", tag, ROOT, timeout=1200)  # fmt: skip
        self.timed("crier image", started)
        return tag


# --- the daemon ---------------------------------------------------------------------------------


def install_packages() -> None:
    """What the tests need, from Debian (apt-get, as root)."""
    missing = sorted({pkg for path, pkg in PACKAGES.items() if not Path(path).exists()})
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise EngineError(f"the container tests need {', '.join(missing)} (apt-get, as root)")
    env = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
    command = ("apt-get", "install", "-y", "-qq", *missing)
    if subprocess.run(command, capture_output=True, check=False, env=env).returncode != 0:
        run("apt-get", "update", "-qq", env=env)
        run(*command, env=env)


@contextlib.contextmanager
def engine() -> Iterator[Engine]:
    """The daemon, held for this session alone (another session waits for the lock)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        install_packages()
        env = os.environ | {"DOCKER_HOST": f"unix://{SOCKET}", "DOCKER_BUILDKIT": "1"}
        eng = Engine(env, timings={})
        daemon = None if answers(eng) else start_daemon(eng)
        try:
            yield eng
        finally:
            if daemon is not None:
                daemon.terminate()
                try:
                    daemon.wait(60)
                except subprocess.TimeoutExpired:
                    daemon.kill()
                    daemon.wait()


def answers(eng: Engine) -> bool:
    """Whether a daemon answers on :data:`SOCKET`."""
    if not SOCKET.exists():
        return False
    asked = subprocess.run(
        [DOCKER, "info", "--format", "{{.ServerVersion}}"], capture_output=True, env=eng.env,
        check=False, timeout=30,
    )  # fmt: skip
    return asked.returncode == 0


def start_daemon(eng: Engine) -> subprocess.Popen[bytes]:
    for folder in (DATA_ROOT, EXEC_ROOT):
        folder.mkdir(parents=True, exist_ok=True)
    with (CACHE / "dockerd.log").open("ab") as log:
        daemon = subprocess.Popen(
            ["/usr/sbin/dockerd", f"--host=unix://{SOCKET}", f"--data-root={DATA_ROOT}",
             f"--exec-root={EXEC_ROOT}", f"--pidfile={EXEC_ROOT}.pid"],
            stdout=log, stderr=log, start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + 60
    while not answers(eng):
        if daemon.poll() is not None or time.monotonic() > deadline:
            daemon.kill()
            raise EngineError(f"dockerd did not start: see {CACHE / 'dockerd.log'}")
        time.sleep(0.2)
    return daemon
