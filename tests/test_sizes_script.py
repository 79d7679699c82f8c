"""scripts/sizes.py measures what it says: a definition's lines from its def or class line to
its last, methods named by their class, the largest first, in the tree or at a commit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "sizes.py"

BOT = '''\
class Small:
    """Three lines."""
    x = 1


@decorated
class Big:
    def method(self) -> None:
        a = 1
        b = 2

    async def other(self) -> None:
        pass
'''
SCHEDULER = """\
def outer() -> None:
    def inner() -> None:
        pass
    return None
"""


def sizes(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def tree(root: Path) -> None:
    (root / "bot").mkdir()
    (root / "scheduler").mkdir()
    (root / "bot" / "a.py").write_text(BOT)
    (root / "scheduler" / "b.py").write_text(SCHEDULER)


def test_the_largest_of_each_kind_by_package_with_their_lines(tmp_path: Path) -> None:
    tree(tmp_path)
    out = sizes("--root", str(tmp_path), "--top", "2").splitlines()
    assert out == [
        "bot/: the 2 largest classes",
        "      7  Big  (bot/a.py)",
        "      3  Small  (bot/a.py)",
        "bot/: the 2 largest functions",
        "      3  Big.method  (bot/a.py)",
        "      2  Big.other  (bot/a.py)",
        "scheduler/: the 2 largest classes",
        "scheduler/: the 2 largest functions",
        "      4  outer  (scheduler/b.py)",
        "      2  outer.inner  (scheduler/b.py)",
    ]


def test_a_commit_is_read_from_git_not_from_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree(tmp_path)
    for env in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(env, raising=False)

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    (tmp_path / "scheduler" / "b.py").write_text("def outer() -> None:\n    pass\n")
    at_commit = sizes("--root", str(tmp_path), "--rev", "HEAD", "--top", "1")
    assert at_commit.splitlines()[0] == "== HEAD"
    assert "      4  outer  (scheduler/b.py)" in at_commit
    assert "      2  outer  (scheduler/b.py)" in sizes("--root", str(tmp_path), "--top", "1")
