"""Take-over benchmark: how long a crashed bot stays deaf, and what a cold start costs (issue 33).

    python bench/takeover_bench.py [--quick] [--runs N] [--stores sqlite,postgres]
                                   [--before PATH] [--dsn DSN] [--json PATH]

Real ``python -m bot`` processes against the fake Discord (``tests/fakediscord``: the
fake's IDENTIFY window is 1 s, and the bot's ``IDENTIFY_INTERVAL_SECONDS`` alike, so runs take
seconds, not minutes; ``max_concurrency`` 1), with the deployment's leases
(``SHARD_LEASE_SECONDS`` and the job lease 30 s), on a SQLite file or a fresh PostgreSQL
database (on the server of ``--dsn``, default ``CRIER_TEST_POSTGRES_DSN``). Each scenario
runs the bot of this tree ("after") and, with ``--before PATH``, the bot of another checkout
("before": a worktree of main before the change), alternately in the same run. Measured:

- **restart**: one instance, one shard, answering; SIGKILL; a new instance spawned at once:
  from the kill to a ``/list`` answered in a fresh gateway session. Its peer, in the same
  run and tree: a **cold start** of one instance on a fresh database (spawn to the first
  answer), what a restart costs when there is nothing to take over.
- **take-over**: three instances on 8 shards (3, 3 and 2); the one holding 3 is SIGKILLed:
  from the kill until a ``/list`` is answered in a guild of each of its shards.
- **cold start of three**: three instances spawned at once on 8 shards: the IDENTIFYs the
  fake accepted once every shard is served by one session, the shares are even and no
  hand-over is under way (8 is the least).
- **the join window's cost** (after only): a lone instance, spawn to first answer, with the
  default ``SHARD_JOIN_WINDOW_SECONDS`` (1) against 0, in the same run.

``--quick`` is the smoke run of ``tests/test_takeover_bench_smoke.py``: one run, SQLite only,
no before, the smoke's timings (an IDENTIFY window of 0.2 s and leases of 3 s, so that a start
of three settles in about 2 s, not 20), and the IDENTIFYs of three started at once counted in
the take-over's start of three rather than in a start of their own, the lone start with the
join window of 1 s taken from the restart's cold start (the same start): 6 bot processes, not 10.
Every figure, not the deployment's timings: the figures of docs/benchmarks.md come from a run
without it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

with warnings.catch_warnings():  # discord.py imports the deprecated stdlib audioop
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord  # noqa: F401  (imported once here, warnings silenced)

from bench._stats import log, out, ratio, summarize, to_jsonable
from bench.scheduler_bench import git_state, load_average
from tests.bot.test_shards import sharded_world
from tests.fakediscord import FakeDiscord
from tests.support.instances import Instances, Layout
from tests.support.processes import procs

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from tests.bot.conftest import World

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"
SHARDS = 8
DEADLINE = 180.0


@dataclass
class Timings:
    window: float = 1.0
    """The fake's IDENTIFY window, and the bot's IDENTIFY_INTERVAL_SECONDS."""
    lease: float = 30.0
    """SHARD_LEASE_SECONDS, the job lease and the sweep: the deployment's defaults."""


TIMINGS = Timings()
"""This run's (``--quick`` replaces it with ``QUICK``)."""
QUICK = Timings(window=0.2, lease=3.0)


class Tree(Instances):
    """Instances running the bot of ``tree`` (a checkout: this one, or the "before")."""

    def __init__(self, tree: Path, *args: Any) -> None:
        super().__init__(*args)
        self.tree = tree

    def env(self, name: str) -> dict[str, str]:
        return super().env(name) | {"PYTHONPATH": str(self.tree)}


@contextlib.asynccontextmanager
async def database(store: str, dsn: str, tmp: Path) -> AsyncIterator[str]:
    if store == "sqlite":
        yield f"sqlite:///{tmp / 'crier.db'}"
        return
    from bench._pg import fresh_database

    async with fresh_database(dsn) as url:
        yield url


def layout(**extra: str) -> Layout:
    return Layout(
        count=SHARDS,
        shard_lease=TIMINGS.lease,
        identify_interval=TIMINGS.window,
        job_lease=TIMINGS.lease,
        sweep=TIMINGS.lease,
        extra={"LOG_LEVEL": "WARNING", **extra},
    )


async def until(pred: Callable[[], Awaitable[bool] | bool], what: str, cluster: Instances) -> None:
    deadline = time.monotonic() + DEADLINE
    while True:
        got = pred()
        if not isinstance(got, bool):
            got = await got
        if got:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}:\n{cluster.logs()}")
        await asyncio.sleep(0.02)


