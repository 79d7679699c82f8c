"""Typed job arguments: a frozen dataclass a registration names as its ``args``.

``registry.action("mail:send", args=Mail)`` makes the scheduler check and encode the value
of every job (and schedule) of ``"mail:send"`` when it is enqueued, and decode the stored
value into a ``Mail`` before the handler runs:

- enqueue takes a ``Mail``, or a mapping of its fields (the plain dict callers passed before
  the type existed); every field is checked against its annotation, and a missing field, an
  unknown one or a value of the wrong type is an :class:`~scheduler.InvalidArgument` at
  enqueue time, before anything is written. What is stored is the plain JSON object of the
  fields, so the stored form of a typed job is the dict an untyped caller would have passed;
- the handler gets a ``Mail``. Jobs stored before (plain dicts) decode the same way; a key
  the type no longer has is ignored, so a field can be dropped in a later release (a field
  added later needs a default). A stored value that does not decode fails its job at once.

Field annotations: ``bool``, ``int``, ``float`` (an ``int`` is taken), ``str``, ``None``,
unions of them (``X | None``), ``list[X]``, ``tuple[X, ...]``, ``dict[str, X]``,
``Literal[...]``, :class:`~enum.Enum` subclasses (stored by value), nested frozen
dataclasses, and ``Any`` (any JSON value, as it is). Any other annotation is refused when
the function is registered, so every registered type round-trips.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from .errors import InvalidArgument

T = TypeVar("T")

__all__ = ["ArgsType"]


class _Mismatch(Exception):
    """A value that does not fit its annotation (the message says where and why)."""


def _wrong(path: str, wanted: str, got: object) -> _Mismatch:
    return _Mismatch(f"{path} must be {wanted}, got {got!r}")


Convert = Callable[[Any, str], Any]
"""``convert(value, path)``: ``value`` checked and converted (to its JSON form when
encoding, to its Python form when decoding); raises :class:`_Mismatch` naming ``path``."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Codec:
    """How values of one annotation are encoded and decoded."""

    wanted: str
    encode: Convert
    decode: Convert


def _same_both_ways(wanted: str, fits: Callable[[Any], bool], to: Callable[[Any], Any]) -> _Codec:
    """A scalar: stored as it is (after ``to``) when it ``fits``."""

    def convert(value: Any, path: str) -> Any:
        if not fits(value):
            raise _wrong(path, wanted, value)
        return to(value)

    return _Codec(wanted, convert, convert)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (_is_int(v) or isinstance(v, float)) and math.isfinite(v)


def _identity(value: Any) -> Any:
    return value


_SCALARS: dict[object, _Codec] = {
    bool: _same_both_ways("a bool", lambda v: isinstance(v, bool), _identity),
    int: _same_both_ways("an int", _is_int, _identity),
    float: _same_both_ways("a finite number", _is_number, float),
    str: _same_both_ways("a str", lambda v: isinstance(v, str), _identity),
    type(None): _same_both_ways("None", lambda v: v is None, _identity),
    Any: _Codec("any JSON value", lambda v, _: v, lambda v, _: v),
}


def _union(arms: list[_Codec]) -> _Codec:
    wanted = " or ".join(a.wanted for a in arms)

    def pick(which: Callable[[_Codec], Convert]) -> Convert:
        def convert(value: Any, path: str) -> Any:
            for arm in arms:
                try:
                    return which(arm)(value, path)
                except _Mismatch:
                    continue
            raise _wrong(path, wanted, value)

        return convert

    return _Codec(wanted, pick(lambda a: a.encode), pick(lambda a: a.decode))


def _sequence(item: _Codec, make: Callable[[list[Any]], Any], name: str) -> _Codec:
    wanted = f"a {name} of {item.wanted}"

    def walk(which: Convert, out: Callable[[list[Any]], Any]) -> Convert:
        def convert(value: Any, path: str) -> Any:
            if not isinstance(value, list | tuple):
                raise _wrong(path, wanted, value)
            return out([which(v, f"{path}[{i}]") for i, v in enumerate(value)])

        return convert

    return _Codec(wanted, walk(item.encode, list), walk(item.decode, make))


def _mapping(value_codec: _Codec) -> _Codec:
    wanted = f"a dict of str to {value_codec.wanted}"

    def walk(which: Convert) -> Convert:
        def convert(value: Any, path: str) -> Any:
            if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
                raise _wrong(path, wanted, value)
            return {k: which(v, f"{path}[{k!r}]") for k, v in value.items()}

        return convert

    return _Codec(wanted, walk(value_codec.encode), walk(value_codec.decode))


def _literal(options: tuple[Any, ...]) -> _Codec:
    return _same_both_ways(
        "one of " + ", ".join(map(repr, options)),
        lambda v: any(v == o and type(v) is type(o) for o in options),
        _identity,
    )


def _enum(cls: type[enum.Enum]) -> _Codec:
    wanted = f"a {cls.__name__} (one of {', '.join(repr(m.value) for m in cls)})"

    def member(value: Any, path: str) -> enum.Enum:
        try:
            return cls(value)
        except ValueError:
            raise _wrong(path, wanted, value) from None

    return _Codec(wanted, lambda v, p: member(v, p).value, member)


