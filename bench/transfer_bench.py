"""Export and import benchmark: a server of 10,000 announcements exported and imported.

    python bench/transfer_bench.py [--quick] [--runs N] [--announcements N] [--json PATH]

One real bot (``bot.app.Crier``: real discord.py client, SQLite scheduler) against the fake
Discord in ``tests/fakediscord``. A server is seeded with N announcements (written with
``Announcements.create_many``, the bulk path; 70% one-offs, 30% daily at 09:00 in
Europe/Paris, over 10 channels, texts with placeholders, 1 in 10 with a mention of a role);
then, per run:

- **export**: ``/export`` through the fake (the interaction, the file answer) — the wall
  time from the command to the file; and the export's own code (read, document, bytes) timed
  alone, and its peak Python memory (``tracemalloc``, in a separate pass: tracing slows it);
- **import**: the same file imported into a fresh server with the same channel and role
  names, ``/import confirm: true`` through the fake — wall time; the import's own code (read
  the file, the dry run of every row as /schedule checks it, the all-or-nothing write) timed
  alone, and its peak memory.

Peers, in the same run, for ratios: the export against the one database read of the
server's live announcements it starts with; the import against ``create_many`` of the same
checked drafts into another server (the write alone, no reading or checking).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
import tracemalloc
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

with warnings.catch_warnings():  # discord.py imports the deprecated stdlib audioop
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord

from bench._stats import summarize
from bot.announcements import Draft
from bot.app import Crier
from bot.config import Settings
from bot.db import BotDb
from bot.parsing import parse_repeat, resolve_timezone
from bot.requests.export_doc import document_bytes, export_document, read_document
from bot.requests.importing import plan_import
from bot.requests.request import Requester
from tests.fakediscord import FakeDiscord, Guild
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

CHANNELS = 10
PERMS = P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE


def make_guild(fake: FakeDiscord, name: str) -> tuple[Guild, Any, Any]:
    guild = fake.add_guild(name=name, bot_permissions=PERMS)
    admins = guild.add_role("admins", P.MANAGE_GUILD | P.MENTION_EVERYONE)
    guild.add_role("crew", mentionable=True)
    for i in range(CHANNELS):
        guild.add_channel(f"c{i:02d}")
    admin = guild.add_member(name="admin", roles=[admins])
    return guild, admin, admins


def drafts(guild: Guild, author: int, n: int, now: datetime) -> list[Draft]:
    zone = resolve_timezone("Europe/Paris")
    channels = [c for c in guild.channels.values() if c.name.startswith("c")]
    crew = next(r for r in guild.roles.values() if r.name == "crew")
    daily = parse_repeat("daily at 09:00", now + timedelta(days=1), zone)
    out = []
    for i in range(n):
        recurring = i % 10 < 3
        mention = f"role:{crew.id}" if i % 10 == 9 else None
        out.append(
            Draft(
                guild_id=guild.id,
                channel_id=channels[i % len(channels)].id,
                author_id=author,
                content=f"Announcement {i}: see you on {{weekday}} at {{time}} (#{{occurrence}})",
                mention=mention,
                allowed_mentions={
                    "everyone": False,
                    "roles": [crew.id] if mention else [],
                    "users": True,
                },
                first=now + timedelta(days=1, minutes=i % 1440),
                timezone="Europe/Paris",
                repeat=daily if recurring else None,
            )
        )
    return out


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = await call()
    return time.perf_counter() - start, result


async def peak_of(call: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    """Peak Python memory (MiB) allocated while ``call`` runs (tracemalloc)."""
    tracemalloc.start()
    try:
        result = await call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / (1024 * 1024), result


async def bench(n: int, runs: int) -> dict[str, Any]:
    results: dict[str, list[float]] = {
        k: [] for k in (
            "export_command_s", "export_code_s", "export_peer_s", "export_peak_mib",
            "import_command_s", "import_code_s", "import_peer_s", "import_peak_mib",
        )
    }  # fmt: skip
    sizes: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeDiscord() as fake:
            source, admin, _ = make_guild(fake, "Source")
            settings = Settings(
                token=fake.token,
                database_url=f"sqlite:///{Path(tmp) / 'crier.db'}",
                api_base=fake.api_base,
                gateway_url=fake.gateway_url,
                send_spacing=0.0,
                # A server of ``n`` announcements, and the one it is imported into: past the
                # default limit per server, as an operator would raise it for such a server.
                max_announcements=max(n, 1000),
            )
            crier = Crier(settings, guild_ready_timeout=0.05)
            await crier.start()
            try:
                service = crier.bot.announcements
                now = datetime.now(UTC)
                for start in range(0, n, 2000):
                    batch = drafts(source, admin.id, min(2000, n - start), now)
                    await service.create_many(batch)
                bot_source = crier.bot.get_guild(source.id)
                if bot_source is None:
                    raise RuntimeError("expected bot_source is not None")
                for run in range(runs):
                    await one_run(crier, fake, source, admin, bot_source, run, results, sizes)
            finally:
                await crier.close()
                discord.http.Route.BASE = "https://discord.com/api/v10"
    summary = {k: summarize(v).as_dict() for k, v in results.items()}
    summary["file_bytes"] = summarize(sizes).as_dict()
    med = {k: v["median"] for k, v in summary.items()}
    summary["export_code_over_peer"] = med["export_code_s"] / med["export_peer_s"]
    summary["import_code_over_peer"] = med["import_code_s"] / med["import_peer_s"]
    summary["announcements"] = n
    summary["runs"] = runs
    return summary


async def one_run(
    crier: Crier,
    fake: FakeDiscord,
    source: Guild,
    admin: Any,
    bot_source: discord.Guild,
    run: int,
    results: dict[str, list[float]],
    sizes: list[int],
) -> None:
    service = crier.bot.announcements
    general = next(iter(source.channels.values()))
    # --- export -----------------------------------------------------------------------------
    h = await fake.invoke_command(source, general, admin, "export")
    took, msg = await timed(lambda: h.final_message(timeout=600))
    results["export_command_s"].append(took)
    data = msg.attachments[0].data
    sizes.append(len(data))

    async def export_code() -> bytes:
        rows = await service.export_rows(source.id)
        return document_bytes(export_document(bot_source, rows, datetime.now(UTC)))

    took, _ = await timed(export_code)
    results["export_code_s"].append(took)

    async def read_live() -> Any:
        async with crier.sched.reader() as db:
            return await BotDb(db).live_announcements(source.id, 100_000)

    took, _ = await timed(read_live)
    results["export_peer_s"].append(took)
    peak, _ = await peak_of(export_code)
    results["export_peak_mib"].append(peak)

    # --- import (each run into fresh servers) -------------------------------------------------
    target, target_admin, _ = make_guild(fake, f"Target {run}")
    coded, coded_admin, _ = make_guild(fake, f"Target code {run}")
    peer, _, _ = make_guild(fake, f"Peer {run}")
    traced, traced_admin, _ = make_guild(fake, f"Traced {run}")
    await fake.wait_until(
        lambda: crier.bot.get_guild(traced.id) is not None, timeout=30, what="the new servers"
    )
    tchan = next(iter(target.channels.values()))
    h = await fake.invoke_command(
        target, tchan, target_admin, "import", {"file": ("export.json", data), "confirm": True}
    )
    took, msg = await timed(lambda: h.final_message(timeout=600))
    if not msg.content.startswith("📥 Imported"):
        raise RuntimeError(msg.content[:300])
    results["import_command_s"].append(took)

    async def import_code(into: Guild, by: Any) -> Any:
        guild = crier.bot.get_guild(into.id)
        if guild is None:
            raise RuntimeError("expected guild is not None")
        member = await guild.fetch_member(by.id)
        plan = await plan_import(
            service, crier.sched.clock, Requester(guild, member), read_document(data)
        )
        if plan.refused:
            raise RuntimeError(plan.refused[:3])
        await service.import_all(into.id, plan.rows, plan.new_templates, actor_id=by.id)
        return plan

    took, plan = await timed(lambda: import_code(coded, coded_admin))
    results["import_code_s"].append(took)
    peer_drafts = [Draft(**{**_fields(r.draft), "guild_id": peer.id}) for r in plan.rows]
    took, _ = await timed(lambda: service.create_many(peer_drafts))
    results["import_peer_s"].append(took)
    peak, _ = await peak_of(lambda: import_code(traced, traced_admin))
    results["import_peak_mib"].append(peak)


def _fields(d: Draft) -> dict[str, Any]:
    return {f: getattr(d, f) for f in d.__dataclass_fields__}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--announcements", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200 announcements, 1 run")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    n, runs = (200, 1) if args.quick else (args.announcements, args.runs)
    logging.basicConfig(level=logging.WARNING)
    out = asyncio.run(bench(n, runs))
    for key in (
        "export_command_s", "export_code_s", "export_peer_s", "export_peak_mib",
        "import_command_s", "import_code_s", "import_peer_s", "import_peak_mib", "file_bytes",
    ):  # fmt: skip
        s = out[key]
        print(f"{key:18} median {s['median']:.3f} (min {s['min']:.3f}, max {s['max']:.3f})")
    print(f"export code / peer (the read alone): {out['export_code_over_peer']:.2f}")
    print(f"import code / peer (create_many alone): {out['import_code_over_peer']:.2f}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
