"""Query parameters in SQL text, found by one lexer that knows PostgreSQL's quoting.

Two rewrites, for drivers that bind by position:

- :func:`translate_placeholders`: application SQL (``ctx.db.execute``) is written with
  SQLite's ``?`` / ``?NNN`` on every store; PostgreSQL wants ``$n``;
- :func:`numbered`: the scheduler's own queries name their parameters (``:next_ts``); each
  name becomes one ``$n`` (``?n`` for SQLite, which binds those faster than names), once per
  query at load time.

Nothing inside string literals (``'...'``, ``E'...'`` with backslash escapes,
``$tag$...$tag$``), quoted identifiers (``"..."``) or comments (``--`` and nested
``/* */``) is a parameter, and a ``::`` cast is not a named one.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_\u0080-\U0010ffff][A-Za-z0-9_\u0080-\U0010ffff]*)?\$")
_DIGITS = re.compile(r"\d+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _is_ident_char(c: str) -> bool:
    return c.isalnum() or c in "_$" or ord(c) >= 0x80


def _skip_quoted(sql: str, i: int, quote: str, backslashes: bool) -> int:
    """The index just past the literal or identifier that opens at ``sql[i]``."""
    n = len(sql)
    i += 1
    while i < n:
        c = sql[i]
        if backslashes and c == "\\":
            i += 2
            continue
        if c == quote:
            if i + 1 < n and sql[i + 1] == quote:  # a doubled quote stands for itself
                i += 2
                continue
            return i + 1
        i += 1
    return n


def _skip_block_comment(sql: str, i: int) -> int:
    """The index just past the ``/* ... */`` comment at ``sql[i]`` (they nest in PostgreSQL)."""
    depth = 0
    n = len(sql)
    while i < n:
        if sql.startswith("/*", i):
            depth += 1
            i += 2
        elif sql.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    return n


def _code_positions(sql: str, marks: str) -> Iterator[int]:
    """The positions of the characters in ``marks`` that are SQL code: outside literals,
    quoted identifiers and comments, in order."""
    i = 0
    n = len(sql)
    while i < n:
        c = sql[i]
        if c == "'":
            escaped = i > 0 and sql[i - 1] in "eE" and (i < 2 or not _is_ident_char(sql[i - 2]))
            i = _skip_quoted(sql, i, "'", escaped)
        elif c == '"':
            i = _skip_quoted(sql, i, '"', False)
        elif c == "-" and sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif c == "/" and sql.startswith("/*", i):
            i = _skip_block_comment(sql, i)
        elif c == "$" and (i == 0 or not _is_ident_char(sql[i - 1])):
            tag = _DOLLAR_TAG.match(sql, i)
            if tag is None:
                i += 1
            else:
                end = sql.find(tag.group(), tag.end())
                i = n if end < 0 else end + len(tag.group())
        else:
            if c in marks:
                yield i
            i += 1


@lru_cache(maxsize=512)
def translate_placeholders(sql: str) -> str:
    """Rewrite SQLite-style placeholders as PostgreSQL's ``$n``.

    ``?`` becomes ``$n``, numbered as SQLite numbers them (one more than the largest number
    used so far), and ``?NNN`` becomes ``$NNN``; ``$n`` placeholders written as such are left
    alone. ``??`` stands for a literal ``?``, for PostgreSQL operators spelled with one
    (``jsonb ?? 'key'``); SQLite has no use for it.
    """
    out: list[str] = []
    start = 0
    highest = 0
    for i in _code_positions(sql, "?"):
        if i < start:
            continue  # the second ? of a ??
        out.append(sql[start:i])
        if sql.startswith("??", i):
            out.append("?")
            start = i + 2
            continue
        digits = _DIGITS.match(sql, i + 1)
        if digits is not None:
            number = int(digits.group())
            highest = max(highest, number)
            start = digits.end()
        else:
            highest += 1
            number = highest
            start = i + 1
        out.append(f"${number}")
    out.append(sql[start:])
    return "".join(out)


def _named(sql: str) -> Iterator[tuple[int, int, str]]:
    """Each ``:name`` parameter in ``sql``: its start, its end and the name."""
    skip_to = 0
    for i in _code_positions(sql, ":"):
        if i < skip_to:
            continue
        if sql.startswith("::", i):  # a cast
            skip_to = i + 2
            continue
        if i > 0 and _is_ident_char(sql[i - 1]):
            continue  # inside a word (an array slice's bound, say), not a parameter
        name = _NAME.match(sql, i + 1)
        if name is not None:
            skip_to = name.end()
            yield i, name.end(), name.group()


def parameter_names(sql: str) -> tuple[str, ...]:
    """The ``:name`` parameters of ``sql``, each once, in order of first use."""
    return tuple(dict.fromkeys(name for _, _, name in _named(sql)))


def numbered(sql: str, marker: str = "$") -> tuple[str, tuple[str, ...]]:
    """``sql`` with each ``:name`` rewritten as ``$n`` (or ``?n``: ``marker``), one number per
    name in order of first use, and the names in number order: ``$n`` takes the value of
    ``names[n - 1]``."""
    numbers: dict[str, int] = {}
    out: list[str] = []
    start = 0
    for begin, end, name in _named(sql):
        number = numbers.setdefault(name, len(numbers) + 1)
        out.append(sql[start:begin])
        out.append(f"{marker}{number}")
        start = end
    out.append(sql[start:])
    return "".join(out), tuple(numbers)
