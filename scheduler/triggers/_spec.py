"""Triggers as stored: a JSON-able spec (:meth:`Trigger.to_spec`) and back."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Final

from ..errors import InvalidSchedule
from ._calendar import DateStep
from ._cron import Cron
from ._interval import Interval

# kind -> (required keys, optional keys)
_SPEC_KEYS: Final[dict[str, tuple[frozenset[str], frozenset[str]]]] = {
    "cron": (frozenset({"kind", "expr"}), frozenset({"tz", "nth", "step", "exclude"})),
    "interval": (frozenset({"kind", "every_us", "anchor"}), frozenset({"exclude"})),
}


def trigger_from_spec(spec: dict[str, object]) -> Cron | Interval:
    """Rebuild a trigger from :meth:`Trigger.to_spec` output.

    ``{"kind": "cron", "expr": str, "tz": str}`` (``tz`` optional, default UTC; optional
    ``"nth": [int]`` and ``"step": {"count": int, "unit": str, "since": "YYYY-MM-DD"}``) or
    ``{"kind": "interval", "every_us": int, "anchor": ISO 8601 string with an offset}``;
    either may have ``"exclude": [[start, end], ...]`` (ISO 8601 strings with an offset).
    Unknown keys, missing keys and wrong types raise :class:`InvalidSchedule`, as does
    anything the trigger's constructor rejects.
    """
    if not isinstance(spec, Mapping):
        raise InvalidSchedule(f"trigger spec must be a dict, got {type(spec).__name__}")
    kind = spec.get("kind")
    if not isinstance(kind, str) or kind not in _SPEC_KEYS:
        raise InvalidSchedule(f"unknown trigger kind {kind!r} (expected 'cron' or 'interval')")
    required, optional = _SPEC_KEYS[kind]
    missing = sorted(required - spec.keys())
    if missing:
        raise InvalidSchedule(f"{kind} trigger spec is missing {', '.join(missing)}")
    unknown = sorted(str(key) for key in spec.keys() - required - optional)
    if unknown:
        raise InvalidSchedule(f"{kind} trigger spec has unknown keys {', '.join(unknown)}")

    if kind == "cron":
        expr = spec["expr"]
        tz = spec.get("tz", "UTC")
        if not isinstance(expr, str):
            raise InvalidSchedule(f"cron spec 'expr' must be a string, got {type(expr).__name__}")
        if not isinstance(tz, str):
            raise InvalidSchedule(f"cron spec 'tz' must be a string, got {type(tz).__name__}")
        nth = spec.get("nth")
        if nth is not None and not (isinstance(nth, list) and all(type(n) is int for n in nth)):
            raise InvalidSchedule(f"cron spec 'nth' must be a list of integers, got {nth!r}")
        step = _step_from_spec(spec.get("step"))
        return Cron(expr, tz, nth=nth, step=step, exclude=_exclude_from_spec(spec.get("exclude")))

    every_us = spec["every_us"]
    anchor_text = spec["anchor"]
    if not isinstance(every_us, int) or isinstance(every_us, bool):
        raise InvalidSchedule(
            f"interval spec 'every_us' must be an integer, got {type(every_us).__name__}"
        )
    if not isinstance(anchor_text, str):
        raise InvalidSchedule(
            f"interval spec 'anchor' must be an ISO 8601 string, got {type(anchor_text).__name__}"
        )
    try:
        anchor = datetime.fromisoformat(anchor_text)
        every = timedelta(microseconds=every_us)
    except (ValueError, OverflowError) as exc:
        raise InvalidSchedule(f"invalid interval spec: {exc}") from exc
    return Interval(every, anchor, exclude=_exclude_from_spec(spec.get("exclude")))


def _exclude_from_spec(value: object) -> list[tuple[datetime, datetime]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidSchedule(f"spec 'exclude' must be a list of [start, end], got {value!r}")
    spans = []
    for item in value:
        if not (
            isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item)
        ):
            raise InvalidSchedule(
                f"spec 'exclude' must hold [start, end] pairs of ISO 8601 strings, got {item!r}"
            )
        try:
            spans.append((datetime.fromisoformat(item[0]), datetime.fromisoformat(item[1])))
        except ValueError as exc:
            raise InvalidSchedule(f"spec 'exclude' has a time that is not ISO 8601: {exc}") from exc
    return spans


def _step_from_spec(value: object) -> DateStep | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != {"count", "unit", "since"}:
        raise InvalidSchedule(
            f"cron spec 'step' must be a dict with count, unit and since, got {value!r}"
        )
    since = value["since"]
    if not isinstance(since, str):
        raise InvalidSchedule(f"cron spec step 'since' must be an ISO date, got {since!r}")
    try:
        day = date.fromisoformat(since)
    except ValueError as exc:
        raise InvalidSchedule(f"cron spec step 'since' must be an ISO date: {exc}") from exc
    return DateStep(value["count"], value["unit"], day)


def trigger_from_json(spec_json: str) -> Cron | Interval:
    """:func:`trigger_from_spec` of a spec stored as JSON text (a schedule row's)."""
    spec = json.loads(spec_json)
    return trigger_from_spec(spec)
