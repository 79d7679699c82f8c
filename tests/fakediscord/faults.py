"""Fault injection for the fake REST API.

    fault = fake.faults.add(method="POST", path_regex=r"/channels/\\d+/messages",
                            times=1, status=502, after_effect=True)

* Faults are matched in the order they were added; a matching fault is consumed (``times`` counts
  down) and only the first matching one applies to a request.
* ``path_regex`` is matched with ``re.fullmatch`` against the path after ``/api/v10``
  (e.g. ``/channels/123/messages``); ``method`` is optional.
* ``status``: answer with this status instead of the real response. 5xx bodies look like what
  Discord / its proxy return (502/504: an HTML page; 500/503: JSON); 4xx bodies are Discord's JSON
  error with ``code`` (and ``message``). A 429 fault carries ``retry_after`` and ``Via``.
* ``after_effect=True``: the request is fully performed first (the message IS created), then the
  fault's status is returned - the "request succeeded but the response was lost" case. With no
  ``status`` it just performs the request and then applies ``delay``.
* ``delay``: seconds to wait before answering (before performing the request, unless
  ``after_effect``), e.g. to exceed a client timeout.
* ``disconnect=True``: drop the TCP connection without any response (after performing the request
  if ``after_effect``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Fault:
    method: str | None = None
    path_regex: str | None = None
    times: int = 1
    status: int | None = None
    code: int | None = None
    message: str | None = None
    delay: float = 0.0
    after_effect: bool = False
    disconnect: bool = False
    retry_after: float = 0.05
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        if self.times <= 0:
            return False
        if self.method is not None and self.method.upper() != method.upper():
            return False
        return self.path_regex is None or re.fullmatch(self.path_regex, path) is not None

    @property
    def exhausted(self) -> bool:
        return self.times <= 0


class FaultInjector:
    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self.history: list[tuple[str, str, Fault]] = []

    def add(
        self,
        *,
        method: str | None = None,
        path_regex: str | None = None,
        times: int = 1,
        status: int | None = None,
        code: int | None = None,
        message: str | None = None,
        delay: float = 0.0,
        after_effect: bool = False,
        disconnect: bool = False,
        retry_after: float = 0.05,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Fault:
        if status is None and not delay and not disconnect and not after_effect:
            raise ValueError("a fault needs a status, a delay, or disconnect=True")
        fault = Fault(
            method=method,
            path_regex=path_regex,
            times=times,
            status=status,
            code=code,
            message=message,
            delay=delay,
            after_effect=after_effect,
            disconnect=disconnect,
            retry_after=retry_after,
            body=body,
            headers=dict(headers or {}),
        )
        self._faults.append(fault)
        return fault

    def take(self, method: str, path: str) -> Fault | None:
        """Consume and return the first fault matching this request, if any."""
        for fault in self._faults:
            if fault.matches(method, path):
                fault.times -= 1
                fault.hits += 1
                self.history.append((method, path, fault))
                if fault.exhausted:
                    self._faults.remove(fault)
                return fault
        return None

    def clear(self) -> None:
        self._faults.clear()

    @property
    def pending(self) -> list[Fault]:
        return list(self._faults)

    def __len__(self) -> int:
        return len(self._faults)
