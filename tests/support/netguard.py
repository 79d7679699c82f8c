"""A network guard for the test suite: nothing may leave the machine.

``install_network_guard()`` patches the socket layer so that

* ``socket.socket.connect`` / ``connect_ex`` / ``sendto`` to an address outside 127.0.0.0/8 and
  ::1 (IPv4-mapped loopback included) raise :class:`NetworkAccessBlocked`;
* ``socket.getaddrinfo`` / ``gethostbyname`` / ``gethostbyname_ex`` for any host name other than
  ``localhost`` (or a loopback literal) raise :class:`NetworkAccessBlocked` - so resolving
  ``discord.com`` fails before any DNS packet is sent. asyncio's ``loop.getaddrinfo`` and aiohttp's
  default resolver go through ``socket.getaddrinfo``, and asyncio/aiohttp connect through
  ``socket.socket.connect``, so they are covered too.

Unix-domain sockets are allowed. Extra hosts (e.g. a database service container in CI) can be
allowed with ``install_network_guard(allow_hosts=[...])`` or the environment variable
``CRIER_NETGUARD_ALLOW_HOSTS`` (comma separated); the addresses they resolve to become allowed.

:class:`NetworkAccessBlocked` is deliberately *not* an ``OSError``: retry loops that swallow
connection errors (discord.py's reconnect loop, for one) must not hide it. Every blocked attempt is
also recorded, and the ``network_guard`` fixture fails the test at teardown if any happened - even
if the exception was swallowed somewhere.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

try:  # the guard itself works without pytest (e.g. in a benchmark); the fixture needs it
    import pytest
except ImportError:  # pragma: no cover
    pytest = None  # type: ignore[assignment]

_ENV_ALLOW = "CRIER_NETGUARD_ALLOW_HOSTS"


class NetworkAccessBlocked(RuntimeError):
    """A test tried to reach the network beyond loopback."""


def _is_loopback_ip(host: str) -> bool | None:
    """True/False for an IP literal, None if ``host`` is not an IP literal."""
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None
    if ip.is_loopback:
        return True
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(mapped is not None and mapped.is_loopback)


class NetworkGuard:
    def __init__(self, allow_hosts: Iterable[str] = ()) -> None:
        self.allow_hosts = {h.strip().lower() for h in allow_hosts if h.strip()}
        self.allowed_ips: set[str] = set()
        self.violations: list[str] = []
        self._lock = threading.Lock()
        self._refs = 0
        self._saved: dict[str, Any] = {}

    # --- checks ---------------------------------------------------------------------------------

    def _violation(self, what: str) -> NetworkAccessBlocked:
        msg = f"network access blocked by the test network guard: {what}"
        with self._lock:
            self.violations.append(msg)
        return NetworkAccessBlocked(msg)

    def _host_allowed(self, host: Any) -> bool:
        if host is None:
            return True
        if isinstance(host, bytes):
            host = host.decode(errors="replace")
        host = str(host).lower().rstrip(".")
        if host in ("localhost", "") or host.endswith(".localhost"):
            return True
        if host in self.allow_hosts or host in self.allowed_ips:
            return True
        return bool(_is_loopback_ip(host))

    def _check_address(self, family: int, address: Any, what: str) -> None:
        if family == getattr(socket, "AF_UNIX", None):
            return
        if family not in (socket.AF_INET, socket.AF_INET6):
            return
        if not isinstance(address, tuple) or not address:
            return
        host = address[0]
        if isinstance(host, bytes):
            host = host.decode(errors="replace")
        if not self._host_allowed(host):
            raise self._violation(f"{what} to {address!r}")

    # --- install / uninstall --------------------------------------------------------------------

    def install(self) -> NetworkGuard:
        with self._lock:
            self._refs += 1
            if self._refs > 1:
                return self
        guard = self
        sock_cls = socket.socket
        self._saved = {
            "connect": sock_cls.connect,
            "connect_ex": sock_cls.connect_ex,
            "sendto": sock_cls.sendto,
            "getaddrinfo": socket.getaddrinfo,
            "gethostbyname": socket.gethostbyname,
            "gethostbyname_ex": socket.gethostbyname_ex,
        }
        orig_connect = self._saved["connect"]
        orig_connect_ex = self._saved["connect_ex"]
        orig_sendto = self._saved["sendto"]
        orig_getaddrinfo = self._saved["getaddrinfo"]
        orig_gethostbyname = self._saved["gethostbyname"]
        orig_gethostbyname_ex = self._saved["gethostbyname_ex"]

        def connect(self: socket.socket, address: Any) -> None:
            guard._check_address(self.family, address, "connect")
            return orig_connect(self, address)

        def connect_ex(self: socket.socket, address: Any) -> int:
            guard._check_address(self.family, address, "connect_ex")
            return orig_connect_ex(self, address)

        def sendto(self: socket.socket, data: Any, *args: Any) -> int:
            if args:
                guard._check_address(self.family, args[-1], "sendto")
            return orig_sendto(self, data, *args)

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            if not guard._host_allowed(host):
                raise guard._violation(f"resolving {host!r}")
            result = orig_getaddrinfo(host, *args, **kwargs)
            if host is not None and str(host).lower() in guard.allow_hosts:
                for *_, sockaddr in result:
                    guard.allowed_ips.add(str(sockaddr[0]).lower())
            return result

        def gethostbyname(host: str) -> str:
            if not guard._host_allowed(host):
                raise guard._violation(f"resolving {host!r}")
            return orig_gethostbyname(host)

        def gethostbyname_ex(host: str) -> Any:
            if not guard._host_allowed(host):
                raise guard._violation(f"resolving {host!r}")
            return orig_gethostbyname_ex(host)

        sock_cls.connect = connect  # type: ignore[method-assign]
        sock_cls.connect_ex = connect_ex  # type: ignore[method-assign]
        sock_cls.sendto = sendto  # type: ignore[method-assign,assignment]
        socket.getaddrinfo = getaddrinfo
        socket.gethostbyname = gethostbyname
        socket.gethostbyname_ex = gethostbyname_ex
        return self

    def uninstall(self) -> None:
        with self._lock:
            self._refs -= 1
            if self._refs > 0:
                return
            self._refs = 0
        if not self._saved:
            return
        sock_cls = socket.socket
        sock_cls.connect = self._saved["connect"]  # type: ignore[method-assign]
        sock_cls.connect_ex = self._saved["connect_ex"]  # type: ignore[method-assign]
        sock_cls.sendto = self._saved["sendto"]  # type: ignore[method-assign]
        socket.getaddrinfo = self._saved["getaddrinfo"]
        socket.gethostbyname = self._saved["gethostbyname"]
        socket.gethostbyname_ex = self._saved["gethostbyname_ex"]
        self._saved = {}

    @property
    def installed(self) -> bool:
        return self._refs > 0

    def take_violations(self) -> list[str]:
        with self._lock:
            out, self.violations = self.violations, []
        return out


_GUARD: NetworkGuard | None = None


def install_network_guard(allow_hosts: Iterable[str] = ()) -> NetworkGuard:
    """Install the (process-wide, reference-counted) guard and return it; call
    ``guard.uninstall()`` to remove it. Hosts from ``CRIER_NETGUARD_ALLOW_HOSTS`` are allowed."""
    global _GUARD
    env_hosts = [h for h in os.environ.get(_ENV_ALLOW, "").split(",") if h.strip()]
    if _GUARD is None:
        _GUARD = NetworkGuard([*env_hosts, *allow_hosts])
    else:
        _GUARD.allow_hosts.update(h.strip().lower() for h in allow_hosts if h.strip())
    return _GUARD.install()


def _network_guard() -> Iterator[NetworkGuard]:
    """Blocks non-loopback network access for the test; fails the test if any was attempted."""
    guard = install_network_guard()
    guard.take_violations()
    try:
        yield guard
    finally:
        violations = guard.take_violations()
        guard.uninstall()
    if violations:
        pytest.fail("\n".join(violations), pytrace=False)


network_guard = pytest.fixture(_network_guard, name="network_guard") if pytest else None