async def answered(
    fake: FakeDiscord, world: World, count: int = SHARDS, *, not_in: frozenset[int] = frozenset()
) -> float:
    """Send ``/list`` in ``world``'s guild (on a shard of ``count``) once a session of its
    shard other than those of ``not_in`` (ids of the fake's session objects) is connected,
    until one is answered (an interaction sent to a dead session is never answered: another
    is sent after Discord's 3 s); when, on the monotonic clock."""
    deadline = time.monotonic() + DEADLINE
    shard = (world.guild.id >> 22) % count
    while time.monotonic() < deadline:
        if not any(
            s.shard == (shard, count) and id(s) not in not_in
            for s in fake.gateway.connected_sessions
        ):
            await asyncio.sleep(0.02)
            continue
        h = await fake.invoke_command(world.guild, world.general, world.admin, "list", {})
        try:
            return (await h.response(timeout=3.0)).at
        except TimeoutError:
            continue
    raise SystemExit(f"no answer in guild {world.guild.id} within {DEADLINE}s")


def fake_discord() -> FakeDiscord:
    return FakeDiscord(ratelimits=False, identify_window=TIMINGS.window, max_concurrency=1)


def worlds_of(fake: FakeDiscord) -> list[World]:
    return [sharded_world(fake, k, SHARDS) for k in range(SHARDS)]


# --- the scenarios ------------------------------------------------------------------------------


async def restart(tree: Path, store: str, dsn: str) -> dict[str, float]:
    """One instance, one shard, SIGKILLed and spawned again at once."""
    with tempfile.TemporaryDirectory() as tmp:
        async with database(store, dsn, Path(tmp)) as url, fake_discord() as fake, procs() as ps:
            world = sharded_world(fake, 0, 1)
            lay = layout()
            lay.count = 1
            cluster = Tree(tree, fake, url, Path(tmp), ps, lay)
            spawned = time.monotonic()
            first = await cluster.start("first")
            cold = await answered(fake, world, 1) - spawned
            old = frozenset(id(s) for s in fake.gateway.connected_sessions)
            first.kill()
            killed = time.monotonic()
            await first.proc.wait()
            await cluster.start("second")
            back = await answered(fake, world, 1, not_in=old)
            return {"kill_to_answered": back - killed, "cold_start_to_answered": cold}


