"""The bot's layering that no import rule can check: SQL text lives under bot/db/ only."""

from __future__ import annotations

import re
from pathlib import Path

BOT = Path(__file__).resolve().parents[2] / "bot"
DATA_LAYER = BOT / "db"
SQL = re.compile(r"\b(SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+bot_|DELETE\s+FROM)\b")


def test_every_bot_sql_statement_is_in_the_data_layer() -> None:
    offenders = [
        f"{path.relative_to(BOT.parent)}:{number}"
        for path in sorted(BOT.rglob("*.py"))
        if DATA_LAYER not in path.parents
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if SQL.search(line)
    ]
    assert offenders == []
    # the pattern does find SQL, in every module of the data layer but its shared base
    for path in sorted(DATA_LAYER.glob("*.py")):
        if path.name not in ("__init__.py", "table.py"):
            assert SQL.search(path.read_text("utf-8")), path.name
