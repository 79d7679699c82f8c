"""JSON encoding of job payloads and conversions of user-supplied times."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from typing import Any

from .errors import InvalidArgument, NotSerializable

_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_decode = json.JSONDecoder().decode


def dumps(value: Any, what: str) -> str:
    """``value`` as compact JSON; :class:`NotSerializable` says what could not be stored."""
    try:
        return _encoder.encode(value)
    except (TypeError, ValueError) as exc:
        raise NotSerializable(f"{what} must be JSON-serializable: {exc}") from None


def loads(text: str | None) -> Any:
    return None if text is None else _decode(text)


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


def to_seconds(delay: timedelta | float | int, what: str = "delay") -> float:
    if isinstance(delay, timedelta):
        return delay.total_seconds()
    if isinstance(delay, bool) or not isinstance(delay, int | float) or not math.isfinite(delay):
        raise InvalidArgument(f"{what} must be a timedelta or finite seconds, got {delay!r}")
    return float(delay)
