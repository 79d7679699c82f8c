"""Per-key concurrency: at most a key's limit of its jobs are in progress at once, across
every process that shares the store.

A job carries its key and limit (:class:`~scheduler.Concurrency`, from the enqueue or the
registration). The places a key has taken are its jobs in ``in_progress``, counted where
they are: nothing is kept apart that could drift from them, so a run frees its place by
whatever ends it (its outcome recorded, a retry's wait, a lost lease reclaimed by the
sweep or by the watch over gone holders) in the same commit.

A job waiting for its turn is plain ``pending``: the claim leaves it alone while its key
is at its limit, so it holds no lease and no worker slot, and the driver's next wake-up
(:attr:`.pacing.Plan.limited_start`) leaves such a key out. The commit that ends a limited
job's run wakes the drivers (``st.wake``: at once in this process, through ``NOTIFY`` in
the others on PostgreSQL), and the key's next job, in due order, is claimed then.

On SQLite the claim's write transaction is the only writer, so the count it reads is the
count it claims against. On PostgreSQL two processes claim at once: each takes a
transaction-level lock per key it is about to claim (``lock_limited_keys``, in one order),
then counts again and claims in one statement (``claim_limited``), so a place another
process took since the heads were read is never taken twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..store_types import Op, OpState, Q

if TYPE_CHECKING:
    from collections.abc import Sequence


def heads(st: OpState, mutation_limit: int, action_limit: int) -> Op[list[Any]]:
    """Up to the given numbers of limited jobs that may start now: due, and within the first
    pending jobs of their key (in due order) as many as its limit leaves places free; in
    due order, with their priority. Nothing is taken: see :func:`claim_heads`."""
    if mutation_limit <= 0 and action_limit <= 0:
        return []
    params = {
        "now": st.now,
        "mutations": int(mutation_limit > 0),
        "actions": int(action_limit > 0),
        "limit": mutation_limit + action_limit,
    }
    rows: list[Any] = yield Q("limited_due", params, "all")
    return rows


def claim_heads(
    st: OpState, chosen: Sequence[Any], lease_until: float, process: str | None = None
) -> Op[list[Any]]:
    """Claim the limited jobs ``chosen`` among :func:`heads` under leases held by
    ``process``, each only if its key still has a place for it once the keys are locked;
    returns the claimed rows, as ``claim_due`` does."""
    if not chosen:
        return []
    keys = sorted({str(h["conc_key"]) for h in chosen})
    yield Q("lock_limited_keys", {"conc_keys": keys}, "one")
    claim = {
        "job_ids": [int(h["id"]) for h in chosen],
        "now": st.now,
        "lease_until": st.on_lease_clock(lease_until),
        "process": process,
    }
    rows: list[Any] = yield Q("claim_limited", claim, "all")
    return rows
