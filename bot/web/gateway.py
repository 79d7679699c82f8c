"""What the web layer knows of the gateway: the shards this process runs, and their state.

The process (``bot.app``) implements :class:`GatewayStatus`; ``/healthz``, ``/metrics`` and
the dashboard's operator view read it, and never the Discord clients themselves (the web
layer may not import the app).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["GatewayStatus", "ShardState"]


@dataclass(frozen=True, slots=True)
class ShardState:
    """One shard of the bot's ``count``, as this process sees it."""

    shard_id: int
    count: int
    held: bool
    """This process runs the shard (its lease, or pinned by ``SHARD_IDS``)."""
    ready: bool
    """Its gateway session is connected and has received its guilds."""
    guilds: int
    """The servers its session holds (0 when it is not held here)."""
    latency: float | None
    """Between its last heartbeat and the acknowledgement (None: not connected)."""

    @property
    def name(self) -> str:
        return f"shard {self.shard_id} of {self.count}"


class GatewayStatus(Protocol):
    """The gateway shards of this process (implemented by ``bot.app.shards.Shards``)."""

    @property
    def mode(self) -> str:
        """``"pinned"`` (``SHARD_IDS``) or ``"leased"`` (shared through the database)."""
        ...

    def states(self) -> list[ShardState]:
        """Every shard of the count, held here or not, by id."""
        ...

    def problems(self) -> list[str]:
        """Why this process's gateway is not healthy (empty: it is): a shard it holds whose
        session is not ready, or none started yet."""
        ...

    @property
    def instance(self) -> str:
        """This process's name among the instances (``INSTANCE_NAME``)."""
        ...

    async def holders(self) -> dict[int, str]:
        """The instance holding each shard now, by shard id (a shard nobody holds is
        missing): from the database's leases, or this process's pinned shards."""
        ...
