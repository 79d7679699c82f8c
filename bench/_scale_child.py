"""One start-up of the bot's store side, in a fresh process, for ``bench/scale_bench.py``:

    python -m bench._scale_child DB

Imports the bot, then opens the database as the bot does (``Crier``: the checks at open,
the migrations, the scheduler's start with its first dispatch pass and sweep), waits until
the driver is idle, and stops it (a clean close). Prints one JSON line: the seconds the
imports took, the seconds from building ``Crier`` to idle (the start-up without the
gateway), and the process's peak resident memory in MiB.
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import asyncio  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

with warnings.catch_warnings():  # discord.py imports the deprecated stdlib audioop
    warnings.simplefilter("ignore", DeprecationWarning)
    from bench._scale_seed import settings
    from bot.app import Crier

IMPORTED = time.perf_counter()


async def start(db: Path) -> float:
    t0 = time.perf_counter()
    crier = Crier(settings(db))
    await crier.sched.start()
    await crier.sched.wait_idle()
    ready = time.perf_counter() - t0
    await crier.sched.stop()
    return ready


def main() -> int:
    ready = asyncio.run(start(Path(sys.argv[1])))
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {"import_s": IMPORTED - STARTED, "ready_s": ready, "peak_rss_mib": peak_kib / 1024}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
