"""Named SQL queries, one file per dialect.

Each query is a block that opens with its name and a one-line description::

    -- name: finish_success
    -- A claimed run succeeded: the job is done (fenced by run count and state).
    UPDATE scheduler_jobs ...

Parameters are named (``:job_id``), and both dialects use the same names for a query.
SQLite reads them natively, from a dict; for PostgreSQL they are numbered once per query
(:func:`positional_queries`). Lists are passed as Python lists (the SQLite store hands them
over as JSON arrays for ``json_each``, the PostgreSQL store as arrays for ``= ANY``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

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


@cache
def positional_queries(dialect: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """``dialect``'s queries with ``$n`` placeholders, for drivers that only take those:
    ``{name: (sql, names)}``, where ``$n`` takes the value of parameter ``names[n - 1]``."""
    return {name: numbered(q.sql) for name, q in load_queries(dialect).items()}
