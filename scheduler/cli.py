"""``python -m scheduler --db PATH jobs|schedules|runs ...``: the operator's view of a store.

Works on the database alone (no application code is imported): jobs and schedules can be
listed, shown, canceled, retried, paused, resumed, triggered, backfilled and deleted, and
the run history read (``runs ls``: did it run, when, how late, and why not). Output
is a readable table, or JSON with ``--json`` for scripts. A running scheduler on another
process sees the change at its next wake-up (at once on PostgreSQL; on SQLite within its
sweep interval, 30 s by default, or sooner if it wakes for its own work).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ._codec import ts_to_datetime
from ._ops.schedules import describe_row
from .errors import SchedulerError
from .models import Job, JobState, Run
from .stores.sqlite import SqliteStore

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .abc import Store


def open_store(db: str) -> Store:
    """A store for ``db``: a PostgreSQL URL, ``sqlite:///PATH``, or a plain file path."""
    if db.startswith(("postgresql://", "postgres://")):
        from .stores.postgres import PostgresStore

        return PostgresStore(db)
    if db.startswith("sqlite:///"):
        db = db[len("sqlite:///") :]
    return SqliteStore(db)


_HELD = "after the previous run"
"""What a held occurrence waits for (it has no due time until that run ends)."""


def _due(job: Job, now: float) -> str:
    """The DUE column: when a pending job runs; a held one waits for the previous run."""
    if job.state is JobState.HELD:
        return _HELD
    return _when(job.next_ts, now) if job.state is JobState.PENDING else ""


def _when(ts: float | None, now: float) -> str:
    if ts is None:
        return "-"
    stamp = ts_to_datetime(ts).strftime("%Y-%m-%d %H:%M:%S UTC")
    delta = ts - now
    ago = abs(delta)
    unit = (
        f"{ago:.0f}s"
        if ago < 90
        else f"{ago / 60:.0f}m"
        if ago < 5400
        else f"{ago / 3600:.1f}h"
        if ago < 172800
        else f"{ago / 86400:.1f}d"
    )
    return f"{stamp} ({'in ' + unit if delta > 0 else unit + ' ago'})"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line.rstrip(), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(out)


def _job_json(job: Job) -> dict[str, Any]:
    data = {f: getattr(job, f) for f in job.__dataclass_fields__}
    data["kind"] = job.kind.value
    data["state"] = job.state.value
    if isinstance(data.get("context"), bytes):
        data["context"] = {"bytes_hex": data["context"].hex()}
    return data


def _short(text: str | None, width: int = 60) -> str:
    if not text:
        return ""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


async def _jobs(args: argparse.Namespace, store: Store, now: float) -> int:
    if args.action == "ls":
        return await _list_jobs(args, store, now)
    ops = store.at(now)
    job = await ops.get_job(args.id)
    if job is None:
        print(f"no job with id {args.id}", file=sys.stderr)
        return 1
    if args.action == "show":
        return _show_job(args, job, now)
    if args.action == "cancel":
        canceled = await ops.cancel(args.id)
        print(
            f"job {args.id} canceled"
            if canceled
            else f"job {args.id} was {job.state.value}; pending descendants canceled"
        )
        return 0
    retried = await ops.retry(args.id)
    if not retried:
        print(
            f"job {args.id} is {job.state.value}; only failed or canceled jobs can be retried",
            file=sys.stderr,
        )
        return 1
    print(f"job {args.id} is pending again")
    return 0


async def _list_jobs(args: argparse.Namespace, store: Store, now: float) -> int:
    state = JobState(args.state) if args.state else None
    jobs = await store.at(now).list_jobs(
        state=state, fn=args.fn, before_id=args.before, limit=args.limit
    )
    if args.json:
        print(json.dumps([_job_json(j) for j in jobs], default=str, indent=2))
    elif not jobs:
        print("no jobs")
    else:
        rows = [
            [
                str(j.id),
                j.state.value,
                j.fn,
                j.kind.value,
                f"{j.attempts}/{j.max_failures}",
                _due(j, now),
                j.schedule_name or j.name or "",
                _short(j.error, 40),
            ]
            for j in jobs
        ]
        print(_table(["ID", "STATE", "FN", "KIND", "FAILS", "DUE", "NAME", "ERROR"], rows))
    return 0


