"""Named SQL queries, one file per dialect.

Each query is a block that opens with its name and a one-line description::

    -- name: finish_success
    -- A claimed run succeeded: the job is done (fenced by run count and state).
    UPDATE scheduler_jobs ...

Parameters are named (``:job_id``), and both dialects use the same names for a query; the
operations pass them as a mapping. The stores number them once per query when they load
the file (:func:`positional_queries`) and bind by position. Lists are passed as Python
lists (the SQLite store hands them over as JSON arrays for ``json_each``, the PostgreSQL
store as arrays for ``= ANY``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from operator import itemgetter
from typing import Any

from .placeholders import numbered, parameter_names

_BLOCK = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
_DESCRIPTION = re.compile(r"--[ \t]*(\S.*?)\s*$")


@dataclass(frozen=True, slots=True)
class Query:
    """One named query: what it does, its SQL as written and its parameters' names (each
    once, in order of first use)."""

    name: str
    description: str
    sql: str
    params: tuple[str, ...]


def parse_queries(text: str) -> dict[str, Query]:
    """Split a query file into ``{name: Query}``; a name may appear once, and every query
    says what it does on the line after its name."""
    parts = _BLOCK.split(text)
    queries: dict[str, Query] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice")
        first, _, rest = body.lstrip("\n").partition("\n")
        described = _DESCRIPTION.fullmatch(first)
        if described is None:
            raise ValueError(f"query {name!r} has no description (a -- line after its name)")
        sql = rest.strip().rstrip(";").strip()
        if not sql:
            raise ValueError(f"query {name!r} is empty")
        queries[name] = Query(name, described.group(1), sql, parameter_names(sql))
    return queries


@cache
def load_queries(dialect: str) -> dict[str, Query]:
    """The named queries of ``dialect`` (``sqlite`` or ``postgres``)."""
    text = resources.files(__package__).joinpath(f"{dialect}.sql").read_text("utf-8")
    return parse_queries(text)


Values = Callable[[Mapping[str, Any]], tuple[Any, ...]]
"""A query's parameter values in number order, taken from its parameters by name."""


@dataclass(frozen=True, slots=True)
class Numbered:
    """A query as a driver that binds parameters by position runs it: ``sql`` with numbered
    placeholders, and ``values(params)`` the parameter values in number order."""

    sql: str
    names: tuple[str, ...]
    values: Values


def _values_of(names: tuple[str, ...]) -> Values:
    if not names:
        return lambda params: ()
    if len(names) == 1:
        (only,) = names
        return lambda params: (params[only],)
    return itemgetter(*names)  # a tuple for two or more names


@cache
def positional_queries(dialect: str, marker: str = "$") -> dict[str, Numbered]:
    """``dialect``'s queries with numbered placeholders (``$n``, or ``?n`` with
    ``marker="?"``), for binding by position: numbering once at load time spares every
    execution the name lookups."""
    out: dict[str, Numbered] = {}
    for name, q in load_queries(dialect).items():
        sql, names = numbered(q.sql, marker)
        out[name] = Numbered(sql, names, _values_of(names))
    return out
