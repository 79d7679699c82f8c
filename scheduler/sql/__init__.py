"""Named SQL queries, one file per dialect (``-- name: <query>`` blocks)."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_BLOCK = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


def parse_queries(text: str) -> dict[str, str]:
    """Split a query file into ``{name: sql}``; a name may appear once."""
    parts = _BLOCK.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice")
        sql = body.strip().rstrip(";").strip()
        if not sql:
            raise ValueError(f"query {name!r} is empty")
        queries[name] = sql
    return queries


@cache
def load_queries(dialect: str) -> dict[str, str]:
    """The named queries of ``dialect`` (``sqlite`` or ``postgres``)."""
    text = resources.files(__package__).joinpath(f"{dialect}.sql").read_text("utf-8")
    return parse_queries(text)
