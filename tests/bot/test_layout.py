"""The bot's layering that no import rule can check: SQL text lives in bot/db.py only."""

from __future__ import annotations

import re
from pathlib import Path

BOT = Path(__file__).resolve().parents[2] / "bot"
SQL = re.compile(r"\b(SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+bot_|DELETE\s+FROM)\b")


def test_every_bot_sql_statement_is_in_the_data_layer() -> None:
    offenders = [
        f"{path.relative_to(BOT.parent)}:{number}"
        for path in sorted(BOT.rglob("*.py"))
        if path.name != "db.py" or path.parent != BOT
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if SQL.search(line)
    ]
    assert offenders == []
    assert SQL.search((BOT / "db.py").read_text("utf-8"))  # the pattern does find SQL
