"""Function names mapped to handlers, each declared a mutation or an action.

A registration may name the type of its arguments (``args=``, a frozen dataclass: see
:mod:`scheduler._args`) and older names it answers to (``aliases=``): a job or schedule
stored under an alias runs the registration's handler, and an enqueue under an alias stores
the registration's own name.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

from ._args import ArgsType
from ._codec import check_name, to_seconds
from .errors import DuplicateName, InvalidArgument, UnknownFunction
from .models import (
    DEFAULT_ACTION_RETRY,
    DEFAULT_MUTATION_RETRY,
    Concurrency,
    JobKind,
    Pace,
    Retry,
)

if TYPE_CHECKING:
    from datetime import timedelta

Handler = Callable[[Any, Any], Awaitable[Any]]
H = TypeVar("H", bound=Handler)
A = TypeVar("A")
R = TypeVar("R")
TypedHandler = Callable[[Any, A], Awaitable[R]]
"""A handler whose arguments are an ``A`` (the registration's ``args`` type)."""

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
    args_type: ArgsType[Any] | None = None
    """The type of its arguments (None: any JSON value, passed to the handler as stored)."""
    aliases: tuple[str, ...] = ()
    """Older names that resolve to this registration (jobs stored under them still run)."""
    timeout: float | None = None
    """Seconds a run of its jobs may take before it is cancelled, unless the job names its
    own timeout (None: no limit)."""
    concurrency: Concurrency | None = None
    """The concurrency limit of its jobs (schedule occurrences included) unless they name
    their own (None: none)."""

    def encode_args(self, args: Any, what: str) -> Any:
        """What a job of this function stores for ``args``: for a typed registration the
        JSON object of its fields, checked (:class:`InvalidArgument` if it doesn't fit);
        else ``args`` itself."""
        return args if self.args_type is None else self.args_type.encode(args, what)

    def decode_args(self, stored: Any) -> Any:
        """What the handler receives for the ``stored`` arguments of a job: an instance of
        the ``args`` type (:class:`InvalidArgument` if they don't decode), else ``stored``."""
        if self.args_type is None:
            return stored
        return self.args_type.decode(stored, f"the stored arguments of {self.name!r}")

    def coerce_args(self, args: Any) -> Any:
        """``args`` as the handler receives them when called directly (``run_mutation``):
        checked and made an instance of the ``args`` type, else as given."""
        if self.args_type is None:
            return args
        return self.args_type.coerce(args, f"args for {self.name!r}")


class Registry:
    """Named handlers. A name is what jobs store; the kind is looked up here at enqueue time.

    >>> registry = Registry()
    >>> @registry.mutation("counters:bump")
    ... async def bump(ctx, args): ...
    """

    def __init__(self) -> None:
        self._entries: dict[str, Registration] = {}
        self._aliases: dict[str, str] = {}
        """Each alias, to the name it stands for."""

    def register(
        self,
        name: str,
        handler: Handler,
        kind: JobKind | str,
        *,
        idempotent: bool = False,
        retry: Retry | None = None,
        pace: Pace | None = None,
        args: type[Any] | None = None,
        aliases: Iterable[str] = (),
        timeout: timedelta | float | None = None,
        concurrency: Concurrency | None = None,
    ) -> None:
        """Register ``handler`` under ``name``; a name (or alias) may be registered once.
        ``pace`` is the default pace of its jobs and schedules (see
        :class:`~scheduler.Pace`); ``args`` the frozen dataclass its arguments are checked
        against at enqueue and decoded into before the handler runs; ``aliases`` older
        names whose stored jobs and schedules it runs too; ``timeout`` how long a run of its
        jobs may take before it is cancelled and fails (a job's own ``timeout`` wins);
        ``concurrency`` the default :class:`~scheduler.Concurrency` of its jobs and of its
        schedules' occurrences (a job's own wins; not with ``pace``)."""
        check_name(name, "a function name", NAME_LIMIT)
        kind = JobKind(kind)
        if isinstance(aliases, str):
            raise InvalidArgument(f"aliases must be a collection of names, got {aliases!r}")
        old_names = tuple(dict.fromkeys(aliases))
        for alias in old_names:
            check_name(alias, "an alias", NAME_LIMIT)
        if name in old_names:
            raise InvalidArgument(f"function {name!r} can't be an alias of itself")
        for taken in (name, *old_names):
            if taken in self:
                raise DuplicateName(f"function {taken!r} is already registered")
        if not inspect.iscoroutinefunction(handler):
            raise InvalidArgument(
                f"handler for {name!r} must be an async function `async def f(ctx, args)`"
            )
        if kind is JobKind.MUTATION and idempotent:
            raise InvalidArgument("idempotent=True is for actions; mutations are always replayable")
        if pace is not None and not isinstance(pace, Pace):
            raise InvalidArgument(f"pace must be a Pace(key, spacing), got {pace!r}")
        if concurrency is not None and not isinstance(concurrency, Concurrency):
            raise InvalidArgument(
                f"concurrency must be a Concurrency(key, limit), got {concurrency!r}"
            )
        if pace is not None and concurrency is not None:
            raise InvalidArgument(f"{name!r} takes a pace or a concurrency, not both")
        # An idempotent action is replayed like a mutation after a crash (the lost run counts
        # as an attempt), so it gets a mutation's budget: with one attempt it could never be.
        replayable = kind is JobKind.MUTATION or idempotent
        default = DEFAULT_MUTATION_RETRY if replayable else DEFAULT_ACTION_RETRY
        args_type = None if args is None else ArgsType(args)
        seconds = None if timeout is None else to_seconds(timeout, "timeout", sign="positive")
        self._add(
            Registration(
                name,
                kind,
                handler,
                idempotent,
                retry or default,
                pace,
                args_type,
                old_names,
                seconds,
                concurrency,
            )
        )

    def _add(self, reg: Registration) -> None:
        self._entries[reg.name] = reg
        for alias in reg.aliases:
            self._aliases[alias] = reg.name

    @overload
    def mutation(
        self,
        name: str,
        *,
        args: None = None,
        retry: Retry | None = None,
        pace: Pace | None = None,
        aliases: Iterable[str] = (),
        timeout: timedelta | float | None = None,
        concurrency: Concurrency | None = None,
    ) -> Callable[[H], H]: ...

    @overload
    def mutation(
        self,
        name: str,
        *,
        args: type[A],
        retry: Retry | None = None,
        pace: Pace | None = None,
        aliases: Iterable[str] = (),
        timeout: timedelta | float | None = None,
        concurrency: Concurrency | None = None,
    ) -> Callable[[TypedHandler[A, R]], TypedHandler[A, R]]: ...

    def mutation(
        self,
        name: str,
        *,
        args: type[Any] | None = None,
        retry: Retry | None = None,
        pace: Pace | None = None,
        aliases: Iterable[str] = (),
        timeout: timedelta | float | None = None,
        concurrency: Concurrency | None = None,
    ) -> Callable[[H], H]:
        """Decorator: ``handler(ctx, args)`` runs inside one write transaction (``args``:
        an instance of the ``args`` type when one is given; see :meth:`register`)."""

        def deco(fn: H) -> H:
            self.register(
                name,
                fn,
                JobKind.MUTATION,
                retry=retry,
                pace=pace,
                args=args,
                aliases=aliases,
                timeout=timeout,
                concurrency=concurrency,
            )
            return fn

        return deco

    @overload
    def action(
        self,
        name: str,
        *,
        args: None = None,
        idempotent: bool = False,
        retry: Retry | None = None,
        pace: Pace | None = None,
        aliases: Iterable[str] = (),
        timeout: timedelta | float | None = None,
        concurrency: Concurrency | None = None,
    ) -> Callable[[H], H]: ...

    @overload
    def action(
        self,
        name: str,
        *,
        args: type[A],
        idempotent: bool = False,
        retry: Retry | None = None,
        pace: Pace | None = None,
        aliases: Iterable[str] = (),
        timeout: timedelta | float | None = None,
        concurrency: Concurrency | None = None,
    ) -> Callable[[TypedHandler[A, R]], TypedHandler[A, R]]: ...

    def action(
        self,
        name: str,
        *,
        args: type[Any] | None = None,
        idempotent: bool = False,
        retry: Retry | None = None,
        pace: Pace | None = None,
        aliases: Iterable[str] = (),
        timeout: timedelta | float | None = None,
        concurrency: Concurrency | None = None,
    ) -> Callable[[H], H]:
        """Decorator: ``handler(ctx, args)`` runs outside any transaction and may do I/O.

        ``idempotent=True`` declares that running it twice is harmless: a crashed run is then
        re-dispatched instead of failed. ``args`` and ``aliases``: see :meth:`register`.
        """

        def deco(fn: H) -> H:
            self.register(
                name,
                fn,
                JobKind.ACTION,
                idempotent=idempotent,
                retry=retry,
                pace=pace,
                args=args,
                aliases=aliases,
                timeout=timeout,
                concurrency=concurrency,
            )
            return fn

        return deco

    def get(self, name: str) -> Registration:
        """The registration for ``name`` (or of which it is an alias);
        :class:`UnknownFunction` if there is none."""
        try:
            return self._entries[name]
        except KeyError:
            if name in self._aliases:
                return self._entries[self._aliases[name]]
        except TypeError:
            pass
        raise UnknownFunction(f"no function is registered as {name!r}")

    def mutation_named(self, name: str) -> Registration:
        """The registration of the mutation ``name``: :exc:`UnknownFunction` if there is none,
        or if ``name`` is an action."""
        reg = self.get(name)
        if reg.kind is not JobKind.MUTATION:
            raise UnknownFunction(f"{name!r} is registered as an action, but a mutation is needed")
        return reg

    def __contains__(self, name: object) -> bool:
        """Whether ``name`` is a registered name or alias."""
        try:
            return name in self._entries or name in self._aliases
        except TypeError:  # not hashable: no name
            return False

    def __iter__(self) -> Iterator[Registration]:
        """Each registration once (not once per alias)."""
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def merge(self, other: Registry) -> None:
        """Add every registration of ``other`` (names and aliases must not clash)."""
        for reg in other:
            for taken in (reg.name, *reg.aliases):
                if taken in self:
                    raise DuplicateName(f"function {taken!r} is already registered")
            self._add(reg)
