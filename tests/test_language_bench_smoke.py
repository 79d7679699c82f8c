"""The languages' benchmarks still run (nothing here is timed): ``bench/parse_bench.py``
reads every phrase of each language's corpus (one run), and ``bench/i18n_bench.py`` starts
the bot's code and loads every shipped catalog (one run), each in a subprocess."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bot import i18n

ROOT = Path(__file__).resolve().parent.parent


def bench(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=140
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.timeout(150)
def test_the_parse_bench_reads_every_corpus_in_every_language() -> None:
    out = bench("bench/parse_bench.py", "--runs", "1")
    for language in ("en", "fr", "de", "es"):
        found = re.search(rf"^{language}: (\d+) phrases", out, re.M)
        assert found is not None, out
        assert int(found[1]) >= 60, out  # the corpus floor, phrasings counted
    assert len(re.findall(r"p99 \d+ us", out)) == 4, out


@pytest.mark.timeout(150)
def test_the_i18n_bench_loads_every_shipped_catalog() -> None:
    out = bench("bench/i18n_bench.py", "--runs", "1")
    shipped = {locale: len(c.entries) for locale, c in i18n.catalogs().items()}
    assert set(shipped) == {"de", "es-ES", "fr", "pt-BR"}
    line = next(row for row in out.splitlines() if row.startswith("after:"))
    for locale in shipped:
        assert f"'{locale}': " in line, out
    assert re.search(r"memory bot\.i18n \+ catalogs hold\s+[1-9][\d.]* KiB", out), out
