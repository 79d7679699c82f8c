"""JSON encoding of job payloads, conversions of user-supplied times, and name checks:
each written once for the whole package."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from .errors import InvalidArgument, NotSerializable, SchedulerError

_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_decode = json.JSONDecoder().decode


def dumps(value: Any, what: str) -> str:
    """``value`` as compact JSON; :class:`NotSerializable` says what could not be stored."""
    if value is None:  # most arguments and results: no encoder call
        return "null"
    try:
        return _encoder.encode(value)
    except (TypeError, ValueError) as exc:
        raise NotSerializable(f"{what} must be JSON-serializable: {exc}") from None


def loads(text: str | None) -> Any:
    return None if text is None or text == "null" else _decode(text)


def encode_context(value: Any) -> tuple[str | None, bytes | None]:
    """Store ``context`` so that it comes back exactly as given.

    ``bytes`` are kept verbatim. Any other value must survive a JSON round trip unchanged
    (no tuples, no non-string keys, no NaN): it is refused rather than altered.
    """
    if value is None:
        return None, None
    if isinstance(value, bytes | bytearray | memoryview):
        return "bytes", bytes(value)
    text = dumps(value, "context")
    if _decode(text) != value:
        raise NotSerializable(
            "context must come back exactly as given, but JSON would change it "
            "(tuples become lists, non-string keys become strings); pass bytes or plain JSON values"
        )
    return "json", text.encode("utf-8")


def decode_context(kind: str | None, blob: bytes | memoryview | None) -> Any:
    if kind is None or blob is None:
        return None
    raw = bytes(blob)
    if kind == "bytes":
        return raw
    return _decode(raw.decode("utf-8"))


def to_timestamp(when: datetime | float | int, what: str = "run_at") -> float:
    """Epoch seconds from an aware datetime or a number; a naive datetime is refused."""
    if isinstance(when, datetime):
        if when.tzinfo is None or when.utcoffset() is None:
            raise InvalidArgument(
                f"{what} must be an aware datetime (with tzinfo), got naive {when.isoformat()}"
            )
        return when.timestamp()
    if isinstance(when, bool) or not isinstance(when, int | float):
        raise InvalidArgument(f"{what} must be an aware datetime or epoch seconds, got {when!r}")
    if not math.isfinite(when):
        raise InvalidArgument(f"{what} must be finite, got {when!r}")
    return float(when)


def optional_float(value: Any) -> float | None:
    """A nullable REAL / DOUBLE PRECISION column as a float or None."""
    return None if value is None else float(value)


def ts_to_datetime(ts: float) -> datetime:
    """Epoch seconds as an aware UTC datetime."""
    return datetime.fromtimestamp(ts, UTC)


def to_seconds(
    value: timedelta | float | int,
    what: str = "delay",
    *,
    sign: Literal["any", "positive", "non-negative"] = "any",
    error: type[SchedulerError] = InvalidArgument,
) -> float:
    """Seconds from a ``timedelta`` or a finite number, checked against ``sign``; a bad value
    raises ``error`` naming ``what``."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise error(f"{what} must be a timedelta or finite seconds, got {value!r}")
    else:
        seconds = float(value)
    if sign == "positive" and seconds <= 0:
        raise error(f"{what} must be positive, got {value!r}")
    if sign == "non-negative" and seconds < 0:
        raise error(f"{what} must not be negative, got {value!r}")
    return seconds


def check_name(
    value: object, what: str, limit: int, error: type[SchedulerError] = InvalidArgument
) -> str:
    """``value`` if it can name something stored (a function, a schedule, a job, an
    idempotency key): a string with more than spaces in it, at most ``limit`` characters,
    and no NUL character (PostgreSQL text cannot hold one)."""
    if isinstance(value, str) and value.strip() and len(value) <= limit and "\x00" not in value:
        return value
    got = repr(value)
    if isinstance(value, str) and len(value) > limit:
        got = f"{len(value)} characters"
    raise error(
        f"{what} must be a non-empty string of at most {limit} characters without NUL "
        f"characters, got {got}"
    )
