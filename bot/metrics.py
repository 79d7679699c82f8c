"""The bot's own counters, kept as it works, and their Prometheus names.

:class:`BotStats` is plain integers (no dependency; always kept). ``bot.web`` exposes them
on ``GET /metrics`` with the scheduler's (``scheduler.metrics``) when ``HTTP_ADDRESS`` is set.
Every counter counts what this process did since it started; across several bot processes
on one database, add them up.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import aiohttp

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import SimpleNamespace


@dataclass(slots=True)
class BotStats:
    """What this bot process has done since it started. Each field is one counter, exposed
    as ``crier_<field>_total`` with the help text in :data:`HELP`."""

    deliveries_sent: int = 0
    """Occurrences posted (and recorded sent)."""
    deliveries_late: int = 0
    """Occurrences posted late (found after downtime, with the "sent late" note)."""
    deliveries_failed: int = 0
    """Occurrences that failed for good (a permanent error, missed, given up): reported."""
    deliveries_resent: int = 0
    """Occurrences posted after more than one send (an earlier one failed or was cut off),
    each with the same nonce, so Discord keeps one message."""
    nonce_resends: int = 0
    """Send requests that re-used an occurrence's nonce (every send after its first)."""
    rate_limited: int = 0
    """HTTP 429 responses from Discord (discord.py waits them out and retries)."""
    edits: int = 0
    """Posted messages brought up to date after their announcement was edited."""
    edits_failed: int = 0
    """Posted messages that could not be brought up to date (deleted, no access...)."""
    publishes: int = 0
    """Messages published (crossposted) from announcement channels, late ones included
    (``bot.posting.publishing`` counts each publish as it ends)."""
    publishes_failed: int = 0
    """Publishes that ended "not published"."""
    interactions_lost: int = 0
    """Interactions another session of the bot handled (Discord sends every session of a
    shard each interaction): this one wrote nothing and stayed silent."""
    reminders_sent: int = 0
    """Reminders sent by direct message (one per occurrence and member who asked)."""

    def trace_config(self) -> aiohttp.TraceConfig:
        """An aiohttp trace (for discord.py's ``http_trace``) that counts every 429 response
        discord.py receives, before it sleeps and retries."""
        trace = aiohttp.TraceConfig()

        async def on_request_end(
            session: aiohttp.ClientSession,
            context: SimpleNamespace,
            params: aiohttp.TraceRequestEndParams,
        ) -> None:
            if params.response.status == 429:
                self.rate_limited += 1

        trace.on_request_end.append(on_request_end)
        return trace

    def counters(self) -> Iterator[tuple[str, str, int]]:
        """``(metric name, help, value)`` for each counter."""
        for f in fields(self):
            yield f"crier_{f.name}", HELP[f.name], getattr(self, f.name)


HELP: dict[str, str] = {
    "deliveries_sent": "Occurrences posted (and recorded sent).",
    "deliveries_late": "Occurrences posted late (found after downtime, with the note).",
    "deliveries_failed": "Occurrences that failed for good (permanent error, missed, given up).",
    "deliveries_resent": "Occurrences posted after more than one send, with the same nonce.",
    "nonce_resends": "Send requests that re-used an occurrence's nonce.",
    "rate_limited": "HTTP 429 responses from Discord (discord.py waits them out).",
    "edits": "Posted messages brought up to date after an edit of their announcement.",
    "edits_failed": "Posted messages that could not be brought up to date.",
    "publishes": "Messages published (crossposted) from announcement channels.",
    "publishes_failed": "Publishes that ended not published (a refusal, or the limit).",
    "interactions_lost": "Interactions another session handled (this one stayed silent).",
    "reminders_sent": "Reminders sent by direct message (one per occurrence and member).",
}
"""Each counter's help text on ``/metrics`` (one per :class:`BotStats` field)."""