def _show_job(args: argparse.Namespace, job: Job, now: float) -> int:
    if args.json:
        print(json.dumps(_job_json(job), default=str, indent=2))
        return 0
    fields = _job_json(job)
    for key in ("next_ts", "lease_expires_at", "created_at", "updated_at", "finished_at"):
        fields[key] = _when(fields[key], now)
    if job.state is JobState.HELD:
        fields["next_ts"] = f"{_HELD}, not before {fields['next_ts']}"
    width = max(len(k) for k in fields)
    for key, value in fields.items():
        shown = value if isinstance(value, str) else json.dumps(value, default=str)
        print(f"{key.ljust(width)}  {shown}")
    return 0


async def _schedules(args: argparse.Namespace, store: Store, now: float) -> int:
    # No application code here: the store's resolver knows no function, so every occurrence
    # runs the target stored with its schedule.
    if args.action == "ls":
        return await _list_schedules(args, store, now)
    ops = store.at(now)
    name = args.name
    if args.action == "pause":
        done = await ops.pause_schedule(name)
        print(f"schedule {name!r} paused" if done else f"schedule {name!r} was already paused")
    elif args.action == "resume":
        done = await ops.resume_schedule(name)
        print(f"schedule {name!r} resumed" if done else f"schedule {name!r} was not paused")
    elif args.action == "trigger":
        job_id = await ops.trigger_schedule(name)
        print(f"schedule {name!r} triggered: job {job_id}")
    elif args.action == "backfill":
        start, end = _parse_time(args.start), _parse_time(args.end)
        ids = await ops.backfill_schedule(name, start, end)
        print(
            f"schedule {name!r}: {len(ids)} job(s) enqueued"
            + (f" ({ids[0]}..{ids[-1]})" if ids else "")
        )
    else:
        n = await ops.delete_schedule(name)
        print(f"schedule {name!r} deleted; {n} pending occurrence(s) canceled")
    return 0


async def _list_schedules(args: argparse.Namespace, store: Store, now: float) -> int:
    rows = await store.at(now).list_schedules()
    trigger = store.resolver.trigger
    if args.json:
        views = [describe_row(r, trigger(r.trigger_spec)) for r in rows]
        print(json.dumps(views, indent=2))
    elif not rows:
        print("no schedules")
    else:
        table = [
            [
                r.name,
                r.source,
                trigger(r.trigger_spec).describe(),
                r.target.fn,
                "paused" if r.paused else "active",
                _when(r.next_fire_ts, now),
                str(r.skipped),
                str(r.missed),
                _short(r.last_error, 30),
            ]
            for r in rows
        ]
        headers = ["NAME", "SOURCE", "WHEN", "FN", "STATE", "NEXT", "SKIPPED", "MISSED", "ERROR"]
        print(_table(headers, table))
    return 0


async def _runs(args: argparse.Namespace, store: Store, now: float) -> int:
    since = None if args.since is None else _parse_since(args.since, now)
    runs = await store.at(now).runs(job_id=args.job, fn=args.fn, since=since, limit=args.limit)
    if args.json:
        print(json.dumps([_run_json(r) for r in runs], indent=2))
    elif not runs:
        print("no runs")
    else:
        rows = [
            [
                str(r.id),
                str(r.job_id),
                r.fn,
                str(r.attempt + 1),
                r.outcome.value,
                _when(r.due_ts, now),
                _seconds(r.lateness),
                _seconds(r.duration),
                r.process or "-",
                _short(r.error, 40),
            ]
            for r in runs
        ]
        headers = ["RUN", "JOB", "FN", "TRY", "OUTCOME", "DUE", "LATE", "TOOK", "PROCESS", "ERROR"]
        print(_table(headers, rows))
    return 0