def _codec_for(tp: Any, where: str) -> _Codec:
    """The codec of annotation ``tp`` (of the field ``where``); refused if unsupported."""
    if tp in _SCALARS:
        return _SCALARS[tp]
    origin, params = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        return _union([_codec_for(p, where) for p in params])
    if origin is typing.Literal and all(_is_int(o) or isinstance(o, str | bool) for o in params):
        return _literal(params)
    if origin is list and len(params) == 1:
        return _sequence(_codec_for(params[0], where), list, "list")
    if origin is tuple and len(params) == 2 and params[1] is Ellipsis:
        return _sequence(_codec_for(params[0], where), tuple, "tuple")
    if origin is dict and len(params) == 2 and params[0] is str:
        return _mapping(_codec_for(params[1], where))
    if (
        isinstance(tp, type)
        and issubclass(tp, enum.Enum)
        and all(_is_int(m.value) or isinstance(m.value, str) for m in tp)
    ):
        return _enum(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        nested: ArgsType[Any] = ArgsType(tp)
        return _Codec(f"a {tp.__name__}", nested.encode_at, nested.decode_at)
    raise InvalidArgument(
        f"{where}: {tp!r} can't be stored as a job argument (use bool, int, float, str, None, "
        "unions of them, list[X], tuple[X, ...], dict[str, X], Literal, an Enum, a frozen "
        "dataclass or Any)"
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    name: str
    codec: _Codec
    required: bool


class ArgsType(Generic[T]):
    """The arguments of a typed registration: the frozen dataclass ``cls``, with the codec
    of each of its fields (worked out once, when the function is registered)."""

    __slots__ = ("_fields", "_names", "cls")

    def __init__(self, cls: type[T]) -> None:
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise InvalidArgument(f"args must be a frozen dataclass type, got {cls!r}")
        if not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
            raise InvalidArgument(
                f"args type {cls.__name__} must be a frozen dataclass (@dataclass(frozen=True)): "
                "a job's arguments are a value"
            )
        try:
            hints = typing.get_type_hints(cls)
        except (NameError, TypeError) as exc:
            raise InvalidArgument(f"args type {cls.__name__}: {exc}") from None
        self.cls = cls
        self._fields = tuple(
            _Field(
                f.name,
                _codec_for(hints[f.name], f"{cls.__name__}.{f.name}"),
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(cls)
            if f.init
        )
        self._names = frozenset(f.name for f in self._fields)

    def __repr__(self) -> str:
        return f"ArgsType({self.cls.__name__})"

    def coerce(self, value: object, what: str) -> T:
        """``value`` as an instance: an instance (its fields checked) or a mapping of its
        fields (nothing missing, nothing unknown; None: no field given);
        :class:`InvalidArgument` says what is wrong."""
        try:
            if isinstance(value, self.cls):
                self.encode_at(value, self.cls.__name__)
                return value
            return self._build({} if value is None else value, self.cls.__name__, strict=True)
        except _Mismatch as exc:
            raise InvalidArgument(f"{what}: {exc}") from None

    def encode(self, value: object, what: str) -> dict[str, Any]:
        """What a job stores for ``value`` (checked as by :meth:`coerce`): the JSON object
        of its fields."""
        try:
            return self.encode_at({} if value is None else value, self.cls.__name__)
        except _Mismatch as exc:
            raise InvalidArgument(f"{what}: {exc}") from None

    def decode(self, stored: object, what: str) -> T:
        """The instance a job stored (a key the type no longer has is ignored; None: no
        field stored)."""
        try:
            return self._build({} if stored is None else stored, self.cls.__name__, strict=False)
        except _Mismatch as exc:
            raise InvalidArgument(f"{what}: {exc}") from None

    # --- the codec, also of a nested dataclass field --------------------------------------

    def encode_at(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, self.cls):
            # A mapping where a nested dataclass goes: read as its fields.
            value = self._build(value, path, strict=True)
        return {
            f.name: f.codec.encode(getattr(value, f.name), f"{path}.{f.name}") for f in self._fields
        }

    def decode_at(self, value: Any, path: str) -> T:
        if isinstance(value, self.cls):  # an instance inside a mapping given at enqueue
            return value
        return self._build(value, path, strict=False)

    def _build(self, value: Any, path: str, *, strict: bool) -> T:
        """An instance from the mapping ``value`` of its fields (``strict``: no other key)."""
        if not isinstance(value, Mapping):
            raise _wrong(path, f"a {self.cls.__name__} or a mapping of its fields", value)
        unknown = sorted(repr(k) for k in value if k not in self._names)
        if strict and unknown:
            raise _Mismatch(f"{path} has no field {', '.join(unknown)}")
        missing = [repr(f.name) for f in self._fields if f.required and f.name not in value]
        if missing:
            raise _Mismatch(f"{path} is missing {', '.join(missing)}")
        given = {
            f.name: f.codec.decode(value[f.name], f"{path}.{f.name}")
            for f in self._fields
            if f.name in value
        }
        try:
            return self.cls(**given)
        except (TypeError, ValueError) as exc:  # refused by the type's own __post_init__
            raise _Mismatch(f"{path}: {exc}") from None