async def one_of_three(tree: Path, store: str, dsn: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Three instances, 8 shards; the one holding 3 is SIGKILLed. Also what
    :func:`cold_start_of_three` counts, on the way: the same three started at once."""
    with tempfile.TemporaryDirectory() as tmp:
        async with database(store, dsn, Path(tmp)) as url, fake_discord() as fake, procs() as ps:
            worlds = worlds_of(fake)
            cluster = Tree(tree, fake, url, Path(tmp), ps, layout())
            for name in ("a", "b", "c"):
                await cluster.start(name)
            await settled(cluster, [3, 3, 2])
            cold = identifies(fake)
            holders = await cluster.holders()
            victim_name = max(holders, key=lambda h: len(holders[h]))
            lost = holders[victim_name]
            victim = cluster.by_name[victim_name]
            old = frozenset(id(s) for s in fake.gateway.connected_sessions)
            victim.kill()
            killed = time.monotonic()
            await victim.proc.wait()
            back = await asyncio.gather(*(answered(fake, worlds[s], not_in=old) for s in lost))
            return {"shards_lost": lost, "kill_to_answered": max(back) - killed}, cold


async def cold_start_of_three(tree: Path, store: str, dsn: str) -> dict[str, Any]:
    """Three instances spawned at once on 8 shards: IDENTIFYs until everything settled."""
    with tempfile.TemporaryDirectory() as tmp:
        async with database(store, dsn, Path(tmp)) as url, fake_discord() as fake, procs() as ps:
            worlds_of(fake)
            cluster = Tree(tree, fake, url, Path(tmp), ps, layout())
            for name in ("a", "b", "c"):
                await cluster.start(name)
            await settled(cluster, [3, 3, 2])
            return identifies(fake)


def identifies(fake: FakeDiscord) -> dict[str, int]:
    """The IDENTIFYs the fake accepted and refused so far."""
    accepted = [x for x in fake.identify_log if x.accepted]
    return {"identifies": len(accepted), "refused": len(fake.identify_log) - len(accepted)}


async def settled(cluster: Instances, shares: list[int]) -> None:
    """Every shard served by one session, ``shares`` held, no hand-over under way (a lease
    round later: nothing moved meanwhile)."""

    async def quiet() -> bool:
        leases = await cluster.leases()
        moving = any(r.get("handed_from") or r.get("wanted_by") for r in leases)
        return not moving and cluster.every_shard_served_once() and await cluster.shares() == shares

    await until(quiet, "the shares settled", cluster)
    before = {r["lease_key"]: r["expires_at"] for r in await cluster.leases()}

    async def renewed() -> bool:
        now = {r["lease_key"]: r["expires_at"] for r in await cluster.leases()}
        return all(now[k] > before[k] for k in before)

    await until(renewed, "a lease round more", cluster)
    await until(quiet, "the shares settled", cluster)


async def lone_start(store: str, dsn: str, window: float) -> float:
    """A lone instance of this tree on one shard and a fresh database: spawn to its first
    answer."""
    with tempfile.TemporaryDirectory() as tmp:
        async with database(store, dsn, Path(tmp)) as url, fake_discord() as fake, procs() as ps:
            world = sharded_world(fake, 0, 1)
            lay = layout(SHARD_JOIN_WINDOW_SECONDS=f"{window:g}")
            lay.count = 1
            cluster = Tree(ROOT, fake, url, Path(tmp), ps, lay)
            spawned = time.monotonic()
            await cluster.start("lone")
            return await answered(fake, world, 1) - spawned


# --- the runs ---------------------------------------------------------------------------------


async def one_run(args: argparse.Namespace) -> dict[str, Any]:
    trees = {"after": ROOT} | ({"before": args.before} if args.before else {})
    got: dict[str, Any] = {}
    for store in args.stores:
        for label, tree in trees.items():
            log(f"{store}, {label}: restart after SIGKILL")
            r = await restart(tree, store, args.dsn)
            log(f"{store}, {label}: one of three SIGKILLed")
            t, c = await one_of_three(tree, store, args.dsn)
            if not args.quick:  # a start of three of its own (--quick: the one above's)
                log(f"{store}, {label}: three started at once")
                c = await cold_start_of_three(tree, store, args.dsn)
            got[f"{store}.{label}"] = {"restart": r, "takeover": t, "cold": c}
        log(f"{store}: a lone start, join window 1 s and 0 s")
        if args.quick:  # the restart's cold start was one: this tree, the default window (1 s)
            one = got[f"{store}.after"]["restart"]["cold_start_to_answered"]
        else:
            one = await lone_start(store, args.dsn, 1.0)
        got[f"{store}.window"] = {
            "window_1": one,
            "window_0": await lone_start(store, args.dsn, 0.0),
        }
    return got


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--quick",
        action="store_true",
        help="one run on SQLite, no before, short timings (a smoke run)",
    )
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--stores", default="sqlite,postgres")
    p.add_argument("--before", type=Path, default=None, help="a checkout to run as 'before'")
    p.add_argument("--dsn", default=os.environ.get("CRIER_TEST_POSTGRES_DSN") or DEFAULT_DSN)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    args.stores = [s for s in args.stores.split(",") if s]
    if args.quick:
        args.runs, args.stores, args.before = 1, ["sqlite"], None
        TIMINGS.window, TIMINGS.lease = QUICK.window, QUICK.lease
    runs = []
    for r in range(args.runs):
        log(f"run {r + 1} of {args.runs}")
        runs.append(asyncio.run(one_run(args)))

    def med(path: Callable[[dict[str, Any]], float]) -> Any:
        return summarize(path(r) for r in runs)

    summary: dict[str, Any] = {}
    out(
        f"\ntakeover bench: {SHARDS} shards, leases {TIMINGS.lease:g} s, "
        f"IDENTIFY window {TIMINGS.window:g} s, "
        f"{args.runs} run(s), load {load_average()}"
    )
    labels = ["before", "after"] if args.before else ["after"]
    for store in args.stores:
        out(f"  {store}")
        for label in labels:
            k = f"{store}.{label}"
            s = {
                "restart": med(lambda r, k=k: r[k]["restart"]["kill_to_answered"]),
                "cold_start": med(lambda r, k=k: r[k]["restart"]["cold_start_to_answered"]),
                "takeover": med(lambda r, k=k: r[k]["takeover"]["kill_to_answered"]),
                "identifies": med(lambda r, k=k: r[k]["cold"]["identifies"]),
                "refused": med(lambda r, k=k: r[k]["cold"]["refused"]),
            }
            summary[k] = s
            out(f"    {label:6} SIGKILL -> restarted and answering   {s['restart'].show('s', 2)}")
            out(f"    {label:6}   (a lone cold start -> answering)  {s['cold_start'].show('s', 2)}")
            out(f"    {label:6} SIGKILL of 1 of 3 -> its 3 shards   {s['takeover'].show('s', 2)}")
            out(f"    {label:6} IDENTIFYs, 3 started at once, 8    {s['identifies'].show('', 0)}")
        if args.before:
            b, a = summary[f"{store}.before"], summary[f"{store}.after"]
            out(
                f"    after/before: restart {ratio(a['restart'].median, b['restart'].median):.3f}, "
                f"take-over {ratio(a['takeover'].median, b['takeover'].median):.3f}"
            )
        w1 = med(lambda r, s=store: r[f"{s}.window"]["window_1"])
        w0 = med(lambda r, s=store: r[f"{s}.window"]["window_0"])
        summary[f"{store}.window"] = {"window_1": w1, "window_0": w0}
        out(f"    lone start -> answering, join window 1 s  {w1.show('s', 2)}")
        out(f"    lone start -> answering, join window 0 s  {w0.show('s', 2)}")
        out(f"    window 1 s / 0 s: {ratio(w1.median, w0.median):.2f}")
    if args.json is not None:
        doc = {
            "bench": "takeover",
            "git": git_state(),
            "load": load_average(),
            "before": str(args.before) if args.before else None,
            "identify_window_s": TIMINGS.window,
            "lease_s": TIMINGS.lease,
            "summary": to_jsonable(summary),
            "runs": runs,
        }
        args.json.write_text(json.dumps(doc, indent=2, default=str) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