def _run_json(run: Run) -> dict[str, Any]:
    data = {f: getattr(run, f) for f in run.__dataclass_fields__}
    data["outcome"] = run.outcome.value
    data["lateness"] = run.lateness
    data["duration"] = run.duration
    return data


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.0f}ms" if value < 1 else f"{value:.1f}s"


_AGO = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _parse_since(text: str, now: float) -> float:
    """A time as :func:`_parse_time` reads it, or a span before now (``90s``, ``15m``,
    ``2h``, ``7d``)."""
    ago = _AGO.fullmatch(text.strip())
    if ago is not None:
        return now - float(ago.group(1)) * _UNIT[ago.group(2)]
    return _parse_time(text)


def _parse_time(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise SchedulerError(
            f"cannot read time {text!r}: use ISO 8601 with an offset (2026-11-01T09:00+00:00) "
            "or epoch seconds"
        ) from None
    if dt.tzinfo is None:
        raise SchedulerError(f"time {text!r} has no UTC offset; add one, e.g. {text}+00:00")
    return dt.timestamp()


def _json_flag() -> argparse.ArgumentParser:
    flag = argparse.ArgumentParser(add_help=False)
    flag.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="JSON output")
    return flag


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m scheduler", description="Inspect and operate a scheduler store."
    )
    parser.add_argument(
        "--db", required=True, help="SQLite file path, sqlite:///PATH or postgresql://…"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    groups = parser.add_subparsers(dest="group", required=True)

    jobs = groups.add_parser("jobs", help="list, show, cancel and retry jobs")
    jsub = jobs.add_subparsers(dest="action", required=True)
    ls = jsub.add_parser("ls", help="list jobs, newest first", parents=[_json_flag()])
    ls.add_argument("--state", choices=[s.value for s in JobState])
    ls.add_argument("--fn", help="only jobs of this function")
    ls.add_argument("--limit", type=int, default=50)
    ls.add_argument("--before", type=int, help="page: only jobs with a smaller id")
    for action, text in (
        ("show", "one job with its payloads"),
        ("cancel", "cancel a pending job and its pending descendants"),
        ("retry", "put a failed or canceled job back to pending"),
    ):
        p = jsub.add_parser(action, help=text, parents=[_json_flag()])
        p.add_argument("id", type=int)

    scheds = groups.add_parser("schedules", help="list and operate recurring schedules")
    ssub = scheds.add_subparsers(dest="action", required=True)
    ssub.add_parser("ls", help="list schedules", parents=[_json_flag()])
    for action, text in (
        ("pause", "stop firing"),
        ("resume", "fire again from the next time (paused time is not replayed)"),
        ("trigger", "run once now"),
        ("delete", "delete, canceling pending occurrences"),
    ):
        p = ssub.add_parser(action, help=text)
        p.add_argument("name")
    bf = ssub.add_parser("backfill", help="run the fire times in [START, END] that never ran")
    bf.add_argument("name")
    bf.add_argument("start", help="ISO 8601 with offset, or epoch seconds")
    bf.add_argument("end")

    runs = groups.add_parser("runs", help="the run history: every attempt of every job")
    rsub = runs.add_subparsers(dest="action", required=True)
    rls = rsub.add_parser("ls", help="list runs, newest first", parents=[_json_flag()])
    rls.add_argument("--fn", help="only runs of this function")
    rls.add_argument("--job", type=int, help="only runs of this job")
    rls.add_argument(
        "--since",
        help="only runs finished since: ISO 8601 with offset, epoch seconds, or a span "
        "before now (90s, 15m, 2h, 7d)",
    )
    rls.add_argument("--limit", type=int, default=100)
    return parser


async def amain(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    store = open_store(args.db)
    try:
        await store.open()
        now = time.time()
        if args.group == "jobs":
            return await _jobs(args, store, now)
        if args.group == "runs":
            return await _runs(args, store, now)
        return await _schedules(args, store, now)
    finally:
        await store.close()


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return asyncio.run(amain(argv))
    except SchedulerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
