"""``python -m scheduler``, run as operators run it: a subprocess on a database file."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from scheduler import JobState, Registry, Retry, Scheduler, SqliteStore

if TYPE_CHECKING:
    from pathlib import Path

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",  # the command needs nothing from the working directory
    )


@pytest.fixture
async def db(tmp_path: Path) -> Path:
    reg = Registry()

    @reg.mutation("work")
    async def work(ctx: Any, args: Any) -> None:
        if args == "fail":
            raise ValueError("it broke")

    path = tmp_path / "ops.db"
    async with Scheduler(SqliteStore(path), reg) as sched:
        await sched.enqueue("work", "fail", retry=Retry(max_failures=1))
        await sched.run_after(timedelta(hours=1), "work", {"later": True})
        await sched.schedules.create("nightly", "0 3 * * *", "work", tz="Europe/London")
        await sched.wait_idle()
    return path


async def test_jobs_ls_shows_a_readable_table_and_json(db: Path) -> None:
    out = cli(db, "jobs", "ls")
    assert out.returncode == 0, out.stderr
    header, _rule, *rows = out.stdout.splitlines()
    assert header.split()[:4] == ["ID", "STATE", "FN", "KIND"]
    assert any("failed" in r and "ValueError: it broke" in r for r in rows)
    assert any("pending" in r and "(in 60m)" in r for r in rows)
    data = json.loads(cli(db, "jobs", "ls", "--json").stdout)
    assert {j["state"] for j in data} == {"failed", "pending"}
    failed = json.loads(cli(db, "jobs", "ls", "--state", "failed", "--json").stdout)
    assert [j["id"] for j in failed] == [1]


async def test_jobs_show_retry_and_cancel(db: Path) -> None:
    shown = json.loads(cli(db, "jobs", "show", "1", "--json").stdout)
    assert (shown["state"], shown["error"], shown["args"]) == (
        "failed",
        "ValueError: it broke",
        "fail",
    )
    assert cli(db, "jobs", "retry", "1").returncode == 0
    assert json.loads(cli(db, "jobs", "show", "1", "--json").stdout)["state"] == "pending"
    again = cli(db, "jobs", "retry", "1")
    assert again.returncode == 1
    assert "only failed or canceled" in again.stderr
    assert "canceled" in cli(db, "jobs", "cancel", "2").stdout
    async with Scheduler(SqliteStore(db), Registry()) as sched:
        job = await sched.get_job(2)
        assert job is not None
        assert job.state is JobState.CANCELED


async def test_unknown_ids_and_names_exit_non_zero_with_a_message(db: Path) -> None:
    missing = cli(db, "jobs", "show", "999")
    assert missing.returncode == 1
    assert "no job with id 999" in missing.stderr
    ghost = cli(db, "schedules", "pause", "ghost")
    assert ghost.returncode == 1
    assert "no schedule named 'ghost'" in ghost.stderr
    assert "Traceback" not in ghost.stderr
    bad_time = cli(db, "schedules", "backfill", "nightly", "yesterday", "today")
    assert bad_time.returncode == 1
    assert "ISO 8601" in bad_time.stderr


async def test_schedules_operations(db: Path) -> None:
    listed = json.loads(cli(db, "schedules", "ls", "--json").stdout)
    assert [(s["name"], s["trigger"], s["paused"]) for s in listed] == [
        ("nightly", "cron '0 3 * * *' (Europe/London)", False)
    ]
    assert "paused" in cli(db, "schedules", "pause", "nightly").stdout
    assert json.loads(cli(db, "schedules", "ls", "--json").stdout)[0]["paused"] is True
    assert "resumed" in cli(db, "schedules", "resume", "nightly").stdout
    assert "job" in cli(db, "schedules", "trigger", "nightly").stdout
    filled = cli(
        db, "schedules", "backfill", "nightly", "2026-11-01T00:00+00:00", "2026-11-03T00:00+00:00"
    )
    assert "2 job(s) enqueued" in filled.stdout, filled.stderr
    again = cli(
        db, "schedules", "backfill", "nightly", "2026-11-01T00:00+00:00", "2026-11-03T00:00+00:00"
    )
    assert "0 job(s) enqueued" in again.stdout
    gone = cli(db, "schedules", "delete", "nightly")
    assert "deleted; 3 pending occurrence(s) canceled" in gone.stdout
    assert "no schedules" in cli(db, "schedules", "ls").stdout


def test_a_file_that_is_not_a_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello, not a database\n")
    out = cli(path, "jobs", "ls")
    assert out.returncode == 1
    assert "not a SQLite database" in out.stderr
    assert "Traceback" not in out.stderr
    assert path.read_text() == "hello, not a database\n"


async def test_runs_ls_shows_every_attempt_as_a_table_and_json(tmp_path: Path) -> None:
    reg = Registry()

    @reg.mutation("work")
    async def work(ctx: Any, args: Any) -> None:
        if args == "fail":
            raise ValueError("it broke")

    @reg.mutation("other")
    async def other(ctx: Any, args: Any) -> None:
        return None

    path = tmp_path / "runs.db"
    async with Scheduler(SqliteStore(path), reg, process_id="worker-1") as sched:
        failed = await sched.enqueue("work", "fail", retry=Retry(max_failures=1))
        done = await sched.enqueue("work", "fine")
        await sched.enqueue("other")
        await sched.wait_idle()

    out = cli(path, "runs", "ls")
    assert out.returncode == 0, out.stderr
    header, _rule, *rows = out.stdout.splitlines()
    assert header.split() == [
        "RUN", "JOB", "FN", "TRY", "OUTCOME", "DUE", "LATE", "TOOK", "PROCESS", "ERROR"
    ]  # fmt: skip
    assert len(rows) == 3
    assert any(
        r.split()[:5] == ["1", str(failed), "work", "1", "failed"]
        and "worker-1" in r
        and "ValueError: it broke" in r
        for r in rows
    )

    data = json.loads(cli(path, "runs", "ls", "--fn", "work", "--json").stdout)
    assert [(r["job_id"], r["outcome"]) for r in data] == [(done, "success"), (failed, "failed")]
    first = data[1]
    assert first["attempt"] == 0
    assert first["process"] == "worker-1"
    assert first["error"] == "ValueError: it broke"
    assert first["lateness"] == pytest.approx(first["started_at"] - first["due_ts"])
    assert {"due_ts", "started_at", "finished_at", "run_count", "duration"} <= set(first)

    only = json.loads(cli(path, "runs", "ls", "--job", str(done), "--json").stdout)
    assert [r["job_id"] for r in only] == [done]
    assert len(json.loads(cli(path, "runs", "ls", "--since", "1h", "--json").stdout)) == 3
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert cli(path, "runs", "ls", "--since", later).stdout.strip() == "no runs"
    assert len(json.loads(cli(path, "runs", "ls", "--limit", "1", "--json").stdout)) == 1
    bad = cli(path, "runs", "ls", "--since", "yesterday")
    assert bad.returncode == 1
    assert "cannot read time" in bad.stderr
