"""Time zone names: looking one up forgivingly, and ranking them for autocomplete."""

from __future__ import annotations

import difflib
import functools
import re
import zoneinfo
from typing import Final
from zoneinfo import ZoneInfo

from ..i18n import t, tn
from ..limits import MAX_ZONE_NAME, clip
from .errors import InputError

COMMON_ZONES: Final = (
    "UTC",
    "Europe/London",
    "America/New_York",
    "America/Chicago",
    "America/Denver",
    "America/Los_Angeles",
    "Europe/Paris",
    "Europe/Berlin",
    "Europe/Madrid",
    "Europe/Amsterdam",
    "Europe/Stockholm",
    "Europe/Warsaw",
    "Europe/Moscow",
    "America/Toronto",
    "America/Sao_Paulo",
    "America/Mexico_City",
    "Africa/Johannesburg",
    "Asia/Dubai",
    "Asia/Kolkata",
    "Asia/Singapore",
    "Asia/Shanghai",
    "Asia/Tokyo",
    "Australia/Sydney",
    "Pacific/Auckland",
    "Pacific/Honolulu",
)
"""Zones offered first when nothing has been typed yet."""

_PRIMARY_REGIONS: Final = frozenset(
    {"Africa", "America", "Antarctica", "Asia", "Atlantic", "Australia", "Europe", "Indian"}
    | {"Pacific"}
)
_NOT_ZONES: Final = frozenset({"Factory", "localtime", "posixrules"})


def resolve_timezone(name: str) -> ZoneInfo:
    """Find the IANA zone called ``name``, ignoring case (``europe/london`` works).

    Spaces may stand for underscores (``america/new york``). An unknown name raises
    :class:`InputError` that suggests the closest known names.
    """
    key = "_".join(name.strip().lower().split())
    names = _zone_names()
    if key in names:
        return ZoneInfo(names[key])
    shown = _sanitize(name)
    if not shown:
        raise InputError(t("Please give a time zone, like `Europe/London` or `America/New_York`."))
    close = _suggest_zones(key) if len(key) <= MAX_ZONE_NAME else []  # no name is longer
    if close:
        listed = ", ".join(f"`{z}`" for z in close)
        raise InputError(
            t("I don't know the time zone `{zone}`. Did you mean {zones}?", zone=shown,
              zones=listed)
        )  # fmt: skip
    raise InputError(
        t("I don't know the time zone `{zone}`. Use a name like `Europe/London`, "
          "`America/New_York` or `UTC` (start typing to see the list).", zone=shown)
    )  # fmt: skip


def timezone_choices(prefix: str, limit: int = 25) -> list[str]:
    """Zone names for autocomplete that contain ``prefix`` (case-insensitive), best first.

    Exact matches come first, then names starting with the text, then names with a part
    (region, city, or word of a city) starting with it, then any other names containing it;
    within each group the common zones lead, then the current region-style names, then the
    rest alphabetically. An empty ``prefix`` gives :data:`COMMON_ZONES` first. At most
    ``limit`` names are returned (Discord shows at most 25 choices).
    """
    if limit <= 0:
        return []
    key = "_".join(prefix.strip().lower().split())
    ranked = sorted(
        (rank, _popularity(zone), zone)
        for zone in _zone_names().values()
        if (rank := _match_rank(zone.lower(), key)) is not None
    )
    return [zone for _, _, zone in ranked[:limit]]


@functools.cache
def zone_names() -> tuple[str, ...]:
    """Every zone name :func:`resolve_timezone` knows, canonical and sorted (for a list to
    pick from)."""
    return tuple(sorted(_zone_names().values()))


@functools.cache
def _zone_names() -> dict[str, str]:
    """Lower-case name → canonical IANA name, for every zone the system knows."""
    return {name.lower(): name for name in zoneinfo.available_timezones() - _NOT_ZONES}


@functools.cache
def _city_names() -> dict[str, str]:
    """Lower-case last component (``london``) → canonical name, for fuzzy suggestions."""
    cities: dict[str, str] = {}
    for zone in sorted(_zone_names().values(), key=_popularity):
        cities.setdefault(zone.rsplit("/", 1)[-1].lower(), zone)
    return cities


def _popularity(zone: str) -> tuple[int, int, str]:
    common = COMMON_ZONES.index(zone) if zone in COMMON_ZONES else len(COMMON_ZONES)
    modern = 0 if zone.split("/", 1)[0] in _PRIMARY_REGIONS or zone == "UTC" else 1
    return common, modern, zone


