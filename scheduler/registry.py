"""Function names mapped to handlers, each declared a mutation or an action."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from ._codec import check_name
from .errors import DuplicateName, InvalidArgument, UnknownFunction
from .models import DEFAULT_ACTION_RETRY, DEFAULT_MUTATION_RETRY, JobKind, Pace, Retry

Handler = Callable[[Any, Any], Awaitable[Any]]
H = TypeVar("H", bound=Handler)

NAME_LIMIT = 200
"""The longest function or schedule name, in characters."""


@dataclass(frozen=True, slots=True)
class Registration:
    name: str
    kind: JobKind
    handler: Handler
    idempotent: bool
    retry: Retry
    pace: Pace | None = None
    """The pace of the function's jobs and schedules unless they name their own."""


class Registry:
    """Named handlers. A name is what jobs store; the kind is looked up here at enqueue time.

    >>> registry = Registry()
    >>> @registry.mutation("counters:bump")
    ... async def bump(ctx, args): ...
    """

    def __init__(self) -> None:
        self._entries: dict[str, Registration] = {}

    def register(
        self,
        name: str,
        handler: Handler,
        kind: JobKind | str,
        *,
        idempotent: bool = False,
        retry: Retry | None = None,
        pace: Pace | None = None,
    ) -> None:
        """Register ``handler`` under ``name``; a name may be registered once. ``pace`` is
        the default pace of its jobs and schedules (see :class:`~scheduler.Pace`)."""
        check_name(name, "a function name", NAME_LIMIT)
        kind = JobKind(kind)
        if name in self._entries:
            raise DuplicateName(f"function {name!r} is already registered")
        if not inspect.iscoroutinefunction(handler):
            raise InvalidArgument(
                f"handler for {name!r} must be an async function `async def f(ctx, args)`"
            )
        if kind is JobKind.MUTATION and idempotent:
            raise InvalidArgument("idempotent=True is for actions; mutations are always replayable")
        if pace is not None and not isinstance(pace, Pace):
            raise InvalidArgument(f"pace must be a Pace(key, spacing), got {pace!r}")
        # An idempotent action is replayed like a mutation after a crash (the lost run counts
        # as an attempt), so it gets a mutation's budget: with one attempt it could never be.
        replayable = kind is JobKind.MUTATION or idempotent
        default = DEFAULT_MUTATION_RETRY if replayable else DEFAULT_ACTION_RETRY
        self._entries[name] = Registration(name, kind, handler, idempotent, retry or default, pace)

    def mutation(
        self, name: str, *, retry: Retry | None = None, pace: Pace | None = None
    ) -> Callable[[H], H]:
        """Decorator: ``handler(ctx, args)`` runs inside one write transaction."""

        def deco(fn: H) -> H:
            self.register(name, fn, JobKind.MUTATION, retry=retry, pace=pace)
            return fn

        return deco

    def action(
        self,
        name: str,
        *,
        idempotent: bool = False,
        retry: Retry | None = None,
        pace: Pace | None = None,
    ) -> Callable[[H], H]:
        """Decorator: ``handler(ctx, args)`` runs outside any transaction and may do I/O.

        ``idempotent=True`` declares that running it twice is harmless: a crashed run is then
        re-dispatched instead of failed.
        """

        def deco(fn: H) -> H:
            self.register(name, fn, JobKind.ACTION, idempotent=idempotent, retry=retry, pace=pace)
            return fn

        return deco

    def get(self, name: str) -> Registration:
        """The registration for ``name``; :class:`UnknownFunction` if there is none."""
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise UnknownFunction(f"no function is registered as {name!r}") from None

    def mutation_named(self, name: str) -> Registration:
        reg = self.get(name)
        if reg.kind is not JobKind.MUTATION:
            raise UnknownFunction(f"{name!r} is registered as an action, but a mutation is needed")
        return reg

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Registration]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def merge(self, other: Registry) -> None:
        """Add every registration of ``other`` (names must not clash)."""
        for reg in other:
            if reg.name in self._entries:
                raise DuplicateName(f"function {reg.name!r} is already registered")
            self._entries[reg.name] = reg