def _match_rank(name: str, key: str) -> int | None:
    if not key:
        return 0
    if name == key:
        return 0
    if name.startswith(key):
        return 1
    if re.search(r"[/_-]" + re.escape(key), name):
        return 2
    if key in name:
        return 3
    return None


def _suggest_zones(key: str) -> list[str]:
    suggestions = timezone_choices(key, 3) if len(key) >= 3 else []
    names, cities = _zone_names(), _city_names()
    suggestions += [names[n] for n in difflib.get_close_matches(key, names, n=3)]
    city = key.rsplit("/", 1)[-1]
    suggestions += [cities[c] for c in difflib.get_close_matches(city, cities, n=3)]
    return list(dict.fromkeys(suggestions))[:3]


def _sanitize(text: str) -> str:
    return clip(text.replace("`", ""), 40)


ZONE_ABBREVIATIONS: Final = {
    "est": ("America/New_York", "America/Toronto", "America/Panama", "America/Cancun"),
    "edt": ("America/New_York", "America/Toronto", "America/Detroit"),
    "cst": ("America/Chicago", "America/Mexico_City", "Asia/Shanghai", "America/Havana"),
    "cdt": ("America/Chicago", "America/Winnipeg", "America/Havana"),
    "mst": ("America/Denver", "America/Phoenix", "America/Edmonton"),
    "mdt": ("America/Denver", "America/Edmonton", "America/Boise"),
    "pst": ("America/Los_Angeles", "America/Vancouver", "Asia/Manila"),
    "pdt": ("America/Los_Angeles", "America/Vancouver", "America/Tijuana"),
    "akst": ("America/Anchorage",),
    "hst": ("Pacific/Honolulu",),
    "bst": ("Europe/London", "Asia/Dhaka"),
    "ist": ("Asia/Kolkata", "Europe/Dublin", "Asia/Jerusalem"),
    "wet": ("Europe/Lisbon", "Atlantic/Canary"),
    "west": ("Europe/Lisbon", "Atlantic/Canary"),
    "cet": ("Europe/Paris", "Europe/Berlin", "Europe/Madrid", "Africa/Lagos"),
    "cest": ("Europe/Paris", "Europe/Berlin", "Europe/Madrid"),
    "eet": ("Europe/Athens", "Europe/Helsinki", "Africa/Cairo"),
    "eest": ("Europe/Athens", "Europe/Helsinki", "Europe/Kyiv"),
    "msk": ("Europe/Moscow",),
    "jst": ("Asia/Tokyo",),
    "kst": ("Asia/Seoul",),
    "sgt": ("Asia/Singapore",),
    "hkt": ("Asia/Hong_Kong",),
    "aest": ("Australia/Sydney", "Australia/Brisbane", "Australia/Melbourne"),
    "aedt": ("Australia/Sydney", "Australia/Melbourne", "Australia/Hobart"),
    "acst": ("Australia/Adelaide", "Australia/Darwin"),
    "awst": ("Australia/Perth",),
    "nzst": ("Pacific/Auckland",),
    "nzdt": ("Pacific/Auckland",),
}
"""Zone abbreviations people type → the IANA zones they may mean (most used first).

They are refused rather than guessed: ``CST`` is Chicago, Shanghai or Havana, and ``EST``
written in July usually means New York's summer time (EDT), not UTC-5."""


def abbreviation_refusal(word: str, before: str) -> str:
    """Why ``before`` + the abbreviation ``word`` is refused, naming the zones it may mean."""
    zones = ZONE_ABBREVIATIONS[word]
    listed = ", ".join(f"`{zone}`" for zone in zones)
    example = f"{before} {zones[0]}".strip()
    return tn(
        "`{word}` is an abbreviation, and abbreviations are ambiguous (they can mean several "
        "zones, or ignore daylight saving). Name the zone it may mean: {zones}, like "
        "`{example}`, or set the `timezone` option.",
        "`{word}` is an abbreviation, and abbreviations are ambiguous (they can mean several "
        "zones, or ignore daylight saving). Name one of the zones it may mean: {zones}, like "
        "`{example}`, or set the `timezone` option.",
        len(zones), word=word.upper(), zones=listed, example=example,
    )  # fmt: skip
